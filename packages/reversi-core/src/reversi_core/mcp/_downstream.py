"""The client's side of the gateway: each line screened, steady ``tools/call`` served raw.

Every line from the client goes through :func:`~._wire.screen` first, so a line that
breaks the framing rules (docs/mcp.md, "Framing") is answered at once and said on
stderr. The SDK's server sees the opening request (which decides the protocol era
exactly as in the SDK: a request with the 2026-07-28 envelope opens a modern
connection, anything else a handshake one) and the handshake itself. After that, a
``tools/call`` for a tool that needs nobody's approval is served from the event loop's
callbacks by :meth:`~.gateway.Gateway.relay_now` (a :class:`Relay`) when it can be (a
live stdio upstream, no tracing), else by :meth:`~.gateway.Gateway.relay_call` in a task
of its own, and answered here, as one JSON line; a ``notifications/cancelled`` for such
a call cancels it. Everything else
(``tools/list``, ``ping``, calls that need approval, answers to the SDK's elicitation
requests, requests the SDK refuses) is validated into SDK models and handed to the
SDK's server, whose messages come back through :meth:`Downstream.pump`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from typing import Any, Protocol, TextIO

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._messages import describe, say
from ._sdkio import oversized, pump, to_sdk
from ._wire import Mistake, Out, encode_line, screen

__all__ = ["Downstream", "Relay", "client_of"]


class Relay(Protocol):
    """What a raw ``tools/call`` is handed to: :class:`~.gateway.Gateway`."""

    @property
    def asks(self) -> frozenset[str]:
        """Tools whose calls need a person's approval: left to the SDK's server."""
        ...

    @property
    def inline(self) -> frozenset[str]:
        """Tools whose calls :meth:`relay_now` may serve."""
        ...

    async def relay_call(
        self,
        name: str,
        args: dict[str, Any],
        meta: dict[str, Any],
        client: str,
        reply: Callable[[dict[str, Any]], None],
    ) -> None:
        """Serve the call; ``reply`` gets its ``CallToolResult``, once."""
        ...

    def relay_now(
        self,
        name: str,
        args: dict[str, Any],
        meta: dict[str, Any],
        client: str,
        reply: Callable[[dict[str, Any]], None],
        fail: Callable[[Exception], None],
    ) -> Callable[[str], None] | None:
        """Serve the call from the loop's callbacks; its canceller, or None: not taken."""
        ...


class _Inline:
    """A raw call served from the event loop's callbacks (:meth:`Relay.relay_now`)."""

    __slots__ = ("canceller", "sent")

    def __init__(self) -> None:
        self.sent = False
        self.canceller: Callable[[str], None] | None = None

    def cancel(self, why: str) -> None:
        """Stop the call (nothing is answered)."""
        if not self.sent and self.canceller is not None:
            self.sent = True
            self.canceller(why)


def client_of(info: Any) -> str:
    """The client's name from a raw ``clientInfo`` object (``"the MCP client"`` without one)."""
    name = info.get("name") if type(info) is dict else None
    return name if type(name) is str and name else "the MCP client"


