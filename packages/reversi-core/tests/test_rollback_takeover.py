"""A rollback taken over by another process writes nothing more (RB-9, docs/engine.md,
"Run status and concurrency").

A process may be judged gone while it still runs: on PostgreSQL when its connection is
lost (the server lets go of its owner lock), on SQLite when a process with the same
host name cannot see its pid (another pid namespace). Another process then marks its
rollback abandoned and takes it over. From then on every write of the first rollback
(a step's rollback state, its ``compensation_started`` event, the end) is refused with
``RollbackInProgressError``, and the rollback starts no more compensations: nothing it
does overwrites the new owner's record.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from _procs import child, signal_file, wait_for_file
from _stackconnector import StackBackend, StackConnector
from _stores import sql

from reversi_core import (
    CompensationCall,
    JournalError,
    RollbackInProgressError,
    Run,
    RunStatus,
    compensator_for,
    executor_for,
    open_journal,
    registry_for,
)
from reversi_core.journal import Journal, RollbackState

OTHER = "another-host.invalid:4242:987654"
"""The owner of the rollback that took over: a process of another host."""

TAKEN_BY_OTHER = re.escape(
    "this rollback was taken over by another process (pid 4242) on host another-host.invalid"
)


def take_over(
    location: str, run_id: str, owner: str | None = OTHER, status: str = "rolling_back"
) -> None:
    """What a process that judged this one gone leaves in the run's row (its own hand)."""
    value = "NULL" if owner is None else f"'{owner}'"
    sql(
        location,
        f"UPDATE runs SET status = '{status}', rollback_owner = {value} WHERE id = 'run_a'",
    )


def run_row(location: str, run_id: str) -> list[tuple[Any, ...]]:
    return sql(location, f"SELECT status, rollback_owner FROM runs WHERE id = '{run_id}'")


@pytest.mark.req("RB-9")
def test_every_write_of_a_rollback_taken_over_is_refused(journal: Journal, location: str) -> None:
    journal.create_run("run_a", ["x:y"], None)
    seq = journal.record_rejected("run_a", "mem.put", "reversible", "x:y", {}, None, "no", None)
    journal.start_rollback("run_a")
    events = journal.list_events("run_a")
    take_over(location, "run_a")
    with pytest.raises(RollbackInProgressError, match=TAKEN_BY_OTHER) as info:
        journal.set_rollback_state("run_a", seq, RollbackState.NOT_APPLICABLE, "rejected")
    assert "starts no more compensations" in str(info.value)
    with pytest.raises(RollbackInProgressError, match=TAKEN_BY_OTHER):
        journal.add_event("run_a", seq, "compensation_started", {"tool": "mem.restore"})
    with pytest.raises(RollbackInProgressError, match=TAKEN_BY_OTHER):
        journal.finish_rollback("run_a", complete=True)
    # nothing of the first rollback overwrote the new owner's record
    assert run_row(location, "run_a") == [("rolling_back", OTHER)]
    assert journal.list_events("run_a") == events
    assert journal.get_step("run_a", seq).rollback_state is None
    # the new owner ended it; a rollback of this handle may start again (its claim was let go)
    take_over(location, "run_a", None, "rollback_incomplete")
    journal.start_rollback("run_a")
    journal.set_rollback_state("run_a", seq, RollbackState.NOT_APPLICABLE, "rejected")
    journal.finish_rollback("run_a", complete=True)
    assert journal.get_run("run_a").status is RunStatus.ROLLED_BACK


@pytest.mark.req("RB-9")
def test_a_rollback_ended_by_the_process_that_took_it_over_is_not_ended_again(
    journal: Journal, location: str
) -> None:
    journal.create_run("run_a", ["x:y"], None)
    journal.start_rollback("run_a")
    take_over(location, "run_a", None, "rollback_incomplete")  # taken over, and ended since
    with pytest.raises(RollbackInProgressError) as info:
        journal.finish_rollback("run_a", complete=True)
    assert "taken over by another process, which has ended it since (the run is " in str(info.value)
    assert "rollback_incomplete now)" in str(info.value)
    assert journal.get_run("run_a").status is RunStatus.ROLLBACK_INCOMPLETE


