"""The ``gcalendar`` connector: Google Calendar events through the Calendar API v3.

Five tools. ``gcalendar.list_events`` reads; ``gcalendar.create_event`` is undone by
``gcalendar.delete_event`` (a 404 or 410 counts as done); ``gcalendar.update_event`` reads
the event first, changes only the fields that differ, and is undone by
``gcalendar.restore_event``, which puts back exactly those fields.

Every request goes to ``base_url`` (``https://www.googleapis.com/calendar/v3``) with
``Authorization: Bearer <GOOGLE_CALENDAR_TOKEN>``; without a ``calendar_id`` a call
works on the ``primary`` calendar. Writes send ``sendUpdates=none``: attendees get no mail
about what the agent or its undo did (https://developers.google.com/calendar/api/v3/reference/events/patch).

No undo overwrites a change someone made after the call. create_event and update_event
return the ETag their write produced and the fields as Calendar stored them; their undos
send that ETag as ``If-Match``
(https://developers.google.com/calendar/api/guides/version-resources). When the event
changed since (Calendar answers 412), the undo reads it and compares each field with
what the call left: restore_event never overwrites a field someone else changed, and
delete_event never deletes an event whose fields someone changed or to which someone
added guests; either fails with ``code="changed_since"`` naming what changed. Otherwise
the undo is done under the fresh ETag. A person's decision to undo anyway
(``CallContext.overwrite``, ``reversi rollback RUN --overwrite STEP``, docs/engine.md)
drops the precondition.
A refusal is a :class:`~reversi_core.errors.ToolError` naming the status and Calendar's
reason (:data:`reversi_connector_gcalendar._errors.ERRORS`); a lost answer to a write is
:class:`~reversi_core.errors.EffectUncertainError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import httpx

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import BaseUrl, Bearer, HttpConnector, Setting, Timeouts, url_path
from reversi_core.manifest import Compensation, Effect, Match, Requirement

from ._args import (
    FIELDS,
    CreateEventArgs,
    DeleteEventArgs,
    ListEventsArgs,
    RestoreEventArgs,
    UpdateEventArgs,
)
from ._errors import CHANGED_SINCE, ERRORS
from ._results import (
    CreateEventResult,
    DeleteEventResult,
    ListEventsResult,
    RestoreEventResult,
    UpdateEventResult,
)

__all__ = ["DEFAULT_BASE_URL", "NO_EMAILS", "GcalendarConnector"]

DEFAULT_BASE_URL = "https://www.googleapis.com/calendar/v3"
"""The Calendar API v3 root."""

NO_EMAILS = {"sendUpdates": "none"}
"""The query every write carries: Calendar then notifies no guest of the change."""

RESTORE_ATTEMPTS = 3
"""Times restore_event and delete_event read and write again when the event keeps changing under them."""

OVERWRITE_HINT = (
    "The later change is kept: undo it and roll back again, or let the rollback overwrite it "
    "(reversi rollback RUN --overwrite STEP, see docs/engine.md)"
)
"""How a refusal of an undo ends: what the person can do about it."""

_TIME_KEYS = ("date", "dateTime", "timeZone")
_TOKEN_HELP = "a Google OAuth 2.0 access token with a Calendar scope"  # noqa: S105 - words, not a secret


def _on_event(earlier_tool: str, earlier: str) -> Requirement:
    """A call on the event that an earlier ``earlier_tool`` step of the run named by ``earlier``.

    Only the event id is compared: the same calendar may be named ``primary`` in one call
    and by its address in another, and an event id names one event in a calendar.
    """
    return Requirement(tool=earlier_tool, match=[Match(this="args.event_id", earlier=earlier)])


def _time(value: Any) -> dict[str, str] | None:
    """An EventDateTime as Calendar answered it, its three keys only (``None`` for none)."""
    if not isinstance(value, dict):
        return None
    return {k: value[k] for k in _TIME_KEYS if isinstance(value.get(k), str)} or None


def fields_of(event: Mapping[str, Any]) -> dict[str, Any]:
    """The five fields of a Calendar event answer (:data:`FIELDS`), ``None`` where empty."""
    return {name: _normal(name, event.get(name)) for name in FIELDS}


def _normal(name: str, value: Any) -> Any:
    """A field's value as :func:`fields_of` spells it, for comparing with an answer."""
    if name in ("start", "end"):
        return _time(value)
    return value if isinstance(value, str) and value != "" else None


