"""The HTTP gateway's raw path (``mcp/_http_raw.py``): steady ``tools/call`` POSTs served
without the MCP SDK, answered as the SDK answers them, and refused exactly as before.

Plain httpx requests drive a ``reversi-gateway --listen`` child process in front of the
``box`` upstream of ``test_gateway.py``. Which path served a call shows on the wire: a
handshake session's call served raw is answered ``application/json``, one the SDK
serves ``text/event-stream``. Sending ``Accept`` twice (which the SDK reads as its first
value) leaves a call to the SDK, so the same call can be compared on both paths.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from _httpgw import GatewayProcess, mcp_headers, new_token
from test_gateway import Box

from reversi_core import SQLiteJournal, StepState

NEW = "2026-07-28"
OLD = "2025-11-25"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": NEW,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
}


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    made = Box(tmp_path_factory.mktemp("raw"))
    yield made
    marker = made.tmp / "hang.json"
    if marker.exists():  # the upstream of a test that made it hang
        with suppress(ProcessLookupError):
            os.kill(json.loads(marker.read_text())["upstream"], signal.SIGKILL)


@pytest.fixture(scope="module")
def gateway(box: Box) -> Iterator[GatewayProcess]:
    gw = GatewayProcess(box.argv(), box.tmp / "gateway.err", token=new_token())
    yield gw
    gw.stop()


def call(
    rid: int, name: str, args: dict[str, Any], meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": args}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def modern_headers(name: str) -> dict[str, str]:
    return {**mcp_headers(NEW), "Mcp-Method": "tools/call", "Mcp-Name": name}


class Session:
    """A handshake (2025-11-25) session opened with plain HTTP requests."""

    def __init__(self, gw: GatewayProcess, http: httpx.Client) -> None:
        self.gw = gw
        self.http = http
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": OLD,
                "capabilities": {},
                "clientInfo": {"name": "raw-session", "version": "1"},
            },
        }
        opened = http.post(gw.url, json=init, headers=self.base(with_session=False))
        assert opened.status_code == 200, opened.text
        self.id = opened.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(gw.url, json=note, headers=self.base()).status_code == 202
        # the SDK handles the notification after its 202: until then the session's
        # calls are the SDK's; a request it answers after it is handled
        listed = {"jsonrpc": "2.0", "id": 0, "method": "tools/list"}
        assert http.post(gw.url, json=listed, headers=self.base()).status_code == 200

    def base(self, *, with_session: bool = True) -> dict[str, str]:
        out = {**mcp_headers(OLD), **self.gw.headers}
        if with_session:
            out["Mcp-Session-Id"] = self.id
        return out

    def post(self, message: dict[str, Any], **extra: str) -> httpx.Response:
        return self.http.post(self.gw.url, json=message, headers={**self.base(), **extra})


def answer_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a POST, whether a JSON body or an SSE stream."""
    kind = response.headers["content-type"].split(";")[0]
    if kind == "application/json":
        return dict(response.json())
    assert kind == "text/event-stream", kind
    events = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    found = [json.loads(e) for e in events if e]
    return next(m for m in found if "result" in m or "error" in m)


def without_step(result: dict[str, Any]) -> dict[str, Any]:
    out = dict(result)
    out["_meta"] = {k: v for k, v in result["_meta"].items() if k != "reversi/step"}
    return out


def test_a_session_call_is_served_raw_and_answered_as_the_sdk_answers_it(
    gateway: GatewayProcess,
) -> None:
    with httpx.Client(timeout=60) as http:
        session = Session(gateway, http)
        raw = session.post(call(1, "box.write", {"name": "s.txt", "text": "one"}))
        assert raw.status_code == 200
        assert raw.headers["content-type"] == "application/json"  # the raw path's answer
        assert raw.headers["mcp-session-id"] == session.id
        sdk = http.post(
            gateway.url,
            json=call(2, "box.write", {"name": "s2.txt", "text": "two"}),
            headers=[*session.base().items(), ("Accept", "application/json")],
        )
        assert sdk.headers["content-type"].startswith("text/event-stream")  # the SDK's
        first, second = answer_of(raw), answer_of(sdk)
    assert first["id"] == 1
    assert second["id"] == 2
    assert first["result"]["_meta"]["reversi/outcome"] == "succeeded"
    steps = [a["result"]["_meta"]["reversi/step"] for a in (first, second)]
    assert steps[0] + 1 == steps[1]  # one run: the session's
    assert without_step(first["result"]) == without_step(second["result"])


