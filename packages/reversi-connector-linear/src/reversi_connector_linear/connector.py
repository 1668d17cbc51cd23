"""The ``linear`` connector: issues and comments through Linear's GraphQL API.

Five tools. One reads (``linear.get_issue``); two change the workspace and are each
undone by a compensation (``linear.create_issue`` by ``linear.archive_issue``,
``linear.add_comment`` by ``linear.delete_comment``); the two compensations are
idempotent, and an "Entity not found" answer counts as done for them (the thing is
gone already).

Every call is one ``POST`` to ``<base_url>/graphql`` (https://linear.app/developers/graphql),
reads included: the connector tells the HTTP layer which of them write, so that a lost
answer to a query is a plain failure and a lost answer to a mutation is
:class:`~reversi_core.errors.EffectUncertainError`. GraphQL errors, whether they come
with HTTP 200 or 400, are :class:`~reversi_core.errors.ToolError`\\ s naming the status
and Linear's code (:data:`reversi_connector_linear._errors.ERRORS`).

Authentication (https://linear.app/developers/graphql#authentication): a personal API
key is the whole ``Authorization`` value; an OAuth 2.0 access token is sent as
``Bearer <token>``. ``LINEAR_API_KEY`` holds either: a value that starts with
``Bearer `` is sent as it is (an OAuth token), any other value is sent bare (an API key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import BaseUrl, HttpConnector, RawAuthorization, Setting, Timeouts
from reversi_core.manifest import Compensation, Effect, Match, Requirement

from . import _documents as docs
from ._args import (
    AddCommentArgs,
    ArchiveIssueArgs,
    CreateIssueArgs,
    DeleteCommentArgs,
    GetIssueArgs,
)
from ._errors import ENTITY_NOT_FOUND, ERRORS, GRAPHQL_ERROR, has_errors
from ._results import (
    AddCommentResult,
    ArchiveIssueResult,
    CreateIssueResult,
    DeleteCommentResult,
    GetIssueResult,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_BASE_URL", "GRAPHQL_PATH", "LinearConnector"]

DEFAULT_BASE_URL = "https://api.linear.app"
"""Linear's API root; the GraphQL endpoint is :data:`GRAPHQL_PATH` under it."""

GRAPHQL_PATH = "/graphql"
"""The one endpoint every call goes to."""

_API_DOCS = "https://linear.app/developers/graphql"

_KEY_HELP = (
    "a Linear personal API key (lin_api_...), or an OAuth access token written as 'Bearer <token>'"
)

_ON_ISSUE_CREATED_HERE = [
    Requirement(
        tool="linear.create_issue", match=[Match(this="args.issue_id", earlier="result.id")]
    ),
    Requirement(
        tool="linear.create_issue",
        match=[Match(this="args.issue_id", earlier="result.identifier")],
    ),
]
"""This call works on an issue an earlier linear.create_issue of the run made (by id or identifier)."""


