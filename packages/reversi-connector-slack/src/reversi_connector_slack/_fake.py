"""FakeSlack: the part of Slack's Web API the connector uses, on the kit's vendor fake."""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import json as jsonlib
from collections.abc import Iterable, Mapping
from typing import Any

from reversi_core.testing import (
    BearerAuth,
    FakeRequest,
    FakeResponse,
    FakeServer,
    VendorFake,
    vendor_route,
)

from ._state import FakeChannel, FakeMessage

__all__ = [
    "ALL_SCOPES",
    "BOT_ID",
    "BOT_USER",
    "KNOWN_EMOJI",
    "MAX_DISTINCT_REACTIONS",
    "READ_SCOPES",
    "TEAM_ID",
    "FakeSlack",
]

TEAM_ID = "T0FAKETEAM1"
"""The workspace's ID in every answer."""
BOT_USER = "U0BOTUSER1"
"""The bot user the fake's tokens belong to (its messages and reactions carry it)."""
BOT_ID = "B0BOTBOT01"
"""The bot's ID on the messages it posts."""

ALL_SCOPES = frozenset(
    {"channels:read", "groups:read", "im:read", "mpim:read", "chat:write", "reactions:write"}
)
"""The scopes of the fake's main token unless the fake is given others."""
READ_SCOPES = frozenset({"channels:read", "groups:read", "im:read", "mpim:read"})
"""The scopes of each of the fake's ``read_only_tokens``."""

KNOWN_EMOJI = frozenset(
    {
        "+1", "-1", "thumbsup", "thumbsdown", "eyes", "white_check_mark", "x", "tada",
        "rocket", "heart", "raised_hands", "wave", "warning", "hourglass", "repeat",
    }
)  # fmt: skip
"""Emoji names the fake's workspace knows (with or without ``::skin-tone-2`` .. ``-6``)."""

MAX_DISTINCT_REACTIONS = 23
"""Distinct emoji one message may carry in the fake (``too_many_emoji`` beyond)."""

_SCOPE_OF_TYPE = {
    "public_channel": "channels:read",
    "private_channel": "groups:read",
    "mpim": "mpim:read",
    "im": "im:read",
}
_WRITE_SCOPE = {
    "chat.postMessage": "chat:write",
    "chat.delete": "chat:write",
    "reactions.add": "reactions:write",
    "reactions.remove": "reactions:write",
}
_DOCS = "https://docs.slack.dev/reference/methods"


def _cursor(channel_id: str) -> str:
    return base64.b64encode(f"next:{channel_id}".encode()).decode("ascii")


