"""JSON-RPC lines over pipes, and the framing rules every Reversi MCP server applies.

The bottom layer of both ``reversi-gateway`` and ``reversi-connectors serve``: bytes in,
one JSON-RPC message per line, answers out. :class:`LineReader` splits what a pipe
delivers into lines with a size limit; :func:`screen` decides, for each line, whether it
is a message to hand on or a mistake to answer at once; the writers put lines on a pipe,
a socket or any other descriptor.

Framing rules (docs/mcp.md, "Framing"), so that no client is ever left waiting:

* a line that is not JSON is answered ``-32700`` (parse error) with ``"id": null``;
* a JSON array (a JSON-RPC batch, which MCP does not use) and any other non-object are
  answered ``-32600`` (invalid request) with ``"id": null``;
* a request whose ``params`` is not an object (``null``, an array, a number), or a
  ``tools/call`` without a string ``name`` or with ``arguments`` that are not an object,
  is answered ``-32602`` (invalid params) with the request's id;
* a line longer than the limit (``--max-message-bytes``, default
  :data:`DEFAULT_MAX_MESSAGE_BYTES`) is dropped as it streams in, never held whole: it is
  answered ``-32600`` with the request's id when the first bytes of the line name one at
  the top level, else with ``"id": null``; memory stays within about the limit plus one
  read;
* every mistake is also said on stderr. Notifications are never answered (JSON-RPC), but
  a malformed one is said on stderr too.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

from .._json import dumps_line, loads

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "BlockingOut",
    "LineReader",
    "Mistake",
    "Out",
    "PipeOut",
    "connect_reader",
    "connect_writer",
    "encode_line",
    "error_line",
    "head_id",
    "screen",
    "stdio_fds",
]

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Longest JSON-RPC line accepted by default: 16 MiB, room for the largest fs write
(a 10 MiB file as base64 is 13.3 MiB)."""

_HEAD_BYTES = 4096
"""How much of an oversized line is kept to find its request id."""


