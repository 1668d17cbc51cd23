"""FakeCalendar: the events part of the Google Calendar API v3, on the kit's vendor fake."""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import itertools
import time
from collections.abc import Iterable, Mapping
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

__all__ = ["OWNER", "PREFIX", "FakeCalendar", "FakeCalendarState", "FakeEvent"]

PREFIX = "/calendar/v3"
"""Where the fake serves the API (the connector's base URL is the server's URL + this)."""

OWNER = "agent@example.com"
"""The user the fake's tokens belong to: ``primary`` is this user's calendar."""

_DOCS = "https://developers.google.com/calendar/api/v3/reference/events"
_EDITABLE = ("summary", "description", "location", "start", "end")
_TIME_KEYS = ("date", "dateTime", "timeZone")
_INSUFFICIENT = "Request had insufficient authentication scopes."


def now() -> str:
    """The current time as Calendar writes it (``2026-12-01T09:00:00.000Z``)."""
    at = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}Z"


def _event_id(n: int) -> str:
    """A made-up event id in base32hex (``a``-``v``, ``0``-``9``), as Calendar makes them."""
    digest = hashlib.sha256(f"event-{n}".encode()).digest()
    alphabet = "0123456789abcdefghijklmnopqrstuv"
    return "".join(alphabet[b % 32] for b in digest[:26])


def _moment(value: Mapping[str, Any]) -> dt.datetime | None:
    """The instant an EventDateTime stands for (an all-day date at 00:00 UTC); ``None`` if bad."""
    try:
        if isinstance(value.get("dateTime"), str):
            moment = dt.datetime.fromisoformat(value["dateTime"])
            return moment if moment.tzinfo is not None else None
        if isinstance(value.get("date"), str):
            return dt.datetime.fromisoformat(value["date"]).replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    return None


# -- state -----------------------------------------------------------------------------


@dataclass
class FakeEvent:
    """An event. ``origin`` is ``"seed"`` (put in by a test) or ``"api"`` (created by a call)."""

    id: str
    fields: dict[str, Any]
    status: Literal["confirmed", "tentative", "cancelled"] = "confirmed"
    version: int = 1
    sequence: int = 0
    created: str = field(default_factory=now)
    updated: str = field(default_factory=now)
    origin: Literal["seed", "api"] = "seed"

    @property
    def etag(self) -> str:
        """The event's ETag, a quoted number that changes with every change, as Calendar's do."""
        return f'"{3_400_000_000_000_000 + self.version * 1000}"'

    def changed(self) -> None:
        self.version += 1
        self.updated = now()


@dataclass
class FakeCalendarState:
    """A calendar and its events by id."""

    id: str
    summary: str
    time_zone: str = "UTC"
    events: dict[str, FakeEvent] = field(default_factory=dict)
    version: int = 1


# -- the fake --------------------------------------------------------------------------


