"""A fake Google Calendar API v3 (events) to test against, and the certification opt-in.

:class:`FakeCalendar` is a :class:`reversi_core.testing.VendorFake` that models the part of
the Calendar API the ``gcalendar`` connector uses, written from Google's reference (each
route's docstring cites its page): listing (time range, text, paging, ordering),
inserting, reading, patching (merge semantics, ``If-Match``) and deleting events (to the
trash: 410 ``deleted`` the second time), with Calendar's error bodies (``{"error":
{"errors": [{"domain", "reason", "message"}], "code", "message"}}``), ETags that change
with every change, ``sendUpdates`` recorded per write, read-only tokens (403
``insufficientPermissions`` on writes) and a usage limit (403 ``rateLimitExceeded``).
Serve it with :class:`reversi_core.testing.FakeServer`::

    from reversi_core.testing import FakeServer
    from reversi_connector_gcalendar import GcalendarConnector
    from reversi_connector_gcalendar.testing import FakeCalendar, seed_example, STANDUP_ID

    fake = FakeCalendar(token="ya29.test-token")
    seed_example(fake)
    with FakeServer(fake) as server:
        calendar = GcalendarConnector("ya29.test-token", base_url=fake.base_url(server))
        done = await calendar.call("gcalendar.update_event",
                                   {"event_id": STANDUP_ID, "summary": "Standup (moved)"})
        fake.edit_event("primary", STANDUP_ID, summary="Someone else's title")  # a person's edit

What the fake does not model: attendees and the emails Calendar would send them,
recurring events and their instances (``singleEvents`` is accepted and changes nothing),
reminders, conference data, colours, calendars' access rules, sync tokens, and the
trash's expiry. ``dateTime`` values are kept exactly as given (Calendar answers them in
the calendar's time zone). Its answers are checked against the Calendar v3 discovery
document shipped in ``google-api-python-client``, and that library drives it, in the
package's tests (docs/connectors/gcalendar.md, "The second oracle").

:func:`certification_fixture` opts the connector into the certification suite
(docs/certification-guide.md): every check applies to gcalendar, the concurrent-change
check to both undoable tools (:func:`concurrent_change`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reversi_core.http import Timeouts
from reversi_core.testing import (
    CertificationFixture,
    ConcurrentChange,
    Dependency,
    Example,
    ExampleContext,
    Failure,
    FakeServer,
    LiveScenario,
    Residue,
)

from ._fake import OWNER, FakeCalendar, FakeCalendarState, FakeEvent, _event_id
from ._live import LIVE_CALENDAR_VARIABLE, LIVE_SUMMARY, LIVE_VARIABLES, live_scenario
from .connector import GcalendarConnector

__all__ = [
    "CANCELLED_ID",
    "CERTIFICATION_TOKEN",
    "DEPENDENCIES",
    "EXAMPLES",
    "FAILURES",
    "LIMIT",
    "LIVE",
    "OFFSITE_ID",
    "OWNER",
    "PATIENCE",
    "RETRO_ID",
    "STANDUP_ID",
    "TEAM",
    "FakeCalendar",
    "FakeCalendarState",
    "FakeEvent",
    "calendar_backend",
    "certification_fixture",
    "concurrent_change",
    "seed_example",
]

CERTIFICATION_TOKEN = "ya29.reversiCertification-0123456789abcdef"  # noqa: S105 - made up
"""The token the certification fixture gives the fake and the connector."""

TEAM = "team#ops@group.calendar.google.com"
"""A second calendar, whose id holds a ``#`` and an ``@`` (encoded once in every path)."""
STANDUP_ID = _event_id(1)
"""The timed event on ``primary`` that :func:`seed_example` makes first."""
OFFSITE_ID = _event_id(2)
"""The all-day event on ``primary`` (no description, no location)."""
CANCELLED_ID = _event_id(3)
"""An event on ``primary`` that is deleted already (in the trash)."""
RETRO_ID = _event_id(4)
"""The event of :data:`TEAM`."""
LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""


