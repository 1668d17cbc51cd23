"""The upstream MCP server: one process spoken to in JSON-RPC lines, and its supervisor.

:class:`UpstreamConnection` is a minimal MCP client of one running server: the
``initialize`` handshake and every page of ``tools/list`` (read into SDK models once),
then one JSON line per request, its answer matched by id and handed to a callback (or a
future, for :meth:`~UpstreamConnection.request`). :class:`Upstream`
keeps one connection live: it starts the server on demand, retires a connection after
a failure (closing its stdin, then SIGTERM, then SIGKILL to its process group) and
starts a fresh one for the next call.
"""

from __future__ import annotations

import asyncio
import heapq
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, TextIO, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp_types import METHOD_NOT_FOUND
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from ..__about__ import __version__
from .._childenv import child_environment
from .._json import loads
from ..errors import ReversiError
from ..redact import scrub_command
from ._messages import PROG, describe, leaf_errors, say
from ._wire import LineReader, WriteProtocol, encode_line

__all__ = [
    "DEFAULT_START_TIMEOUT",
    "AnswerCallback",
    "Upstream",
    "UpstreamClosed",
    "UpstreamConnection",
    "UpstreamError",
    "spawn_upstream",
    "stop_process",
]

DEFAULT_START_TIMEOUT = 30.0
"""Seconds the upstream may take to start and answer ``initialize`` and ``tools/list``."""

_STOP_GRACE = 2.0
"""Seconds an upstream gets to exit after its stdin closes (and again after SIGTERM)."""

_UPSTREAM_LINE_LIMIT = 1 << 30
"""Longest line accepted from the upstream (it is trusted more than a client)."""


class UpstreamError(ReversiError):
    """The upstream server could not be started or stopped answering."""


class UpstreamClosed(Exception):
    """The upstream closed its pipes (it exited) before answering."""


AnswerCallback = Callable[[dict[str, Any] | None, BaseException | None], None]
"""Told the upstream's answer to one request: ``(answer, None)``, or ``(None, error)`` with
:class:`UpstreamClosed` or :class:`TimeoutError`."""


