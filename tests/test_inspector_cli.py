"""A real outside MCP client: ``mcp-inspector-cli --cli`` talks to ``reversi-gateway``.

The client is the MCP Inspector's command line (Node, the TypeScript MCP SDK), from
``npm install @modelcontextprotocol/inspector-cli@1``. CI installs it before the tests:

    npm install --prefix .ci/node @modelcontextprotocol/inspector-cli@1

and may point ``$REVERSI_INSPECTOR_CLI`` at the ``mcp-inspector-cli`` it installed.
Without the variable the tests look for ``.ci/node/node_modules/.bin/mcp-inspector-cli``
under the repository root; when neither exists they fail, saying how to install it.

The gateway is started by the inspector twice, as MCP clients start servers: once from
an ``mcpServers`` configuration file (``--config``), once from a command line.
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
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
INSPECTOR_BIN = "mcp-inspector-cli"
NPM_INSTALL = "npm install --prefix .ci/node @modelcontextprotocol/inspector-cli@1"
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


def inspector_cli() -> Path:
    configured = os.environ.get("REVERSI_INSPECTOR_CLI")
    if configured:
        path = Path(configured)
        if not path.is_file():
            pytest.fail(
                f"REVERSI_INSPECTOR_CLI={configured} is not a file; install it with: {NPM_INSTALL}"
            )
    else:
        path = REPO / ".ci" / "node" / "node_modules" / ".bin" / INSPECTOR_BIN
        if not path.is_file():
            pytest.fail(
                f"the MCP Inspector CLI is not installed: run `{NPM_INSTALL}` in {REPO} "
                f"(needs Node 20 and npm), or set REVERSI_INSPECTOR_CLI to a {INSPECTOR_BIN}"
            )
    if shutil.which("node") is None:
        pytest.fail(f"{path} needs `node` on PATH (Node 20)")
    return path


def inspect(*args: str, timeout: float = 120) -> dict[str, Any]:
    """Run ``mcp-inspector-cli --cli ARGS`` and return the JSON it prints on stdout.

    Inspector-cli 1.0.3 finds its own package.json by testing ``../package.json``
    relative to the working directory, so it is started from its ``build`` directory
    (where the bin link points); from anywhere else it fails with "Cannot find module".
    """
    cli = inspector_cli()
    out = subprocess.run(
        [str(cli), "--cli", *args],
        cwd=cli.resolve().parent,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    command = shlex.join([cli.name, "--cli", *args])
    assert out.returncode == 0, f"{command}\nstatus {out.returncode}\n{out.stdout}\n{out.stderr}"
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{command} printed no JSON:\n{out.stdout}\n{out.stderr}")


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
    listed = inspect("--config", str(config), "--server", "reversi-fs", "--method", "tools/list")
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
    # isError is true (SDK 1.x, Client.callTool); the call fails its whole command when it
    # does not match, so a clean exit with the error object is the proof.
    root = tmp_path / "root"
    root.mkdir()
    called = inspect(
        script("reversi-gateway"),
        *gateway_args(tmp_path, root),
        "--method",
        "tools/call",
        "--tool-name",
        "fs.read_file",
        "--tool-arg",
        "path=missing.txt",
    )
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