def seed_example(fake: FakeCalendar) -> None:
    """Put the example state in a fresh ``fake`` (the ids above assume a fresh one).

    ``primary``: "Standup" (Room 1, 09:00-09:15 UTC on 2026-12-01, "Daily sync"),
    "Offsite" (all day on 2026-12-10) and a deleted "Old meeting"; :data:`TEAM`: "Retro".
    """
    fake.add_event(
        "primary",
        summary="Standup",
        description="Daily sync",
        location="Room 1",
        start={"dateTime": "2026-12-01T09:00:00Z"},
        end={"dateTime": "2026-12-01T09:15:00Z"},
    )
    fake.add_event("primary", summary="Offsite", start={"date": "2026-12-10"}, end={"date": "2026-12-11"})
    old = fake.add_event(
        "primary",
        summary="Old meeting",
        start={"dateTime": "2026-11-01T10:00:00+01:00", "timeZone": "Europe/Paris"},
        end={"dateTime": "2026-11-01T11:00:00+01:00", "timeZone": "Europe/Paris"},
    )
    old.status = "cancelled"
    fake.add_calendar(TEAM, "Ops team", time_zone="Europe/Zurich")
    fake.add_event(
        TEAM,
        summary="Retro",
        start={"dateTime": "2026-12-04T15:00:00+01:00", "timeZone": "Europe/Zurich"},
        end={"dateTime": "2026-12-04T16:00:00+01:00", "timeZone": "Europe/Zurich"},
    )