def encode_line(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as a line of UTF-8 bytes (any string can be encoded: see
    :mod:`reversi_core._json`)."""
    return dumps_line(message)


def error_line(rid: Any, code: int, message: str) -> bytes:
    """A JSON-RPC error answer to ``rid`` (``None`` gives ``"id": null``) as a line."""
    return encode_line({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


# -- screening one line ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mistake:
    """A line that breaks the framing rules: what to answer, and to whom.

    ``rid`` is the request id to answer (``None``: ``"id": null``); ``answer`` is false
    for a notification or a response, which get no answer; ``message`` says what is
    wrong, for the answer and for stderr.
    """

    rid: Any
    code: int
    message: str
    answer: bool = True

    def line(self) -> bytes:
        """The JSON-RPC error answer as a line."""
        return error_line(self.rid, self.code, self.message)


def _valid_id(rid: Any) -> bool:
    return (type(rid) is int) or (type(rid) is str)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        list: "an array",
        str: "a string",
        bool: "a boolean",
        dict: "an object",
        float: "a number with a fraction or an exponent",
    }.get(type(value), "a number")


def screen(line: bytes) -> dict[str, Any] | Mistake | None:
    """The message on ``line`` as parsed JSON, or the :class:`Mistake` it makes.

    ``None`` for a line of JSON whitespace only (spaces, tabs, a carriage return: the
    empty line of a client that ends its lines with CRLF), skipped as an empty line is.
    """
    try:
        message = loads(line)
    except ValueError as exc:
        if not line.strip(b" \t\r"):
            return None
        what = str(exc).split(":")[0] if not isinstance(exc, UnicodeDecodeError) else "not UTF-8"
        return Mistake(None, PARSE_ERROR, f"Parse error: the line is not JSON ({what})")
    except RecursionError:  # valid JSON maybe, but nested deeper than the parser goes
        return Mistake(
            None, PARSE_ERROR, "Parse error: the line nests arrays or objects too deeply to read"
        )
    if type(message) is not dict:
        if type(message) is list:
            return Mistake(
                None,
                INVALID_REQUEST,
                "Invalid Request: JSON-RPC batches (arrays) are not used by MCP; "
                "send one message per line",
            )
        return Mistake(
            None,
            INVALID_REQUEST,
            f"Invalid Request: a message is a JSON object, not {_kind(message)}",
        )
    if "method" not in message:
        if "result" in message or "error" in message:
            return message  # an answer to a request of ours: the receiver checks it
        rid = message.get("id")
        return Mistake(
            rid if _valid_id(rid) else None,
            INVALID_REQUEST,
            "Invalid Request: a message needs a method (a request or a notification), "
            "or a result or an error (an answer)",
        )
    has_id = "id" in message
    rid = message.get("id")
    if has_id and not _valid_id(rid):
        return Mistake(
            None,
            INVALID_REQUEST,
            f"Invalid Request: id must be a string or an integer, not {_kind(rid)}",
        )
    method = message["method"]
    if type(method) is not str:
        return Mistake(rid, INVALID_REQUEST, "Invalid Request: method must be a string", has_id)
    if "params" in message:
        params = message["params"]
        if type(params) is not dict:
            return Mistake(
                rid,
                INVALID_PARAMS,
                f"Invalid params: params of {method} must be an object, not {_kind(params)}",
                has_id,
            )
        if method == "tools/call":
            if type(params.get("name")) is not str:
                return Mistake(
                    rid,
                    INVALID_PARAMS,
                    "Invalid params: tools/call needs params.name, the tool's name as a string",
                    has_id,
                )
            arguments = params.get("arguments")
            if arguments is not None and type(arguments) is not dict:
                return Mistake(
                    rid,
                    INVALID_PARAMS,
                    f"Invalid params: arguments of tools/call must be an object, not {_kind(arguments)}",
                    has_id,
                )
    elif method == "tools/call":
        return Mistake(
            rid,
            INVALID_PARAMS,
            "Invalid params: tools/call needs params with the tool's name",
            has_id,
        )
    return message


def head_id(head: bytes) -> Any:
    """The request id named at the top level of the first bytes of a JSON object, or ``None``.

    Only members that can be read whole from ``head`` are looked at, in order, until
    ``"id"``; a member cut off by the end of ``head`` ends the search.
    """
    text = head.decode("utf-8", "ignore")
    decoder = json.JSONDecoder()
    i = len(text) - len(text.lstrip())
    if not text.startswith("{", i):
        return None
    i += 1
    try:
        while True:
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            key, i = decoder.raw_decode(text, i)
            while i < len(text) and text[i] in " \t\r\n":
                i += 1
            if not text.startswith(":", i):
                return None
            i += 1
            while i < len(text) and text[i] in " \t\r\n":
                i += 1
            value, i = decoder.raw_decode(text, i)
            if key == "id":
                return value if _valid_id(value) else None
    except ValueError:
        return None


# -- reading lines -----------------------------------------------------------------


class LineReader(asyncio.Protocol):
    """Splits what a pipe delivers into lines; calls ``on_line`` for each, ``on_end`` once.

    The callbacks run in the event loop's own callback, with no task switch in between:
    a message is handled as soon as the loop sees the bytes. A line longer than
    ``limit`` bytes is not kept: ``on_oversized(head, size)`` gets its first bytes and
    its length once its end (or the end of the input) arrives. A last line without a
    newline is handed on when the input ends.
    """

    def __init__(
        self,
        on_line: Callable[[bytes], None],
        on_end: Callable[[Exception | None], None],
        on_oversized: Callable[[bytes, int], None],
        limit: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self._on_line = on_line
        self._on_end = on_end
        self._on_oversized = on_oversized
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._skipping: bytes | None = None  # the head of an oversized line being dropped
        self._ended = False

    def data_received(self, data: bytes) -> None:
        end = data.find(b"\n")
        if end < 0:
            self._hold(data)
            return
        start = 0
        if self._parts or self._skipping is not None:
            self._hold(data[:end])
            self._line_done()
            start = end + 1
            end = data.find(b"\n", start)
        on_line, limit = self._on_line, self._limit
        while end >= 0:
            if end - start > limit:
                self._on_oversized(data[start : start + _HEAD_BYTES], end - start)
            elif end > start:
                on_line(data[start:end])
            start = end + 1
            end = data.find(b"\n", start)
        if start < len(data):
            self._hold(data[start:])

    def _hold(self, data: bytes) -> None:
        """Keep part of a line whose end has not come yet (or count it, when too long)."""
        if self._skipping is not None:
            self._size += len(data)
            return
        self._parts.append(data)
        self._size += len(data)
        if self._size > self._limit:
            self._skipping = b"".join(self._parts)[:_HEAD_BYTES]
            self._parts.clear()

    def _line_done(self) -> None:
        size, head = self._size, self._skipping
        parts = self._parts
        self._parts, self._size, self._skipping = [], 0, None
        if head is not None:
            self._on_oversized(head, size)
        elif size:
            self._on_line(b"".join(parts))

    def eof_received(self) -> bool | None:
        self._end(None)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc)

    def _end(self, exc: Exception | None) -> None:
        if not self._ended:
            self._ended = True
            if self._parts or self._skipping is not None:
                self._line_done()  # a last line without its newline
            self._on_end(exc)


async def connect_reader(fd: int, protocol: LineReader) -> Callable[[], None]:
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

    threading.Thread(target=read, name="reversi-stdin", daemon=True).start()
    return lambda: None


# -- writing lines -----------------------------------------------------------------


class WriteProtocol(asyncio.streams.FlowControlMixin):
    """The write side of a pipe: flow control for ``drain``, and a call when it breaks."""

    def __init__(self, on_lost: Callable[[], None]) -> None:
        super().__init__()
        self._on_lost = on_lost

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._on_lost()


class Out:
    """Where lines to a peer go."""

    def write(self, data: bytes) -> None:
        """Queue ``data`` (dropped once the peer is gone)."""
        raise NotImplementedError

    async def drain(self) -> None:
        """Wait while the peer is not reading fast enough."""

    def close(self) -> None:
        """Close the descriptor (after what was queued)."""


class PipeOut(Out):
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


class BlockingOut(Out):
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


async def connect_writer(fd: int, on_lost: Callable[[], None]) -> Out:
    """Lines to ``fd``: through the event loop for a pipe or socket, else blocking writes."""
    loop = asyncio.get_running_loop()
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return BlockingOut(fd, on_lost)
    transport, protocol = await loop.connect_write_pipe(
        lambda: WriteProtocol(on_lost), os.fdopen(fd, "wb", buffering=0)
    )
    return PipeOut(asyncio.StreamWriter(transport, protocol, None, loop))


@contextmanager
def stdio_fds() -> Iterator[tuple[int, int]]:
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
