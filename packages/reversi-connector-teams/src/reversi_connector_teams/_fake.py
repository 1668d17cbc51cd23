"""FakeGraph: the part of Microsoft Graph v1.0 the teams connector uses, on the kit's vendor fake."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from reversi_core.testing import (
    BearerAuth,
    FakeRequest,
    FakeResponse,
    FakeServer,
    VendorFake,
    vendor_route,
)

__all__ = [
    "APP_ONLY_POST",
    "DEFAULT_USER",
    "MESSAGE_IDS_START",
    "FakeChannel",
    "FakeGraph",
    "FakeMessage",
    "FakeTeam",
]

PREFIX = "/v1.0"
"""Where the fake serves Graph's v1.0 routes (the connector's base URL is server URL + this)."""

MESSAGE_IDS_START = 1_700_000_000_000
"""The id the fake gives its first message (Graph's ids are millisecond timestamps as text)."""

DEFAULT_USER = {"id": "8ea0e38b-efb3-4757-924a-5f94061cf8c2", "displayName": "Reversi Agent"}
"""The signed-in user the fake posts as (the ``from.user`` of every message it creates)."""

TENANT_ID = "72f988bf-86f1-41af-91ab-2d7cd011db47"
"""The tenant the fake's teams belong to."""

APP_ONLY_POST = (
    "Message POST is allowed in application-only context only for import purposes. Refer to "
    "https://docs.microsoft.com/microsoftteams/platform/graph-api/import-messages/"
    "import-external-messages-to-teams for more details."
)
"""Graph's answer (401 ``Unauthorized``) to a channel post made with an application token."""

_LIST = "https://learn.microsoft.com/en-us/graph/api/channel-list?view=graph-rest-1.0"
_POST = "https://learn.microsoft.com/en-us/graph/api/channel-post-messages?view=graph-rest-1.0"
_GET = "https://learn.microsoft.com/en-us/graph/api/chatmessage-get?view=graph-rest-1.0"
_SOFT_DELETE = "https://learn.microsoft.com/en-us/graph/api/chatmessage-softdelete?view=graph-rest-1.0"
_SCOPES_NEEDED = {"post": "ChannelMessage.Send, Group.ReadWrite.All", "softDelete": "ChannelMessage.ReadWrite"}
_READ_SCOPES = "Channel.ReadBasic.All"


def now() -> str:
    """The current time as Graph writes it (``2026-12-01T09:00:00.123Z``)."""
    at = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}Z"


# -- state -----------------------------------------------------------------------------


@dataclass
class FakeMessage:
    """A root channel message. ``origin`` is ``"seed"`` (put in by a test) or ``"api"`` (posted)."""

    id: str
    content: str
    content_type: Literal["text", "html"] = "text"
    subject: str | None = None
    importance: str = "normal"
    created: str = field(default_factory=now)
    edited: str | None = None
    deleted: str | None = None
    origin: Literal["seed", "api"] = "seed"


@dataclass
class FakeChannel:
    """A channel of a team, with its root messages by id."""

    id: str
    display_name: str
    description: str | None = None
    membership_type: Literal["standard", "private", "shared"] = "standard"
    created: str = field(default_factory=now)
    messages: dict[str, FakeMessage] = field(default_factory=dict)


@dataclass
class FakeTeam:
    """A team (its Microsoft 365 group id) and its channels by id."""

    id: str
    display_name: str
    channels: dict[str, FakeChannel] = field(default_factory=dict)


# -- the fake --------------------------------------------------------------------------


