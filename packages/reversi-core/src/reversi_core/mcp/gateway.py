"""The gateway: an MCP server (stdio) in front of an upstream MCP server it starts.

One downstream session is one :class:`~reversi_core.engine.Run`. Every ``tools/call``
goes through :meth:`Run.call` (tool known, permission in scope, arguments valid,
approval, durable intent), is forwarded to the upstream, and its outcome is journaled
before the answer goes back down::

    client -> _Downstream -> Gateway.relay_call -> Run.call -> UpstreamConnection -> upstream

The steady-state path is a relay of raw JSON-RPC lines: a ``tools/call`` is read with
:func:`json.loads`, only the fields the journal needs are looked at, and the upstream's
result is forwarded as it came, with Reversi's ``_meta`` keys added. No SDK model is
built for it, and no thread is involved: both pipes are watched by the event loop. The
MCP SDK's server handles the rest of the downstream protocol (the ``initialize``
handshake, ``tools/list``, ``ping``, the 2026-07-28 envelope checks) and the calls of
tools that need a person's approval (elicitation, ``input_required``). See "How a call
flows" in ``docs/gateway.md``.

What the gateway lists downstream: the upstream's tools that have a manifest, with MCP
annotations from the manifest's effect. An upstream tool whose input schema differs
from its manifest's (:func:`~reversi_core.registry.schema_hash`) is *drifted*: it is
reported on stderr at start and every call to it is refused until the manifests are
regenerated.

How the upstream's answers map onto step states (the upstream is expected to speak the
convention of :mod:`reversi_core.mcp.serve`):

* a result without ``isError``: ``succeeded``; the result is its ``structuredContent``
  (or ``{"content": <text>}`` when it has none);
* ``isError`` with ``_meta["reversi/outcome"] == "uncertain"``: ``uncertain``;
* ``isError`` with ``_meta["reversi/outcome"] == "failed"``: ``failed`` (nothing changed);
* ``isError`` without ``reversi/outcome`` (not a Reversi server): ``uncertain`` for a
  writing tool, ``failed`` for a read-only one;
* the upstream closes the connection (it died) or does not answer within the call
  timeout: ``uncertain`` for a writing tool, ``failed`` for a read-only one; the
  upstream is then restarted for the next call.

Every downstream result carries ``_meta`` ``reversi/run``, ``reversi/step`` (when a
step was journaled) and ``reversi/outcome`` (``succeeded``, ``failed``, ``uncertain`` or
``rejected``). See ``docs/gateway.md``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import math
import os
import secrets
import shlex
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

import anyio
import anyio.abc
import mcp_types as types
import yaml
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from ..__about__ import __version__
from ..connector import CallContext
from ..engine import ApprovalDecision, ApprovalRequest, Run
from ..errors import (
    ApprovalDenied,
    CallRejected,
    ConfigurationError,
    EffectUncertainError,
    InvalidArgumentsError,
    ManifestError,
    PermissionDenied,
    ReversiError,
    RunClosedError,
    ToolError,
    UnknownToolError,
)
from ..journal import Durability, Journal, SQLiteJournal
from ..manifest import Approval, Manifest
from ..redact import scrub, scrub_json
from ..registry import Registry, canonical_json, schema_hash
from .serve import IDEMPOTENCY_KEY_META, OUTCOME_META, RUN_ID_META, tool_annotations
from .serve import STEP_META as UPSTREAM_STEP_META

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "REASON_META",
    "RUN_META",
    "STEP_META",
    "Gateway",
    "GatewayConfig",
    "ToolIndex",
    "Upstream",
    "UpstreamConnection",
    "UpstreamError",
    "load_manifest_dir",
    "serve_gateway",
    "spawn_upstream",
]

RUN_META = "reversi/run"
"""``_meta`` key of every downstream ``CallToolResult``: the run id."""

STEP_META = "reversi/step"
"""``_meta`` key of a downstream ``CallToolResult``: the step journaled for the call."""

REASON_META = "reversi/reason"
"""Optional ``_meta`` key of a downstream ``tools/call``: the agent's reason, journaled."""

DRIFTED_META = "reversi/drifted"
"""``_meta`` key of a listed tool: true when calls to it are refused for drift."""

DEFAULT_CALL_TIMEOUT = 120.0
"""Seconds the gateway waits for the upstream's answer to one call."""

DEFAULT_START_TIMEOUT = 30.0
"""Seconds the upstream may take to start and answer ``initialize`` and ``tools/list``."""

MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")

PROG = "reversi-gateway"

_MAYBE = "the change may or may not have happened"


# -- manifests ---------------------------------------------------------------------