class Downstream:
    """See the module docstring. ``out`` is set once the client's stdout is connected."""

    def __init__(
        self,
        gateway: Relay,
        server: Server[Any],
        to_sdk: MemoryObjectSendStream[SessionMessage | Exception],
        errlog: TextIO,
        max_message_bytes: int,
    ) -> None:
        self.gateway = gateway
        self.out: Out | None = None
        self.refused = 0
        """How many messages from the client broke the framing rules."""
        self._to_sdk = to_sdk
        self._errlog = errlog
        self._limit = max_message_bytes
        self._asks = gateway.asks
        self._era: str | None = None  # "legacy" or "modern" once the SDK saw a request
        self._accepted = False  # on a legacy connection: the handshake is done
        self._init_ids: set[Any] = set()
        self._client = "the MCP client"
        self._stamp = server.server_info_stamp
        self._inline = gateway.inline
        self._inflight: dict[Any, asyncio.Task[None] | _Inline] = {}
        self._started: set[asyncio.Task[None]] = set()  # raw calls' tasks that began to run
        self._closing = False
        self._loop = asyncio.get_running_loop()

    # -- from the client -------------------------------------------------------------

    def on_line(self, line: bytes) -> None:
        """One line from the client."""
        try:
            self._on_line(line)
        except Exception as exc:  # a bug here must not stop the reading of the pipe
            say(f"error: a message from the client was dropped: {describe(exc)}", self._errlog)

    def on_oversized(self, head: bytes, size: int) -> None:
        """A line over the limit, dropped as it came; ``head`` is its beginning."""
        self.refuse(oversized(head, size, self._limit))

    def refuse(self, mistake: Mistake) -> None:
        """Answer a message that breaks the framing rules (when it is a request's), say it."""
        self.refused += 1
        say(f"refused a message from the client: {mistake.message}", self._errlog)
        if mistake.answer and self.out is not None:
            self.out.write(mistake.line())

    def _on_line(self, line: bytes) -> None:
        message = screen(line)
        if message is None:  # a blank line
            return
        if isinstance(message, Mistake):
            self.refuse(message)
            return
        method = message.get("method")
        if method == "tools/call":
            if self._era is not None and self._start_call(message):
                return
        elif method == "notifications/cancelled" and self._cancel(message):
            return
        self._hand_to_sdk(message)

    def on_end(self, exc: Exception | None = None) -> None:
        """The client closed stdin (or stdout broke): end the session.

        As the SDK does at the end of its read stream, calls still in flight are
        cancelled (the engine journals them) and answered ``Connection closed``.
        """
        if self._closing:
            return
        self._closing = True
        if exc is not None:
            say(f"the connection to the client broke: {describe(exc)}", self._errlog)
        self._to_sdk.close()
        closed = {"code": CONNECTION_CLOSED, "message": "Connection closed"}
        for rid, task in list(self._inflight.items()):
            if isinstance(task, _Inline):  # journaled at once, then answered as the SDK does
                task.cancel("the client closed the connection")
                del self._inflight[rid]
                self._answer(rid, error=closed)
                continue
            if task not in self._started:  # cancelled before it ran: nothing was journaled
                self._answer(rid, error=closed)
            task.cancel("the client closed the connection")

    async def finish(self) -> None:
        """Wait for the calls cancelled by :meth:`on_end` to be journaled."""
        tasks = [t for t in self._inflight.values() if isinstance(t, asyncio.Task)]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _start_call(self, message: dict[str, Any]) -> bool:
        """Serve a ``tools/call`` on the raw path if it can be; False leaves it to the SDK."""
        rid = message.get("id")
        if rid is None or rid in self._inflight:
            return False
        params = message["params"]  # screened: an object with a string name
        name = params["name"]
        if name in self._asks:
            return False
        args = params.get("arguments")
        if args is None:
            args = {}
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
            client, modern = client_of(meta.get(CLIENT_INFO_META_KEY)), True
        if name in self._inline and self._serve_now(rid, name, args, meta, client, modern):
            return True
        task = self._loop.create_task(self._serve_call(rid, name, args, meta, client, modern))
        self._inflight[rid] = task
        return True

    def _serve_now(
        self,
        rid: int | str,
        name: str,
        args: dict[str, Any],
        meta: dict[str, Any],
        client: str,
        modern: bool,
    ) -> bool:
        """Serve a call without a task (:meth:`Relay.relay_now`); False: not taken."""
        call = _Inline()
        self._inflight[rid] = call

        def reply(result: dict[str, Any]) -> None:
            if call.sent:
                return
            call.sent = True
            if self._inflight.get(rid) is call:
                del self._inflight[rid]
            if modern:  # what the SDK adds to a 2026-07-28 result
                result["resultType"] = "complete"
                result["_meta"][SERVER_INFO_META_KEY] = self._stamp
            self._answer(rid, result=result)

        def fail(exc: Exception) -> None:
            say(f"error: {name}: {describe(exc)}", self._errlog)
            if not call.sent:
                call.sent = True
                if self._inflight.get(rid) is call:
                    del self._inflight[rid]
                self._answer(
                    rid, error={"code": INTERNAL_ERROR, "message": "Internal server error"}
                )

        try:
            canceller = self.gateway.relay_now(name, args, meta, client, reply, fail)
        except Exception as exc:
            fail(exc)
            return True
        if canceller is None:
            del self._inflight[rid]
            return False
        call.canceller = canceller
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
            await self.gateway.relay_call(name, args, meta, client, reply)
        except asyncio.CancelledError:
            if self._closing and not sent:  # the session ends (not the client's cancel)
                self._answer(rid, error={"code": CONNECTION_CLOSED, "message": "Connection closed"})
            raise
        except Exception as exc:
            say(f"error: {name}: {describe(exc)}", self._errlog)
            if not sent:
                self._answer(
                    rid, error={"code": INTERNAL_ERROR, "message": "Internal server error"}
                )
            return
        finally:
            self._started.discard(this)
            if self._inflight.get(rid) is this:
                del self._inflight[rid]
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
            self.out.write(encode_line(message))

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

    def _hand_to_sdk(self, message: dict[str, Any]) -> None:
        parsed = to_sdk(message)
        if isinstance(parsed, Mistake):
            self.refuse(parsed)
            return
        if isinstance(parsed, types.JSONRPCRequest):
            if self._era is None:  # the SDK's own rule (serve_dual_era_loop)
                params = parsed.params
                meta = params.get("_meta") if isinstance(params, dict) else None
                modern = isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta
                self._era = "modern" if parsed.method != "initialize" and modern else "legacy"
            if parsed.method == "initialize":
                self._init_ids.add(parsed.id)
                params = message.get("params")
                self._client = client_of(params.get("clientInfo") if type(params) is dict else None)
        elif (
            isinstance(parsed, types.JSONRPCNotification)
            and parsed.method == "notifications/initialized"
        ):
            self._accepted = True
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._to_sdk.send_nowait(SessionMessage(parsed))

    # -- from the SDK ----------------------------------------------------------------

    async def pump(self, stream: MemoryObjectReceiveStream[SessionMessage]) -> None:
        """Write the SDK server's messages to the client."""
        assert self.out is not None
        await pump(stream, self.out, lambda text: say(text, self._errlog), seen=self._seen)

    def _seen(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse) and message.id in self._init_ids:
            self._accepted = True  # the SDK accepted the handshake