def _after_cursor(cursor: str) -> str | None:
    """The channel ID a cursor of this fake points at, or ``None`` for a cursor it never gave."""
    try:
        text = base64.b64decode(cursor, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return text.removeprefix("next:") if text.startswith("next:") else None


def _flag(value: Any) -> bool:
    """A boolean argument as Slack reads it: JSON true, or ``true``/``1`` in a form or query."""
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1"))


class FakeSlack(VendorFake):
    """A fake of Slack's Web API: conversations.list, chat.postMessage, chat.delete, reactions.*.

    Every answer is HTTP 200 with ``{"ok": true, ...}`` or ``{"ok": false, "error":
    "<code>"}``, as Slack answers (https://docs.slack.dev/apis/web-api/), except a rate
    limit (HTTP 429, ``Retry-After: 30``, ``ratelimited``) and a method the fake does not
    know (HTTP 404, ``unknown_method``). The token is read from ``Authorization: Bearer``:
    none is ``not_authed``, an unknown one ``invalid_auth``. ``token`` has ``scopes``
    (default :data:`ALL_SCOPES`); each of ``read_only_tokens`` has :data:`READ_SCOPES`. A
    method called with a token lacking its scope answers ``missing_scope`` with ``needed``
    and ``provided``. Arguments are read from the query string and from a form-encoded or
    JSON body (Slack takes both, https://docs.slack.dev/apis/web-api/).

    Routes are served under ``prefix`` (``/api``, as on ``https://slack.com/api``). State
    lives in :attr:`channels`; take :attr:`lock` to read or change it while requests may be
    in flight. :meth:`snapshot` returns it as plain data. ``clock`` is the seconds part of
    the first timestamp the fake gives a new message.
    """

    auth = BearerAuth()

    def __init__(
        self,
        *,
        token: str,
        read_only_tokens: Iterable[str] = (),
        scopes: Iterable[str] = ALL_SCOPES,
        rate_limit: int | None = None,
        prefix: str = "/api",
        clock: int = 1_712_400_000,
    ) -> None:
        super().__init__(
            token=token, read_only_tokens=read_only_tokens, rate_limit=rate_limit, prefix=prefix
        )
        self.scopes = frozenset(scopes)
        """The main token's scopes (change them to see ``missing_scope``)."""
        self.channels: dict[str, FakeChannel] = {}
        """Conversations by ID."""
        self.deletion_forbidden = False
        """When true, chat.delete answers ``compliance_exports_prevent_deletion``."""
        self._clock = clock
        self._seq = 0

    # -- Slack's answers to what the kit checks ------------------------------------------

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        """Slack's error body ``{"ok": false, "error": code}`` (``message`` is not part of it)."""
        return FakeResponse(status, json={"ok": False, "error": code or message, **extra})

    def refuse(self, code: str, **extra: Any) -> FakeResponse:
        """Slack's usual refusal: HTTP 200 with ``{"ok": false, "error": code, **extra}``."""
        return self.error(200, code, code=code, **extra)

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.error(404, "unknown_method", code="unknown_method")

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        return self.refuse("invalid_auth" if presented else "not_authed")

    def read_only(self, request: FakeRequest) -> FakeResponse:
        """A write with one of ``read_only_tokens``: ``missing_scope``, naming the write scope."""
        needed = _WRITE_SCOPE.get(request.path.rsplit("/", 1)[-1], "chat:write")
        return self.refuse("missing_scope", needed=needed, provided=",".join(sorted(READ_SCOPES)))

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        answer = self.error(429, "ratelimited", code="ratelimited")
        return dataclasses.replace(answer, headers={"Retry-After": "30"})

    def gate(self, request: FakeRequest, *, writes: bool, credential: str) -> FakeResponse | None:
        # the scope check is each method's own (_needs); a read-only token's write is refused there
        return None

    # -- set-up and inspection -----------------------------------------------------------

    def base_url(self, server: FakeServer) -> str:
        """The connector's ``base_url`` for this fake served by ``server`` (prefix included)."""
        return server.url + self.prefix

    def next_ts(self) -> str:
        """A new message timestamp, later than every one given before."""
        self._seq += 1
        return f"{self._clock + self._seq // 1_000_000}.{self._seq % 1_000_000:06d}"

    def add_channel(
        self,
        channel_id: str,
        name: str,
        *,
        private: bool = False,
        archived: bool = False,
        bot_is_member: bool = True,
        members: Iterable[str] = (),
        general: bool = False,
    ) -> FakeChannel:
        """Create a conversation (the bot in it unless ``bot_is_member`` is false)."""
        with self.lock:
            channel = FakeChannel(
                channel_id,
                name,
                created=self._clock - 86_400,
                creator="U0ADMIN001",
                is_private=private,
                is_archived=archived,
                is_general=general,
                members={*members, *([BOT_USER] if bot_is_member else [])},
            )
            self.channels[channel_id] = channel
            return channel

    def add_message(
        self,
        channel_id: str,
        text: str,
        *,
        user: str = "U0ALICE001",
        ts: str | None = None,
        thread_ts: str | None = None,
        reactions: Mapping[str, Iterable[str]] | None = None,
    ) -> FakeMessage:
        """Put a message in a conversation (by ``user``; :data:`BOT_USER` for the bot's own)."""
        with self.lock:
            message = FakeMessage(
                ts or self.next_ts(),
                text,
                user,
                bot_id=BOT_ID if user == BOT_USER else None,
                thread_ts=thread_ts,
                reactions={name: list(users) for name, users in (reactions or {}).items()},
            )
            self.channels[channel_id].messages[message.ts] = message
            return message

    def message(self, channel_id: str, ts: str) -> FakeMessage:
        """The message ``ts`` of a conversation; ``KeyError`` when there is none."""
        return self.channels[channel_id].messages[ts]

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain data (what certification fingerprints).

        ``{"channels": {id: {"name", "is_private", "is_archived", "members" (sorted),
        "messages": {ts: {"text", "user", "thread_ts", "reactions": {name: [users]}}}}}}``.
        """
        with self.lock:
            return copy.deepcopy(
                {"channels": {cid: c.snapshot() for cid, c in sorted(self.channels.items())}}
            )

    # -- reading a call ----------------------------------------------------------------

    def _args(self, request: FakeRequest) -> dict[str, Any] | FakeResponse:
        """The method's arguments: the query string, then a form or JSON body over it."""
        args: dict[str, Any] = dict(request.query)
        if request.method.upper() != "POST" or not request.body:
            return args
        kind = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        if kind == "application/json":
            try:
                body = jsonlib.loads(request.body)
            except ValueError:
                return self.refuse("invalid_json")
            if not isinstance(body, dict):
                return self.refuse("json_not_object")
            args.update(body)
            return args
        if kind != "application/x-www-form-urlencoded":
            return self.refuse("invalid_post_type")
        args.update(request.form)
        return args

    def _scopes_of(self, request: FakeRequest) -> frozenset[str]:
        return self.scopes if self.auth.credential(request) == self.token else READ_SCOPES

    def _needs(self, request: FakeRequest, *scopes: str) -> FakeResponse | None:
        """``missing_scope`` (with ``needed``, ``provided``) unless the token has every scope."""
        held = self._scopes_of(request)
        missing = [s for s in scopes if s not in held]
        if not missing:
            return None
        return self.refuse(
            "missing_scope", needed=",".join(missing), provided=",".join(sorted(held))
        )

    def _visible(self, request: FakeRequest, channel_id: Any) -> FakeChannel | None:
        """The conversation, unless it does not exist or is private without the bot in it."""
        channel = self.channels.get(channel_id) if isinstance(channel_id, str) else None
        if channel is None or (channel.is_private and BOT_USER not in channel.members):
            return None
        return channel

    # -- the wire ----------------------------------------------------------------------

    def _wire_channel(self, channel: FakeChannel) -> dict[str, Any]:
        """A conversation object (https://docs.slack.dev/reference/objects/conversation-object)."""
        return {
            "id": channel.id,
            "name": channel.name,
            "name_normalized": channel.name,
            "created": channel.created,
            "creator": channel.creator,
            "is_channel": True,
            "is_group": False,
            "is_im": False,
            "is_mpim": False,
            "is_private": channel.is_private,
            "is_archived": channel.is_archived,
            "is_general": channel.is_general,
            "is_shared": False,
            "is_ext_shared": False,
            "is_org_shared": False,
            "is_pending_ext_shared": False,
            "is_member": BOT_USER in channel.members,
            "num_members": len(channel.members),
            "topic": {"value": channel.topic, "creator": "", "last_set": 0},
            "purpose": {"value": channel.purpose, "creator": "", "last_set": 0},
            "previous_names": [],
        }

    @staticmethod
    def _wire_message(message: FakeMessage) -> dict[str, Any]:
        """A message object (https://docs.slack.dev/reference/objects/message-object)."""
        wire: dict[str, Any] = {
            "type": "message",
            "text": message.text,
            "ts": message.ts,
            "user": message.user,
            "team": TEAM_ID,
        }
        if message.bot_id is not None:
            wire["bot_id"] = message.bot_id
        if message.thread_ts is not None:
            wire["thread_ts"] = message.thread_ts
        if message.reactions:
            wire["reactions"] = [
                {"name": name, "users": list(users), "count": len(users)}
                for name, users in message.reactions.items()
            ]
        return wire

    # -- methods -----------------------------------------------------------------------

    @vendor_route("GET", "/conversations.list", docs=f"{_DOCS}/conversations.list")
    def list_conversations(self, request: FakeRequest) -> FakeResponse:
        """``types`` (comma-separated, default ``public_channel``), ``exclude_archived``,
        ``limit`` (default 100, at most 1000) and ``cursor``; conversations in ID order,
        ``response_metadata.next_cursor`` empty on the last page, ``invalid_cursor`` for a
        cursor the fake never gave. The fake has channels only (no DMs)."""
        args = self._args(request)
        if isinstance(args, FakeResponse):
            return args
        types = [
            t.strip() for t in str(args.get("types") or "public_channel").split(",") if t.strip()
        ]
        if any(t not in _SCOPE_OF_TYPE for t in types):
            return self.refuse("invalid_types")
        refused = self._needs(request, *dict.fromkeys(_SCOPE_OF_TYPE[t] for t in types))
        if refused is not None:
            return refused
        limit_text = str(args.get("limit") or "100")
        digits = limit_text.isascii() and limit_text.isdigit()  # int() also reads "١٠"
        limit = min(int(limit_text), 1000) if digits and int(limit_text) > 0 else 100
        after = None
        if args.get("cursor"):
            after = _after_cursor(str(args["cursor"]))
            if after is None:
                return self.refuse("invalid_cursor")
        wanted = {"public_channel": False, "private_channel": True}
        shown = [
            c
            for _, c in sorted(self.channels.items())
            if any(wanted.get(t) == c.is_private for t in types)
            and not (c.is_private and BOT_USER not in c.members)
            and not (_flag(args.get("exclude_archived")) and c.is_archived)
            and (after is None or c.id >= after)
        ]
        page, rest = shown[:limit], shown[limit:]
        return FakeResponse(
            200,
            json={
                "ok": True,
                "channels": [self._wire_channel(c) for c in page],
                "response_metadata": {"next_cursor": _cursor(rest[0].id) if rest else ""},
            },
        )

    @vendor_route("POST", "/conversations.list", docs=f"{_DOCS}/conversations.list")
    def list_conversations_by_post(self, request: FakeRequest) -> FakeResponse:
        """The same method called with POST (Slack takes every method both ways)."""
        return self.list_conversations(request)

    @vendor_route("POST", "/chat.postMessage", docs=f"{_DOCS}/chat.postMessage")
    def post_message(self, request: FakeRequest) -> FakeResponse:
        """``channel`` (an ID), ``text``, ``thread_ts``. ``channel_not_found`` (also a private
        channel the bot is not in), ``is_archived``, ``not_in_channel``, ``no_text``,
        ``msg_too_long`` (over 40,000 characters). A ``thread_ts`` that names no message
        of the channel is accepted and the reply is kept under it, out of sight, as Slack
        does with a thread timestamp it cannot place
        (https://github.com/slackapi/python-slack-sdk/issues/840)."""
        args = self._args(request)
        if isinstance(args, FakeResponse):
            return args
        refused = self._needs(request, _WRITE_SCOPE["chat.postMessage"])
        if refused is not None:
            return refused
        channel = self._visible(request, args.get("channel"))
        if channel is None:
            return self.refuse("channel_not_found")
        if channel.is_archived:
            return self.refuse("is_archived")
        if BOT_USER not in channel.members:
            return self.refuse("not_in_channel")
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            return self.refuse("no_text")
        if len(text) > 40_000:
            return self.refuse("msg_too_long")
        thread = args.get("thread_ts")
        message = FakeMessage(
            self.next_ts(),
            text,
            BOT_USER,
            bot_id=BOT_ID,
            thread_ts=str(thread) if thread else None,
        )
        channel.messages[message.ts] = message
        return FakeResponse(
            200,
            json={
                "ok": True,
                "channel": channel.id,
                "ts": message.ts,
                "message": self._wire_message(message),
            },
        )

    @vendor_route("POST", "/chat.delete", docs=f"{_DOCS}/chat.delete")
    def delete_message(self, request: FakeRequest) -> FakeResponse:
        """``channel`` and ``ts``. ``channel_not_found``, ``message_not_found``,
        ``cant_delete_message`` (a message the bot did not post),
        ``compliance_exports_prevent_deletion`` (with :attr:`deletion_forbidden`). Replies
        in the message's thread stay."""
        args = self._args(request)
        if isinstance(args, FakeResponse):
            return args
        refused = self._needs(request, _WRITE_SCOPE["chat.delete"])
        if refused is not None:
            return refused
        channel = self._visible(request, args.get("channel"))
        if channel is None:
            return self.refuse("channel_not_found")
        message = channel.messages.get(str(args.get("ts")))
        if message is None:
            return self.refuse("message_not_found")
        if message.user != BOT_USER:
            return self.refuse("cant_delete_message")
        if self.deletion_forbidden:
            return self.refuse("compliance_exports_prevent_deletion")
        del channel.messages[message.ts]
        return FakeResponse(200, json={"ok": True, "channel": channel.id, "ts": message.ts})

    def _reacted(self, request: FakeRequest) -> tuple[FakeMessage, str] | FakeResponse:
        """The message and emoji of a reactions.* call, or Slack's refusal."""
        args = self._args(request)
        if isinstance(args, FakeResponse):
            return args
        refused = self._needs(request, _WRITE_SCOPE["reactions.add"])
        if refused is not None:
            return refused
        channel = self._visible(request, args.get("channel"))
        if channel is None:
            return self.refuse("channel_not_found")
        message = channel.messages.get(str(args.get("timestamp")))
        if message is None:
            return self.refuse("message_not_found")
        name = str(args.get("name") or "")
        base, _, tone = name.partition("::skin-tone-")
        if base not in KNOWN_EMOJI or (tone and tone not in "23456"):
            return self.refuse("invalid_name")
        return message, name

    @vendor_route("POST", "/reactions.add", docs=f"{_DOCS}/reactions.add")
    def add_reaction(self, request: FakeRequest) -> FakeResponse:
        """``channel``, ``timestamp``, ``name``. ``already_reacted`` when the bot has reacted
        so already, ``message_not_found``, ``channel_not_found``, ``invalid_name``,
        ``too_many_emoji`` (over :data:`MAX_DISTINCT_REACTIONS` distinct emoji)."""
        found = self._reacted(request)
        if isinstance(found, FakeResponse):
            return found
        message, name = found
        users = message.reactions.get(name, [])
        if BOT_USER in users:
            return self.refuse("already_reacted")
        if name not in message.reactions and len(message.reactions) >= MAX_DISTINCT_REACTIONS:
            return self.refuse("too_many_emoji")
        message.reactions[name] = [*users, BOT_USER]
        return FakeResponse(200, json={"ok": True})

    @vendor_route("POST", "/reactions.remove", docs=f"{_DOCS}/reactions.remove")
    def remove_reaction(self, request: FakeRequest) -> FakeResponse:
        """``channel``, ``timestamp``, ``name``. ``no_reaction`` when the bot has not reacted
        so (someone else's reaction of that emoji stays), ``message_not_found``,
        ``channel_not_found``, ``invalid_name``."""
        found = self._reacted(request)
        if isinstance(found, FakeResponse):
            return found
        message, name = found
        users = message.reactions.get(name, [])
        if BOT_USER not in users:
            return self.refuse("no_reaction")
        left = [u for u in users if u != BOT_USER]
        if left:
            message.reactions[name] = left
        else:
            del message.reactions[name]
        return FakeResponse(200, json={"ok": True})
