"""Cases found by trying to break the tools: each stays fixed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _memconnector import MemConnector

from reversi_core import (
    CommandCompensator,
    CompensationCall,
    EffectUncertainError,
    InvalidArgumentsError,
    JournalError,
    Run,
    SQLiteJournal,
    ToolError,
    compensator_for,
)

MakeRun = Callable[..., Run]
CALL = CompensationCall(
    tool="mem.restore", args={"key": "a"}, idempotency_key="k", run_id="r", step=1
)


@pytest.mark.anyio
@pytest.mark.parametrize("attempt", range(5))
async def test_a_compensator_that_never_reads_stdin_is_judged_by_its_exit_status(
    attempt: int,
) -> None:
    ok = await CommandCompensator(["true"])(CALL)
    assert ok == {}
    with pytest.raises(ToolError) as failed:
        await CommandCompensator(["false"])(CALL)
    assert str(failed.value) == "exit status 1, no message"
    script = "import sys; sys.stdin.close(); sys.stderr.write('plain reason\\n'); sys.exit(3)"
    with pytest.raises(ToolError) as reason:
        await CommandCompensator([sys.executable, "-c", script])(CALL)
    assert str(reason.value) == "plain reason"


@pytest.mark.anyio
async def test_only_idempotent_tools_run_as_compensations(mem: MemConnector) -> None:
    compensate = compensator_for([mem])
    call = CompensationCall(
        tool="mem.put", args={"key": "a", "value": "x"}, idempotency_key="k", run_id="r", step=1
    )
    with pytest.raises(InvalidArgumentsError, match="not a compensation"):
        await compensate(call)
    assert mem.data == {}


def test_an_empty_file_is_not_turned_into_a_journal_by_a_reader(tmp_path: Path) -> None:
    (tmp_path / "journal.sqlite3").write_bytes(b"")
    with pytest.raises(JournalError, match="is empty"):
        SQLiteJournal.open(tmp_path, create=False)
    assert (tmp_path / "journal.sqlite3").read_bytes() == b""


@pytest.mark.anyio
async def test_resolve_refuses_a_result_that_makes_invalid_compensation_arguments(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    mem.fault("mem.put", "uncertain", times=1)
    with pytest.raises(EffectUncertainError):
        await run.call("mem.put", {"key": "a", "value": "1"})
    with pytest.raises(InvalidArgumentsError, match=r"args\.previous"):
        run.resolve(1, applied=True, result={"previous": 5, "existed": True})
    assert run.journal.get_step(run.id, 1).resolution is None