def test_a_stateless_call_is_answered_raw_as_the_sdk_answers_it(gateway: GatewayProcess) -> None:
    headers = {**modern_headers("box.read"), **gateway.headers}
    message = call(5, "box.read", {"name": "s.txt"}, ENVELOPE)
    write = call(4, "box.write", {"name": "s.txt", "text": "one"}, ENVELOPE)
    with httpx.Client(timeout=60) as http:
        # the file read below, written here (not left to another test of this module)
        wrote = http.post(
            gateway.url, json=write, headers={**modern_headers("box.write"), **gateway.headers}
        )
        assert wrote.status_code == 200, wrote.text
        raw = http.post(gateway.url, json=message, headers=headers)
        sdk = http.post(
            gateway.url, json=message, headers=[*headers.items(), ("Accept", "application/json")]
        )
    assert raw.status_code == sdk.status_code == 200
    first, second = answer_of(raw), answer_of(sdk)
    assert first["result"]["structuredContent"] == {"text": "one"}
    assert first["result"]["resultType"] == "complete"
    assert (
        first["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "reversi-gateway"
    )
    assert without_step(first["result"]) == without_step(second["result"])


def test_what_the_sdk_refuses_is_refused_as_before_and_runs_nothing(
    gateway: GatewayProcess, box: Box
) -> None:
    port = gateway.url.split(":")[2].split("/")[0]
    write = call(9, "box.write", {"name": "refused.txt", "text": "no"})
    modern = call(9, "box.write", {"name": "refused.txt", "text": "no"}, ENVELOPE)
    with httpx.Client(timeout=60) as http:
        session = Session(gateway, http)
        assert session.post(write, Origin="http://evil.example.com").status_code == 403
        assert session.post(write, Host=f"evil.example.com:{port}").status_code == 421
        assert session.post(write, **{"Content-Type": "text/plain"}).status_code in (400, 415)
        assert session.post(write, Accept="application/json").status_code == 406
        assert session.post(write, **{"Mcp-Session-Id": "not-a-session"}).status_code == 404
        no_session = {**mcp_headers(OLD), **gateway.headers}
        assert http.post(gateway.url, json=write, headers=no_session).status_code == 400
        headers = {**modern_headers("box.write"), **gateway.headers}
        mismatch = http.post(gateway.url, json=modern, headers={**headers, "Mcp-Name": "box.read"})
        assert mismatch.status_code == 400
        assert "mcp-name header" in mismatch.json()["error"]["message"].lower()
        no_envelope = http.post(gateway.url, json=write, headers=headers)
        assert no_envelope.status_code == 400
        twice = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "box.write"}
        assert session.post(twice).status_code == 400
    assert not (box.root / "refused.txt").exists()


def test_a_session_kept_busy_by_raw_calls_outlives_its_idle_timeout(tmp_path: Path) -> None:
    box = Box(tmp_path)
    gw = GatewayProcess(box.argv("--idle-timeout", "1.5"), tmp_path / "gw.err", token=new_token())
    try:
        with httpx.Client(timeout=60) as http:
            session = Session(gw, http)
            started = time.monotonic()
            rid = 0
            while time.monotonic() - started < 3.5:  # more than twice the idle timeout
                rid += 1
                served = session.post(call(rid, "box.read", {"name": "none"}))
                assert served.headers["content-type"] == "application/json"
                time.sleep(0.3)
            listed = session.post({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
            assert listed.status_code == 200, "the SDK let a busy session expire"
            time.sleep(2.5)  # now idle for longer than the timeout
            gone = session.post(call(100, "box.read", {"name": "none"}))
            assert gone.status_code == 404
    finally:
        gw.stop()


def test_a_raw_call_is_cancelled_by_its_clients_notification(
    gateway: GatewayProcess, box: Box
) -> None:
    marker = box.tmp / "hang.json"
    marker.unlink(missing_ok=True)
    with httpx.Client(timeout=60) as http:
        session = Session(gateway, http)
        answers: list[httpx.Response] = []
        hung = threading.Thread(
            target=lambda: answers.append(
                session.post(call(31, "box.write", {"name": "h.txt", "text": "!hang"}))
            )
        )
        hung.start()
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline, "the upstream never got the call"
            time.sleep(0.05)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 31, "reason": "the user gave up"},
        }
        assert session.post(cancel).status_code == 202
        hung.join(30)
        assert answers, "the cancelled call's POST was never answered"
        assert answers[0].headers["content-type"] == "application/json"  # served raw
        assert answer_of(answers[0])["error"]["code"] == -32800
        after = answer_of(session.post(call(32, "box.read", {"name": "s.txt"})))
    run_id = after["result"]["_meta"]["reversi/run"]
    with SQLiteJournal.open(box.data, create=False) as journal:
        steps = journal.list_steps(run_id)
    cancelled = next(s for s in steps if s.tool == "box.write")
    assert cancelled.state is StepState.UNCERTAIN  # a write cut short may have happened


