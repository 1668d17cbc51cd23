"""Crash recovery and sharing, with real child processes (docs/engine.md, "A call" rule 6,
"A rollback" on concurrent rollbacks, "Durability and sharing"), on both stores: the
children open the journal's ``location`` (a data directory or a PostgreSQL URL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _memconnector import MemConnector
from _procs import child, kill9, wait_for_file

from reversi_core import (
    CompensationCall,
    Registry,
    RollbackInProgressError,
    Run,
    RunClosedError,
    RunStatus,
    StepState,
    compensator_for,
    open_journal,
)
from reversi_core.connector import executor_for
from reversi_core.journal import Journal, RollbackState

pytestmark = pytest.mark.anyio

# Starts run_crash, makes one put that succeeds, then a put whose tool signals and hangs.
CALL_THEN_HANG = """
import time
from pathlib import Path
import anyio
from _memconnector import MemConnector
from _procs import signal_file
from reversi_core import Run, open_journal, registry_for
from reversi_core.connector import executor_for

data, flag = sys.argv[1], Path(sys.argv[2])
mem = MemConnector()

def hang(args, ctx):
    if args["key"] == "b":
        signal_file(flag, str(ctx.step))
        time.sleep(600)

mem.hooks["mem.put"] = hang

async def main():
    journal = open_journal(data)
    run = Run.start(journal, registry_for([mem]), executor=executor_for([mem]), run_id="run_crash")
    await run.call("mem.put", {"key": "a", "value": "1"})
    await run.call("mem.put", {"key": "b", "value": "2"})

anyio.run(main)
"""


@pytest.mark.req("JNL-1", "CALL-3")
async def test_killed_process_leaves_an_uncertain_step_that_can_be_resolved(
    tmp_path: Path, registry: Registry, location: str
) -> None:
    data, flag = location, tmp_path / "in-call"
    with child(CALL_THEN_HANG, str(data), str(flag)) as proc:
        wait_for_file(flag, proc)
        assert flag.read_text() == "2"
        kill9(proc)  # between the intent and the outcome of step 2
    journal = open_journal(data, create=False)
    try:
        steps = journal.list_steps("run_crash")
        assert [s.state for s in steps] == [StepState.SUCCEEDED, StepState.UNCERTAIN]
        lost = steps[1]
        assert f"pid {proc.pid}" in (lost.error or "")
        assert "may or may not have taken effect" in (lost.error or "")
        assert any(
            e["kind"] == "recovered" and e["step"] == 2 for e in journal.list_events("run_crash")
        )

        mem = MemConnector()
        mem.data = {"a": "1", "b": "2"}  # the backend as the dead process left it
        run = Run.open(journal, registry, "run_crash")
        first = await run.rollback(compensate=compensator_for([mem]))
        assert not first.complete
        [out] = first.outstanding
        assert (out.step, out.state) == (2, "uncertain")
        assert f"pid {proc.pid}" in out.reason
        assert [c.args["key"] for c in mem.calls_of("mem.restore")] == [
            "a"
        ]  # b is never guessed at

        run.resolve(2, applied=True, result={"previous": None, "existed": False})
        second = await run.rollback(compensate=compensator_for([mem]))
        assert second.complete
        assert second.compensated_now == [2]
        assert mem.data == {}
        assert run.record.status is RunStatus.ROLLED_BACK
    finally:
        journal.close()


@pytest.mark.req("JNL-1")
async def test_pending_step_of_a_live_owner_is_left_pending(
    tmp_path: Path, registry: Registry, location: str
) -> None:
    data, flag = location, tmp_path / "in-call"
    with child(CALL_THEN_HANG, str(data), str(flag)) as proc:
        wait_for_file(flag, proc)
        journal = open_journal(data, create=False)  # the owner is alive and mid-call
        try:
            step = journal.get_step("run_crash", 2)
            assert step.state is StepState.PENDING
            assert step.owner is not None
            assert f":{proc.pid}:" in step.owner
            assert not any(e["kind"] == "recovered" for e in journal.list_events("run_crash"))
            # a rollback meanwhile reports the call as still running and guesses nothing
            mem = MemConnector()
            report = await Run.open(journal, registry, "run_crash").rollback(
                compensate=compensator_for([mem])
            )
            assert [(o.step, o.state) for o in report.outstanding] == [(2, "pending")]
            assert "still running in another process" in report.outstanding[0].reason
            assert [c.args["key"] for c in mem.calls_of("mem.restore")] == ["a"]
        finally:
            journal.close()
        kill9(proc)
    journal = open_journal(data, create=False)  # now the owner is gone
    try:
        assert journal.get_step("run_crash", 2).state is StepState.UNCERTAIN
    finally:
        journal.close()


# Reads with deferred records, a write, a hanging write, then more reads; then waits.
READS_AROUND_WRITES = """
import time
from pathlib import Path
import anyio
from _memconnector import MemConnector
from _procs import signal_file
from reversi_core import Run, open_journal, registry_for
from reversi_core.connector import executor_for