def load_manifest_dir(directory: str | Path) -> Registry:
    """Read every ``*.json``, ``*.yaml`` and ``*.yml`` in ``directory`` into a registry.

    Each file holds a list of manifest objects (what ``reversi-connectors manifests
    NAME`` prints) or a single one. Raises :class:`ConfigurationError` for a missing or
    empty directory or an unreadable file, and :class:`ManifestError` (naming the tool
    and, in the problem, its file) for an invalid manifest set.
    """
    path = Path(directory)
    if not path.is_dir():
        raise ConfigurationError(f"--manifests {path}: not a directory")
    files = sorted(p for p in path.iterdir() if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    if not files:
        raise ConfigurationError(
            f"--manifests {path}: no *.json, *.yaml or *.yml files; write them with "
            f"'reversi-connectors manifests NAME > {path}/NAME.json'"
        )
    raw: list[Any] = []
    origin: dict[str, Path] = {}
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
            data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            problem = " ".join(str(exc).split())
            raise ConfigurationError(f"--manifests: cannot read {file}: {problem}") from None
        items = data if isinstance(data, list) else [data]
        for item in items:
            if not isinstance(item, dict):
                raise ConfigurationError(
                    f"--manifests: {file} must hold a list of manifest objects, "
                    f"found {type(item).__name__}"
                )
            name = item.get("name")
            if isinstance(name, str):
                origin.setdefault(name, file)
            raw.append(item)
    try:
        return Registry.from_manifests(raw)
    except ManifestError as exc:
        where = origin.get(exc.tool)
        suffix = f" (in {where})" if where is not None else ""
        raise ManifestError(exc.tool, f"{exc.problem}{suffix}") from None


# -- configuration -------------------------------------------------------------------


@dataclass(frozen=True)
class GatewayConfig:
    """Everything the gateway needs, as parsed by ``reversi-gateway``.

    ``scope`` ``None`` means the registry's default scope. ``pre_approved`` lists tools
    whose ``approval: always`` calls are approved in advance (``--approve TOOL``).
    """

    registry: Registry
    data_dir: Path
    upstream_command: str
    upstream_args: tuple[str, ...] = ()
    scope: frozenset[str] | None = None
    durability: Durability = Durability.PROCESS
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT
    pre_approved: frozenset[str] = frozenset()
    upstream_env: Mapping[str, str] | None = None

    @property
    def upstream_argv(self) -> list[str]:
        """The upstream command line."""
        return [self.upstream_command, *self.upstream_args]


def _say(message: str, stream: TextIO | None = None) -> None:
    print(f"{PROG}: {scrub(message)}", file=stream or sys.stderr, flush=True)


def _leaf_errors(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(_leaf_errors(inner))
        return out
    return [exc]


def _describe(exc: BaseException) -> str:
    parts = []
    for leaf in _leaf_errors(exc):
        text = str(leaf) or type(leaf).__name__
        known = isinstance(leaf, ReversiError | MCPError)
        parts.append(text if known else f"{type(leaf).__name__}: {text}")
    return "; ".join(parts)


# -- JSON-RPC lines over pipes ---------------------------------------------------------


_LINE_LIMIT = 1 << 30
"""Longest JSON-RPC line accepted from a pipe."""

_STOP_GRACE = 2.0
"""Seconds an upstream gets to exit after its stdin closes (and again after SIGTERM)."""

_encode = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
"""Compact JSON, ASCII only (a lone surrogate read from a peer cannot break the encoding)."""


def _line(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as a line of bytes."""
    return (_encode(message) + "\n").encode("ascii")


class _LineProtocol(asyncio.Protocol):
    """Splits what a pipe delivers into lines; calls ``on_line`` for each, ``on_end`` once.

    The callbacks run in the event loop's own callback, with no task switch in between:
    a message is handled as soon as the loop sees the bytes.
    """

    def __init__(
        self, on_line: Callable[[bytes], None], on_end: Callable[[Exception | None], None]
    ) -> None:
        self._on_line = on_line
        self._on_end = on_end
        self._parts: list[bytes] = []
        self._size = 0
        self._ended = False
        self._transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        end = data.find(b"\n")
        if end < 0:
            self._parts.append(data)
            self._size += len(data)
            if self._size > _LINE_LIMIT:
                self._end(ValueError(f"a JSON-RPC line longer than {_LINE_LIMIT} bytes"))
                if self._transport is not None:
                    self._transport.close()
            return
        if self._parts:
            self._parts.append(data)
            data = b"".join(self._parts)
            self._parts.clear()
            self._size = 0
            end = data.find(b"\n")
        start = 0
        on_line = self._on_line
        while end >= 0:
            if end > start:
                on_line(data[start:end])
            start = end + 1
            end = data.find(b"\n", start)
        if start < len(data):
            self._parts.append(data[start:])
            self._size = len(data) - start

    def eof_received(self) -> bool | None:
        self._end(None)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc)

    def _end(self, exc: Exception | None) -> None:
        if not self._ended:
            self._ended = True
            self._on_end(exc)


class _WriteProtocol(asyncio.streams.FlowControlMixin):
    """The write side of a pipe: flow control for ``drain``, and a call when it breaks."""

    def __init__(self, on_lost: Callable[[], None]) -> None:
        super().__init__()
        self._on_lost = on_lost

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._on_lost()


class _Out:
    """Where lines to a peer go."""

    def write(self, data: bytes) -> None:
        """Queue ``data`` (dropped once the peer is gone)."""
        raise NotImplementedError

    async def drain(self) -> None:
        """Wait while the peer is not reading fast enough."""

    def close(self) -> None:
        """Close the descriptor (after what was queued)."""


class _PipeOut(_Out):
    """Lines to a pipe or socket watched by the event loop."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._transport = writer.transport

    def write(self, data: bytes) -> None:
        if not self._transport.is_closing():
            self._transport.write(data)

    async def drain(self) -> None:
        if not self._transport.is_closing():
            with suppress(ConnectionError):
                await self._writer.drain()

    def close(self) -> None:
        self._transport.close()


class _BlockingOut(_Out):
    """Lines written straight to a descriptor the event loop cannot watch (a file, a tty)."""

    def __init__(self, fd: int, on_lost: Callable[[], None]) -> None:
        self._fd = fd
        self._on_lost = on_lost
        self._broken = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._broken:
            try:
                view = view[os.write(self._fd, view) :]
            except InterruptedError:
                continue
            except OSError:
                self._broken = True
                self._on_lost()

    def close(self) -> None:
        with suppress(OSError):
            os.close(self._fd)


async def _connect_reader(fd: int, protocol: _LineProtocol) -> Callable[[], None]:
    """Feed ``protocol`` from ``fd``; returns a function that stops reading.

    A pipe or a socket is watched by the event loop. Anything else (a regular file, a
    terminal) is read by a daemon thread that hands each chunk to the loop.
    """
    loop = asyncio.get_running_loop()
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        transport, _ = await loop.connect_read_pipe(
            lambda: protocol, os.fdopen(fd, "rb", buffering=0)
        )
        return transport.close

    def read() -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                loop.call_soon_threadsafe(protocol.data_received, chunk)
        except OSError:
            pass
        with suppress(RuntimeError):  # the loop is already closed
            loop.call_soon_threadsafe(protocol.connection_lost, None)

    threading.Thread(target=read, name="reversi-gateway-stdin", daemon=True).start()
    return lambda: None


async def _connect_writer(fd: int, on_lost: Callable[[], None]) -> _Out:
    """Lines to ``fd``: through the event loop for a pipe or socket, else blocking writes."""
    loop = asyncio.get_running_loop()
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return _BlockingOut(fd, on_lost)
    transport, protocol = await loop.connect_write_pipe(
        lambda: _WriteProtocol(on_lost), os.fdopen(fd, "wb", buffering=0)
    )
    return _PipeOut(asyncio.StreamWriter(transport, protocol, None, loop))


# -- the upstream ------------------------------------------------------------------


class UpstreamError(ReversiError):
    """The upstream server could not be started or stopped answering."""


class _UpstreamClosed(Exception):
    """The upstream closed its pipes (it exited) before answering."""


def _expire(future: asyncio.Future[dict[str, Any]]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class UpstreamConnection:
    """One running upstream process, spoken to in JSON-RPC lines over its stdin/stdout.

    A minimal MCP client: :meth:`handshake` (``initialize``, then ``tools/list``, read
    into SDK models once), then :meth:`request` per call, which returns the upstream's
    JSON-RPC answer as parsed JSON. The upstream's own requests are answered (``ping``)
    or refused; its notifications are ignored.
    """

    def __init__(self, generation: int, process: subprocess.Popen[bytes]) -> None:
        self.generation = generation
        self.pid = process.pid
        self.tools: list[types.Tool] = []
        self.stop = asyncio.Event()
        self.discarded = False
        self.closed = False
        self._process = process
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
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
            lambda: _LineProtocol(self._on_line, self._on_end), stdout
        )
        self._out, _ = await self._loop.connect_write_pipe(
            lambda: _WriteProtocol(lambda: self._on_end(None)), stdin
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

    async def request(
        self, method: str, params: dict[str, Any] | None, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a request and return the upstream's answer (``result`` or ``error``).

        Raises :class:`_UpstreamClosed` when the upstream goes away first and
        :class:`TimeoutError` after ``timeout`` seconds.
        """
        if self.closed:
            raise _UpstreamClosed
        self._next_id += 1
        rid = self._next_id
        future: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._pending[rid] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        timer = self._loop.call_later(timeout, _expire, future) if timeout else None
        try:
            return await future
        except asyncio.CancelledError:
            answered = future.done() and not future.cancelled()
            if not answered and not self.closed:  # tell the upstream, as an MCP client does
                self.notify("notifications/cancelled", {"requestId": rid, "reason": "cancelled"})
            raise
        finally:
            self._pending.pop(rid, None)
            if timer is not None:
                timer.cancel()

    def _send(self, message: dict[str, Any]) -> None:
        out = self._out
        if out is not None and not out.is_closing():
            out.write(_line(message))

    def _on_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return  # not JSON (a stray print of the upstream): nothing to answer
        if type(message) is not dict:
            return
        if "method" not in message:
            rid = message.get("id")
            future = self._pending.get(rid) if type(rid) is int else None
            if future is not None and not future.done():
                future.set_result(message)
            return
        rid = message.get("id")
        if rid is None:
            return  # a notification (log message, progress, list changed): not needed
        if message["method"] == "ping":
            self._send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            error = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
            self._send({"jsonrpc": "2.0", "id": rid, "error": error})

    def _on_end(self, exc: Exception | None) -> None:
        if self.closed:
            return
        self.closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(_UpstreamClosed())
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

    Its stderr goes to ``errlog`` (default: this process's stderr). Raises
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
        env=dict(env) if env is not None else None,
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


async def _stop_process(process: subprocess.Popen[bytes], grace: float) -> None:
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
        """The upstream command line, for messages."""
        return shlex.join(self.argv)

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
                    f"{_describe(exc)}"
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
        _say(
            f"upstream #{conn.generation} retired ({why}); a new one starts for the next call",
            self._errlog,
        )
        if restart:
            self._tg.start_soon(self._prestart)

    async def _prestart(self) -> None:
        try:
            await self.connection()
        except UpstreamError as exc:
            _say(str(exc), self._errlog)

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
                if any(isinstance(leaf, TimeoutError) for leaf in _leaf_errors(exc)):
                    raise UpstreamError(
                        f"no answer to initialize/tools/list within {self._start_timeout} s"
                    ) from None
                if isinstance(exc, _UpstreamClosed) or process.poll() is not None:
                    code = await _exit_status(process, 1.0)
                    if code is None:
                        raise UpstreamError("it closed its output before answering") from None
                    raise UpstreamError(f"it exited with status {code} before answering") from None
                raise
            _say(f"upstream #{generation} ended: {_describe(exc)}", self._errlog)
        finally:
            with anyio.CancelScope(shield=True):
                await _stop_process(process, _STOP_GRACE)


# -- the tool index ----------------------------------------------------------------


@dataclass
class ToolIndex:
    """What the gateway serves, computed once per upstream (re)start.

    ``listed``: the downstream tool definitions; ``refusals``: tool name -> the reason
    every call to it is refused (drifted, or declared by a manifest but not offered by
    the upstream); ``drifted``: the drifted names; ``hidden``: upstream tools without a
    manifest; ``missing``: manifests without an upstream tool.
    """

    listed: list[types.Tool]
    refusals: dict[str, str]
    drifted: list[str]
    hidden: list[str]
    missing: list[str]

    @classmethod
    def build(cls, registry: Registry, upstream_tools: Iterable[types.Tool]) -> ToolIndex:
        """Match the upstream's tools against the manifests (see the class docstring)."""
        listed: list[types.Tool] = []
        refusals: dict[str, str] = {}
        drifted: list[str] = []
        hidden: list[str] = []
        offered: set[str] = set()
        for tool in upstream_tools:
            if tool.name not in registry:
                hidden.append(tool.name)
                continue
            manifest = registry.get(tool.name)
            offered.add(tool.name)
            upstream_hint = tool.annotations.open_world_hint if tool.annotations else None
            annotations = tool_annotations(
                manifest, open_world=True if upstream_hint is None else upstream_hint
            )
            meta = dict(tool.meta or {})
            meta.update(
                {
                    "reversi/effect": manifest.effect.value,
                    "reversi/permission": manifest.permission,
                    "reversi/approval": manifest.approval.value,
                }
            )
            description = tool.description or manifest.description or None
            if schema_hash(tool.input_schema) != schema_hash(manifest.input_schema):
                drifted.append(tool.name)
                refusals[tool.name] = (
                    f"{tool.name} is refused: the upstream's input schema for it differs from "
                    f"its manifest (the connector changed since the manifests were written). "
                    f"Regenerate them with 'reversi-connectors manifests {manifest.connector}' "
                    f"into the --manifests directory and restart reversi-gateway"
                )
                meta[DRIFTED_META] = True
                description = "[refused until the manifests are regenerated] " + (description or "")
            listed.append(
                tool.model_copy(
                    update={
                        "annotations": annotations,
                        "meta": meta,
                        "description": description,
                    }
                )
            )
        missing = sorted(n for n in registry.names if n not in offered)
        for name in missing:
            refusals[name] = (
                f"{name} is refused: it has a manifest but the upstream server does not offer it"
            )
        return cls(listed, refusals, sorted(drifted), sorted(hidden), missing)


# -- the gateway -------------------------------------------------------------------


@dataclass(slots=True)
class _CallState:
    """Per-call facts shared by the handler, the executor, the approver and the journal.

    ``ctx`` is the SDK's request context for a call the SDK served (approval), ``None``
    on the raw path. ``raw`` is the upstream's ``CallToolResult`` as parsed JSON and
    ``structured`` the JSON result handed to the engine (from ``raw``).
    """

    ctx: ServerRequestContext[Any] | None = None
    step: int | None = None
    answer: types.ElicitResult | None = None  # an approval answered by input_required
    raw: dict[str, Any] | None = None
    structured: dict[str, Any] | None = None
    reply: Callable[[dict[str, Any]], None] | None = None
    """Set on the raw path: sends a result to the client at once (a read's, before its
    outcome is journaled); :attr:`replied` then says it was sent."""
    replied: bool = False


_CURRENT: ContextVar[_CallState | None] = ContextVar("reversi_gateway_call", default=None)


class _StepRecordingJournal:
    """Delegates to the real journal; remembers the step number of a rejected call."""

    def __init__(self, inner: Journal) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        setattr(self, name, value)  # found once, then a plain attribute
        return value

    def record_rejected(
        self,
        run_id: str,
        tool: str,
        effect: str,
        permission: str,
        args: dict[str, Any],
        reason: str | None,
        error: str,
        approval: dict[str, Any] | None,
    ) -> int:
        seq = self._inner.record_rejected(
            run_id, tool, effect, permission, args, reason, error, approval
        )
        state = _CURRENT.get()
        if state is not None:
            state.step = seq
        return seq


_ELICIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve this call",
            "description": "Leave checked to let the call run; uncheck to refuse it.",
            "default": True,
        },
        "note": {
            "type": "string",
            "title": "Note (optional)",
            "description": "Kept in the journal with your answer.",
        },
    },
}


def _text(content: Any) -> str:
    """The text blocks of a raw ``content`` list, joined by newlines."""
    if type(content) is not list:
        return ""
    return "\n".join(
        block["text"]
        for block in content
        if type(block) is dict and block.get("type") == "text" and type(block.get("text")) is str
    )


def _client_name(ctx: ServerRequestContext[Any]) -> str:
    params = ctx.session.client_params
    if params is not None and params.client_info.name:
        return params.client_info.name
    return "the MCP client"


def _declares_elicitation(ctx: ServerRequestContext[Any]) -> bool:
    caps = ctx.session.client_capabilities
    if caps is None or caps.elicitation is None:
        return False
    return caps.elicitation.form is not None or caps.elicitation.url is None  # {} means form


def _modern(ctx: ServerRequestContext[Any]) -> bool:
    """True on a 2026-07-28 connection: the server asks by ``input_required`` results."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


_APPROVAL_INPUT = "reversi/approval"
"""Key of the approval elicitation in an ``InputRequiredResult`` (2026-07-28 clients)."""


class Gateway:
    """The downstream MCP server around one lazily started :class:`Run`.

    :meth:`relay_call` serves a ``tools/call`` given as parsed JSON and returns the
    ``CallToolResult`` as a JSON object; :meth:`build_server` is the SDK server for the
    rest of the protocol.
    """

    def __init__(
        self,
        config: GatewayConfig,
        journal: Journal,
        upstream: Upstream,
        index: ToolIndex,
        *,
        errlog: TextIO | None = None,
    ) -> None:
        self.config = config
        self.registry = config.registry
        self.journal = journal
        self.upstream = upstream
        self.index = index
        self._errlog = errlog or sys.stderr
        self._run: Run | None = None
        self._writes = {m.name: m.writes for m in self.registry}
        self._asks = {m.name for m in self.registry if m.approval is Approval.ALWAYS}
        self._asks -= config.pre_approved
        self._state_key = secrets.token_bytes(32)
        self._listing = types.ListToolsResult(tools=index.listed)
        upstream.on_connect.append(self._reindex)

    @property
    def asks(self) -> frozenset[str]:
        """Tools whose calls need a person's approval (served through the SDK)."""
        return frozenset(self._asks)

    # -- the run ---------------------------------------------------------------------

    @property
    def run(self) -> Run | None:
        """The session's run, once the client initialized or called a tool."""
        return self._run

    def ensure_run(self, client: str | None = None) -> Run:
        """The session's run, journaled now if it is not yet."""
        if self._run is None:
            label = f"{client or 'MCP client'} via {PROG} -> {self.upstream.description}"
            self._run = Run.start(
                cast(Journal, _StepRecordingJournal(self.journal)),
                self.registry,
                scope=self.config.scope,
                executor=self._execute,
                approver=self._approve,
                label=label[:200],
            )
            _say(
                f"run {self._run.id} started (data {self.config.data_dir}); undo it with "
                f"'reversi rollback {self._run.id} --data {self.config.data_dir}'",
                self._errlog,
            )
        return self._run

    def _reindex(self, conn: UpstreamConnection) -> None:
        if conn.generation == 1:
            return  # the index the gateway was built with
        index = ToolIndex.build(self.registry, conn.tools)
        for name in index.drifted:
            if name not in self.index.drifted:
                _say(f"drifted after restart: {index.refusals[name]}", self._errlog)
        self.index.refusals = index.refusals
        self.index.drifted = index.drifted

    # -- the MCP server (everything but the raw tools/call path) -------------------------

    def build_server(self) -> Server[Any]:
        """The low-level MCP server (not yet running)."""
        server: Server[Any] = Server(
            "reversi-gateway",
            version=__version__,
            instructions=(
                "Every tool call is journaled by Reversi and can be rolled back. A refused or "
                "failed call says why; _meta['reversi/outcome'] is succeeded, failed, uncertain "
                "or rejected, and _meta['reversi/run'] / ['reversi/step'] name the journal entry."
            ),
            on_list_tools=self._list_tools,
        )
        server.add_request_handler("tools/call", types.CallToolRequestParams, self._call_tool)
        server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._initialized
        )
        server.middleware = []  # no tracing spans
        return server

    async def _initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        self.ensure_run(_client_name(ctx))

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if self._run is None:  # a 2026-07-28 client sends no notifications/initialized
            self.ensure_run(_client_name(ctx))
        return self._listing

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any] | types.InputRequiredResult:
        """A ``tools/call`` the SDK parsed: one that may need approval, or an odd one."""
        run = self._run or self.ensure_run(_client_name(ctx))
        name = params.name
        args = params.arguments if params.arguments is not None else {}
        meta = params.meta
        reason = meta.get(REASON_META) if meta else None
        if not isinstance(reason, str):
            reason = None
        state = _CallState(ctx)
        token = _CURRENT.set(state)
        try:
            if (
                name in self._asks
                and name not in self.index.refusals
                and _modern(ctx)
                and _declares_elicitation(ctx)
            ):
                state.answer = self._answer(params, run, name, args)
                if state.answer is None and self._would_ask(run, name, args):
                    return self._input_required(run, name, args, reason)
            result = await self._call(run, name, args, reason, state)
            if _modern(ctx):
                result["resultType"] = "complete"  # required of a dict at 2026-07-28
            return result
        finally:
            _CURRENT.reset(token)

    # -- the call --------------------------------------------------------------------

    async def relay_call(
        self,
        name: str,
        args: dict[str, Any],
        meta: dict[str, Any],
        client: str,
        reply: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Serve one ``tools/call`` from its parsed JSON; return the result object.

        The caller made sure that no person needs to be asked (``name`` not in
        :attr:`asks`) and that ``args`` and ``meta`` are objects. With ``reply``, a
        read-only tool's result is passed to it as soon as the upstream answered, before
        the step's outcome is journaled (see :meth:`reversi_core.engine.Run.call`); the
        caller must then not answer again.
        """
        run = self._run or self.ensure_run(client)
        reason = meta.get(REASON_META)
        state = _CallState(reply=reply)
        _CURRENT.set(state)  # the caller runs each call in a task (a context) of its own
        return await self._call(run, name, args, reason if type(reason) is str else None, state)

    async def _call(
        self,
        run: Run,
        name: str,
        args: dict[str, Any],
        reason: str | None,
        state: _CallState,
    ) -> dict[str, Any]:
        refusal = self.index.refusals.get(name)
        if refusal is not None:
            return self._refuse_unserved(run, name, args, reason, refusal, state)
        on_read = None
        if state.reply is not None:
            reply = state.reply

            def on_read(seq: int, result: dict[str, Any]) -> None:
                reply(self._success(run, seq, result, state))
                state.replied = True

        try:
            seq, result = await run.call(name, args, reason=reason, on_read=on_read)
        except CallRejected as exc:
            return self._error(run, state, "rejected", _rejection(exc), _rejection_message(exc))
        except RunClosedError as exc:
            return self._error(
                run,
                state,
                "rejected",
                {"type": "rejected", "code": "run_closed"},
                f"{exc} (reconnect to the gateway to begin a new run)",
            )
        except EffectUncertainError as exc:
            hint = ""
            if state.step is not None:
                hint = (
                    f" Step {state.step} of run {run.id} is journaled uncertain: once you "
                    f"know whether it took effect, record it with "
                    f"'reversi resolve {run.id} {state.step} --applied' or '--not-applied'."
                )
            return self._error(run, state, "uncertain", exc.to_json(), f"{exc}{hint}")
        except ToolError as exc:
            return self._error(run, state, "failed", exc.to_json(), str(exc))
        except (ReversiError, sqlite3.Error) as exc:  # the journal failed
            if state.replied:  # a read answered before its outcome could be journaled
                _say(f"error: {name}: step {state.step}: {exc}", self._errlog)
                return {}
            if state.raw is not None and self._writes.get(name, True):
                # the upstream carried the write out; only its outcome is not journaled
                return self._error(
                    run,
                    state,
                    "uncertain",
                    {"type": "uncertain", "code": "journal"},
                    f"{name} was carried out by the upstream, but the gateway could not "
                    f"journal its outcome: {exc}. Step {state.step} stays pending and is "
                    "found uncertain once this gateway stops; then resolve it with "
                    f"'reversi resolve {run.id} {state.step} --applied'.",
                )
            return self._error(
                run,
                state,
                "failed",
                {"type": "gateway_error", "code": "gateway"},
                f"the gateway could not journal this call: {exc}",
            )
        return self._success(run, seq, result, state)

    def _success(
        self, run: Run, seq: int, result: dict[str, Any], state: _CallState
    ) -> dict[str, Any]:
        """The ``CallToolResult`` of a step that succeeded with ``result``."""
        meta: dict[str, Any] = {OUTCOME_META: "succeeded", RUN_META: run.id, STEP_META: seq}
        raw = state.raw
        if raw is not None and (result is state.structured or result == state.structured):
            # The upstream's answer as it came (content blocks included), plus our _meta.
            out = dict(raw)
            upstream_meta = raw.get("_meta")
            if type(upstream_meta) is dict:
                meta = {**upstream_meta, **meta}
            out["_meta"] = meta
            out["structuredContent"] = result
            out["isError"] = False
            if type(out.get("content")) is not list:
                out["content"] = [{"type": "text", "text": _result_text(result)}]
            return out
        # The engine scrubbed a secret out of the result: send what it journaled.
        return {
            "content": [{"type": "text", "text": _result_text(result)}],
            "structuredContent": result,
            "isError": False,
            "_meta": meta,
        }

    # -- approval on 2026-07-28 connections (multi-round-trip) ---------------------------

    def _state_for(self, run: Run, name: str, args: dict[str, Any]) -> str:
        body = canonical_json([run.id, name, args]).encode("utf-8")
        return hmac.new(self._state_key, body, hashlib.sha256).hexdigest()

    def _answer(
        self, params: types.CallToolRequestParams, run: Run, name: str, args: dict[str, Any]
    ) -> types.ElicitResult | None:
        """The client's answer to this very call's approval question, if it sent one."""
        answer = (params.input_responses or {}).get(_APPROVAL_INPUT)
        if not isinstance(answer, types.ElicitResult):
            return None
        state = params.request_state
        if state is None or not hmac.compare_digest(state, self._state_for(run, name, args)):
            return None  # an answer for another call (or arguments changed): ask again
        return answer

    def _would_ask(self, run: Run, name: str, args: dict[str, Any]) -> bool:
        """False when the engine would refuse the call before asking (scope, arguments)."""
        if self.registry.get(name).permission not in run.scope:
            return False
        try:
            self.registry.validate_arguments(name, args)
        except InvalidArgumentsError:
            return False
        return True

    def _input_required(
        self, run: Run, name: str, args: dict[str, Any], reason: str | None
    ) -> types.InputRequiredResult:
        question = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=_approval_message(self.registry.get(name), args, reason),
                requested_schema=_ELICIT_SCHEMA,
            )
        )
        return types.InputRequiredResult(
            input_requests={_APPROVAL_INPUT: question},
            request_state=self._state_for(run, name, args),
        )

    def _refuse_unserved(
        self,
        run: Run,
        name: str,
        args: dict[str, Any],
        reason: str | None,
        message: str,
        state: _CallState,
    ) -> dict[str, Any]:
        manifest = self.registry.get(name)
        state.step = self.journal.record_rejected(
            run.id,
            name,
            manifest.effect.value,
            manifest.permission,
            scrub_json(args),
            reason,
            message,
            None,
        )
        code = "drifted" if name in self.index.drifted else "not_offered"
        return self._error(run, state, "rejected", {"type": "rejected", "code": code}, message)

    def _error(
        self,
        run: Run,
        state: _CallState,
        outcome: str,
        error: dict[str, Any],
        message: str,
    ) -> dict[str, Any]:
        message = scrub(message)
        body = dict(error)
        body["message"] = message
        meta: dict[str, Any] = {OUTCOME_META: outcome, RUN_META: run.id}
        if state.step is not None:
            meta[STEP_META] = state.step
        return {
            "content": [{"type": "text", "text": message}],
            "structuredContent": {"error": body},
            "isError": True,
            "_meta": meta,
        }

    # -- the executor ----------------------------------------------------------------

    async def _execute(self, tool: str, args: dict[str, Any], cctx: CallContext) -> dict[str, Any]:
        state = _CURRENT.get()
        if state is not None:
            state.step = cctx.step
        writes = self._writes.get(tool, True)
        conn = self.upstream.live
        if conn is None:
            try:
                conn = await self.upstream.connection()
            except UpstreamError as exc:
                raise ToolError(str(exc), code="upstream_unavailable") from None
        params = {
            "_meta": {
                IDEMPOTENCY_KEY_META: cctx.idempotency_key,
                RUN_ID_META: cctx.run_id,
                UPSTREAM_STEP_META: cctx.step,
            },
            "name": tool,
            "arguments": args,
        }
        timeout = self.config.call_timeout
        try:
            answer = await conn.request("tools/call", params, timeout)
        except _UpstreamClosed:
            self.upstream.discard(conn, f"it closed the connection during {tool}")
            msg = f"the upstream server exited or closed the connection during {tool}"
            if writes:
                raise EffectUncertainError(f"{msg}; {_MAYBE}") from None
            raise ToolError(msg, code="upstream_closed") from None
        except TimeoutError:
            self.upstream.discard(conn, f"no answer to {tool} within {timeout:g} s")
            msg = f"the upstream server did not answer {tool} within {timeout:g} s (--call-timeout)"
            if writes:
                raise EffectUncertainError(f"{msg}; {_MAYBE}") from None
            raise ToolError(msg, code="timeout") from None
        if "error" in answer:
            _upstream_error(tool, writes, answer["error"])
        result = answer.get("result")
        structured = _outcome(tool, result, writes)
        if state is not None:
            state.raw = cast(dict[str, Any], result)
            state.structured = structured
        return structured

    # -- approval --------------------------------------------------------------------

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        tool = request.tool
        if tool in self.config.pre_approved:
            return ApprovalDecision(
                True,
                by=f"{PROG} --approve {tool}",
                note="approved in advance on the gateway's command line",
            )
        state = _CURRENT.get()
        if state is None or state.ctx is None:
            return ApprovalDecision(False, by="the gateway", note="no client to ask")
        ctx = state.ctx
        client = _client_name(ctx)
        if state.answer is not None:
            return _decision(state.answer, client)
        if not (_declares_elicitation(ctx) and ctx.session.can_send_request):
            return ApprovalDecision(
                False,
                by="the gateway",
                note=(
                    f"{client} cannot be asked, as it did not declare the MCP elicitation capability; "
                    f"use a client that supports elicitation, or restart reversi-gateway with "
                    f"--approve {tool} to approve every call of it in advance"
                ),
            )
        try:
            answer = await ctx.session.elicit_form(
                _approval_message(request.manifest, request.args, request.reason),
                _ELICIT_SCHEMA,
                related_request_id=ctx.request_id,
            )
        except Exception as exc:
            return ApprovalDecision(
                False, by="the gateway", note=f"asking {client} failed: {_describe(exc)}"
            )
        return _decision(answer, client)


def _upstream_error(tool: str, writes: bool, error: Any) -> None:
    """Raise what a JSON-RPC error answer to ``tools/call`` means for the step."""
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        message = json.dumps(error)
    if code in (INVALID_PARAMS, METHOD_NOT_FOUND, INVALID_REQUEST) or not writes:
        raise ToolError(f"the upstream server refused {tool}: {message}", code=f"mcp_{code}")
    raise EffectUncertainError(
        f"the upstream server answered {tool} with error {code} ({message}); {_MAYBE}"
    )


def _decision(answer: types.ElicitResult, client: str) -> ApprovalDecision:
    """The approval decision an elicitation answer means."""
    by = f"the user via {client}"
    if answer.action != "accept":
        what = "declined" if answer.action == "decline" else "cancelled"
        return ApprovalDecision(False, by=by, note=what)
    content = answer.content or {}
    note = content.get("note")
    note_text = note if isinstance(note, str) and note.strip() else None
    if content.get("approve", True) is False:
        return ApprovalDecision(False, by=by, note=note_text or "answered no")
    return ApprovalDecision(True, by=by, note=note_text)


def _approval_message(manifest: Manifest, args: dict[str, Any], reason: str | None) -> str:
    shown = json.dumps(scrub_json(args), ensure_ascii=False, sort_keys=True)
    if len(shown) > 2000:
        shown = shown[:2000] + "…"
    kind = {
        "irreversible": "cannot be undone",
        "read_only": "changes nothing",
    }.get(manifest.effect.value, f"{manifest.effect.value}: Reversi can undo it")
    text = f"The agent wants to call {manifest.name} ({kind}) with {shown}."
    if reason:
        text += f" Its reason: {reason}"
    return text + " Allow it?"


def _rejection(exc: CallRejected) -> dict[str, Any]:
    code = "rejected"
    body: dict[str, Any] = {"type": "rejected"}
    if isinstance(exc, UnknownToolError):
        code = "unknown_tool"
    elif isinstance(exc, PermissionDenied):
        code = "permission_denied"
        body["permission"] = exc.permission
    elif isinstance(exc, InvalidArgumentsError):
        code = "invalid_arguments"
        body["problems"] = [scrub(p) for p in exc.problems]
    elif isinstance(exc, ApprovalDenied):
        code = "approval_denied"
    body["code"] = code
    return body


def _rejection_message(exc: CallRejected) -> str:
    if isinstance(exc, PermissionDenied):
        return (
            f"{exc}; to grant it, restart reversi-gateway with --scope {exc.permission} "
            "(--scope lists exactly what is granted: repeat it for every permission the agent "
            "needs)"
        )
    if isinstance(exc, UnknownToolError):
        return f"{exc}; the gateway serves only the upstream tools that have a manifest"
    return str(exc)


def _result_text(result: dict[str, Any]) -> str:
    if set(result) == {"content"} and isinstance(result["content"], str):
        return result["content"]
    return json.dumps(result, ensure_ascii=False)


def _outcome(tool: str, result: Any, writes: bool) -> dict[str, Any]:
    """Map the upstream's ``CallToolResult`` (parsed JSON) to a JSON result or a raised error.

    ``_meta["reversi/outcome"]`` decides an error: ``failed`` is definite (ToolError),
    ``uncertain`` is not (EffectUncertainError). An error without it did not come from a
    Reversi server, which cannot be trusted to have changed nothing: for a writing tool
    it is uncertain, for a read-only one failed. An answer that is not a result object
    at all is treated the same way.
    """
    if type(result) is not dict:
        what = f"the upstream server's answer to {tool} is not a tool result"
        if writes:
            raise EffectUncertainError(f"{what}; {_MAYBE}")
        raise ToolError(what, code="bad_result")
    structured = result.get("structuredContent")
    if result.get("isError") is True:
        meta = result.get("_meta")
        meta = meta if type(meta) is dict else {}
        error = structured.get("error") if type(structured) is dict else None
        error = error if type(error) is dict else {}
        message = error.get("message")
        if not isinstance(message, str) or not message:
            message = (
                _text(result.get("content")) or f"{tool} failed (the upstream gave no message)"
            )
        outcome = meta.get(OUTCOME_META)
        if outcome == "uncertain" or (outcome != "failed" and writes):
            if outcome != "uncertain":
                message += (
                    " (the upstream does not say whether anything changed: it sets no "
                    "_meta['reversi/outcome'])"
                )
            raise EffectUncertainError(message)
        status = error.get("status")
        code = error.get("code")
        raise ToolError(
            message,
            status=status if isinstance(status, int) and not isinstance(status, bool) else None,
            code=code if isinstance(code, str) else None,
        )
    if type(structured) is dict:
        return structured
    return {"content": _text(result.get("content"))}


# -- the downstream ----------------------------------------------------------------


def _client_of(info: Any) -> str:
    """The client's name from a raw ``clientInfo`` object, as :func:`_client_name` says it."""
    name = info.get("name") if type(info) is dict else None
    return name if type(name) is str and name else "the MCP client"


class _Downstream:
    """The client's side of the gateway: raw ``tools/call`` here, the rest to the SDK.

    Every line from the client is parsed with :func:`json.loads`. The SDK's server sees
    the opening request (which decides the protocol era exactly as in the SDK: a request
    with the 2026-07-28 envelope opens a modern connection, anything else a handshake
    one) and the handshake itself. After that, a ``tools/call`` with well-formed params,
    for a tool that needs nobody's approval, is served by :meth:`Gateway.relay_call` in a
    task of its own and answered here, as one JSON line; a ``notifications/cancelled``
    for such a call cancels its task. Everything else (``tools/list``, ``ping``, calls
    that need approval, answers to the SDK's elicitation requests, malformed requests)
    is validated into SDK models and handed to the SDK's server, whose messages come back
    through :meth:`pump`.
    """

    def __init__(
        self,
        gateway: Gateway,
        server: Server[Any],
        to_sdk: MemoryObjectSendStream[SessionMessage | Exception],
        errlog: TextIO,
    ) -> None:
        self.gateway = gateway
        self.out: _Out | None = None
        self._to_sdk = to_sdk
        self._errlog = errlog
        self._asks = gateway.asks
        self._era: str | None = None  # "legacy" or "modern" once the SDK saw a request
        self._accepted = False  # on a legacy connection: the handshake is done
        self._init_ids: set[Any] = set()
        self._client = "the MCP client"
        self._stamp = server.server_info_stamp
        self._inflight: dict[Any, asyncio.Task[None]] = {}
        self._started: set[asyncio.Task[None]] = set()  # raw calls' tasks that began to run
        self._closing = False
        self._loop = asyncio.get_running_loop()

    # -- from the client -------------------------------------------------------------

    def on_line(self, line: bytes) -> None:
        """One line from the client."""
        try:
            self._on_line(line)
        except Exception as exc:  # a bug here must not stop the reading of the pipe
            _say(f"error: a message from the client was dropped: {_describe(exc)}", self._errlog)

    def _on_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError as exc:
            if line.strip():
                self._send_sdk(exc)
            return
        if type(message) is dict:
            method = message.get("method")
            if method == "tools/call":
                if self._era is not None and self._start_call(message):
                    return
            elif method == "notifications/cancelled" and self._cancel(message):
                return
        self._to_sdk_line(line, message)

    def on_end(self, exc: Exception | None = None) -> None:
        """The client closed stdin (or stdout broke): end the session.

        As the SDK does at the end of its read stream, calls still in flight are
        cancelled (the engine journals them) and answered ``Connection closed``.
        """
        if self._closing:
            return
        self._closing = True
        if exc is not None:
            self._send_sdk(exc)
        self._to_sdk.close()
        for rid, task in self._inflight.items():
            if task not in self._started:  # cancelled before it ran: nothing was journaled
                self._answer(rid, error={"code": CONNECTION_CLOSED, "message": "Connection closed"})
            task.cancel("the client closed the connection")

    async def finish(self) -> None:
        """Wait for the calls cancelled by :meth:`on_end` to be journaled."""
        tasks = list(self._inflight.values())
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _start_call(self, message: dict[str, Any]) -> bool:
        """Serve a ``tools/call`` on the raw path if it can be; False leaves it to the SDK."""
        rid = message.get("id")
        params = message.get("params")
        if not isinstance(rid, int | str) or type(rid) is bool or type(params) is not dict:
            return False
        if rid in self._inflight:
            return False
        name = params.get("name")
        if type(name) is not str or name in self._asks:
            return False
        args = params.get("arguments")
        if args is None:
            args = {}
        elif type(args) is not dict:
            return False
        meta = params.get("_meta")
        if meta is None:
            meta = {}
        elif type(meta) is not dict:
            return False
        if self._era == "legacy":
            # before the handshake, or with an envelope: the SDK refuses it
            if not self._accepted or PROTOCOL_VERSION_META_KEY in meta:
                return False
            client, modern = self._client, False
        else:
            version = meta.get(PROTOCOL_VERSION_META_KEY)
            if (
                type(version) is not str
                or version not in MODERN_PROTOCOL_VERSIONS
                or CLIENT_CAPABILITIES_META_KEY not in meta
            ):
                return False  # a bad envelope: the SDK says what is wrong
            client, modern = _client_of(meta.get(CLIENT_INFO_META_KEY)), True
        task = self._loop.create_task(self._serve_call(rid, name, args, meta, client, modern))
        self._inflight[rid] = task
        return True

    async def _serve_call(
        self,
        rid: int | str,
        name: str,
        args: dict[str, Any],
        meta: dict[str, Any],
        client: str,
        modern: bool,
    ) -> None:
        this = asyncio.current_task()
        assert this is not None  # _start_call runs every raw call in a task
        self._started.add(this)
        sent = False

        def reply(result: dict[str, Any]) -> None:
            nonlocal sent
            if modern:  # what the SDK adds to a 2026-07-28 result
                result["resultType"] = "complete"
                result["_meta"][SERVER_INFO_META_KEY] = self._stamp
            self._answer(rid, result=result)
            sent = True

        try:
            result = await self.gateway.relay_call(name, args, meta, client, reply)
        except asyncio.CancelledError:
            if self._closing and not sent:  # the session ends (not the client's cancel)
                self._answer(rid, error={"code": CONNECTION_CLOSED, "message": "Connection closed"})
            raise
        except Exception as exc:
            _say(f"error: {name}: {_describe(exc)}", self._errlog)
            if not sent:
                self._answer(
                    rid, error={"code": INTERNAL_ERROR, "message": "Internal server error"}
                )
            return
        finally:
            self._started.discard(this)
            if self._inflight.get(rid) is this:
                del self._inflight[rid]
        if not sent:  # a read may have been answered already
            reply(result)
        if self.out is not None:
            await self.out.drain()

    def _answer(
        self,
        rid: int | str,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        if self.out is not None:
            self.out.write(_line(message))

    def _cancel(self, message: dict[str, Any]) -> bool:
        """Cancel a raw call the client gave up on; False when it is not one of ours."""
        params = message.get("params")
        rid = params.get("requestId") if type(params) is dict else None
        if type(rid) not in (int, str):
            return False
        task = self._inflight.pop(rid, None)
        if task is None:
            return False
        task.cancel("the client cancelled the call")
        return True

    def _to_sdk_line(self, line: bytes, message: Any) -> None:
        try:
            parsed = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            self._send_sdk(exc)
            return
        if isinstance(parsed, types.JSONRPCRequest):
            if self._era is None:  # the SDK's own rule (serve_dual_era_loop)
                params = parsed.params
                envelope = isinstance(params, dict) and isinstance(params.get("_meta"), dict)
                modern = envelope and PROTOCOL_VERSION_META_KEY in params["_meta"]  # type: ignore[index]
                self._era = "modern" if parsed.method != "initialize" and modern else "legacy"
            if parsed.method == "initialize":
                self._init_ids.add(parsed.id)
                params = message.get("params") if type(message) is dict else None
                self._client = _client_of(
                    params.get("clientInfo") if type(params) is dict else None
                )
        elif (
            isinstance(parsed, types.JSONRPCNotification)
            and parsed.method == "notifications/initialized"
        ):
            self._accepted = True
        self._send_sdk(SessionMessage(parsed))

    def _send_sdk(self, item: SessionMessage | Exception) -> None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._to_sdk.send_nowait(item)

    # -- from the SDK ----------------------------------------------------------------

    async def pump(self, stream: MemoryObjectReceiveStream[SessionMessage]) -> None:
        """Write the SDK server's messages to the client."""
        async with stream:
            async for item in stream:
                message = item.message
                if isinstance(message, types.JSONRPCResponse) and message.id in self._init_ids:
                    self._accepted = True  # the SDK accepted the handshake
                if self.out is not None:
                    data = message.model_dump_json(by_alias=True, exclude_unset=True)
                    self.out.write(data.encode("utf-8") + b"\n")
                    await self.out.drain()


@contextmanager
def _stdio_fds() -> Iterator[tuple[int, int]]:
    """The wire moves to private descriptors, yielded as ``(read_fd, write_fd)``.

    Meanwhile fd 0 reads the null device and fd 1 writes to stderr, so stray output
    cannot corrupt the wire (as the SDK's ``stdio_server`` does). Both are restored on
    exit.
    """
    in_fd, out_fd = os.dup(0), os.dup(1)
    saved = (os.dup(0), os.dup(1))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    try:
        yield in_fd, out_fd
    finally:
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)
        os.close(saved[0])
        os.close(saved[1])


async def _serve_stdio(gateway: Gateway, errlog: TextIO) -> None:
    """Serve the client on this process's stdin/stdout until it leaves."""
    server = gateway.build_server()
    to_sdk, sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
    sdk_out, from_sdk = anyio.create_memory_object_stream[SessionMessage](0)
    down = _Downstream(gateway, server, to_sdk, errlog)
    with _stdio_fds() as (in_fd, out_fd):
        out = down.out = await _connect_writer(out_fd, lambda: down.on_end(None))
        try:
            stop_reading = await _connect_reader(in_fd, _LineProtocol(down.on_line, down.on_end))
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(down.pump, from_sdk)
                    await server.run(sdk_in, sdk_out, server.create_initialization_options())
                await down.finish()
            finally:
                stop_reading()
        finally:
            out.close()


# -- serving -----------------------------------------------------------------------


async def serve_gateway(
    config: GatewayConfig,
    upstream_process: subprocess.Popen[bytes] | None = None,
    *,
    errlog: TextIO | None = None,
) -> int:
    """Run the gateway on this process's stdin/stdout until the client leaves.

    Starts the upstream (or adopts ``upstream_process``, already started with
    :func:`spawn_upstream`) and reports on ``errlog`` what is served, hidden and
    drifted. Returns the exit status: 0 after a normal end, 1 when the upstream cannot
    be started, 2 when the journal cannot be opened.
    """
    err = errlog or sys.stderr
    try:
        journal = SQLiteJournal.open(config.data_dir, durability=config.durability)
    except ReversiError as exc:
        if upstream_process is not None:
            await _stop_process(upstream_process, 0.0)
        _say(f"error: {exc}", err)
        return 2
    try:
        async with anyio.create_task_group() as tg:
            upstream = Upstream(
                config.upstream_argv,
                tg,
                env=config.upstream_env,
                start_timeout=config.start_timeout,
                errlog=err,
                first=upstream_process,
            )
            try:
                conn = await upstream.connection()
            except UpstreamError as exc:
                _say(f"error: {exc}", err)
                return 1
            index = ToolIndex.build(config.registry, conn.tools)
            _report(index, upstream, err)
            gateway = Gateway(config, journal, upstream, index, errlog=err)
            await _serve_stdio(gateway, err)
            await upstream.aclose()
    finally:
        journal.close()
    return 0


def _report(index: ToolIndex, upstream: Upstream, err: TextIO) -> None:
    names = [t.name for t in index.listed]
    shown = ", ".join(names) or "none"
    _say(f"serving {len(names)} tool(s) of {upstream.description}: {shown}", err)
    if index.hidden:
        _say(f"hidden (no manifest): {', '.join(index.hidden)}", err)
    if index.missing:
        _say(f"manifests the upstream does not offer (refused): {', '.join(index.missing)}", err)
    for name in index.drifted:
        _say(f"drifted: {index.refusals[name]}", err)
