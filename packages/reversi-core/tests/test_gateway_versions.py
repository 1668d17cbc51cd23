"""Each client in its own protocol version, whatever the upstream speaks; every answer
checked against that version's JSON Schema.

Clients speak 2025-06-18, 2025-11-25 (the ``initialize`` handshake, a session) and
2026-07-28 (stateless: no ``initialize``, no session id, ``server/discover``), in raw
JSON-RPC so that the exact bytes the gateway sends are checked (``_mcpschema``, the
specification's schemas in ``vendor/mcp/``). The gateway (``--listen``) fronts the box
connector three ways: over stdio (a 2025-11-25 handshake), over HTTP at 2026-07-28
(stateless) and over HTTP at 2025-11-25 (an upstream that refuses 2026-07-28). Over stdio
the gateway's own front door is checked for the three versions too.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _httpgw import GATEWAY, GatewayProcess, new_token
from _mcpschema import VERSIONS, check, response_definition
from test_gateway import Box
from test_gateway_http_upstream import BoxOverHttp

HANDSHAKE = ("2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
UPSTREAMS = ("stdio", "http-2026", "http-2025")


# -- a raw client ----------------------------------------------------------------------


class RawClient:
    """JSON-RPC over streamable HTTP by hand: one POST per message, JSON or SSE back."""

    def __init__(self, url: str, token: str, version: str) -> None:
        self.url = url
        self.version = version
        self.http = httpx.Client(timeout=60, headers={"Authorization": f"Bearer {token}"})
        self.session: str | None = None
        self.next_id = 0

    def headers(self, method: str, params: dict[str, Any] | None) -> dict[str, str]:
        out = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.version == MODERN:
            out["MCP-Protocol-Version"] = MODERN
            out["Mcp-Method"] = method
            name = (params or {}).get("name")
            if isinstance(name, str):
                out["Mcp-Name"] = name
        elif method != "initialize":
            out["MCP-Protocol-Version"] = self.version
        if self.session is not None:
            out["Mcp-Session-Id"] = self.session
        return out

    def envelope(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        }

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, status: int = 200
    ) -> dict[str, Any]:
        """Send a request; return its JSON-RPC answer (checked against the schema)."""
        self.next_id += 1
        if self.version == MODERN:
            params = dict(params or {})
            params["_meta"] = {**self.envelope(), **params.get("_meta", {})}
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        answer = self.http.post(
            self.url, content=json.dumps(message), headers=self.headers(method, params)
        )
        assert answer.status_code == status, (answer.status_code, answer.text)
        if method == "initialize":
            self.session = answer.headers.get("mcp-session-id")
        found = read_answer(answer, self.next_id)
        check(self.version, response_definition(self.version, "error" in found), found)
        return found

    def notify(self, method: str) -> int:
        message = {"jsonrpc": "2.0", "method": method}
        return self.http.post(
            self.url, content=json.dumps(message), headers=self.headers(method, None)
        ).status_code

    def open(self) -> dict[str, Any]:
        """The opening: ``initialize`` + ``notifications/initialized``, or ``server/discover``."""
        if self.version == MODERN:
            answer = self.request("server/discover")
            check(MODERN, "DiscoverResultResponse", answer)
            return answer["result"]
        answer = self.request(
            "initialize",
            {
                "protocolVersion": self.version,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        check(self.version, "InitializeResult", answer["result"])
        assert self.session, "a handshake opens a session"
        assert self.notify("notifications/initialized") == 202
        return answer["result"]

    def close(self) -> None:
        self.http.close()


def read_answer(response: httpx.Response, rid: int) -> dict[str, Any]:
    """The JSON-RPC message answering ``rid`` in a JSON body or an SSE stream."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        message: dict[str, Any] = response.json()
        return message
    assert kind.startswith("text/event-stream"), kind
    for block in response.text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip() for line in block.splitlines() if line.startswith("data:")]
        if data:
            found = json.loads("\n".join(data))
            if found.get("id") == rid:
                return dict(found)
    raise AssertionError(f"no answer to {rid} in {response.text[:500]}")