class FakeCalendar(VendorFake):
    """A fake of the Calendar API v3's events: list, insert, get, patch, delete.

    ``token`` has the ``calendar.events`` scope; ``read_only_tokens`` have
    ``calendar.events.readonly`` only (a write gets 403 ``insufficientPermissions``); any
    other token gets 401 ``authError`` (https://developers.google.com/calendar/api/guides/errors).
    ``primary`` is the calendar of :data:`OWNER`. Every event carries an ``etag`` that
    changes with each change; ``If-Match`` on a patch or a delete is honoured (412
    ``conditionNotMet``, https://developers.google.com/calendar/api/guides/version-resources).
    A patch merges the body into the event (nested objects merged, a null removes a field),
    as Calendar's patch semantics say
    (https://developers.google.com/calendar/api/guides/performance#patch). A deleted event
    goes to the trash: it keeps its id with status ``cancelled`` (a read still answers it,
    a list shows it only with ``showDeleted``); deleting it again answers 410 ``deleted``,
    an unknown id 404 ``notFound``. ``sendUpdates`` is checked against its enum and kept
    per write in :attr:`send_updates`. With ``rate_limit`` set, requests beyond it get 403
    ``rateLimitExceeded``. State lives in :attr:`calendars` (take :attr:`lock` to change it
    while requests may be in flight); :meth:`snapshot` gives it as plain data.
    """

    auth = BearerAuth()

    def __init__(
        self,
        *,
        token: str = "ya29.fake-calendar-token-0000",  # noqa: S107 - a fake's made-up token
        read_only_tokens: Iterable[str] = (),
        rate_limit: int | None = None,
    ) -> None:
        super().__init__(
            token=token, read_only_tokens=read_only_tokens, rate_limit=rate_limit, prefix=PREFIX
        )
        self.calendars: dict[str, FakeCalendarState] = {}
        """Calendars by id (the owner's own under :data:`OWNER`)."""
        self.send_updates: list[str | None] = []
        """The ``sendUpdates`` of every write the fake carried out, in order."""
        self._ids = itertools.count(1)
        self.add_calendar(OWNER, OWNER)

    # -- Calendar's answers to what the kit checks ---------------------------------------

    def error(self, status: int, message: str, *, code: str | None = None, **extra: Any) -> FakeResponse:
        """Calendar's error body: ``{"error": {"errors": [{"domain", "reason", "message"}], "code", "message"}}``."""
        reason = code or _REASONS.get(status, "backendError")
        item = {"domain": extra.pop("domain", "global"), "reason": reason, "message": message, **extra}
        return FakeResponse(status, json={"error": {"errors": [item], "code": status, "message": message}})

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.error(404, "Not Found", code="notFound")

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        answer = self.error(
            401,
            "Invalid Credentials" if presented else "Login Required.",
            code="authError" if presented else "required",
            location="Authorization",
            locationType="header",
        )
        assert answer.json is not None
        answer.json["error"]["status"] = "UNAUTHENTICATED"
        return answer

    def read_only(self, request: FakeRequest) -> FakeResponse:
        answer = self.error(403, _INSUFFICIENT, code="insufficientPermissions")
        assert answer.json is not None
        answer.json["error"]["status"] = "PERMISSION_DENIED"
        return answer

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        return self.error(403, "Rate Limit Exceeded", code="rateLimitExceeded", domain="usageLimits")

    def malformed_body(self, request: FakeRequest, problem: str) -> FakeResponse:
        return self.error(400, f"Parse Error: {problem}", code="parseError")

    # -- set-up and inspection ---------------------------------------------------------

    def base_url(self, server: FakeServer) -> str:
        """The connector's ``base_url`` for this fake served by ``server``."""
        return server.url + self.prefix

    def add_calendar(self, calendar_id: str, summary: str, *, time_zone: str = "UTC") -> FakeCalendarState:
        """Create a calendar (no events)."""
        with self.lock:
            calendar = FakeCalendarState(calendar_id, summary, time_zone)
            self.calendars[calendar_id] = calendar
            return calendar

    def add_event(self, calendar_id: str, **fields: Any) -> FakeEvent:
        """Put an event (``origin="seed"``) in a calendar; ``fields`` as Calendar spells them."""
        with self.lock:
            event = FakeEvent(_event_id(next(self._ids)), {k: v for k, v in fields.items() if v is not None})
            self._calendar(calendar_id).events[event.id] = event
            return event

    def event(self, calendar_id: str, event_id: str) -> FakeEvent:
        """An event of a calendar (``primary`` allowed); ``KeyError`` if absent."""
        return self._calendar(calendar_id).events[event_id]

    def edit_event(self, calendar_id: str, event_id: str, **fields: Any) -> None:
        """Change an event as a person in Calendar's own interface would (not through the API).

        A ``None`` removes the field. The ETag changes, so a write holding the old one fails.
        """
        with self.lock:
            event = self.event(calendar_id, event_id)
            for name, value in fields.items():
                if value is None:
                    event.fields.pop(name, None)
                else:
                    event.fields[name] = copy.deepcopy(value)
            event.changed()

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain JSON data (what certification fingerprints).

        ``{"calendars": {id: {"events": {id: {"status", "origin", "summary"?,
        "description"?, "location"?, "start", "end"}}}}}``; ETags and timestamps are left
        out.
        """
        with self.lock:
            return copy.deepcopy(
                {
                    "calendars": {
                        cid: {
                            "events": {
                                eid: {"status": e.status, "origin": e.origin, **e.fields}
                                for eid, e in sorted(c.events.items())
                            }
                        }
                        for cid, c in sorted(self.calendars.items())
                    }
                }
            )

    # -- helpers -------------------------------------------------------------------------

    def _calendar(self, calendar_id: str) -> FakeCalendarState:
        return self.calendars[OWNER if calendar_id == "primary" else calendar_id]

    def _calendar_of(self, request: FakeRequest) -> FakeCalendarState | FakeResponse:
        try:
            return self._calendar(request.path_params["calendarId"])
        except KeyError:
            return self.not_found(request)

    def _event_of(self, request: FakeRequest) -> tuple[FakeCalendarState, FakeEvent] | FakeResponse:
        calendar = self._calendar_of(request)
        if isinstance(calendar, FakeResponse):
            return calendar
        event = calendar.events.get(request.path_params["eventId"])
        if event is None:
            return self.not_found(request)
        return calendar, event

    def _send_updates(self, request: FakeRequest) -> FakeResponse | None:
        value = request.query.get("sendUpdates")
        if value is not None and value not in ("all", "externalOnly", "none"):
            return self.error(400, f"Invalid value for sendUpdates: {value}", code="invalidParameter")
        return None

    def _precondition(self, request: FakeRequest, event: FakeEvent) -> FakeResponse | None:
        wanted = request.headers.get("if-match")
        if wanted is not None and wanted not in ("*", event.etag):
            return self.error(412, "Precondition Failed", code="conditionNotMet", location="If-Match",
                              locationType="header")
        return None

    def _invalid_times(self, fields: Mapping[str, Any]) -> FakeResponse | None:
        """Calendar's 400 for a missing, malformed or empty time range, else ``None``."""
        for name in ("start", "end"):
            value = fields.get(name)
            if not isinstance(value, dict):
                return self.error(400, f"Missing {name} time.", code="required")
            unknown = sorted(set(value) - set(_TIME_KEYS))
            kinds = [k for k in ("date", "dateTime") if k in value]
            if unknown or len(kinds) != 1 or _moment(value) is None:
                return self.error(400, f"Invalid {name} time.", code="invalid")
        if ("date" in fields["start"]) != ("date" in fields["end"]):
            return self.error(400, "Start and end times must either both be date or both be dateTime.",
                              code="invalid")
        start, end = _moment(fields["start"]), _moment(fields["end"])
        if start is not None and end is not None and end <= start:
            return self.error(400, "The specified time range is empty.", code="timeRangeEmpty")
        return None

    def _unknown(self, body: Mapping[str, Any], allowed: Iterable[str]) -> FakeResponse | None:
        extra = sorted(set(body) - set(allowed))
        if extra:
            return self.error(
                400, f'Invalid JSON payload received. Unknown name "{extra[0]}"', code="invalid"
            )
        for name in ("summary", "description", "location"):
            if name in body and body[name] is not None and not isinstance(body[name], str):
                return self.error(400, f"Invalid value for {name}.", code="invalid")
        return None

    # -- routes ------------------------------------------------------------------------

    @vendor_route("GET", "/calendars/{calendarId}/events", docs=f"{_DOCS}/list")
    def list_events(self, request: FakeRequest) -> FakeResponse:
        """200 ``calendar#events``, 400, 404.

        ``timeMin`` (events ending after it), ``timeMax`` (starting before it), ``q``
        (text in the summary, description or location, without case), ``showDeleted``,
        ``singleEvents``, ``orderBy`` (``startTime`` needs ``singleEvents=true``: 400
        otherwise), ``maxResults`` (default 250, at most 2500) and ``pageToken``.
        """
        calendar = self._calendar_of(request)
        if isinstance(calendar, FakeResponse):
            return calendar
        query = request.query
        if query.get("orderBy") == "startTime" and query.get("singleEvents") != "true":
            return self.error(400, "The requested ordering is not available for the particular query.",
                              code="invalid")
        bounds = {}
        for name in ("timeMin", "timeMax"):
            if name in query:
                moment = _moment({"dateTime": query[name]})
                if moment is None:
                    return self.error(400, f"Bad Request: {name}", code="badRequest")
                bounds[name] = moment
        text = query.get("q", "").lower()
        shown = []
        for event in calendar.events.values():
            if event.status == "cancelled" and query.get("showDeleted") != "true":
                continue
            start, end = _moment(event.fields["start"]), _moment(event.fields["end"])
            if "timeMin" in bounds and end is not None and end <= bounds["timeMin"]:
                continue
            if "timeMax" in bounds and start is not None and start >= bounds["timeMax"]:
                continue
            words = " ".join(str(event.fields.get(k, "")) for k in ("summary", "description", "location"))
            if text and text not in words.lower():
                continue
            shown.append(event)
        if query.get("orderBy") == "startTime":
            shown.sort(key=lambda e: _moment(e.fields["start"]) or dt.datetime.min.replace(tzinfo=dt.UTC))
        elif query.get("orderBy") == "updated":
            shown.sort(key=lambda e: e.updated)
        size = min(int(query.get("maxResults", "250")), 2500) if query.get("maxResults", "250").isdigit() else 250
        token = query.get("pageToken", "0")
        start_at = int(token) if token.isdigit() else 0
        page = shown[start_at : start_at + max(size, 1)]
        body: dict[str, Any] = {
            "kind": "calendar#events",
            "etag": f'"p{calendar.version}"',
            "summary": calendar.summary,
            "updated": now(),
            "timeZone": calendar.time_zone,
            "accessRole": "owner",
            "defaultReminders": [],
            "items": [self._json(calendar, e) for e in page],
        }
        if start_at + size < len(shown):
            body["nextPageToken"] = str(start_at + size)
        return FakeResponse(200, json=body)

    @vendor_route("POST", "/calendars/{calendarId}/events", docs=f"{_DOCS}/insert", body="json")
    def insert_event(self, request: FakeRequest) -> FakeResponse:
        """200 with the new event, 400 (``required``, ``invalid``, ``timeRangeEmpty``), 404."""
        calendar = self._calendar_of(request)
        if isinstance(calendar, FakeResponse):
            return calendar
        refused = self._send_updates(request)
        body = request.json if isinstance(request.json, dict) else None
        if refused is not None or body is None:
            return refused or self.malformed_body(request, "not a JSON object")
        refused = self._unknown(body, _EDITABLE) or self._invalid_times(body)
        if refused is not None:
            return refused
        event = FakeEvent(
            _event_id(next(self._ids)),
            {k: copy.deepcopy(v) for k, v in body.items() if v is not None},
            origin="api",
        )
        calendar.events[event.id] = event
        self.send_updates.append(request.query.get("sendUpdates"))
        return FakeResponse(200, json=self._json(calendar, event))

    @vendor_route("GET", "/calendars/{calendarId}/events/{eventId}", docs=f"{_DOCS}/get")
    def get_event(self, request: FakeRequest) -> FakeResponse:
        """200 with the event (a deleted one too, with status ``cancelled``), 404."""
        found = self._event_of(request)
        if isinstance(found, FakeResponse):
            return found
        return FakeResponse(200, json=self._json(*found))

    @vendor_route("PATCH", "/calendars/{calendarId}/events/{eventId}", docs=f"{_DOCS}/patch", body="json")
    def patch_event(self, request: FakeRequest) -> FakeResponse:
        """200 with the event, 400, 404, 410 (a deleted event: the fake's choice), 412.

        The body is merged into the event: a nested object (``start``, ``end``) is merged
        key by key, a null removes the field (or the key).
        """
        found = self._event_of(request)
        if isinstance(found, FakeResponse):
            return found
        calendar, event = found
        refused = self._send_updates(request) or self._precondition(request, event)
        body = request.json if isinstance(request.json, dict) else None
        if refused is not None or body is None:
            return refused or self.malformed_body(request, "not a JSON object")
        if event.status == "cancelled":
            return self.error(410, "Resource has been deleted", code="deleted")
        merged = copy.deepcopy(event.fields)
        for name, value in body.items():
            if value is None:
                merged.pop(name, None)
            elif isinstance(value, dict) and isinstance(merged.get(name), dict):
                merged[name] = {
                    k: v for k, v in {**merged[name], **value}.items() if v is not None
                }
            else:
                merged[name] = copy.deepcopy(value)
        refused = self._unknown(body, _EDITABLE) or self._invalid_times(merged)
        if refused is not None:
            return refused
        if merged != event.fields:
            event.fields = merged
            event.sequence += 1
            event.changed()
        self.send_updates.append(request.query.get("sendUpdates"))
        return FakeResponse(200, json=self._json(calendar, event))

    @vendor_route("DELETE", "/calendars/{calendarId}/events/{eventId}", docs=f"{_DOCS}/delete")
    def delete_event(self, request: FakeRequest) -> FakeResponse:
        """204 with no content, 404 for an unknown event, 410 for one deleted already, 412."""
        found = self._event_of(request)
        if isinstance(found, FakeResponse):
            return found
        _, event = found
        refused = self._send_updates(request) or self._precondition(request, event)
        if refused is not None:
            return refused
        if event.status == "cancelled":
            return self.error(410, "Resource has been deleted", code="deleted")
        event.status = "cancelled"
        event.changed()
        self.send_updates.append(request.query.get("sendUpdates"))
        return FakeResponse(204)

    # -- how Calendar spells an event ----------------------------------------------------

    def _json(self, calendar: FakeCalendarState, event: FakeEvent) -> dict[str, Any]:
        """An Event resource (https://developers.google.com/calendar/api/v3/reference/events#resource)."""
        owner = {"email": calendar.id, "self": True}
        return {
            "kind": "calendar#event",
            "etag": event.etag,
            "id": event.id,
            "status": event.status,
            "htmlLink": f"https://www.google.com/calendar/event?eid={event.id}",
            "created": event.created,
            "updated": event.updated,
            **copy.deepcopy(event.fields),
            "creator": dict(owner),
            "organizer": dict(owner),
            "iCalUID": f"{event.id}@google.com",
            "sequence": event.sequence,
            "reminders": {"useDefault": True},
            "eventType": "default",
        }


_REASONS = {
    400: "badRequest",
    401: "authError",
    403: "forbidden",
    404: "notFound",
    409: "duplicate",
    410: "deleted",
    412: "conditionNotMet",
    429: "rateLimitExceeded",
    500: "backendError",
    503: "backendError",
}