class LinearConnector(HttpConnector):
    """Linear issues and comments over the GraphQL API, each write undone by a compensation.

    ``api_key`` is a personal API key (sent as the whole ``Authorization`` value) or
    ``"Bearer <OAuth access token>"`` (sent as it is). ``base_url`` is the API root
    (default ``https://api.linear.app``; ``/graphql`` is appended to it). ``timeouts``
    are the per-request limits in seconds, lowered to the caller's limit on each call;
    ``transport`` replaces the network transport (tests). Raises
    :class:`~reversi_core.errors.ConfigurationError` for an empty key, one with
    whitespace (beyond the space after ``Bearer``) or a malformed ``base_url``; no
    message repeats the key.
    """

    name = "linear"
    settings = (
        Setting("LINEAR_API_KEY", "api_key", _KEY_HELP, secret=True, schemes=("Bearer",)),
        Setting(
            "LINEAR_BASE_URL",
            "base_url",
            "the root of Linear's API, for a proxy or a test double (default https://api.linear.app)",
            required=False,
        ),
    )
    base = BaseUrl(DEFAULT_BASE_URL)
    auth = RawAuthorization("api_key")
    headers: ClassVar[Mapping[str, str]] = {"Accept": "application/json"}
    errors = ERRORS

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        timeouts: Timeouts | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(api_key=api_key, base_url=base_url, timeouts=timeouts, transport=transport)

    async def graphql(
        self,
        ctx: CallContext,
        document: str,
        variables: Mapping[str, Any],
        *,
        write: bool,
        made: str | None = None,
    ) -> dict[str, Any]:
        """Send one GraphQL operation and return its root field's value.

        ``document`` holds one named operation with one root field; ``write`` is true for
        a mutation, whose payload must say ``success: true``. ``made`` names the payload
        field holding what a mutation made (``"issue"``): it must be an object with an
        ``id``, or the call is uncertain (accepted, but it cannot be undone). Returns
        ``data[<root field>]``. A mutation answered with ``errors`` beside its payload
        ran (a partial success, https://spec.graphql.org/October2021/#sec-Errors): its
        payload decides, as without errors, so what it made can be undone; a query so
        answered is a ``ToolError`` with Linear's code. Raises ``ToolError`` naming the HTTP
        status and Linear's code for GraphQL errors (with HTTP 200 or 400) and HTTP
        errors, with code
        ``unsuccessful`` for a payload whose ``success`` is false, and
        ``EffectUncertainError`` when a mutation's answer was lost, did not come in time,
        or lacks what it made (https://linear.app/developers/graphql).
        """
        resp = await self.request(
            ctx,
            "POST",
            GRAPHQL_PATH,
            json={"query": document, "variables": dict(variables)},
            write=write,
        )
        answer = self.expect_object(resp, "GraphQL answer", wrote=write)
        if not write and has_errors(answer):
            # errors beside data (the kit took those without as refusals): part of the
            # selection failed, so the read is not what was asked for
            code, message = self.errors.classify(resp.status, resp.headers, answer)
            raise ToolError(
                f"linear: the {_root_field(document)} query answered in part, with an error "
                f"({code or GRAPHQL_ERROR}): {(message or '')[:300]}",
                status=resp.status,
                code=code or GRAPHQL_ERROR,
            )
        data = answer.get("data")
        root = _root_field(document)
        value = data.get(root) if isinstance(data, dict) else None
        if not isinstance(value, dict):
            raise self.malformed(f"has no data.{root}", resp, wrote=write)
        if write and value.get("success") is not True:
            raise ToolError(
                f"linear: {root} answered success={value.get('success')!r} without an error",
                status=resp.status,
                code="unsuccessful",
            )
        if made is not None:
            thing = value.get(made)
            if not (isinstance(thing, dict) and isinstance(thing.get("id"), str)):
                raise self.malformed(f"has no data.{root}.{made}.id", resp, wrote=write)
        return value

    # -- reading ---------------------------------------------------------------------

    @tool(
        effect=Effect.READ_ONLY,
        permission="linear:issues:read",
        input=GetIssueArgs,
        output=GetIssueResult,
    )
    async def get_issue(self, args: GetIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Read one issue by its id or identifier (``issue(id:)``).

        A query (``POST /graphql``, https://linear.app/developers/graphql#queries--mutations)
        that writes nothing. Returns ``{"id", "identifier", "title", "description", "url",
        "priority", "state", "state_type", "team_key", "archived_at", "created_at",
        "updated_at"}``; an archived issue is found too (``archived_at`` set). Raises
        ``ToolError``: code ``entity_not_found`` for an issue that does not exist or that
        the key cannot see, ``AUTHENTICATION_ERROR``, ``rate_limited``, or the HTTP
        status (a lost answer is a plain failure: nothing was written).
        """
        issue = await self.graphql(ctx, docs.GET_ISSUE, {"id": args.id}, write=False)
        state = _object(issue.get("state"))
        team = _object(issue.get("team"))
        return {
            "id": str(issue.get("id") or args.id),
            "identifier": issue.get("identifier"),
            "title": issue.get("title"),
            "description": issue.get("description"),
            "url": issue.get("url"),
            "priority": issue.get("priority"),
            "state": state.get("name"),
            "state_type": state.get("type"),
            "team_key": team.get("key"),
            "archived_at": issue.get("archivedAt"),
            "created_at": issue.get("createdAt"),
            "updated_at": issue.get("updatedAt"),
        }

    # -- changing --------------------------------------------------------------------

    @tool(
        effect=Effect.REVERSIBLE,
        permission="linear:issues:write",
        input=CreateIssueArgs,
        output=CreateIssueResult,
        compensation=Compensation(
            tool="linear.archive_issue",
            argument_map={"id": "result.id"},
            resources=["linear:issues/{result.id}"],
        ),
    )
    async def create_issue(self, args: CreateIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Create an issue in a team (``issueCreate``); undone by archiving it.

        A mutation (https://linear.app/developers/graphql#queries--mutations). Linear
        notifies the team's subscribers when the issue is made; archiving does not
        recall that. Returns ``{"id", "identifier", "title", "url", "team_id"}``. Raises
        ``ToolError`` with Linear's code (``entity_not_found`` for an unknown team,
        ``INVALID_INPUT``, ``FORBIDDEN`` for a key without write access,
        ``rate_limited``) or the HTTP status; ``EffectUncertainError`` when the answer
        was lost, did not come in time, or names no issue id.
        """
        payload: dict[str, Any] = {"teamId": args.team_id, "title": args.title}
        if args.description is not None:
            payload["description"] = args.description
        if args.priority is not None:
            payload["priority"] = args.priority
        made = await self.graphql(
            ctx, docs.CREATE_ISSUE, {"input": payload}, write=True, made="issue"
        )
        issue = made["issue"]
        return {
            "id": issue["id"],
            "identifier": issue.get("identifier"),
            "title": issue.get("title"),
            "url": issue.get("url"),
            "team_id": args.team_id,
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="linear:comments:write",
        input=AddCommentArgs,
        output=AddCommentResult,
        compensation=Compensation(
            tool="linear.delete_comment",
            argument_map={"id": "result.id"},
            resources=["linear:comments/{result.id}"],
        ),
        requires=_ON_ISSUE_CREATED_HERE,
    )
    async def add_comment(self, args: AddCommentArgs, ctx: CallContext) -> dict[str, Any]:
        """Comment on an issue (``commentCreate``); undone by deleting the comment.

        A mutation (https://linear.app/developers/graphql#queries--mutations); the issue
        may be given by id or identifier. Returns ``{"id", "issue_id", "url"}``. Raises
        ``ToolError`` with Linear's code (``entity_not_found`` for an unknown issue,
        ``INVALID_INPUT``, ``FORBIDDEN``, ``rate_limited``) or the HTTP status;
        ``EffectUncertainError`` when the answer was lost, did not come in time, or names
        no comment id.
        """
        variables = {"input": {"issueId": args.issue_id, "body": args.body}}
        made = await self.graphql(ctx, docs.ADD_COMMENT, variables, write=True, made="comment")
        comment = made["comment"]
        return {"id": comment["id"], "issue_id": args.issue_id, "url": comment.get("url")}

    # -- compensations -----------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="linear:issues:write",
        input=ArchiveIssueArgs,
        output=ArchiveIssueResult,
    )
    async def archive_issue(self, args: ArchiveIssueArgs, ctx: CallContext) -> dict[str, Any]:
        """Archive an issue (``issueArchive``); one Linear cannot find counts as done.

        A mutation (https://linear.app/developers/graphql#queries--mutations). The issue
        still exists, archived: hidden from boards, restorable in Linear. Archiving an
        archived issue again succeeds and changes nothing. An "Entity not found" answer
        (with HTTP 200 or 400) means the goal is met: ``archived`` is then false. Linear
        gives the same answer to a key that can no longer see the issue. Raises
        ``ToolError`` for any other GraphQL or HTTP error; ``EffectUncertainError`` when
        the answer was lost or did not come in time (running it again is safe).
        """
        try:
            await self.graphql(ctx, docs.ARCHIVE_ISSUE, {"id": args.id}, write=True)
        except ToolError as exc:
            if exc.code != ENTITY_NOT_FOUND:
                raise
            return {"id": args.id, "archived": False}
        return {"id": args.id, "archived": True}

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="linear:comments:write",
        input=DeleteCommentArgs,
        output=DeleteCommentResult,
    )
    async def delete_comment(self, args: DeleteCommentArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a comment (``commentDelete``); one Linear cannot find counts as done.

        A mutation (https://linear.app/developers/graphql#queries--mutations). An "Entity
        not found" answer (with HTTP 200 or 400) means the goal is met: ``deleted`` is
        then false (Linear answers the same to a key that can no longer see it). Raises
        ``ToolError`` for any other GraphQL or HTTP error; ``EffectUncertainError`` when
        the answer was lost or did not come in time (running it again is safe).
        """
        try:
            await self.graphql(ctx, docs.DELETE_COMMENT, {"id": args.id}, write=True)
        except ToolError as exc:
            if exc.code != ENTITY_NOT_FOUND:
                raise
            return {"id": args.id, "deleted": False}
        return {"id": args.id, "deleted": True}


def _root_field(document: str) -> str:
    """The root field of one of the connector's own documents (``issueCreate``)."""
    body = document.split("{", 1)[1]
    return body.split("(", 1)[0].split("{", 1)[0].strip()


def _object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a nested object Linear left out)."""
    return value if isinstance(value, dict) else {}
