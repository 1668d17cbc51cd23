"""A real outside MCP client: the MCP Inspector's CLI mode talks to ``reversi-gateway``.

The client is the maintained MCP Inspector (``@modelcontextprotocol/inspector`` 2.x,
Node 22, the TypeScript MCP SDK) in ``--cli`` mode. CI installs it before the tests::

    npm install --prefix .ci/node node@22 @modelcontextprotocol/inspector@2.12

and may point ``$REVERSI_INSPECTOR`` at the ``mcp-inspector`` it installed. Without the
variable the tests look for ``.ci/node/node_modules/.bin/mcp-inspector`` under the
repository root; when it is missing they fail, saying how to install it. It runs with
that ``.bin`` first on ``PATH`` (the Node 22 of ``node@22``; the Inspector refuses an
older one), from a temporary ``HOME`` (it keeps a catalog and a secret store there).

Over stdio the Inspector starts the gateway, as MCP clients start servers: once from an
``mcpServers`` configuration file (``--config``), once from a command line. Over HTTP it
connects to ``reversi-gateway --listen`` with the token in a configuration file's
``headers`` (and is refused without it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO / "packages" / "reversi-core" / "tests"))
from _httpgw import GatewayProcess, new_token  # noqa: E402 - the path is set just above

INSPECTOR_BIN = "mcp-inspector"
NPM_INSTALL = "npm install --prefix .ci/node node@22 @modelcontextprotocol/inspector@2.12"
FS_TOOLS = {
    "fs.read_file",
    "fs.list_dir",
    "fs.write_file",
    "fs.delete_file",
    "fs.make_dir",
    "fs.move_file",
    "fs.restore_file",
    "fs.remove_dir",
    "fs.unmove_file",
}


def script(name: str) -> str:
    """The console script installed next to this interpreter (a nox venv, say), else PATH's."""
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    assert found, f"{name} is not installed: pip install -e packages/reversi-core"
    return found


def inspector() -> Path:
    configured = os.environ.get("REVERSI_INSPECTOR")
    if configured:
        path = Path(configured)
        if not path.exists():
            pytest.fail(
                f"REVERSI_INSPECTOR={configured} does not exist; install it with: {NPM_INSTALL}"
            )
    else:
        path = REPO / ".ci" / "node" / "node_modules" / ".bin" / INSPECTOR_BIN
        if not path.exists():
            pytest.fail(
                f"the MCP Inspector is not installed: run `{NPM_INSTALL}` in {REPO} "
                f"(needs npm), or set REVERSI_INSPECTOR to a {INSPECTOR_BIN}"
            )
    node = path.parent / "node"
    found = str(node) if node.exists() else shutil.which("node")
    if found is None:
        pytest.fail(f"{path} needs `node` 22: {NPM_INSTALL}")
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    if int(version.strip().lstrip("v").split(".")[0] or 0) < 22:
        pytest.fail(f"{path} needs Node 22, {found} is {version.strip()}: {NPM_INSTALL}")
    return path


