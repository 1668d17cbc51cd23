"""Framing that never leaves a client waiting (docs/mcp.md, "Framing").

Each case is sent, as raw bytes on stdin, to two servers: ``reversi-gateway`` in front of
``reversi-connectors serve fs``, and ``reversi-connectors serve fs`` alone (whose reader
replaces the MCP SDK's, which drops such lines unanswered: python-sdk issue #2751). Each
must answer the mistake, keep answering later requests, and give every request exactly
one answer; an oversized line must not be held in memory.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent
LIMIT = 64 * 1024


def _script(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else name


GATEWAY = _script("reversi-gateway")
CONNECTORS = _script("reversi-connectors")


class Peer:
    """A server process spoken to in raw lines."""

    def __init__(self, argv: list[str], errlog: Path) -> None:
        self.errlog = errlog
        with errlog.open("w") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err
            )
        self._pending = b""

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def recv(self, timeout: float = 30.0) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def initialize(self) -> None:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "framing", "version": "1"},
        }
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params})
        answer = self.recv()
        assert answer is not None
        assert "result" in answer, answer
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def ping(self, rid: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
        assert self.recv() == {"jsonrpc": "2.0", "id": rid, "result": {}}

    def peak_kb(self) -> int:
        """The peak resident memory of the server process itself (VmHWM), in kB."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        raise AssertionError("no VmHWM")

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)

    def stderr(self) -> str:
        return self.errlog.read_text()


@pytest.fixture(params=["gateway", "serve"])
def peer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Peer]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("hello")
    serve = [CONNECTORS, "serve", "fs", "--root", str(root)]
    if request.param == "serve":
        argv = [*serve, "--max-message-bytes", str(LIMIT)]
    else:
        manifests = tmp_path / "manifests"
        manifests.mkdir()
        out = subprocess.run(
            [CONNECTORS, "manifests", "fs"], check=True, capture_output=True, text=True
        )
        (manifests / "fs.json").write_text(out.stdout)
        argv = [GATEWAY, "--manifests", str(manifests), "--data", str(tmp_path / "data")]
        argv += ["--max-message-bytes", str(LIMIT), "--upstream-cmd", serve[0]]
        for arg in serve[1:]:
            argv += ["--upstream-arg", arg]
    opened = Peer(argv, tmp_path / "stderr.log")
    yield opened
    if opened.proc.poll() is None:
        opened.proc.kill()
        opened.proc.wait()
    for pipe in (opened.proc.stdin, opened.proc.stdout):
        if pipe is not None:
            pipe.close()


