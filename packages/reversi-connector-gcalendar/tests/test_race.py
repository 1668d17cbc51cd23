"""The concurrent-change rule (RB-10): no undo overwrites or deletes a later edit.

For every example of the two undoable tools (create_event, undone by delete_event;
update_event, undone by restore_event): the call, then a person's edit of what it made or
changed, made in the fake itself (``testing.concurrent_change``), then a rollback through a
real engine, which must leave the step ``compensation_failed`` with a reason naming the
field, and the edit in place; once the person reverts, a second rollback completes and the
calendar is as before. Then the edges of the rule: guests someone added, a change outside
the five fields, an event someone deleted, and a person's decision to overwrite
(``CallContext.overwrite``, ``Run.allow_overwrite``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _gcal_support import TOKEN, connector_for

from reversi_connector_gcalendar import GcalendarConnector
from reversi_connector_gcalendar.testing import (
    EXAMPLES,
    OWNER,
    STANDUP_ID,
    FakeCalendar,
    concurrent_change,
    seed_example,
)
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import ToolError
from reversi_core.journal import RollbackState
from reversi_core.manifest import evaluate_argument_map
from reversi_core.testing import ExampleCalls, FakeServer

pytestmark = pytest.mark.anyio

UNDO = CallContext(compensation=True)
OVERWRITE = CallContext(compensation=True, overwrite=True)
MANIFESTS = {m.name: m for m in GcalendarConnector.manifests()}
UNDOABLE = [
    (tool, index)
    for tool in ("gcalendar.create_event", "gcalendar.update_event")
    for index in range(len(EXAMPLES[tool]))
]
NEW_EVENT = {
    "summary": "Agent sync",
    "start": {"dateTime": "2026-12-03T10:00:00Z"},
    "end": {"dateTime": "2026-12-03T11:00:00Z"},
}


def _run(tmp_path: Path, connector: Any) -> tuple[Run, SQLiteJournal]:
    journal = SQLiteJournal.open(tmp_path / "data")
    return Run.start(journal, registry_for([connector]), executor=executor_for([connector])), journal


async def _forward(
    calendar: GcalendarConnector, tool: str, args: dict[str, Any]
) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The call's result, its undo tool and the undo's arguments as the engine computes them."""
    result = await calendar.call(tool, args)
    compensation = MANIFESTS[tool].compensation
    assert compensation is not None
    return result, compensation.tool, evaluate_argument_map(compensation, args, result)


@pytest.mark.parametrize(("tool", "index"), UNDOABLE)
async def test_an_undo_refuses_a_later_edit_until_it_is_reverted(
    tmp_path: Path, tool: str, index: int
) -> None:
    fake = FakeCalendar(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake) as server:
        calendar = connector_for(fake, server)
        args = await ExampleCalls(server, calendar).prepare(EXAMPLES[tool][index])
        before = fake.snapshot()
        run, journal = _run(tmp_path, calendar)
        seq, result = await run.call(tool, args)
        change = concurrent_change(server, tool, args, result)
        assert change is not None
        edited = fake.snapshot()
        assert edited != before

        refused = await run.rollback(compensate=compensator_for([calendar]))
        step = next(s for s in refused.steps if s.seq == seq)
        assert not refused.complete
        assert step.rollback_state is RollbackState.COMPENSATION_FAILED
        reason = step.rollback_reason or ""
        assert f"someone changed {change.what}" in reason
        assert "--overwrite STEP" in reason
        assert fake.snapshot() == edited  # the person's edit stands

        change.revert()
        done = await run.rollback(compensate=compensator_for([calendar]))
        assert done.complete
        after = fake.snapshot()
        if tool == "gcalendar.create_event":  # the undo deletes to the trash
            for events in after["calendars"].values():
                for event_id in [e for e, v in events["events"].items() if v["origin"] == "api"]:
                    assert events["events"].pop(event_id)["status"] == "cancelled"
        assert after == before
        await calendar.aclose()
        journal.close()


