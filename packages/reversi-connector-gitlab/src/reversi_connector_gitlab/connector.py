"""The ``gitlab`` connector: issues, notes and branches through GitLab's REST API (v4).

Seven tools. One reads (``gitlab.get_issue``); three change a project and are each undone
by a compensation (``gitlab.create_issue`` by ``gitlab.close_issue``, ``gitlab.add_note``
by ``gitlab.delete_note``, ``gitlab.create_branch`` by ``gitlab.delete_branch``); the
three compensations are idempotent: a closed issue closes again, a note or a branch
already gone counts as done (only GitLab's 404 for the note or the branch itself, never one
for a project or an issue the token cannot see).

The connector is written on the HTTP kit (:class:`reversi_core.http.HttpConnector`):
every request goes to ``base_url`` (``https://gitlab.com/api/v4``; for a self-hosted
instance its root, to which ``/api/v4`` is added) with the token in the
``PRIVATE-TOKEN`` header (https://docs.gitlab.com/api/rest/authentication/). ``project``
is a numeric ID or a full path, sent as one path segment with its slashes encoded
(``group%2Fsub%2Fproject``). A write whose answer was lost or never came is
:class:`~reversi_core.errors.EffectUncertainError`, anything else a
:class:`~reversi_core.errors.ToolError` naming the HTTP status and a code from GitLab's
error table (:data:`reversi_connector_gitlab._errors.ERRORS`), which reads both of
GitLab's error shapes (``{"message": ...}`` and ``{"error": ...}``).

The undo of a note or a branch never overwrites someone else's later change: given what
the forward call produced (the note's body, the branch's commit), it reads first and
refuses with ``ToolError(code="changed_since")`` naming what changed, unless a person
let the rollback overwrite (``CallContext.overwrite``). What a rollback
leaves behind, the token scopes and the project role each tool needs are in
``docs/connectors/gitlab.md``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import (
    BaseUrl,
    HeaderToken,
    HttpConnector,
    HttpResponse,
    RequestTool,
    Setting,
    Timeouts,
    url_path,
)
from reversi_core.manifest import Compensation, Effect, Match, Requirement, Source

from ._args import (
    AddNoteArgs,
    CloseIssueArgs,
    CreateBranchArgs,
    CreateIssueArgs,
    DeleteBranchArgs,
    DeleteNoteArgs,
    GetIssueArgs,
)
from ._errors import ERRORS
from ._results import (
    AddNoteResult,
    CloseIssueResult,
    CreateBranchResult,
    CreateIssueResult,
    DeleteBranchResult,
    DeleteNoteResult,
    GetIssueResult,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["API_SUFFIX", "CHANGED_SINCE", "DEFAULT_BASE_URL", "GitlabConnector"]

DEFAULT_BASE_URL = "https://gitlab.com"
"""GitLab.com's root; ``/api/v4`` is added (as it is to a self-hosted instance's root)."""

API_SUFFIX = "/api/v4"
"""The REST API's path below an instance's root."""

_DOCS = "https://docs.gitlab.com/api"

_TOKEN_HELP = "a GitLab personal, project or group access token (scope api; read_api to read only)"  # noqa: S105 - words, not a secret

CHANGED_SINCE = "changed_since"
"""The code of an undo refused because someone changed the thing after the forward call."""
_KEPT = (
    "The later change is kept: undo it and roll back again, or let the rollback overwrite it "
    "(reversi rollback RUN --overwrite STEP)"
)
"""What a refusal of an undo tells the person (docs/engine.md, RB-10)."""


def _same_project(**more: Source) -> dict[str, Source]:
    return {"project": "args.project", **more}


def _on(tool_name: str, *matches: Match) -> Requirement:
    return Requirement(
        tool=tool_name, match=[Match(this="args.project", earlier="args.project"), *matches]
    )


def _labels(value: Any) -> list[str]:
    return [x for x in value if isinstance(x, str)] if isinstance(value, list) else []


def _issue_read(gitlab: GitlabConnector, args: GetIssueArgs, resp: HttpResponse) -> dict[str, Any]:
    issue = gitlab.expect_object(resp, "issue", wrote=False)
    return {
        "iid": args.issue_iid,
        "id": issue.get("id"),
        "title": issue.get("title"),
        "description": issue.get("description"),
        "state": issue.get("state") if issue.get("state") in ("opened", "closed") else None,
        "labels": _labels(issue.get("labels")),
        "user_notes_count": issue.get("user_notes_count"),
        "web_url": issue.get("web_url"),
    }


def _new_issue(args: CreateIssueArgs) -> dict[str, Any]:
    payload: dict[str, Any] = {"title": args.title}
    if args.description is not None:
        payload["description"] = args.description
    if args.labels:
        payload["labels"] = ",".join(dict.fromkeys(args.labels))
    if args.confidential:
        payload["confidential"] = True
    return payload


def _issue_made(
    gitlab: GitlabConnector, args: CreateIssueArgs, resp: HttpResponse
) -> dict[str, Any]:
    issue = gitlab.expect_object(resp, "issue", wrote=True)
    iid = gitlab.expect_field(issue, "iid", resp, wrote=True)
    if not isinstance(iid, int):
        raise gitlab.malformed("has an 'iid' that is not a number", resp, wrote=True)
    return {
        "iid": iid,
        "id": issue.get("id"),
        "title": issue.get("title"),
        "state": issue.get("state") if issue.get("state") in ("opened", "closed") else None,
        "labels": _labels(issue.get("labels")),
        "web_url": issue.get("web_url"),
    }


def _note_made(gitlab: GitlabConnector, args: AddNoteArgs, resp: HttpResponse) -> dict[str, Any]:
    note = gitlab.expect_object(resp, "note", wrote=True)
    ident = gitlab.expect_field(note, "id", resp, wrote=True)
    body = note.get("body")
    if not isinstance(ident, int):
        raise gitlab.malformed("has an 'id' that is not a number", resp, wrote=True)
    return {"id": ident, "body": body if isinstance(body, str) else args.body}


def _branch_made(
    gitlab: GitlabConnector, args: CreateBranchArgs, resp: HttpResponse
) -> dict[str, Any]:
    branch = gitlab.expect_object(resp, "branch", wrote=True)
    commit = branch.get("commit")
    sha = commit.get("id") if isinstance(commit, dict) else None
    if not isinstance(sha, str):
        raise gitlab.malformed("names no commit", resp, wrote=True)
    protected = branch.get("protected")
    return {
        "sha": sha,
        "protected": protected if isinstance(protected, bool) else None,
        "web_url": branch.get("web_url"),
    }


def _issue_closed(
    gitlab: GitlabConnector, args: CloseIssueArgs, resp: HttpResponse
) -> dict[str, Any]:
    issue = gitlab.expect_object(resp, "issue", wrote=True)
    if issue.get("state") != "closed":
        raise ToolError(
            f"gitlab: issue #{args.issue_iid} is {issue.get('state')!r} after the request to "
            "close it",
            status=resp.status,
            code="not_closed",
        )
    return {"iid": args.issue_iid, "state": "closed"}


class GitlabConnector(HttpConnector):
    """GitLab issues, notes and branches (see the module docstring).

    ``token`` is a personal, project or group access token sent in ``PRIVATE-TOKEN``; it
    needs the ``api`` scope (``read_api`` is enough for ``gitlab.get_issue``), and its user
    at least the Developer role in the project (Maintainer to delete a protected branch).
    See https://docs.gitlab.com/user/profile/personal_access_tokens/#personal-access-token-scopes.
    ``base_url`` is an instance's root (``https://gitlab.example.com``; ``/api/v4`` is
    added unless it ends with it already); the default is GitLab.com. ``timeouts`` are
    the per-request limits in seconds (default ``Timeouts(connect=5, read=30,
    total=60)``), lowered to the caller's limit on each call. ``transport`` replaces the
    network transport (tests). Raises :class:`~reversi_core.errors.ConfigurationError`
    for an empty token or a malformed ``base_url``; neither message repeats the token.
    """

    name = "gitlab"
    settings = (
        Setting("GITLAB_TOKEN", "token", _TOKEN_HELP, secret=True),
        Setting(
            "GITLAB_BASE_URL",
            "base_url",
            "a self-hosted instance's root, such as https://gitlab.example.com (/api/v4 is added)",
            required=False,
        ),
    )
    base = BaseUrl(DEFAULT_BASE_URL, suffix=API_SUFFIX)
    auth = HeaderToken("PRIVATE-TOKEN", "token")
    headers: ClassVar[Mapping[str, str]] = {"Accept": "application/json"}
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
        "/projects/{project}/issues/{issue_iid}",
        effect=Effect.READ_ONLY,
        permission="gitlab:issues:read",
        input=GetIssueArgs,
        output=GetIssueResult,
        summary="Read one issue of a project.",
        docs=f"{_DOCS}/issues/#single-project-issue",
        details="Returns its iid, id, title, description, state ('opened' or 'closed'), labels, "
        "comment count and web URL. 404 ``project_not_found`` (also a project the token cannot "
        "see) or ``not_found``; 401 ``unauthorized``; 403 ``insufficient_scope``.",
        echo=("project",),
        keep=_issue_read,
    )

    # -- changing --------------------------------------------------------------------

    create_issue = RequestTool(
        "POST",
        "/projects/{project}/issues",
        effect=Effect.REVERSIBLE,
        permission="gitlab:issues:write",
        input=CreateIssueArgs,
        output=CreateIssueResult,
        compensation=Compensation(
            tool="gitlab.close_issue",
            argument_map=_same_project(issue_iid="result.iid"),
            resources=["gitlab:{args.project}/issues/{result.iid}"],
        ),
        summary="Open an issue; undone by closing it (the issue stays, closed).",
        docs=f"{_DOCS}/issues/#new-issue",
        details="Returns ``{project, iid, id, title, state, labels, web_url}``. 404 "
        "``project_not_found``, 400 ``validation_failed`` with GitLab's field problems, 403 "
        "``forbidden`` or ``insufficient_scope``; an answer without the issue's iid is uncertain.",
        body=_new_issue,
        echo=("project",),
        keep=_issue_made,
    )

    add_note = RequestTool(
        "POST",
        "/projects/{project}/issues/{issue_iid}/notes",
        effect=Effect.REVERSIBLE,
        permission="gitlab:issues:write",
        input=AddNoteArgs,
        output=AddNoteResult,
        compensation=Compensation(
            tool="gitlab.delete_note",
            argument_map=_same_project(
                issue_iid="args.issue_iid", note_id="result.id", expected_body="result.body"
            ),
            resources=["gitlab:{args.project}/issues/{args.issue_iid}/notes/{result.id}"],
        ),
        requires=[_on("gitlab.create_issue", Match(this="args.issue_iid", earlier="result.iid"))],
        summary="Comment on an issue; undone by deleting the note, unless someone edited it since.",
        docs=f"{_DOCS}/notes/#create-new-issue-note",
        details="Returns ``{project, issue_iid, id, body}``. 404 ``not_found`` (no such issue, "
        "or one the token cannot see), ``issue_not_found`` or ``project_not_found``; 400 "
        "``validation_failed``; 403 ``forbidden`` (a locked issue too) or "
        "``insufficient_scope``.",
        body=("body",),
        echo=("project", "issue_iid"),
        keep=_note_made,
    )

    create_branch = RequestTool(
        "POST",
        "/projects/{project}/repository/branches",
        effect=Effect.REVERSIBLE,
        permission="gitlab:branch:write",
        input=CreateBranchArgs,
        output=CreateBranchResult,
        compensation=Compensation(
            tool="gitlab.delete_branch",
            argument_map=_same_project(branch="args.branch", expected_sha="result.sha"),
            resources=["gitlab:{args.project}/branches/{args.branch}"],
        ),
        requires=[_on("gitlab.create_branch", Match(this="args.ref", earlier="args.branch"))],
        summary="Create a branch from a branch, tag or commit; undone by deleting it while it has not moved.",
        docs=f"{_DOCS}/branches/#create-repository-branch",
        details="Returns ``{project, branch, ref, sha, protected, web_url}``; ``sha`` is the "
        "commit the branch was created at. 400 ``branch_exists``, ``invalid_reference`` (no "
        "such ref) or ``invalid_branch_name``; 403 ``forbidden`` (the Reporter role cannot push); "
        "404 ``project_not_found``; an answer without the commit is uncertain.",
        body=("branch", "ref"),
        echo=("project", "branch", "ref"),
        keep=_branch_made,
    )

    # -- compensations -----------------------------------------------------------------

    close_issue = RequestTool(
        "PUT",
        "/projects/{project}/issues/{issue_iid}",
        effect=Effect.IDEMPOTENT,
        permission="gitlab:issues:write",
        input=CloseIssueArgs,
        output=CloseIssueResult,
        summary="Close an issue; closing a closed issue again succeeds and changes nothing.",
        docs=f"{_DOCS}/issues/#edit-an-issue",
        details="Sends ``state_event: close``. The issue stays visible, closed, with a system "
        'note saying so. A 404 is an error here, not "already done": the token may have '
        "lost its access.",
        body=lambda args: {"state_event": "close"},
        echo=("project",),
        keep=_issue_closed,
    )

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="gitlab:issues:write",
        input=DeleteNoteArgs,
        output=DeleteNoteResult,
    )
    async def delete_note(self, args: DeleteNoteArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a note of an issue; one already gone counts as success.

        With ``expected_body`` (the undo of gitlab.add_note passes the body it set) the note
        is read first (``GET /projects/{project}/issues/{issue_iid}/notes/{note_id}``,
        https://docs.gitlab.com/api/notes/#get-single-issue-note) and left alone when its
        body is no longer that: someone edited it after the call, and deleting it would
        throw their edit away (``ctx.overwrite``, a person's decision, skips the read). Then
        ``DELETE`` the same path (https://docs.gitlab.com/api/notes/#delete-an-issue-note).

        GitLab answers a missing note and a missing (or hidden) issue alike, 404 ``{"message":
        "404 Not found"}`` (the notes API finds both with ``find``/``find_by!``, whose
        ``RecordNotFound`` lib/api/api.rb answers so). After that answer the issue is read
        (``GET /projects/{project}/issues/{issue_iid}``): only when it can be read is the note
        gone. Returns ``{project, issue_iid, note_id, deleted}``; ``deleted`` is false for a
        note already gone. Raises ``ToolError`` with status 404 when the issue cannot be read,
        for ``project_not_found``, ``issue_not_found`` and ``note_not_found`` (GitLab's answer
        for a note the token cannot read): the note may still stand, so the undo is not
        counted as done. Also ``ToolError(code="changed_since")`` naming the change,
        ``ToolError`` naming the status otherwise (403 ``forbidden``: only the author, or a
        Maintainer, may delete a note); ``EffectUncertainError`` when the delete's answer was
        lost.
        """
        path = url_path(
            "/projects/{project}/issues/{iid}/notes/{note}",
            project=args.project,
            iid=args.issue_iid,
            note=args.note_id,
        )

        def changed(answer: dict[str, Any]) -> str | None:
            if answer.get("body") == args.expected_body:
                return None
            return (
                f"gitlab: note {args.note_id} on issue #{args.issue_iid} was changed since the "
                "call that added it (the note's body is no longer the one it set), so it was not "
                f"deleted. {_KEPT}"
            )

        issue_path = url_path(
            "/projects/{project}/issues/{iid}", project=args.project, iid=args.issue_iid
        )

        async def gone(exc: ToolError) -> bool:
            if exc.code != "not_found":
                return False  # the project, the issue, or a note the token cannot read
            try:  # "404 Not found": the note, or the issue; the issue answers which
                await self.request(ctx, "GET", issue_path)
            except ToolError as unreadable:
                raise ToolError(
                    f"{exc}; and issue #{args.issue_iid} cannot be read either ({unreadable}), "
                    f"so note {args.note_id} may still stand: not counted as already gone "
                    "(has the token lost access to the project?)",
                    status=unreadable.status,
                    code=unreadable.code,
                ) from None
            return True

        deleted = await self._delete(
            ctx, path, "note", changed if args.expected_body is not None else None, gone
        )
        return {
            "project": args.project,
            "issue_iid": args.issue_iid,
            "note_id": args.note_id,
            "deleted": deleted,
        }

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="gitlab:branch:delete",
        input=DeleteBranchArgs,
        output=DeleteBranchResult,
    )
    async def delete_branch(self, args: DeleteBranchArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a branch; one already gone counts as success.

        With ``expected_sha`` (the undo of gitlab.create_branch passes the commit it made the
        branch at) the branch is read first (``GET
        /projects/{project}/repository/branches/{branch}``,
        https://docs.gitlab.com/api/branches/#get-single-repository-branch) and left alone
        when it points elsewhere: someone pushed to it after the call, and deleting it would
        take their commits off every branch (``ctx.overwrite``, a person's decision, skips
        the read). Then ``DELETE`` the same path
        (https://docs.gitlab.com/api/branches/#delete-repository-branch). Returns
        ``{project, branch, deleted}``; ``deleted`` is false after GitLab's 404 for the
        branch itself (``404 Branch Not Found``, or ``No such branch`` from a delete that
        raced another: ``branch_not_found``). Any other 404 (``project_not_found``: a project
        missing or hidden from the token) is raised, since the branch may still stand. Raises
        ``ToolError(code="changed_since")`` naming both commits; 400 ``protected_branch``
        (deleting a protected branch takes the Maintainer role, and the message says so) or
        ``default_branch``; 403 ``forbidden``; ``EffectUncertainError`` when the delete's
        answer was lost. Declared idempotent so that it can undo create_branch: a branch
        the agent deletes with it is not brought back by a rollback, so keep
        ``gitlab:branch:delete`` out of the agent's scope.
        """
        path = url_path(
            "/projects/{project}/repository/branches/{branch}",
            project=args.project,
            branch=args.branch,
        )
        expected = args.expected_sha

        def changed(answer: dict[str, Any]) -> str | None:
            commit = answer.get("commit")
            head = commit.get("id") if isinstance(commit, dict) else None
            if expected is None or head == expected:
                return None
            return (
                f"gitlab: branch {args.branch!r} was changed since the call that created it (the "
                f"branch's head moved from {expected[:12]} to {str(head)[:12]}), so it was not "
                f"deleted. {_KEPT}"
            )

        async def gone(exc: ToolError) -> bool:
            return exc.code == "branch_not_found"

        deleted = await self._delete(
            ctx, path, "branch", changed if expected is not None else None, gone
        )
        return {"project": args.project, "branch": args.branch, "deleted": deleted}

    async def _delete(
        self,
        ctx: CallContext,
        path: str,
        what: str,
        changed: Callable[[dict[str, Any]], str | None] | None,
        gone: Callable[[ToolError], Awaitable[bool]],
    ) -> bool:
        """``DELETE path``; false when the object is already gone.

        With ``changed`` the object is read first (``GET path``); when ``changed(answer)``
        gives a reason (someone changed the object after the forward call), nothing is
        deleted and ``ToolError(code="changed_since")`` says why. A person's decision to
        overwrite (``ctx.overwrite``: ``reversi rollback RUN --overwrite STEP``,
        docs/engine.md) skips the read and deletes. A 404 to either request is "already
        gone" only when ``gone(error)`` says it is GitLab's answer for the object itself;
        any other 404 (a project or an issue the token cannot see) is raised, saying that
        the object may still stand.
        """
        try:
            if changed is not None and not ctx.overwrite:
                found = await self.request(ctx, "GET", path)
                reason = changed(self.expect_object(found, what, wrote=False))
                if reason is not None:
                    raise ToolError(reason, code=CHANGED_SINCE)
            await self.request(ctx, "DELETE", path)
        except ToolError as exc:
            if exc.status != 404:
                raise
            if await gone(exc):
                return False
            raise ToolError(
                f"{exc}; that is not GitLab's answer for a {what} already gone, so the {what} "
                "may still stand: not counted as done (has the token lost access?)",
                status=exc.status,
                code=exc.code,
            ) from None
        return True