def _patch_value(name: str, value: Any) -> Any:
    """How a field is sent in a PATCH: a time replaces all three keys (absent ones as null)."""
    if name in ("start", "end") and isinstance(value, dict):
        return {k: value.get(k) for k in _TIME_KEYS}
    return value


def _shown(value: Any) -> str:
    if value is None:
        return "empty"
    text = value if isinstance(value, str) else ", ".join(f"{k} {v}" for k, v in value.items())
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _what(name: str) -> str:
    return "the event's guests" if name == "attendees" else f"the event's {name}"


def _changed_since(tool: str, what: str, kept: str, *, status: int | None) -> ToolError:
    """The refusal of an undo whose event someone changed since the forward call."""
    return ToolError(f"{tool}: {what}: {kept}. {OVERWRITE_HINT}", status=status, code=CHANGED_SINCE)


def _differences(
    current: Mapping[str, Any], expected: Mapping[str, Any], since: str, *, spare: Mapping[str, Any]
) -> list[str]:
    """What someone changed: each field of ``expected`` the event no longer holds, in words.

    ``current`` is :func:`fields_of` the event read now; ``since`` names the forward call
    ("update_event"); a field that holds its value in ``spare`` (the old value a restore
    would put back) is not counted as changed.
    """
    return [
        f"someone changed {_what(n)} since {since} (now {_shown(current[n])}, {since} left "
        f"{_shown(expected[n])})"
        for n in expected
        if current[n] != expected[n] and not (n in spare and current[n] == spare[n])
    ]


def _summary(event: Mapping[str, Any]) -> dict[str, Any]:
    fields = fields_of(event)
    return {
        "id": str(event.get("id")),
        "status": event.get("status") if isinstance(event.get("status"), str) else None,
        **fields,
        "html_link": event.get("htmlLink") if isinstance(event.get("htmlLink"), str) else None,
        "updated": event.get("updated") if isinstance(event.get("updated"), str) else None,
        "etag": event.get("etag") if isinstance(event.get("etag"), str) else None,
    }


