"""The gateway over streamable HTTP: ``reversi-gateway --listen HOST:PORT``.

Another front door onto the call path of :mod:`.gateway`: the MCP SDK's streamable
HTTP transport (:class:`~mcp.server.streamable_http_manager.StreamableHTTPSessionManager`,
served by uvicorn) in front of the same SDK server that :meth:`Gateway.build_server`
builds, whose ``tools/call`` handler hands each call to :meth:`Run.attempt
<reversi_core.engine.Run.attempt>` with an :class:`~._policy.UpstreamCall` and answers
with :func:`~._coding.call_tool_result`, exactly as over stdio. Only what HTTP needs is
added here (docs/gateway.md, "Over HTTP"):

* :class:`Guard`, the ASGI application: only ``/mcp`` is served; every request must
  carry ``Authorization: Bearer <REVERSI_GATEWAY_TOKEN>`` (compared in constant time),
  else it is answered ``401`` before anything reads it, so nothing is journaled; the
  ``Host`` and ``Origin`` headers are checked against DNS rebinding by the SDK's
  transport security (:func:`security_settings`): ``421`` / ``403``;
* :class:`HttpGateway`, which says which run a request belongs to: a session opened
  with ``initialize`` (2025-06-18, 2025-11-25) is one run, from its
  ``notifications/initialized`` until the client deletes the session or it is idle for
  ``idle_timeout`` seconds; stateless 2026-07-28 requests (no session) share one run,
  begun by the first ``tools/call`` and ended after ``idle_timeout`` seconds without a
  call, the next call beginning a new one;
* :func:`serve_gateway_http`, which binds the socket, then serves until SIGINT or
  SIGTERM.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import signal
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from ..engine import Run
from ..errors import JournalError, ReversiError
from ._approval import client_name, modern
from ._http_raw import RawCalls
from ._link import Link, make_upstream
from ._listen import (
    DEFAULT_IDLE_TIMEOUT,
    ENDPOINT,
    MIN_TOKEN_CHARS,
    TOKEN_ENV,
    Listen,
    is_ip,
    is_loopback,
    parse_listen,
)
from ._messages import say
from ._tools import ToolIndex
from ._upstream import UpstreamError, stop_process
from .gateway import Gateway, GatewayConfig, _report, open_writable_journal

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "ENDPOINT",
    "MIN_TOKEN_CHARS",
    "TOKEN_ENV",
    "Guard",
    "HttpGateway",
    "Listen",
    "parse_listen",
    "security_settings",
    "serve_gateway_http",
]

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

_REFUSAL_NOTE_EVERY = 10.0
"""Seconds between two lines on stderr about requests refused for want of a token."""


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def security_settings(
    host: str, port: int, allow_origins: tuple[str, ...]
) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection for a gateway bound to ``host:port``.

    Allowed ``Host`` values: the loopback names with the port, the bound host (unless it
    is a wildcard address) and the host of each allowed origin. Allowed ``Origin``
    values: ``http://`` and ``https://`` with each of the loopback names and the port,
    plus ``allow_origins``. A request without an ``Origin`` (not from a browser) passes
    the origin check.
    """
    names = list(_LOOPBACK_NAMES)
    wildcard = ipaddress.ip_address(host).is_unspecified if is_ip(host) else False
    if not wildcard and _hostport(host, port) not in [f"{n}:{port}" for n in names]:
        names.append(f"[{host}]" if ":" in host else host)
    hosts = [f"{n}:{port}" for n in names]
    origins = [f"{scheme}://{n}:{port}" for n in names for scheme in ("http", "https")]
    for origin in allow_origins:
        origins.append(origin)
        netloc = origin.split("://", 1)[-1].rstrip("/")
        hosts.append(netloc)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(hosts)),
        allowed_origins=list(dict.fromkeys(origins)),
    )


# -- runs ----------------------------------------------------------------------------


