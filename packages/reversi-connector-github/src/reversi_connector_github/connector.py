"""The ``github`` connector: issues, comments, labels and branches through the GitHub REST API.

Nine tools. One reads (``github.get_issue``); four change the repository and are each
undone by a compensation (``github.create_issue`` by ``github.close_issue``,
``github.add_comment`` by ``github.delete_comment``, ``github.add_labels`` by
``github.remove_labels``, ``github.create_branch`` by ``github.delete_branch``); the
four compensations are idempotent, so a second run succeeds and changes nothing more.

The connector is written on the HTTP kit (:class:`reversi_core.http.HttpConnector`):
every request goes to ``base_url`` (``https://api.github.com``, or a GitHub Enterprise
Server's ``https://HOST/api/v3``) with ``Authorization: Bearer <token>``, ``Accept:
application/vnd.github+json`` and ``X-GitHub-Api-Version: 2022-11-28``
(https://docs.github.com/en/rest/about-the-rest-api/api-versions). A write whose answer
was lost or never came is :class:`~reversi_core.errors.EffectUncertainError`, anything
else a :class:`~reversi_core.errors.ToolError` naming the HTTP status and a code from
GitHub's error table (:data:`reversi_connector_github._errors.ERRORS`). A 403 with
``x-ratelimit-remaining: 0``, and any 429, is ``ToolError(code="rate_limited")``, not a
permission refusal (``code="forbidden"``).

What the compensations leave behind (GitHub cannot delete an issue through the REST
API, so an undone issue stays, closed) is listed in ``docs/connectors/github.md``.

A compensation never overwrites a change someone made after the call. GitHub's REST API
takes no precondition on these writes, so each undo reads first and compares:
``github.delete_comment`` deletes a comment only while its body still has the digest
``add_comment`` returned, ``github.delete_branch`` a branch only while it still points at
the commit ``create_branch`` made it point at (otherwise ``ToolError`` code
``changed_since``, naming what changed, unless ``CallContext.overwrite``), and
``github.close_issue`` leaves an issue someone closed already as they closed it. Between
the read and the write there is a window of one request in which a change still goes
unseen.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from reversi_core.connector import CallContext, tool
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.http import (
    BaseUrl,
    Bearer,
    HttpConnector,
    HttpResponse,
    RequestTool,
    Setting,
    Timeouts,
    url_path,
)
from reversi_core.manifest import Compensation, Effect, Match, Requirement, Source

from ._args import (
    AddCommentArgs,
    AddLabelsArgs,
    CloseIssueArgs,
    CreateBranchArgs,
    CreateIssueArgs,
    DeleteBranchArgs,
    DeleteCommentArgs,
    GetIssueArgs,
    RemoveLabelsArgs,
)
from ._errors import ERRORS
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

_TOKEN_HELP = "a GitHub token (fine-grained or classic personal access token, or an app installation token)"  # noqa: S105 - words for a person, not a secret

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


_ONE_AT_A_TIME = ["github:api"]
"""What every compensation of the connector touches: one name for them all.

