"""A console stopped (SIGINT, SIGTERM: its lifespan's shutdown) while a rollback started
from its page runs behaves as Ctrl-C on ``reversi rollback``: no compensation starts any
more, the running one finishes and is journaled, and the console exits (docs/console.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
from _console_support import TOKEN, console_client, log_in
from _memconnector import MemConnector

from reversi_core import Run, RunStatus
from reversi_core.connector import CompensationCall, compensator_for
from reversi_core.console._security import csrf_token
from reversi_core.journal import Journal, RollbackState


def test_stopping_the_console_starts_no_new_compensation_and_lets_the_running_finish(
    journal: Journal, location: str, make_run: Callable[..., Run], mem: MemConnector
) -> None:
    run = make_run()

    async def play() -> None:
        await run.call("mem.mkdir", {"path": "d"})
        await run.call("mem.put", {"key": "d/a", "value": "1"})  # compensated first

    anyio.run(play)
    inner = compensator_for([mem])
    started: list[int] = []

    async def slow(call: CompensationCall) -> dict[str, Any]:
        started.append(call.step)
        await anyio.sleep(0.5)
        return await inner(call)

    with console_client(journal, location, compensator=slow, parallel=1) as c:
        log_in(c)
        answer = c.post(
            f"/runs/{run.id}/rollback", data={"csrf": csrf_token(TOKEN)}, follow_redirects=False
        )
        assert answer.status_code == 303
        deadline = time.monotonic() + 10
        while not c.get(f"/api/runs/{run.id}/rollback").json()["running"]:
            assert time.monotonic() < deadline, "the rollback never started"
            time.sleep(0.02)
    # leaving the block shut the console down while step 2's compensation ran
    assert started == [2]  # step 1's never started
    assert journal.get_step(run.id, 2).rollback_state is RollbackState.COMPENSATED  # finished
    assert journal.get_step(run.id, 1).rollback_state is None
    assert journal.get_run(run.id).status is RunStatus.ROLLBACK_INCOMPLETE