def read_call(rid: Any) -> dict[str, Any]:
    params = {"name": "fs.read_file", "arguments": {"path": "a.txt"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def assert_error(answer: dict[str, Any] | None, rid: Any, code: int, words: str) -> None:
    assert answer is not None, "no answer"
    assert answer["id"] == rid, answer
    assert answer["error"]["code"] == code, answer
    assert words in answer["error"]["message"], answer


def assert_read(peer: Peer, rid: Any) -> None:
    peer.send(read_call(rid))
    answer = peer.recv()
    assert answer is not None
    assert answer["id"] == rid, answer
    assert answer["result"]["structuredContent"]["content"] == "hello"


def test_a_line_that_is_not_json_is_answered_and_the_session_goes_on(peer: Peer) -> None:
    peer.initialize()
    peer.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
    assert_error(peer.recv(), None, -32700, "not JSON")
    peer.send_raw(b"\xff\xfe not utf-8\n")
    assert_error(peer.recv(), None, -32700, "not JSON")
    assert_read(peer, 2)
    assert peer.close() == 0
    assert "refused a message from the client: Parse error" in peer.stderr()


def test_a_line_nested_too_deeply_to_parse_is_answered(peer: Peer) -> None:
    """Valid JSON nested deeper than the parser recurses (10 KB here) is a parse error too."""
    peer.initialize()
    depth = 5000
    line = (
        '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "fs.list_dir", '
        '"arguments": {"path": ' + "[" * depth + "]" * depth + "}}}\n"
    )
    peer.send_raw(line.encode())
    assert_error(peer.recv(), None, -32700, "too deeply")
    assert_read(peer, 4)
    peer.send({"jsonrpc": "2.0", "id": 1.5, "method": "ping"})
    assert_error(peer.recv(), None, -32600, "not a number with a fraction")
    assert peer.close() == 0


def test_a_batch_and_other_non_objects_are_answered(peer: Peer) -> None:
    peer.initialize()
    peer.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert_error(peer.recv(), None, -32600, "batches")
    peer.send_raw(b"42\n")
    assert_error(peer.recv(), None, -32600, "not a number")
    peer.send({"jsonrpc": "2.0", "id": [1], "method": "ping"})
    assert_error(peer.recv(), None, -32600, "id must be a string or an integer")
    assert_read(peer, 2)
    assert peer.close() == 0


@pytest.mark.parametrize(
    ("params", "words"),
    [
        (None, "must be an object, not null"),
        ([{"name": "fs.read_file"}], "must be an object, not an array"),
        ({"arguments": {"path": "a.txt"}}, "needs params.name"),
        ({"name": 7}, "needs params.name"),
        ({"name": "fs.read_file", "arguments": ["a.txt"]}, "arguments of tools/call"),
    ],
)
def test_wrong_params_get_invalid_params_with_the_request_id(
    peer: Peer, params: Any, words: str
) -> None:
    peer.initialize()
    peer.send({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params})
    assert_error(peer.recv(), 41, -32602, words)
    peer.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": None})
    assert_error(peer.recv(), "list", -32602, "params of tools/list must be an object")
    assert_read(peer, 42)
    assert peer.close() == 0


def test_every_request_gets_exactly_one_answer(peer: Peer) -> None:
    peer.initialize()
    lines = [
        json.dumps(read_call(1)),
        "not json",
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": None}),
        json.dumps([{"jsonrpc": "2.0", "id": 3, "method": "ping"}]),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": None}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}),
        json.dumps({"jsonrpc": "1.0", "id": 6, "method": "ping"}),
        json.dumps(read_call(7)),
    ]
    peer.send_raw("\n".join(lines).encode() + b"\n")
    answers = [peer.recv() for _ in range(8)]
    assert all(a is not None for a in answers), answers
    ids = sorted((str(a["id"]) for a in answers if a is not None), key=str)
    assert ids == sorted(["1", "None", "2", "None", "4", "5", "6", "7"], key=str)
    peer.ping("last")  # nothing else was pending: the next line is the ping's answer
    assert peer.recv(timeout=0.3) is None
    assert peer.close() == 0


def test_an_oversized_line_is_refused_without_being_held(peer: Peer) -> None:
    peer.initialize()
    assert_read(peer, 1)
    before = peer.peak_kb()
    big = "x" * (24 * 1024 * 1024)
    content = {"path": "big.txt", "content": big}
    huge = {"jsonrpc": "2.0", "id": 99, "method": "tools/call"}
    huge["params"] = {"name": "fs.write_file", "arguments": content}
    data = json.dumps(huge).encode() + b"\n"
    for start in range(0, len(data), 1 << 20):  # as a client would stream it
        peer.send_raw(data[start : start + (1 << 20)])
    assert_error(peer.recv(), 99, -32600, f"over the limit of {LIMIT} bytes")
    # the id comes after the params here: it cannot be known from the line's start
    late = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": big}, "id": 100}
    peer.send(late)
    assert_error(peer.recv(), None, -32600, "--max-message-bytes")
    assert_read(peer, 2)
    grown_mb = (peer.peak_kb() - before) / 1024
    assert grown_mb < 8, f"the peak memory grew by {grown_mb:.1f} MB for a 24 MiB line"
    assert peer.close() == 0
    assert "over the limit" in peer.stderr()
    assert not (Path(peer.errlog).parent / "root" / "big.txt").exists()


def test_requests_in_flight_when_the_client_closes_stdin_are_each_answered(peer: Peer) -> None:
    # a client that half-closes (stdin) still reads: every request it sent gets one answer,
    # its result or "Connection closed" (-32000) when it was cancelled by the end of input
    peer.initialize()
    ids = list(range(1, 21))
    peer.send_raw(b"".join(json.dumps(read_call(rid)).encode() + b"\n" for rid in ids))
    assert peer.proc.stdin is not None
    peer.proc.stdin.close()
    answers: list[dict[str, Any]] = []
    while (answer := peer.recv()) is not None:
        answers.append(answer)
    assert sorted(a["id"] for a in answers) == ids, answers
    for a in answers:
        if "error" in a:
            assert a["error"] == {"code": -32000, "message": "Connection closed"}, a
        else:
            assert a["result"]["structuredContent"]["content"] == "hello", a
    assert peer.proc.wait(timeout=60) == 0


def test_blank_lines_are_skipped_whatever_their_whitespace(peer: Peer) -> None:
    # an empty line, and the empty line of a client ending its lines with CRLF, are nothing
    peer.initialize()
    peer.send_raw(b"\n   \n\r\n\t \r\n")
    peer.ping("after-blank-lines")  # the next line out is the ping's answer, not an error
    assert "refused" not in peer.stderr()


def test_a_message_with_neither_method_nor_result_is_answered(peer: Peer) -> None:
    peer.initialize()
    peer.send({"jsonrpc": "2.0", "id": 7})
    assert_error(peer.recv(), 7, -32600, "needs a method")
    peer.send({"jsonrpc": "2.0", "id": [1], "params": {}})
    assert_error(peer.recv(), None, -32600, "needs a method")
    assert_read(peer, 8)