def test_an_answers_head_and_body_leave_in_one_write_and_close_writes_what_is_held() -> None:
    """uvicorn writes an answer's head and its body apart; the gateway's transport
    (``http_gateway._JoinedWrites``) joins the writes of one turn of the event loop
    into one, so the client gets one TCP segment and wakes up once."""
    import asyncio

    from reversi_core.mcp.http_gateway import _JoinedWrites

    class Transport:
        def __init__(self) -> None:
            self.writes: list[bytes] = []
            self.closed = False

        def write(self, data: bytes) -> None:
            self.writes.append(data)

        def is_closing(self) -> bool:
            return self.closed

        def close(self) -> None:
            self.closed = True

        def get_write_buffer_size(self) -> int:
            return 0

        def get_extra_info(self, name: str) -> Any:
            return ("127.0.0.1", 1) if name == "peername" else None

    async def scenario() -> tuple[list[bytes], list[bytes], list[bytes], Any]:
        real = Transport()
        joined = _JoinedWrites(real, asyncio.get_running_loop())
        joined.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        joined.write(b"")  # h11's end of a content-length body
        joined.write(b"{}")
        held = list(real.writes)  # nothing left yet
        assert joined.get_write_buffer_size() == 40
        await asyncio.sleep(0)
        first = list(real.writes)
        joined.write(b"last")
        joined.close()  # what is held leaves before the close
        return held, first, real.writes, joined.get_extra_info("peername")

    held, first, after, peer = asyncio.run(scenario())
    assert held == []
    assert first == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
    assert after == [*first, b"last"]
    assert peer == ("127.0.0.1", 1)  # everything else is the transport's


def test_a_stateless_raw_call_is_cancelled_when_its_client_leaves(
    gateway: GatewayProcess, box: Box
) -> None:
    import socket
    from urllib.parse import urlsplit

    marker = box.tmp / "hang.json"
    marker.unlink(missing_ok=True)
    body = json.dumps(call(41, "box.write", {"name": "l.txt", "text": "!hang"}, ENVELOPE))
    headers = {**modern_headers("box.write"), **gateway.headers}
    parts = urlsplit(gateway.url)
    head = f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    head += f"Content-Length: {len(body.encode())}\r\n\r\n"
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head.encode() + body.encode())
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline, "the upstream never got the call"
            time.sleep(0.05)
    # the client left before its answer: the call is cancelled, the write uncertain
    with httpx.Client(timeout=60) as http:
        read = http.post(
            gateway.url,
            json=call(42, "box.read", {"name": "s.txt"}, ENVELOPE),
            headers={**modern_headers("box.read"), **gateway.headers},
        )
    run_id = answer_of(read)["result"]["_meta"]["reversi/run"]
    deadline = time.monotonic() + 30
    while True:
        with SQLiteJournal.open(box.data, create=False) as journal:
            steps = [s for s in journal.list_steps(run_id) if s.tool == "box.write"]
        left = [s for s in steps if s.args.get("name") == "l.txt"]
        if left and left[-1].state is not StepState.PENDING:
            break
        assert time.monotonic() < deadline, f"the left call's step stayed {left}"
        time.sleep(0.1)
    assert left[-1].state is StepState.UNCERTAIN  # a write cut short may have happened