async def test_an_event_someone_invited_guests_to_is_not_deleted(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    made, undo, args = await _forward(calendar, "gcalendar.create_event", NEW_EVENT)
    fake.edit_event("primary", made["id"], attendees=[{"email": "guest@example.com"}])
    with pytest.raises(ToolError) as caught:
        await calendar.call(undo, args, UNDO)
    assert (caught.value.status, caught.value.code) == (412, "changed_since")
    assert "someone added the event's guests since create_event" in str(caught.value)
    assert fake.event("primary", made["id"]).status == "confirmed"
    assert [f"{r.method} {r.headers.get('if-match')}" for r in server.requests[-2:]] == [
        f"DELETE {made['etag']}",
        "GET None",
    ]


async def test_a_change_outside_the_five_fields_does_not_keep_the_event(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    made, undo, args = await _forward(calendar, "gcalendar.create_event", NEW_EVENT)
    fake.edit_event("primary", made["id"], colorId="11")
    fresh = fake.event("primary", made["id"]).etag
    assert fresh != made["etag"]
    server.clear_requests()
    assert (await calendar.call(undo, args, UNDO))["deleted"] is True
    answered = [(e.request.method, e.request.headers.get("if-match"), e.response.status if e.response else None)
                for e in server.exchanges]
    assert answered == [("DELETE", made["etag"], 412), ("GET", None, 200), ("DELETE", fresh, 204)]
    assert fake.event("primary", made["id"]).status == "cancelled"


async def test_an_event_someone_deleted_already_is_done(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    made, undo, args = await _forward(calendar, "gcalendar.create_event", NEW_EVENT)
    fake.edit_event("primary", made["id"], summary="Renamed, then deleted")
    fake.event("primary", made["id"]).status = "cancelled"
    server.clear_requests()
    assert (await calendar.call(undo, args, UNDO))["deleted"] is False
    assert [r.method for r in server.requests] == ["DELETE", "GET"]


async def test_without_an_etag_delete_event_deletes_whatever_the_event_holds(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    made = await calendar.call("gcalendar.create_event", NEW_EVENT)
    fake.edit_event("primary", made["id"], summary="A person's title")
    server.clear_requests()
    done = await calendar.call("gcalendar.delete_event", {"event_id": made["id"]})
    assert done["deleted"] is True
    assert [(r.method, r.headers.get("if-match")) for r in server.requests] == [("DELETE", None)]


async def test_overwrite_deletes_the_edited_event_without_if_match(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    made, undo, args = await _forward(calendar, "gcalendar.create_event", NEW_EVENT)
    fake.edit_event("primary", made["id"], summary="A person's title")
    server.clear_requests()
    assert (await calendar.call(undo, args, OVERWRITE))["deleted"] is True
    assert [(r.method, r.headers.get("if-match")) for r in server.requests] == [("DELETE", None)]
    assert fake.event("primary", made["id"]).status == "cancelled"


async def test_overwrite_restores_over_the_later_edit_without_if_match(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    _, undo, args = await _forward(
        calendar, "gcalendar.update_event", {"event_id": STANDUP_ID, "summary": "Agent's title"}
    )
    fake.edit_event("primary", STANDUP_ID, summary="Their title", location="Room 9")
    with pytest.raises(ToolError) as caught:
        await calendar.call(undo, args, UNDO)
    assert "someone changed the event's summary since update_event (now 'Their title', " \
           "update_event left \"Agent's title\")" in str(caught.value)
    server.clear_requests()
    restored = await calendar.call(undo, args, OVERWRITE)
    assert restored["restored"] == ["summary"]
    assert [(r.method, r.headers.get("if-match"), r.json) for r in server.requests] == [
        ("PATCH", None, {"summary": "Standup"})
    ]
    event = fake.event("primary", STANDUP_ID)
    assert (event.fields["summary"], event.fields["location"]) == ("Standup", "Room 9")


async def test_through_the_engine_a_person_may_let_the_undo_overwrite(tmp_path: Path) -> None:
    fake = FakeCalendar(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake) as server:
        calendar = connector_for(fake, server)
        run, journal = _run(tmp_path, calendar)
        created, made = await run.call("gcalendar.create_event", NEW_EVENT)
        updated, _ = await run.call("gcalendar.update_event", {"event_id": STANDUP_ID, "summary": "Agent's"})
        fake.edit_event(OWNER, made["id"], description="A person's notes")
        fake.edit_event(OWNER, STANDUP_ID, summary="A person's")
        refused = await run.rollback(compensate=compensator_for([calendar]))
        states = {s.seq: s.rollback_state for s in refused.steps}
        assert states == {
            created: RollbackState.COMPENSATION_FAILED,
            updated: RollbackState.COMPENSATION_FAILED,
        }
        run.allow_overwrite(updated, by="a person")
        again = await run.rollback(compensate=compensator_for([calendar]))
        states = {s.seq: s.rollback_state for s in again.steps}
        assert states[updated] is RollbackState.COMPENSATED
        assert states[created] is RollbackState.COMPENSATION_FAILED  # its own decision is not taken
        assert fake.event(OWNER, STANDUP_ID).fields["summary"] == "Standup"
        assert fake.event(OWNER, made["id"]).status == "confirmed"
        run.allow_overwrite(created, by="a person")
        assert (await run.rollback(compensate=compensator_for([calendar]))).complete
        assert fake.event(OWNER, made["id"]).status == "cancelled"
        await calendar.aclose()
        journal.close()


async def test_an_update_of_an_event_the_run_created_is_undone_before_the_delete(tmp_path: Path) -> None:
    fake = FakeCalendar(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake) as server:
        calendar = connector_for(fake, server)
        before = fake.snapshot()
        run, journal = _run(tmp_path, calendar)
        first, made = await run.call("gcalendar.create_event", {**NEW_EVENT, "summary": "Draft"})
        second, _ = await run.call("gcalendar.update_event", {"event_id": made["id"], "summary": "Final"})
        third, _ = await run.call("gcalendar.update_event", {"event_id": made["id"], "location": "Room 2"})
        assert first in journal.get_step(run.id, second).requires
        assert second in journal.get_step(run.id, third).requires
        server.clear_requests()
        report = await run.rollback(compensate=compensator_for([calendar]))
        assert report.complete
        answered = [(e.request.method, e.response.status if e.response else None) for e in server.exchanges]
        # the newer update first (its ETag holds); the older one's ETag is stale by then, so a
        # 412, a read that finds the fields as that update left them, a patch; then the
        # delete, whose creation ETag is stale too: a 412, a read that finds the event as
        # the creation left it, and the delete under the ETag just read
        assert answered == [
            ("PATCH", 200), ("PATCH", 412), ("GET", 200), ("PATCH", 200),
            ("DELETE", 412), ("GET", 200), ("DELETE", 204),
        ]
        # one event, one name whichever calendar name the calls used: newest first
        touched = {s.seq: s.compensation["resources"] for s in run.steps() if s.compensation}
        assert touched == {n: [f"gcalendar:events/{made['id']}"] for n in (first, second, third)}
        assert report.waves == [[third], [second], [first]]
        assert fake.event("primary", made["id"]).status == "cancelled"
        untouched = fake.snapshot()
        del untouched["calendars"][OWNER]["events"][made["id"]]
        assert untouched == before
        assert fake.event("primary", STANDUP_ID).fields["summary"] == "Standup"
        await calendar.aclose()
        journal.close()
