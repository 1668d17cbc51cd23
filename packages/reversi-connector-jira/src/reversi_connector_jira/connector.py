"""The ``jira`` connector: issues, comments and workflow transitions through Jira Cloud's REST API v3.

Seven tools. One reads (``jira.get_issue``); two create and are undone by deleting what
they made (``jira.create_issue`` by ``jira.delete_issue``, ``jira.add_comment`` by
``jira.delete_comment``); ``jira.transition_issue`` moves an issue along its workflow,
reading the status first, and is undone by ``jira.restore_status``, which runs a
transition leading back, but only while the issue is still in the status the transition
set: a status someone changed since is left alone (the undo fails naming it). Likewise
the deletes keep what someone changed since: a comment edited, an issue edited or
commented on (``changed_since``), unless a person lets the rollback overwrite.

Requests go to ``JIRA_BASE_URL`` (``https://yourco.atlassian.net``) under
``/rest/api/3`` with HTTP basic authentication, the account's email and an API token
(https://developer.atlassian.com/cloud/jira/platform/basic-auth-for-rest-apis/).
Descriptions and comments are sent as Atlassian Document Format, converted from the
agent's plain text (:mod:`reversi_connector_jira._adf`). Errors are
:class:`~reversi_core.errors.ToolError`\\ s naming the HTTP status, with a code from the
status (:data:`reversi_connector_jira._errors.ERRORS`); a write whose answer was lost is
:class:`~reversi_core.errors.EffectUncertainError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import BaseUrl, Basic, HttpConnector, Setting, Timeouts, url_path
from reversi_core.manifest import Compensation, Effect, Match, Requirement

from ._adf import to_adf, to_text
from ._args import (
    AddCommentArgs,
    CreateIssueArgs,
    DeleteCommentArgs,
    DeleteIssueArgs,
    GetIssueArgs,
    RestoreStatusArgs,
    TransitionIssueArgs,
)
from ._errors import ERRORS, HAS_SUBTASKS
from ._results import (
    AddCommentResult,
    CreateIssueResult,
    DeleteCommentResult,
    DeleteIssueResult,
    GetIssueResult,
    RestoreStatusResult,
    TransitionIssueResult,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["API", "JiraConnector"]

API = "/rest/api/3"
"""The REST API v3 root under ``JIRA_BASE_URL``."""

_ISSUES = "https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/"
_COMMENTS = "https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments/"

_READ_FIELDS = "summary,status,description,issuetype,project,parent,subtasks,created,updated"

CHANGED_SINCE = "changed_since"
"""The code of an undo refused because someone changed the thing after the forward call."""
_KEPT = (
    "The later change is kept: undo it and roll back again, or let the rollback overwrite it "
    "(reversi rollback RUN --overwrite STEP)"
)
"""What a refusal of an undo tells the person (docs/engine.md, RB-10)."""


def _reads_as(document: Any, text: str | None) -> bool:
    """Whether an ADF ``document`` (or ``None``) holds the plain ``text`` a call sent as ADF.

    Both sides go through the same conversion (:func:`to_adf`, then :func:`to_text`), so
    what the conversion does to the text (line endings, blank paragraphs) is no change.
    """
    return to_text(document) == (to_text(to_adf(text)) if text is not None else None)


_ONE_AT_A_TIME = ["jira:api"]
"""What every compensation of the connector touches: one name for them all.

A call names its issue by key (``PROJ-12``) or by id (``10012``), and a result gives the
issue back as given, so two steps on one issue can carry two spellings of it; undoing
two transitions of one issue out of order fails. One name for every compensation makes
a rollback undo Jira's steps one at a time, newest first, beside other connectors'.
"""


def _on_issue_created_here(field: str) -> list[Requirement]:
    """``field`` of this call names an issue an earlier jira.create_issue of the run made (key or id)."""
    return [
        Requirement(
            tool="jira.create_issue", match=[Match(this=f"args.{field}", earlier=f"result.{which}")]
        )
        for which in ("key", "id")
    ]


def _status(value: Any) -> tuple[str | None, str | None]:
    """``(id, name)`` of a Jira status object."""
    if not isinstance(value, dict):
        return None, None
    ident, name = value.get("id"), value.get("name")
    return (str(ident) if ident is not None else None, name if isinstance(name, str) else None)


def _object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a part Jira's answer left out)."""
    return value if isinstance(value, dict) else {}