class TakingOver:
    """A compensator whose first compensation finds its rollback taken over meanwhile."""

    def __init__(self, backend: StackBackend, location: str, run_id: str) -> None:
        self.inner = compensator_for([StackConnector(backend)])
        self.location, self.run_id = location, run_id
        self.started: list[int] = []

    async def __call__(self, call: CompensationCall) -> dict[str, Any]:
        self.started.append(call.step)
        if len(self.started) == 1:
            sql(
                self.location,
                f"UPDATE runs SET rollback_owner = '{OTHER}' WHERE id = '{self.run_id}'",
            )
        return await self.inner(call)


@pytest.mark.anyio
@pytest.mark.req("RB-9")
@pytest.mark.parametrize("parallel", [1, 3])
async def test_a_rollback_taken_over_mid_way_starts_no_more_compensations(
    journal: Journal, location: str, parallel: int
) -> None:
    backend = StackBackend()
    stk = StackConnector(backend)
    run = Run.start(
        journal,
        registry_for([StackConnector]),
        scope=["stk:write", "stk:read"],
        executor=executor_for([stk]),
    )
    for i in range(6):
        await run.call("stk.push", {"res": f"r{i}", "token": f"t{i}"})
    compensate = TakingOver(backend, location, run.id)
    with pytest.raises(RollbackInProgressError, match=TAKEN_BY_OTHER):
        await run.rollback(compensate=compensate, parallel=parallel)
    assert compensate.started == [6]  # none started once the takeover was seen
    assert run_row(location, run.id) == [("rolling_back", OTHER)]  # never overwritten
    kinds = [e["kind"] for e in journal.list_events(run.id)]
    assert kinds.count("compensation_started") == 1
    assert "rollback_finished" not in kinds
    assert all(s.rollback_state is None for s in run.steps())


# -- PostgreSQL: a lost connection -----------------------------------------------------------


def _wait_released(location: str, owner: str) -> None:
    """Until no session holds ``owner``'s lock (a terminated backend ends a moment later)."""
    from reversi_core.journal._pg_conn import advisory_key

    key = advisory_key("owner", owner)
    deadline = time.monotonic() + 30
    while sql(
        location,
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
        "AND ((classid::bigint << 32) | objid::bigint) = %s",
        [key],
    ) != [(0,)]:
        assert time.monotonic() < deadline, "the server kept a terminated session's lock"
        time.sleep(0.01)


def _rollback_lock_holders(location: str, schema: str, run_id: str) -> list[tuple[Any, ...]]:
    from reversi_core.journal._pg_conn import advisory_key

    return sql(
        location,
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND ((classid::bigint << 32) | objid::bigint) = %s",
        [advisory_key("rollback", schema, run_id)],
    )


def _lose_connection(location: str, journal: Any) -> None:
    """Terminate the journal's backend, as a network cut does, and wait until it is gone."""
    pid = journal._conn.info.backend_pid
    sql(location, "SELECT pg_terminate_backend(%s)", [pid])
    _wait_released(location, journal._owner)


# Another host's process (its host name patched): opens the journal, which finds the
# first rollback abandoned, takes the rollback over, says so, and ends it when told.
TAKE_OVER = """
import socket
from pathlib import Path
from reversi_core import open_journal
from _procs import signal_file

socket.gethostname = lambda: "other-host.invalid"
location, took, finish = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
journal = open_journal(location, create=False)
journal.start_rollback("run_a")
signal_file(took, journal._owner)
while not finish.exists():
    import time; time.sleep(0.005)
journal.set_rollback_state("run_a", 1, None, "left for a person")
journal.finish_rollback("run_a", complete=False)
journal.close()
print("finished")
"""


