"""The ``github`` connector: issues, comments, labels and branches through the GitHub REST API.

Nine tools. One reads (``github.get_issue``); four change the repository and are each
undone by a compensation (``github.create_issue`` by ``github.close_issue``,
``github.add_comment`` by ``github.delete_comment``, ``github.add_labels`` by
``github.remove_labels``, ``github.create_branch`` by ``github.delete_branch``); the
four compensations are idempotent, so a second run succeeds and changes nothing more.

Every request goes to ``base_url`` (``https://api.github.com``, or a GitHub Enterprise
Server's ``https://HOST/api/v3``) through :class:`reversi_core.http.HttpClient`, with
``Authorization: Bearer <token>``, ``Accept: application/vnd.github+json`` and
``X-GitHub-Api-Version: 2022-11-28``
(https://docs.github.com/en/rest/about-the-rest-api/api-versions). The HTTP layer
decides what a failure means: a write whose answer was lost or never came is
:class:`~reversi_core.errors.EffectUncertainError`, anything else a
:class:`~reversi_core.errors.ToolError` naming the HTTP status and a code from
:func:`reversi_connector_github._errors.error_code_and_message`. A 403 with
``x-ratelimit-remaining: 0``, and any 429, is ``ToolError(code="rate_limited")``, not a
permission refusal (``code="forbidden"``).

What the compensations leave behind (GitHub cannot delete an issue through the REST
API, so an undone issue stays, closed) is listed in ``docs/connectors/github.md``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from reversi_core.connector import CallContext, Connector, tool
from reversi_core.errors import ConfigurationError, EffectUncertainError, ToolError
from reversi_core.http import HttpClient, HttpResponse, Timeouts, url_path
from reversi_core.manifest import Compensation, Effect, Match, Requirement, Source
from reversi_core.redact import register_secret

from ._errors import github_error_code
from ._results import (
    AddCommentResult,
    AddLabelsResult,
    CloseIssueResult,
    CreateBranchResult,
    CreateIssueResult,
    DeleteBranchResult,
    DeleteCommentResult,
    GetIssueResult,
    RemoveLabelsResult,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "MEDIA_TYPE",
    "AddCommentArgs",
    "AddLabelsArgs",
    "CloseIssueArgs",
    "CreateBranchArgs",
    "CreateIssueArgs",
    "DeleteBranchArgs",
    "DeleteCommentArgs",
    "GetIssueArgs",
    "GithubConnector",
    "RemoveLabelsArgs",
]

DEFAULT_BASE_URL = "https://api.github.com"
"""The GitHub.com REST API root; a GitHub Enterprise Server's is ``https://HOST/api/v3``."""

API_VERSION = "2022-11-28"
"""The REST API version sent in ``X-GitHub-Api-Version`` with every request."""

MEDIA_TYPE = "application/vnd.github+json"
"""The ``Accept`` header GitHub recommends for the REST API."""

_MAX_LABEL_PAGES = 10
"""Pages of 100 labels add_labels reads at most before it refuses to go on."""


# -- argument types ------------------------------------------------------------------


def _check_branch(name: str) -> str:
    """Refuse a branch name git would refuse (``git check-ref-format --branch``), in short."""
    problems = []
    if name.startswith("refs/"):
        problems.append("give the branch name without 'refs/' (refs/heads/ is added)")
    if name.startswith(("-", "/")) or name.endswith(("/", ".", ".lock")):
        problems.append("it may not start with '-' or '/' nor end with '/', '.' or '.lock'")
    if ".." in name or "//" in name or "@{" in name or name == "@":
        problems.append("it may not contain '..', '//' or '@{', nor be '@'")
    if re.search(r"[\x00-\x20\x7f~^:?*\[\\]", name):
        problems.append("it may not contain spaces, control characters or any of ~ ^ : ? * [ \\")
    if any(part.startswith(".") for part in name.split("/")):
        problems.append("no '/'-separated part may start with '.'")
    if problems:
        raise ValueError("not a valid branch name: " + "; ".join(problems))
    return name