data, flag = sys.argv[1], Path(sys.argv[2])
mem = MemConnector()

def hang(args, ctx):
    if args["key"] == "hang":
        signal_file(flag, str(ctx.step))
        time.sleep(600)

mem.hooks["mem.put"] = hang

async def main():
    journal = open_journal(data)
    run = Run.start(journal, registry_for([mem]), executor=executor_for([mem]), run_id="run_crash")
    run.defer_read_records(600.0, lambda step, exc: None)  # only writes flush them here
    await run.call("mem.get", {"key": "a"})          # 1
    await run.call("mem.get", {"key": "b"})          # 2
    await run.call("mem.put", {"key": "a", "value": "1"})  # 3
    await run.call("mem.get", {"key": "a"})          # 4
    await run.call("mem.get", {"key": "c"})          # 5
    await run.call("mem.put", {"key": "hang", "value": "2"})  # 6: its intent, then it hangs

anyio.run(main)
"""


@pytest.mark.req("CALL-3", "CALL-4", "JNL-1")
async def test_a_killed_process_loses_at_most_the_records_of_reads(
    tmp_path: Path, location: str
) -> None:
    data, flag = location, tmp_path / "in-call"
    with child(READS_AROUND_WRITES, str(data), str(flag)) as proc:
        wait_for_file(flag, proc)
        assert flag.read_text() == "6"
        kill9(proc)
    journal = open_journal(data, create=False)
    try:
        steps = [(s.seq, s.tool, s.state) for s in journal.list_steps("run_crash")]
    finally:
        journal.close()
    # every read answered before a write's intent was journaled with it; the writes are
    # all there; nothing but reads is missing, and no step number was reused
    assert steps == [
        (1, "mem.get", StepState.SUCCEEDED),
        (2, "mem.get", StepState.SUCCEEDED),
        (3, "mem.put", StepState.SUCCEEDED),
        (4, "mem.get", StepState.SUCCEEDED),
        (5, "mem.get", StepState.SUCCEEDED),
        (6, "mem.put", StepState.UNCERTAIN),
    ]


READS_THEN_KILLED = """
from pathlib import Path
import anyio, os, signal
from _memconnector import MemConnector
from reversi_core import Run, open_journal, registry_for
from reversi_core.connector import executor_for

data = sys.argv[1]
mem = MemConnector()

async def main():
    journal = open_journal(data)
    run = Run.start(journal, registry_for([mem]), executor=executor_for([mem]), run_id="run_crash")
    run.defer_read_records(600.0, lambda step, exc: None)
    await run.call("mem.put", {"key": "a", "value": "1"})  # 1
    await run.call("mem.get", {"key": "a"})  # 2: answered, its record still queued
    await run.call("mem.get", {"key": "b"})  # 3: likewise
    os.kill(os.getpid(), signal.SIGKILL)

anyio.run(main)
"""


@pytest.mark.req("CALL-4")
async def test_reads_answered_after_the_last_write_are_what_a_kill_can_lose(
    tmp_path: Path, location: str
) -> None:
    data = location
    with child(READS_THEN_KILLED, str(data)) as proc:
        proc.wait(timeout=60)
    journal = open_journal(data, create=False)
    try:
        steps = [(s.seq, s.tool, s.state) for s in journal.list_steps("run_crash")]
    finally:
        journal.close()
    assert steps == [(1, "mem.put", StepState.SUCCEEDED)]  # the write is kept, the reads lost


HOLD_ROLLBACK = """
import time
from pathlib import Path
from _procs import signal_file
from reversi_core import open_journal

data, run_id, flag = sys.argv[1], sys.argv[2], Path(sys.argv[3])
journal = open_journal(data, create=False)
journal.start_rollback(run_id)
signal_file(flag)
time.sleep(600)
"""


@pytest.mark.req("RB-9")
async def test_second_rollback_refuses_while_another_process_rolls_back(
    tmp_path: Path, journal: Journal, registry: Registry, mem: MemConnector, location: str
) -> None:
    run = Run.start(journal, registry, executor=executor_for([mem]))
    await run.call("mem.put", {"key": "a", "value": "1"})
    flag = tmp_path / "holding"
    with child(HOLD_ROLLBACK, location, run.id, str(flag)) as proc:
        wait_for_file(flag, proc)
        with pytest.raises(RollbackInProgressError) as info:
            await run.rollback(compensate=compensator_for([mem]))
        assert f"being rolled back by another process (pid {proc.pid})" in str(info.value)
        assert "refused" in str(info.value)
        assert mem.calls_of("mem.restore") == []
        assert run.record.status is RunStatus.ROLLING_BACK
        with pytest.raises(RunClosedError):  # a run being rolled back takes no new calls
            await run.call("mem.put", {"key": "b", "value": "2"})
        kill9(proc)
    report = await run.rollback(
        compensate=compensator_for([mem])
    )  # the dead owner's lock is released
    assert report.complete
    assert mem.data == {}


# Starts run_rb with three puts and rolls it back; the third compensation (step 1) hangs.
ROLLBACK_THEN_HANG = """
import time
from pathlib import Path
import anyio
from _memconnector import MemConnector
from _procs import signal_file
from reversi_core import Run, compensator_for, open_journal, registry_for
from reversi_core.connector import executor_for