class UpstreamConnection:
    """One running upstream process, spoken to in JSON-RPC lines over its stdin/stdout.

    A minimal MCP client: :meth:`handshake` (``initialize``, then ``tools/list``, read
    into SDK models once), then :meth:`request` per call, which returns the upstream's
    JSON-RPC answer as parsed JSON, or :meth:`send_request`, which hands it to a callback
    from the event loop's own callback that read it (no task, no future: the gateway's
    reads are answered that way). The upstream's own requests are answered (``ping``) or
    refused; its notifications are ignored.
    """

    def __init__(self, generation: int, process: subprocess.Popen[bytes]) -> None:
        self.generation = generation
        self.pid = process.pid
        self.tools: list[types.Tool] = []
        self.stop = asyncio.Event()
        self.discarded = False
        self.closed = False
        self._process = process
        self._pending: dict[int, AnswerCallback] = {}  # request id -> who is told the answer
        # (deadline, request id) of the requests with a timeout, a heap; answered ones are
        # dropped lazily. One timer, for the earliest deadline, rather than one per request.
        self._deadlines: list[tuple[float, int]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._next_id = 0
        self._loop = asyncio.get_running_loop()
        self._out: asyncio.WriteTransport | None = None
        self._in: asyncio.BaseTransport | None = None

    async def open(self) -> None:
        """Connect the event loop to the process's pipes."""
        stdout, stdin = self._process.stdout, self._process.stdin
        if stdout is None or stdin is None:
            raise UpstreamError("the upstream process has no pipes")
        self._in, _ = await self._loop.connect_read_pipe(
            lambda: LineReader(
                self._on_line, self._on_end, self._on_oversized, _UPSTREAM_LINE_LIMIT
            ),
            stdout,
        )
        self._out, _ = await self._loop.connect_write_pipe(
            lambda: WriteProtocol(lambda: self._on_end(None)), stdin
        )

    def close_pipes(self) -> None:
        """Close both pipes (the upstream sees its stdin end); pending requests fail."""
        for transport in (self._out, self._in):
            if transport is not None:
                transport.close()
        self._on_end(None)

    async def handshake(self) -> list[types.Tool]:
        """``initialize``, ``notifications/initialized``, then every page of ``tools/list``."""
        answer = await self.request(
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": PROG, "version": __version__},
            },
        )
        result = _result_of(answer, "initialize")
        version = result.get("protocolVersion")
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise UpstreamError(f"it answered initialize with protocol version {version!r}")
        self.notify("notifications/initialized", None)
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = {"cursor": cursor} if cursor else None
            page = types.ListToolsResult.model_validate(
                _result_of(await self.request("tools/list", params), "tools/list")
            )
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    def notify(self, method: str, params: dict[str, Any] | None) -> None:
        """Send a notification (dropped when the upstream is gone)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def send_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        on_answer: AnswerCallback,
        timeout: float | None = None,
    ) -> int:
        """Send a request; ``on_answer`` is told its answer once (see :data:`AnswerCallback`).

        ``on_answer`` runs in the event loop's callback that read the answer (or saw the
        upstream close, or the ``timeout`` in seconds expire): it must not raise. Returns
        the request's id, for :meth:`cancel_request`. Raises :class:`UpstreamClosed` when
        the upstream is gone already.
        """
        if self.closed:
            raise UpstreamClosed
        self._next_id += 1
        rid = self._next_id
        self._pending[rid] = on_answer
        if timeout:
            self._add_deadline(self._loop.time() + timeout, rid)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        return rid

    def cancel_request(self, rid: int) -> None:
        """Give up on request ``rid``: its callback is never told, and the upstream hears a
        ``notifications/cancelled``, as from any MCP client (nothing when it was answered)."""
        if self._pending.pop(rid, None) is None:
            return
        if not self.closed:
            self.notify("notifications/cancelled", {"requestId": rid, "reason": "cancelled"})

    async def request(
        self, method: str, params: dict[str, Any] | None, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a request and return the upstream's answer (``result`` or ``error``).

        Raises :class:`UpstreamClosed` when the upstream goes away first and
        :class:`TimeoutError` after ``timeout`` seconds.
        """
        future: asyncio.Future[dict[str, Any]] = self._loop.create_future()

        def settle(answer: dict[str, Any] | None, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(cast(dict[str, Any], answer))

        rid = self.send_request(method, params, settle, timeout)
        try:
            return await future
        except asyncio.CancelledError:
            self.cancel_request(rid)  # nothing to tell when it was answered
            raise

    def _add_deadline(self, deadline: float, rid: int) -> None:
        heap, pending = self._deadlines, self._pending
        while heap and heap[0][1] not in pending:  # answered: nothing to time out
            heapq.heappop(heap)
        heapq.heappush(heap, (deadline, rid))
        timer = self._timer
        if timer is None or deadline < timer.when():
            if timer is not None:
                timer.cancel()
            self._timer = self._loop.call_at(deadline, self._expire)

    def _expire(self) -> None:
        """Tell every request whose deadline has come :class:`TimeoutError`; wait for the next."""
        self._timer = None
        heap, pending = self._deadlines, self._pending
        now = self._loop.time()
        while heap and (heap[0][0] <= now or heap[0][1] not in pending):
            _, rid = heapq.heappop(heap)
            on_answer = pending.pop(rid, None)
            if on_answer is not None:
                self._tell(on_answer, None, TimeoutError())
        if heap:
            self._timer = self._loop.call_at(heap[0][0], self._expire)

    def _tell(
        self, on_answer: AnswerCallback, answer: dict[str, Any] | None, error: BaseException | None
    ) -> None:
        try:
            on_answer(answer, error)
        except Exception as exc:  # a bug of the caller must not stop the reading of the pipe
            print(
                f"{PROG}: error: an upstream answer was dropped: {describe(exc)}", file=sys.stderr
            )

    def _send(self, message: dict[str, Any]) -> None:
        out = self._out
        if out is not None and not out.is_closing():
            out.write(encode_line(message))

    def _on_line(self, line: bytes) -> None:
        try:
            message = loads(line)
        except (ValueError, RecursionError):
            return  # not JSON (a stray print of the upstream), or too deep: nothing to answer
        if type(message) is not dict:
            return
        if "method" not in message:
            rid = message.get("id")
            on_answer = self._pending.pop(rid, None) if type(rid) is int else None
            if on_answer is not None:
                self._tell(on_answer, message, None)
            return
        rid = message.get("id")
        if rid is None:
            return  # a notification (log message, progress, list changed): not needed
        if message["method"] == "ping":
            self._send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            error = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
            self._send({"jsonrpc": "2.0", "id": rid, "error": error})

    def _on_oversized(self, head: bytes, size: int) -> None:
        # an answer too long to hold: the request it answers waits for its timeout
        print(
            f"{PROG}: upstream #{self.generation} sent a line of {size} bytes, over "
            f"{_UPSTREAM_LINE_LIMIT}; it was dropped",
            file=sys.stderr,
            flush=True,
        )

    def _on_end(self, exc: Exception | None) -> None:
        if self.closed:
            return
        self.closed = True
        pending, self._pending = self._pending, {}
        self._deadlines.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for on_answer in pending.values():
            self._tell(on_answer, None, UpstreamClosed())
        self.stop.set()


def _result_of(answer: dict[str, Any], method: str) -> dict[str, Any]:
    """The ``result`` of an answer to the gateway's own request; raises UpstreamError."""
    error = answer.get("error")
    if error is not None:
        message = error.get("message") if isinstance(error, dict) else error
        raise UpstreamError(f"it answered {method} with an error: {message}")
    result = answer.get("result")
    if not isinstance(result, dict):
        raise UpstreamError(f"its answer to {method} is not a JSON-RPC result")
    return result


def spawn_upstream(
    argv: list[str], env: Mapping[str, str] | None = None, errlog: TextIO | None = None
) -> subprocess.Popen[bytes]:
    """Start the upstream server with pipes on its stdin and stdout, in a session of its own.

    ``env`` is its whole environment (default: this process's without
    ``$REVERSI_JOURNAL`` and ``$REVERSI_GATEWAY_TOKEN``,
    :func:`~reversi_core._childenv.child_environment`). Its stderr goes to ``errlog``
    (default: this process's stderr). Raises
    :class:`OSError` when the command cannot be run.
    """
    stderr: Any = None
    if errlog is not None:
        with suppress(AttributeError, OSError, ValueError):
            stderr = errlog.fileno()
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=dict(env) if env is not None else child_environment(),
        start_new_session=True,
    )