class FakeGraph(VendorFake):
    """A fake of Microsoft Graph v1.0's team channels and channel messages.

    ``token`` is a delegated token with every permission the connector uses.
    ``read_only_tokens`` are delegated tokens with ``Channel.ReadBasic.All`` only: a post
    or a soft-delete gets 403 ``Forbidden`` naming the scopes the route needs.
    ``application_tokens`` are application (app-only) tokens with
    ``Channel.ReadBasic.All``: they may list channels, but a post gets Graph's 401
    ``Unauthorized`` (:data:`APP_ONLY_POST`) and a soft-delete a 401 too (the API takes
    no application permission). Any other token gets 401
    ``InvalidAuthenticationToken`` (https://learn.microsoft.com/en-us/graph/errors).

    With ``rate_limit`` set, requests beyond it get 429 ``TooManyRequests`` with
    ``Retry-After`` (https://learn.microsoft.com/en-us/graph/throttling). Channel lists
    are paged ``channel_page_size`` at a time with ``@odata.nextLink``. A soft-deleted
    message keeps its place with a ``deletedDateTime``; soft-deleting it again answers
    204 (an assumption: Graph's page does not say). State lives in :attr:`teams`; take
    :attr:`lock` to change it while requests may be in flight; :meth:`snapshot` gives it
    as plain data.
    """

    auth = BearerAuth()

    def __init__(
        self,
        *,
        token: str = "graph-fake-delegated-token-0000",  # noqa: S107 - a fake's made-up token
        read_only_tokens: Iterable[str] = (),
        application_tokens: Iterable[str] = (),
        rate_limit: int | None = None,
        channel_page_size: int = 100,
    ) -> None:
        self.application_tokens = frozenset(application_tokens)
        super().__init__(
            token=token,
            read_only_tokens=[*read_only_tokens, *self.application_tokens],
            rate_limit=rate_limit,
            prefix=PREFIX,
        )
        self.teams: dict[str, FakeTeam] = {}
        """Teams by lower-case id."""
        self.channel_page_size = channel_page_size
        self._message_ids = itertools.count(MESSAGE_IDS_START)

    # -- Graph's answers to what the kit checks -----------------------------------------

    def error(self, status: int, message: str, *, code: str | None = None, **extra: Any) -> FakeResponse:
        """Graph's error body: ``{"error": {"code", "message", "innerError": {...}}}``."""
        inner = {
            "date": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
            "request-id": str(uuid.uuid4()),
            "client-request-id": str(uuid.uuid4()),
        }
        body = {"error": {"code": code or _CODES.get(status, "UnknownError"), "message": message,
                          "innerError": inner}}
        return FakeResponse(status, json=body)

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.error(404, "Resource not found for the segment.", code="NotFound")

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        text = "Access token validation failure. Invalid audience." if presented else "Access token is empty."
        return self.error(401, text, code="InvalidAuthenticationToken")

    def read_only(self, request: FakeRequest) -> FakeResponse:
        needed = _SCOPES_NEEDED["softDelete" if request.path.endswith("/softDelete") else "post"]
        return self.error(
            403,
            f"Missing scope permissions on the request. API requires one of '{needed}'. "
            f"Scopes on the request '{_READ_SCOPES}'",
            code="Forbidden",
        )

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        answer = self.error(429, "Too many requests.", code="TooManyRequests")
        return dataclasses.replace(answer, headers={"Retry-After": "10"})

    def malformed_body(self, request: FakeRequest, problem: str) -> FakeResponse:
        return self.error(400, f"Invalid request body: {problem}", code="BadRequest")

    def gate(self, request: FakeRequest, *, writes: bool, credential: str) -> FakeResponse | None:
        if writes and credential in self.application_tokens:
            if request.path.endswith("/softDelete"):
                return self.error(
                    401, "This API does not support application permissions.", code="Unauthorized"
                )
            return self.error(401, APP_ONLY_POST, code="Unauthorized")
        return None

    # -- set-up and inspection ---------------------------------------------------------

    def base_url(self, server: FakeServer) -> str:
        """The connector's ``base_url`` for this fake served by ``server``."""
        return server.url + self.prefix

    def add_team(self, team_id: str, display_name: str) -> FakeTeam:
        """Create a team (``team_id`` a GUID) with no channels."""
        with self.lock:
            team = FakeTeam(team_id, display_name)
            self.teams[team_id.lower()] = team
            return team

    def add_channel(
        self,
        team_id: str,
        channel_id: str,
        display_name: str,
        *,
        description: str | None = None,
        membership_type: Literal["standard", "private", "shared"] = "standard",
    ) -> FakeChannel:
        """Add a channel to an existing team."""
        with self.lock:
            channel = FakeChannel(channel_id, display_name, description, membership_type)
            self.teams[team_id.lower()].channels[channel_id] = channel
            return channel

    def add_message(
        self,
        team_id: str,
        channel_id: str,
        content: str,
        *,
        content_type: Literal["text", "html"] = "text",
        deleted: bool = False,
    ) -> FakeMessage:
        """Put a root message (``origin="seed"``) in a channel; ``deleted`` soft-deletes it."""
        with self.lock:
            message = FakeMessage(str(next(self._message_ids)), content, content_type)
            if deleted:
                message.deleted = now()
            self.teams[team_id.lower()].channels[channel_id].messages[message.id] = message
            return message

    def edit_message(
        self,
        team_id: str,
        channel_id: str,
        message_id: str,
        *,
        content: str | None = None,
        subject: str | None = None,
    ) -> None:
        """Edit a message as its sender would in Teams itself (not through the API).

        ``content`` replaces the body's content, ``subject`` the subject (each when given);
        the message is marked edited (Graph's ``lastEditedDateTime``, which stays set when
        an edit is later taken back, as Teams keeps its "Edited" label).
        """
        with self.lock:
            message = self.message(team_id, channel_id, message_id)
            if content is not None:
                message.content = content
            if subject is not None:
                message.subject = subject
            message.edited = now()

    def message(self, team_id: str, channel_id: str, message_id: str) -> FakeMessage:
        """A message of a channel; ``KeyError`` if absent."""
        return self.teams[team_id.lower()].channels[channel_id].messages[message_id]

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain JSON data (what certification fingerprints).

        ``{"teams": {team id: {"display_name", "channels": {channel id: {"display_name",
        "description", "membership_type", "messages": {id: {"content", "content_type",
        "subject", "importance", "edited" (bool), "deleted" (bool), "origin"}}}}}}}``;
        timestamps are left out.
        """
        with self.lock:
            return copy.deepcopy({"teams": {key: _team(team) for key, team in sorted(self.teams.items())}})

    # -- finding things ------------------------------------------------------------------

    def _team_of(self, request: FakeRequest) -> FakeTeam | FakeResponse:
        team = self.teams.get(request.path_params["team"].lower())
        if team is None:
            return self.error(404, f"No team found with Group Id {request.path_params['team']}",
                              code="NotFound")
        return team

    def _channel_of(self, request: FakeRequest) -> tuple[FakeTeam, FakeChannel] | FakeResponse:
        team = self._team_of(request)
        if isinstance(team, FakeResponse):
            return team
        channel = team.channels.get(request.path_params["channel"])
        if channel is None:
            return self.error(404, "Channel not found.", code="NotFound")
        return team, channel

    def _message_of(self, request: FakeRequest) -> tuple[FakeTeam, FakeChannel, FakeMessage] | FakeResponse:
        found = self._channel_of(request)
        if isinstance(found, FakeResponse):
            return found
        message = found[1].messages.get(request.path_params["message"])
        if message is None:
            return self.error(404, "Message not found.", code="NotFound")
        return (*found, message)

    # -- routes ------------------------------------------------------------------------

    @vendor_route("GET", "/teams/{team}/channels", docs=_LIST)
    def list_channels(self, request: FakeRequest) -> FakeResponse:
        """200 ``{"@odata.context", "@odata.count", "value", "@odata.nextLink"?}``, 404.

        Paged ``channel_page_size`` at a time; the next page is asked for with
        ``$skiptoken``, as Graph's ``@odata.nextLink`` does.
        """
        team = self._team_of(request)
        if isinstance(team, FakeResponse):
            return team
        token = request.query.get("$skiptoken", "0")
        start = int(token) if token.isdigit() else 0
        channels = list(team.channels.values())
        page = channels[start : start + self.channel_page_size]
        host = request.headers.get("host", "127.0.0.1")
        body: dict[str, Any] = {
            "@odata.context": f"https://graph.microsoft.com/v1.0/$metadata#teams('{team.id}')/channels",
            "@odata.count": len(page),
            "value": [_channel_json(team, channel) for channel in page],
        }
        if start + self.channel_page_size < len(channels):
            body["@odata.nextLink"] = (
                f"http://{host}{self.prefix}/teams/{team.id}/channels"
                f"?$skiptoken={start + self.channel_page_size}"
            )
        return FakeResponse(200, json=body)

    @vendor_route("POST", "/teams/{team}/channels/{channel}/messages", docs=_POST, body="json")
    def post_message(self, request: FakeRequest) -> FakeResponse:
        """201 with the chatMessage, 400, 404.

        Takes a chatMessage: ``body`` (``contentType`` ``text`` or ``html``, non-empty
        ``content``), optional ``subject`` and ``importance`` (``normal``, ``high``,
        ``urgent``). Unknown properties are refused, as Graph refuses them.
        """
        found = self._channel_of(request)
        if isinstance(found, FakeResponse):
            return found
        team, channel = found
        payload = request.json if isinstance(request.json, dict) else None
        if payload is None:
            return self.malformed_body(request, "not a JSON object")
        unknown = sorted(k for k in payload if k not in ("body", "subject", "importance") and "@" not in k)
        if unknown:
            return self.error(400, f"Invalid property '{unknown[0]}'.", code="BadRequest")
        body = payload.get("body")
        if not isinstance(body, dict) or not isinstance(body.get("content"), str) or not body["content"].strip():
            return self.error(400, "Missing body content.", code="BadRequest")
        kind = body.get("contentType", "text")
        if kind not in ("text", "html"):
            return self.error(400, f"Invalid contentType '{kind}'.", code="BadRequest")
        importance = payload.get("importance", "normal")
        if importance not in ("normal", "high", "urgent"):
            return self.error(400, f"Invalid importance '{importance}'.", code="BadRequest")
        subject = payload.get("subject")
        message = FakeMessage(
            str(next(self._message_ids)),
            body["content"],
            kind,
            subject if isinstance(subject, str) else None,
            importance,
            origin="api",
        )
        channel.messages[message.id] = message
        return FakeResponse(201, json=_message_json(team, channel, message, context=True))

    @vendor_route("GET", "/teams/{team}/channels/{channel}/messages/{message}", docs=_GET)
    def get_message(self, request: FakeRequest) -> FakeResponse:
        """200 with the chatMessage (a soft-deleted one too, with its ``deletedDateTime``), 404."""
        found = self._message_of(request)
        if isinstance(found, FakeResponse):
            return found
        return FakeResponse(200, json=_message_json(*found, context=True))

    @vendor_route(
        "POST", "/teams/{team}/channels/{channel}/messages/{message}/softDelete", docs=_SOFT_DELETE
    )
    def soft_delete(self, request: FakeRequest) -> FakeResponse:
        """204 with no content; 204 again for a message already soft-deleted; 400 for a body; 404."""
        found = self._message_of(request)
        if isinstance(found, FakeResponse):
            return found
        if request.body:
            return self.error(400, "This action takes no request body.", code="BadRequest")
        message = found[2]
        if message.deleted is None:
            message.deleted = now()
        return FakeResponse(204)


_CODES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    429: "TooManyRequests",
    500: "InternalServerError",
    503: "ServiceNotAvailable",
}


# -- how Graph spells the fake's objects ---------------------------------------------------


def _team(team: FakeTeam) -> dict[str, Any]:
    return {
        "display_name": team.display_name,
        "channels": {
            cid: {
                "display_name": channel.display_name,
                "description": channel.description,
                "membership_type": channel.membership_type,
                "messages": {
                    mid: {
                        "content": m.content,
                        "content_type": m.content_type,
                        "subject": m.subject,
                        "importance": m.importance,
                        "edited": m.edited is not None,
                        "deleted": m.deleted is not None,
                        "origin": m.origin,
                    }
                    for mid, m in sorted(channel.messages.items())
                },
            }
            for cid, channel in sorted(team.channels.items())
        },
    }


def _channel_json(team: FakeTeam, channel: FakeChannel) -> dict[str, Any]:
    """A channel as Graph lists it. https://learn.microsoft.com/en-us/graph/api/resources/channel"""
    return {
        "id": channel.id,
        "createdDateTime": channel.created,
        "displayName": channel.display_name,
        "description": channel.description,
        "isFavoriteByDefault": None,
        "email": "",
        "tenantId": TENANT_ID,
        "webUrl": f"https://teams.microsoft.com/l/channel/{channel.id}/"
        f"{channel.display_name.replace(' ', '%20')}?groupId={team.id}&tenantId={TENANT_ID}",
        "membershipType": channel.membership_type,
    }


