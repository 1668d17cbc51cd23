"""The upstream's lean HTTP/1.1 client (``mcp/_http11.py``) against a small server of this
test on 127.0.0.1: connections kept and reused, one the server closed while idle
replaced, and the two kinds of failure (nothing sent, the answer lost)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import h11
import pytest

from reversi_core.mcp._http11 import Broken, NotSent, Pool

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


Behaviour = Callable[[int, h11.Request, bytes], bytes | list[bytes] | None]
"""(connection number, request, body) -> the answer's body (a list: sent chunked, in
those pieces), or None to close unanswered."""


@asynccontextmanager
async def server(
    behaviour: Behaviour, *, close_after_answer: bool = False
) -> AsyncIterator[tuple[int, list[int]]]:
    """A one-origin HTTP/1.1 server; yields its port and the count of connections."""
    accepted: list[int] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def serve(stream: anyio.abc.SocketStream) -> None:
        accepted.append(1)
        number = len(accepted)
        conn = h11.Connection(our_role=h11.SERVER)
        async with stream:
            while True:
                request: h11.Request | None = None
                body = b""
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        try:
                            conn.receive_data(await stream.receive())
                        except (anyio.EndOfStream, anyio.BrokenResourceError):
                            return
                        continue
                    if isinstance(event, h11.Request):
                        request = event
                    elif isinstance(event, h11.Data):
                        body += bytes(event.data)
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                assert request is not None
                answer = behaviour(number, request, body)
                if answer is None:
                    return  # closes without answering
                if isinstance(answer, list):  # chunked, one piece at a time
                    events = [(b"content-type", b"text/event-stream")]
                    await stream.send(conn.send(h11.Response(status_code=200, headers=events)))
                    for piece in answer:
                        await stream.send(conn.send(h11.Data(data=piece)))
                        await anyio.sleep(0.01)
                    await stream.send(conn.send(h11.EndOfMessage()))
                else:
                    head = [
                        (b"content-type", b"application/json"),
                        (b"content-length", b"%d" % len(answer)),
                    ]
                    await stream.send(
                        conn.send(h11.Response(status_code=200, headers=head))
                        + conn.send(h11.Data(data=answer))
                        + conn.send(h11.EndOfMessage())
                    )
                if close_after_answer:
                    return
                conn.start_next_cycle()

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        try:
            yield port, accepted
        finally:
            tg.cancel_scope.cancel()


def pool(port: int, **headers: str) -> Pool:
    return Pool("http", "127.0.0.1", port, ssl_context=None, headers=headers, connect_timeout=5.0)


async def test_a_connection_is_kept_and_reused_and_headers_are_sent() -> None:
    seen: list[dict[bytes, bytes]] = []

    def echo(number: int, request: h11.Request, body: bytes) -> bytes:
        seen.append(dict(request.headers))
        return b'{"n": %d, "body": %s}' % (number, body)

    async with server(echo) as (port, accepted):
        client = pool(port, Authorization="Bearer t0ken")
        for i in range(3):
            response = await client.request("POST", "/mcp", {"X-Step": str(i)}, b'"%d"' % i)
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/json"
            assert await response.aread() == b'{"n": 1, "body": "%d"}' % i
            await response.aclose()
        await client.aclose()
    assert len(accepted) == 1  # one keep-alive connection for the three
    assert [h[b"x-step"] for h in seen] == [b"0", b"1", b"2"]
    assert all(h[b"authorization"] == b"Bearer t0ken" for h in seen)
    assert all(h[b"host"] == f"127.0.0.1:{port}".encode() for h in seen)


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    async with server(lambda n, r, b: b"%d" % n, close_after_answer=True) as (port, accepted):
        client = pool(port)
        for expected in (b"1", b"2", b"3"):
            response = await client.request("POST", "/mcp", {}, b"{}")
            assert await response.aread() == expected
            await response.aclose()
            await anyio.sleep(0.05)  # the server's close reaches the client
        await client.aclose()
    assert len(accepted) == 3


async def test_an_answer_not_read_to_its_end_closes_its_connection() -> None:
    async with server(lambda n, r, b: b"x" * 100_000) as (port, accepted):
        client = pool(port)
        first = await client.request("GET", "/", {})
        await first.aclose()  # body never read: the connection cannot be reused
        second = await client.request("GET", "/", {})
        assert len(await second.aread()) == 100_000
        await second.aclose()
        await client.aclose()
    assert len(accepted) == 2


async def test_nothing_sent_and_an_answer_lost_are_told_apart() -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()  # nobody listens there
    with pytest.raises(NotSent):
        await pool(port).request("POST", "/mcp", {}, b"{}")
    async with server(lambda n, r, b: None) as (port, _):
        with pytest.raises(Broken, match="without answering"):
            await pool(port).request("POST", "/mcp", {}, b"{}")


async def test_event_stream_lines_split_at_cr_lf_only_and_utf8_across_chunks() -> None:
    data = '{"text": "a\u2028b \u00e9t\u00e9"}'.encode()  # U+2028 as it is, in a JSON string
    cut = data.index("\u00e9".encode()) + 1  # inside the two bytes of the first é
    pieces = [b"event: message\r\ndata: " + data[:cut], data[cut:] + b"\r", b"\n\r\nid: 7\n"]
    async with server(lambda n, r, b: pieces) as (port, _):
        client = pool(port)
        response = await client.request("POST", "/mcp", {}, b"{}")
        lines = [line async for line in response.aiter_lines()]
        await response.aclose()
        await client.aclose()
    assert lines == ["event: message", "data: " + data.decode(), "", "id: 7"]


@asynccontextmanager
async def raw_server(answer: bytes, *, close: bool) -> AsyncIterator[tuple[int, list[int]]]:
    """A server that reads one request's head and sends ``answer`` as it is, then
    closes the connection (``close``) or keeps it open and answers the same again."""
    accepted: list[int] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def serve(stream: anyio.abc.SocketStream) -> None:
        accepted.append(1)
        async with stream:
            while True:
                got = b""
                while b"\r\n\r\n" not in got:
                    try:
                        got += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return
                await stream.send(answer)
                if close:
                    return

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        try:
            yield port, accepted
        finally:
            tg.cancel_scope.cancel()


async def test_an_answer_after_a_1xx_and_one_that_ends_with_its_connection_are_read() -> None:
    after_continue = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
    )
    async with raw_server(after_continue, close=False) as (port, accepted):
        client = pool(port)
        for _ in range(2):
            response = await client.request("POST", "/mcp", {}, b"{}")
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/json"
            assert await response.aread() == b"{}"
            await response.aclose()
        await client.aclose()
    assert len(accepted) == 1  # kept for the second request
    until_close = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it"
    async with raw_server(until_close, close=True) as (port, accepted):
        client = pool(port)
        for _ in range(2):
            response = await client.request("POST", "/mcp", {}, b"{}")
            assert await response.aread() == b"all of it"
            await response.aclose()
        await client.aclose()
    assert len(accepted) == 2  # a body that ended with its connection: not reused


async def test_a_header_that_would_break_the_request_is_refused_before_anything_is_sent() -> None:
    async with raw_server(b"HTTP/1.1 204 No Content\r\n\r\n", close=False) as (port, accepted):
        client = pool(port)
        with pytest.raises(NotSent, match="bad header 'X-Evil'"):
            await client.request("POST", "/mcp", {"X-Evil": "a\r\nInjected: yes"}, b"{}")
        with pytest.raises(NotSent, match="bad header 'Bad Name'"):
            await client.request("POST", "/mcp", {"Bad Name": "v"}, b"{}")
        bad_credentials = pool(port, Authorization="Bearer a\nb")
        with pytest.raises(NotSent, match="bad header 'Authorization'"):
            await bad_credentials.request("POST", "/mcp", {}, b"{}")
        response = await client.request("POST", "/mcp", {"X-Fine": "v\twith a tab"}, b"{}")
        assert response.status_code == 204
        await response.aclose()
        await client.aclose()
    assert len(accepted) == 1  # the refused requests sent nothing
