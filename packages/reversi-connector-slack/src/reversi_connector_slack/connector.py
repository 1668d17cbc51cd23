"""The ``slack`` connector: channels, messages and reactions through Slack's Web API.

Five tools. One reads (``slack.list_channels``); two change a conversation and are each
undone by a compensation (``slack.post_message`` by ``slack.delete_message``,
``slack.add_reaction`` by ``slack.remove_reaction``); the two compensations are
idempotent: a message already gone (``message_not_found``) or a reaction not there
(``no_reaction``) counts as done.

The connector is written on the HTTP kit (:class:`reversi_core.http.HttpConnector`):
every request goes to ``base_url`` (``https://slack.com/api``) with ``Authorization:
Bearer <token>``; writes are form-encoded POSTs, reads GETs with a query string
(https://docs.slack.dev/apis/web-api/). Slack answers almost every refusal with HTTP 200
and ``{"ok": false, "error": "<code>"}``: that is a
:class:`~reversi_core.errors.ToolError` with status 200 and Slack's code (the kit's
``ErrorTable.refused_when``, :data:`reversi_connector_slack._errors.ERRORS`). HTTP 429
with ``Retry-After``, and the code ``ratelimited``, are ``code="rate_limited"``. A write
whose answer was lost, or that Slack answers ``fatal_error`` or ``internal_error`` (which
Slack says may follow a partly done operation), is
:class:`~reversi_core.errors.EffectUncertainError`. Nothing is retried: a post whose
answer was lost is uncertain and is never posted twice by the connector.

Channels and timestamps are checked in Slack's formats before any request
(:mod:`reversi_connector_slack._args`). What a rollback leaves behind, and the token's
scopes, are in ``docs/connectors/slack.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from reversi_core.connector import CallContext, tool
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.http import (
    READ_METHODS,
    BaseUrl,
    Bearer,
    HttpConnector,
    HttpResponse,
    RequestTool,
    Setting,
    Timeouts,
)
from reversi_core.manifest import Compensation, Effect, Match, Requirement

from ._args import (
    AddReactionArgs,
    DeleteMessageArgs,
    ListChannelsArgs,
    PostMessageArgs,
    RemoveReactionArgs,
)
from ._errors import ERRORS, MAYBE_APPLIED
from ._results import (
    AddReactionResult,
    DeleteMessageResult,
    ListChannelsResult,
    PostMessageResult,
    RemoveReactionResult,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_BASE_URL", "SlackConnector"]

DEFAULT_BASE_URL = "https://slack.com/api"
"""Slack's Web API root; each method is a path below it (``/chat.postMessage``)."""

_METHODS = "https://docs.slack.dev/reference/methods"

_TOKEN_HELP = "a Slack bot token (xoxb-...) with the scopes of docs/connectors/slack.md"  # noqa: S105 - words, not a secret


def _posted_here(this_channel: str, this_ts: str) -> Requirement:
    """This call works on a message an earlier slack.post_message of the run posted."""
    return Requirement(
        tool="slack.post_message",
        match=[
            Match(this=this_channel, earlier="result.channel"),
            Match(this=this_ts, earlier="result.ts"),
        ],
    )


def _post_form(args: PostMessageArgs) -> dict[str, Any]:
    form: dict[str, Any] = {"channel": args.channel, "text": args.text}
    if args.thread_ts is not None:
        form["thread_ts"] = args.thread_ts
        if args.reply_broadcast:
            form["reply_broadcast"] = "true"
    return form


def _posted(slack: SlackConnector, args: PostMessageArgs, resp: HttpResponse) -> dict[str, Any]:
    """The result of chat.postMessage; without ``channel`` and ``ts`` the post is uncertain."""
    answer = slack.expect_object(resp, "chat.postMessage", wrote=True)
    message = answer.get("message")
    text = message.get("text") if isinstance(message, dict) else None
    return {
        "channel": _text_field(slack, answer, "channel", resp),
        "ts": _text_field(slack, answer, "ts", resp),
        "thread_ts": args.thread_ts,
        "text": text if isinstance(text, str) else None,
    }


def _text_field(
    slack: SlackConnector, answer: Mapping[str, Any], key: str, resp: HttpResponse
) -> str:
    value = slack.expect_field(answer, key, resp, wrote=True)
    if not isinstance(value, str):
        raise slack.malformed(f"has a {key!r} that is not a string", resp, wrote=True)
    return value


