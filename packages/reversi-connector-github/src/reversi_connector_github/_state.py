"""The state FakeGitHub keeps: repositories, their labels, issues, comments and branches."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["DEFAULT_LABELS", "FakeComment", "FakeIssue", "FakeLabel", "FakeRepo", "commit_sha", "now"]


DEFAULT_LABELS: Mapping[str, str] = {
    "bug": "d73a4a",
    "documentation": "0075ca",
    "enhancement": "a2eeef",
    "good first issue": "7057ff",
}
"""Labels (name: colour) a repository made by ``FakeGitHub.add_repo`` starts with, as on GitHub."""


def commit_sha(*parts: str) -> str:
    """A made-up but stable 40-hex-digit commit SHA for ``parts``."""
    return hashlib.sha1("/".join(parts).encode(), usedforsecurity=False).hexdigest()


def now() -> str:
    """The current time as GitHub writes it (``2026-12-01T09:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- state -----------------------------------------------------------------------------


@dataclass
class FakeLabel:
    """A repository label. ``auto_created`` marks one GitHub made for an unknown name."""

    id: int
    name: str
    color: str
    description: str | None = None
    auto_created: bool = False


@dataclass
class FakeComment:
    """An issue comment."""

    id: int
    issue_number: int
    body: str
    user: str = "reversi-agent"
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)


@dataclass
class FakeIssue:
    """An issue. ``labels`` holds label names as the repository spells them.

    ``origin`` is ``"seed"`` for issues a test put in with :meth:`FakeGitHub.add_issue`
    and ``"api"`` for those created through ``POST .../issues``.
    """

    number: int
    title: str
    body: str | None = None
    state: Literal["open", "closed"] = "open"
    state_reason: str | None = None
    labels: list[str] = field(default_factory=list)
    comments: list[FakeComment] = field(default_factory=list)
    origin: Literal["seed", "api"] = "seed"
    created_at: str = ""
    updated_at: str = ""
    closed_at: str | None = None


@dataclass
class FakeRepo:
    """A repository: its labels (by lower-case name), issues (by number) and branches."""

    owner: str
    name: str
    default_branch: str = "main"
    has_issues: bool = True
    labels: dict[str, FakeLabel] = field(default_factory=dict)
    issues: dict[int, FakeIssue] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    commits: set[str] = field(default_factory=set)
    next_number: int = 1

    @property
    def full_name(self) -> str:
        """``owner/name``."""
        return f"{self.owner}/{self.name}"

    def label(self, name: str) -> FakeLabel | None:
        """The repository's label called ``name`` (compared without case), if any."""
        return self.labels.get(name.casefold())

    def snapshot(self) -> dict[str, Any]:
        """This repository as plain data (see :meth:`FakeGitHub.snapshot`)."""
        return {
            "default_branch": self.default_branch,
            "has_issues": self.has_issues,
            "labels": {
                label.name: {
                    "color": label.color,
                    "description": label.description,
                    "auto_created": label.auto_created,
                }
                for label in self.labels.values()
            },
            "issues": {
                str(number): {
                    "title": issue.title,
                    "body": issue.body,
                    "state": issue.state,
                    "state_reason": issue.state_reason,
                    "labels": sorted(issue.labels, key=str.casefold),
                    "comments": [{"id": c.id, "body": c.body} for c in issue.comments],
                    "origin": issue.origin,
                }
                for number, issue in sorted(self.issues.items())
            },
            "branches": dict(sorted(self.branches.items())),
        }

    def comment(self, comment_id: int) -> FakeComment | None:
        """The comment with that id on any issue of the repository, if any."""
        for issue in self.issues.values():
            for comment in issue.comments:
                if comment.id == comment_id:
                    return comment
        return None
