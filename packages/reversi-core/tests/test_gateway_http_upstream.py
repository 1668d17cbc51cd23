"""reversi-gateway in front of an upstream over streamable HTTP (``--upstream-url``).

The upstream is the ``box`` connector of ``test_gateway.py`` served over HTTP by
``http_upstream.py`` (the server of ``reversi-connectors serve``, on the MCP SDK's
streamable HTTP transport), a child process on ``127.0.0.1`` with a free port; the
gateway is driven by the MCP SDK's stdio client, as a desktop client would. What the
upstream received is in its ``requests.log``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
import trustme
from _httpgw import GATEWAY
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from test_gateway import Box

from reversi_core.journal import StepState
from reversi_core.mcp._upstream_http import check_url

pytestmark = pytest.mark.anyio

UPSTREAM_SCRIPT = Path(__file__).resolve().parent / "http_upstream.py"


class BoxOverHttp:
    """``http_upstream.py`` serving one box, as this test's child process."""

    def __init__(self, box: Box, *options: str, env: Mapping[str, str] | None = None) -> None:
        self.box = box
        self.log = box.tmp / "requests.log"
        port_file = box.tmp / "upstream.url"
        port_file.unlink(missing_ok=True)
        self.err = (box.tmp / "upstream.err").open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(UPSTREAM_SCRIPT),
                str(box.script),
                str(box.root),
                *options,
                "--port-file",
                str(port_file),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.err,
            env=dict(env or os.environ),
        )
        deadline = time.monotonic() + 30
        # the file exists a moment before its URL is written in it
        while not (port_file.exists() and port_file.read_text().endswith("/mcp")):
            assert self.proc.poll() is None, (box.tmp / "upstream.err").read_text()
            assert time.monotonic() < deadline, "the HTTP upstream did not start"
            time.sleep(0.02)
        self.url = port_file.read_text()

    def requests(self) -> list[list[str]]:
        """``[method, path, MCP method, session id]`` of every request so far."""
        if not self.log.exists():
            return []
        return [line.split() for line in self.log.read_text().splitlines()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.err.close()


def gateway_argv(box: Box, url: str, *extra: str) -> list[str]:
    return [
        "--manifests",
        str(box.manifests),
        "--data",
        str(box.data),
        "--upstream-url",
        url,
        *extra,
    ]


@asynccontextmanager
async def stdio_session(
    box: Box, url: str, *extra: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An MCP stdio client session of ``reversi-gateway --upstream-url url``."""
    errlog = box.tmp / f"gateway-{len(box.errlogs)}.err"
    box.errlogs.append(errlog)
    params = StdioServerParameters(
        command=GATEWAY, args=gateway_argv(box, url, *extra), env=dict(env or os.environ)
    )
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client


def run_gateway(
    box: Box, url: str, env: Mapping[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    """The gateway run to its end with nothing on stdin (it fails at start, or leaves)."""
    return subprocess.run(
        [GATEWAY, *gateway_argv(box, url, *extra)],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(env),
    )


def meta(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None
    return result.meta


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Box:
    return Box(tmp_path_factory.mktemp("upstream"))


@pytest.fixture(scope="module")
def upstream(box: Box) -> Iterator[BoxOverHttp]:
    served = BoxOverHttp(box)
    yield served
    served.stop()


# -- calls ---------------------------------------------------------------------------


@pytest.mark.req("GW-3")
async def test_calls_through_an_http_upstream_are_journaled_as_over_stdio(
    box: Box, upstream: BoxOverHttp
) -> None:
    async with stdio_session(box, upstream.url) as client:
        listed = await client.list_tools()
        wrote = await client.call_tool("box.write", {"name": "h.txt", "text": "over http"})
        failed = await client.call_tool("box.write", {"name": "h.txt", "text": "!fail"})
        uncertain = await client.call_tool("box.write", {"name": "u.txt", "text": "!uncertain"})
        read = await client.call_tool("box.read", {"name": "h.txt"})
    assert "box.peek" not in {t.name for t in listed.tools}
    assert wrote.structured_content == {"previous": None, "existed": False}
    assert (box.root / "h.txt").read_text() == "over http"
    assert read.structured_content == {"text": "over http"}
    outcomes = [meta(r)["reversi/outcome"] for r in (wrote, failed, uncertain, read)]
    assert outcomes == ["succeeded", "failed", "uncertain", "succeeded"]
    assert failed.structured_content["error"]["code"] == "full"
    # the gateway's own protocol stamp, not the upstream's, reaches the client
    assert "io.modelcontextprotocol/serverInfo" not in meta(wrote)
    steps = box.steps(meta(wrote)["reversi/run"])
    assert [s.state for s in steps] == [
        StepState.SUCCEEDED,
        StepState.FAILED,
        StepState.UNCERTAIN,
        StepState.SUCCEEDED,
    ]
    assert steps[0].idempotency_key == f"reversi-{meta(wrote)['reversi/run']}-1"
    assert "serving 5 tool(s) of http://127.0.0.1:" in box.stderr()


def test_the_stateless_protocol_is_spoken_to_an_upstream_that_offers_it(
    upstream: BoxOverHttp,
) -> None:
    methods = [r[2] for r in upstream.requests()]
    assert methods[:2] == ["server/discover", "tools/list"]
    assert "initialize" not in methods
    assert {r[3] for r in upstream.requests()} == {"-"}  # no session


async def test_a_handshake_upstream_gets_initialize_and_a_session_that_may_expire(
    tmp_path: Path,
) -> None:
    box = Box(tmp_path)
    upstream = BoxOverHttp(box, "--handshake-only")
    try:
        async with stdio_session(box, upstream.url) as client:
            first = await client.call_tool("box.write", {"name": "a.txt", "text": "one"})
            sessions = {r[3] for r in upstream.requests() if r[2] == "tools/call"}
            assert len(sessions) == 1
            session = sessions.pop()
            # the session ends behind the gateway's back: the next call did not run, so
            # the gateway opens a new session and sends it again, once
            async with httpx.AsyncClient() as http:
                gone = await http.delete(
                    upstream.url,
                    headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
                )
            assert gone.status_code == 200
            second = await client.call_tool("box.write", {"name": "a.txt", "text": "two"})
        methods = [r[2] for r in upstream.requests()]
        assert methods[:5] == [
            "server/discover",  # refused (400): this upstream speaks only the handshake
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
        ]
        assert methods.count("initialize") == 2
        assert meta(first)["reversi/outcome"] == meta(second)["reversi/outcome"] == "succeeded"
        assert (box.root / "a.txt").read_text() == "two"
        calls = [r for r in upstream.requests() if r[2] == "tools/call"]
        assert [c[3] == session for c in calls] == [True, True, False]  # the 404, then resent
        steps = box.steps(meta(first)["reversi/run"])
        assert [(s.seq, s.state) for s in steps] == [
            (1, StepState.SUCCEEDED),
            (2, StepState.SUCCEEDED),
        ]
    finally:
        upstream.stop()


@pytest.mark.req("GW-3")
async def test_a_write_whose_answer_is_lost_is_uncertain_and_an_unreachable_upstream_fails(
    tmp_path: Path,
) -> None:
    box = Box(tmp_path)
    upstream = BoxOverHttp(box)
    try:
        async with stdio_session(box, upstream.url, "--call-timeout", "2") as client:
            hung = await client.call_tool("box.write", {"name": "h.txt", "text": "!hang"})
            died = await client.call_tool("box.write", {"name": "d.txt", "text": "!die"})
            upstream.proc.wait(10)  # the upstream process is gone
            after = await client.call_tool("box.write", {"name": "x.txt", "text": "x"})
            read = await client.call_tool("box.read", {"name": "d.txt"})
    finally:
        upstream.stop()
    assert meta(hung)["reversi/outcome"] == "uncertain"
    assert "did not answer box.write within 2 s" in hung.content[0].text  # type: ignore[union-attr]
    assert meta(died)["reversi/outcome"] == "uncertain"
    assert (box.root / "d.txt").read_text() == "!die"  # it did happen: uncertain was right
    for result in (after, read):  # nothing could be sent: nothing happened
        assert meta(result)["reversi/outcome"] == "failed"
        assert result.structured_content["error"]["code"] == "upstream_unavailable"
    assert not (box.root / "x.txt").exists()
    steps = box.steps(meta(hung)["reversi/run"])
    assert [s.state for s in steps][:3] == [
        StepState.UNCERTAIN,
        StepState.UNCERTAIN,
        StepState.FAILED,
    ]


# -- credentials and TLS -----------------------------------------------------------------


def test_credentials_come_from_the_environment_and_are_never_shown(tmp_path: Path) -> None:
    box = Box(tmp_path)
    secret = "upstream-secret-" + "q" * 20
    upstream = BoxOverHttp(
        box, "--token-env", "UPSTREAM_SECRET", env={**os.environ, "UPSTREAM_SECRET": secret}
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVERSI_UPSTREAM")}
    try:
        refused = run_gateway(box, upstream.url, env)
        ok = run_gateway(box, upstream.url, {**env, "REVERSI_UPSTREAM_TOKEN": secret})
        headers = run_gateway(
            box,
            upstream.url,
            {**env, "REVERSI_UPSTREAM_HEADERS": f'{{"Authorization": "Bearer {secret}"}}'},
        )
        wrong = run_gateway(box, upstream.url, {**env, "REVERSI_UPSTREAM_TOKEN": secret + "x"})
    finally:
        upstream.stop()
    assert refused.returncode == 1
    assert "refused the credentials (HTTP 401)" in refused.stderr
    assert "$REVERSI_UPSTREAM_TOKEN" in refused.stderr
    assert ok.returncode == 0, ok.stderr
    assert "serving 5 tool(s)" in ok.stderr
    assert headers.returncode == 0, headers.stderr
    assert wrong.returncode == 1
    for run in (refused, ok, headers, wrong):
        assert secret not in run.stderr
    bad_json = run_gateway(box, upstream.url, {**env, "REVERSI_UPSTREAM_HEADERS": "[1, 2]"})
    assert bad_json.returncode == 2
    assert "$REVERSI_UPSTREAM_HEADERS must be a JSON object" in bad_json.stderr
    in_url = run_gateway(box, f"http://me:{secret}@127.0.0.1:1/mcp", env)
    assert in_url.returncode == 2
    assert "the URL holds credentials" in in_url.stderr
    assert secret not in in_url.stderr
    plain = run_gateway(box, "http://mcp.example.com/mcp", env)
    assert plain.returncode == 2
    assert "use https://" in plain.stderr


@pytest.mark.parametrize(
    "query", ["?api_key=SECRET", "?token=SECRET&x=1", "?SECRET"], ids=["api_key", "two", "bare"]
)
def test_a_query_string_in_the_upstream_url_is_refused(tmp_path: Path, query: str) -> None:
    """Credentials never go in the URL: a query (where an API key would be) is refused."""
    secret = "upstream-query-" + os.urandom(4).hex()
    url = f"http://127.0.0.1:1/mcp{query.replace('SECRET', secret)}"
    with pytest.raises(ValueError, match="holds a query string") as info:
        check_url(url)
    message = str(info.value)
    assert "$REVERSI_UPSTREAM_TOKEN or $REVERSI_UPSTREAM_HEADERS" in message
    assert secret not in message
    assert message.startswith("--upstream-url http://127.0.0.1:1/mcp: ")
    gateway = run_gateway(Box(tmp_path), url, dict(os.environ))
    assert gateway.returncode == 2
    assert "holds a query string" in gateway.stderr
    assert secret not in gateway.stderr + gateway.stdout
    assert check_url("https://mcp.example.com/mcp?") == "https://mcp.example.com/mcp?"  # empty


def test_the_upstream_certificate_is_verified(tmp_path: Path) -> None:
    box = Box(tmp_path)
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file, ca_file = (tmp_path / n for n in ("cert.pem", "key.pem", "ca.pem"))
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    other = trustme.CA()
    other_file = tmp_path / "other-ca.pem"
    other.cert_pem.write_to_path(str(other_file))
    upstream = BoxOverHttp(box, "--tls", str(cert_file), str(key_file))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REVERSI_UPSTREAM", "SSL_"))}
    try:
        assert upstream.url.startswith("https://127.0.0.1:")
        trusted = run_gateway(box, upstream.url, {**env, "REVERSI_UPSTREAM_CA_FILE": str(ca_file)})
        untrusted = run_gateway(box, upstream.url, env)
        wrong_ca = run_gateway(
            box, upstream.url, {**env, "REVERSI_UPSTREAM_CA_FILE": str(other_file)}
        )
        missing = run_gateway(
            box, upstream.url, {**env, "REVERSI_UPSTREAM_CA_FILE": str(tmp_path / "none.pem")}
        )
    finally:
        upstream.stop()
    assert trusted.returncode == 0, trusted.stderr
    assert "serving 5 tool(s) of https://127.0.0.1:" in trusted.stderr
    for refused in (untrusted, wrong_ca):
        assert refused.returncode == 1, refused.stderr
        assert re.search(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed", refused.stderr)
    assert missing.returncode == 2
    assert "$REVERSI_UPSTREAM_CA_FILE" in missing.stderr
    # only the gateway with the right CA got as far as MCP
    assert [r for r in upstream.requests() if r[2] == "tools/list"] != []


# -- an upstream that is not a Reversi connector -------------------------------------------


def test_a_tool_namespace_maps_undotted_upstream_names_to_manifests() -> None:
    from reversi_core import Registry
    from reversi_core.mcp._tools import ToolIndex

    registry = Registry.from_manifests(
        [
            {
                "name": "ext.create_issue",
                "effect": "compensable",
                "permission": "ext:write",
                "compensation": {"tool": "ext.close_issue", "argument_map": {"id": "result.id"}},
                "output_schema": {"type": "object", "properties": {"id": {"type": "integer"}}},
                "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}},
            },
            {
                "name": "ext.close_issue",
                "effect": "idempotent",
                "permission": "ext:write",
                "input_schema": {"type": "object", "properties": {"id": {"type": "integer"}}},
            },
            {"name": "ext.gone", "effect": "read_only", "permission": "ext:read"},
        ]
    )
    offered = [
        types.Tool(name="create_issue", input_schema=registry.get("ext.create_issue").input_schema),
        types.Tool(name="close_issue", input_schema={"type": "object"}),  # drifted
        types.Tool(name="search", input_schema={"type": "object"}),  # no manifest
    ]
    index = ToolIndex.build(registry, offered, "ext")
    assert [t.name for t in index.listed] == ["create_issue", "close_issue"]  # the wire names
    assert index.hidden == ["search"]
    assert index.missing == ["ext.gone"]
    assert index.drifted == ["ext.close_issue"]
    assert set(index.withheld) == {"ext.close_issue", "ext.gone"}  # the engine's names
    plain = ToolIndex.build(registry, offered)
    assert plain.listed == []
    assert sorted(plain.hidden) == ["close_issue", "create_issue", "search"]


def test_a_proxy_in_the_environment_never_sees_the_upstream_or_its_token(tmp_path: Path) -> None:
    """HTTP_PROXY and friends are ignored: the token goes to the upstream URL only."""
    import socket
    import threading

    heard: list[bytes] = []
    proxy = socket.socket()
    proxy.bind(("127.0.0.1", 0))
    proxy.listen()
    proxy.settimeout(0.2)
    stop = threading.Event()

    def listen() -> None:
        while not stop.is_set():
            try:
                conn, _ = proxy.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    heard.append(conn.recv(4096))
                except OSError:
                    heard.append(b"")

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    box = Box(tmp_path)
    secret = "upstream-secret-" + "p" * 20
    upstream = BoxOverHttp(
        box, "--token-env", "UPSTREAM_SECRET", env={**os.environ, "UPSTREAM_SECRET": secret}
    )
    at = f"http://127.0.0.1:{proxy.getsockname()[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVERSI_UPSTREAM")}
    proxied = {
        **env,
        "REVERSI_UPSTREAM_TOKEN": secret,
        **{
            name: at
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy")
        },
        "NO_PROXY": "",
    }
    try:
        ok = run_gateway(box, upstream.url, proxied)
    finally:
        upstream.stop()
        stop.set()
        thread.join(5)
        proxy.close()
    assert ok.returncode == 0, ok.stderr
    assert "serving 5 tool(s)" in ok.stderr
    assert heard == []
