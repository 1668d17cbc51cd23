"""The fs connector through reversi-core's console scripts.

``reversi-connectors serve fs`` with a real MCP stdio client, ``reversi-connectors
compensate`` with fs, and a run rolled back by ``reversi rollback`` through that
compensator process.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from reversi_connector_fs import FsConnector
from reversi_core import Run, SQLiteJournal, executor_for, registry_for


def script(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"console script {name} is not installed (pip install -e packages/reversi-core)"
    return path


def compensate(
    root: Path, tool: str, args: dict[str, Any], *, overwrite: bool | None = None
) -> subprocess.CompletedProcess[str]:
    payload: dict[str, Any] = {
        "tool": tool,
        "args": args,
        "idempotency_key": "k",
        "run_id": "run_x",
        "step": 1,
    }
    if overwrite is not None:
        payload["overwrite"] = overwrite
    return subprocess.run(
        [script("reversi-connectors"), "compensate", "--root", str(root)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@asynccontextmanager
async def served(tmp_path: Path, root: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=script("reversi-connectors"), args=["serve", "fs", "--root", str(root)]
    )
    with (tmp_path / "server-stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error
    assert isinstance(result.structured_content, dict)
    error = result.structured_content["error"]
    assert isinstance(error, dict)
    return error


@pytest.mark.anyio
async def test_tools_are_listed_with_annotations_and_schemas(tmp_path: Path) -> None:
    async with served(tmp_path, tmp_path) as session:
        listing = await session.list_tools()
    tools = {t.name: t for t in listing.tools}
    assert set(tools) == {m.name for m in FsConnector.manifests()}
    write = tools["fs.write_file"]
    assert write.input_schema == FsConnector.input_schemas()["fs.write_file"]
    assert write.annotations is not None
    assert (write.annotations.read_only_hint, write.annotations.idempotent_hint) == (False, False)
    assert write.annotations.open_world_hint is False
    assert write.meta is not None
    assert write.meta["reversi/compensation"]["tool"] == "fs.restore_file"
    read = tools["fs.read_file"]
    assert read.annotations is not None
    assert (read.annotations.read_only_hint, read.annotations.destructive_hint) == (True, False)
    restore = tools["fs.restore_file"]
    assert restore.annotations is not None
    assert restore.annotations.idempotent_hint is True


@pytest.mark.anyio
async def test_write_returns_structured_content_and_refusals_are_tool_errors(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    async with served(tmp_path, root) as session:
        result = await session.call_tool("fs.write_file", {"path": "hello.txt", "content": "hi\n"})
        assert not result.is_error, result
        assert isinstance(result.structured_content, dict)
        assert result.structured_content["path"] == "hello.txt"
        text = result.content[0]
        assert isinstance(text, types.TextContent)
        assert json.loads(text.text) == result.structured_content
        assert (root / "hello.txt").read_text() == "hi\n"

        refused = await session.call_tool(
            "fs.write_file", {"path": "../outside.txt", "content": "x"}
        )
        assert refused.meta == {"reversi/outcome": "failed"}
        assert error_of(refused)["code"] == "path_refused"
        assert not (tmp_path / "outside.txt").exists()

        missing = await session.call_tool("fs.read_file", {"path": "nope.txt"})
        assert missing.meta == {"reversi/outcome": "failed"}
        assert error_of(missing)["code"] == "not_found"


def test_compensate_runs_an_fs_compensation(tmp_path: Path) -> None:
    (tmp_path / "made").mkdir()
    proc = compensate(tmp_path, "fs.remove_dir", {"paths": ["made"]})
    assert proc.returncode == 0, proc.stderr
    assert isinstance(json.loads(proc.stdout), dict)
    assert not (tmp_path / "made").exists()
    again = compensate(tmp_path, "fs.remove_dir", {"paths": ["made"]})
    assert again.returncode == 0, again.stderr


def test_compensate_with_a_missing_root_is_a_usage_error(tmp_path: Path) -> None:
    proc = compensate(tmp_path / "missing", "fs.remove_dir", {"paths": ["made"]})
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "is not an existing directory" in lines[0]


def test_a_run_is_rolled_back_by_the_console_scripts(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    (root / "keep.txt").write_text("original\n")

    async def agent() -> str:
        fs = FsConnector(root=root)
        with SQLiteJournal.open(data) as journal:
            run = Run.start(journal, registry_for([fs]), executor=executor_for([fs]))
            await run.call("fs.write_file", {"path": "keep.txt", "content": "changed\n"})
            await run.call("fs.make_dir", {"path": "new/deeper"})
            await run.call("fs.write_file", {"path": "new/deeper/file.txt", "content": "fresh\n"})
            await fs.aclose()
            return run.id

    run_id = anyio.run(agent)
    compensator = (
        f"{shlex.quote(script('reversi-connectors'))} compensate --root {shlex.quote(str(root))}"
    )
    argv = [
        script("reversi"),
        "rollback",
        run_id,
        "--data",
        str(data),
        "--compensator-cmd",
        compensator,
    ]
    proc = subprocess.run(
        [*argv, "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["complete"] is True
    assert sorted(report["compensated_now"]) == [1, 2, 3]
    assert (root / "keep.txt").read_text() == "original\n"
    assert not (root / "new").exists()
    again = subprocess.run(
        [*argv, "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["compensated_now"] == []


@pytest.mark.req("RB-10")
def test_a_later_edit_is_kept_until_a_person_insists_with_overwrite(tmp_path: Path) -> None:
    """The whole path: the engine's run, ``reversi rollback`` and the compensator process."""
    from reversi_core.cli.reversi import os_user

    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    (root / "plan.txt").write_text("the plan\n")

    async def agent() -> str:
        fs = FsConnector(root=root)
        with SQLiteJournal.open(data) as journal:
            run = Run.start(journal, registry_for([fs]), executor=executor_for([fs]))
            await run.call("fs.write_file", {"path": "plan.txt", "content": "the agent's plan\n"})
            await run.call("fs.write_file", {"path": "other.txt", "content": "untouched\n"})
            return run.id

    run_id = anyio.run(agent)
    (root / "plan.txt").write_text("the agent's plan\nwith a person's fix\n")
    compensator = (
        f"{shlex.quote(script('reversi-connectors'))} compensate --root {shlex.quote(str(root))}"
    )
    argv = [script("reversi"), "rollback", run_id, "--data", str(data)]
    argv += ["--compensator-cmd", compensator, "--json"]
    first = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 1, first.stderr
    [outstanding] = json.loads(first.stdout)["outstanding"]
    assert (outstanding["step"], outstanding["state"]) == (1, "compensation_failed")
    assert "the file's content changed since the call" in outstanding["reason"]
    assert (root / "plan.txt").read_text() == "the agent's plan\nwith a person's fix\n"
    assert not (root / "other.txt").exists()  # the independent step was undone

    second = subprocess.run(
        [*argv, "--overwrite", "1"], capture_output=True, text=True, timeout=120, check=False
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert json.loads(second.stdout)["compensated_now"] == [1]
    assert (root / "plan.txt").read_text() == "the plan\n"
    shown = subprocess.run(
        [script("reversi"), "show", run_id, "--data", str(data), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    steps = {s["step"]: s for s in json.loads(shown.stdout)["steps"]}
    assert steps[1]["overwrite"]["by"] == os_user()
    assert steps[2]["overwrite"] is None


def test_compensate_reads_overwrite_from_the_call(tmp_path: Path) -> None:
    (tmp_path / "new.txt").write_text("edited by a person\n")
    args = {"path": "new.txt", "backup": None, "left": "file", "sha256": "0" * 64, "mode": None}
    kept = compensate(tmp_path, "fs.restore_file", args)
    assert kept.returncode == 1
    assert "the file's content changed since the call" in kept.stderr.splitlines()[-1]
    assert (tmp_path / "new.txt").exists()
    insisted = compensate(tmp_path, "fs.restore_file", args, overwrite=True)
    assert insisted.returncode == 0, insisted.stderr
    assert json.loads(insisted.stdout)["action"] == "deleted"