@pytest.mark.req("RB-9", "JNL-7")
def test_a_rollback_whose_connection_was_lost_and_was_taken_over_writes_nothing_more(
    pg_location: str, tmp_path: Path
) -> None:
    first = open_journal(pg_location)
    try:
        first.create_run("run_a", ["x:y"], None)
        first.record_rejected("run_a", "mem.put", "reversible", "x:y", {}, None, "no", None)
        first.start_rollback("run_a")
        _lose_connection(pg_location, first)
        took, finish = tmp_path / "took", tmp_path / "finish"
        with child(TAKE_OVER, pg_location, str(took), str(finish)) as other:
            wait_for_file(took, other, timeout=120)
            owner = took.read_text()
            assert owner.startswith("other-host.invalid:")
            # the first call after the cut says so; the next ones connect again and see it
            with pytest.raises(JournalError, match="connection to the server was lost"):
                first.set_rollback_state("run_a", 1, RollbackState.NOT_APPLICABLE, "rejected")
            with pytest.raises(RollbackInProgressError) as info:
                first.set_rollback_state("run_a", 1, RollbackState.NOT_APPLICABLE, "rejected")
            assert f"pid {owner.split(':')[1]}) on host other-host.invalid" in str(info.value)
            with pytest.raises(RollbackInProgressError):
                first.add_event("run_a", 1, "compensation_started", {"tool": "mem.restore"})
            with pytest.raises(RollbackInProgressError):
                first.finish_rollback("run_a", complete=True)
            assert run_row(pg_location, "run_a") == [("rolling_back", owner)]
            signal_file(finish)
            out, err = other.communicate(timeout=120)
            assert other.returncode == 0, err
            assert out.strip() == "finished"
        record = first.get_run("run_a")
        assert record.status is RunStatus.ROLLBACK_INCOMPLETE  # the new owner's end, kept
        assert first.get_step("run_a", 1).rollback_reason == "left for a person"
        assert [e["kind"] for e in first.list_events("run_a")] == [
            "rollback_started",
            "rollback_abandoned",
            "rollback_started",
            "rollback_state",
            "rollback_finished",
        ]
    finally:
        first.close()


@pytest.mark.req("RB-9")
def test_a_rollback_whose_connection_was_lost_takes_its_lock_again_and_carries_on(
    pg_location: str,
) -> None:
    journal = open_journal(pg_location)
    try:
        journal.create_run("run_a", ["x:y"], None)
        journal.record_rejected("run_a", "mem.put", "reversible", "x:y", {}, None, "no", None)
        journal.start_rollback("run_a")
        schema = journal.schema  # type: ignore[attr-defined]
        _lose_connection(pg_location, journal)
        assert _rollback_lock_holders(pg_location, schema, "run_a") == []
        with pytest.raises(JournalError, match="connection to the server was lost"):
            journal.set_rollback_state("run_a", 1, RollbackState.NOT_APPLICABLE, "rejected")
        journal.set_rollback_state("run_a", 1, RollbackState.NOT_APPLICABLE, "rejected")
        new_pid = journal._conn.info.backend_pid  # type: ignore[attr-defined]
        assert _rollback_lock_holders(pg_location, schema, "run_a") == [(new_pid,)]
        journal.finish_rollback("run_a", complete=True)
        assert journal.get_run("run_a").status is RunStatus.ROLLED_BACK
        assert _rollback_lock_holders(pg_location, schema, "run_a") == []
    finally:
        journal.close()


@pytest.mark.req("RB-9")
def test_a_rollback_whose_lock_another_handle_took_meanwhile_is_refused(
    pg_location: str,
) -> None:
    import psycopg

    from reversi_core.journal._pg_conn import advisory_key

    journal = open_journal(pg_location)
    try:
        journal.create_run("run_a", ["x:y"], None)
        journal.record_rejected("run_a", "mem.put", "reversible", "x:y", {}, None, "no", None)
        journal.start_rollback("run_a")
        schema = journal.schema  # type: ignore[attr-defined]
        _lose_connection(pg_location, journal)
        # another journal handle of this process (same owner) took the run's lock meanwhile
        with psycopg.connect(pg_location, autocommit=True) as other:
            other.execute(
                "SELECT pg_advisory_lock(%s)", [advisory_key("rollback", schema, "run_a")]
            )
            with pytest.raises(JournalError, match="connection to the server was lost"):
                journal.get_run("run_a")
            with pytest.raises(RollbackInProgressError) as info:
                journal.set_rollback_state("run_a", 1, RollbackState.NOT_APPLICABLE, "rejected")
            assert "taken over by another journal handle of this process" in str(info.value)
            with pytest.raises(RollbackInProgressError):
                journal.finish_rollback("run_a", complete=True)
            assert journal.get_step("run_a", 1).rollback_state is None
            assert journal.get_run("run_a").status is RunStatus.ROLLING_BACK
    finally:
        journal.close()