Owner = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="The account (user or organization) that owns the repository, such as "
        "'octocat'; not case sensitive.",
    ),
]
Repo = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="The repository's name without '.git', such as 'hello-world'; not case "
        "sensitive.",
    ),
]
IssueNumber = Annotated[
    int, Field(ge=1, description="The issue's number in the repository (as shown after '#').")
]
Label = Annotated[str, Field(min_length=1, max_length=100, description="A label name.")]
Branch = Annotated[
    str,
    Field(min_length=1, max_length=255, description="A branch name such as 'agent/fix-42'."),
    AfterValidator(_check_branch),
]
Sha = Annotated[
    str,
    Field(
        pattern=r"^[0-9a-fA-F]{40}([0-9a-fA-F]{24})?$",
        description="A full commit SHA (40 hexadecimal digits, or 64 in a SHA-256 repository).",
    ),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _RepoArgs(_Args):
    owner: Owner
    repo: Repo


class GetIssueArgs(_RepoArgs):
    """Arguments of github.get_issue."""

    issue_number: IssueNumber


class CreateIssueArgs(_RepoArgs):
    """Arguments of github.create_issue."""

    title: str = Field(min_length=1, max_length=256, description="The issue's title.")
    body: str | None = Field(default=None, description="The issue's text, in Markdown.")
    labels: list[Label] = Field(
        default_factory=list,
        max_length=100,
        description="Labels to give the issue. A name the repository does not have yet is "
        "created in the repository by GitHub (and stays after a rollback). GitHub ignores "
        "labels silently when the token may not push to the repository.",
    )


class AddCommentArgs(_RepoArgs):
    """Arguments of github.add_comment."""

    issue_number: IssueNumber
    body: str = Field(min_length=1, max_length=65536, description="The comment, in Markdown.")


class AddLabelsArgs(_RepoArgs):
    """Arguments of github.add_labels."""

    issue_number: IssueNumber
    labels: list[Label] = Field(
        min_length=1,
        max_length=100,
        description="Labels to add to those the issue has. A name the repository does not have "
        "yet is created in the repository by GitHub (and stays after a rollback).",
    )


class CreateBranchArgs(_RepoArgs):
    """Arguments of github.create_branch: the new branch, and where it starts (one of two)."""

    branch: Branch
    from_branch: Branch | None = Field(
        default=None,
        description="Start the new branch at the current commit of this existing branch. Give "
        "this or 'sha', not both.",
    )
    sha: Sha | None = Field(
        default=None, description="Start the new branch at this commit. Give this or 'from_branch'."
    )

    @model_validator(mode="after")
    def _one_start(self) -> CreateBranchArgs:
        if (self.from_branch is None) == (self.sha is None):
            raise ValueError("give exactly one of 'from_branch' and 'sha'")
        return self


class CloseIssueArgs(_RepoArgs):
    """Arguments of github.close_issue."""

    issue_number: IssueNumber
    state_reason: Literal["not_planned", "completed"] = Field(
        default="not_planned",
        description="Why the issue is closed, as GitHub records it; 'not_planned' (the default) "
        "suits undoing an issue that should not have been opened.",
    )


class DeleteCommentArgs(_RepoArgs):
    """Arguments of github.delete_comment."""

    comment_id: int = Field(ge=1, description="The comment's id (the 'id' add_comment returned).")


class RemoveLabelsArgs(_RepoArgs):
    """Arguments of github.remove_labels."""

    issue_number: IssueNumber
    labels: list[Label] = Field(
        max_length=100,
        description="Labels to take off the issue (the 'added' list of add_labels); one the "
        "issue does not carry is skipped. An empty list does nothing.",
    )


class DeleteBranchArgs(_RepoArgs):
    """Arguments of github.delete_branch."""

    branch: Branch


# -- dependencies and compensations --------------------------------------------------

_ON_ISSUE_CREATED_HERE = Requirement(
    tool="github.create_issue",
    match=[
        Match(this="args.owner", earlier="args.owner"),
        Match(this="args.repo", earlier="args.repo"),
        Match(this="args.issue_number", earlier="result.number"),
    ],
)
"""This call works on an issue that an earlier github.create_issue of the run opened.

A rollback then closes that issue only after this call's own undo has run. Owner and
repository are compared exactly as given (GitHub itself ignores their case).
"""


def _same_repo(**more: Source) -> dict[str, Source]:
    """An argument map that passes the call's owner and repository on, plus ``more``."""
    return {"owner": "args.owner", "repo": "args.repo", **more}


# -- the connector -------------------------------------------------------------------


def _current_loop() -> object | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _checked_base_url(base_url: str) -> str:
    """``base_url`` if it is ``http(s)://host[:port][/path]`` without credentials, query or fragment."""
    if not isinstance(base_url, str) or not re.fullmatch(
        r"https?://[^/?#@\s]+(/[^?#\s]*)?", base_url.strip()
    ):
        raise ConfigurationError(
            "github: base_url must look like https://api.github.com or https://HOST/api/v3 "
            "(no user:password@, no query string or fragment)"
        )
    return base_url.strip().rstrip("/")


class GithubConnector(Connector):
    """GitHub issues, comments, labels and branches (see the module docstring).

    ``token`` is a GitHub token sent as ``Authorization: Bearer <token>``: a fine-grained
    personal access token (Issues: read and write, Contents: read and write), a classic
    one with the ``repo`` scope, or a GitHub App installation token. ``base_url`` is the
    REST API root: ``https://api.github.com`` (the default) or a GitHub Enterprise
    Server's ``https://HOST/api/v3``; its path is kept in front of every request.
    ``timeouts`` are the per-request limits in seconds (default
    ``Timeouts(connect=5, read=30, total=60)``), lowered to the caller's limit on each
    call. ``transport`` replaces the network transport (tests).

    The HTTP client is created on the first call, inside the event loop that makes it,
    and released by :meth:`aclose` (a later call creates a new one). Raises
    :class:`~reversi_core.errors.ConfigurationError` for an empty token or a malformed
    ``base_url``; neither message repeats the token.
    """

    name = "github"
    credential_env = "GITHUB_TOKEN"
    env_vars = ("GITHUB_TOKEN", "GITHUB_BASE_URL")

    def __init__(
        self,
        token: str,
        base_url: str = DEFAULT_BASE_URL,
        timeouts: Timeouts | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not isinstance(token, str) or not token.strip() or re.search(r"\s", token):
            raise ConfigurationError(
                "github: the token is empty or contains whitespace; set GITHUB_TOKEN to a "
                "GitHub token"
            )
        register_secret(token)  # scrubbed from journal entries and CLI output from now on
        self._token = token
        self.base_url = _checked_base_url(base_url)
        self.timeouts = timeouts if timeouts is not None else Timeouts()
        self._transport = transport
        self._http: HttpClient | None = None
        self._http_loop: object | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> GithubConnector:
        """Build the connector from ``GITHUB_TOKEN`` and, optionally, ``GITHUB_BASE_URL``.

        ``GITHUB_BASE_URL`` points at a GitHub Enterprise Server's REST API root, such as
        ``https://ghe.example.com/api/v3``. The options ``base_url`` (which wins over the
        variable), ``timeouts`` and ``transport`` are honoured; options meant for other
        connectors (``root``, ``backup_dir``) are ignored. Raises
        :class:`~reversi_core.errors.ConfigurationError` naming ``GITHUB_TOKEN`` when it
        is missing or empty.
        """
        token = environ.get("GITHUB_TOKEN", "")
        if not token.strip():
            raise ConfigurationError(
                "github: GITHUB_TOKEN is not set; export a GitHub token (fine-grained or classic "
                "personal access token, or an app installation token) in GITHUB_TOKEN"
            )
        base_url = options.get("base_url") or environ.get("GITHUB_BASE_URL") or DEFAULT_BASE_URL
        return cls(
            token,
            base_url=base_url,
            timeouts=options.get("timeouts"),
            transport=options.get("transport"),
        )

    async def aclose(self) -> None:
        """Close the HTTP client's connections; safe to call twice, and calls may follow."""
        client, self._http, self._http_loop = self._http, None, None
        if client is not None:
            await client.aclose()

    def _client(self) -> HttpClient:
        """The HTTP client of the running event loop, created on first use.

        A client left over from an event loop that has ended cannot be used (its pooled
        connections belong to that loop), so a new one is made.
        """
        loop = _current_loop()
        if self._http is None or self._http_loop is not loop:
            self._http = HttpClient(
                self.base_url,
                vendor="github",
                headers={
                    "Authorization": f"Bearer {self._token}",
                    "Accept": MEDIA_TYPE,
                    "X-GitHub-Api-Version": API_VERSION,
                },
                secrets=[self._token],
                timeouts=self.timeouts,
                error_code=github_error_code,
                transport=self._transport,
            )
            self._http_loop = loop
        return self._http

    async def _request(
        self,
        ctx: CallContext,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        ok_statuses: frozenset[int] = frozenset(),
    ) -> HttpResponse:
        client = self._client()
        return await client.request(
            method,
            path,
            json=json,
            params=params,
            ok_statuses=ok_statuses,
            timeouts=client.timeouts.capped_at(ctx.timeout),
        )

    async def _labels_of(self, ctx: CallContext, path: str) -> list[str]:
        """Every label name on an issue, following pages of 100 (``path`` is its labels URL)."""
        names: list[str] = []
        for page in range(1, _MAX_LABEL_PAGES + 1):
            resp = await self._request(ctx, "GET", path, params={"per_page": 100, "page": page})
            if not isinstance(resp.json, list):
                raise _malformed("is not the issue's list of labels", resp, wrote=False)
            names += _label_names(resp.json)
            if len(resp.json) < 100:
                return names
        raise ToolError(
            f"github: the issue carries more than {100 * _MAX_LABEL_PAGES} labels; "
            "refusing to guess which ones this call would add",
            code="too_many_labels",
        )

    # -- reading -------------------------------------------------------------------

    @tool(
        effect=Effect.READ_ONLY,
        permission="github:issues:read",
        input=GetIssueArgs,
        output=GetIssueResult,
    )
    async def get_issue(self, args: GetIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Read one issue (or pull request) of a repository.

        ``GET /repos/{owner}/{repo}/issues/{issue_number}``
        (https://docs.github.com/en/rest/issues/issues#get-an-issue). Returns ``{"owner",
        "repo", "number", "title", "body", "state" ("open"|"closed"), "state_reason",
        "labels" (names), "comments" (how many), "html_url", "is_pull_request"}``. Raises
        ``ToolError`` naming the status: 404 ``not_found`` (no such issue, or the token
        cannot see the repository), 410 ``gone`` / ``issues_disabled``, 301 ``moved`` (the
        issue was transferred; redirects are not followed), 401, 403 ``forbidden``, or
        ``rate_limited``.
        """
        resp = await self._request(
            ctx,
            "GET",
            url_path(
                "/repos/{owner}/{repo}/issues/{number}",
                owner=args.owner,
                repo=args.repo,
                number=args.issue_number,
            ),
        )
        issue = _object(resp, "issue")
        return {
            "owner": args.owner,
            "repo": args.repo,
            "number": issue.get("number"),
            "title": issue.get("title"),
            "body": issue.get("body"),
            "state": issue.get("state"),
            "state_reason": issue.get("state_reason"),
            "labels": _label_names(issue.get("labels")),
            "comments": issue.get("comments"),
            "html_url": issue.get("html_url"),
            "is_pull_request": "pull_request" in issue,
        }

    # -- changing ------------------------------------------------------------------

    @tool(
        effect=Effect.REVERSIBLE,
        permission="github:issues:write",
        input=CreateIssueArgs,
        output=CreateIssueResult,
        compensation=Compensation(
            tool="github.close_issue", argument_map=_same_repo(issue_number="result.number")
        ),
    )
    async def create_issue(self, args: CreateIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Open an issue; undone by closing it (GitHub's API cannot delete an issue).

        ``POST /repos/{owner}/{repo}/issues``
        (https://docs.github.com/en/rest/issues/issues#create-an-issue). Returns
        ``{"owner", "repo", "number", "title", "state", "html_url", "labels"}``. Raises
        ``ToolError`` naming the status: 404 ``not_found``, 410 ``issues_disabled``, 422
        ``validation_failed`` (with GitHub's field details), 401, 403 ``forbidden`` or
        ``rate_limited``; ``EffectUncertainError`` when the answer was lost or did not
        come in time (the issue may exist).
        """
        payload: dict[str, Any] = {"title": args.title}
        if args.body is not None:
            payload["body"] = args.body
        if args.labels:
            payload["labels"] = _unique(args.labels)
        resp = await self._request(
            ctx,
            "POST",
            url_path("/repos/{owner}/{repo}/issues", owner=args.owner, repo=args.repo),
            json=payload,
        )
        issue = _object(resp, "issue", wrote=True)
        return {
            "owner": args.owner,
            "repo": args.repo,
            "number": _required(issue, "number", resp, wrote=True),
            "title": issue.get("title"),
            "state": issue.get("state"),
            "html_url": issue.get("html_url"),
            "labels": _label_names(issue.get("labels")),
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="github:issues:write",
        input=AddCommentArgs,
        output=AddCommentResult,
        compensation=Compensation(
            tool="github.delete_comment", argument_map=_same_repo(comment_id="result.id")
        ),
        requires=[_ON_ISSUE_CREATED_HERE],
    )
    async def add_comment(self, args: AddCommentArgs, ctx: CallContext) -> dict[str, Any]:
        """Comment on an issue or pull request; undone by deleting the comment.

        ``POST /repos/{owner}/{repo}/issues/{issue_number}/comments``
        (https://docs.github.com/en/rest/issues/comments#create-an-issue-comment). Returns
        ``{"owner", "repo", "issue_number", "id", "html_url"}``. Raises ``ToolError``
        naming the status: 404 ``not_found``, 410 ``gone``, 422 ``validation_failed``,
        401, 403 ``forbidden`` (a locked issue, too) or ``rate_limited``;
        ``EffectUncertainError`` when the answer was lost or did not come in time.
        """
        resp = await self._request(
            ctx,
            "POST",
            url_path(
                "/repos/{owner}/{repo}/issues/{number}/comments",
                owner=args.owner,
                repo=args.repo,
                number=args.issue_number,
            ),
            json={"body": args.body},
        )
        comment = _object(resp, "comment", wrote=True)
        return {
            "owner": args.owner,
            "repo": args.repo,
            "issue_number": args.issue_number,
            "id": _required(comment, "id", resp, wrote=True),
            "html_url": comment.get("html_url"),
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="github:issues:write",
        input=AddLabelsArgs,
        output=AddLabelsResult,
        compensation=Compensation(
            tool="github.remove_labels",
            argument_map=_same_repo(issue_number="args.issue_number", labels="result.added"),
        ),
        requires=[_ON_ISSUE_CREATED_HERE],
    )
    async def add_labels(self, args: AddLabelsArgs, ctx: CallContext) -> dict[str, Any]:
        """Add labels to an issue; the undo removes only the labels this call added.

        Reads the issue's labels first, 100 per page
        (``GET /repos/{owner}/{repo}/issues/{issue_number}/labels``,
        https://docs.github.com/en/rest/issues/labels#list-labels-for-an-issue), then adds
        (``POST /repos/{owner}/{repo}/issues/{issue_number}/labels``,
        https://docs.github.com/en/rest/issues/labels#add-labels-to-an-issue). Label
        names are compared without regard to case, as GitHub does. Returns ``{"owner",
        "repo", "issue_number", "added" (names this call put on the issue, as GitHub
        spells them), "already_present", "labels" (all labels after the call)}``. A label
        someone adds between the read and the write counts as added by this call.
        Raises ``ToolError`` naming the status (404 ``not_found``, 410, 422
        ``validation_failed``, 401, 403 ``forbidden``, ``rate_limited``), or with code
        ``too_many_labels`` for an issue with over 1000 labels; a failed read is a
        ``ToolError`` (nothing was written); ``EffectUncertainError`` when the
        write's answer was lost or did not come in time.
        """
        path = url_path(
            "/repos/{owner}/{repo}/issues/{number}/labels",
            owner=args.owner,
            repo=args.repo,
            number=args.issue_number,
        )
        current = await self._labels_of(ctx, path)
        present = {name.casefold() for name in current}
        wanted = _unique(args.labels)
        new = [name for name in wanted if name.casefold() not in present]
        already = [name for name in wanted if name.casefold() in present]
        if not new:
            return {
                "owner": args.owner,
                "repo": args.repo,
                "issue_number": args.issue_number,
                "added": [],
                "already_present": already,
                "labels": current,
            }
        resp = await self._request(ctx, "POST", path, json={"labels": new})
        if not isinstance(resp.json, list):
            raise _malformed("is not the issue's list of labels", resp, wrote=True)
        after = _label_names(resp.json)
        asked = {name.casefold() for name in new}
        added = [name for name in after if name.casefold() in asked]
        return {
            "owner": args.owner,
            "repo": args.repo,
            "issue_number": args.issue_number,
            "added": added,
            "already_present": already,
            "labels": after,
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="github:branch:write",
        input=CreateBranchArgs,
        output=CreateBranchResult,
        compensation=Compensation(
            tool="github.delete_branch", argument_map=_same_repo(branch="args.branch")
        ),
    )
    async def create_branch(self, args: CreateBranchArgs, ctx: CallContext) -> dict[str, Any]:
        """Create a branch at a commit, or at another branch's current commit; undone by deleting it.

        With ``from_branch``, reads that branch's commit first
        (``GET /repos/{owner}/{repo}/git/ref/heads/{branch}``,
        https://docs.github.com/en/rest/git/refs#get-a-reference); then creates
        ``refs/heads/<branch>`` (``POST /repos/{owner}/{repo}/git/refs``,
        https://docs.github.com/en/rest/git/refs#create-a-reference). Returns ``{"owner",
        "repo", "branch", "ref", "sha"}``, ``sha`` being the commit the branch was
        created at (keep it: the connector does not, and recreating a deleted branch
        needs it). Raises ``ToolError`` naming the status: 404 ``not_found`` (no such
        repository or ``from_branch``), 409 ``conflict`` (an empty repository), 422
        ``reference_exists`` or ``object_not_found`` (unknown ``sha``), 401, 403
        ``forbidden`` or ``rate_limited``; ``EffectUncertainError`` when the creation's
        answer was lost or did not come in time.
        """
        sha = args.sha
        if args.from_branch is not None:
            found = await self._request(
                ctx,
                "GET",
                url_path(
                    "/repos/{owner}/{repo}/git/ref/heads/{branch:path}",
                    owner=args.owner,
                    repo=args.repo,
                    branch=args.from_branch,
                ),
            )
            sha = _ref_sha(found)
        resp = await self._request(
            ctx,
            "POST",
            url_path("/repos/{owner}/{repo}/git/refs", owner=args.owner, repo=args.repo),
            json={"ref": f"refs/heads/{args.branch}", "sha": sha},
        )
        ref = _object(resp, "reference", wrote=True)
        return {
            "owner": args.owner,
            "repo": args.repo,
            "branch": args.branch,
            "ref": ref.get("ref", f"refs/heads/{args.branch}"),
            "sha": _ref_sha(resp, wrote=True),
        }

    # -- compensations -------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="github:issues:write",
        input=CloseIssueArgs,
        output=CloseIssueResult,
    )
    async def close_issue(self, args: CloseIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Close an issue; closing a closed issue again succeeds and changes nothing else.

        ``PATCH /repos/{owner}/{repo}/issues/{issue_number}`` with ``state: closed``
        (https://docs.github.com/en/rest/issues/issues#update-an-issue). The issue stays
        visible, closed. Returns ``{"owner", "repo", "number", "state", "state_reason"}``.
        Raises ``ToolError`` naming the status: 404 ``not_found`` (an issue that cannot be
        found is not treated as closed: the token may have lost access), 410, 422, 401,
        403 ``forbidden`` or ``rate_limited``; ``EffectUncertainError`` when the answer
        was lost (running it again is safe).
        """
        resp = await self._request(
            ctx,
            "PATCH",
            url_path(
                "/repos/{owner}/{repo}/issues/{number}",
                owner=args.owner,
                repo=args.repo,
                number=args.issue_number,
            ),
            json={"state": "closed", "state_reason": args.state_reason},
        )
        issue = resp.json if isinstance(resp.json, dict) else {}  # a 2xx means it is closed
        return {
            "owner": args.owner,
            "repo": args.repo,
            "number": args.issue_number,
            "state": issue.get("state", "closed"),
            "state_reason": issue.get("state_reason", args.state_reason),
        }

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="github:issues:write",
        input=DeleteCommentArgs,
        output=DeleteCommentResult,
    )
    async def delete_comment(self, args: DeleteCommentArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete an issue comment; one already gone (404) counts as success.

        ``DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}``
        (https://docs.github.com/en/rest/issues/comments#delete-an-issue-comment). Returns
        ``{"owner", "repo", "comment_id", "deleted"}``; ``deleted`` is false after a 404.
        GitHub also answers 404 when the token cannot see the repository, so a token that
        lost its access reads as "already gone". Raises ``ToolError`` naming the status
        for 401, 403 ``forbidden``, ``rate_limited`` and the rest;
        ``EffectUncertainError`` when the answer was lost (running it again is safe).
        """
        resp = await self._request(
            ctx,
            "DELETE",
            url_path(
                "/repos/{owner}/{repo}/issues/comments/{comment_id}",
                owner=args.owner,
                repo=args.repo,
                comment_id=args.comment_id,
            ),
            ok_statuses=frozenset({404}),
        )
        return {
            "owner": args.owner,
            "repo": args.repo,
            "comment_id": args.comment_id,
            "deleted": resp.status != 404,
        }

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="github:issues:write",
        input=RemoveLabelsArgs,
        output=RemoveLabelsResult,
    )
    async def remove_labels(self, args: RemoveLabelsArgs, ctx: CallContext) -> dict[str, Any]:
        """Take the given labels off an issue, one request per label; a label not there is skipped.

        ``DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}``
        (https://docs.github.com/en/rest/issues/labels#remove-a-label-from-an-issue) for
        each label; a 404 (the issue does not carry it) counts as done. Labels stay
        defined in the repository. Returns ``{"owner", "repo", "issue_number", "removed",
        "absent"}``. Raises ``ToolError`` naming the status (401, 403 ``forbidden``,
        ``rate_limited``, 5xx) when nothing was removed yet; ``EffectUncertainError``
        when a request's answer was lost, or when a later label fails after earlier ones
        were removed (running it again finishes the job).
        """
        removed: list[str] = []
        absent: list[str] = []
        for name in _unique(args.labels):
            path = url_path(
                "/repos/{owner}/{repo}/issues/{number}/labels/{name}",
                owner=args.owner,
                repo=args.repo,
                number=args.issue_number,
                name=name,
            )
            try:
                resp = await self._request(ctx, "DELETE", path, ok_statuses=frozenset({404}))
            except ToolError as exc:
                if not removed:
                    raise
                raise EffectUncertainError(
                    f"github.remove_labels removed {removed} from issue #{args.issue_number}, "
                    f"then failed on {name!r}: {exc}; run it again to finish"
                ) from None
            (absent if resp.status == 404 else removed).append(name)
        return {
            "owner": args.owner,
            "repo": args.repo,
            "issue_number": args.issue_number,
            "removed": removed,
            "absent": absent,
        }

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="github:branch:delete",
        input=DeleteBranchArgs,
        output=DeleteBranchResult,
    )
    async def delete_branch(self, args: DeleteBranchArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a branch; one already gone counts as success.

        ``DELETE /repos/{owner}/{repo}/git/refs/heads/{branch}``
        (https://docs.github.com/en/rest/git/refs#delete-a-reference). GitHub answers a
        missing branch with 422 ``{"message": "Reference does not exist"}``; that answer
        and a 404 count as "already gone" (``deleted`` false). Any other 422 (such as a
        refusal to delete the default branch) is an error. Returns ``{"owner", "repo",
        "branch", "deleted"}``. Declared idempotent so that it can undo create_branch: a
        branch the agent deletes with it is not brought back by a rollback, so keep
        ``github:branch:delete`` out of the agent's scope. Raises ``ToolError`` naming
        the status; ``EffectUncertainError`` when the answer was lost (running it again
        is safe).
        """
        path = url_path(
            "/repos/{owner}/{repo}/git/refs/heads/{branch:path}",
            owner=args.owner,
            repo=args.repo,
            branch=args.branch,
        )
        try:
            resp = await self._request(ctx, "DELETE", path, ok_statuses=frozenset({404}))
        except ToolError as exc:
            if exc.status != 422 or exc.code != "reference_not_found":
                raise
            return {"owner": args.owner, "repo": args.repo, "branch": args.branch, "deleted": False}
        return {
            "owner": args.owner,
            "repo": args.repo,
            "branch": args.branch,
            "deleted": resp.status != 404,
        }


# -- helpers ---------------------------------------------------------------------------


def _unique(names: list[str]) -> list[str]:
    """``names`` without repeats (compared without case), first spelling kept, order kept."""
    seen: set[str] = set()
    out = []
    for name in names:
        if name.casefold() not in seen:
            seen.add(name.casefold())
            out.append(name)
    return out


def _label_names(value: Any) -> list[str]:
    """Label names from GitHub's label objects (or plain strings)."""
    if not isinstance(value, list):
        return []
    names = []
    for item in value:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            names.append(item["name"])
    return names


def _malformed(
    problem: str, resp: HttpResponse, *, wrote: bool
) -> ToolError | EffectUncertainError:
    """The error for a successful answer that lacks what the tool needs.

    After a write GitHub accepted, the change was made but cannot be described (so it
    cannot be undone automatically): that is uncertain, never a plain failure.
    """
    text = f"github: HTTP {resp.status} answer {problem}"
    if wrote:
        return EffectUncertainError(
            f"{text}; the write was accepted, but its result cannot be read, so it cannot be "
            "undone automatically: check the repository"
        )
    return ToolError(text, status=resp.status, code="invalid_response")


def _object(resp: HttpResponse, what: str, *, wrote: bool = False) -> dict[str, Any]:
    """The answer's JSON object (see :func:`_malformed` when it is something else)."""
    if not isinstance(resp.json, dict):
        raise _malformed(f"is not a JSON {what} object", resp, wrote=wrote)
    return resp.json


def _required(obj: Mapping[str, Any], key: str, resp: HttpResponse, *, wrote: bool) -> Any:
    value = obj.get(key)
    if value is None:
        raise _malformed(f"has no {key!r}", resp, wrote=wrote)
    return value


def _ref_sha(resp: HttpResponse, *, wrote: bool = False) -> str:
    """The commit SHA of a git reference answer (``{"ref", "object": {"sha"}}``)."""
    ref = _object(resp, "reference", wrote=wrote)
    target = ref.get("object")
    sha = target.get("sha") if isinstance(target, dict) else None
    if not isinstance(sha, str):
        raise _malformed("names no commit", resp, wrote=wrote)
    return sha
