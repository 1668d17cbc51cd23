"""The framing layer alone: screening lines, the oversized-line reader, the SDK pump."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from reversi_core.mcp._sdkio import pump
from reversi_core.mcp._wire import LineReader, Mistake, Out, head_id, screen


class Collect(Out):
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


@pytest.mark.anyio
async def test_a_result_that_cannot_be_encoded_is_answered_and_the_pump_goes_on() -> None:
    send, receive = anyio.create_memory_object_stream[SessionMessage](10)
    bad = types.JSONRPCResponse(jsonrpc="2.0", id=7, result={"name": "caf\udce9"})
    good = types.JSONRPCResponse(jsonrpc="2.0", id=8, result={"name": "café"})
    said: list[str] = []
    out = Collect()
    async with send:
        await send.send(SessionMessage(bad))
        await send.send(SessionMessage(good))
    await pump(receive, out, said.append)
    first, second = out.data.decode("utf-8").splitlines()
    assert '"id":7' in first
    assert '"code":-32603' in first
    assert "cannot be encoded" in first
    assert '"id":8' in second
    assert "café" in second
    assert len(said) == 1
    assert "request 7" in said[0]


def test_screen_answers_each_mistake_with_the_right_code_and_id() -> None:
    cases = {
        b"{oops": (None, -32700),
        b"[1, 2]": (None, -32600),
        b'"text"': (None, -32600),
        b'{"jsonrpc": "2.0", "id": true, "method": "ping"}': (None, -32600),
        b'{"jsonrpc": "2.0", "id": 3, "method": 4}': (3, -32600),
        b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": null}': (3, -32602),
        b'{"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": {}}': ("x", -32602),
        b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call"}': (5, -32602),
    }
    for line, (rid, code) in cases.items():
        mistake = screen(line)
        assert isinstance(mistake, Mistake), line
        assert (mistake.rid, mistake.code, mistake.answer) == (rid, code, True), line
    notification = screen(b'{"jsonrpc": "2.0", "method": "notifications/x", "params": []}')
    assert isinstance(notification, Mistake)
    assert notification.answer is False  # a notification is never answered
    fine = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}
    assert (
        screen(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}')
        == fine
    )


def test_head_id_reads_only_a_top_level_id_it_can_see_whole() -> None:
    assert head_id(b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"na') == 12
    assert head_id(b'{"id": "a-b", "x": 1}') == "a-b"
    assert head_id(b'{"method": "x", "params": {"id": 5, "big": "xxxx') is None  # nested, cut
    assert head_id(b'{"id": null}') is None
    assert head_id(b"[1, 2") is None


def test_an_oversized_line_is_dropped_as_it_streams_and_the_next_one_kept() -> None:
    lines: list[bytes] = []
    oversized: list[tuple[bytes, int]] = []
    reader = LineReader(lines.append, lambda exc: None, lambda h, n: oversized.append((h, n)), 1024)
    reader.data_received(b'{"id": 1, "x": "' + b"y" * 600)
    reader.data_received(b"y" * 5000)
    assert reader._parts == []  # nothing of the long line is held past the limit
    reader.data_received(b'"}\n{"id": 2}\n{"id": 3')
    reader.eof_received()  # a last line without its newline is still handed on
    assert [n for _, n in oversized] == [600 + 5000 + 16 + 2]
    assert oversized[0][0].startswith(b'{"id": 1')
    assert lines == [b'{"id": 2}', b'{"id": 3']