class HttpGateway(Gateway):
    """A :class:`Gateway` whose SDK server serves many HTTP clients, one run per session.

    See the module docstring for how runs are delimited. ``idle_timeout`` is in seconds.
    """

    STATELESS = "stateless"
    """The key of the run that stateless (2026-07-28) requests share."""

    def __init__(
        self, *args: Any, idle_timeout: float = DEFAULT_IDLE_TIMEOUT, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.idle_timeout = idle_timeout
        self._runs: dict[str, tuple[Run, float]] = {}  # key -> (run, last request)
        self._clients: dict[str, str] = {}  # session id -> the client's name
        self._schemas = {tool.name: tool.input_schema for tool in self.index.listed}

    @property
    def runs(self) -> dict[str, Run]:
        """The runs being served, by session id (``"stateless"`` for the stateless one)."""
        return {key: run for key, (run, _) in self._runs.items()}

    def run_for(self, ctx: ServerRequestContext[Any]) -> Run:
        """The run of the request: its session's, or the stateless one (started now if
        there is none, or it was idle for too long)."""
        key = self._key(ctx)
        client = client_name(ctx)
        if key != self.STATELESS:
            self._clients[key] = client
        return self._run_of(key, client)

    def stateless_run(self, client: str) -> Run:
        """The run of a stateless request served on the raw path (see :meth:`run_for`)."""
        return self._run_of(self.STATELESS, client)

    def session_run(self, session: str) -> tuple[Run, str] | None:
        """The run of a handshake session whose client finished the handshake, and the
        client's name; ``None`` for any other session."""
        held = self._runs.get(session)
        if held is None:
            return None
        self._runs[session] = (held[0], time.monotonic())
        return held[0], self._clients.get(session, "the MCP client")

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of the tool ``name`` as listed to clients (``None``: not listed)."""
        return self._schemas.get(name)

    def _run_of(self, key: str, client: str) -> Run:
        now = time.monotonic()
        held = self._runs.get(key)
        if held is not None and (key != self.STATELESS or now - held[1] <= self.idle_timeout):
            run = held[0]
        else:
            self._sweep(now)
            how = " (stateless HTTP)" if key == self.STATELESS else f" (HTTP session {key[:8]})"
            run = self.start_run(client, how)
        self._runs[key] = (run, now)
        return run

    def end_session(self, session_id: str) -> None:
        """Forget the run of a session the client ended (``DELETE``)."""
        self._runs.pop(session_id, None)
        self._clients.pop(session_id, None)

    def _key(self, ctx: ServerRequestContext[Any]) -> str:
        if modern(ctx):
            return self.STATELESS
        request = ctx.request
        headers = getattr(request, "headers", None)
        session = headers.get("mcp-session-id") if headers is not None else None
        return session if isinstance(session, str) and session else self.STATELESS

    def _sweep(self, now: float) -> None:
        """Forget runs idle for longer than a session may be (the SDK closed those)."""
        for key, (_, last) in list(self._runs.items()):
            if now - last > self.idle_timeout:
                del self._runs[key]
                self._clients.pop(key, None)

    def _reindex(self, conn: Link) -> None:
        super()._reindex(conn)
        for run, _ in self._runs.values():
            run.withheld = self.index.withheld

    async def _initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        try:
            self.run_for(ctx)
        except JournalError as exc:  # a notification has no answer: the next call says it
            self.journal_failed(exc)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return self._listing  # listing starts no run: the first call does


# -- the ASGI application -------------------------------------------------------------


ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _jsonrpc_error(message: str, code: int) -> bytes:
    import json

    return json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    ).encode()


class Guard:
    """The gateway's ASGI application: ``/mcp``, with a bearer token, to the SDK.

    ``token`` is compared with each request's ``Authorization: Bearer`` value in constant
    time (:func:`hmac.compare_digest`). A request without the right one is answered
    ``401`` with ``WWW-Authenticate: Bearer`` before its body is read: it reaches
    neither the SDK nor the journal. Another path is ``404``. ``on_deleted`` is told the
    session id of each session the client ended with ``DELETE``. ``raw`` serves the
    steady ``tools/call`` POSTs (:class:`~._http_raw.RawCalls`, which hands the SDK
    every other request); without it every request goes to the SDK.
    """

    def __init__(
        self,
        manager: StreamableHTTPSessionManager,
        token: str,
        *,
        on_deleted: Callable[[str], None],
        errlog: TextIO,
        raw: RawCalls | None = None,
    ) -> None:
        self._manager = manager
        self._raw = raw
        self._expected = f"Bearer {token}".encode()
        self._on_deleted = on_deleted
        self._errlog = errlog
        self.refused = 0
        """How many requests were refused for want of a valid token."""
        self._unsaid = 0
        self._said_at = -_REFUSAL_NOTE_EVERY

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan is off; nothing else is served
        if scope["path"].rstrip("/") != ENDPOINT:
            await _respond(
                send,
                404,
                b"Not Found: the MCP endpoint is /mcp",
                [(b"content-type", b"text/plain; charset=utf-8")],
            )
            return
        if not self._authorized(scope):
            self._note_refusal(scope)
            await _respond(
                send,
                401,
                _jsonrpc_error(
                    "Unauthorized: send the gateway's token as 'Authorization: Bearer <token>' "
                    f"(the value of {TOKEN_ENV} where reversi-gateway runs)",
                    -32001,
                ),
                [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="reversi-gateway"'),
                ],
            )
            return
        if scope["method"] == "POST" and self._raw is not None:
            await self._raw(scope, receive, send, self._manager.handle_request)
            return
        if scope["method"] != "DELETE":
            await self._manager.handle_request(scope, receive, send)
            return
        status = 0

        async def watch(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self._manager.handle_request(scope, receive, watch)
        session = _header(scope, b"mcp-session-id")
        if session and 200 <= status < 300:
            self._on_deleted(session)

    def _authorized(self, scope: Scope) -> bool:
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
                break
        return hmac.compare_digest(given, self._expected)

    def _note_refusal(self, scope: Scope) -> None:
        self.refused += 1
        self._unsaid += 1
        now = time.monotonic()
        if now - self._said_at < _REFUSAL_NOTE_EVERY:
            return
        client = scope.get("client")
        peer = f" from {client[0]}" if client else ""
        count = f"{self._unsaid} request(s)" if self._unsaid > 1 else "a request"
        say(f"refused {count}{peer} without a valid bearer token (401)", self._errlog)
        self._unsaid = 0
        self._said_at = now


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


# -- serving -------------------------------------------------------------------------


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (raises :class:`OSError`)."""
    # proto IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only for it, and
    # without it every answer's body waits ~40 ms for the ACK of its headers (Nagle)
    infos = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
    )
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def _server_class() -> type[Any]:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, minus raising the signal again once it stopped (so that the
        gateway can say so and exit 0)."""

        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return Server


class _JoinedWrites:
    """A transport whose writes of one turn of the event loop leave in one ``send``.

    uvicorn writes an answer's head and its body apart (two ``send`` calls, two TCP
    segments: the client wakes up twice, and on this machine each loopback ``send``
    costs the sender 0.1 to 0.2 ms; docs/performance.md, "The gateway over HTTP"). This
    holds each write until the loop's next turn (``call_soon``), by which time the body
    has followed its head, and writes them joined. ``close`` writes what is held first;
    ``abort`` drops it, as the transport's own ``abort`` drops its buffer. Everything
    else is the wrapped transport's.
    """

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: Any, loop: Any) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        if not data:
            return
        if self._held is None:
            self._held = [data]
            self._loop.call_soon(self._flush)
        else:
            self._held.append(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def _flush(self) -> None:
        held, self._held = self._held, None
        if held and not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        held = sum(len(part) for part in self._held) if self._held else 0
        return int(self._transport.get_write_buffer_size()) + held

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _protocol_class() -> type[Any]:
    """uvicorn's HTTP/1.1 protocol (``httptools`` when it is installed, else ``h11``, as
    uvicorn's ``auto`` picks) on a :class:`_JoinedWrites` transport."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    # AutoHTTPProtocol is a variable (httptools' protocol or h11's), not a class to mypy
    class Protocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        def connection_made(self, transport: Any) -> None:
            loop = asyncio.get_running_loop()
            super().connection_made(_JoinedWrites(transport, loop))

    return Protocol