@contextmanager
def calendar_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeCalendar` (token :data:`CERTIFICATION_TOKEN`) served on a fresh port."""
    with FakeServer(FakeCalendar(token=CERTIFICATION_TOKEN)) as server:
        yield server


def _fake(server: FakeServer) -> FakeCalendar:
    app = server.app
    if not isinstance(app, FakeCalendar):
        raise TypeError(f"the server does not serve a FakeCalendar but a {type(app).__name__}")
    return app


def _seed(server: FakeServer) -> None:
    seed_example(_fake(server))


def _build_with_timeout(server: FakeServer, seconds: float) -> GcalendarConnector:
    return GcalendarConnector(
        CERTIFICATION_TOKEN,
        base_url=_fake(server).base_url(server),
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


def _at(hour: int, minute: int = 0, day: int = 2) -> dict[str, str]:
    return {"dateTime": f"2026-12-{day:02d}T{hour:02d}:{minute:02d}:00Z"}


_MOVE_STANDUP = {
    "event_id": STANDUP_ID,
    "summary": "Standup (moved)",
    "location": None,
    "start": _at(10),
    "end": _at(10, 30),
}


def _undo_args(update: Mapping[str, Any]) -> dict[str, Any]:
    """restore_event's arguments, as update_event's compensation map makes them."""
    return {
        "calendar_id": update["calendar_id"],
        "event_id": update["event_id"],
        "previous": update["previous"],
        "expected": update["applied"],
        "etag": update["etag"],
    }


async def _restore_after_update(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _undo_args(await ctx.call("gcalendar.update_event", _MOVE_STANDUP))


async def _restore_without_etag(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("gcalendar.update_event", {"event_id": OFFSITE_ID, "description": "Bring laptops"})
    return {**_undo_args(made), "etag": None}


async def _restore_when_an_unrelated_field_changed(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("gcalendar.update_event", {"event_id": STANDUP_ID, "summary": "Standup v2"})
    _fake(ctx.handle).edit_event("primary", STANDUP_ID, description="Notes added by someone")
    return _undo_args(made)  # the ETag is stale, but the summary is as the update left it


async def _update_new_event(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call(
        "gcalendar.create_event", {"summary": "Draft", "start": _at(14), "end": _at(15)}
    )
    return {"event_id": made["id"], "summary": "Planning", "description": "Agenda to follow"}


def _delete_args(made: Mapping[str, Any]) -> dict[str, Any]:
    """delete_event's arguments, as create_event's compensation map makes them."""
    return {
        "calendar_id": made["calendar_id"],
        "event_id": made["id"],
        "etag": made["etag"],
        "expected": made["applied"],
    }


async def _delete_new_event(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call(
        "gcalendar.create_event", {"calendar_id": TEAM, "summary": "Temp", "start": _at(8), "end": _at(9)}
    )
    return _delete_args(made)


async def _delete_when_an_unrelated_field_changed(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("gcalendar.create_event", {"summary": "Temp", "start": _at(8), "end": _at(9)})
    _fake(ctx.handle).edit_event("primary", made["id"], colorId="5")
    return _delete_args(made)  # the ETag is stale, but the five fields are as the creation left them


async def _delete_after_someone_renamed(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("gcalendar.create_event", {"summary": "Agent's event", "start": _at(8), "end": _at(9)})
    _fake(ctx.handle).edit_event("primary", made["id"], summary="A person's event")
    return _delete_args(made)


async def _restore_after_someone_edited(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("gcalendar.update_event", {"event_id": STANDUP_ID, "summary": "Agent's title"})
    _fake(ctx.handle).edit_event("primary", STANDUP_ID, summary="A person's title")
    return _undo_args(made)


EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "gcalendar.list_events": [
        {},
        {"calendar_id": TEAM, "query": "retro"},
        {
            "time_min": "2026-11-30T00:00:00Z",
            "time_max": "2026-12-31T00:00:00Z",
            "single_events": True,
            "order_by": "startTime",
            "max_results": 1,
        },
    ],
    "gcalendar.create_event": [
        {"summary": "Agent sync", "start": _at(11), "end": _at(11, 30)},
        {
            "calendar_id": TEAM,
            "summary": "Incident review",
            "description": "<b>Bring</b> the timeline",
            "location": "Zurich, Room 4 + video",
            "start": {"date": "2026-12-15"},
            "end": {"date": "2026-12-16"},
        },
    ],
    "gcalendar.update_event": [
        _MOVE_STANDUP,
        {"event_id": OFFSITE_ID, "description": "Bring laptops", "location": "Lakeside"},
        _update_new_event,
        {"calendar_id": TEAM, "event_id": RETRO_ID, "summary": "Retro (100% remote)"},
    ],
    "gcalendar.restore_event": [
        _restore_after_update,
        _restore_without_etag,
        _restore_when_an_unrelated_field_changed,
    ],
    "gcalendar.delete_event": [
        {"event_id": STANDUP_ID},
        _delete_new_event,
        _delete_when_an_unrelated_field_changed,
        {"event_id": CANCELLED_ID},
        {"event_id": "nosuchevent0000"},
    ],
}

FAILURES: Mapping[str, list[Failure]] = {
    "gcalendar.list_events": [
        Failure({"calendar_id": "nobody@example.com"}, code="notFound", status=404),
        Failure({"order_by": "startTime"}, code="invalid", status=400),
    ],
    "gcalendar.create_event": [
        Failure({"summary": "Backwards", "start": _at(12), "end": _at(11)}, code="timeRangeEmpty", status=400),
        Failure(
            {"calendar_id": "nobody@example.com", "summary": "x", "start": _at(12), "end": _at(13)},
            code="notFound",
            status=404,
        ),
    ],
    "gcalendar.update_event": [
        Failure({"event_id": "nosuchevent0000", "summary": "x"}, code="notFound", status=404),
        Failure({"event_id": CANCELLED_ID, "summary": "x"}, code="deleted"),
        Failure({"event_id": STANDUP_ID, "end": _at(8, day=1)}, code="timeRangeEmpty", status=400),
    ],
    "gcalendar.restore_event": [
        Failure(_restore_after_someone_edited, code="changed_since", status=412),
        Failure(
            {"event_id": "nosuchevent0000", "previous": {"summary": "a"}, "expected": {"summary": "b"},
             "etag": '"1"'},
            code="notFound",
            status=404,
        ),
    ],
    "gcalendar.delete_event": [
        Failure(_delete_after_someone_renamed, code="changed_since", status=412),
    ],
}
"""Calls Calendar turns down, each with its status and reason: 404 ``notFound``, 400
``invalid`` and ``timeRangeEmpty``; a restore refused because someone changed the summary
since the update, and a delete refused because someone renamed the event since its
creation (412, ``changed_since``); and an update of an event that reads back deleted
(``deleted``, without a status: Calendar answers that read 200)."""


async def _update_created(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return {"event_id": ctx.results["gcalendar.create_event"]["id"], "location": "Room 7"}


async def _update_again(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return {"event_id": ctx.results["gcalendar.update_event"]["event_id"], "summary": "Standup (twice)"}


DEPENDENCIES: list[Dependency] = [
    Dependency(
        "gcalendar.create_event",
        {"summary": "New", "start": _at(16), "end": _at(17)},
        "gcalendar.update_event",
        _update_created,
    ),
    Dependency("gcalendar.update_event", _MOVE_STANDUP, "gcalendar.update_event", _update_again),
]
"""An update of an event the run created; a second update of an event the run updated."""


def _without_deleted_creations(fingerprint: Any) -> Any:
    for calendar in fingerprint["calendars"].values():
        calendar["events"] = {
            eid: event
            for eid, event in calendar["events"].items()
            if not (event["origin"] == "api" and event["status"] == "cancelled")
        }
    return fingerprint


EVENT_STAYS_IN_TRASH = Residue(
    reason="Calendar's delete moves an event to the calendar's trash, where it stays (status "
    "cancelled) until Calendar empties it; the undo of create_event deletes, it does not purge",
    normalise=_without_deleted_creations,
)
"""create_event's residue: events the API created that are now deleted are ignored."""

def concurrent_change(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange | None:
    """After ``tool`` ran, edit what it made or changed as a person would, in the fake itself.

    For gcalendar.update_event, the first field the call changed gets another value; for
    gcalendar.create_event, the new event's summary does (through
    :meth:`FakeCalendar.edit_event`, so the ETag moves on too). The undo must then refuse,
    naming "the event's <field>"; ``revert`` puts the value the call left back. ``None``
    for any other tool (they have no undo).
    """
    if tool == "gcalendar.update_event" and result.get("changed"):
        name, event = result["changed"][0], result["event_id"]
    elif tool == "gcalendar.create_event":
        name, event = "summary", result["id"]
    else:
        return None
    fake = _fake(server)
    left = result["applied"][name]
    calendar = result["calendar_id"]
    other: Any = {"dateTime": "2027-01-05T07:00:00Z"} if name in ("start", "end") else "Edited by a person"
    fake.edit_event(calendar, event, **{name: other})
    return ConcurrentChange(
        what=f"the event's {name}", revert=lambda: fake.edit_event(calendar, event, **{name: left})
    )


LIVE = LiveScenario(
    name="create-update-rollback",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {LIVE_CALENDAR_VARIABLE: TEAM},
)
"""gcalendar's live scenario (:mod:`reversi_connector_gcalendar._live`): ``nox -s live -- gcalendar``."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The gcalendar connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of the Google Calendar API v3 (events), ETags and faults included",
        command_line=lambda server: (
            {
                "GOOGLE_CALENDAR_TOKEN": CERTIFICATION_TOKEN,
                "GOOGLE_CALENDAR_BASE_URL": _fake(server).base_url(server),
            },
            [],
        ),
        backend=calendar_backend,
        seed=_seed,
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={"gcalendar.create_event": EVENT_STAYS_IN_TRASH},
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
        live=LIVE,
        concurrent_change=concurrent_change,
    )
