"""The concurrent-change rule through a real engine: a restore never overwrites a later edit.

For every example of gcalendar.update_event (the only tool whose compensation restores
earlier state): the call, then a person's edit of what it changed made in the fake itself
(``testing.concurrent_change``), then a rollback, which must leave the step
``compensation_failed`` with a reason naming the field and the edit in place; once the
person reverts, a second rollback completes and the calendar is as before. This is the
check issue 21 adds to certification, run here on the package's own fixture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _gcal_support import TOKEN, connector_for

from reversi_connector_gcalendar.testing import (
    EXAMPLES,
    RESTORES_NOTHING,
    STANDUP_ID,
    FakeCalendar,
    concurrent_change,
    seed_example,
)
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.engine import RollbackState
from reversi_core.testing import ExampleCalls, FakeServer

pytestmark = pytest.mark.anyio


def _run(tmp_path: Path, connector: Any) -> tuple[Run, SQLiteJournal]:
    journal = SQLiteJournal.open(tmp_path / "data")
    return Run.start(journal, registry_for([connector]), executor=executor_for([connector])), journal


@pytest.mark.parametrize("index", range(len(EXAMPLES["gcalendar.update_event"])))
async def test_a_restore_refuses_a_later_edit_until_it_is_reverted(tmp_path: Path, index: int) -> None:
    fake = FakeCalendar(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake) as server:
        calendar = connector_for(fake, server)
        args = await ExampleCalls(server, calendar).prepare(EXAMPLES["gcalendar.update_event"][index])
        before = fake.snapshot()
        run, journal = _run(tmp_path, calendar)
        seq, result = await run.call("gcalendar.update_event", args)
        change = concurrent_change(server, "gcalendar.update_event", args, result)
        assert change is not None
        edited = fake.snapshot()

        refused = await run.rollback(compensate=compensator_for([calendar]))
        step = next(s for s in refused.steps if s.seq == seq)
        assert not refused.complete
        assert step.rollback_state is RollbackState.COMPENSATION_FAILED
        assert change.what in (step.rollback_reason or "")
        assert "concurrent_change" in (step.rollback_reason or "") or "someone changed" in (
            step.rollback_reason or ""
        )
        assert fake.snapshot() == edited  # the person's edit stands

        change.revert()
        done = await run.rollback(compensate=compensator_for([calendar]))
        assert done.complete
        assert fake.snapshot() == before
        await calendar.aclose()
        journal.close()


def test_only_create_event_restores_nothing() -> None:
    assert set(RESTORES_NOTHING) == {"gcalendar.create_event"}


async def test_an_update_of_an_event_the_run_created_is_undone_before_the_delete(tmp_path: Path) -> None:
    fake = FakeCalendar(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake) as server:
        calendar = connector_for(fake, server)
        before = fake.snapshot()
        run, journal = _run(tmp_path, calendar)
        first, made = await run.call(
            "gcalendar.create_event",
            {"summary": "Draft", "start": {"dateTime": "2026-12-03T10:00:00Z"},
             "end": {"dateTime": "2026-12-03T11:00:00Z"}},
        )
        second, _ = await run.call("gcalendar.update_event", {"event_id": made["id"], "summary": "Final"})
        third, _ = await run.call("gcalendar.update_event", {"event_id": made["id"], "location": "Room 2"})
        assert first in journal.get_step(run.id, second).requires
        assert second in journal.get_step(run.id, third).requires
        server.clear_requests()
        report = await run.rollback(compensate=compensator_for([calendar]))
        assert report.complete
        answered = [(e.request.method, e.response.status if e.response else None) for e in server.exchanges]
        # the newer update first (its ETag holds); the older one's ETag is stale by then, so a
        # 412, a read that finds the fields as that update left them, a patch; then the delete
        assert answered == [("PATCH", 200), ("PATCH", 412), ("GET", 200), ("PATCH", 200), ("DELETE", 204)]
        assert fake.event("primary", made["id"]).status == "cancelled"
        untouched = fake.snapshot()
        del untouched["calendars"]["agent@example.com"]["events"][made["id"]]
        assert untouched == before
        assert fake.event("primary", STANDUP_ID).fields["summary"] == "Standup"
        await calendar.aclose()
        journal.close()
