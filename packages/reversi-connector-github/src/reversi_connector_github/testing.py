"""A fake GitHub REST API to test against, and the connector's certification opt-in.

:class:`FakeGitHub` is a :class:`reversi_core.testing.FakeApp` that models the part of
the GitHub REST API the ``github`` connector uses, written from GitHub's documentation
(each route's docstring cites its page): issues, issue comments, issue labels and git
references, with GitHub's status codes and error bodies (``{"message",
"documentation_url", "status"}``, ``"errors"`` details on a 422), the rate-limit
headers on every answer, and the token check. Serve it with
:class:`reversi_core.testing.FakeServer` and point the connector at it::

    from reversi_core.testing import FakeServer
    from reversi_connector_github import GithubConnector
    from reversi_connector_github.testing import FakeGitHub

    fake = FakeGitHub(token="ghp_test_token_0001")
    fake.add_repo("octo", "hello")
    with FakeServer(fake) as server:
        github = GithubConnector("ghp_test_token_0001", base_url=fake.base_url(server))
        made = await github.call("github.create_issue", {"owner": "octo", "repo": "hello",
                                                         "title": "Hi"})
        assert fake.repo("octo", "hello").issues[made["number"]].state == "open"

``FakeGitHub(prefix="/api/v3")`` serves the same routes under a GitHub Enterprise
Server style prefix. Faults (a dropped connection, a 5xx, a 401, a 403, a reply that
never comes) are armed on the server: ``server.faults.add(Fault.status(503), ...)``
(see docs/fakes.md).

What the fake does not model: pagination other than of an issue's labels, pull requests,
permissions finer than "read-only token" versus "read-write token", locked issues,
repository visibility (every repository behaves as private: no anonymous access),
conditional requests and ETags, and the web side of GitHub (notifications, the
timeline). Message texts are GitHub's where its documentation or its API shows them;
the 422 for deleting the default branch carries a message of our own, since the
documentation names the case but not the text.

:func:`certification_fixture` opts the connector into the repository's certification
suite (docs/certification-guide.md): every check applies to github.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reversi_core.http import Timeouts
from reversi_core.testing import (
    CertificationFixture,
    Dependency,
    Example,
    ExampleContext,
    FakeApp,
    FakeRequest,
    FakeResponse,
    FakeServer,
    Residue,
)

from .connector import API_VERSION, GithubConnector

__all__ = [
    "AUTO_LABEL_COLOR",
    "CERTIFICATION_TOKEN",
    "DEFAULT_LABELS",
    "DEPENDENCIES",
    "DOCS",
    "EXAMPLES",
    "FAILURES",
    "ISSUE_STAYS_CLOSED",
    "LIMIT",
    "NEW_LABELS_STAY_DEFINED",
    "NO_ISSUES_REPO",
    "OWNER",
    "REPO",
    "SEEDED_COMMENT_ID",
    "SHA_DEV",
    "SHA_FEATURE",
    "SUPPORTED_API_VERSIONS",
    "FakeComment",
    "FakeGitHub",
    "FakeIssue",
    "FakeLabel",
    "FakeRepo",
    "certification_fixture",
    "commit_sha",
    "github_backend",
    "seed_example",
]

DOCS = "https://docs.github.com/rest"
"""The ``documentation_url`` GitHub puts in generic error bodies."""

DEFAULT_LABELS: Mapping[str, str] = {
    "bug": "d73a4a",
    "documentation": "0075ca",
    "enhancement": "a2eeef",
    "good first issue": "7057ff",
}
"""Labels (name: colour) a repository made by :meth:`FakeGitHub.add_repo` starts with, as on GitHub."""

AUTO_LABEL_COLOR = "ededed"
"""The colour GitHub gives a label it creates because an issue was given an unknown name."""

SUPPORTED_API_VERSIONS = frozenset({API_VERSION})
"""``X-GitHub-Api-Version`` values the fake accepts (absent means the default, 2022-11-28)."""

_COMMENT_IDS_START = 1_000_001


def _error(status: int, message: str, **extra: Any) -> FakeResponse:
    """A GitHub error body: ``{"message", "documentation_url", "status", ...}``."""
    return FakeResponse(
        status,
        json={"message": message, "documentation_url": DOCS, "status": str(status), **extra},
    )


def _not_found(request: FakeRequest | None = None) -> FakeResponse:
    return _error(404, "Not Found")


def _validation(
    resource: str, field_name: str, code: str, message: str | None = None
) -> FakeResponse:
    """A 422 ``Validation Failed`` with one ``errors`` item (GitHub's client-error shape)."""
    item: dict[str, Any] = {"resource": resource, "field": field_name, "code": code}
    if message is not None:
        item["message"] = message
    return _error(422, "Validation Failed", errors=[item])


def commit_sha(*parts: str) -> str:
    """A made-up but stable 40-hex-digit commit SHA for ``parts``."""
    return hashlib.sha1("/".join(parts).encode(), usedforsecurity=False).hexdigest()


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

    def comment(self, comment_id: int) -> FakeComment | None:
        """The comment with that id on any issue of the repository, if any."""
        for issue in self.issues.values():
            for comment in issue.comments:
                if comment.id == comment_id:
                    return comment
        return None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- the fake --------------------------------------------------------------------------


class FakeGitHub(FakeApp):
    """A fake of the GitHub REST API's issues, comments, labels and git references.

    ``token`` is the token that may read and write; ``read_only_tokens`` may only read
    (a write gets 403 ``Resource not accessible by personal access token``). Any other
    ``Authorization`` gets 401 ``Bad credentials``, none at all 401 ``Requires
    authentication``; ``Bearer`` and ``token`` schemes are both accepted
    (https://docs.github.com/en/rest/authentication/authenticating-to-the-rest-api).
    A request without ``User-Agent`` gets 403
    (https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api#user-agent-required),
    one with an unsupported ``X-GitHub-Api-Version`` 400
    (https://docs.github.com/en/rest/about-the-rest-api/api-versions).

    Every authenticated request counts against a primary rate limit of ``rate_limit``
    requests; every answer carries ``x-ratelimit-limit``, ``-remaining``, ``-reset``
    (epoch seconds), ``-used`` and ``-resource: core``. Once none remain, requests get 403
    with ``x-ratelimit-remaining: 0``; with :attr:`secondary_rate_limit` set, writes get
    403 with ``retry-after: 60`` (a secondary limit). See
    https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api.

    Routes are served under ``prefix`` (``"/api/v3"`` for a GitHub Enterprise Server
    layout). State lives in :attr:`repos`; take :attr:`lock` to read or change it while
    requests may be in flight. :meth:`snapshot` returns it as plain data.
    """

    def __init__(
        self,
        *,
        token: str = "ghp_fake_github_token_0000",  # noqa: S107 - a fake's made-up token
        read_only_tokens: Iterable[str] = (),
        prefix: str = "",
        rate_limit: int = 5000,
        web_url: str = "https://github.com",
    ) -> None:
        super().__init__(not_found=_not_found)
        if prefix and (not prefix.startswith("/") or prefix.endswith("/")):
            raise ValueError("prefix must start with '/' and not end with one, such as '/api/v3'")
        self.token = token
        self.read_only_tokens = frozenset(read_only_tokens)
        self.prefix = prefix
        self.web_url = web_url.rstrip("/")
        self.repos: dict[str, FakeRepo] = {}
        """Repositories by lower-case ``owner/name``."""
        self.rate_limit = rate_limit
        self.rate_remaining = rate_limit
        self.rate_reset = int(time.time()) + 3600
        self.secondary_rate_limit = False
        """When true, every write is refused as over a secondary rate limit."""
        self._label_ids = itertools.count(1)
        self._comment_ids = itertools.count(_COMMENT_IDS_START)
        routes = (
            ("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}", self.get_comment),
            ("DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}", self.delete_comment),
            ("GET", "/repos/{owner}/{repo}/issues/{number}", self.get_issue),
            ("PATCH", "/repos/{owner}/{repo}/issues/{number}", self.update_issue),
            ("POST", "/repos/{owner}/{repo}/issues", self.create_issue),
            ("POST", "/repos/{owner}/{repo}/issues/{number}/comments", self.create_comment),
            ("GET", "/repos/{owner}/{repo}/issues/{number}/labels", self.list_issue_labels),
            ("POST", "/repos/{owner}/{repo}/issues/{number}/labels", self.add_issue_labels),
            (
                "DELETE",
                "/repos/{owner}/{repo}/issues/{number}/labels/{name}",
                self.remove_issue_label,
            ),
            ("GET", "/repos/{owner}/{repo}/git/ref/{ref:path}", self.get_ref),
            ("POST", "/repos/{owner}/{repo}/git/refs", self.create_ref),
            ("DELETE", "/repos/{owner}/{repo}/git/refs/{ref:path}", self.delete_ref),
        )
        for method, template, handler in routes:
            self.add_route(method, prefix + template, handler)

    # -- set-up and inspection ---------------------------------------------------------

    def base_url(self, server: FakeServer) -> str:
        """The connector's ``base_url`` for this fake served by ``server`` (prefix included)."""
        return server.url + self.prefix

    def add_repo(
        self,
        owner: str,
        name: str,
        *,
        default_branch: str = "main",
        has_issues: bool = True,
        labels: Mapping[str, str] = DEFAULT_LABELS,
    ) -> FakeRepo:
        """Create a repository with one commit on ``default_branch`` and the given labels."""
        with self.lock:
            repo = FakeRepo(owner, name, default_branch=default_branch, has_issues=has_issues)
            for label, color in labels.items():
                repo.labels[label.casefold()] = FakeLabel(next(self._label_ids), label, color)
            sha = commit_sha(owner, name, "initial")
            repo.commits.add(sha)
            repo.branches[default_branch] = sha
            self.repos[repo.full_name.lower()] = repo
            return repo

    def repo(self, owner: str, name: str) -> FakeRepo:
        """The repository ``owner/name`` (without regard to case); ``KeyError`` if absent."""
        return self.repos[f"{owner}/{name}".lower()]

    def add_commit(self, owner: str, name: str, label: str) -> str:
        """Record a commit in the repository and return its (made-up) SHA."""
        with self.lock:
            sha = commit_sha(owner, name, label)
            self.repo(owner, name).commits.add(sha)
            return sha

    def add_branch(self, owner: str, name: str, branch: str, sha: str | None = None) -> str:
        """Point ``branch`` at ``sha`` (a new commit when ``None``) and return the SHA."""
        with self.lock:
            repo = self.repo(owner, name)
            target = sha if sha is not None else self.add_commit(owner, name, branch)
            repo.commits.add(target)
            repo.branches[branch] = target
            return target

    def add_issue(
        self,
        owner: str,
        name: str,
        title: str,
        *,
        body: str | None = None,
        labels: Iterable[str] = (),
        state: Literal["open", "closed"] = "open",
    ) -> FakeIssue:
        """Put an issue in the repository (``origin="seed"``); labels must exist there."""
        with self.lock:
            repo = self.repo(owner, name)
            names = []
            for label in labels:
                known = repo.label(label)
                if known is None:
                    raise ValueError(f"{repo.full_name} has no label {label!r}")
                names.append(known.name)
            issue = FakeIssue(
                repo.next_number,
                title,
                body,
                state=state,
                state_reason="completed" if state == "closed" else None,
                labels=names,
                created_at=_now(),
                updated_at=_now(),
                closed_at=_now() if state == "closed" else None,
            )
            repo.issues[issue.number] = issue
            repo.next_number += 1
            return issue

    def add_comment(self, owner: str, name: str, number: int, body: str) -> FakeComment:
        """Put a comment on an existing issue and return it."""
        with self.lock:
            issue = self.repo(owner, name).issues[number]
            comment = FakeComment(next(self._comment_ids), number, body)
            issue.comments.append(comment)
            return comment

    def exhaust_rate_limit(self) -> None:
        """Use up the primary rate limit: every following request gets 403 until reset."""
        with self.lock:
            self.rate_remaining = 0

    def reset_rate_limit(self) -> None:
        """Give back the whole primary rate limit."""
        with self.lock:
            self.rate_remaining = self.rate_limit
            self.rate_reset = int(time.time()) + 3600

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain JSON data (what certification fingerprints).

        ``{"repos": {"owner/name": {"default_branch", "has_issues", "labels": {name:
        {"color", "description", "auto_created"}}, "issues": {"<number>": {"title",
        "body", "state", "state_reason", "labels" (sorted), "comments": [{"id", "body"}],
        "origin"}}, "branches": {name: sha}}}}``. Timestamps and rate-limit counters are
        left out.
        """
        with self.lock:
            repos: dict[str, Any] = {}
            for key, repo in sorted(self.repos.items()):
                repos[key] = {
                    "default_branch": repo.default_branch,
                    "has_issues": repo.has_issues,
                    "labels": {
                        label.name: {
                            "color": label.color,
                            "description": label.description,
                            "auto_created": label.auto_created,
                        }
                        for label in repo.labels.values()
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
                        for number, issue in sorted(repo.issues.items())
                    },
                    "branches": dict(sorted(repo.branches.items())),
                }
            return copy.deepcopy({"repos": repos})

    # -- the gate every request passes -------------------------------------------------

    def _rate_headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": str(self.rate_limit),
            "x-ratelimit-remaining": str(self.rate_remaining),
            "x-ratelimit-reset": str(self.rate_reset),
            "x-ratelimit-used": str(self.rate_limit - self.rate_remaining),
            "x-ratelimit-resource": "core",
        }

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        """Check the user agent, API version, token and rate limits, then run the route.

        Answers, in this order: 403 without ``User-Agent``; 400 for an unsupported API
        version; 401 without or with a wrong token; 403 (``x-ratelimit-remaining: 0``)
        once the primary limit is used up; 403 with ``retry-after`` for a write while
        :attr:`secondary_rate_limit` is set; 403 for a write with a read-only token.
        """
        with self.lock:
            if not request.headers.get("user-agent"):
                return _error(
                    403,
                    "Request forbidden by administrative rules. Please make sure your request "
                    "has a User-Agent header",
                )
            version = request.headers.get("x-github-api-version")
            if version is not None and version not in SUPPORTED_API_VERSIONS:
                return _error(400, f"Unsupported 'X-GitHub-Api-Version' header value: {version}")
            scheme, _, credential = (request.headers.get("authorization") or "").partition(" ")
            if not credential:
                return _error(401, "Requires authentication")
            known = {self.token, *self.read_only_tokens}
            if scheme.lower() not in ("bearer", "token") or credential.strip() not in known:
                return _error(401, "Bad credentials")
            if self.rate_remaining <= 0:
                response = _error(
                    403,
                    "API rate limit exceeded for user ID 1. If you reach out to GitHub Support "
                    "for help, please include the request ID.",
                )
                return dataclasses.replace(response, headers=self._rate_headers())
            self.rate_remaining -= 1
            writes = request.method.upper() not in ("GET", "HEAD", "OPTIONS")
            if writes and self.secondary_rate_limit:
                response = _error(
                    403,
                    "You have exceeded a secondary rate limit. Please wait a few minutes "
                    "before you try again.",
                )
                headers = {**self._rate_headers(), "retry-after": "60"}
                return dataclasses.replace(response, headers=headers)
            if writes and credential.strip() != self.token:
                response = _error(403, "Resource not accessible by personal access token")
            else:
                response = super().dispatch(request)
            return dataclasses.replace(
                response, headers={**(response.headers or {}), **self._rate_headers()}
            )

    # -- helpers for routes ------------------------------------------------------------

    def _find_repo(self, request: FakeRequest) -> FakeRepo | None:
        params = request.path_params
        return self.repos.get(f"{params['owner']}/{params['repo']}".lower())

    def _find_issue(self, request: FakeRequest) -> tuple[FakeRepo | None, FakeIssue | None]:
        repo = self._find_repo(request)
        number = request.path_params.get("number", "")
        if repo is None or not number.isdigit():
            return repo, None
        return repo, repo.issues.get(int(number))

    def _api(self, request: FakeRequest) -> str:
        return f"http://{request.headers.get('host', '127.0.0.1')}{self.prefix}"

    def _label_json(self, request: FakeRequest, repo: FakeRepo, name: str) -> dict[str, Any]:
        label = repo.label(name)
        assert label is not None
        return {
            "id": label.id,
            "node_id": f"LA_{label.id}",
            "url": f"{self._api(request)}/repos/{repo.full_name}/labels/{label.name}",
            "name": label.name,
            "description": label.description,
            "color": label.color,
            "default": label.name in DEFAULT_LABELS,
        }

    def _issue_json(self, request: FakeRequest, repo: FakeRepo, issue: FakeIssue) -> dict[str, Any]:
        api = f"{self._api(request)}/repos/{repo.full_name}/issues/{issue.number}"
        return {
            "id": 10_000 + issue.number,
            "node_id": f"I_{repo.full_name}_{issue.number}",
            "url": api,
            "labels_url": f"{api}/labels{{/name}}",
            "comments_url": f"{api}/comments",
            "html_url": f"{self.web_url}/{repo.full_name}/issues/{issue.number}",
            "number": issue.number,
            "state": issue.state,
            "state_reason": issue.state_reason,
            "title": issue.title,
            "body": issue.body,
            "user": {"login": "reversi-agent", "type": "User"},
            "labels": [self._label_json(request, repo, name) for name in issue.labels],
            "locked": False,
            "comments": len(issue.comments),
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
        }

    def _comment_json(
        self, request: FakeRequest, repo: FakeRepo, comment: FakeComment
    ) -> dict[str, Any]:
        api = f"{self._api(request)}/repos/{repo.full_name}"
        return {
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "url": f"{api}/issues/comments/{comment.id}",
            "html_url": f"{self.web_url}/{repo.full_name}/issues/{comment.issue_number}"
            f"#issuecomment-{comment.id}",
            "issue_url": f"{api}/issues/{comment.issue_number}",
            "body": comment.body,
            "user": {"login": comment.user, "type": "User"},
        }

    def _ref_json(self, request: FakeRequest, repo: FakeRepo, branch: str) -> dict[str, Any]:
        api = f"{self._api(request)}/repos/{repo.full_name}/git"
        sha = repo.branches[branch]
        return {
            "ref": f"refs/heads/{branch}",
            "node_id": f"REF_{repo.full_name}_{branch}",
            "url": f"{api}/refs/heads/{branch}",
            "object": {"type": "commit", "sha": sha, "url": f"{api}/commits/{sha}"},
        }

    def _auto_label(self, repo: FakeRepo, name: str) -> str:
        """The repository's spelling of ``name``, creating the label the way GitHub does."""
        label = repo.label(name)
        if label is None:
            label = FakeLabel(next(self._label_ids), name, AUTO_LABEL_COLOR, auto_created=True)
            repo.labels[name.casefold()] = label
        return label.name

    # -- issues ------------------------------------------------------------------------

    def get_issue(self, request: FakeRequest) -> FakeResponse:
        """``GET /repos/{owner}/{repo}/issues/{issue_number}``: 200, 404, 410.

        https://docs.github.com/en/rest/issues/issues#get-an-issue
        """
        repo, issue = self._find_issue(request)
        if repo is not None and not repo.has_issues:
            return _error(410, "Issues are disabled for this repo")
        if repo is None or issue is None:
            return _not_found()
        return FakeResponse(200, json=self._issue_json(request, repo, issue))

    def create_issue(self, request: FakeRequest) -> FakeResponse:
        """``POST /repos/{owner}/{repo}/issues``: 201, 404, 410, 422.

        A ``title`` is required (422 ``missing_field``; at most 256 characters). Unknown
        label names are created in the repository, grey. The answer carries
        ``Location``. https://docs.github.com/en/rest/issues/issues#create-an-issue
        """
        repo = self._find_repo(request)
        if repo is None:
            return _not_found()
        if not repo.has_issues:
            return _error(410, "Issues are disabled for this repo")
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return _error(400, "Problems parsing JSON")
        title = body.get("title")
        if not isinstance(title, str | int) or not str(title).strip():
            return _validation("Issue", "title", "missing_field")
        if len(str(title)) > 256:
            return _validation("Issue", "title", "custom", "title is too long (maximum is 256)")
        labels = body.get("labels", [])
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            return _validation("Issue", "labels", "invalid")
        text = body.get("body")
        issue = FakeIssue(
            repo.next_number,
            str(title),
            text if isinstance(text, str) else None,
            labels=[],
            origin="api",
            created_at=_now(),
            updated_at=_now(),
        )
        for name in labels:
            spelled = self._auto_label(repo, name)
            if spelled.casefold() not in {x.casefold() for x in issue.labels}:
                issue.labels.append(spelled)
        repo.issues[issue.number] = issue
        repo.next_number += 1
        answer = self._issue_json(request, repo, issue)
        return FakeResponse(201, json=answer, headers={"Location": answer["url"]})

    def update_issue(self, request: FakeRequest) -> FakeResponse:
        """``PATCH /repos/{owner}/{repo}/issues/{issue_number}``: 200, 404, 410, 422.

        Takes ``title``, ``body``, ``state`` (``open``/``closed``) and ``state_reason``
        (``completed``, ``not_planned``, ``reopened``; closing without one records
        ``completed``). Closing a closed issue answers 200 again.
        https://docs.github.com/en/rest/issues/issues#update-an-issue
        """
        repo, issue = self._find_issue(request)
        if repo is not None and not repo.has_issues:
            return _error(410, "Issues are disabled for this repo")
        if repo is None or issue is None:
            return _not_found()
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return _error(400, "Problems parsing JSON")
        state = body.get("state", issue.state)
        if state not in ("open", "closed"):
            return _validation("Issue", "state", "invalid")
        reason = body.get("state_reason")
        if reason not in (None, "completed", "not_planned", "reopened"):
            return _validation("Issue", "state_reason", "invalid")
        if isinstance(body.get("title"), str) and body["title"].strip():
            issue.title = body["title"]
        if "body" in body and (body["body"] is None or isinstance(body["body"], str)):
            issue.body = body["body"]
        if state == "closed":
            if issue.state != "closed":
                issue.closed_at = _now()
            issue.state = "closed"
            issue.state_reason = reason or issue.state_reason or "completed"
        elif issue.state == "closed":
            issue.state, issue.state_reason, issue.closed_at = "open", "reopened", None
        issue.updated_at = _now()
        return FakeResponse(200, json=self._issue_json(request, repo, issue))

    # -- comments ----------------------------------------------------------------------

    def create_comment(self, request: FakeRequest) -> FakeResponse:
        """``POST /repos/{owner}/{repo}/issues/{issue_number}/comments``: 201, 404, 410, 422.

        https://docs.github.com/en/rest/issues/comments#create-an-issue-comment
        """
        repo, issue = self._find_issue(request)
        if repo is not None and not repo.has_issues:
            return _error(410, "Issues are disabled for this repo")
        if repo is None or issue is None:
            return _not_found()
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return _error(400, "Problems parsing JSON")
        text = body.get("body")
        if not isinstance(text, str) or not text.strip():
            return _validation("IssueComment", "body", "missing_field")
        comment = FakeComment(next(self._comment_ids), issue.number, text)
        issue.comments.append(comment)
        answer = self._comment_json(request, repo, comment)
        return FakeResponse(201, json=answer, headers={"Location": answer["url"]})

    def get_comment(self, request: FakeRequest) -> FakeResponse:
        """``GET /repos/{owner}/{repo}/issues/comments/{comment_id}``: 200, 404.

        https://docs.github.com/en/rest/issues/comments#get-an-issue-comment
        """
        repo = self._find_repo(request)
        raw = request.path_params["comment_id"]
        comment = repo.comment(int(raw)) if repo is not None and raw.isdigit() else None
        if repo is None or comment is None:
            return _not_found()
        return FakeResponse(200, json=self._comment_json(request, repo, comment))

    def delete_comment(self, request: FakeRequest) -> FakeResponse:
        """``DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}``: 204, 404.

        https://docs.github.com/en/rest/issues/comments#delete-an-issue-comment
        """
        repo = self._find_repo(request)
        raw = request.path_params["comment_id"]
        comment = repo.comment(int(raw)) if repo is not None and raw.isdigit() else None
        if repo is None or comment is None:
            return _not_found()
        repo.issues[comment.issue_number].comments.remove(comment)
        return FakeResponse(204)

    # -- labels ------------------------------------------------------------------------

    def list_issue_labels(self, request: FakeRequest) -> FakeResponse:
        """``GET /repos/{owner}/{repo}/issues/{issue_number}/labels``: 200, 301, 404, 410.

        Paginated with ``per_page`` (default 30, at most 100) and ``page`` (from 1).
        https://docs.github.com/en/rest/issues/labels#list-labels-for-an-issue
        """
        repo, issue = self._find_issue(request)
        if repo is not None and not repo.has_issues:
            return _error(410, "Issues are disabled for this repo")
        if repo is None or issue is None:
            return _not_found()
        per_page = request.query.get("per_page", "30")
        page = request.query.get("page", "1")
        size = min(int(per_page), 100) if per_page.isdigit() and int(per_page) > 0 else 30
        start = (int(page) - 1) * size if page.isdigit() and int(page) > 0 else 0
        names = issue.labels[start : start + size]
        return FakeResponse(200, json=[self._label_json(request, repo, name) for name in names])

    def add_issue_labels(self, request: FakeRequest) -> FakeResponse:
        """``POST /repos/{owner}/{repo}/issues/{issue_number}/labels``: 200, 301, 404, 410, 422.

        Takes ``{"labels": [names]}`` (or a bare list of names); adds those the issue
        lacks (names compare without case) and answers 200 with every label the issue
        now carries. A name the repository lacks is created there with colour
        ``ededed`` and no description, as GitHub does. An empty list is refused with a
        422 here (the connector never sends one).
        https://docs.github.com/en/rest/issues/labels#add-labels-to-an-issue
        """
        repo, issue = self._find_issue(request)
        if repo is not None and not repo.has_issues:
            return _error(410, "Issues are disabled for this repo")
        if repo is None or issue is None:
            return _not_found()
        body = request.json
        names = body.get("labels") if isinstance(body, dict) else body
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            return _validation("Label", "labels", "invalid")
        for name in names:
            spelled = self._auto_label(repo, name)
            if spelled.casefold() not in {x.casefold() for x in issue.labels}:
                issue.labels.append(spelled)
        issue.updated_at = _now()
        return FakeResponse(
            200, json=[self._label_json(request, repo, name) for name in issue.labels]
        )

    def remove_issue_label(self, request: FakeRequest) -> FakeResponse:
        """``DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}``: 200, 301, 404, 410.

        Answers 200 with the labels left on the issue, or 404 ``Label does not exist``
        when the issue does not carry that label (the label stays in the repository).
        https://docs.github.com/en/rest/issues/labels#remove-a-label-from-an-issue
        """
        repo, issue = self._find_issue(request)
        if repo is not None and not repo.has_issues:
            return _error(410, "Issues are disabled for this repo")
        if repo is None or issue is None:
            return _not_found()
        wanted = request.path_params["name"].casefold()
        carried = [name for name in issue.labels if name.casefold() == wanted]
        if not carried:
            return _error(404, "Label does not exist")
        issue.labels.remove(carried[0])
        issue.updated_at = _now()
        return FakeResponse(
            200, json=[self._label_json(request, repo, name) for name in issue.labels]
        )

    # -- git references ----------------------------------------------------------------

    def get_ref(self, request: FakeRequest) -> FakeResponse:
        """``GET /repos/{owner}/{repo}/git/ref/{ref}``: 200, 404 (``ref`` as ``heads/<branch>``).

        https://docs.github.com/en/rest/git/refs#get-a-reference
        """
        repo = self._find_repo(request)
        ref = request.path_params["ref"]
        branch = ref.removeprefix("heads/") if ref.startswith("heads/") else None
        if repo is None or branch is None or branch not in repo.branches:
            return _not_found()
        return FakeResponse(200, json=self._ref_json(request, repo, branch))

    def create_ref(self, request: FakeRequest) -> FakeResponse:
        """``POST /repos/{owner}/{repo}/git/refs``: 201, 404, 409, 422.

        Takes ``{"ref": "refs/heads/<branch>", "sha"}``. 422 ``Reference already exists``
        for a taken name, 422 ``Object does not exist`` for an unknown commit, 422 for a
        ``ref`` that does not start with ``refs/`` and hold two slashes, 409 for a
        repository without commits. https://docs.github.com/en/rest/git/refs#create-a-reference
        """
        repo = self._find_repo(request)
        if repo is None:
            return _not_found()
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return _error(400, "Problems parsing JSON")
        ref, sha = body.get("ref"), body.get("sha")
        if not isinstance(ref, str):
            return _validation("Reference", "ref", "missing_field")
        if not isinstance(sha, str):
            return _validation("Reference", "sha", "missing_field")
        if not ref.startswith("refs/") or ref.count("/") < 2:
            return _error(
                422, "Reference name must start with 'refs/' and have at least two slashes."
            )
        if not repo.commits:
            return _error(409, "Git Repository is empty.")
        if not ref.startswith("refs/heads/"):
            return _error(422, "The fake models branches (refs/heads/...) only")
        branch = ref.removeprefix("refs/heads/")
        if branch in repo.branches:
            return _error(422, "Reference already exists")
        if sha not in repo.commits:
            return _error(422, "Object does not exist")
        repo.branches[branch] = sha
        answer = self._ref_json(request, repo, branch)
        return FakeResponse(201, json=answer, headers={"Location": answer["url"]})

    def delete_ref(self, request: FakeRequest) -> FakeResponse:
        """``DELETE /repos/{owner}/{repo}/git/refs/{ref}``: 204, 404, 409, 422.

        A reference that does not exist gets 422 ``Reference does not exist`` (not 404:
        GitHub keeps 404 for a repository it cannot find); deleting the default branch
        gets a 422 too. https://docs.github.com/en/rest/git/refs#delete-a-reference
        """
        repo = self._find_repo(request)
        if repo is None:
            return _not_found()
        ref = request.path_params["ref"]
        branch = ref.removeprefix("heads/") if ref.startswith("heads/") else None
        if branch is None or branch not in repo.branches:
            return _error(422, "Reference does not exist")
        if branch == repo.default_branch:
            return _error(422, "Cannot delete the default branch")
        del repo.branches[branch]
        return FakeResponse(204)


# -- certification -----------------------------------------------------------------------

CERTIFICATION_TOKEN = "ghp_reversiCertification0000000000000001"  # noqa: S105 - made up
"""The token the certification fixture gives the fake and the connector."""

OWNER = "octo"
"""The owner of the example repositories :func:`seed_example` makes."""
REPO = "hello"
"""The example repository with issues, comments, labels and branches."""
NO_ISSUES_REPO = "no-issues"
"""An example repository whose issues are disabled (410 for every issue route)."""
SEEDED_COMMENT_ID = _COMMENT_IDS_START
"""The id of the comment :func:`seed_example` puts on issue #1."""
SHA_DEV = commit_sha(OWNER, REPO, "dev")
"""The commit branch ``dev`` points at after :func:`seed_example`."""
SHA_FEATURE = commit_sha(OWNER, REPO, "feature-commit")
"""A commit :func:`seed_example` records that no branch points at."""
LIMIT = 0.5
"""Seconds the connectors built by the certification fixture wait for an answer."""


def seed_example(fake: FakeGitHub) -> None:
    """Put the example state in ``fake``.

    ``octo/hello`` (default labels, branches ``main`` and ``dev``, a further known
    commit :data:`SHA_FEATURE`) with issue #1 "Crash on start" (open, ``bug``, one
    comment, id :data:`SEEDED_COMMENT_ID`) and #2 "Old idea" (closed); ``octo/no-issues``,
    whose issues are disabled.
    """
    fake.add_repo(OWNER, REPO)
    fake.add_branch(OWNER, REPO, "dev", SHA_DEV)
    fake.add_commit(OWNER, REPO, "feature-commit")
    first = fake.add_issue(OWNER, REPO, "Crash on start", body="It crashes.", labels=["bug"])
    fake.add_comment(OWNER, REPO, first.number, "Seen it too.")
    fake.add_issue(OWNER, REPO, "Old idea", state="closed")
    fake.add_repo(OWNER, NO_ISSUES_REPO, has_issues=False)


@contextmanager
def github_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeGitHub` (token :data:`CERTIFICATION_TOKEN`) served on a fresh port."""
    with FakeServer(FakeGitHub(token=CERTIFICATION_TOKEN)) as server:
        yield server


def _fake(server: FakeServer) -> FakeGitHub:
    app = server.app
    if not isinstance(app, FakeGitHub):
        raise TypeError(f"the server does not serve a FakeGitHub but a {type(app).__name__}")
    return app


def _build(server: FakeServer) -> GithubConnector:
    return GithubConnector(
        CERTIFICATION_TOKEN,
        base_url=_fake(server).base_url(server),
        timeouts=Timeouts(connect=LIMIT, read=LIMIT, total=LIMIT),
    )


def _at(**more: Any) -> dict[str, Any]:
    return {"owner": OWNER, "repo": REPO, **more}


async def _close_new_issue(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("github.create_issue", _at(title="To be closed"))
    return _at(issue_number=made["number"])


async def _delete_new_comment(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("github.add_comment", _at(issue_number=1, body="To be deleted"))
    return _at(comment_id=made["id"])


async def _remove_added_labels(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("github.add_labels", _at(issue_number=1, labels=["bug", "enhancement"]))
    return _at(issue_number=1, labels=made["added"])


async def _delete_new_branch(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    await ctx.call("github.create_branch", _at(branch="agent/tmp", sha=SHA_FEATURE))
    return _at(branch="agent/tmp")


async def _on_new_issue_comment(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    number = ctx.results["github.create_issue"]["number"]
    return _at(issue_number=number, body="Working on it.")


async def _on_new_issue_labels(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    number = ctx.results["github.create_issue"]["number"]
    return _at(issue_number=number, labels=["enhancement", "needs-triage"])


EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "github.get_issue": [_at(issue_number=1), _at(issue_number=2)],
    "github.create_issue": [
        _at(title="Found by the agent", body="Steps to reproduce..."),
        _at(title="Labelled", labels=["bug", "needs-triage"]),
    ],
    "github.add_comment": [
        _at(issue_number=1, body="Looking into it."),
        _at(issue_number=2, body="Reopening soon?"),
    ],
    "github.add_labels": [
        _at(issue_number=1, labels=["documentation", "needs-triage"]),
        _at(issue_number=1, labels=["bug", "Enhancement"]),
    ],
    "github.create_branch": [
        _at(branch="agent/fix", sha=SHA_FEATURE),
        _at(branch="agent/from-dev", from_branch="dev"),
    ],
    "github.close_issue": [_at(issue_number=1), _close_new_issue],
    "github.delete_comment": [
        _at(comment_id=SEEDED_COMMENT_ID),
        _delete_new_comment,
        _at(comment_id=999_999),
    ],
    "github.remove_labels": [
        _at(issue_number=1, labels=["bug"]),
        _remove_added_labels,
        _at(issue_number=1, labels=["not-on-the-issue"]),
    ],
    "github.delete_branch": [
        _at(branch="dev"),
        _delete_new_branch,
        _at(branch="never-existed"),
    ],
}

FAILURES: Mapping[str, list[Example]] = {
    "github.get_issue": [
        _at(issue_number=999),
        {"owner": OWNER, "repo": "missing", "issue_number": 1},
        {"owner": OWNER, "repo": NO_ISSUES_REPO, "issue_number": 1},
    ],
    "github.create_issue": [
        {"owner": OWNER, "repo": "missing", "title": "x"},
        {"owner": OWNER, "repo": NO_ISSUES_REPO, "title": "x"},
        _at(title="   "),
    ],
    "github.add_comment": [_at(issue_number=999, body="x")],
    "github.add_labels": [_at(issue_number=999, labels=["bug"])],
    "github.create_branch": [
        _at(branch="dev", sha=SHA_FEATURE),
        _at(branch="agent/x", sha="0" * 40),
        _at(branch="agent/x", from_branch="no-such-branch"),
    ],
    "github.close_issue": [_at(issue_number=999)],
    "github.delete_branch": [_at(branch="main")],
}

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "github.create_issue", _at(title="New"), "github.add_comment", _on_new_issue_comment
    ),
    Dependency("github.create_issue", _at(title="New"), "github.add_labels", _on_new_issue_labels),
]


def _without_auto_labels(fingerprint: Any) -> Any:
    for repo in fingerprint["repos"].values():
        repo["labels"] = {k: v for k, v in repo["labels"].items() if not v["auto_created"]}
    return fingerprint


def _without_closed_new_issues(fingerprint: Any) -> Any:
    for repo in fingerprint["repos"].values():
        repo["issues"] = {
            number: issue
            for number, issue in repo["issues"].items()
            if not (
                issue["origin"] == "api" and issue["state"] == "closed" and not issue["comments"]
            )
        }
    return _without_auto_labels(fingerprint)


ISSUE_STAYS_CLOSED = Residue(
    reason="GitHub's REST API cannot delete an issue, so the undo closes it (state_reason "
    "not_planned): the issue and its number stay visible, closed; label names it introduced "
    "stay defined in the repository",
    normalise=_without_closed_new_issues,
)
"""create_issue's residue: issues the API created that are now closed and bare are ignored."""

NEW_LABELS_STAY_DEFINED = Residue(
    reason="a label name the repository did not know is created in the repository by GitHub "
    "when it is added to an issue; the undo takes it off the issue but leaves it defined "
    "in the repository, where others may already use it",
    normalise=_without_auto_labels,
)
"""add_labels' residue: labels GitHub created for unknown names are ignored."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The github connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend=github_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=_build,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={
            "github.create_issue": ISSUE_STAYS_CLOSED,
            "github.add_labels": NEW_LABELS_STAY_DEFINED,
        },
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
    )
