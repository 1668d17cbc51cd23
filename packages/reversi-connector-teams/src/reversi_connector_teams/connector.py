"""The ``teams`` connector: Microsoft Teams channel messages through Microsoft Graph v1.0.

Three tools. ``teams.list_channels`` reads a team's channels; ``teams.post_message`` posts
a root message to a channel and is undone by ``teams.delete_message``, which soft-deletes
it (Teams then shows a "message deleted" placeholder); ``teams.delete_message`` is
idempotent: a message already soft-deleted counts as done. The undo never deletes an edit
someone made after the post: post_message returns a digest of the subject and one of the
body Graph stored, and delete_message, given them, reads the message first and keeps one
that no longer matches (``code="changed_since"``, naming the field that changed), unless
a person let the step overwrite
(``CallContext.overwrite``, ``reversi rollback RUN --overwrite STEP``, docs/engine.md).

Every request goes to ``base_url`` (``https://graph.microsoft.com/v1.0``) with
``Authorization: Bearer <TEAMS_TOKEN>``; the connector runs no OAuth flow, the token is
obtained outside it. Posting needs a *delegated* token (a signed-in user's) with
``ChannelMessage.Send``: Graph refuses an application token, except to import messages
(https://learn.microsoft.com/en-us/graph/api/channel-post-messages?view=graph-rest-1.0).
A refusal is a :class:`~reversi_core.errors.ToolError` naming the HTTP status and Graph's
``error.code`` (:data:`reversi_connector_teams._errors.ERRORS`); throttling (429 with
``Retry-After``) is ``code="rate_limited"``; a write whose answer was lost or never came is
:class:`~reversi_core.errors.EffectUncertainError`. What a rollback leaves behind (the
soft-deleted placeholder) is in ``docs/connectors/teams.md``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import (
    BaseUrl,
    Bearer,
    HttpConnector,
    HttpResponse,
    Setting,
    Timeouts,
    url_path,
)
from reversi_core.manifest import Compensation, Effect

from ._args import DeleteMessageArgs, ListChannelsArgs, PostMessageArgs, encode_body
from ._errors import ERRORS
from ._results import DeleteMessageResult, ListChannelsResult, PostMessageResult

__all__ = [
    "DEFAULT_BASE_URL",
    "MAX_CHANNEL_PAGES",
    "POST_NEEDS_DELEGATION",
    "DeleteMessageArgs",
    "ListChannelsArgs",
    "PostMessageArgs",
    "TeamsConnector",
    "field_digest",
]

DEFAULT_BASE_URL = "https://graph.microsoft.com/v1.0"
"""Microsoft Graph's v1.0 root; a national cloud has its own host (such as graph.microsoft.us)."""

MAX_CHANNEL_PAGES = 20
"""Pages (``@odata.nextLink``) teams.list_channels follows at most before it refuses to go on."""

POST_NEEDS_DELEGATION = (
    "teams.post_message needs a delegated token (one acquired for a signed-in user) that "
    "carries the ChannelMessage.Send permission: Graph lets an application token post to a "
    "channel only to import messages (see docs/connectors/teams.md for the permissions)"
)
"""Added to Graph's own answer when it refuses a post for the token's kind or permissions."""

_TOKEN_HELP = (
    "a Microsoft Graph access token (delegated, for a signed-in user, to post; "  # noqa: S105 - words, not a secret
    "obtain it outside the connector)"
)
_NOT_A_PERMISSION_PROBLEM = frozenset({"InvalidAuthenticationToken"})
"""Graph codes of a 401 that say the token itself is bad (expired, malformed), not its kind."""


def field_digest(value: str | None) -> str:
    """The SHA-256 (hex) of one field of a message: its ``subject`` (``None`` when it has
    none) or its body's ``content``.

    What teams.post_message returns as ``subject_sha256`` and ``content_sha256``, and
    teams.delete_message compares with the message it reads, field by field: the UTF-8 of
    the value as JSON (so that no subject, ``null``, differs from an empty one, ``""``).
    """
    return hashlib.sha256(json.dumps(value, ensure_ascii=False).encode("utf-8")).hexdigest()