def run_inspector(*args: str, home: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``mcp-inspector --cli ARGS`` from any directory, with Node 22 first on PATH."""
    cli = inspector()
    env = {**os.environ, "HOME": str(home), "MCP_INSPECTOR_SECRET_STORE": "memory"}
    env["PATH"] = f"{cli.parent}{os.pathsep}{env.get('PATH', '')}"
    if "--config" not in args:
        env["MCP_CATALOG_PATH"] = str(home / "catalog.json")
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [str(cli), "--cli", *args],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


def inspect(*args: str, home: Path, timeout: float = 120) -> dict[str, Any]:
    """Run ``mcp-inspector --cli ARGS`` and return the JSON it prints on stdout."""
    out = run_inspector(*args, home=home, timeout=timeout)
    command = shlex.join([INSPECTOR_BIN, "--cli", *args])
    assert out.returncode == 0, f"{command}\nstatus {out.returncode}\n{out.stdout}\n{out.stderr}"
    try:
        found: dict[str, Any] = json.loads(out.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{command} printed no JSON:\n{out.stdout}\n{out.stderr}")
    return found


def gateway_args(tmp_path: Path, root: Path) -> list[str]:
    manifests = tmp_path / "manifests"
    manifests.mkdir(exist_ok=True)
    printed = subprocess.run(
        [script("reversi-connectors"), "manifests", "fs", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    (manifests / "fs.json").write_text(printed.stdout)
    args = ["--manifests", str(manifests), "--data", str(tmp_path / "data")]
    args += ["--upstream-cmd", script("reversi-connectors")]
    for arg in ("serve", "fs", "--root", str(root)):
        args += ["--upstream-arg", arg]
    return args


def lingering(marker: str, wait: float = 10.0) -> list[str]:
    """Command lines of processes still mentioning ``marker`` after up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in text:
                found.append(text)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def reversi(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script("reversi"), *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
def test_inspector_lists_the_gateway_tools_from_an_mcp_servers_config(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "reversi-fs": {
                        "command": script("reversi-gateway"),
                        "args": gateway_args(tmp_path, root),
                    }
                }
            }
        )
    )
    listed = inspect(
        "--config",
        str(config),
        "--server",
        "reversi-fs",
        "--method",
        "tools/list",
        home=tmp_path / "home",
    )
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert set(tools) == FS_TOOLS
    assert tools["fs.read_file"]["annotations"]["readOnlyHint"] is True
    write = tools["fs.write_file"]
    assert write["annotations"]["readOnlyHint"] is False
    assert write["annotations"]["openWorldHint"] is False
    assert write["_meta"]["reversi/effect"] == "reversible"
    assert {"path", "content"} <= set(write["inputSchema"]["required"])
    for tool in tools.values():  # a result, or the error object of a failed call
        assert tool["outputSchema"]["type"] == "object", tool["name"]
        assert len(tool["outputSchema"]["anyOf"]) == 2, tool["name"]
    assert list(root.iterdir()) == []
    assert lingering(str(root)) == []


@pytest.mark.slow
def test_the_inspector_accepts_a_failed_call_against_the_tools_output_schema(
    tmp_path: Path,
) -> None:
    # The TypeScript SDK checks structuredContent against the outputSchema even when
    # isError is true (Client.callTool); the call fails its whole command when it does
    # not match, so a clean exit with the error object is the proof.
    root = tmp_path / "root"
    root.mkdir()
    out = run_inspector(
        script("reversi-gateway"),
        *gateway_args(tmp_path, root),
        "--method",
        "tools/call",
        "--tool-name",
        "fs.read_file",
        "--tool-arg",
        "path=missing.txt",
        home=tmp_path / "home",
    )
    # the Inspector prints the result, then exits 5 for a tool's isError; its SDK checked
    # the structuredContent against the outputSchema first (@modelcontextprotocol/sdk
    # 1.32, Client.callTool: whenever there is structuredContent, isError or not)
    assert out.returncode == 5, out.stdout + out.stderr
    assert '"code":"tool_is_error"' in out.stderr
    called = json.loads(out.stdout)
    assert called["isError"] is True, called
    assert called["_meta"]["reversi/outcome"] == "failed"
    error = called["structuredContent"]["error"]
    assert (error["type"], error["code"]) == ("tool_error", "not_found")
    assert "missing.txt" in error["message"]
    assert lingering(str(root)) == []


@pytest.mark.slow
def test_inspector_writes_a_file_through_the_gateway_and_it_rolls_back(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "old.txt").write_text("kept\n")
    content = "hello from the MCP Inspector = an outside client\n"

    called = inspect(
        script("reversi-gateway"),
        *gateway_args(tmp_path, root),
        "--method",
        "tools/call",
        "--tool-name",
        "fs.write_file",
        "--tool-arg",
        "path=notes/inspected.txt",
        f"content={content}",
        home=tmp_path / "home",
    )
    assert called["isError"] is False, called
    assert called["structuredContent"] == {
        "path": "notes/inspected.txt",
        "existed": False,
        "backup": None,
        "size": len(content.encode()),
        "mode": called["structuredContent"]["mode"],
        "sha256": hashlib.sha256(content.encode()).hexdigest(),
    }
    assert json.loads(called["content"][0]["text"]) == called["structuredContent"]
    meta = called["_meta"]
    assert meta["reversi/outcome"] == "succeeded"
    assert meta["reversi/step"] == 1
    run_id = meta["reversi/run"]
    assert (root / "notes" / "inspected.txt").read_text() == content
    assert lingering(str(root)) == []

    data = str(tmp_path / "data")
    shown = reversi("show", run_id, "--data", data, "--json")
    assert shown.returncode == 0, shown.stderr
    steps = json.loads(shown.stdout)["steps"]
    assert [(s["step"], s["tool"], s["state"]) for s in steps] == [
        (1, "fs.write_file", "succeeded")
    ]
    assert steps[0]["args"] == {"path": "notes/inspected.txt", "content": content}

    compensator = shlex.join([script("reversi-connectors"), "compensate", "--root", str(root)])
    rolled = reversi("rollback", run_id, "--data", data, "--compensator-cmd", compensator, "--json")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    assert json.loads(rolled.stdout)["compensated_now"] == [1]
    assert sorted(p.name for p in (root / "notes").iterdir()) == ["old.txt"]


