"""The raw path of ``reversi-gateway --listen``: steady ``tools/call`` POSTs without the SDK.

The HTTP counterpart of the stdio gateway's raw path (:mod:`._downstream`): a POST on
``/mcp`` that :class:`~.http_gateway.Guard` let through (its bearer token checked) and
that is a plain ``tools/call`` of a tool needing nobody's approval is parsed with
``orjson``, handed to :meth:`~.gateway.Gateway.relay_call` (the same call path as every
other call: the engine, the journal, :class:`~._policy.UpstreamCall`) and answered with
one ``application/json`` body. Nothing the MCP SDK's transport checks is skipped: a
request is served here only when every check the SDK would make passes, and anything
else goes to the SDK, body and all, which then answers exactly as before:

* ``Host`` and ``Origin`` among the gateway's allowed ones (DNS rebinding; the SDK's
  :class:`~mcp.server.transport_security.TransportSecuritySettings`), ``Content-Type``
  ``application/json``, ``Accept`` both ``application/json`` and ``text/event-stream``,
  the body within ``--max-message-bytes``;
* a JSON-RPC request object: ``"jsonrpc": "2.0"``, an integer or string ``id``,
  ``params`` an object with a string ``name``, ``arguments`` and ``_meta`` objects or
  absent, and no other member;
* 2026-07-28 (an ``MCP-Protocol-Version`` header that is no handshake version): no
  routing header twice, the envelope and the ``Mcp-Method``, ``Mcp-Name`` and
  ``MCP-Protocol-Version`` headers agreeing and a served version
  (:func:`~mcp.shared.inbound.classify_inbound_request`), the ``Mcp-Param-*`` headers
  agreeing with the arguments as the tool's listed input schema declares
  (:func:`~mcp.shared.inbound.validate_mcp_param_headers`);
* a handshake client: the ``Mcp-Session-Id`` of a session the SDK holds open, whose
  client finished the handshake (``notifications/initialized``: its run exists), and no
  2026-07-28 envelope in ``_meta``. While the call is served, the session's idle
  countdown is held as the SDK holds it for a request it serves.

A handshake client cancels a raw call with ``notifications/cancelled`` (answered
``202``; the call's POST is answered ``Request cancelled``, as the SDK does); a
2026-07-28 client by closing the connection, which cancels the call (the engine
journals what that means for the step). Everything else (``initialize``, lists,
``GET`` streams, ``DELETE``, notifications, batches, calls that need approval, anything
odd) is the SDK's. See docs/gateway.md, "Over HTTP".
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TextIO, TypeGuard

import anyio
from mcp.server.streamable_http import REQUEST_CANCELLED
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types import (
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

from .._json import dumps, loads
from ._downstream import client_of
from ._messages import describe, say

if TYPE_CHECKING:
    from ..engine import Run

__all__ = ["RawCalls"]

ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_JSON = b"application/json"
_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_WANTED = frozenset(
    {
        b"host",
        b"origin",
        b"content-type",
        b"content-length",
        b"accept",
        b"mcp-protocol-version",
        b"mcp-session-id",
    }
)


class RawGateway(Protocol):
    """What the raw path needs of :class:`~.http_gateway.HttpGateway`."""

    @property
    def asks(self) -> frozenset[str]: ...

    def input_schema(self, name: str) -> dict[str, Any] | None: ...

    def session_run(self, session: str) -> tuple[Run, str] | None: ...

    def stateless_run(self, client: str) -> Run: ...

    async def relay_call(
        self,
        name: str,
        args: dict[str, Any],
        meta: dict[str, Any],
        client: str,
        reply: Callable[[dict[str, Any]], None],
        *,
        run: Run | None = None,
    ) -> None: ...


def _accepts_json_and_sse(accept: bytes) -> bool:
    """The SDK's ``check_accept_headers``, both types required (it answers 406 otherwise)."""
    types = [part.split(b";")[0].strip().lower() for part in accept.split(b",")]
    if b"*/*" in types:
        return True
    return (_JSON in types or b"application/*" in types) and (
        b"text/event-stream" in types or b"text/*" in types
    )


def _is_json(content_type: bytes) -> bool:
    """Both of the SDK's content-type checks (transport security and the transport's)."""
    value = content_type.decode("latin-1")
    parts = [part.strip() for part in value.split(";")[0].split(",")]
    return value.lower().startswith("application/json") and "application/json" in parts


def _is_request_id(rid: Any) -> TypeGuard[int | str]:
    return type(rid) is int or type(rid) is str