class GcalendarConnector(HttpConnector):
    """Google Calendar events through the Calendar API v3 (see the module docstring).

    ``token`` is a Google OAuth 2.0 access token sent as ``Authorization: Bearer``; it
    needs ``https://www.googleapis.com/auth/calendar.events.readonly`` to list events and
    ``https://www.googleapis.com/auth/calendar.events`` for the rest. ``base_url`` is the
    API root (default ``https://www.googleapis.com/calendar/v3``). ``timeouts`` are the
    per-request limits in seconds (default ``Timeouts(connect=5, read=30, total=60)``),
    lowered to the caller's limit on each call; ``transport`` replaces the network
    transport (tests). Raises :class:`~reversi_core.errors.ConfigurationError` for an
    empty token or a malformed ``base_url``; neither message repeats the token.
    """

    name = "gcalendar"
    settings = (
        Setting("GOOGLE_CALENDAR_TOKEN", "token", _TOKEN_HELP, secret=True),
        Setting(
            "GOOGLE_CALENDAR_BASE_URL",
            "base_url",
            "the Calendar API v3 root, such as https://www.googleapis.com/calendar/v3",
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

    @staticmethod
    def _events(calendar_id: str) -> str:
        return url_path("/calendars/{calendar}/events", calendar=calendar_id)

    @staticmethod
    def _event(calendar_id: str, event_id: str) -> str:
        return url_path("/calendars/{calendar}/events/{event}", calendar=calendar_id, event=event_id)

    async def _read(
        self, ctx: CallContext, calendar_id: str, event_id: str
    ) -> tuple[dict[str, Any], str]:
        """The event as Calendar has it now, and its ETag (a read; refuses a deleted event)."""
        found = await self._read_if_there(ctx, calendar_id, event_id, gone_ok=False)
        if found is None:
            raise ToolError(
                f"gcalendar: event {event_id} of calendar {calendar_id} is deleted (in the "
                "calendar's trash: Calendar reads it back with status cancelled)",
                code="deleted",
            )
        return found

    async def _read_if_there(
        self, ctx: CallContext, calendar_id: str, event_id: str, *, gone_ok: bool = True
    ) -> tuple[dict[str, Any], str] | None:
        """The event and its ETag, or ``None`` when it is deleted (or, with ``gone_ok``, 404/410)."""
        resp = await self.request(
            ctx, "GET", self._event(calendar_id, event_id), ok_statuses={404, 410} if gone_ok else ()
        )
        if resp.status in (404, 410):
            return None
        event = self.expect_object(resp, "event", wrote=False)
        etag = event.get("etag")
        if not isinstance(etag, str) or not etag:
            raise self.malformed("has no 'etag'", resp, wrote=False)
        return None if event.get("status") == "cancelled" else (event, etag)

    # -- reading ---------------------------------------------------------------------

    @tool(
        effect=Effect.READ_ONLY,
        permission="gcalendar:events:read",
        input=ListEventsArgs,
        output=ListEventsResult,
    )
    async def list_events(self, args: ListEventsArgs, ctx: CallContext) -> dict[str, Any]:
        """List one page of a calendar's events, optionally within a time range or matching text.

        ``GET /calendars/{calendarId}/events`` (https://developers.google.com/calendar/api/v3/reference/events/list)
        with ``timeMin``, ``timeMax``, ``q``, ``singleEvents``, ``orderBy``, ``maxResults``
        and ``pageToken``. Needs ``calendar.events.readonly``. Returns ``{"calendar_id",
        "events": [{"id", "status", "summary", "description", "location", "start", "end",
        "html_link", "updated", "etag"}], "next_page_token"}``. Raises ``ToolError`` naming
        the status and Calendar's reason (404 ``notFound``, 400 ``invalid`` such as
        ordering by start without single_events, 401 ``authError``, 403 ``forbidden``,
        ``rate_limited``).
        """
        params: dict[str, Any] = {"maxResults": args.max_results}
        for name, value in (
            ("timeMin", args.time_min),
            ("timeMax", args.time_max),
            ("q", args.query),
            ("orderBy", args.order_by),
            ("pageToken", args.page_token),
        ):
            if value is not None:
                params[name] = value
        if args.single_events:
            params["singleEvents"] = "true"
        resp = await self.request(ctx, "GET", self._events(args.calendar_id), params=params)
        page = self.expect_object(resp, "events list", wrote=False)
        items = page.get("items", [])
        if not isinstance(items, list):
            raise self.malformed("has an 'items' that is not a list", resp, wrote=False)
        token = page.get("nextPageToken")
        return {
            "calendar_id": args.calendar_id,
            "events": [_summary(e) for e in items if isinstance(e, dict) and e.get("id")],
            "next_page_token": token if isinstance(token, str) else None,
        }

    # -- changing --------------------------------------------------------------------

    @tool(
        effect=Effect.REVERSIBLE,
        permission="gcalendar:events:write",
        input=CreateEventArgs,
        output=CreateEventResult,
        compensation=Compensation(
            tool="gcalendar.delete_event",
            argument_map={
                "calendar_id": "result.calendar_id",
                "event_id": "result.id",
                "etag": "result.etag",
                "expected": "result.applied",
            },
            # the event alone: one calendar has several names ('primary', its address)
            resources=["gcalendar:events/{result.id}"],
        ),
    )
    async def create_event(self, args: CreateEventArgs, ctx: CallContext) -> dict[str, Any]:
        """Create an event (no guests, no email); undone by deleting it.

        ``POST /calendars/{calendarId}/events?sendUpdates=none`` with ``{"summary",
        "description"?, "location"?, "start", "end"}``
        (https://developers.google.com/calendar/api/v3/reference/events/insert). Needs
        ``calendar.events``. Returns ``{"calendar_id", "id", "etag", "status",
        "html_link", "applied"}``, ``applied`` the five fields as Calendar stored them (what
        the undo, delete_event, expects to find). Raises ``ToolError`` naming the status and Calendar's reason (400
        ``timeRangeEmpty`` for an end before the start, 400 ``invalid``, 404 ``notFound``
        for an unknown calendar, 403 ``insufficientPermissions`` or ``forbidden``,
        ``rate_limited``); ``EffectUncertainError`` when the answer was lost, did not come
        in time, or lacks the event's id.
        """
        body: dict[str, Any] = {"summary": args.summary}
        for name in ("description", "location"):
            if getattr(args, name) is not None:
                body[name] = getattr(args, name)
        body["start"] = args.start.model_dump(exclude_none=True)
        body["end"] = args.end.model_dump(exclude_none=True)
        resp = await self.request(
            ctx, "POST", self._events(args.calendar_id), params=NO_EMAILS, json=body
        )
        event = self.expect_object(resp, "event", wrote=True)
        event_id = self.expect_field(event, "id", resp, wrote=True)
        summary = _summary(event)
        return {
            "calendar_id": args.calendar_id,
            "id": str(event_id),
            "etag": summary["etag"],
            "status": summary["status"],
            "html_link": summary["html_link"],
            "applied": fields_of(event),
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="gcalendar:events:write",
        input=UpdateEventArgs,
        output=UpdateEventResult,
        compensation=Compensation(
            tool="gcalendar.restore_event",
            argument_map={
                "calendar_id": "result.calendar_id",
                "event_id": "result.event_id",
                "previous": "result.previous",
                "expected": "result.applied",
                "etag": "result.etag",
            },
            resources=["gcalendar:events/{result.event_id}"],
        ),
        requires=[
            _on_event("gcalendar.create_event", "result.id"),
            _on_event("gcalendar.update_event", "args.event_id"),
        ],
    )
    async def update_event(self, args: UpdateEventArgs, ctx: CallContext) -> dict[str, Any]:
        """Change an event's summary, description, location, start or end; undone by restore_event.

        Reads the event (``GET /calendars/{calendarId}/events/{eventId}``,
        https://developers.google.com/calendar/api/v3/reference/events/get), then patches
        only the given fields whose value differs
        (``PATCH ...?sendUpdates=none`` with ``If-Match`` the ETag read,
        https://developers.google.com/calendar/api/v3/reference/events/patch). A text field
        given as null is cleared; ``start`` and ``end`` are replaced whole. Needs
        ``calendar.events``. Returns ``{"calendar_id", "event_id", "changed",
        "previous" (the old value, or null where empty, of exactly the changed fields),
        "applied" (their values as Calendar stored them), "etag" (the event's ETag after the
        write), "html_link"}``; when nothing differs nothing is written and ``changed`` is
        empty. Raises ``ToolError`` naming the status and Calendar's reason: 404
        ``notFound``, ``deleted`` (no status: the event reads back cancelled, it is in the
        trash), 412 ``conditionNotMet``
        when the event changed between the read and the write (nothing was written: call
        again), 400 ``timeRangeEmpty``/``invalid``, 403, 401, ``rate_limited``; a failed read
        is a ``ToolError`` (nothing was written); ``EffectUncertainError`` when the write's
        answer was lost, did not come in time, or lacks the ETag.
        """
        current, read_etag = await self._read(ctx, args.calendar_id, args.event_id)
        now = fields_of(current)
        wanted = args.wanted()
        changed = [name for name, value in wanted.items() if _normal(name, value) != now[name]]
        link = current.get("htmlLink") if isinstance(current.get("htmlLink"), str) else None
        done = {"calendar_id": args.calendar_id, "event_id": args.event_id}
        if not changed:
            return {
                **done,
                "changed": [],
                "previous": {},
                "applied": {},
                "etag": read_etag,
                "html_link": link,
            }
        try:
            resp = await self.request(
                ctx,
                "PATCH",
                self._event(args.calendar_id, args.event_id),
                params=NO_EMAILS,
                json={name: _patch_value(name, wanted[name]) for name in changed},
                headers={"If-Match": read_etag},
            )
        except ToolError as exc:
            if exc.status != 412:
                raise
            raise ToolError(
                f"{exc}; the event changed between update_event's read and its write, and "
                "nothing was written: call again",
                status=exc.status,
                code=exc.code,
            ) from None
        event = self.expect_object(resp, "event", wrote=True)
        etag = self.expect_field(event, "etag", resp, wrote=True)
        stored = fields_of(event)
        return {
            **done,
            "changed": changed,
            "previous": {name: now[name] for name in changed},
            "applied": {name: stored[name] for name in changed},
            "etag": str(etag),
            "html_link": event.get("htmlLink") if isinstance(event.get("htmlLink"), str) else link,
        }

    # -- compensations -----------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="gcalendar:events:write",
        input=RestoreEventArgs,
        output=RestoreEventResult,
    )
    async def restore_event(self, args: RestoreEventArgs, ctx: CallContext) -> dict[str, Any]:
        """Put back the fields update_event changed, unless someone changed them since.

        With ``etag``: ``PATCH /calendars/{calendarId}/events/{eventId}?sendUpdates=none``
        with ``If-Match: <etag>`` and ``previous`` as the body (a null removes the field),
        https://developers.google.com/calendar/api/v3/reference/events/patch. When
        Calendar answers 412 (the event changed since the update,
        https://developers.google.com/calendar/api/guides/version-resources), or without
        ``etag``, it reads the event and compares each field with ``expected`` (what the
        update left): a field someone else changed is not overwritten, and the call fails
        with ``code="changed_since"`` naming those fields ("the event's summary"...);
        a field already back at its old value is done; the others are patched back with
        ``If-Match`` the ETag just read (at most :data:`RESTORE_ATTEMPTS` rounds). With
        ``ctx.overwrite`` (a person's decision for this step, docs/engine.md) it patches
        ``previous`` back without ``If-Match`` and without comparing. Returns
        ``{"calendar_id", "event_id", "restored", "already"}``. Running it again after it
        succeeded changes nothing. Raises ``ToolError`` naming the status and Calendar's
        reason (404 ``notFound``, ``deleted`` for an event deleted since, 403, 401,
        ``rate_limited``) or ``changed_since``; ``EffectUncertainError`` when a write's
        answer was lost.
        """
        previous = {n: _normal(n, v) for n, v in args.previous.given().items()}
        expected = {n: _normal(n, v) for n, v in args.expected.given().items()}
        done = {"calendar_id": args.calendar_id, "event_id": args.event_id}
        if not previous:
            return {**done, "restored": [], "already": []}
        path = self._event(args.calendar_id, args.event_id)
        etag, pending = args.etag, list(previous)
        already: list[str] = []
        if ctx.overwrite:
            body = {name: _patch_value(name, previous[name]) for name in pending}
            await self.request(ctx, "PATCH", path, params=NO_EMAILS, json=body)
            return {**done, "restored": pending, "already": already}
        for _ in range(RESTORE_ATTEMPTS):
            if etag is not None:
                resp = await self.request(
                    ctx,
                    "PATCH",
                    path,
                    params=NO_EMAILS,
                    json={name: _patch_value(name, previous[name]) for name in pending},
                    headers={"If-Match": etag},
                    ok_statuses={412},
                )
                if resp.status != 412:
                    return {**done, "restored": pending, "already": already}
            event, etag = await self._read(ctx, args.calendar_id, args.event_id)
            current = fields_of(event)
            others = _differences(current, expected, "update_event", spare=previous)
            if others:
                answered = "Calendar answered HTTP 412 to the restore's If-Match; " if args.etag is not None else ""
                raise _changed_since(
                    "gcalendar.restore_event",
                    answered + "; ".join(others),
                    "it was not restored",
                    status=412 if args.etag is not None else None,
                )
            already = [n for n in previous if current[n] == previous[n]]
            pending = [n for n in previous if n not in already]
            if not pending:
                return {**done, "restored": [], "already": already}
        raise _changed_since(
            "gcalendar.restore_event",
            f"event {args.event_id} kept changing while it was being restored (HTTP 412 to "
            f"{RESTORE_ATTEMPTS} attempts)",
            "nothing of someone else's was overwritten",
            status=412,
        )

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="gcalendar:events:delete",
        input=DeleteEventArgs,
        output=DeleteEventResult,
    )
    async def delete_event(self, args: DeleteEventArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete an event (to the calendar's trash); one already gone (404 or 410) counts as done.

        ``DELETE /calendars/{calendarId}/events/{eventId}?sendUpdates=none``
        (https://developers.google.com/calendar/api/v3/reference/events/delete). With
        ``etag`` (the undo of create_event) the delete carries ``If-Match: <etag>``
        (https://developers.google.com/calendar/api/guides/version-resources); when
        Calendar answers 412 (the event changed since), it reads the event: an event gone
        meanwhile is done; one whose summary, description, location, start or end no
        longer holds ``expected``, or that now has guests, is kept, and the call fails with
        ``code="changed_since"`` naming what changed ("the event's summary", "the event's
        guests"; without ``expected``, any change); otherwise the delete is sent again
        under the ETag just read (at most :data:`RESTORE_ATTEMPTS` rounds). ``ctx.overwrite``
        (a person's decision for this step, docs/engine.md) drops the ``If-Match``. Needs
        ``calendar.events``. Returns ``{"calendar_id", "event_id", "deleted"}``,
        ``deleted`` false when the event was gone already. Declared idempotent so that it
        can undo create_event: keep ``gcalendar:events:delete`` out of the agent's scope, a
        rollback does not bring back an event the agent deletes. Raises ``ToolError``
        naming the status and Calendar's reason (403, 401, ``rate_limited``) or
        ``changed_since``; ``EffectUncertainError`` when the answer was lost or did not
        come in time.
        """
        path = self._event(args.calendar_id, args.event_id)
        done = {"calendar_id": args.calendar_id, "event_id": args.event_id}
        etag = None if ctx.overwrite else args.etag
        expected = (
            {n: _normal(n, v) for n, v in args.expected.given().items()} if args.expected else None
        )
        for _ in range(RESTORE_ATTEMPTS):
            resp = await self.request(
                ctx,
                "DELETE",
                path,
                params=NO_EMAILS,
                headers={"If-Match": etag} if etag is not None else None,
                ok_statuses={404, 410, 412} if etag is not None else {404, 410},
            )
            if resp.status != 412:
                return {**done, "deleted": resp.status not in (404, 410)}
            found = await self._read_if_there(ctx, args.calendar_id, args.event_id)
            if found is None:
                return {**done, "deleted": False}
            event, etag = found
            changes = (
                _differences(fields_of(event), expected, "create_event", spare={})
                if expected is not None
                else [f"someone changed the event since its ETag {args.etag} was read"]
            )
            if event.get("attendees"):
                changes.append("someone added the event's guests since create_event")
            if changes:
                raise _changed_since(
                    "gcalendar.delete_event",
                    "Calendar answered HTTP 412 to the delete's If-Match; " + "; ".join(changes),
                    "it was not deleted",
                    status=412,
                )
        raise _changed_since(
            "gcalendar.delete_event",
            f"event {args.event_id} kept changing while it was being deleted (HTTP 412 to "
            f"{RESTORE_ATTEMPTS} attempts)",
            "it was not deleted",
            status=412,
        )