async def _exit_status(process: subprocess.Popen[bytes], wait: float) -> int | None:
    """The process's exit status, waiting up to ``wait`` seconds for it to exit."""
    deadline = anyio.current_time() + wait
    while process.poll() is None:
        if anyio.current_time() >= deadline:
            break
        await anyio.sleep(0.01)
    return process.poll()


async def stop_process(process: subprocess.Popen[bytes], grace: float) -> None:
    """Wait ``grace`` seconds for the process to exit on its own, then TERM, then KILL."""
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        deadline = anyio.current_time() + grace
        while process.poll() is None:
            if anyio.current_time() >= deadline:
                break
            await anyio.sleep(0.01)
        else:
            return


class Upstream:
    """The upstream MCP server: started on demand, restarted after it dies or hangs.

    Each connection is held by a task of ``task_group``, which stops its process when
    the connection is retired. :meth:`connection` returns the live one, starting a new
    process when there is none; :meth:`discard` retires one after a failure, and the
    next :meth:`connection` starts a fresh process. ``first`` is a process already
    started (the command line starts it before the slow imports, to save start-up time).
    """

    def __init__(
        self,
        argv: list[str],
        task_group: anyio.abc.TaskGroup,
        *,
        env: Mapping[str, str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        errlog: TextIO | None = None,
        first: subprocess.Popen[bytes] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.env = env
        self._tg = task_group
        self._start_timeout = start_timeout
        self._errlog = errlog or sys.stderr
        self._lock = anyio.Lock()
        self._current: UpstreamConnection | None = None
        self._generation = 0
        self._first = first
        self.on_connect: list[Callable[[UpstreamConnection], None]] = []

    @property
    def description(self) -> str:
        """The upstream command line for messages and the run's label, credentials hidden
        (:func:`reversi_core.redact.scrub_command`)."""
        return scrub_command(self.argv)

    @property
    def live(self) -> UpstreamConnection | None:
        """The current connection if it is usable now, else ``None`` (no waiting)."""
        current = self._current
        if current is not None and not current.discarded and not current.closed:
            return current
        return None

    async def connection(self) -> UpstreamConnection:
        """The live connection, started (or restarted) now if needed.

        Raises :class:`UpstreamError` when the upstream cannot be started.
        """
        current = self.live
        if current is not None:
            return current
        async with self._lock:
            current = self._current
            if current is not None and not current.discarded:
                if not current.closed:
                    return current
                self.discard(current, "it exited", restart=False)
            self._generation += 1
            try:
                process, self._first = self._first, None
                if process is None:
                    process = spawn_upstream(self.argv, self.env, self._errlog)
                conn: UpstreamConnection = await self._tg.start(
                    self._hold, self._generation, process
                )
            except Exception as exc:
                raise UpstreamError(
                    f"the upstream server ({self.description}) could not be started: "
                    f"{describe(exc)}"
                ) from None
            self._current = conn
            for callback in self.on_connect:
                callback(conn)
            return conn

    def discard(self, conn: UpstreamConnection, why: str, *, restart: bool = True) -> None:
        """Retire ``conn`` (its process is stopped in the background); say why on stderr."""
        if conn.discarded:
            return
        conn.discarded = True
        conn.stop.set()
        if self._current is conn:
            self._current = None
        say(
            f"upstream #{conn.generation} retired ({why}); a new one starts for the next call",
            self._errlog,
        )
        if restart:
            self._tg.start_soon(self._prestart)

    async def _prestart(self) -> None:
        try:
            await self.connection()
        except UpstreamError as exc:
            say(str(exc), self._errlog)

    async def aclose(self) -> None:
        """Stop the live connection, if any."""
        if self._current is not None:
            self._current.discarded = True
            self._current.stop.set()
            self._current = None

    async def _hold(
        self,
        generation: int,
        process: subprocess.Popen[bytes],
        *,
        task_status: anyio.abc.TaskStatus[UpstreamConnection] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        started = False
        try:
            conn = UpstreamConnection(generation, process)
            try:
                await conn.open()
                with anyio.fail_after(self._start_timeout):
                    conn.tools = await conn.handshake()
                started = True
                task_status.started(conn)
                await conn.stop.wait()
            finally:
                conn.close_pipes()
        except Exception as exc:
            if not started:
                if any(isinstance(leaf, TimeoutError) for leaf in leaf_errors(exc)):
                    raise UpstreamError(
                        f"no answer to initialize/tools/list within {self._start_timeout} s"
                    ) from None
                if isinstance(exc, UpstreamClosed) or process.poll() is not None:
                    code = await _exit_status(process, 1.0)
                    if code is None:
                        raise UpstreamError("it closed its output before answering") from None
                    raise UpstreamError(f"it exited with status {code} before answering") from None
                raise
            say(f"upstream #{generation} ended: {describe(exc)}", self._errlog)
        finally:
            with anyio.CancelScope(shield=True):
                await stop_process(process, _STOP_GRACE)