# -- over HTTP -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, Path]]:
    """``reversi-gateway --listen`` in front of fs, for the module; and its root."""
    tmp = tmp_path_factory.mktemp("inspector-http")
    root = tmp / "root"
    root.mkdir()
    gw = GatewayProcess(gateway_args(tmp, root), tmp / "gateway.err", token=new_token())
    yield gw, root
    gw.stop()


def http_config(tmp_path: Path, gw: GatewayProcess, *, token: bool = True) -> Path:
    """An ``mcpServers`` file naming the gateway's URL (and its token, in ``headers``)."""
    entry: dict[str, Any] = {"type": "streamable-http", "url": gw.url}
    if token:
        entry["headers"] = gw.headers
    config = tmp_path / "http.json"
    config.write_text(json.dumps({"mcpServers": {"reversi-http": entry}}))
    return config


@pytest.mark.slow
def test_inspector_lists_and_calls_over_http_and_the_call_rolls_back(
    http_gateway: tuple[GatewayProcess, Path], tmp_path: Path
) -> None:
    gw, root = http_gateway
    config = http_config(tmp_path, gw)
    server = ["--config", str(config), "--server", "reversi-http"]
    listed = inspect(*server, "--method", "tools/list", home=tmp_path / "home")
    assert {tool["name"] for tool in listed["tools"]} == FS_TOOLS
    called = inspect(
        *server,
        "--method",
        "tools/call",
        "--tool-name",
        "fs.write_file",
        "--tool-arg",
        "path=over-http.txt",
        "content=sent by the Inspector over HTTP",
        home=tmp_path / "home",
    )
    assert called["isError"] is False, called
    assert called["_meta"]["reversi/outcome"] == "succeeded"
    assert (root / "over-http.txt").read_text() == "sent by the Inspector over HTTP"
    run_id = called["_meta"]["reversi/run"]
    data = str(Path(gw.errlog).parent / "data")
    shown = reversi("show", run_id, "--data", data, "--json")
    assert shown.returncode == 0, shown.stderr
    steps = json.loads(shown.stdout)["steps"]
    assert [(s["tool"], s["state"]) for s in steps] == [("fs.write_file", "succeeded")]
    compensator = shlex.join([script("reversi-connectors"), "compensate", "--root", str(root)])
    rolled = reversi("rollback", run_id, "--data", data, "--compensator-cmd", compensator, "--json")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    assert not (root / "over-http.txt").exists()


@pytest.mark.slow
def test_inspector_without_the_token_is_refused_over_http(
    http_gateway: tuple[GatewayProcess, Path], tmp_path: Path
) -> None:
    gw, root = http_gateway
    config = http_config(tmp_path, gw, token=False)
    refused = run_inspector(
        "--config",
        str(config),
        "--server",
        "reversi-http",
        "--method",
        "tools/call",
        "--tool-name",
        "fs.write_file",
        "--tool-arg",
        "path=nope.txt",
        "content=x",
        home=tmp_path / "home",
        timeout=60,
    )
    assert refused.returncode != 0
    # the 401's WWW-Authenticate: Bearer makes the Inspector ask for an OAuth login, which
    # a CLI without a terminal cannot do
    assert "auth" in (refused.stdout + refused.stderr).lower()
    assert not (root / "nope.txt").exists()
    assert "without a valid bearer token (401)" in gw.stderr()
