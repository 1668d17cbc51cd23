"""FakeGitHub: the part of the GitHub REST API the connector uses, on the kit's vendor fake."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import time
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from reversi_core.testing import (
    BearerAuth,
    FakeRequest,
    FakeResponse,
    FakeServer,
    VendorFake,
    vendor_route,
)

from ._state import DEFAULT_LABELS, FakeComment, FakeIssue, FakeLabel, FakeRepo, commit_sha, now
from ._wire import Wire
from .connector import API_VERSION

__all__ = [
    "AUTO_LABEL_COLOR",
    "DEFAULT_LABELS",
    "DOCS",
    "SUPPORTED_API_VERSIONS",
    "FakeComment",
    "FakeGitHub",
    "FakeIssue",
    "FakeLabel",
    "FakeRepo",
    "commit_sha",
]

DOCS = "https://docs.github.com/rest"
"""The ``documentation_url`` GitHub puts in generic error bodies."""

AUTO_LABEL_COLOR = "ededed"
"""The colour GitHub gives a label it creates because an issue was given an unknown name."""

SUPPORTED_API_VERSIONS = frozenset({API_VERSION})
"""``X-GitHub-Api-Version`` values the fake accepts (absent means the default, 2022-11-28)."""

COMMENT_IDS_START = 1_000_001
"""The id the fake gives its first comment."""

_ISSUES = "https://docs.github.com/en/rest/issues/issues"
_COMMENTS = "https://docs.github.com/en/rest/issues/comments"
_LABELS = "https://docs.github.com/en/rest/issues/labels"
_REFS = "https://docs.github.com/en/rest/git/refs"


# -- the fake --------------------------------------------------------------------------


class FakeGitHub(VendorFake):
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

    auth = BearerAuth(schemes=("bearer", "token"))

    def __init__(
        self,
        *,
        token: str = "ghp_fake_github_token_0000",  # noqa: S107 - a fake's made-up token
        read_only_tokens: Iterable[str] = (),
        prefix: str = "",
        rate_limit: int = 5000,
        web_url: str = "https://github.com",
    ) -> None:
        super().__init__(
            token=token, read_only_tokens=read_only_tokens, rate_limit=rate_limit, prefix=prefix
        )
        self.web_url = web_url.rstrip("/")
        self.repos: dict[str, FakeRepo] = {}
        """Repositories by lower-case ``owner/name``."""
        self.rate_reset = int(time.time()) + 3600
        self.secondary_rate_limit = False
        """When true, every write is refused as over a secondary rate limit."""
        self._label_ids = itertools.count(1)
        self._comment_ids = itertools.count(COMMENT_IDS_START)

    # -- GitHub's answers to what the kit checks -----------------------------------------

    def error(self, status: int, message: str, *, code: str | None = None, **extra: Any) -> FakeResponse:
        """A GitHub error body: ``{"message", "documentation_url", "status", ...}``."""
        body = {"message": message, "documentation_url": DOCS, "status": str(status), **extra}
        return FakeResponse(status, json=body)

    def _validation(
        self, resource: str, field_name: str, code: str, message: str | None = None
    ) -> FakeResponse:
        """A 422 ``Validation Failed`` with one ``errors`` item (GitHub's client-error shape)."""
        item: dict[str, Any] = {"resource": resource, "field": field_name, "code": code}
        if message is not None:
            item["message"] = message
        return self.error(422, "Validation Failed", errors=[item])

    def read_only(self, request: FakeRequest) -> FakeResponse:
        return self.error(403, "Resource not accessible by personal access token")

    def malformed_body(self, request: FakeRequest, problem: str) -> FakeResponse:
        return self.error(400, "Problems parsing JSON")

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        return self.error(
            403,
            "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for "
            "help, please include the request ID.",
        )

    def rate_headers(self) -> dict[str, str]:
        used = (self.rate_limit or 0) - self.rate_remaining
        return {
            "x-ratelimit-limit": str(self.rate_limit),
            "x-ratelimit-remaining": str(self.rate_remaining),
            "x-ratelimit-reset": str(self.rate_reset),
            "x-ratelimit-used": str(used),
            "x-ratelimit-resource": "core",
        }

    def precheck(self, request: FakeRequest) -> FakeResponse | None:
        if not request.headers.get("user-agent"):
            return self.error(
                403,
                "Request forbidden by administrative rules. Please make sure your request has "
                "a User-Agent header",
            )
        version = request.headers.get("x-github-api-version")
        if version is not None and version not in SUPPORTED_API_VERSIONS:
            return self.error(400, f"Unsupported 'X-GitHub-Api-Version' header value: {version}")
        return None

    def gate(self, request: FakeRequest, *, writes: bool, credential: str) -> FakeResponse | None:
        if writes and self.secondary_rate_limit:
            answer = self.error(
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes before "
                "you try again.",
            )
            return dataclasses.replace(answer, headers={"retry-after": "60"})
        return None

    def reset_rate_limit(self) -> None:
        """Give back the whole primary rate limit and move its reset an hour ahead."""
        super().reset_rate_limit()
        self.rate_reset = int(time.time()) + 3600

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
            closed = state == "closed"
            issue = FakeIssue(
                repo.next_number,
                title,
                body,
                state=state,
                state_reason="completed" if closed else None,
                labels=names,
                created_at=now(),
                updated_at=now(),
                closed_at=now() if closed else None,
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

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain JSON data (what certification fingerprints).

        ``{"repos": {"owner/name": {"default_branch", "has_issues", "labels": {name:
        {"color", "description", "auto_created"}}, "issues": {"<number>": {"title",
        "body", "state", "state_reason", "labels" (sorted), "comments": [{"id", "body"}],
        "origin"}}, "branches": {name: sha}}}}``. Timestamps and rate-limit counters are
        left out.
        """
        with self.lock:
            repos = {key: repo.snapshot() for key, repo in sorted(self.repos.items())}
            return copy.deepcopy({"repos": repos})

    # -- finding things and describing them --------------------------------------------

    def _repo_of(self, request: FakeRequest) -> FakeRepo | None:
        params = request.path_params
        return self.repos.get(f"{params['owner']}/{params['repo']}".lower())

    def _issue_of(self, request: FakeRequest) -> tuple[FakeRepo, FakeIssue] | FakeResponse:
        """The route's repository and issue, or GitHub's 410 (issues disabled) or 404."""
        repo = self._repo_of(request)
        if repo is not None and not repo.has_issues:
            return self.error(410, "Issues are disabled for this repo")
        number = request.path_params.get("number", "")
        issue = repo.issues.get(int(number)) if repo is not None and number.isdigit() else None
        if repo is None or issue is None:
            return self.not_found(request)
        return repo, issue

    def _comment_of(self, request: FakeRequest) -> tuple[FakeRepo, FakeComment] | FakeResponse:
        repo = self._repo_of(request)
        raw = request.path_params["comment_id"]
        comment = repo.comment(int(raw)) if repo is not None and raw.isdigit() else None
        if repo is None or comment is None:
            return self.not_found(request)
        return repo, comment

    def _wire(self, request: FakeRequest) -> Wire:
        """How this request's answers spell the fake's objects (its host and the prefix)."""
        host = request.headers.get("host", "127.0.0.1")
        return Wire(api=f"http://{host}{self.prefix}", web=self.web_url)

    def _labels_json(self, request: FakeRequest, repo: FakeRepo, names: list[str]) -> FakeResponse:
        wire = self._wire(request)
        return FakeResponse(200, json=[wire.label(repo, name) for name in names])

    def _auto_label(self, repo: FakeRepo, name: str) -> str:
        """The repository's spelling of ``name``, creating the label the way GitHub does."""
        label = repo.label(name)
        if label is None:
            label = FakeLabel(next(self._label_ids), name, AUTO_LABEL_COLOR, auto_created=True)
            repo.labels[name.casefold()] = label
        return label.name

    def _put_labels(self, repo: FakeRepo, issue: FakeIssue, names: Iterable[str]) -> None:
        for name in names:
            spelled = self._auto_label(repo, name)
            if spelled.casefold() not in {x.casefold() for x in issue.labels}:
                issue.labels.append(spelled)

    # -- comments (before issues: /issues/comments/{id} must not read as issue "comments") --

    @vendor_route(
        "GET",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        docs=f"{_COMMENTS}#get-an-issue-comment",
    )
    def get_comment(self, request: FakeRequest) -> FakeResponse:
        """200, 404."""
        found = self._comment_of(request)
        if isinstance(found, FakeResponse):
            return found
        return FakeResponse(200, json=self._wire(request).comment(*found))

    @vendor_route(
        "DELETE",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        docs=f"{_COMMENTS}#delete-an-issue-comment",
    )
    def delete_comment(self, request: FakeRequest) -> FakeResponse:
        """204, 404."""
        found = self._comment_of(request)
        if isinstance(found, FakeResponse):
            return found
        repo, comment = found
        repo.issues[comment.issue_number].comments.remove(comment)
        return FakeResponse(204)

    # -- issues ------------------------------------------------------------------------

    @vendor_route("GET", "/repos/{owner}/{repo}/issues/{number}", docs=f"{_ISSUES}#get-an-issue")
    def get_issue(self, request: FakeRequest) -> FakeResponse:
        """200, 404, 410."""
        found = self._issue_of(request)
        if isinstance(found, FakeResponse):
            return found
        return FakeResponse(200, json=self._wire(request).issue(*found))

    @vendor_route(
        "PATCH", "/repos/{owner}/{repo}/issues/{number}", docs=f"{_ISSUES}#update-an-issue", body="json"
    )
    def update_issue(self, request: FakeRequest) -> FakeResponse:
        """200, 404, 410, 422.

        Takes ``title``, ``body``, ``state`` (``open``/``closed``) and ``state_reason``
        (``completed``, ``not_planned``, ``reopened``; closing without one records
        ``completed``). Closing a closed issue answers 200 again.
        """
        found = self._issue_of(request)
        if isinstance(found, FakeResponse):
            return found
        repo, issue = found
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return self.malformed_body(request, "not an object")
        state = body.get("state", issue.state)
        if state not in ("open", "closed"):
            return self._validation("Issue", "state", "invalid")
        reason = body.get("state_reason")
        if reason not in (None, "completed", "not_planned", "reopened"):
            return self._validation("Issue", "state_reason", "invalid")
        if isinstance(body.get("title"), str) and body["title"].strip():
            issue.title = body["title"]
        if "body" in body and (body["body"] is None or isinstance(body["body"], str)):
            issue.body = body["body"]
        if state == "closed":
            if issue.state != "closed":
                issue.closed_at = now()
            issue.state = "closed"
            issue.state_reason = reason or issue.state_reason or "completed"
        elif issue.state == "closed":
            issue.state, issue.state_reason, issue.closed_at = "open", "reopened", None
        issue.updated_at = now()
        return FakeResponse(200, json=self._wire(request).issue(repo, issue))

    @vendor_route("POST", "/repos/{owner}/{repo}/issues", docs=f"{_ISSUES}#create-an-issue", body="json")
    def create_issue(self, request: FakeRequest) -> FakeResponse:
        """201, 404, 410, 422.

        A ``title`` is required (422 ``missing_field``; at most 256 characters). Unknown
        label names are created in the repository, grey. The answer carries ``Location``.
        """
        repo = self._repo_of(request)
        if repo is None:
            return self.not_found(request)
        if not repo.has_issues:
            return self.error(410, "Issues are disabled for this repo")
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return self.malformed_body(request, "not an object")
        title = body.get("title")
        if not isinstance(title, str | int) or not str(title).strip():
            return self._validation("Issue", "title", "missing_field")
        if len(str(title)) > 256:
            return self._validation("Issue", "title", "custom", "title is too long (maximum is 256)")
        labels = body.get("labels", [])
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            return self._validation("Issue", "labels", "invalid")
        text = body.get("body")
        issue = FakeIssue(
            repo.next_number,
            str(title),
            text if isinstance(text, str) else None,
            origin="api",
            created_at=now(),
            updated_at=now(),
        )
        self._put_labels(repo, issue, labels)
        repo.issues[issue.number] = issue
        repo.next_number += 1
        answer = self._wire(request).issue(repo, issue)
        return FakeResponse(201, json=answer, headers={"Location": answer["url"]})

    @vendor_route(
        "POST",
        "/repos/{owner}/{repo}/issues/{number}/comments",
        docs=f"{_COMMENTS}#create-an-issue-comment",
        body="json",
    )
    def create_comment(self, request: FakeRequest) -> FakeResponse:
        """201, 404, 410, 422."""
        found = self._issue_of(request)
        if isinstance(found, FakeResponse):
            return found
        repo, issue = found
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return self.malformed_body(request, "not an object")
        text = body.get("body")
        if not isinstance(text, str) or not text.strip():
            return self._validation("IssueComment", "body", "missing_field")
        comment = FakeComment(next(self._comment_ids), issue.number, text)
        issue.comments.append(comment)
        answer = self._wire(request).comment(repo, comment)
        return FakeResponse(201, json=answer, headers={"Location": answer["url"]})

    # -- labels ------------------------------------------------------------------------

    @vendor_route(
        "GET", "/repos/{owner}/{repo}/issues/{number}/labels", docs=f"{_LABELS}#list-labels-for-an-issue"
    )
    def list_issue_labels(self, request: FakeRequest) -> FakeResponse:
        """200, 301, 404, 410; paginated with ``per_page`` (default 30, at most 100) and ``page``."""
        found = self._issue_of(request)
        if isinstance(found, FakeResponse):
            return found
        repo, issue = found
        per_page = request.query.get("per_page", "30")
        page = request.query.get("page", "1")
        size = min(int(per_page), 100) if per_page.isdigit() and int(per_page) > 0 else 30
        start = (int(page) - 1) * size if page.isdigit() and int(page) > 0 else 0
        return self._labels_json(request, repo, issue.labels[start : start + size])

    @vendor_route(
        "POST",
        "/repos/{owner}/{repo}/issues/{number}/labels",
        docs=f"{_LABELS}#add-labels-to-an-issue",
        body="json",
    )
    def add_issue_labels(self, request: FakeRequest) -> FakeResponse:
        """200, 301, 404, 410, 422.

        Takes ``{"labels": [names]}`` (or a bare list of names); adds those the issue
        lacks (names compare without case) and answers 200 with every label the issue
        now carries. A name the repository lacks is created there with colour
        ``ededed`` and no description, as GitHub does. An empty list is refused with a
        422 here (the connector never sends one).
        """
        found = self._issue_of(request)
        if isinstance(found, FakeResponse):
            return found
        repo, issue = found
        body = request.json
        names = body.get("labels") if isinstance(body, dict) else body
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            return self._validation("Label", "labels", "invalid")
        self._put_labels(repo, issue, names)
        issue.updated_at = now()
        return self._labels_json(request, repo, issue.labels)

    @vendor_route(
        "DELETE",
        "/repos/{owner}/{repo}/issues/{number}/labels/{name}",
        docs=f"{_LABELS}#remove-a-label-from-an-issue",
    )
    def remove_issue_label(self, request: FakeRequest) -> FakeResponse:
        """200 with the labels left, 404 ``Label does not exist`` when the issue lacks it; 301, 410."""
        found = self._issue_of(request)
        if isinstance(found, FakeResponse):
            return found
        repo, issue = found
        wanted = request.path_params["name"].casefold()
        carried = [name for name in issue.labels if name.casefold() == wanted]
        if not carried:
            return self.error(404, "Label does not exist")
        issue.labels.remove(carried[0])
        issue.updated_at = now()
        return self._labels_json(request, repo, issue.labels)

    # -- git references ----------------------------------------------------------------

    @vendor_route("GET", "/repos/{owner}/{repo}/git/ref/{ref:path}", docs=f"{_REFS}#get-a-reference")
    def get_ref(self, request: FakeRequest) -> FakeResponse:
        """200, 404 (``ref`` as ``heads/<branch>``)."""
        repo = self._repo_of(request)
        ref = request.path_params["ref"]
        branch = ref.removeprefix("heads/") if ref.startswith("heads/") else None
        if repo is None or branch is None or branch not in repo.branches:
            return self.not_found(request)
        return FakeResponse(200, json=self._wire(request).ref(repo, branch))

    @vendor_route(
        "POST", "/repos/{owner}/{repo}/git/refs", docs=f"{_REFS}#create-a-reference", body="json"
    )
    def create_ref(self, request: FakeRequest) -> FakeResponse:
        """201, 404, 409, 422.

        Takes ``{"ref": "refs/heads/<branch>", "sha"}``. 422 ``Reference already exists``
        for a taken name, 422 ``Object does not exist`` for an unknown commit, 422 for a
        ``ref`` that does not start with ``refs/`` and hold two slashes, 409 for a
        repository without commits.
        """
        repo = self._repo_of(request)
        if repo is None:
            return self.not_found(request)
        body = request.json if isinstance(request.json, dict) else None
        if body is None:
            return self.malformed_body(request, "not an object")
        ref, sha = body.get("ref"), body.get("sha")
        if not isinstance(ref, str):
            return self._validation("Reference", "ref", "missing_field")
        if not isinstance(sha, str):
            return self._validation("Reference", "sha", "missing_field")
        if not ref.startswith("refs/") or ref.count("/") < 2:
            return self.error(422, "Reference name must start with 'refs/' and have at least two slashes.")
        if not repo.commits:
            return self.error(409, "Git Repository is empty.")
        if not ref.startswith("refs/heads/"):
            return self.error(422, "The fake models branches (refs/heads/...) only")
        branch = ref.removeprefix("refs/heads/")
        if branch in repo.branches:
            return self.error(422, "Reference already exists")
        if sha not in repo.commits:
            return self.error(422, "Object does not exist")
        repo.branches[branch] = sha
        answer = self._wire(request).ref(repo, branch)
        return FakeResponse(201, json=answer, headers={"Location": answer["url"]})

    @vendor_route(
        "DELETE", "/repos/{owner}/{repo}/git/refs/{ref:path}", docs=f"{_REFS}#delete-a-reference"
    )
    def delete_ref(self, request: FakeRequest) -> FakeResponse:
        """204, 404, 409, 422.

        A reference that does not exist gets 422 ``Reference does not exist`` (not 404:
        GitHub keeps 404 for a repository it cannot find); deleting the default branch
        gets a 422 too (a message of our own: the documentation names the case, not the text).
        """
        repo = self._repo_of(request)
        if repo is None:
            return self.not_found(request)
        ref = request.path_params["ref"]
        branch = ref.removeprefix("heads/") if ref.startswith("heads/") else None
        if branch is None or branch not in repo.branches:
            return self.error(422, "Reference does not exist")
        if branch == repo.default_branch:
            return self.error(422, "Cannot delete the default branch")
        del repo.branches[branch]
        return FakeResponse(204)