class RawCalls:
    """The raw path (see the module docstring), in front of the SDK's ``manager``.

    Call it as an ASGI application for a POST that carried the gateway's token:
    ``fallback`` (the SDK) gets every request this path does not serve.
    ``security`` holds the allowed ``Host`` and ``Origin`` values, ``max_body`` the
    longest body accepted, in bytes. ``stamp`` is the SDK server's ``serverInfo``
    stamp of a 2026-07-28 result (each answer is encoded at once, so one is shared).
    """

    def __init__(
        self,
        gateway: RawGateway,
        manager: StreamableHTTPSessionManager,
        security: TransportSecuritySettings,
        *,
        max_body: int,
        stamp: dict[str, Any],
        errlog: TextIO,
    ) -> None:
        self._gateway = gateway
        self._manager = manager
        self._hosts = frozenset(h.encode("latin-1") for h in security.allowed_hosts)
        self._origins = frozenset(o.encode("latin-1") for o in security.allowed_origins)
        self._max_body = max_body
        self._stamp = stamp
        self._errlog = errlog
        self._inflight: dict[tuple[str, int | str], anyio.CancelScope] = {}
        """Raw calls of handshake sessions, by (session, request id): their cancel scopes."""
        self.served = 0
        """How many calls this path served (the rest went to the SDK)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send, fallback: ASGIApp) -> None:
        seen: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in _WANTED:
                if name in seen:  # a header given twice: the SDK decides what it means
                    await fallback(scope, receive, send)
                    return
                seen[name] = value
        if not (
            seen.get(b"host") in self._hosts
            and (b"origin" not in seen or seen[b"origin"] in self._origins)
            and _is_json(seen.get(b"content-type", b""))
            and _accepts_json_and_sse(seen.get(b"accept", b""))
        ):
            await fallback(scope, receive, send)
            return
        length = seen.get(b"content-length")
        if length is not None and not (length.isdigit() and int(length) <= self._max_body):
            await fallback(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                await fallback(scope, _replay(chunks, message, receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            chunks.append(chunk)
            more = message.get("more_body", False)
            if size > self._max_body:  # the SDK answers 413
                await fallback(scope, _replay(chunks, None, receive, more), send)
                return
        body = b"".join(chunks)
        if not await self._serve(scope, receive, send, seen, body):
            await fallback(scope, _replay([body], None, receive), send)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, seen: dict[bytes, bytes], body: bytes
    ) -> bool:
        """Serve the request if it is a raw one; False leaves it (unanswered) to the SDK."""
        try:
            message = loads(body)
        except (ValueError, RecursionError):
            return False
        if (
            type(message) is not dict
            or message.get("jsonrpc") != "2.0"
            or not message.keys() <= _KEYS
        ):
            return False
        method = message.get("method")
        params = message.get("params")
        rid = message.get("id")
        if type(params) is not dict:
            return False
        version = seen.get(b"mcp-protocol-version")
        modern = (
            version is not None and version.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS
        )
        session = seen.get(b"mcp-session-id")
        if method == "notifications/cancelled" and "id" not in message:
            return (
                not modern
                and session is not None
                and await self._cancel(session.decode("latin-1"), params, send)
            )
        if method != "tools/call" or not _is_request_id(rid):
            return False
        name = params.get("name")
        args = params.get("arguments")
        meta = params.get("_meta")
        if type(name) is not str or name in self._gateway.asks:
            return False
        if args is None:
            args = {}
        elif type(args) is not dict:
            return False
        if meta is None:
            meta = {}
        elif type(meta) is not dict:
            return False
        if modern:
            headers = Headers(scope=scope)
            if find_duplicated_routing_header(headers.items()) is not None:
                return False
            verdict = classify_inbound_request(message, headers=dict(headers))
            if isinstance(verdict, InboundLadderRejection):
                return False
            if args or any(k.startswith(b"mcp-param-") for k, _ in scope["headers"]):
                schema = self._gateway.input_schema(name)
                if schema is not None and validate_mcp_param_headers(schema, args, headers):
                    return False
            client = client_of(verdict.client_info)
            run = self._gateway.stateless_run(client)
            await self._exchange(receive, send, (rid, name, args, meta, client, run), session=None)
            return True
        if session is None or PROTOCOL_VERSION_META_KEY in meta:
            return False
        sid = session.decode("latin-1")
        held = self._gateway.session_run(sid)
        transport = self._live_session(sid)
        if held is None or transport is None or (sid, rid) in self._inflight:
            return False
        run, client = held
        with _held(transport):
            await self._exchange(
                receive, send, (rid, name, args, meta, client, run), session=session
            )
        return True

    def _live_session(self, sid: str) -> Any:
        """The SDK's transport of an open session this path may serve, else ``None``.

        Reads the session manager's table of sessions (``_server_instances``,
        ``_session_owners``: MCP SDK 2.3): a session the SDK ended or let expire is
        not in it, and one created with an authenticated user (never, here) is left
        to the SDK, which compares the credential.
        """
        transport = self._manager._server_instances.get(sid)
        if transport is None or transport.is_terminated or sid in self._manager._session_owners:
            return None
        idle = transport.idle_scope
        if idle is not None and idle.cancel_called:
            return None
        return transport

    async def _exchange(
        self,
        receive: Receive,
        send: Send,
        call: tuple[int | str, str, dict[str, Any], dict[str, Any], str, Run],
        *,
        session: bytes | None,
    ) -> None:
        """Relay one call and answer its POST.

        ``call`` is (request id, tool, arguments, ``_meta``, client, run). A handshake
        client's call (``session``) can be cancelled by its ``notifications/cancelled``
        and is then answered ``Request cancelled``; a 2026-07-28 client's call is
        cancelled when the client closes the connection before its answer. The answer
        leaves when ``relay_call`` returns: for a read, right after its result was
        handed over and its record queued (the engine does not wait between the two).
        """
        rid, name, args, meta, client, run = call
        answer: list[dict[str, Any]] = []
        relaying = anyio.CancelScope()
        watcher: asyncio.Task[None] | None = None
        stamp = self._stamp

        def reply(result: dict[str, Any]) -> None:
            if session is None:  # what the SDK adds to a 2026-07-28 result
                result["resultType"] = "complete"
                result["_meta"][SERVER_INFO_META_KEY] = stamp
            answer.append({"jsonrpc": "2.0", "id": rid, "result": result})
            if watcher is not None:
                watcher.cancel()  # once answered, leaving ends nothing

        async def relay() -> None:
            with relaying:
                try:
                    await self._gateway.relay_call(name, args, meta, client, reply, run=run)
                except Exception as exc:
                    say(f"error: {name}: {describe(exc)}", self._errlog)
                    if not answer:
                        answer.append(_error(rid, INTERNAL_ERROR, "Internal server error"))

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            relaying.cancel()  # the client left before its answer

        self.served += 1
        if session is None:
            # a plain asyncio task, not an anyio task group: it only waits for the
            # client to leave, and is cancelled once the call is answered (the server
            # is uvicorn's, so the loop is asyncio's)
            watcher = asyncio.get_running_loop().create_task(watch())
            try:
                await relay()
            finally:
                watcher.cancel()
            if answer:  # else the client is gone
                error = answer[0].get("error")
                status = ERROR_CODE_HTTP_STATUS.get(error["code"], 200) if error else 200
                await _respond(send, status, dumps(answer[0]), [])
            return
        key = (session.decode("latin-1"), rid)
        self._inflight[key] = relaying
        try:
            await relay()
        finally:
            del self._inflight[key]
        if not answer:  # cancelled by the client's notifications/cancelled
            answer.append(_error(rid, REQUEST_CANCELLED, "Request cancelled"))
        await _respond(send, 200, dumps(answer[0]), [(b"mcp-session-id", session)])

    async def _cancel(self, session: str, params: dict[str, Any], send: Send) -> bool:
        """Cancel a raw call of ``session``; False when it is not one (the SDK's then)."""
        rid = params.get("requestId")
        scope = self._inflight.get((session, rid)) if _is_request_id(rid) else None
        if scope is None or self._live_session(session) is None:
            return False
        scope.cancel()
        await _respond(send, 202, b"", [(b"mcp-session-id", session.encode("latin-1"))])
        return True


def _error(rid: int | str, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    head = [(b"content-type", _JSON), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def _replay(
    chunks: list[bytes], last: Message | None, receive: Receive, more: bool = False
) -> Receive:
    """A ``receive`` that gives what was read already (as one message), then the rest."""
    queue: list[Message] = [
        {"type": "http.request", "body": b"".join(chunks), "more_body": more or last is not None}
    ]
    if last is not None:
        queue.append(last)

    async def replay() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replay


@contextmanager
def _held(transport: Any) -> Iterator[None]:
    """Hold the session's idle countdown while a raw call is served, as the SDK's
    ``StreamableHTTPServerTransport.handle_request`` does for a request it serves
    (MCP SDK 2.3: ``idle_scope``, ``_requests_in_flight``, ``_idle_timeout``)."""
    idle = transport.idle_scope
    timeout = transport._idle_timeout
    if idle is None or timeout is None:
        yield
        return
    transport._requests_in_flight += 1
    idle.deadline = math.inf
    try:
        yield
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            idle.deadline = anyio.current_time() + timeout