def _message_json(
    team: FakeTeam, channel: FakeChannel, message: FakeMessage, *, context: bool
) -> dict[str, Any]:
    """A chatMessage as Graph answers a post or a read of it.

    https://learn.microsoft.com/en-us/graph/api/resources/chatmessage
    """
    body: dict[str, Any] = {
        "id": message.id,
        "replyToId": None,
        "etag": message.id,
        "messageType": "message",
        "createdDateTime": message.created,
        "lastModifiedDateTime": message.deleted or message.edited or message.created,
        "lastEditedDateTime": message.edited,
        "deletedDateTime": message.deleted,
        "subject": message.subject,
        "summary": None,
        "chatId": None,
        "importance": message.importance,
        "locale": "en-us",
        "webUrl": f"https://teams.microsoft.com/l/message/{channel.id}/{message.id}"
        f"?groupId={team.id}&tenantId={TENANT_ID}&createdTime={message.id}&parentMessageId={message.id}",
        "policyViolation": None,
        "eventDetail": None,
        "from": {
            "application": None,
            "device": None,
            "user": {**DEFAULT_USER, "userIdentityType": "aadUser", "tenantId": TENANT_ID},
        },
        "body": {
            "contentType": message.content_type,
            "content": "" if message.deleted else message.content,
        },
        "channelIdentity": {"teamId": team.id, "channelId": channel.id},
        "attachments": [],
        "mentions": [],
        "reactions": [],
    }
    if context:
        body = {
            "@odata.context": f"https://graph.microsoft.com/v1.0/$metadata#teams('{team.id}')/"
            f"channels('{channel.id}')/messages/$entity",
            **body,
        }
    return body