GitHub asks integrations to make requests serially, not concurrently, to stay within its
secondary rate limits
(https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#avoid-concurrent-requests).
With every compensation on ``github:api`` a rollback undoes GitHub's steps one at a time,
newest first, while the undos of other connectors' steps run beside them.
"""


# -- shaping answers -------------------------------------------------------------------


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


def _issue_read(github: GithubConnector, args: GetIssueArgs, resp: HttpResponse) -> dict[str, Any]:
    issue = github.expect_object(resp, "issue", wrote=False)
    return {
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


def _new_issue(args: CreateIssueArgs) -> dict[str, Any]:
    payload: dict[str, Any] = {"title": args.title}
    if args.body is not None:
        payload["body"] = args.body
    if args.labels:
        payload["labels"] = _unique(args.labels)
    return payload


def _issue_made(github: GithubConnector, args: CreateIssueArgs, resp: HttpResponse) -> dict[str, Any]:
    issue = github.expect_object(resp, "issue", wrote=True)
    return {
        "number": github.expect_field(issue, "number", resp, wrote=True),
        "title": issue.get("title"),
        "state": issue.get("state"),
        "html_url": issue.get("html_url"),
        "labels": _label_names(issue.get("labels")),
    }


def _comment_made(
    github: GithubConnector, args: AddCommentArgs, resp: HttpResponse
) -> dict[str, Any]:
    comment = github.expect_object(resp, "comment", wrote=True)
    stored = comment.get("body")
    return {
        "id": github.expect_field(comment, "id", resp, wrote=True),
        "body_sha256": body_digest(stored if isinstance(stored, str) else args.body),
        "html_url": comment.get("html_url"),
    }


def body_digest(body: str) -> str:
    """The SHA-256 (hex) of a comment body's UTF-8: what github.delete_comment compares."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _changed(tool: str, what: str, kept: str) -> ToolError:
    """The refusal of an undo whose target someone changed since the call."""
    return ToolError(
        f"{tool}: {what}; {kept}. The later change is kept: undo it and roll back again, or let "
        "the rollback overwrite it (reversi rollback RUN --overwrite STEP)",
        code="changed_since",
    )


# -- the connector -------------------------------------------------------------------


class GithubConnector(HttpConnector):
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
    settings = (
        Setting("GITHUB_TOKEN", "token", _TOKEN_HELP, secret=True),
        Setting(
            "GITHUB_BASE_URL",
            "base_url",
            "a GitHub Enterprise Server's REST API root, such as https://HOST/api/v3",
            required=False,
        ),
    )
    base = BaseUrl(DEFAULT_BASE_URL)
    auth = Bearer("token")
    headers: ClassVar[Mapping[str, str]] = {
        "Accept": MEDIA_TYPE,
        "X-GitHub-Api-Version": API_VERSION,
    }
    errors = ERRORS

    def __init__(
        self,
        token: str,
        base_url: str | None = None,
        timeouts: Timeouts | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(token=token, base_url=base_url, timeouts=timeouts, transport=transport)

    # -- reading ---------------------------------------------------------------------

    get_issue = RequestTool(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        effect=Effect.READ_ONLY,
        permission="github:issues:read",
        input=GetIssueArgs,
        output=GetIssueResult,
        summary="Read one issue (or pull request) of a repository.",
        docs="https://docs.github.com/en/rest/issues/issues#get-an-issue",
        details="Returns the issue's number, title, body, state, state reason, label names, "
        "comment count, web URL and whether it is a pull request. 404 ``not_found`` also when "
        "the token cannot see the repository; 410 ``gone``/``issues_disabled``; 301 ``moved`` "
        "for a transferred issue (redirects are not followed).",
        echo=("owner", "repo"),
        keep=_issue_read,
    )

    # -- changing --------------------------------------------------------------------

    create_issue = RequestTool(
        "POST",
        "/repos/{owner}/{repo}/issues",
        effect=Effect.REVERSIBLE,
        permission="github:issues:write",
        input=CreateIssueArgs,
        output=CreateIssueResult,
        compensation=Compensation(
            tool="github.close_issue",
            argument_map=_same_repo(issue_number="result.number"),
            resources=_ONE_AT_A_TIME,
        ),
        summary="Open an issue; undone by closing it (GitHub's API cannot delete an issue).",
        docs="https://docs.github.com/en/rest/issues/issues#create-an-issue",
        details="404 ``not_found``, 410 ``issues_disabled``, 422 ``validation_failed`` with "
        "GitHub's field details; an answer without the issue's number is uncertain.",
        body=_new_issue,
        echo=("owner", "repo"),
        keep=_issue_made,
    )

    add_comment = RequestTool(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        effect=Effect.REVERSIBLE,
        permission="github:issues:write",
        input=AddCommentArgs,
        output=AddCommentResult,
        compensation=Compensation(
            tool="github.delete_comment",
            argument_map=_same_repo(comment_id="result.id", body_sha256="result.body_sha256"),
            resources=_ONE_AT_A_TIME,
        ),
        requires=[_ON_ISSUE_CREATED_HERE],
        summary="Comment on an issue or pull request; undone by deleting the comment.",
        docs="https://docs.github.com/en/rest/issues/comments#create-an-issue-comment",
        details="Returns the comment's id, the SHA-256 of its body as GitHub stored it "
        "(``body_sha256``: the undo deletes only a comment nobody edited since) and its URL. "
        "404 ``not_found``, 410 ``gone``, 422 ``validation_failed``, 403 ``forbidden`` (a "
        "locked issue, too); an answer without the comment's id is uncertain.",
        body=("body",),
        echo=("owner", "repo", "issue_number"),
        keep=_comment_made,
    )

    @tool(
        effect=Effect.REVERSIBLE,
        permission="github:issues:write",
        input=AddLabelsArgs,
        output=AddLabelsResult,
        compensation=Compensation(
            tool="github.remove_labels",
            argument_map=_same_repo(issue_number="args.issue_number", labels="result.added"),
            resources=_ONE_AT_A_TIME,
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
        after = current
        if new:
            resp = await self.request(ctx, "POST", path, json={"labels": new})
            after = _label_names(self.expect_list(resp, "the issue's list of labels", wrote=True))
        asked = {name.casefold() for name in new}
        return {
            "owner": args.owner,
            "repo": args.repo,
            "issue_number": args.issue_number,
            "added": [name for name in after if name.casefold() in asked],
            "already_present": already,
            "labels": after,
        }

    async def _labels_of(self, ctx: CallContext, path: str) -> list[str]:
        """Every label name on an issue, following pages of 100 (``path`` is its labels URL)."""
        names: list[str] = []
        for page in range(1, _MAX_LABEL_PAGES + 1):
            resp = await self.request(ctx, "GET", path, params={"per_page": 100, "page": page})
            batch = self.expect_list(resp, "the issue's list of labels", wrote=False)
            names += _label_names(batch)
            if len(batch) < 100:
                return names
        raise ToolError(
            f"github: the issue carries more than {100 * _MAX_LABEL_PAGES} labels; "
            "refusing to guess which ones this call would add",
            code="too_many_labels",
        )

    @tool(
        effect=Effect.REVERSIBLE,
        permission="github:branch:write",
        input=CreateBranchArgs,
        output=CreateBranchResult,
        compensation=Compensation(
            tool="github.delete_branch",
            argument_map=_same_repo(branch="args.branch", sha="result.sha"),
            resources=_ONE_AT_A_TIME,
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
        needs it). Undone by github.delete_branch, only while the branch still points at
        ``sha`` (a branch someone pushed to since is kept). Raises ``ToolError`` naming
        the status: 404 ``not_found`` (no such repository or ``from_branch``), 409
        ``conflict`` (an empty repository), 422 ``reference_exists`` or ``object_not_found`` (unknown ``sha``), 401, 403
        ``forbidden`` or ``rate_limited``; ``EffectUncertainError`` when the creation's
        answer was lost or did not come in time.
        """
        sha = args.sha
        if args.from_branch is not None:
            found = await self._read_branch(ctx, args.owner, args.repo, args.from_branch)
            sha = self._ref_sha(found, wrote=False)
        resp = await self.request(
            ctx,
            "POST",
            url_path("/repos/{owner}/{repo}/git/refs", owner=args.owner, repo=args.repo),
            json={"ref": f"refs/heads/{args.branch}", "sha": sha},
        )
        ref = self.expect_object(resp, "reference", wrote=True)
        return {
            "owner": args.owner,
            "repo": args.repo,
            "branch": args.branch,
            "ref": ref.get("ref", f"refs/heads/{args.branch}"),
            "sha": self._ref_sha(resp, wrote=True),
        }

    async def _read_branch(
        self, ctx: CallContext, owner: str, repo: str, branch: str, *, gone_ok: bool = False
    ) -> HttpResponse:
        """``GET /repos/{owner}/{repo}/git/ref/heads/{branch}``; with ``gone_ok`` a 404 is returned.

        https://docs.github.com/en/rest/git/refs#get-a-reference
        """
        path = url_path(
            "/repos/{owner}/{repo}/git/ref/heads/{branch:path}", owner=owner, repo=repo, branch=branch
        )
        return await self.request(
            ctx, "GET", path, ok_statuses=frozenset({404}) if gone_ok else frozenset()
        )

    def _ref_sha(self, resp: HttpResponse, *, wrote: bool) -> str:
        """The commit SHA of a git reference answer (``{"ref", "object": {"sha"}}``)."""
        target = self.expect_object(resp, "reference", wrote=wrote).get("object")
        sha = target.get("sha") if isinstance(target, dict) else None
        if not isinstance(sha, str):
            raise self.malformed("names no commit", resp, wrote=wrote)
        return sha

    # -- compensations -----------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="github:issues:write",
        input=CloseIssueArgs,
        output=CloseIssueResult,
    )
    async def close_issue(self, args: CloseIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Close an issue; one closed already is left as it is (its reason kept).

        Reads the issue first (``GET /repos/{owner}/{repo}/issues/{issue_number}``,
        https://docs.github.com/en/rest/issues/issues#get-an-issue): an issue someone
        closed since the agent opened it stays closed with their reason (``completed``,
        say), which a second close would overwrite. Otherwise ``PATCH`` with ``state``
        ``closed`` and ``state_reason``
        (https://docs.github.com/en/rest/issues/issues#update-an-issue). The issue stays
        visible, closed. Returns ``{"owner", "repo", "number", "state", "state_reason"}``.
        An issue that cannot be found (404 ``not_found``) is not treated as closed: the
        token may have lost access. Raises ``ToolError`` naming the status (404, 410, 401,
        403 ``forbidden``, ``rate_limited``); ``EffectUncertainError`` when the close's
        answer was lost or did not come in time (running it again is safe).
        """
        path = url_path(
            "/repos/{owner}/{repo}/issues/{number}",
            owner=args.owner,
            repo=args.repo,
            number=args.issue_number,
        )
        found = self.expect_object(await self.request(ctx, "GET", path), "issue", wrote=False)
        issue = found
        if found.get("state") != "closed":
            resp = await self.request(
                ctx, "PATCH", path, json={"state": "closed", "state_reason": args.state_reason}
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

        With ``body_sha256`` (the undo of add_comment), reads the comment first
        (https://docs.github.com/en/rest/issues/comments#get-an-issue-comment) and deletes
        it only while its body still has that digest: a comment someone edited since is
        kept, and the call fails with code ``changed_since`` (``ctx.overwrite``, a person's
        decision, skips the read). Then ``DELETE /repos/{owner}/{repo}/issues/comments/
        {comment_id}`` (https://docs.github.com/en/rest/issues/comments#delete-an-issue-comment).
        Returns ``{"owner", "repo", "comment_id", "deleted"}``; ``deleted`` is false after
        a 404. GitHub also answers 404 when the token cannot see the repository, so a token
        that lost its access reads as already gone. Raises ``ToolError`` naming the status
        (401, 403 ``forbidden``, ``rate_limited``) or with code ``changed_since``;
        ``EffectUncertainError`` when the delete's answer was lost or did not come in time.
        """
        path = url_path(
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            owner=args.owner,
            repo=args.repo,
            comment_id=args.comment_id,
        )
        done = {"owner": args.owner, "repo": args.repo, "comment_id": args.comment_id}
        if args.body_sha256 is not None and not ctx.overwrite:
            found = await self.request(ctx, "GET", path, ok_statuses=frozenset({404}))
            if found.status == 404:
                return {**done, "deleted": False}
            body = self.expect_object(found, "comment", wrote=False).get("body")
            if not isinstance(body, str) or body_digest(body) != args.body_sha256:
                raise _changed(
                    "github.delete_comment",
                    f"the comment's body changed since the call (comment {args.comment_id} was "
                    "edited)",
                    "it was not deleted",
                )
        resp = await self.request(ctx, "DELETE", path, ok_statuses=frozenset({404}))
        return {**done, "deleted": resp.status != 404}

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
                resp = await self.request(ctx, "DELETE", path, ok_statuses=frozenset({404}))
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

        With ``sha`` (the undo of create_branch), reads the branch first
        (https://docs.github.com/en/rest/git/refs#get-a-reference) and deletes it only while
        it still points at that commit: a branch someone pushed to since is kept, and the
        call fails with code ``changed_since`` naming both commits (``ctx.overwrite``, a
        person's decision, skips the read). Then ``DELETE /repos/{owner}/{repo}/git/refs/
        heads/{branch}`` (https://docs.github.com/en/rest/git/refs#delete-a-reference).
        GitHub answers a missing branch with 422 ``Reference does not exist``; that answer
        and a 404 count as already gone (``deleted`` false); any other 422 (such as a
        refusal to delete the default branch) is an error. Returns ``{"owner", "repo",
        "branch", "deleted"}``. Declared idempotent so that it can undo create_branch: a
        branch the agent deletes with it is not brought back by a rollback, so keep
        ``github:branch:delete`` out of the agent's scope. Raises ``ToolError`` naming the
        status (401, 403 ``forbidden``, ``rate_limited``, 422) or with code
        ``changed_since``; ``EffectUncertainError`` when the delete's answer was lost or
        did not come in time.
        """
        done = {"owner": args.owner, "repo": args.repo, "branch": args.branch}
        if args.sha is not None and not ctx.overwrite:
            found = await self._read_branch(ctx, args.owner, args.repo, args.branch, gone_ok=True)
            if found.status == 404:
                return {**done, "deleted": False}
            now = self._ref_sha(found, wrote=False)
            if now != args.sha:
                raise _changed(
                    "github.delete_branch",
                    f"the branch {args.branch!r} now points at commit {now[:12]}, not at "
                    f"{args.sha[:12]} where the call made it (someone pushed to it or moved it "
                    "since)",
                    "it was not deleted",
                )
        try:
            resp = await self.request(
                ctx,
                "DELETE",
                url_path(
                    "/repos/{owner}/{repo}/git/refs/heads/{branch:path}",
                    owner=args.owner,
                    repo=args.repo,
                    branch=args.branch,
                ),
                ok_statuses=frozenset({404}),
            )
        except ToolError as exc:
            if (exc.status, exc.code) == (422, "reference_not_found"):
                return {**done, "deleted": False}
            raise
        return {**done, "deleted": resp.status != 404}