data, flag = sys.argv[1], Path(sys.argv[2])
mem = MemConnector()

def hang(args, ctx):
    if ctx.step == 1:
        signal_file(flag)
        time.sleep(600)

mem.hooks["mem.restore"] = hang

async def main():
    journal = open_journal(data)
    run = Run.start(journal, registry_for([mem]), executor=executor_for([mem]), run_id="run_rb")
    for key in ("a", "b", "c"):
        await run.call("mem.put", {"key": key, "value": "1"})
    await run.rollback(compensate=compensator_for([mem]))

anyio.run(main)
"""


@pytest.mark.req("RB-7", "JNL-1")
async def test_rollback_killed_midway_is_finished_by_the_next_without_rerunning(
    tmp_path: Path, registry: Registry, location: str
) -> None:
    data, flag = location, tmp_path / "undoing-1"
    with child(ROLLBACK_THEN_HANG, str(data), str(flag)) as proc:
        wait_for_file(flag, proc)
        kill9(proc)
    journal = open_journal(data, create=False)
    try:
        run = Run.open(journal, registry, "run_rb")
        assert run.record.status is RunStatus.ROLLBACK_INCOMPLETE  # the dead owner's lock released
        assert {s.seq: s.rollback_state for s in run.steps()} == {
            1: None,
            2: RollbackState.COMPENSATED,
            3: RollbackState.COMPENSATED,
        }
        ran: list[int] = []
        inner = compensator_for([MemConnector()])

        async def counting(call: CompensationCall) -> dict[str, Any]:
            ran.append(call.step)
            return await inner(call)

        report = await run.rollback(compensate=counting)
        assert report.complete
        assert ran == [1]
        assert report.compensated_now == [1]
        assert any(e["kind"] == "rollback_abandoned" for e in journal.list_events("run_rb"))
    finally:
        journal.close()


# Appends steps to run_child until the parent creates the stop file, then one more;
# prints how many.
APPEND_UNTIL_STOPPED = """
from pathlib import Path
import anyio
from _memconnector import MemConnector
from _procs import signal_file
from reversi_core import Run, open_journal, registry_for
from reversi_core.connector import executor_for

data, flag, stop = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
mem = MemConnector()

async def main():
    journal = open_journal(data)
    run = Run.start(journal, registry_for([mem]), executor=executor_for([mem]), run_id="run_child")
    n = 0
    while not stop.exists():
        n += 1
        await run.call("mem.put", {"key": f"c{n}", "value": "x"})
        if n == 1:
            signal_file(flag)
    n += 1  # one more, begun after the parent finished
    await run.call("mem.put", {"key": f"c{n}", "value": "x"})
    print(n)

anyio.run(main)
"""


@pytest.mark.req("JNL-5")
async def test_two_processes_writing_one_journal_lose_nothing(
    tmp_path: Path, journal: Journal, registry: Registry, mem: MemConnector, location: str
) -> None:
    flag, stop = tmp_path / "started", tmp_path / "stop"
    count = 150
    with child(APPEND_UNTIL_STOPPED, location, str(flag), str(stop)) as proc:
        wait_for_file(flag, proc)
        run = Run.start(journal, registry, executor=executor_for([mem]), run_id="run_parent")
        for i in range(count):
            await run.call("mem.put", {"key": f"p{i}", "value": "y"})
        stop.touch()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    written = int(out.strip())
    assert written > 2
    mine = journal.list_steps("run_parent")
    theirs = journal.list_steps("run_child")
    assert [s.seq for s in mine] == list(range(1, count + 1))
    assert [s.seq for s in theirs] == list(range(1, written + 1))
    assert all(s.state is StepState.SUCCEEDED and s.compensation for s in mine + theirs)
    assert [s.args["key"] for s in theirs] == [f"c{i}" for i in range(1, written + 1)]
    # the child kept writing for the whole time the parent wrote
    assert theirs[0].started_at < mine[0].started_at
    assert theirs[-1].started_at > mine[-1].started_at
