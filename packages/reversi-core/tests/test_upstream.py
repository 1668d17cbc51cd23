"""The gateway's client of its upstream (``mcp/_upstream.py``): answers, timeouts, an end.

Driven against a process that reads its stdin and never answers; the answers are
handed to the connection's line reader directly, as the pipe would.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from reversi_core.mcp._upstream import UpstreamClosed, UpstreamConnection

pytestmark = pytest.mark.anyio

SILENT = [sys.executable, "-c", "import sys\nfor _ in sys.stdin: pass"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the gateway runs on asyncio


@pytest.fixture
def silent() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(SILENT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    yield process
    process.kill()
    process.wait()


async def test_each_request_is_told_once_by_answer_timeout_or_end(
    silent: subprocess.Popen[bytes],
) -> None:
    process = silent
    conn = UpstreamConnection(1, process)
    await conn.open()
    told: list[tuple[int, str]] = []
    loop = asyncio.get_running_loop()
    started = loop.time()

    def on(name: int) -> Any:
        def tell(answer: dict[str, Any] | None, error: BaseException | None) -> None:
            what = "answer" if answer is not None else type(error).__name__
            told.append((name, what))
            if error is not None:
                elapsed[name] = loop.time() - started

        return tell

    elapsed: dict[int, float] = {}
    # deadlines out of order: one timer serves them all, earliest first
    slow = conn.send_request("tools/call", {}, on(1), timeout=0.6)
    fast = conn.send_request("tools/call", {}, on(2), timeout=0.1)
    answered = conn.send_request("tools/call", {}, on(3), timeout=0.2)
    cancelled = conn.send_request("tools/call", {}, on(4), timeout=0.2)
    waiting = conn.send_request("tools/call", {}, on(5))  # no timeout
    conn._on_line(b'{"jsonrpc": "2.0", "id": %d, "result": {}}' % answered)
    conn.cancel_request(cancelled)
    await asyncio.sleep(0.9)
    assert told == [(3, "answer"), (2, "TimeoutError"), (1, "TimeoutError")]
    assert 0.1 <= elapsed[2] < 0.5
    assert 0.6 <= elapsed[1] < 0.9
    conn._on_line(b'{"jsonrpc": "2.0", "id": %d, "result": {}}' % slow)  # too late
    conn.close_pipes()
    assert told[3:] == [(5, "UpstreamClosed")]  # the one still waiting, once
    with pytest.raises(UpstreamClosed):
        conn.send_request("tools/call", {}, on(6))
    assert (fast, waiting) == (2, 5)