def _channel(item: Mapping[str, Any]) -> dict[str, Any]:
    is_member = item.get("is_member")
    return {
        "id": item["id"],
        "name": item.get("name") if isinstance(item.get("name"), str) else None,
        "is_private": bool(item.get("is_private")),
        "is_archived": bool(item.get("is_archived")),
        "is_member": is_member if isinstance(is_member, bool) else None,
    }


class SlackConnector(HttpConnector):
    """Slack channels, messages and reactions (see the module docstring).

    ``token`` is a bot token (``xoxb-...``) sent as ``Authorization: Bearer <token>``; it
    needs ``channels:read`` (and ``groups:read``, ``im:read``, ``mpim:read`` for other
    conversation types), ``chat:write`` and ``reactions:write``
    (https://docs.slack.dev/authentication/tokens). ``base_url`` replaces
    ``https://slack.com/api`` (a proxy, or a test server). ``timeouts`` are the
    per-request limits in seconds (default ``Timeouts(connect=5, read=30, total=60)``),
    lowered to the caller's limit on each call; ``transport`` replaces the network
    transport (tests). Raises :class:`~reversi_core.errors.ConfigurationError` for an
    empty token or a malformed ``base_url``; neither message repeats the token.
    """

    name = "slack"
    settings = (
        Setting("SLACK_BOT_TOKEN", "token", _TOKEN_HELP, secret=True),
        Setting(
            "SLACK_BASE_URL",
            "base_url",
            "the Web API root, for a proxy or a test server (default https://slack.com/api)",
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

    async def request(
        self, ctx: CallContext, method: str, path: str, **options: Any
    ) -> HttpResponse:
        """:meth:`HttpConnector.request`, with Slack's "maybe partly done" codes uncertain after a write.

        ``options`` are those of :meth:`HttpConnector.request`. A write answered
        ``fatal_error`` or ``internal_error``
        (https://docs.slack.dev/reference/methods/chat.postMessage, "Errors") raises
        :class:`~reversi_core.errors.EffectUncertainError`; every other answer is the kit's.
        """
        try:
            return await super().request(ctx, method, path, **options)
        except ToolError as exc:
            write = options.get("write")
            writes = write if write is not None else method.upper() not in READ_METHODS
            if writes and exc.code in MAYBE_APPLIED:
                raise EffectUncertainError(
                    f"{exc} (Slack says part of the operation may have been done: check the "
                    "conversation before retrying)"
                ) from None
            raise

    # -- reading -----------------------------------------------------------------------

    @tool(
        effect=Effect.READ_ONLY,
        permission="slack:channels:read",
        input=ListChannelsArgs,
        output=ListChannelsResult,
    )
    async def list_channels(self, args: ListChannelsArgs, ctx: CallContext) -> dict[str, Any]:
        """List one page of the workspace's conversations, with their IDs.

        ``GET /conversations.list`` (https://docs.slack.dev/reference/methods/conversations.list)
        with ``types`` (comma-separated), ``exclude_archived``, ``limit`` and ``cursor``.
        Returns ``{"channels": [{"id", "name", "is_private", "is_archived", "is_member"}],
        "next_cursor"}``; ``next_cursor`` is null on the last page. Raises ``ToolError``
        with status 200 and Slack's code (``missing_scope``, ``invalid_cursor``,
        ``invalid_auth``...), ``rate_limited`` (HTTP 429), or naming the HTTP status.
        """
        params: dict[str, Any] = {
            "types": ",".join(dict.fromkeys(args.types)),
            "exclude_archived": "true" if args.exclude_archived else "false",
            "limit": args.limit,
        }
        if args.cursor is not None:
            params["cursor"] = args.cursor
        resp = await self.request(ctx, "GET", "/conversations.list", params=params)
        answer = self.expect_object(resp, "conversations.list", wrote=False)
        channels = answer.get("channels")
        if not isinstance(channels, list) or not all(
            isinstance(c, dict) and isinstance(c.get("id"), str) for c in channels
        ):
            raise self.malformed("has no list of channels with IDs", resp, wrote=False)
        metadata = answer.get("response_metadata")
        cursor = metadata.get("next_cursor") if isinstance(metadata, dict) else None
        return {
            "channels": [_channel(c) for c in channels],
            "next_cursor": cursor if isinstance(cursor, str) and cursor else None,
        }

    # -- changing ----------------------------------------------------------------------

    post_message = RequestTool(
        "POST",
        "/chat.postMessage",
        effect=Effect.REVERSIBLE,
        permission="slack:messages:write",
        input=PostMessageArgs,
        output=PostMessageResult,
        compensation=Compensation(
            tool="slack.delete_message",
            argument_map={"channel": "result.channel", "ts": "result.ts"},
            resources=["slack:{result.channel}/{result.ts}"],
        ),
        requires=[_posted_here("args.channel", "args.thread_ts")],
        summary="Post a message to a conversation, or a reply in a thread; undone by deleting it.",
        docs=f"{_METHODS}/chat.postMessage",
        details="Returns ``{channel, ts, thread_ts, text}``. Slack's refusals (HTTP 200) come "
        "as ``ToolError(status=200)`` with Slack's code: ``channel_not_found``, "
        "``not_in_channel``, ``is_archived``, ``msg_too_long``, ``missing_scope``; "
        "``rate_limited`` for HTTP 429 (Slack allows about one message a second per channel). "
        "A lost answer is uncertain and is never sent again by the connector.",
        body=_post_form,
        form=True,
        keep=_posted,
    )

    add_reaction = RequestTool(
        "POST",
        "/reactions.add",
        effect=Effect.REVERSIBLE,
        permission="slack:reactions:write",
        input=AddReactionArgs,
        output=AddReactionResult,
        compensation=Compensation(
            tool="slack.remove_reaction",
            argument_map={
                "channel": "args.channel",
                "timestamp": "args.timestamp",
                "name": "args.name",
                "added_by_call": "result.added",
            },
            # under the message's name: removed before the message is deleted
            resources=["slack:{args.channel}/{args.timestamp}/reactions/{args.name}"],
        ),
        requires=[_posted_here("args.channel", "args.timestamp")],
        summary="React to a message with an emoji; undone by removing the reaction this call added.",
        docs=f"{_METHODS}/reactions.add",
        details="Returns ``{channel, timestamp, name, added}``. When the bot had already reacted "
        "so (``already_reacted``) the call changes nothing and ``added`` is false: the undo "
        "then leaves that earlier reaction in place. Refusals: ``message_not_found``, "
        "``channel_not_found``, ``invalid_name``, ``too_many_reactions``, ``missing_scope``.",
        body=("channel", "timestamp", "name"),
        form=True,
        already_done=((200, "already_reacted"),),
        echo=("channel", "timestamp", "name"),
        done_field="added",
    )

    # -- compensations -----------------------------------------------------------------

    delete_message = RequestTool(
        "POST",
        "/chat.delete",
        effect=Effect.IDEMPOTENT,
        permission="slack:messages:delete",
        input=DeleteMessageArgs,
        output=DeleteMessageResult,
        summary="Delete a message; one already gone (message_not_found) counts as success.",
        docs=f"{_METHODS}/chat.delete",
        details="Returns ``{channel, ts, deleted}``. A bot may delete only its own messages "
        "(``cant_delete_message``), and a workspace may forbid deleting "
        "(``compliance_exports_prevent_deletion``): then a rollback reports the step failed. "
        "Replies in the message's thread are not deleted with it.",
        body=("channel", "ts"),
        form=True,
        already_done=((200, "message_not_found"),),
        echo=("channel", "ts"),
        done_field="deleted",
    )

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="slack:reactions:write",
        input=RemoveReactionArgs,
        output=RemoveReactionResult,
    )
    async def remove_reaction(self, args: RemoveReactionArgs, ctx: CallContext) -> dict[str, Any]:
        """Remove the bot's reaction from a message; one not there counts as success.

        ``POST /reactions.remove`` (https://docs.slack.dev/reference/methods/reactions.remove)
        with ``channel``, ``timestamp`` and ``name``. With ``added_by_call`` false (the undo
        of an add_reaction that found the reaction already there) nothing is sent.
        Returns ``{channel, timestamp, name, removed}``; ``removed`` is false after
        ``no_reaction`` or ``message_not_found`` (the message is gone, and its reactions
        with it). Raises ``ToolError`` with status 200 and Slack's code
        (``channel_not_found``, ``invalid_name``, ``missing_scope``...), ``rate_limited``,
        or naming the HTTP status; ``EffectUncertainError`` when the answer was lost or
        did not come in time.
        """
        result = {
            "channel": args.channel,
            "timestamp": args.timestamp,
            "name": args.name,
            "removed": False,
        }
        if not args.added_by_call:
            return result
        form = {"channel": args.channel, "timestamp": args.timestamp, "name": args.name}
        try:
            await self.request(ctx, "POST", "/reactions.remove", data=form)
        except ToolError as exc:
            if exc.status != 200 or exc.code not in ("no_reaction", "message_not_found"):
                raise
            return result
        result["removed"] = True
        return result