def _described(transition: dict[str, Any]) -> str:
    to = _object(transition.get("to"))
    return f"{transition.get('name')!r} → {to.get('name')!r} (id {transition.get('id')})"


class JiraConnector(HttpConnector):
    """Jira Cloud issues, comments and workflow transitions, each write undone by a compensation.

    ``base_url`` is the site (``https://yourco.atlassian.net``; required); ``email`` and
    ``api_token`` the account's email and an API token
    (https://id.atlassian.com/manage-profile/security/api-tokens), sent as HTTP basic
    authentication. ``timeouts`` are the per-request limits in seconds, lowered to the
    caller's limit on each call; ``transport`` replaces the network transport (tests).
    Raises :class:`~reversi_core.errors.ConfigurationError` for a missing setting, an
    empty token or a malformed ``base_url``; no message repeats the token.
    """

    name = "jira"
    settings = (
        Setting(
            "JIRA_API_TOKEN", "api_token", "an Atlassian API token of the account", secret=True
        ),
        Setting(
            "JIRA_EMAIL", "email", "the email address of the Atlassian account the token belongs to"
        ),
        Setting(
            "JIRA_BASE_URL",
            "base_url",
            "your Jira Cloud site, such as https://yourco.atlassian.net",
        ),
    )
    base = BaseUrl(None)
    auth = Basic("email", "api_token")
    headers: ClassVar[Mapping[str, str]] = {"Accept": "application/json"}
    errors = ERRORS

    def __init__(
        self,
        base_url: str,
        email: str,
        api_token: str,
        timeouts: Timeouts | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            base_url=base_url,
            email=email,
            api_token=api_token,
            timeouts=timeouts,
            transport=transport,
        )

    def _issue_path(self, issue: str, tail: str = "") -> str:
        return url_path(f"{API}/issue/{{issue}}{tail}", issue=issue)

    async def _current_status(self, ctx: CallContext, issue: str) -> tuple[str, str]:
        """``(id, name)`` of the issue's status now (a read)."""
        resp = await self.request(ctx, "GET", self._issue_path(issue), params={"fields": "status"})
        fields = self.expect_object(resp, "issue", wrote=False).get("fields")
        ident, name = _status(fields.get("status") if isinstance(fields, dict) else None)
        if ident is None or name is None:
            raise self.malformed("names no status", resp, wrote=False)
        return ident, name

    async def _transitions(self, ctx: CallContext, issue: str) -> list[dict[str, Any]]:
        """The transitions the account may run on the issue from its current status (a read)."""
        resp = await self.request(ctx, "GET", self._issue_path(issue, "/transitions"))
        found = self.expect_object(resp, "transitions", wrote=False).get("transitions")
        if not isinstance(found, list):
            raise self.malformed("has no list of transitions", resp, wrote=False)
        return [t for t in found if isinstance(t, dict) and t.get("id") is not None]

    async def _run_transition(self, ctx: CallContext, issue: str, transition_id: str) -> None:
        await self.request(
            ctx,
            "POST",
            self._issue_path(issue, "/transitions"),
            json={"transition": {"id": transition_id}},
        )

    # -- reading ---------------------------------------------------------------------

    @tool(
        effect=Effect.READ_ONLY,
        permission="jira:issues:read",
        input=GetIssueArgs,
        output=GetIssueResult,
    )
    async def get_issue(self, args: GetIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Read one issue: summary, description as plain text, status, type, project, parent, subtasks.

        ``GET /rest/api/3/issue/{issueIdOrKey}`` with the fields it returns
        (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-get).
        Needs the *Browse projects* permission. Raises ``ToolError`` naming the status:
        404 ``not_found`` (also when the account may not see it), 401 ``unauthorized``,
        429 ``rate_limited``.
        """
        resp = await self.request(
            ctx, "GET", self._issue_path(args.issue), params={"fields": _READ_FIELDS}
        )
        issue = self.expect_object(resp, "issue", wrote=False)
        fields = _object(issue.get("fields"))
        status_id, status = _status(fields.get("status"))
        kind = _object(fields.get("issuetype"))
        project = _object(fields.get("project"))
        parent = _object(fields.get("parent"))
        listed = fields.get("subtasks")
        subtasks = listed if isinstance(listed, list) else []
        return {
            "id": str(self.expect_field(issue, "id", resp, wrote=False)),
            "key": issue.get("key"),
            "summary": fields.get("summary"),
            "description": to_text(fields.get("description")),
            "status": status,
            "status_id": status_id,
            "issue_type": kind.get("name"),
            "project": project.get("key"),
            "parent": parent.get("key"),
            "subtasks": [str(s["key"]) for s in subtasks if isinstance(s, dict) and s.get("key")],
            "created": fields.get("created"),
            "updated": fields.get("updated"),
        }

    # -- changing --------------------------------------------------------------------

    @tool(
        effect=Effect.REVERSIBLE,
        permission="jira:issues:write",
        input=CreateIssueArgs,
        output=CreateIssueResult,
        compensation=Compensation(
            tool="jira.delete_issue",
            argument_map={
                "issue": "result.id",
                "expected_summary": "result.summary",
                "expected_description": "result.description",
            },
            resources=_ONE_AT_A_TIME,
        ),
        requires=_on_issue_created_here("parent"),
    )
    async def create_issue(self, args: CreateIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Create an issue (or, with ``parent``, a subtask); undone by deleting it.

        ``POST /rest/api/3/issue``
        (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-post),
        the description sent as Atlassian Document Format. Needs *Browse projects* and
        *Create issues*. A subtask of an issue the run created is undone before its parent
        (Jira refuses to delete an issue with subtasks). Returns ``{"id", "key", "url",
        "summary", "description"}``, the last two as the call set them (the undo deletes the
        issue only while they are unchanged). Raises ``ToolError`` naming the status (400
        ``bad_request`` with Jira's field errors: an unknown project or issue type, a blank
        summary; 401, 403 ``forbidden``, 429 ``rate_limited``); ``EffectUncertainError``
        when the answer was lost, did not come in time, or names no issue.
        """
        fields: dict[str, Any] = {
            "project": {"key": args.project},
            "summary": args.summary,
            "issuetype": {"name": args.issue_type},
        }
        if args.description is not None:
            fields["description"] = to_adf(args.description)
        if args.parent is not None:
            fields["parent"] = (
                {"id": args.parent} if args.parent.isdigit() else {"key": args.parent}
            )
        resp = await self.request(ctx, "POST", f"{API}/issue", json={"fields": fields})
        made = self.expect_object(resp, "created issue", wrote=True)
        return {
            "id": str(self.expect_field(made, "id", resp, wrote=True)),
            "key": str(self.expect_field(made, "key", resp, wrote=True)),
            "url": made.get("self"),
            "summary": args.summary,
            "description": args.description,
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="jira:comments:write",
        input=AddCommentArgs,
        output=AddCommentResult,
        compensation=Compensation(
            tool="jira.delete_comment",
            argument_map={
                "issue": "args.issue",
                "comment_id": "result.id",
                "expected_body": "result.body",
            },
            resources=_ONE_AT_A_TIME,
        ),
        requires=_on_issue_created_here("issue"),
    )
    async def add_comment(self, args: AddCommentArgs, ctx: CallContext) -> dict[str, Any]:
        """Comment on an issue; undone by deleting the comment.

        ``POST /rest/api/3/issue/{issueIdOrKey}/comment``
        (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments/#api-rest-api-3-issue-issueidorkey-comment-post),
        the body sent as Atlassian Document Format. Needs *Browse projects* and *Add
        comments*. Returns ``{"issue", "id", "created", "url", "body"}`` (``body`` the text
        posted: the undo deletes the comment only while it still reads so). Raises ``ToolError``
        naming the status (404 ``not_found``, 400 ``bad_request``, 413 ``too_large`` when
        the issue has too many comments, 401, 429 ``rate_limited``);
        ``EffectUncertainError`` when the answer was lost, did not come in time, or names
        no comment.
        """
        resp = await self.request(
            ctx, "POST", self._issue_path(args.issue, "/comment"), json={"body": to_adf(args.body)}
        )
        comment = self.expect_object(resp, "comment", wrote=True)
        return {
            "issue": args.issue,
            "id": str(self.expect_field(comment, "id", resp, wrote=True)),
            "created": comment.get("created"),
            "url": comment.get("self"),
            "body": args.body,
        }

    @tool(
        effect=Effect.COMPENSABLE,
        permission="jira:issues:transition",
        input=TransitionIssueArgs,
        output=TransitionIssueResult,
        compensation=Compensation(
            tool="jira.restore_status",
            argument_map={
                "issue": "args.issue",
                "status_id": "result.previous_status_id",
                "status": "result.previous_status",
                "expected_status_id": "result.status_id",
                "expected_status": "result.status",
            },
            resources=_ONE_AT_A_TIME,
        ),
        requires=_on_issue_created_here("issue"),
    )
    async def transition_issue(self, args: TransitionIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Move an issue along its workflow; the undo runs a transition back to the status it had.

        Reads the issue's status (``GET /rest/api/3/issue/{issueIdOrKey}?fields=status``)
        and the transitions available from it (``GET .../transitions``,
        https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-transitions-get),
        picks the one ``transition`` names (an id, a transition name, or its target
        status's name; names without case), then runs it (``POST .../transitions``).
        Needs *Browse projects* and *Transition issues*; workflow post-functions run
        (assignee changes, resolutions, notifications). Returns ``{"issue",
        "transition_id", "transition_name", "previous_status", "previous_status_id",
        "status", "status_id"}``. Raises ``ToolError`` with code ``transition_not_found``
        or ``ambiguous_transition`` (the message lists the choices; nothing was sent
        then), or naming the status (404 ``not_found``, 400 ``bad_request``, 409
        ``conflict``, 401, 429 ``rate_limited``); ``EffectUncertainError`` when the
        transition's answer was lost or did not come in time.
        """
        previous_id, previous = await self._current_status(ctx, args.issue)
        available = await self._transitions(ctx, args.issue)
        chosen = _choose(args.transition, available, args.issue, previous)
        to_id, to_name = _status(chosen.get("to"))
        if to_id is None or to_name is None:
            raise ToolError(
                f"jira: transition {_described(chosen)} of {args.issue} names no target status",
                code="invalid_response",
            )
        await self._run_transition(ctx, args.issue, str(chosen["id"]))
        return {
            "issue": args.issue,
            "transition_id": str(chosen["id"]),
            "transition_name": chosen.get("name"),
            "previous_status": previous,
            "previous_status_id": previous_id,
            "status": to_name,
            "status_id": to_id,
        }

    # -- compensations -----------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="jira:issues:transition",
        input=RestoreStatusArgs,
        output=RestoreStatusResult,
    )
    async def restore_status(self, args: RestoreStatusArgs, ctx: CallContext) -> dict[str, Any]:
        """Bring an issue back to a status through a workflow transition that leads there.

        Reads the status (``GET /rest/api/3/issue/{issueIdOrKey}?fields=status``): one
        already in ``status_id`` is left as it is (``restored`` false). One in neither
        that status nor ``expected_status_id`` (the status jira.transition_issue set) was
        moved by someone since: it is not moved back, and the call fails with code
        ``changed_since`` naming the issue's status now, unless a person let the rollback
        overwrite (``ctx.overwrite``: ``reversi rollback RUN --overwrite STEP``,
        docs/engine.md), which moves it back from wherever it is. Otherwise runs the first transition whose target is
        ``status_id`` (``GET`` then ``POST .../transitions``,
        https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-transitions-post);
        when the workflow has none, fails with code ``no_way_back`` listing the
        transitions there are. The issue history keeps both transitions, and the
        workflow's post-functions run again. Raises ``ToolError`` naming the status for
        HTTP errors (404 ``not_found``, 400, 409 ``conflict``, 401, 429);
        ``EffectUncertainError`` when the transition's answer was lost (running it again
        is safe: an issue already back is left alone).
        """
        now_id, now = await self._current_status(ctx, args.issue)
        if now_id == args.status_id:
            return {
                "issue": args.issue,
                "restored": False,
                "status": now,
                "status_id": now_id,
                "transition_id": None,
            }
        if now_id != args.expected_status_id and not ctx.overwrite:
            raise ToolError(
                f"jira: {args.issue}: the issue's status is now {now!r} (id {now_id}), not "
                f"{args.expected_status!r} (id {args.expected_status_id}) as jira.transition_issue "
                f"left it: someone changed it since, so it is not moved back to {args.status!r}. "
                + _KEPT,
                code=CHANGED_SINCE,
            )
        available = await self._transitions(ctx, args.issue)
        back = [t for t in available if _status(t.get("to"))[0] == args.status_id]
        if not back:
            choices = ", ".join(_described(t) for t in available) or "none"
            raise ToolError(
                f"jira: {args.issue}: no workflow transition from {now!r} leads back to "
                f"{args.status!r} (id {args.status_id}); the transitions from {now!r} are: {choices}",
                code="no_way_back",
            )
        chosen = back[0]
        await self._run_transition(ctx, args.issue, str(chosen["id"]))
        return {
            "issue": args.issue,
            "restored": True,
            "status": args.status,
            "status_id": args.status_id,
            "transition_id": str(chosen["id"]),
        }

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="jira:issues:delete",
        input=DeleteIssueArgs,
        output=DeleteIssueResult,
    )
    async def delete_issue(self, args: DeleteIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete an issue; one already gone (404) counts as done. Jira refuses one with subtasks.

        ``DELETE /rest/api/3/issue/{issueIdOrKey}`` without ``deleteSubtasks``
        (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-issueidorkey-delete):
        Jira answers 400 for an issue that has subtasks, which this tool reports with
        code ``has_subtasks`` when Jira's message says so (any other 400 is
        ``bad_request`` with Jira's own message). Deleting cannot be undone and the key's number is not
        given again. Needs *Browse projects* and *Delete issues*; it is idempotent only so
        that it can undo create_issue: keep ``jira:issues:delete`` out of the agent's
        scope (the default scope leaves it out).

        With ``expected_summary`` (the undo of create_issue passes what it set) the issue
        is read first (``GET`` with ``fields=summary,description,comment``, the page
        above) and kept when someone changed it since: its summary or description is no
        longer the one the call set, or it has comments (the run's own are deleted before
        it, so any left are someone else's). Deleting it would lose their work for good.
        ``ctx.overwrite`` (a person's decision, ``reversi rollback RUN --overwrite STEP``)
        skips the read. Returns ``{"issue", "deleted"}``. Raises ``ToolError`` naming the
        status (400 ``has_subtasks``, 401, 403 ``forbidden``, 429) or with code
        ``changed_since`` naming the change; ``EffectUncertainError`` when the answer was
        lost or did not come in time.
        """
        if args.expected_summary is not None and not ctx.overwrite:
            found = await self.request(
                ctx,
                "GET",
                self._issue_path(args.issue),
                params={"fields": "summary,description,comment"},
                ok_statuses={404},
            )
            if found.status == 404:
                return {"issue": args.issue, "deleted": False}
            changes = _changes_since_created(
                _object(self.expect_object(found, "issue", wrote=False).get("fields")), args
            )
            if changes:
                raise ToolError(
                    f"jira: {args.issue} was changed since the call that created it "
                    f"({'; '.join(changes)}), so it was not deleted: that would lose the change "
                    f"for good. {_KEPT}",
                    code=CHANGED_SINCE,
                )
        try:
            resp = await self.request(
                ctx, "DELETE", self._issue_path(args.issue), ok_statuses={404}
            )
        except ToolError as exc:
            if exc.code != HAS_SUBTASKS:
                raise  # any other 400 keeps Jira's own message and bad_request
            raise ToolError(
                f"{exc} (Jira refuses to delete {args.issue}: it has subtasks; delete them first)",
                status=exc.status,
                code=HAS_SUBTASKS,
            ) from None
        return {"issue": args.issue, "deleted": resp.status != 404}

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="jira:comments:write",
        input=DeleteCommentArgs,
        output=DeleteCommentResult,
    )
    async def delete_comment(self, args: DeleteCommentArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a comment; one already gone (404) counts as done.

        ``DELETE /rest/api/3/issue/{issueIdOrKey}/comment/{id}``
        (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments/#api-rest-api-3-issue-issueidorkey-comment-id-delete).
        Needs *Browse projects* and *Delete own comments* (or *Delete all comments*).
        Jira answers 404 also when the account may no longer see the issue.

        With ``expected_body`` (the undo of add_comment passes the text it posted) the
        comment is read first (``GET`` the same path,
        https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments/#api-rest-api-3-issue-issueidorkey-comment-id-get)
        and kept when it no longer reads so: someone with *Edit all comments* edited it
        since. ``ctx.overwrite`` (a person's decision) skips the read. Returns ``{"issue",
        "comment_id", "deleted"}``. Raises ``ToolError`` naming the status (400
        ``bad_request`` without the permission, 401, 429) or with code ``changed_since``;
        ``EffectUncertainError`` when the answer was lost or did not come in time.
        """
        path = url_path(
            f"{API}/issue/{{issue}}/comment/{{id}}", issue=args.issue, id=args.comment_id
        )
        gone = {"issue": args.issue, "comment_id": args.comment_id, "deleted": False}
        if args.expected_body is not None and not ctx.overwrite:
            found = await self.request(ctx, "GET", path, ok_statuses={404})
            if found.status == 404:
                return gone
            body = self.expect_object(found, "comment", wrote=False).get("body")
            if not _reads_as(body, args.expected_body):
                raise ToolError(
                    f"jira: comment {args.comment_id} on {args.issue}: the comment's body changed "
                    "since the call that added it (someone edited it), so it was not deleted. "
                    + _KEPT,
                    code=CHANGED_SINCE,
                )
        resp = await self.request(ctx, "DELETE", path, ok_statuses={404})
        return {"issue": args.issue, "comment_id": args.comment_id, "deleted": resp.status != 404}


def _changes_since_created(fields: Mapping[str, Any], args: DeleteIssueArgs) -> list[str]:
    """What someone changed on an issue since jira.create_issue made it, in words ([] for nothing)."""
    changes: list[str] = []
    if fields.get("summary") != args.expected_summary:
        changes.append("its summary is no longer the one the call set")
    if not _reads_as(fields.get("description"), args.expected_description):
        changes.append("its description is no longer the one the call set")
    listed = _object(fields.get("comment"))
    total = listed.get("total")
    if not isinstance(total, int):
        comments = listed.get("comments")
        total = len(comments) if isinstance(comments, list) else 0
    if total:
        changes.append(f"it has {total} comment{'' if total == 1 else 's'} someone added since")
    return changes


def _choose(
    wanted: str, available: list[dict[str, Any]], issue: str, status: str
) -> dict[str, Any]:
    """The transition ``wanted`` names among ``available``: by id, else by its name or its target's.

    Raises ``ToolError`` (nothing sent yet) with code ``transition_not_found`` or
    ``ambiguous_transition``, the message listing the transitions there are.
    """
    by_id = [t for t in available if str(t.get("id")) == wanted]
    if by_id:
        return by_id[0]
    folded = wanted.casefold()
    found = [
        t
        for t in available
        if str(t.get("name", "")).casefold() == folded
        or str((t.get("to") or {}).get("name", "")).casefold() == folded
    ]
    if len(found) == 1:
        return found[0]
    if found:
        choices = ", ".join(_described(t) for t in found)
        raise ToolError(
            f"jira: {issue}: {wanted!r} fits more than one transition from {status!r}: {choices}; "
            "give the transition's id",
            code="ambiguous_transition",
        )
    choices = ", ".join(_described(t) for t in available) or "none"
    raise ToolError(
        f"jira: {issue}: no transition from {status!r} is {wanted!r} (by id, name or target "
        f"status); the transitions are: {choices}",
        code="transition_not_found",
    )
