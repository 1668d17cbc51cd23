"""A lean HTTP/1.1 client for the upstream: keep-alive connections, httptools' parser.

The gateway sends every ``tools/call`` to an ``--upstream-url`` upstream as one POST,
so the client's cost is on every call's path (docs/performance.md, "The gateway over
HTTP"). :class:`Pool` keeps up to ``keep`` idle keep-alive connections to the one
origin and opens another when all are busy; each request's head is formatted here
(each header checked: a token for a name, no CR, LF or other control in a value) and
written with its body in one ``send``: one TCP segment, where httpx/httpcore write them
apart. Each answer is parsed by `httptools <https://github.com/MagicStack/httptools>`_
(llhttp, the C parser of Node.js, which uvicorn uses too): its head, a body of a
``Content-Length``, of chunks, or up to the connection's end.
What the upstream client needs of an HTTP client, and nothing else:

* TLS verified with the context it is given (``ssl.create_default_context`` or
  httpx's, with the CA bundle of ``REVERSI_UPSTREAM_CA_FILE``), ALPN ``http/1.1``;
* nothing from the environment: no proxy, no ``.netrc``, no CA bundle variable (the
  upstream's token would go wherever a proxy variable says);
* no redirects followed, no cookies, no content decoding asked for (no
  ``Accept-Encoding``: the answer comes as it is);
* errors in two kinds: :class:`NotSent` (the connection could not be opened, so
  nothing reached the upstream) and :class:`Broken` (the connection failed once the
  request may have left). A kept connection the upstream closed while idle is found
  before it is reused (anything received while idle, as httpcore checks) and replaced.

Each connection is an :class:`asyncio.Protocol` on the event loop's own transport
(TLS by asyncio's ``SSLProtocol``), not an anyio stream: a receive is one wait on a
future and a send one ``write``, without the stream's checkpoints and its
``pause_reading``/``resume_reading`` around every receive (docs/performance.md, "The
gateway over HTTP"). The gateway runs on asyncio (uvicorn), and so must its callers.

A connection is reused only when its exchange ended cleanly (the answer read to its
end, keep-alive, nothing after it); one whose request was cancelled, or whose answer
was not read to its end, is closed.
"""

from __future__ import annotations

import asyncio
import codecs
import re
import socket
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress
from typing import cast

import anyio
import httptools

__all__ = ["Broken", "NotSent", "Pool", "Response"]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""A header name (RFC 9110, 5.6.2)."""
_BAD_FIELD = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
"""What a header value may not hold (RFC 9110, 5.5: no CR, LF, NUL or other controls)."""
_HELD = 1 << 20
"""Bytes of an answer held unread before the connection stops reading (flow control)."""
_EOL = re.compile("\r\n|\r|\n")


class NotSent(Exception):
    """The request never left: no connection, or TLS refused it."""


class Broken(Exception):
    """The connection failed after the request may have left (its answer is lost)."""


class _Wire(asyncio.Protocol):
    """One connection's bytes, on asyncio's transport directly (no stream layer: a
    receive is one wait on a future, a send one ``write``; docs/performance.md)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.ended = False
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._drained: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream protocol's transport (a socket's, or SSLProtocol's) is a Transport
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size > _HELD and self.transport is not None:
            self.transport.pause_reading()  # read on when the answer's reader catches up
            self._paused = True
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: BaseException | None) -> None:
        self.ended = True
        self.error = exc
        self._wake()
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def send(self, data: bytes) -> None:
        transport = self.transport
        if transport is None or transport.is_closing() or self.ended:
            raise Broken("the connection is closed")
        transport.write(data)
        if self._drained is not None:  # past the transport's high-water mark
            await self._drained

    async def receive(self) -> bytes:
        """What arrived (all of it, joined), or ``b""`` at the end of the stream."""
        if not self.chunks and not self.ended:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self.chunks:
            data = self.chunks.popleft() if len(self.chunks) == 1 else b"".join(self.chunks)
            self.chunks.clear()
            self.size = 0
            if self._paused and self.transport is not None:
                self._paused = False
                self.transport.resume_reading()
            return data
        if self.error is not None:
            raise Broken(_why(self.error, "the connection broke"))
        return b""


