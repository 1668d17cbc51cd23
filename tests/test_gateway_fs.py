"""End to end on real data: an MCP client, reversi-gateway, ``reversi-connectors serve fs``.

A copy of an installed package's source tree (hundreds of files, nested directories,
compiled ``.pyc`` files) is changed through the gateway: files overwritten, created in
new nested directories, deleted, moved across directories (one move replacing a file),
read and listed. ``reversi rollback RUN --compensator-cmd "reversi-connectors compensate
--root DIR"`` must then bring the tree back byte for byte (names, contents, modes,
empty directories), the backup directory aside; a second rollback changes nothing.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BIN = Path(sys.executable).parent


def _script(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else name


GATEWAY = _script("reversi-gateway")
REVERSI = _script("reversi")
CONNECTORS = _script("reversi-connectors")
BACKUPS = ".reversi-backups"

def snapshot(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every entry under ``root`` but the backups: kind, permission bits and bytes."""
    out: dict[str, tuple[str, int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir.parts[:1] == (BACKUPS,):
            continue
        for name in dirnames:
            path = Path(dirpath) / name
            if (rel_dir / name).parts[:1] == (BACKUPS,):
                continue
            out[str(rel_dir / name)] = ("dir", stat.S_IMODE(path.lstat().st_mode), b"")
        for name in filenames:
            path = Path(dirpath) / name
            out[str(rel_dir / name)] = (
                "file",
                stat.S_IMODE(path.lstat().st_mode),
                path.read_bytes(),
            )
    return out


def compiled_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.pyc"))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the installed ``mcp`` package, with an empty directory and odd modes."""
    import mcp

    root = tmp_path / "tree"
    shutil.copytree(Path(mcp.__file__).parent, root, symlinks=True)
    (root / "empty" / "nested").mkdir(parents=True)
    (root / "client" / "session.py").chmod(0o600)
    (root / "cli" / "cli.py").chmod(0o755)
    files = [p for p in root.rglob("*") if p.is_file()]
    assert len(files) > 200
    assert any(p.suffix == ".pyc" for p in files)
    return root


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    directory = tmp_path / "manifests"
    directory.mkdir()
    out = subprocess.run(
        [CONNECTORS, "manifests", "fs", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    (directory / "fs.json").write_text(out.stdout)
    return directory


@asynccontextmanager
async def fs_session(tmp_path: Path, manifests: Path, root: Path) -> AsyncIterator[ClientSession]:
    args = [
        "--manifests",
        str(manifests),
        "--data",
        str(tmp_path / "data"),
        "--upstream-cmd",
        CONNECTORS,
        "--upstream-arg",
        "serve",
        "--upstream-arg",
        "fs",
        "--upstream-arg",
        "--root",
        "--upstream-arg",
        str(root),
    ]
    params = StdioServerParameters(command=GATEWAY, args=args, env=dict(os.environ))
    with (tmp_path / "gateway.err").open("a") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client


async def call(client: ClientSession, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert result.meta is not None
    assert not result.is_error, (tool, args, result.content)
    assert result.meta["reversi/outcome"] == "succeeded"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def reversi(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REVERSI, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.anyio
@pytest.mark.slow
async def test_fs_run_through_the_gateway_rolls_back_byte_identical(
    tmp_path: Path, tree: Path, manifests: Path
) -> None:
    before = snapshot(tree)
    pyc = compiled_files(tree)
    async with fs_session(tmp_path, manifests, tree) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"fs.write_file", "fs.read_file", "fs.delete_file", "fs.move_file"} <= set(tools)
        read_only = tools["fs.read_file"].annotations
        assert read_only is not None
        assert read_only.read_only_hint is True
        assert read_only.destructive_hint is False
        write = tools["fs.write_file"].annotations
        assert write is not None
        assert write.read_only_hint is False
        assert write.idempotent_hint is False

        # read and list
        listed = await call(client, "fs.list_dir", path="client")
        assert listed
        original = await call(client, "fs.read_file", path="client/session.py")
        assert "class ClientSession" in original["content"]
        # overwrite files, a binary one among them
        run_id = None
        for rel in ("client/session.py", "server/session.py", "types/__init__.py", "cli/cli.py"):
            result = await client.call_tool(
                "fs.write_file", {"path": rel, "content": f"# replaced {rel}\n"}
            )
            assert not result.is_error, result.content
            assert result.meta is not None
            run_id = result.meta["reversi/run"]
        await call(
            client,
            "fs.write_file",
            path=pyc[0],
            content=base64.b64encode(b"\x00not bytecode\xff").decode(),
            encoding="base64",
        )
        # new files in new nested directories
        await call(client, "fs.make_dir", path="added/deeper/deepest")
        for i in range(3):
            await call(
                client,
                "fs.write_file",
                path=f"added/deeper/deepest/new{i}.txt",
                content=f"new {i}\n",
            )
        await call(client, "fs.write_file", path="added/top.md", content="# top\n")
        # deletions, a compiled file among them
        for rel in ("shared/exceptions.py", "server/stdio.py", pyc[1], "client/stdio.py"):
            await call(client, "fs.delete_file", path=rel)
        # a file deleted, then created again at the same path
        await call(client, "fs.write_file", path="client/stdio.py", content="# a new stdio\n")
        # moves across directories, one replacing an existing file
        await call(
            client, "fs.move_file", source="server/models.py", destination="client/models.py"
        )
        await call(client, "fs.move_file", source="client/sse.py", destination="added/sse.py")
        await call(
            client,
            "fs.move_file",
            source="server/sse.py",
            destination="client/streamable_http.py",
            overwrite=True,
        )
        # an empty directory filled, a file moved into a new directory
        await call(client, "fs.write_file", path="empty/nested/filled.txt", content="x")
        await call(client, "fs.move_file", source="added/top.md", destination="added/deeper/top.md")
        assert snapshot(tree) != before
    assert run_id is not None

    shown = reversi("show", run_id, "--data", str(tmp_path / "data"), "--json")
    assert shown.returncode == 0, shown.stderr
    compensator = f"{shlex.quote(CONNECTORS)} compensate --root {shlex.quote(str(tree))}"
    first = reversi(
        "rollback",
        run_id,
        "--data",
        str(tmp_path / "data"),
        "--compensator-cmd",
        compensator,
        "--json",
    )
    assert first.returncode == 0, first.stdout + first.stderr
    report = json.loads(first.stdout)
    assert report["complete"] is True
    assert report["compensated_now"]
    assert snapshot(tree) == before
    assert (tree / BACKUPS).is_dir()

    second = reversi(
        "rollback",
        run_id,
        "--data",
        str(tmp_path / "data"),
        "--compensator-cmd",
        compensator,
        "--json",
    )
    assert second.returncode == 0, second.stdout + second.stderr
    again = json.loads(second.stdout)
    assert again["complete"] is True
    assert again["compensated_now"] == []
    assert snapshot(tree) == before


@pytest.mark.anyio
async def test_fs_tools_are_closed_world(tmp_path: Path, manifests: Path) -> None:
    root = tmp_path / "small"
    root.mkdir()
    async with fs_session(tmp_path, manifests, root) as client:
        tools = (await client.list_tools()).tools
    assert tools
    assert all(t.annotations is not None and t.annotations.open_world_hint is False for t in tools)


def put(path: bytes, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def content_of(path: bytes) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.mark.anyio
async def test_non_utf8_names_through_the_gateway_are_journaled_and_rolled_back(
    tmp_path: Path, manifests: Path
) -> None:
    # reversi-connectors serve fs used to die listing such a name (the gateway then waited
    # out its call timeout), and a path given back was answered -32603, never journaled.
    root = tmp_path / "root"
    root.mkdir()
    latin = os.fsencode(root) + b"/caf\xe9.txt"
    put(latin, b"latin one")
    async with fs_session(tmp_path, manifests, root) as client:
        listed = await call(client, "fs.list_dir", path=".")
        assert [e["name"] for e in listed["entries"]] == ["caf\\xe9.txt"]
        read = await call(client, "fs.read_file", path="caf\\xe9.txt")
        assert read["content"] == "latin one"
        wrote = await client.call_tool("fs.write_file", {"path": "caf\\xe9.txt", "content": "x"})
        assert not wrote.is_error, wrote.content
        assert wrote.meta is not None
        run_id = wrote.meta["reversi/run"]
    assert content_of(latin) == b"x"
    shown = reversi("show", run_id, "--data", str(tmp_path / "data"), "--json")
    assert shown.returncode == 0, shown.stderr
    steps = json.loads(shown.stdout)["steps"]
    assert [(s["tool"], s["state"]) for s in steps] == [
        ("fs.list_dir", "succeeded"),
        ("fs.read_file", "succeeded"),
        ("fs.write_file", "succeeded"),
    ]
    assert steps[2]["args"]["path"] == "caf\\xe9.txt"
    compensator = shlex.join([CONNECTORS, "compensate", "--root", str(root)])
    rolled = reversi(
        "rollback", run_id, "--data", str(tmp_path / "data"), "--compensator-cmd", compensator
    )
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    assert content_of(latin) == b"latin one"


@pytest.mark.req("RB-10")
@pytest.mark.anyio
async def test_the_agent_cannot_make_a_compensation_overwrite_a_later_change(
    tmp_path: Path, manifests: Path
) -> None:
    """Through the gateway, no argument and no ``_meta`` key lets the agent's own call of a
    compensation skip its precondition, and nothing the session does records an overwrite
    decision: a later ``reversi rollback`` still refuses until a person says ``--overwrite``."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "plan.txt").write_text("the plan\n")
    async with fs_session(tmp_path, manifests, root) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("fs.restore_file", "fs.unmove_file", "fs.remove_dir"):
            assert "overwrite" not in tools[name].input_schema["properties"], name
        written = await client.call_tool(
            "fs.write_file", {"path": "plan.txt", "content": "the agent's plan\n"}
        )
        assert written.meta is not None
        run_id = written.meta["reversi/run"]
        result = written.structured_content
        assert isinstance(result, dict)
        (root / "plan.txt").write_text("the agent's plan\nand a person's fix\n")
        undo = {
            "path": "plan.txt",
            "backup": result["backup"],
            "left": "file",
            "sha256": result["sha256"],
            "mode": result["mode"],
        }
        insisting = {"reversi/overwrite": True, "overwrite": True, "reversi/compensation": True}
        tried = await client.call_tool("fs.restore_file", undo, meta=insisting)
        assert tried.is_error
        assert isinstance(tried.structured_content, dict)
        assert tried.structured_content["error"]["code"] == "changed_since"
        smuggled = await client.call_tool("fs.restore_file", {**undo, "overwrite": True})
        assert smuggled.is_error
        assert smuggled.meta is not None
        assert smuggled.meta["reversi/outcome"] == "rejected"
    assert (root / "plan.txt").read_text() == "the agent's plan\nand a person's fix\n"
    data = str(tmp_path / "data")
    shown = json.loads(reversi("show", run_id, "--data", data, "--json").stdout)
    assert all(step["overwrite"] is None for step in shown["steps"])
    compensator = f"{shlex.quote(CONNECTORS)} compensate --root {shlex.quote(str(root))}"
    rolled = reversi("rollback", run_id, "--data", data, "--compensator-cmd", compensator)
    assert rolled.returncode == 1, rolled.stdout + rolled.stderr
    assert "the file's content changed since the call" in " ".join(rolled.stdout.split())
    assert (root / "plan.txt").read_text() == "the agent's plan\nand a person's fix\n"