def _stored(message: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """A chatMessage's ``subject`` and ``body.content`` (``None`` for either that is absent)."""
    body = message.get("body")
    content = body.get("content") if isinstance(body, dict) else None
    subject = message.get("subject")
    return (subject if isinstance(subject, str) else None, content if isinstance(content, str) else None)


def _changed_fields(message: Mapping[str, Any], args: DeleteMessageArgs) -> list[str]:
    """The fields (``subject``, ``body``) of ``message`` that no longer have the digest given."""
    subject, content = _stored(message)
    changed = []
    if args.subject_sha256 is not None and field_digest(subject) != args.subject_sha256:
        changed.append("subject")
    if args.content_sha256 is not None and (content is None or field_digest(content) != args.content_sha256):
        changed.append("body")
    return changed


def _channel(item: Any) -> dict[str, Any] | None:
    """A channel of Graph's list as the result spells it (``None`` for what is not one)."""
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return None
    return {
        "id": item["id"],
        "display_name": item.get("displayName"),
        "description": item.get("description"),
        "membership_type": item.get("membershipType"),
        "web_url": item.get("webUrl"),
    }


class TeamsConnector(HttpConnector):
    """Microsoft Teams channel messages through Microsoft Graph v1.0 (see the module docstring).

    ``token`` is a Microsoft Graph access token sent as ``Authorization: Bearer <token>``;
    listing channels takes ``Channel.ReadBasic.All`` (delegated or application), posting a
    delegated token with ``ChannelMessage.Send``, soft-deleting a delegated token with
    ``ChannelMessage.ReadWrite`` (docs/connectors/teams.md). ``base_url`` is Graph's v1.0
    root (default ``https://graph.microsoft.com/v1.0``). ``timeouts`` are the per-request
    limits in seconds (default ``Timeouts(connect=5, read=30, total=60)``), lowered to the
    caller's limit on each call; ``transport`` replaces the network transport (tests).
    Raises :class:`~reversi_core.errors.ConfigurationError` for an empty token or a
    malformed ``base_url``; neither message repeats the token.
    """

    name = "teams"
    settings = (
        Setting("TEAMS_TOKEN", "token", _TOKEN_HELP, secret=True),
        Setting(
            "TEAMS_BASE_URL",
            "base_url",
            "Microsoft Graph's v1.0 root, such as https://graph.microsoft.com/v1.0",
            required=False,
        ),
    )
    base = BaseUrl(DEFAULT_BASE_URL)
    auth = Bearer("token")
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

    @tool(
        effect=Effect.READ_ONLY,
        permission="teams:channels:read",
        input=ListChannelsArgs,
        output=ListChannelsResult,
    )
    async def list_channels(self, args: ListChannelsArgs, ctx: CallContext) -> dict[str, Any]:
        """List a team's channels: their ids, names, descriptions, kinds and links.

        ``GET /teams/{team-id}/channels`` (https://learn.microsoft.com/en-us/graph/api/channel-list?view=graph-rest-1.0),
        following ``@odata.nextLink`` when Graph pages the answer (at most
        :data:`MAX_CHANNEL_PAGES` pages; a next link that leaves ``base_url`` is refused, so
        the token never travels elsewhere). Needs ``Channel.ReadBasic.All``. Returns
        ``{"team_id", "channels": [{"id", "display_name", "description",
        "membership_type", "web_url"}]}``. Raises ``ToolError`` naming the status and
        Graph's code (404 ``NotFound`` for an unknown team, 403 ``Forbidden``, 401,
        ``rate_limited``), or ``invalid_response`` for an answer that is not a channel list.
        """
        path = url_path("/teams/{team}/channels", team=args.team_id)
        params: Mapping[str, str] | None = None
        channels: list[dict[str, Any]] = []
        for _ in range(MAX_CHANNEL_PAGES):
            resp = await self.request(ctx, "GET", path, params=params)
            page = self.expect_object(resp, "channel collection", wrote=False)
            value = page.get("value")
            if not isinstance(value, list):
                raise self.malformed("has no 'value' list of channels", resp, wrote=False)
            channels += [c for c in map(_channel, value) if c is not None]
            next_link = page.get("@odata.nextLink")
            if not next_link:
                return {"team_id": args.team_id, "channels": channels}
            path, params = self._next_page(next_link, resp)
        raise ToolError(
            f"teams: the team has more than {MAX_CHANNEL_PAGES} pages of channels; refusing "
            "to read on",
            code="too_many_pages",
        )

    def _next_page(self, link: Any, resp: HttpResponse) -> tuple[str, dict[str, str]]:
        """The path and query of an ``@odata.nextLink``, which must lie under ``base_url``."""
        if not isinstance(link, str):
            raise self.malformed("has an @odata.nextLink that is not a URL", resp, wrote=False)
        url = httpx.URL(link)
        base = httpx.URL(self.base_url + "/")
        same_origin = (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port)
        if not same_origin or not url.raw_path.decode("ascii").startswith(base.raw_path.decode("ascii")):
            raise ToolError(
                "teams: Graph's @odata.nextLink points outside the configured base URL; "
                "refusing to send the token there",
                code="invalid_response",
            )
        rest = url.raw_path.decode("ascii")[len(base.raw_path) - 1 :].split("?", 1)[0]
        return rest, dict(url.params)

    # -- changing --------------------------------------------------------------------

    @tool(
        effect=Effect.REVERSIBLE,
        permission="teams:messages:write",
        input=PostMessageArgs,
        output=PostMessageResult,
        compensation=Compensation(
            tool="teams.delete_message",
            argument_map={
                "team_id": "args.team_id",
                "channel_id": "args.channel_id",
                "message_id": "result.id",
                "subject_sha256": "result.subject_sha256",
                "content_sha256": "result.content_sha256",
            },
            resources=["teams:{args.team_id}/{args.channel_id}/messages/{result.id}"],
        ),
    )
    async def post_message(self, args: PostMessageArgs, ctx: CallContext) -> dict[str, Any]:
        """Post a root message to a channel, as text or HTML; undone by soft-deleting it.

        ``POST /teams/{team-id}/channels/{channel-id}/messages`` with a chatMessage body
        ``{"body": {"contentType", "content"}, "subject"?, "importance"?}``
        (https://learn.microsoft.com/en-us/graph/api/channel-post-messages?view=graph-rest-1.0),
        sent as the compact UTF-8 JSON whose size the arguments were checked on (at most
        :data:`~reversi_connector_teams._args.MAX_BODY_BYTES` bytes; a blank body is refused
        before any request, as Graph would answer it 400).
        Needs a delegated token with ``ChannelMessage.Send``. Returns ``{"team_id",
        "channel_id", "id", "content_type", "web_url", "created_date_time",
        "subject_sha256", "content_sha256"}``, the last two the :func:`field_digest` of the
        subject and of the body as Graph's answer holds them (as sent, where the answer
        lacks them). Raises
        ``ToolError`` naming the status and Graph's code: 400 ``BadRequest``, 404
        ``NotFound``, 401 and 403 (for an application token, or a delegated one without the
        permission, Graph's answer followed by :data:`POST_NEEDS_DELEGATION`),
        ``rate_limited``; ``EffectUncertainError`` when the answer was lost, did not come in
        time, or lacks the message's id (the message may exist but cannot be undone
        automatically).
        """
        path = url_path(
            "/teams/{team}/channels/{channel}/messages",
            team=args.team_id,
            channel=args.channel_id,
        )
        try:
            resp = await self.request(
                ctx,
                "POST",
                path,
                content=encode_body(args.chat_message()),  # the bytes its size was checked on
                headers={"Content-Type": "application/json"},
            )
        except ToolError as exc:
            if exc.status in (401, 403) and exc.code not in _NOT_A_PERMISSION_PROBLEM:
                raise ToolError(
                    f"{exc}; {POST_NEEDS_DELEGATION}", status=exc.status, code=exc.code
                ) from None
            raise
        message = self.expect_object(resp, "chatMessage", wrote=True)
        created = message.get("createdDateTime")
        link = message.get("webUrl")
        subject, content = _stored(message)
        if "subject" not in message:
            subject = args.subject
        return {
            "team_id": args.team_id,
            "channel_id": args.channel_id,
            "id": str(self.expect_field(message, "id", resp, wrote=True)),
            "content_type": args.content_type,
            "web_url": link if isinstance(link, str) else None,
            "created_date_time": created if isinstance(created, str) else None,
            "subject_sha256": field_digest(subject),
            "content_sha256": field_digest(args.content if content is None else content),
        }

    # -- compensations -----------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="teams:messages:delete",
        input=DeleteMessageArgs,
        output=DeleteMessageResult,
    )
    async def delete_message(self, args: DeleteMessageArgs, ctx: CallContext) -> dict[str, Any]:
        """Soft-delete a channel message; one already soft-deleted counts as done.

        ``POST /teams/{team-id}/channels/{channel-id}/messages/{message-id}/softDelete``,
        no body, 204 (https://learn.microsoft.com/en-us/graph/api/chatmessage-softdelete?view=graph-rest-1.0).
        Needs a delegated token with ``ChannelMessage.ReadWrite``, and the signed-in user
        must be allowed to delete the message. The message is not purged: Teams shows a
        "message deleted" placeholder and compliance exports keep it.

        Graph tells a soft-deleted message apart by its ``deletedDateTime`` (null while it
        stands), but its documentation does not say what softDelete answers for a message
        already soft-deleted. So the connector reads the message first
        (``GET .../messages/{message-id}``,
        https://learn.microsoft.com/en-us/graph/api/chatmessage-get?view=graph-rest-1.0):
        one with a ``deletedDateTime`` is done, and nothing is sent. With
        ``subject_sha256`` and ``content_sha256`` (the undo of post_message), one whose
        subject or body no longer has its digest (someone edited it since) is kept, and the
        call fails with code ``changed_since``, naming the fields that changed;
        ``ctx.overwrite`` (a person's decision for this step, docs/engine.md) skips that
        comparison. When softDelete answers 404, the message is
        read again and a ``deletedDateTime`` counts as done. Returns ``{"team_id",
        "channel_id", "message_id", "already_deleted"}``: ``already_deleted`` is true when
        one of those reads showed the message soft-deleted, false when this call's
        softDelete was accepted on a message the read showed standing. Raises
        ``ToolError`` naming the status and Graph's code (404 ``NotFound`` for a message
        that does not exist or cannot be seen, 403 ``Forbidden``, 401, ``rate_limited``)
        or with code ``changed_since``; ``EffectUncertainError`` when the answer was lost
        or did not come in time (running it again is safe).
        """
        segments = {"team": args.team_id, "channel": args.channel_id, "message": args.message_id}
        message_path = url_path("/teams/{team}/channels/{channel}/messages/{message}", **segments)
        done = {
            "team_id": args.team_id,
            "channel_id": args.channel_id,
            "message_id": args.message_id,
        }
        resp = await self.request(ctx, "GET", message_path)
        message = self.expect_object(resp, "chatMessage", wrote=False)
        if message.get("deletedDateTime"):
            return {**done, "already_deleted": True}
        changed = [] if ctx.overwrite else _changed_fields(message, args)
        if changed:
            edited = message.get("lastEditedDateTime")
            when = f"; Graph says it was last edited at {edited}" if isinstance(edited, str) else ""
            which = " and ".join(changed)
            raise ToolError(
                "teams.delete_message: someone edited the message since teams.post_message "
                f"posted it (its {which} {'is' if len(changed) == 1 else 'are'} not what the "
                f"post left{when}): it was not soft-deleted. The later change is kept: undo it "
                "and roll back again, or let the rollback overwrite it (reversi rollback RUN "
                "--overwrite STEP, see docs/engine.md)",
                code="changed_since",
            )
        try:
            await self.request(ctx, "POST", message_path + "/softDelete")
        except ToolError as exc:
            if exc.status != 404 or not await self._soft_deleted(ctx, message_path):
                raise
            return {**done, "already_deleted": True}
        return {**done, "already_deleted": False}

    async def _soft_deleted(self, ctx: CallContext, message_path: str) -> bool:
        """Whether the message at ``message_path`` reads back with a ``deletedDateTime``."""
        try:
            resp = await self.request(ctx, "GET", message_path)
        except ToolError:
            return False
        message = resp.json if isinstance(resp.json, dict) else {}
        return bool(message.get("deletedDateTime"))