class _Answer:
    """What httptools parsed of one answer: its head, body chunks not yet read, and
    whether it ended."""

    __slots__ = (
        "body",
        "complete",
        "extra",
        "head_done",
        "headers",
        "keep_alive",
        "parser",
        "status",
    )

    def __init__(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: deque[bytes] = deque()
        self.head_done = False
        self.complete = False
        self.extra = False
        """Something came after the answer: the connection is not to be reused."""
        self.keep_alive = False
        self.status = 0
        self.parser = httptools.HttpResponseParser(self)

    def on_message_begin(self) -> None:
        if self.complete:
            self.extra = True
            return
        self.headers = []  # an answer after a 1xx: start over
        self.head_done = False

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.complete:
            self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        if self.complete:
            return
        self.status = self.parser.get_status_code()
        if self.status >= 200 or self.status == 101:
            self.head_done = True

    def on_body(self, body: bytes) -> None:
        if not self.complete:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if self.head_done and not self.complete:
            self.complete = True
            self.keep_alive = self.parser.should_keep_alive()  # (only known here)

    def ends_at_close(self) -> bool:
        """The body has neither a length nor chunks: it ends when the connection does."""
        names = {name for name, _ in self.headers}
        return b"content-length" not in names and b"transfer-encoding" not in names


class _Conn:
    __slots__ = ("answer", "idle_since", "wire")

    def __init__(self, wire: _Wire) -> None:
        self.wire = wire
        self.answer: _Answer | None = None
        self.idle_since = 0.0

    def stale(self, expiry: float) -> bool:
        """Expired, or anything happened while idle (the upstream closed it, or sent
        what it should not have): not to be reused."""
        wire = self.wire
        return (
            time.monotonic() - self.idle_since > expiry
            or wire.ended
            or bool(wire.chunks)
            or wire.transport is None
            or wire.transport.is_closing()
        )

    def close(self) -> None:
        if self.wire.transport is not None:
            self.wire.transport.abort()


class Response:
    """One answer: ``status_code``, ``headers`` (lowercase names), its body read with
    :meth:`aread` or :meth:`aiter_lines`; :meth:`aclose` gives the connection back."""

    def __init__(self, pool: Pool, conn: _Conn, answer: _Answer) -> None:
        self.status_code = answer.status
        self.headers: dict[str, str] = {}
        for name, value in answer.headers:
            key = name.decode("latin-1")
            if key not in self.headers:
                self.headers[key] = value.decode("latin-1")
        self._pool = pool
        self._conn: _Conn | None = conn
        self._answer = answer
        self._ended = False

    async def _chunks(self) -> AsyncIterator[bytes]:
        conn = self._conn
        answer = self._answer
        if conn is None or self._ended:
            return
        while True:
            while answer.body:
                yield answer.body.popleft()
            if answer.complete:
                self._ended = True
                return
            if not await _feed(conn, answer):  # the connection ended the body
                self._ended = True
                conn.wire.ended = True  # not to be reused
                return

    async def aread(self) -> bytes:
        """The whole body."""
        return b"".join([chunk async for chunk in self._chunks()])

    async def aiter_lines(self) -> AsyncIterator[str]:
        """The body's lines as they come, split as server-sent events are: at ``\r\n``,
        ``\n`` or ``\r`` only (never at the other line breaks of Unicode, which a JSON
        string may hold as they are), decoded as UTF-8 across chunk boundaries."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        async for chunk in self._chunks():
            text = pending + decoder.decode(chunk)
            held = text.endswith("\r")  # it may be the first half of "\r\n"
            *lines, pending = _EOL.split(text[:-1] if held else text)
            if held:
                pending += "\r"
            for line in lines:
                yield line
        lines = _EOL.split(pending + decoder.decode(b"", final=True))
        if lines[-1] == "":
            lines.pop()
        for line in lines:
            yield line

    async def aclose(self) -> None:
        """Give the connection back if the exchange ended cleanly, else close it."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._pool._release(conn, clean=self._ended)


class Pool:
    """Keep-alive connections to one origin (``scheme``, ``host``, ``port``).

    ``ssl_context`` is used for ``https``; ``headers`` go with every request (the
    credentials); ``connect_timeout`` bounds opening a connection, in seconds;
    ``keep`` idle connections are kept for at most ``expiry`` seconds.
    """

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None,
        headers: Mapping[str, str],
        connect_timeout: float,
        keep: int = 32,
        expiry: float = 60.0,
    ) -> None:
        self._host = host
        self._port = port
        self._tls = ssl_context if scheme == "https" else None
        default = 443 if scheme == "https" else 80
        name = host if host.isascii() else host.encode("idna").decode("ascii")
        name = f"[{name}]" if ":" in name else name
        authority = name if port == default else f"{name}:{port}"
        fixed = {"host": authority, **headers}
        self._unsendable = next(  # then every request is NotSent, naming the header
            (
                key
                for key, value in fixed.items()
                if not _TOKEN.fullmatch(key) or _BAD_FIELD.search(value.encode("latin-1"))
            ),
            None,
        )
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self._connect_timeout = connect_timeout
        self._keep = keep
        self._expiry = expiry
        self._idle: list[_Conn] = []
        self._closed = False

    async def request(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes = b""
    ) -> Response:
        """Send one request and read its answer's head; close the :class:`Response`.

        Raises :class:`NotSent` or :class:`Broken` (see the module docstring).
        """
        if self._unsendable is not None:
            raise NotSent(f"the request could not be encoded: bad header {self._unsendable!r}")
        lines = [f"{method} {target} HTTP/1.1\r\n".encode("ascii"), self._head]
        for name, value in headers.items():
            line = f"{name}: {value}\r\n".encode("latin-1")
            if _BAD_FIELD.search(line, 0, len(line) - 2) or not _TOKEN.fullmatch(name):
                raise NotSent(f"the request could not be encoded: bad header {name!r}")
            lines.append(line)
        lines.append(b"content-length: %d\r\n\r\n" % len(body))
        lines.append(body)
        data = b"".join(lines)  # one write, one segment
        conn = await self._acquire()
        done = False
        try:
            try:
                await conn.wire.send(data)
            except OSError as exc:
                raise Broken(_why(exc, "the connection broke while sending")) from None
            answer = conn.answer = _Answer()
            while not answer.head_done:
                if not await _feed(conn, answer):
                    raise Broken("the upstream closed the connection without answering")
            if answer.status == 101:
                raise Broken("the upstream switched protocols")
            done = True
            return Response(self, conn, answer)
        finally:
            if not done:
                await _drop(conn)

    async def _acquire(self) -> _Conn:
        while self._idle:
            conn = self._idle.pop()
            if not conn.stale(self._expiry):
                return conn
            await _drop(conn)
        if self._closed:
            raise NotSent("the HTTP client is closed")
        loop = asyncio.get_running_loop()
        wire = _Wire()
        tls = self._tls
        try:
            with anyio.fail_after(self._connect_timeout):
                await loop.create_connection(
                    lambda: wire,
                    self._host,
                    self._port,
                    ssl=tls,
                    server_hostname=self._host if tls is not None else None,
                    ssl_handshake_timeout=self._connect_timeout if tls is not None else None,
                )
        except TimeoutError:
            what = "TLS handshake" if tls is not None else "connection"
            raise NotSent(f"no {what} within {self._connect_timeout:g} s") from None
        except ssl.SSLError as exc:
            raise NotSent(_why(exc, "TLS failed")) from None
        except OSError as exc:
            raise NotSent(_why(exc, "no connection")) from None
        if wire.transport is not None:
            sock = wire.transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                with suppress(OSError):  # as asyncio does for the sockets it accepts
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Conn(wire)

    async def _release(self, conn: _Conn, *, clean: bool) -> None:
        answer = conn.answer
        if (
            clean
            and not self._closed
            and answer is not None
            and answer.complete
            and not answer.extra
            and answer.keep_alive
            and not conn.wire.chunks
            and not conn.wire.ended
            and len(self._idle) < self._keep
        ):
            conn.answer = None
            conn.idle_since = time.monotonic()
            self._idle.append(conn)
            return
        await _drop(conn)

    async def aclose(self) -> None:
        """Close every idle connection; later requests raise :class:`NotSent`."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await _drop(conn)


async def _feed(conn: _Conn, answer: _Answer) -> bool:
    """Parse what arrives next; False when the connection ended first (where the body
    of an answer without a length ends; anywhere else :class:`Broken`)."""
    data = await conn.wire.receive()
    if not data:
        if not answer.head_done:
            raise Broken("the upstream closed the connection without answering")
        if answer.ends_at_close():
            return False
        raise Broken("the upstream closed the connection")
    try:
        answer.parser.feed_data(data)
    except httptools.HttpParserUpgrade:
        raise Broken("the upstream switched protocols") from None
    except httptools.HttpParserError as exc:
        raise Broken(f"the upstream broke the HTTP protocol: {exc}") from None
    return True


async def _drop(conn: _Conn) -> None:
    conn.close()


def _why(exc: BaseException, what: str) -> str:
    text = str(exc)
    return f"{what}: {type(exc).__name__}{': ' + text if text else ''}"
