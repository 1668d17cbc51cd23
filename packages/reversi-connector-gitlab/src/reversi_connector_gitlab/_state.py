"""The state FakeGitLab keeps: projects, their labels, issues, notes, commits and branches."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ROLES",
    "FakeCommit",
    "FakeIssue",
    "FakeNote",
    "FakeProject",
    "Role",
    "commit_sha",
    "now",
]

Role = Literal["guest", "reporter", "developer", "maintainer", "owner"]
ROLES: tuple[Role, ...] = ("guest", "reporter", "developer", "maintainer", "owner")
"""GitLab's project roles, weakest first (https://docs.gitlab.com/user/permissions/)."""


def commit_sha(*parts: str) -> str:
    """A made-up but stable 40-hex-digit commit SHA for ``parts``."""
    return hashlib.sha1("/".join(parts).encode(), usedforsecurity=False).hexdigest()


def now() -> str:
    """The current time as GitLab writes it (``2026-12-01T09:00:00.000Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


@dataclass
class FakeNote:
    """A note (comment) on an issue; ``system`` notes are GitLab's own ("closed")."""

    id: int
    body: str
    author: str
    system: bool = False
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)


@dataclass
class FakeIssue:
    """An issue. ``origin`` is ``"seed"`` for one a test put in, ``"api"`` for one created by a call."""

    id: int
    iid: int
    title: str
    description: str | None = None
    state: Literal["opened", "closed"] = "opened"
    labels: list[str] = field(default_factory=list)
    confidential: bool = False
    author: str = "alice"
    notes: list[FakeNote] = field(default_factory=list)
    origin: Literal["seed", "api"] = "seed"
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)
    closed_at: str | None = None

    def note(self, note_id: int) -> FakeNote | None:
        """The note with that id, if the issue has it."""
        return next((n for n in self.notes if n.id == note_id), None)


@dataclass
class FakeCommit:
    """A commit the repository knows."""

    sha: str
    title: str
    authored_date: str = field(default_factory=now)


@dataclass
class FakeProject:
    """A project: where it lives, the token user's role in it, and its contents.

    ``labels`` maps a label name to whether GitLab created it for an issue that named it
    (``True``) or it was defined beforehand (``False``).
    """

    id: int
    path: str
    role: Role = "developer"
    default_branch: str = "main"
    labels: dict[str, bool] = field(default_factory=dict)
    issues: dict[int, FakeIssue] = field(default_factory=dict)
    commits: dict[str, FakeCommit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    protected: set[str] = field(default_factory=set)
    next_iid: int = 1

    def may(self, role: Role) -> bool:
        """Whether the token user's role is at least ``role``."""
        return ROLES.index(self.role) >= ROLES.index(role)

    def snapshot(self) -> dict[str, Any]:
        """This project as plain data (see ``FakeGitLab.snapshot``)."""
        return {
            "default_branch": self.default_branch,
            "labels": dict(sorted(self.labels.items())),
            "protected": sorted(self.protected),
            "branches": dict(sorted(self.branches.items())),
            "issues": {
                str(iid): {
                    "title": issue.title,
                    "description": issue.description,
                    "state": issue.state,
                    "labels": sorted(issue.labels),
                    "confidential": issue.confidential,
                    "origin": issue.origin,
                    "notes": [
                        {"id": n.id, "body": n.body, "system": n.system} for n in issue.notes
                    ],
                }
                for iid, issue in sorted(self.issues.items())
            },
        }