async def _serve_http(
    gateway: HttpGateway, listen: Listen, token: str, sock: socket.socket, errlog: TextIO
) -> int:
    import uvicorn

    _Server = _server_class()
    host, port = sock.getsockname()[:2]
    mcp_server = gateway.build_server()
    security = security_settings(listen.host, port, listen.allow_origins)
    manager = StreamableHTTPSessionManager(
        mcp_server,
        security_settings=security,
        session_idle_timeout=listen.idle_timeout,
        max_request_body_size=gateway.config.max_message_bytes,
    )
    raw = RawCalls(
        gateway,
        manager,
        security,
        max_body=gateway.config.max_message_bytes,
        stamp=mcp_server.server_info_stamp,
        errlog=errlog,
    )
    guard = Guard(manager, token, on_deleted=gateway.end_session, errlog=errlog, raw=raw)
    config = uvicorn.Config(
        guard,
        interface="asgi3",
        http=_protocol_class(),
        lifespan="off",
        proxy_headers=False,  # the peer is whoever connected: no X-Forwarded-* is trusted
        access_log=False,
        log_level="warning",
        server_header=False,
        timeout_graceful_shutdown=5,
    )
    server = _Server(config)
    async with manager.run():
        say(f"listening on http://{_hostport(host, port)}{ENDPOINT}", errlog)
        if not is_loopback(listen.host):
            say(
                f"warning: --listen {listen.host} accepts connections from other machines, "
                "in plain HTTP: put a TLS-terminating proxy in front of it",
                errlog,
            )
        await server.serve(sockets=[sock])
    return guard.refused


