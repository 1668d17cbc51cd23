"""CommandCompensator: the external compensator process protocol."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _memconnector import MemConnector

from reversi_core import (
    CommandCompensator,
    CompensationCall,
    ConfigurationError,
    InvalidArgumentsError,
    Run,
    ToolError,
)
from reversi_core.connector import compensator_for

pytestmark = pytest.mark.anyio

CALL = CompensationCall(
    tool="mem.restore",
    args={"key": "a", "existed": False},
    idempotency_key="reversi-run_x-3-undo",
    run_id="run_x",
    step=3,
)


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.mark.req("CMP-1")
async def test_exit_zero_with_json_stdout_is_the_result() -> None:
    comp = CommandCompensator(py("print('working...'); print('{\"restored\": true, \"n\": 2}')"))
    assert await comp(CALL) == {"restored": True, "n": 2}


async def test_exit_zero_with_empty_or_non_json_stdout() -> None:
    assert await CommandCompensator(py("pass"))(CALL) == {}
    assert await CommandCompensator(py("print('done')"))(CALL) == {"output": "done"}


@pytest.mark.req("CMP-1")
async def test_stdin_is_exactly_the_compensation_call() -> None:
    echo = "import sys; sys.stdout.write(sys.stdin.read())"
    result = await CommandCompensator(shlex.join(py(echo)))(CALL)  # a shell-like string works too
    assert result == {
        "tool": "mem.restore",
        "args": {"key": "a", "existed": False},
        "idempotency_key": "reversi-run_x-3-undo",
        "run_id": "run_x",
        "step": 3,
        "overwrite": False,
        "timeout": 96.0,  # 80% of the default 120 s: the rest is the process's to start and answer
    }


@pytest.mark.req("CMP-1")
async def test_the_tool_is_given_a_time_limit_inside_the_commands_own() -> None:
    echo = "import sys; sys.stdout.write(sys.stdin.read())"
    sent = await CommandCompensator(py(echo), timeout=10)(CALL)
    assert sent["timeout"] == pytest.approx(8.0)
    tighter = CompensationCall(**{**CALL.__dict__, "timeout": 3.0})  # the rollback's own limit
    assert (await CommandCompensator(py(echo), timeout=10)(tighter))["timeout"] == 3.0
    assert CompensationCall.from_json(sent).timeout == pytest.approx(8.0)
    assert CompensationCall.from_json({**sent, "timeout": None}).timeout is None
    for bad in (0, -1, "5", True, float("inf")):
        with pytest.raises(InvalidArgumentsError, match="timeout: expected a positive number"):
            CompensationCall.from_json({**sent, "timeout": bad})


@pytest.mark.req("CMP-1")
async def test_a_rollbacks_time_limit_reaches_the_compensations_call_context(
    mem: MemConnector, make_run: Callable[..., Run]
) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    report = await run.rollback(compensate=compensator_for([mem]), compensation_timeout=7.5)
    assert report.complete
    [undo] = [c for c in mem.calls if c.ctx.compensation]
    assert undo.ctx.timeout == 7.5


@pytest.mark.req("CMP-1", "RB-10")
async def test_the_overwrite_decision_travels_in_the_call_and_back() -> None:
    echo = "import sys; sys.stdout.write(sys.stdin.read())"
    insisted = CompensationCall(**{**CALL.__dict__, "overwrite": True})
    sent = await CommandCompensator(py(echo))(insisted)
    assert sent["overwrite"] is True
    assert CompensationCall.from_json(sent) == CompensationCall(
        **{**insisted.__dict__, "timeout": 96.0}
    )
    older = {k: v for k, v in sent.items() if k != "overwrite"}  # an engine before RB-10
    assert CompensationCall.from_json(older).overwrite is False
    with pytest.raises(InvalidArgumentsError, match="overwrite: expected bool"):
        CompensationCall.from_json({**sent, "overwrite": "yes"})


@pytest.mark.req("CMP-1")
async def test_non_zero_exit_is_a_tool_error_with_the_last_stderr_line() -> None:
    code = (
        "import sys; print('{\"ignored\": 1}'); "
        "sys.stderr.write('warning: slow\\nreal reason: disk full\\n\\n'); sys.exit(3)"
    )
    with pytest.raises(ToolError) as info:
        await CommandCompensator(py(code))(CALL)
    assert str(info.value) == "real reason: disk full"
    assert info.value.code == "exit_3"
    with pytest.raises(ToolError, match="exit status 5, no message"):
        await CommandCompensator(py("raise SystemExit(5)"))(CALL)


@pytest.mark.req("CMP-1")
async def test_timeout_is_a_tool_error_and_the_child_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = (
        "import os, sys, time; "
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    comp = CommandCompensator(py(code), timeout=1.0)
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"did not finish mem\.restore within 1\.0 s") as info:
        await comp(CALL)
    assert time.monotonic() - started < 10
    assert info.value.code == "timeout"
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped


async def test_command_that_cannot_start_and_empty_command() -> None:
    with pytest.raises(ToolError, match="cannot start compensator") as info:
        await CommandCompensator(["/nonexistent/reversi-compensate"])(CALL)
    assert info.value.code == "spawn"
    with pytest.raises(ConfigurationError, match="empty"):
        CommandCompensator("   ")


async def test_rollback_through_a_failing_compensator_command(
    make_run: Callable[..., Run], mem: MemConnector
) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    code = (
        "import json, sys; call = json.load(sys.stdin); "
        "key, ikey = call['args']['key'], call['idempotency_key']; "
        "sys.stderr.write(f'cannot restore {key} with {ikey}\\n'); "
        "sys.exit(1)"
    )
    report = await run.rollback(compensate=CommandCompensator(py(code)))
    [out] = report.outstanding
    assert out.state == "compensation_failed"
    assert f"cannot restore a with reversi-{run.id}-1-undo" in out.reason
    assert json.loads(json.dumps(report.to_json()))["status"] == "incomplete"
