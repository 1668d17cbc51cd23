"""The gateway's read fast path (docs/gateway.md, "A read's way"): a read-only call served
from the event loop's callbacks keeps the tool namespace, the step's ``_meta`` and the
engine's rules (CALL-4: answered first, journaled after).

The upstream is a raw JSON-RPC line server that is not a Reversi connector: it offers
the undotted tool ``read`` (``--tool-namespace ns`` makes it the manifests' ``ns.read``)
and writes every ``tools/call`` it receives to a file, so the test sees what went over
the wire.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from reversi_core import SQLiteJournal, StepState

GATEWAY = str(Path(sys.executable).with_name("reversi-gateway"))

UPSTREAM = textwrap.dedent(
    """
    import json, sys
    log = open(sys.argv[1], "a")
    for line in sys.stdin:
        msg = json.loads(line)
        rid, method = msg.get("id"), msg.get("method")
        if rid is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities":
                      {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"key": {"type": "string"}},
                      "required": ["key"]}
            result = {"tools": [{"name": "read", "inputSchema": schema}]}
        elif method == "tools/call":
            log.write(json.dumps(msg["params"]) + "\\n")
            log.flush()
            if msg["params"]["arguments"]["key"] == "exit":
                sys.exit(0)
            value = "value of " + msg["params"]["arguments"]["key"]
            result = {"content": [{"type": "text", "text": value}],
                      "structuredContent": {"value": value}}
        else:
            result = {}
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)
    """
)

MANIFEST = {
    "name": "ns.read",
    "effect": "read_only",
    "permission": "ns:read",
    "description": "Read a key.",
    "input_schema": {
        "type": "object",
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
    },
}


class Gateway:
    def __init__(self, tmp: Path) -> None:
        script = tmp / "raw.py"
        script.write_text(UPSTREAM)
        (tmp / "manifests").mkdir()
        (tmp / "manifests" / "ns.json").write_text(json.dumps([MANIFEST]))
        self.calls = tmp / "calls.jsonl"
        self.data = tmp / "data"
        argv = [GATEWAY, "--manifests", str(tmp / "manifests"), "--data", str(self.data)]
        argv += ["--tool-namespace", "ns", "--upstream-cmd", sys.executable]
        argv += ["--upstream-arg", str(script), "--upstream-arg", str(self.calls)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        with (tmp / "gateway.err").open("w") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
            )
        self._pending = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float = 30.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "no answer in time"
            if select.select([fd], [], [], remaining)[0]:
                chunk = os.read(fd, 65536)
                assert chunk, "the gateway closed its stdout"
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def initialize(self) -> None:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "reads", "version": "1"},
        }
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        assert "result" in self.recv()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, rid: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        params = {"name": tool, "arguments": args}
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
        return self.recv()

    def close(self) -> int:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        status = self.proc.wait(timeout=60)
        self.proc.stdout.close()
        return status


@pytest.mark.req("CALL-4", "CALL-5")
def test_a_read_under_a_tool_namespace_goes_out_by_its_wire_name_and_is_journaled(
    tmp_path: Path,
) -> None:
    gateway = Gateway(tmp_path)
    try:
        gateway.initialize()
        first = gateway.call(1, "read", {"key": "a"})
        second = gateway.call(2, "read", {"key": "b"})
        refused = gateway.call(3, "read", {"key": 7})  # invalid: refused by the engine
        assert gateway.close() == 0
    finally:
        if gateway.proc.poll() is None:
            gateway.proc.kill()
            gateway.proc.wait()
    assert first["result"]["structuredContent"] == {"value": "value of a"}
    assert second["result"]["structuredContent"] == {"value": "value of b"}
    assert refused["result"]["isError"] is True
    run_id = first["result"]["_meta"]["reversi/run"]
    assert (
        first["result"]["_meta"]["reversi/step"],
        second["result"]["_meta"]["reversi/step"],
    ) == (
        1,
        2,
    )
    sent = [json.loads(line) for line in gateway.calls.read_text().splitlines()]
    assert [s["name"] for s in sent] == ["read", "read"]  # the upstream's names, no refused call
    assert [s["_meta"]["reversi/step"] for s in sent] == [1, 2]
    assert [s["_meta"]["reversi/run_id"] for s in sent] == [run_id, run_id]
    assert sent[0]["_meta"]["reversi/idempotency_key"] == SQLiteJournal.forward_key(run_id, 1)
    with SQLiteJournal.open(gateway.data, create=False) as journal:
        steps = journal.list_steps(run_id)
        verified = journal.verify_run(run_id)
    assert [(s.seq, s.tool, s.state) for s in steps] == [
        (1, "ns.read", StepState.SUCCEEDED),
        (2, "ns.read", StepState.SUCCEEDED),
        (3, "ns.read", StepState.REJECTED),
    ]
    assert steps[0].result == {"value": "value of a"}
    assert verified.status == "ok", verified.describe()  # each read has its chain record


@pytest.mark.req("CALL-4")
def test_a_read_whose_upstream_exits_is_answered_failed_and_the_next_read_restarts_it(
    tmp_path: Path,
) -> None:
    gateway = Gateway(tmp_path)
    try:
        gateway.initialize()
        gone = gateway.call(1, "read", {"key": "exit"})
        again = gateway.call(2, "read", {"key": "c"})
        assert gateway.close() == 0
    finally:
        if gateway.proc.poll() is None:
            gateway.proc.kill()
            gateway.proc.wait()
    assert gone["result"]["isError"] is True
    text = gone["result"]["content"][0]["text"]
    assert "exited or closed the connection during ns.read" in text
    assert again["result"]["structuredContent"] == {"value": "value of c"}
    run_id = again["result"]["_meta"]["reversi/run"]
    with SQLiteJournal.open(gateway.data, create=False) as journal:
        steps = journal.list_steps(run_id)
    assert [(s.seq, s.state) for s in steps] == [(1, StepState.FAILED), (2, StepState.SUCCEEDED)]
