"""The MCP SDK's low-level server on this process's stdin/stdout, behind the framing rules.

The SDK's own ``stdio_server`` drops a line it cannot parse or validate without
answering (python-sdk issue #2751) and stops serving when a result cannot be encoded.
:func:`serve_sdk_stdio` replaces it: lines are read by :class:`~._wire.LineReader` and
screened by :func:`~._wire.screen` (every mistake answered), validated into the SDK's
models (a request that does not validate is answered ``-32600`` with its id), and the
server's messages are written by :func:`pump`, which answers a result that cannot be
encoded with ``-32603`` instead of dying. ``reversi-connectors serve`` uses it; the
gateway's downstream uses :func:`to_sdk` and :func:`pump`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_REQUEST

from ._wire import (
    DEFAULT_MAX_MESSAGE_BYTES,
    LineReader,
    Mistake,
    Out,
    connect_reader,
    connect_writer,
    error_line,
    head_id,
    screen,
    stdio_fds,
)

__all__ = ["oversized", "pump", "serve_sdk_stdio", "to_sdk"]

Say = Callable[[str], None]


def _problem(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with suppress(Exception):
            first = errors()[0]
            where = ".".join(map(str, first.get("loc", ()))) or "message"
            return f"{where}: {first.get('msg', 'invalid')}"
    return " ".join(str(exc).split())[:200]


def to_sdk(message: dict[str, Any]) -> types.JSONRPCMessage | Mistake:
    """``message`` (screened) as the SDK's model, or the :class:`Mistake` to answer."""
    try:
        return types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValueError as exc:
        rid = message.get("id")
        request = "method" in message and rid is not None
        return Mistake(
            rid if request else None,
            INVALID_REQUEST,
            f"Invalid Request: {_problem(exc)}",
            answer=request,
        )


def oversized(head: bytes, size: int, limit: int) -> Mistake:
    """The :class:`Mistake` of a line of ``size`` bytes over ``limit`` that began with ``head``."""
    rid = head_id(head)
    return Mistake(
        rid,
        INVALID_REQUEST,
        f"Invalid Request: the message is {size} bytes long, over the limit of {limit} "
        "bytes (--max-message-bytes); it was dropped",
    )


async def pump(
    stream: MemoryObjectReceiveStream[SessionMessage],
    out: Out,
    say: Say,
    *,
    seen: Callable[[types.JSONRPCMessage], None] | None = None,
) -> None:
    """Write the SDK server's messages to ``out`` until the server stops.

    ``seen``, when given, is shown each message before it is written.

    A response whose result cannot be encoded (text that is not Unicode) is replaced by a
    ``-32603`` answer to the same id, said on stderr too; other unencodable messages are
    dropped with a line on stderr.
    """
    async with stream:
        async for item in stream:
            message = item.message
            if seen is not None:
                seen(message)
            try:
                data = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
            except ValueError as exc:  # pydantic's serialization error is a ValueError
                problem = " ".join(str(exc).split())[:300]
                rid = getattr(message, "id", None)
                if isinstance(message, types.JSONRPCResponse):
                    say(f"error: the answer to request {rid!r} cannot be encoded: {problem}")
                    out.write(
                        error_line(
                            rid,
                            INTERNAL_ERROR,
                            f"Internal error: the result cannot be encoded: {problem}",
                        )
                    )
                else:
                    say(
                        f"error: a message to the client was dropped, it cannot be encoded: {problem}"
                    )
                continue
            out.write(data + b"\n")
            await out.drain()


async def serve_sdk_stdio(
    server: Server[Any],
    *,
    say: Say,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> None:
    """Run ``server`` on this process's stdin/stdout until the client closes stdin.

    ``say`` prints one line on stderr (each framing mistake is said there as well as
    answered); ``max_message_bytes`` is the longest line accepted. When the client closes
    stdin the SDK's server stops and cancels the requests still running; each of them is
    answered ``-32000`` ("Connection closed", as the gateway answers them), so that a
    client that only half-closed still gets exactly one answer per request.
    """
    to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
    server_out, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    with stdio_fds() as (in_fd, out_fd):
        out = await connect_writer(out_fd, to_server.close)
        reader = _Reader(to_server, out, say, max_message_bytes)
        try:
            stop = await connect_reader(
                in_fd,
                LineReader(reader.on_line, reader.on_end, reader.on_oversized, max_message_bytes),
            )
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(partial(pump, seen=reader.answered), from_server, out, say)
                    await server.run(server_in, server_out, server.create_initialization_options())
                for rid in reader.unanswered():
                    out.write(error_line(rid, CONNECTION_CLOSED, "Connection closed"))
                with suppress(OSError):
                    await out.drain()
            finally:
                stop()
        finally:
            out.close()


class _Reader:
    """Hands screened, validated messages to the server; answers every mistake."""

    def __init__(
        self,
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        out: Out,
        say: Say,
        limit: int,
    ) -> None:
        self._to_server = to_server
        self._out = out
        self._say = say
        self._limit = limit
        # ids of the requests handed to the server and not answered yet, in arrival order
        self._pending: dict[Any, None] = {}

    def answered(self, message: types.JSONRPCMessage) -> None:
        """:func:`pump`'s ``seen``: a response or error to a request settles it."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._pending.pop(message.id, None)

    def unanswered(self) -> list[Any]:
        """The ids of the requests the server never answered (it stopped first)."""
        return list(self._pending)

    def refuse(self, mistake: Mistake) -> None:
        """Say ``mistake`` on stderr and answer it when it is a request's."""
        self._say(f"refused a message from the client: {mistake.message}")
        if mistake.answer:
            self._out.write(mistake.line())

    def on_line(self, line: bytes) -> None:
        checked = screen(line)
        if checked is None:  # a blank line
            return
        if isinstance(checked, Mistake):
            self.refuse(checked)
            return
        model = to_sdk(checked)
        if isinstance(model, Mistake):
            self.refuse(model)
            return
        if isinstance(model, types.JSONRPCRequest):
            self._pending[model.id] = None
        elif (
            isinstance(model, types.JSONRPCNotification)
            and model.method == "notifications/cancelled"
            and isinstance(model.params, dict)
        ):
            # a cancelled request gets no answer (MCP's cancellation rules)
            self._pending.pop(model.params.get("requestId"), None)
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._to_server.send_nowait(SessionMessage(model))

    def on_oversized(self, head: bytes, size: int) -> None:
        self.refuse(oversized(head, size, self._limit))

    def on_end(self, exc: Exception | None) -> None:
        self._to_server.close()