# -- the gateways --------------------------------------------------------------------


@pytest.fixture(scope="module")
def gateways(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, tuple[Box, GatewayProcess]]]:
    started: dict[str, tuple[Box, GatewayProcess]] = {}
    upstreams: list[BoxOverHttp] = []
    try:
        for kind in UPSTREAMS:
            box = Box(tmp_path_factory.mktemp(kind))
            if kind == "stdio":
                argv = box.argv()
            else:
                served = BoxOverHttp(box, *(["--handshake-only"] if kind == "http-2025" else []))
                upstreams.append(served)
                argv = [
                    "--manifests",
                    str(box.manifests),
                    "--data",
                    str(box.data),
                    "--upstream-url",
                    served.url,
                ]
            started[kind] = (box, GatewayProcess(argv, box.tmp / "gateway.err", token=new_token()))
        yield started
    finally:
        for _, gw in started.values():
            gw.stop()
        for served in upstreams:
            served.stop()


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("version", VERSIONS)
def test_every_client_version_is_served_in_its_own_version(
    gateways: dict[str, tuple[Box, GatewayProcess]], upstream: str, version: str
) -> None:
    box, gw = gateways[upstream]
    client = RawClient(gw.url, gw.token, version)
    try:
        opened = client.open()
        if version == MODERN:
            # handshake versions are not discovered: a client of one sends initialize
            assert opened["supportedVersions"] == [MODERN]
            assert opened["capabilities"]["tools"] is not None
        else:
            assert opened["protocolVersion"] == version
        assert opened["serverInfo" if version != MODERN else "capabilities"]

        listed = client.request("tools/list")
        check(version, "ListToolsResult", listed["result"])
        names = {t["name"] for t in listed["result"]["tools"]}
        assert names == {"box.write", "box.guarded_write", "box.restore", "box.read", "box.publish"}

        name = f"{upstream}-{version}.txt"
        wrote = client.request(
            "tools/call", {"name": "box.write", "arguments": {"name": name, "text": version}}
        )["result"]
        check(version, "CallToolResult", wrote)
        assert wrote["isError"] is False
        assert wrote["_meta"]["reversi/outcome"] == "succeeded"
        assert (box.root / name).read_text() == version
        assert ("resultType" in wrote) is (version == MODERN)

        refused = client.request("tools/call", {"name": "box.peek", "arguments": {"name": name}})
        check(version, "CallToolResult", refused["result"])
        assert refused["result"]["isError"] is True
        assert refused["result"]["_meta"]["reversi/outcome"] == "rejected"

        failed = client.request(
            "tools/call", {"name": "box.write", "arguments": {"name": name, "text": "!fail"}}
        )["result"]
        check(version, "CallToolResult", failed)
        assert failed["structuredContent"]["error"]["code"] == "full"

        unknown = client.request("no/such-method", status=404 if version == MODERN else 200)
        assert unknown["error"]["code"] == -32601

        steps = box.steps(wrote["_meta"]["reversi/run"])
        mine = [s for s in steps if s.args.get("name") == name]
        assert [s.state.value for s in mine] == ["succeeded", "rejected", "failed"]
    finally:
        client.close()


@pytest.mark.parametrize("upstream", ["stdio", "http-2026"])
def test_a_stateless_client_is_asked_for_approval_with_input_required(
    gateways: dict[str, tuple[Box, GatewayProcess]], upstream: str
) -> None:
    box, gw = gateways[upstream]
    client = RawClient(gw.url, gw.token, MODERN)
    try:
        args = {"name": f"approved-{upstream}.txt", "text": "yes"}
        meta = {**client.envelope({"elicitation": {"form": {}}})}
        asked = client.request(
            "tools/call", {"name": "box.guarded_write", "arguments": args, "_meta": meta}
        )
        check(MODERN, "CallToolResultResponse", asked)
        question = asked["result"]
        assert question["resultType"] == "input_required"
        assert not (box.root / args["name"]).exists()
        answer = {"action": "accept", "content": {"approve": True, "note": "fine"}}
        done = client.request(
            "tools/call",
            {
                "name": "box.guarded_write",
                "arguments": args,
                "_meta": meta,
                "inputResponses": {key: answer for key in question["inputRequests"]},
                "requestState": question["requestState"],
            },
        )
        check(MODERN, "CallToolResultResponse", done)
        assert done["result"]["_meta"]["reversi/outcome"] == "succeeded"
        assert (box.root / args["name"]).read_text() == "yes"
        step = box.steps(done["result"]["_meta"]["reversi/run"])[-1]
        assert step.approval is not None
        assert step.approval["approved"] is True
        assert step.approval["note"] == "fine"
    finally:
        client.close()