async def serve_gateway_http(
    config: GatewayConfig,
    listen: Listen,
    token: str,
    upstream_process: Any = None,
    *,
    errlog: TextIO | None = None,
) -> int:
    """Serve MCP over streamable HTTP on ``listen`` until SIGINT or SIGTERM.

    ``token`` is the bearer token clients must send (from :data:`TOKEN_ENV`; the caller
    checked it is at least :data:`MIN_TOKEN_CHARS` long). Starts the upstream (or
    adopts ``upstream_process``) as :func:`~.gateway.serve_gateway` does. Returns the
    exit status: 0 after a normal stop, 1 when the upstream cannot be started, 2 when
    the journal cannot be opened or the address cannot be bound.
    """
    err = errlog or sys.stderr
    try:
        sock = bind(listen.host, listen.port)
    except OSError as exc:
        if upstream_process is not None:
            await stop_process(upstream_process, 0.0)
        say(f"error: --listen {_hostport(listen.host, listen.port)}: {exc.strerror or exc}", err)
        return 2
    try:
        journal = open_writable_journal(config)
    except ReversiError as exc:
        sock.close()
        if upstream_process is not None:
            await stop_process(upstream_process, 0.0)
        say(f"error: {exc}", err)
        return 2
    try:
        async with anyio.create_task_group() as tg:
            upstream = make_upstream(config, tg, err, upstream_process)
            try:
                conn = await upstream.connection()
            except UpstreamError as exc:
                say(f"error: {exc}", err)
                return 1
            index = ToolIndex.build(config.registry, conn.tools, config.tool_namespace)
            _report(index, upstream, err)
            gateway = HttpGateway(
                config, journal, upstream, index, errlog=err, idle_timeout=listen.idle_timeout
            )
            refused = await _serve_http(gateway, listen, token, sock, err)
            await upstream.aclose()
    finally:
        sock.close()
        journal.close()
    ended = "stopped"
    if refused:
        ended += f"; {refused} request(s) were refused for want of a valid bearer token"
    say(ended, err)
    return 0
