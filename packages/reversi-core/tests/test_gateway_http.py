"""reversi-gateway over streamable HTTP (``--listen``): the front door, its token and its
Origin/Host checks, and which requests form a run.

The gateway runs as a child process in front of the ``box`` upstream of
``test_gateway.py`` (over stdio), started once for the module on ``127.0.0.1:0``; its
clients are the MCP SDK's (streamable HTTP) and plain httpx requests.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _httpgw import GATEWAY, GatewayProcess, client, mcp_headers, new_token
from test_gateway import Box

from reversi_core import SQLiteJournal
from reversi_core.mcp._listen import parse_listen, parse_origin, token_from
from reversi_core.mcp.http_gateway import security_settings

pytestmark = pytest.mark.anyio

WRITE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {
        "name": "box.write",
        "arguments": {"name": "sneaky.txt", "text": "no token"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    },
}


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Box:
    return Box(tmp_path_factory.mktemp("http"))


@pytest.fixture(scope="module")
def gateway(box: Box) -> Iterator[GatewayProcess]:
    gw = GatewayProcess(box.argv(), box.tmp / "gateway.err", token=new_token())
    yield gw
    gw.stop()


def runs(box: Box) -> list[str]:
    if not box.data.exists():
        return []
    with SQLiteJournal.open(box.data, create=False) as journal:
        return [r.id for r in journal.list_runs()]


# -- the command line ------------------------------------------------------------------


def test_listen_defaults_to_the_loopback_address() -> None:
    assert parse_listen(":8080") == ("127.0.0.1", 8080)
    assert parse_listen("8080") == ("127.0.0.1", 8080)
    assert parse_listen("0.0.0.0:80") == ("0.0.0.0", 80)
    assert parse_listen("[::1]:9000") == ("::1", 9000)
    for bad in ("host:", "host:http", "1:70000"):
        with pytest.raises(ValueError, match="port must be a number"):
            parse_listen(bad)
    assert parse_origin("https://app.example.com/") == "https://app.example.com"
    with pytest.raises(ValueError, match="an origin is"):
        parse_origin("app.example.com")


def test_the_token_comes_from_the_environment_only(box: Box, tmp_path: Path) -> None:
    def gateway(*extra: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [GATEWAY, *box.argv(), *extra],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            stdin=subprocess.DEVNULL,
        )

    env = {k: v for k, v in os.environ.items() if k != "REVERSI_GATEWAY_TOKEN"}
    missing = gateway("--listen", "127.0.0.1:0", env=env)
    assert missing.returncode == 2
    assert "$REVERSI_GATEWAY_TOKEN" in missing.stderr
    assert "never on the command line" in missing.stderr
    short = gateway("--listen", ":0", env={**env, "REVERSI_GATEWAY_TOKEN": "abc123"})
    assert short.returncode == 2
    assert "at least 16 characters" in short.stderr
    assert "abc123" not in short.stderr
    flag = gateway("--listen", ":0", "--token", "x" * 20, env=env)
    assert flag.returncode == 2  # there is no such option
    assert "unrecognized arguments: --token" in flag.stderr
    origin = gateway("--allow-origin", "https://a.example", env=env)
    assert origin.returncode == 2
    assert "--allow-origin needs --listen" in origin.stderr
    with pytest.raises(ValueError, match="without surrounding spaces") as raised:
        token_from({"REVERSI_GATEWAY_TOKEN": " padded-token-of-enough-length "})
    assert "padded" not in str(raised.value)


def test_dns_rebinding_settings_allow_only_the_loopback_names_and_given_origins() -> None:
    settings = security_settings("127.0.0.1", 8123, ("https://app.example.com",))
    assert settings.enable_dns_rebinding_protection is True
    assert set(settings.allowed_hosts) == {
        "127.0.0.1:8123",
        "localhost:8123",
        "[::1]:8123",
        "app.example.com",
    }
    assert "http://localhost:8123" in settings.allowed_origins
    assert "https://app.example.com" in settings.allowed_origins
    assert not any("evil" in o for o in settings.allowed_origins)
    bound = security_settings("10.1.2.3", 80, ())
    assert "10.1.2.3:80" in bound.allowed_hosts
    assert "http://10.1.2.3:80" in bound.allowed_origins
    anywhere = security_settings("0.0.0.0", 80, ())
    assert not any(h.startswith("0.0.0.0") for h in anywhere.allowed_hosts)


# -- the front door ----------------------------------------------------------------------


def test_it_listens_on_the_loopback_address_at_mcp(gateway: GatewayProcess) -> None:
    assert gateway.url.startswith("http://127.0.0.1:")
    assert gateway.url.endswith("/mcp")
    other = httpx.post(gateway.url.removesuffix("/mcp") + "/other", headers=gateway.headers)
    assert other.status_code == 404


@pytest.mark.req("GW-5")
def test_a_request_without_a_valid_token_gets_401_and_is_journaled_nowhere(
    gateway: GatewayProcess, box: Box
) -> None:
    before = runs(box)
    wrong = [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": f"Bearer {gateway.token[:-1]}"},
        {"Authorization": f"Bearer {gateway.token}x"},
        {"Authorization": f"bearer {gateway.token}"},
        {"Authorization": f"Basic {gateway.token}"},
        {"Authorization": gateway.token},
    ]
    for headers in wrong:
        answer = httpx.post(
            gateway.url,
            json=WRITE,
            headers={**mcp_headers("2026-07-28"), **headers},
        )
        assert answer.status_code == 401, headers
        assert answer.headers["www-authenticate"].startswith("Bearer")
        body = answer.json()
        assert body["error"]["message"].startswith("Unauthorized")
        assert gateway.token not in answer.text
    assert not (box.root / "sneaky.txt").exists()
    assert runs(box) == before
    assert "without a valid bearer token (401)" in gateway.stderr()
    assert gateway.token not in gateway.stderr()


@pytest.mark.req("GW-5")
def test_origin_and_host_are_checked_against_dns_rebinding(gateway: GatewayProcess) -> None:
    port = gateway.url.split(":")[2].split("/")[0]
    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    base = {**mcp_headers("2025-11-25"), **gateway.headers}

    def post(**extra: str) -> httpx.Response:
        return httpx.post(gateway.url, json=ping, headers={**base, **extra})

    assert post(Origin="http://evil.example.com").status_code == 403
    assert post(Host="evil.example.com").status_code == 421
    assert post(Host=f"evil.example.com:{port}").status_code == 421
    # the gateway's own names pass (a ping needs a session: 400 is the protocol speaking)
    for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port}"):
        assert post(Origin=origin).status_code not in (403, 421)


# -- runs ----------------------------------------------------------------------------


@pytest.mark.req("GW-6")
async def test_a_session_is_one_run_and_two_sessions_are_two(
    gateway: GatewayProcess, box: Box
) -> None:
    ids = []
    for n in range(2):
        async with client(gateway.url, gateway.headers, name=f"agent-{n}") as mcp:
            listed = await mcp.list_tools()
            assert "box.peek" not in {t.name for t in listed.tools}
            wrote = await mcp.call_tool("box.write", {"name": f"s{n}.txt", "text": f"session {n}"})
            read = await mcp.call_tool("box.read", {"name": f"s{n}.txt"})
            unknown = await mcp.call_tool("box.peek", {"name": f"s{n}.txt"})
        assert wrote.is_error is False, wrote
        assert read.structured_content == {"text": f"session {n}"}
        assert unknown.is_error is True
        assert unknown.structured_content["error"]["code"] == "unknown_tool"
        metas = [r.meta or {} for r in (wrote, read, unknown)]
        assert {m["reversi/run"] for m in metas} == {metas[0]["reversi/run"]}
        assert [m["reversi/step"] for m in metas] == [1, 2, 3]
        assert [m["reversi/outcome"] for m in metas] == ["succeeded", "succeeded", "rejected"]
        ids.append(metas[0]["reversi/run"])
    assert ids[0] != ids[1]
    for n, run_id in enumerate(ids):
        await anyio.sleep(0.05)  # the read's record is written within 20 ms (CALL-4)
        steps = box.steps(run_id)
        assert [(s.tool, s.state.value) for s in steps] == [
            ("box.write", "succeeded"),
            ("box.read", "succeeded"),
            ("box.peek", "rejected"),
        ]
        assert steps[0].args == {"name": f"s{n}.txt", "text": f"session {n}"}
        with SQLiteJournal.open(box.data, create=False) as journal:
            label = journal.get_run(run_id).label or ""
        assert label.startswith(f"agent-{n} (HTTP session ")


def test_a_session_deleted_by_its_client_is_gone(gateway: GatewayProcess) -> None:
    headers = {**mcp_headers("2025-11-25"), **gateway.headers}
    opened = httpx.post(
        gateway.url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        headers=headers,
    )
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    headers["Mcp-Session-Id"] = session
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(gateway.url, json=note, headers=headers).status_code == 202
    listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    assert httpx.post(gateway.url, json=listed, headers=headers).status_code == 200
    unauthorized = {k: v for k, v in headers.items() if k != "Authorization"}
    assert httpx.delete(gateway.url, headers=unauthorized).status_code == 401
    assert httpx.delete(gateway.url, headers=headers).status_code == 200
    assert httpx.post(gateway.url, json=listed, headers=headers).status_code == 404


@pytest.mark.req("GW-6")
async def test_stateless_requests_share_one_run_until_it_is_idle(tmp_path: Path) -> None:
    box = Box(tmp_path)
    gw = GatewayProcess(
        box.argv("--idle-timeout", "1.5"), tmp_path / "gateway.err", token=new_token()
    )
    try:
        metas: list[dict[str, Any]] = []
        for n in range(2):  # two clients, one after the other
            async with client(gw.url, gw.headers, "2026-07-28", name=f"stateless-{n}") as mcp:
                tools = await mcp.list_tools()
                assert "box.write" in {t.name for t in tools.tools}
                result = await mcp.call_tool("box.write", {"name": "x.txt", "text": str(n)})
                metas.append(result.meta or {})
        assert metas[0]["reversi/run"] == metas[1]["reversi/run"]
        assert [m["reversi/step"] for m in metas] == [1, 2]
        await anyio.sleep(2.0)  # longer than --idle-timeout without a call
        async with client(gw.url, gw.headers, "2026-07-28") as mcp:
            later = await mcp.call_tool("box.write", {"name": "x.txt", "text": "later"})
        assert (later.meta or {})["reversi/run"] != metas[0]["reversi/run"]
        assert (later.meta or {})["reversi/step"] == 1
        with SQLiteJournal.open(box.data, create=False) as journal:
            labels = [r.label for r in journal.list_runs()]
        assert len(labels) == 2  # listing tools started no run
        assert all("(stateless HTTP)" in (label or "") for label in labels)
    finally:
        status = gw.stop()
    assert status == 0
    err = gw.stderr()
    assert err.rstrip().endswith("reversi-gateway: stopped")
    assert gw.token not in err
    upstream_pid = int((box.tmp / "upstream.pid").read_text())
    assert gone(upstream_pid), "the upstream outlived the gateway"


def gone(pid: int, wait: float = 10.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_a_session_client_is_asked_for_approval_on_its_stream(
    gateway: GatewayProcess, box: Box
) -> None:
    asked: list[str] = []

    async def elicit(ctx: Any, params: Any) -> Any:
        import mcp_types as types

        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True, "note": "ok"})

    async with client(gateway.url, gateway.headers, elicitation_callback=elicit) as mcp:
        done = await mcp.call_tool("box.guarded_write", {"name": "g.txt", "text": "approved"})
    assert done.is_error is False, done
    assert len(asked) == 1
    assert "box.guarded_write" in asked[0]
    assert (box.root / "g.txt").read_text() == "approved"
    meta = done.meta or {}
    step = {s.seq: s for s in box.steps(meta["reversi/run"])}[meta["reversi/step"]]
    assert step.approval is not None
    assert step.approval["approved"] is True
    assert step.approval["by"] == "the user via http-test"
