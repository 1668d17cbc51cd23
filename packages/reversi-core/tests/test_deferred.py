"""Read-only steps journaled later, several in one commit (docs/engine.md, CALL-4), on
both stores (``journal`` and ``location`` are parametrized in conftest.py).

"One commit" is seen from inside for SQLite (its COMMIT statements, traced) and from
the rows for PostgreSQL: the rows one transaction wrote share its id (``xmin``,
https://www.postgresql.org/docs/current/ddl-system-columns.html)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memconnector import MemConnector
from _stores import is_postgres, sql

from reversi_core import JournalError, Run, SQLiteJournal, StepState
from reversi_core.connector import CallContext
from reversi_core.journal import Journal, StepRecord, open_journal
from reversi_core.journal._deferred import DEFERRED_STEPS_LIMIT, DeferredSteps

Lost = list[tuple[int, str]]


def _read(run_id: str, seq: int, result: dict[str, Any] | None = None) -> StepRecord:
    return StepRecord(
        run_id=run_id,
        seq=seq,
        tool="mem.get",
        effect="read_only",
        permission="x:y",
        args={"key": "a"},
        reason=None,
        state=StepState.SUCCEEDED,
        idempotency_key=SQLiteJournal.forward_key(run_id, seq),
        started_at=1.0,
        finished_at=2.0,
        result=result if result is not None else {"value": seq},
        requires=[],
    )


def _seen_elsewhere(location: str, run_id: str) -> list[int]:
    """The step numbers another journal handle sees now."""
    other = open_journal(location, create=False)
    try:
        return [s.seq for s in other.list_steps(run_id)]
    finally:
        other.close()


def _commits(journal: Journal) -> list[str]:
    """The COMMITs a SQLite journal runs from now on (PostgreSQL: an empty list, unused)."""
    commits: list[str] = []
    if isinstance(journal, SQLiteJournal):
        journal._conn.set_trace_callback(lambda s: commits.append(s) if s == "COMMIT" else None)
    return commits


def _transactions(location: str, run_id: str, seqs: list[int]) -> list[str]:
    """PostgreSQL: the ids of the transactions that wrote these steps, in step order."""
    rows = sql(
        location,
        "SELECT xmin::text FROM steps WHERE run_id = %s AND seq = ANY(%s) ORDER BY seq",
        [run_id, seqs],
    )
    return [r[0] for r in rows]


def _defer_reads(journal: Journal, run_id: str, n: int, lost: Lost) -> list[int]:
    seqs = []
    for _ in range(n):
        seq = journal.reserve_step(run_id)
        journal.defer_step(_read(run_id, seq), lambda step, exc: lost.append((step.seq, str(exc))))
        seqs.append(seq)
    return seqs


@pytest.mark.req("CALL-4")
def test_deferred_steps_wait_for_a_flush_and_are_written_in_one_commit(
    journal: Journal, location: str
) -> None:
    journal.create_run("run_a", ["x:y"], None)
    commits = _commits(journal)
    lost: Lost = []
    assert _defer_reads(journal, "run_a", 3, lost) == [1, 2, 3]
    assert commits == []  # SQLite: reserving writes nothing (PostgreSQL bumps the counter)
    assert _seen_elsewhere(location, "run_a") == []  # nothing written yet
    journal.flush()
    assert _seen_elsewhere(location, "run_a") == [1, 2, 3]
    if is_postgres(location):
        assert len(set(_transactions(location, "run_a", [1, 2, 3]))) == 1
    else:
        assert commits == ["COMMIT"]
    journal.flush()  # nothing queued: nothing written
    assert commits == ([] if is_postgres(location) else ["COMMIT"])
    assert lost == []
    step = journal.get_step("run_a", 2)
    assert (step.state, step.result, step.owner) == (StepState.SUCCEEDED, {"value": 2}, None)


@pytest.mark.req("CALL-3", "CALL-4")
def test_a_write_commits_the_deferred_reads_before_its_intent(
    journal: Journal, location: str
) -> None:
    journal.create_run("run_a", ["x:y"], None)
    _defer_reads(journal, "run_a", 2, [])
    statements: list[str] = []
    if isinstance(journal, SQLiteJournal):
        journal._conn.set_trace_callback(statements.append)
    write = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
    assert write.seq == 3
    assert _seen_elsewhere(location, "run_a") == [1, 2, 3]
    if is_postgres(location):  # the reads in one transaction, the intent in another, later
        reads, reads_too, intent = _transactions(location, "run_a", [1, 2, 3])
        assert reads == reads_too != intent
        assert int(reads) < int(intent)
        return
    kinds = [
        "read" if s.endswith("ON CONFLICT DO NOTHING") else "intent" if "'pending'" in s else s
        for s in statements
        if s.startswith(("INSERT", "COMMIT", "BEGIN")) and not s.startswith("INSERT INTO chain")
    ]  # each step's chain record rides in its step's transaction (test_chain.py)
    # the reads are committed first, in a transaction of their own
    reads = ["BEGIN IMMEDIATE", "read", "read", "COMMIT"]
    assert kinds == [*reads, "BEGIN IMMEDIATE", "intent", "COMMIT"]


@pytest.mark.req("CALL-4")
def test_reading_or_closing_the_journal_writes_what_is_deferred(location: str) -> None:
    journal = open_journal(location)
    journal.create_run("run_a", ["x:y"], None)
    _defer_reads(journal, "run_a", 1, [])
    assert [s.seq for s in journal.list_steps("run_a")] == [1]  # a read of the same handle
    _defer_reads(journal, "run_a", 1, [])
    assert journal.get_run("run_a").step_count == 2
    _defer_reads(journal, "run_a", 1, [])
    journal.close()
    assert _seen_elsewhere(location, "run_a") == [1, 2, 3]


@pytest.mark.req("CALL-4")
def test_a_full_queue_is_written_at_once(journal: Journal, location: str) -> None:
    journal.create_run("run_a", ["x:y"], None)
    commits = _commits(journal)
    _defer_reads(journal, "run_a", DEFERRED_STEPS_LIMIT - 1, [])
    assert _seen_elsewhere(location, "run_a") == []
    _defer_reads(journal, "run_a", 1, [])
    assert commits == ([] if is_postgres(location) else ["COMMIT"])
    assert _seen_elsewhere(location, "run_a") == list(range(1, DEFERRED_STEPS_LIMIT + 1))
    journal.create_run("run_b", ["x:y"], None)
    big = {"blob": "x" * (1 << 20)}  # one result over the byte bound
    journal.defer_step(_read("run_b", journal.reserve_step("run_b"), big), lambda s, e: None)
    assert _seen_elsewhere(location, "run_b") == [1]


@pytest.mark.req("CALL-4")
def test_a_deferred_step_is_journaled_as_it_was_when_deferred(journal: Journal) -> None:
    journal.create_run("run_a", ["x:y"], None)
    result = {"value": "as answered"}
    journal.defer_step(_read("run_a", journal.reserve_step("run_a"), result), lambda s, e: None)
    result["value"] = "changed by the caller afterwards"
    assert journal.get_step("run_a", 1).result == {"value": "as answered"}


@pytest.mark.req("CALL-4")
def test_sqlite_a_step_number_taken_by_another_handle_loses_only_that_record(
    sqlite_journal: SQLiteJournal, data_dir: Path
) -> None:
    journal = sqlite_journal
    journal.create_run("run_a", ["x:y"], None)
    lost: Lost = []
    first, second = _defer_reads(journal, "run_a", 2, lost)
    other = SQLiteJournal.open(data_dir, create=False)
    try:  # another handle writes under the second number meanwhile
        other.record_rejected("run_a", "mem.nope", "unknown", "unknown", {}, None, "no", None)
        other.record_rejected("run_a", "mem.nope", "unknown", "unknown", {}, None, "no", None)
    finally:
        other.close()
    journal.flush()
    assert [seq for seq, _ in lost] == [first, second]
    assert all("written by another journal handle meanwhile" in why for _, why in lost)
    assert [s.state for s in journal.list_steps("run_a")] == [StepState.REJECTED] * 2


@pytest.mark.req("CALL-4", "JNL-6")
def test_postgres_a_reserved_step_number_is_never_taken_by_another_handle(
    pg_location: str,
) -> None:
    journal = open_journal(pg_location)
    try:
        journal.create_run("run_a", ["x:y"], None)
        lost: Lost = []
        assert _defer_reads(journal, "run_a", 2, lost) == [1, 2]
        other = open_journal(pg_location, create=False)
        try:  # another handle writes meanwhile: it gets the numbers after the reserved ones
            assert [
                other.record_rejected(
                    "run_a", "mem.nope", "unknown", "unknown", {}, None, "no", None
                )
                for _ in range(2)
            ] == [3, 4]
        finally:
            other.close()
        journal.flush()
        assert lost == []
        states = [(s.seq, s.state) for s in journal.list_steps("run_a")]
        assert states == [
            (1, StepState.SUCCEEDED),
            (2, StepState.SUCCEEDED),
            (3, StepState.REJECTED),
            (4, StepState.REJECTED),
        ]
    finally:
        journal.close()


@pytest.mark.req("CALL-4", "JNL-4")
def test_a_store_that_fails_reports_every_deferred_record_lost(
    journal: Journal, location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal.create_run("run_a", ["x:y"], None)
    lost: Lost = []
    _defer_reads(journal, "run_a", 2, lost)

    def full(c: sqlite3.Connection, items: list[Any], *heads: Any) -> list[Any]:
        raise sqlite3.OperationalError("database or disk is full")

    if is_postgres(location):  # the server refuses the statement (division_by_zero)
        from reversi_core.journal import _pg_steps

        failing = "SELECT " + ", ".join(["%s"] * 16) + ", %s::integer[], %s, 1 / 0"
        monkeypatch.setattr(_pg_steps, "INSERT_DEFERRED", failing)
        expected = "division by zero"
    else:
        monkeypatch.setattr(DeferredSteps, "write", staticmethod(full))
        expected = "OperationalError: database or disk is full"
    journal.flush()  # reported, not raised
    assert [seq for seq, _ in lost] == [1, 2]
    assert all(expected in why for _, why in lost), lost
    monkeypatch.undo()
    assert journal.list_steps("run_a") == []  # nothing half written
    write = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
    assert write.seq == 3  # the lost numbers are not handed out again


@pytest.mark.req("CALL-4", "JNL-2")
def test_under_power_the_deferred_reads_ride_on_the_next_writes_fsync(data_dir: Path) -> None:
    journal = SQLiteJournal.open(data_dir, durability="power")
    try:
        journal.create_run("run_a", ["x:y"], None)
        _defer_reads(journal, "run_a", 2, [])
        modes: list[str] = []
        current = ["FULL"]

        def trace(statement: str) -> None:
            if statement.startswith("PRAGMA synchronous="):
                current[0] = statement.split("=", 1)[1]
            elif statement == "COMMIT":
                modes.append(current[0])

        journal._conn.set_trace_callback(trace)
        journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        assert modes == ["NORMAL", "FULL"]  # the reads to the log, then the intent synced
    finally:
        journal.close()


# -- through the engine ------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.req("CALL-4")
async def test_a_run_that_defers_journals_its_reads_within_the_delay(
    journal: Journal, location: str, make_run: Any, mem: MemConnector
) -> None:
    run: Run = make_run()
    lost: list[tuple[StepRecord, JournalError]] = []
    run.defer_read_records(0.05, lambda step, exc: lost.append((step, exc)))
    told = []
    for _ in range(3):
        outcome = await run.attempt("mem.get", {"key": "a"}, answer=told.append)
        assert outcome.ok
        assert outcome.journal_error is None
    assert [o.step for o in told] == [1, 2, 3]
    assert _seen_elsewhere(location, run.id) == []  # answered, not yet journaled
    await anyio.sleep(0.3)  # the delay, and room for a loaded machine
    assert _seen_elsewhere(location, run.id) == [1, 2, 3]  # the timer wrote them
    assert lost == []


@pytest.mark.anyio
@pytest.mark.req("CALL-3", "CALL-4")
async def test_a_run_that_defers_has_its_reads_journaled_before_a_writes_intent(
    journal: Journal, location: str, make_run: Any, mem: MemConnector
) -> None:
    run: Run = make_run()
    run.defer_read_records(600.0, lambda step, exc: None)  # the timer never fires here
    seen: list[list[tuple[int, StepState]]] = []

    def look(data: dict[str, Any], ctx: CallContext) -> None:
        other = open_journal(location, create=False)
        try:
            seen.append([(s.seq, s.state) for s in other.list_steps(run.id)])
        finally:
            other.close()

    mem.hooks["mem.put"] = look
    await run.attempt("mem.get", {"key": "a"})
    await run.attempt("mem.get", {"key": "b"})
    wrote = await run.attempt("mem.put", {"key": "a", "value": "1"})
    assert wrote.ok
    assert seen == [[(1, StepState.SUCCEEDED), (2, StepState.SUCCEEDED), (3, StepState.PENDING)]]


@pytest.mark.req("CALL-4")
def test_deferred_reads_written_together_each_get_their_chain_record(journal: Journal) -> None:
    """The queue is written with one INSERT per pattern of empty columns (SQLite); each
    step still gets its edges and its ``recorded`` chain record, in order, and the run
    verifies (test_chain.py)."""
    from dataclasses import replace

    journal.create_run("run_a", ["x:y"], None)
    first = journal.reserve_step("run_a")
    journal.defer_step(_read("run_a", first), lambda s, e: None)
    second = journal.reserve_step("run_a")  # another pattern: a reason and an error
    step = replace(_read("run_a", second), reason="look", error="no such key", result=None)
    journal.defer_step(replace(step, state=StepState.FAILED), lambda s, e: None)
    third = journal.reserve_step("run_a")  # one that requires the first
    journal.defer_step(replace(_read("run_a", third), requires=[first]), lambda s, e: None)
    journal.flush()
    steps = journal.list_steps("run_a")
    assert [(s.seq, s.state, s.reason, s.error) for s in steps] == [
        (first, StepState.SUCCEEDED, None, None),
        (second, StepState.FAILED, "look", "no such key"),
        (third, StepState.SUCCEEDED, None, None),
    ]
    assert steps[2].requires == [first]
    records = journal.run_chain("run_a")
    assert [(r.kind, r.step) for r in records if r.kind == "recorded"] == [
        ("recorded", first),
        ("recorded", second),
        ("recorded", third),
    ]
    result = journal.verify_run("run_a")
    assert result.status == "ok", result.describe()


def test_sqlite_a_taken_step_number_still_leaves_the_others_chained(
    sqlite_journal: SQLiteJournal, data_dir: Path
) -> None:
    """When one row of the batch cannot be written, the batch is undone and written
    row by row: the others get their chain records, the lost one none."""
    journal = sqlite_journal
    journal.create_run("run_a", ["x:y"], None)
    lost: Lost = []
    first, second, third = _defer_reads(journal, "run_a", 3, lost)
    other = SQLiteJournal.open(data_dir, create=False)
    try:  # another handle writes under the first number meanwhile
        other.record_rejected("run_a", "mem.nope", "unknown", "unknown", {}, None, "no", None)
    finally:
        other.close()
    journal.flush()
    assert [seq for seq, _ in lost] == [first]
    recorded = [r.step for r in journal.run_chain("run_a") if r.kind == "recorded"]
    assert recorded == [second, third]
    assert [s.state for s in journal.list_steps("run_a")] == [
        StepState.REJECTED,
        StepState.SUCCEEDED,
        StepState.SUCCEEDED,
    ]
    result = journal.verify_run("run_a")
    assert result.status == "ok", result.describe()