def test_an_unsupported_version_is_refused_with_the_versions_served(
    gateways: dict[str, tuple[Box, GatewayProcess]],
) -> None:
    _, gw = gateways["stdio"]
    client = RawClient(gw.url, gw.token, MODERN)
    try:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {
                "_meta": {
                    **client.envelope(),
                    "io.modelcontextprotocol/protocolVersion": "2099-01-01",
                }
            },
        }
        answer = client.http.post(
            gw.url,
            content=json.dumps(message),
            headers={**client.headers("tools/list", None), "MCP-Protocol-Version": "2099-01-01"},
        )
        assert answer.status_code == 400
        error = answer.json()
        check(MODERN, "UnsupportedProtocolVersionError", error)
        assert MODERN in error["error"]["data"]["supported"]
    finally:
        client.close()


# -- the stdio front door ------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_stdio_client_of_each_version_in_front_of_a_stateless_http_upstream(
    gateways: dict[str, tuple[Box, GatewayProcess]], version: str, tmp_path: Path
) -> None:
    box, _ = gateways["http-2026"]
    upstream_url = _upstream_url(box)
    lines: list[dict[str, Any]] = []
    if version == MODERN:
        envelope = RawClient("", "", MODERN).envelope()
        lines.append(
            {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": envelope}}
        )
        call_meta: dict[str, Any] = {"_meta": envelope}
    else:
        lines.append(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        lines.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call_meta = {}
    lines.append({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {**call_meta}})
    name = f"stdio-{version}.txt"
    lines.append(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "box.write",
                "arguments": {"name": name, "text": version},
                **call_meta,
            },
        }
    )
    argv = [
        "--manifests",
        str(box.manifests),
        "--data",
        str(tmp_path / "data"),
        "--upstream-url",
        upstream_url,
    ]
    answers = converse(argv, lines, 3, tmp_path / "gateway.err")
    for rid in (1, 2, 3):
        check(version, response_definition(version, "error" in answers[rid]), answers[rid])
    if version == MODERN:
        check(MODERN, "DiscoverResultResponse", answers[1])
    else:
        assert answers[1]["result"]["protocolVersion"] == version
        check(version, "InitializeResult", answers[1]["result"])
    check(version, "ListToolsResult", answers[2]["result"])
    check(version, "CallToolResult", answers[3]["result"])
    assert answers[3]["result"]["_meta"]["reversi/outcome"] == "succeeded"
    assert (box.root / name).read_text() == version


def converse(
    argv: list[str], lines: list[dict[str, Any]], last: int, errlog: Path
) -> dict[Any, dict[str, Any]]:
    """Send ``lines`` to a stdio gateway; its answers by id, once ``last`` is answered."""
    answers: dict[Any, dict[str, Any]] = {}
    with (
        errlog.open("w") as err,
        subprocess.Popen(
            [GATEWAY, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
        ) as proc,
    ):
        assert proc.stdin is not None
        assert proc.stdout is not None
        try:
            for message in lines:
                proc.stdin.write(json.dumps(message) + "\n")
                proc.stdin.flush()
                while "id" in message and message["id"] not in answers:  # one at a time
                    line = proc.stdout.readline()
                    assert line, errlog.read_text()
                    found = json.loads(line)
                    answers[found.get("id")] = found
            assert last in answers
            proc.stdin.close()
            assert proc.wait(30) == 0, errlog.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
    return answers


def _upstream_url(box: Box) -> str:
    return (box.tmp / "upstream.url").read_text()
