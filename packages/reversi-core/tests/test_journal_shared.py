"""Many processes on one journal at once, on both stores (docs/engine.md, JNL-5, JNL-6,
RB-9): step numbers stay dense and unique in a run that several processes write to, and
two rollbacks of one run started at the same moment in two processes never both run.

The children start together: each waits for the parent's start file, so that their
calls overlap rather than follow one another."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from _memconnector import MemConnector
from _procs import child, signal_file, wait_for_file

from reversi_core import Registry, Run, RunStatus, StepState
from reversi_core.connector import executor_for
from reversi_core.journal import Journal, RollbackState

pytestmark = pytest.mark.slow

WRITERS = 4
CALLS = 40

# Opens run_id, waits for the start file, then makes CALLS writes, each followed by a read
# of what it wrote; prints the step numbers it was given, by kind.
WRITE_AND_READ = """
import json, time
from pathlib import Path
import anyio
from _memconnector import MemConnector
from reversi_core import Run, open_journal, registry_for
from reversi_core.connector import executor_for

from _procs import signal_file

location, run_id, name = sys.argv[1], sys.argv[2], sys.argv[3]
start, calls = Path(sys.argv[4]), int(sys.argv[5])
mem = MemConnector()

async def main():
    journal = open_journal(location, create=False)
    run = Run.open(journal, registry_for([mem]), run_id, executor=executor_for([mem]))
    signal_file(start.with_name(f"ready-{name}"))
    while not start.exists():
        time.sleep(0.001)
    out = {"writes": [], "reads": [], "lost": []}
    for i in range(calls):
        key = f"{name}-{i}"
        wrote = await run.attempt("mem.put", {"key": key, "value": name})
        assert wrote.ok and wrote.journal_error is None, wrote.error
        out["writes"].append([wrote.step, key])
        read = await run.attempt("mem.get", {"key": key})
        assert read.ok, read.error
        out["lost" if read.journal_error else "reads"].append([read.step, key])
    journal.close()
    print(json.dumps(out))

anyio.run(main)
"""


@pytest.mark.req("JNL-5", "JNL-6", "CALL-4")
def test_processes_writing_one_run_at_once_get_dense_unique_step_numbers(
    tmp_path: Path, journal: Journal, registry: Registry, store: str, location: str
) -> None:
    run = Run.start(journal, registry, run_id="run_shared")
    start = tmp_path / "start"
    outputs: list[dict[str, Any]] = []
    with (
        child(WRITE_AND_READ, location, run.id, "w0", str(start), str(CALLS)) as p0,
        child(WRITE_AND_READ, location, run.id, "w1", str(start), str(CALLS)) as p1,
        child(WRITE_AND_READ, location, run.id, "w2", str(start), str(CALLS)) as p2,
        child(WRITE_AND_READ, location, run.id, "w3", str(start), str(CALLS)) as p3,
    ):
        for i, proc in enumerate((p0, p1, p2, p3)):  # every child at the start line
            wait_for_file(tmp_path / f"ready-w{i}", proc, timeout=120)
        signal_file(start)
        for proc in (p0, p1, p2, p3):
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err
            outputs.append(json.loads(out))
    steps = {s.seq: s for s in journal.list_steps(run.id)}
    kept = [(seq, key, "mem.put") for o in outputs for seq, key in o["writes"]]
    kept += [(seq, key, "mem.get") for o in outputs for seq, key in o["reads"]]
    # every call the children were told was journaled is there, under its own number,
    # and nothing else is: the numbers are 1..M, none twice, none skipped
    assert sorted(steps) == list(range(1, len(steps) + 1))
    assert sorted(seq for seq, _, _ in kept) == sorted(steps)
    for seq, key, tool in kept:
        assert (steps[seq].tool, steps[seq].args["key"]) == (tool, key)
        assert steps[seq].state is StepState.SUCCEEDED
        assert steps[seq].idempotency_key == f"reversi-{run.id}-{seq}"
    assert sum(len(o["writes"]) for o in outputs) == WRITERS * CALLS  # every write kept
    # the children really wrote at the same time: their numbers interleave (one after
    # the other, the writer would change WRITERS - 1 times along the run)
    writer = {seq: i for i, o in enumerate(outputs) for seq, _ in o["writes"]}
    order = [writer[seq] for seq in sorted(writer)]
    assert sum(a != b for a, b in itertools.pairwise(order)) > WRITERS - 1
    lost = [seq for o in outputs for seq, _ in o["lost"]]
    if store == "postgresql":
        # a read's number is reserved in the database: no other process can take it
        assert lost == []
        assert len(steps) == 2 * WRITERS * CALLS
    else:
        # SQLite reserves a read's number in the handle; another process may write under
        # it first, and then that read's record is the one lost (told, never a write's):
        # its number is the other process's step, so the run has no gap
        assert all(steps[seq].args["key"] != key for o in outputs for seq, key in o["lost"])


# Waits for the start file, then rolls the run back with compensations that take a while;
# prints "complete" or the refusal.
ROLL_BACK = """
import time
from pathlib import Path
import anyio
from _memconnector import MemConnector
from reversi_core import RollbackInProgressError, Run, compensator_for, open_journal, registry_for

from _procs import signal_file

location, run_id, start, name = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
mem = MemConnector()
inner = compensator_for([mem])

async def slow(call):
    await anyio.sleep(0.3)
    return await inner(call)

async def main():
    journal = open_journal(location, create=False)
    run = Run.open(journal, registry_for([mem]), run_id)
    signal_file(start.with_name(f"ready-{name}"))
    while not start.exists():
        time.sleep(0.001)
    try:
        report = await run.rollback(compensate=slow)
    except RollbackInProgressError as exc:
        print("refused:", exc)
    else:
        print("complete" if report.complete else "incomplete")
    journal.close()

anyio.run(main)
"""


@pytest.mark.anyio
@pytest.mark.req("RB-9")
async def test_two_processes_starting_a_rollback_at_once_run_it_once(
    tmp_path: Path, journal: Journal, registry: Registry, mem: MemConnector, location: str
) -> None:
    run = Run.start(journal, registry, executor=executor_for([mem]))
    for key in ("a", "b", "c"):
        await run.call("mem.put", {"key": key, "value": "1"})
    start = tmp_path / "start"
    with (
        child(ROLL_BACK, location, run.id, str(start), "first") as first,
        child(ROLL_BACK, location, run.id, str(start), "second") as second,
    ):
        wait_for_file(tmp_path / "ready-first", first, timeout=120)
        wait_for_file(tmp_path / "ready-second", second, timeout=120)
        signal_file(start)
        said = {}
        for proc in (first, second):
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            said[proc.pid] = out.strip()
    outcomes = sorted(said.values())
    assert outcomes[0] == "complete", said
    refused = outcomes[1]
    winner = next(pid for pid, text in said.items() if text == "complete")
    assert refused.startswith(
        f"refused: run {run.id} is being rolled back by another process (pid {winner})"
    )
    assert "refused to run at the same time" in refused
    # one rollback ran: each step compensated once, and the run is rolled back
    events = journal.list_events(run.id)
    compensated = [
        e["step"]
        for e in events
        if e["kind"] == "rollback_state" and e["detail"]["state"] == "compensated"
    ]
    assert sorted(compensated) == [1, 2, 3]
    assert [e["kind"] for e in events].count("rollback_started") == 1
    assert journal.get_run(run.id).status is RunStatus.ROLLED_BACK
    assert all(s.rollback_state is RollbackState.COMPENSATED for s in journal.list_steps(run.id))
