"""End to end on real data: the ``mcp`` client, ``reversi-gateway``, ``reversi-connectors serve fs``.

The tree is a copy of the installed ``pip`` package's sources (``pip`` is in every
virtual environment): about 500 files in nested directories, with Windows launchers
(``.exe``) as binary files. A few files and a directory get unusual permission bits and
empty directories are added. Through the gateway the test reads and lists, overwrites
text and binary files, creates files in new nested directories, deletes files and moves
files across directories (one move replacing a file). ``reversi rollback RUN
--compensator-cmd "reversi-connectors compensate --root DIR"``, run as a subprocess,
must then bring the tree back exactly: names, bytes, permission bits and empty
directories, the backup directory aside. A second rollback reports the run complete,
compensates nothing and changes nothing, not even in the backup directory.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pip
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

BIN = Path(sys.executable).parent
BACKUPS = ".reversi-backups"

Fingerprint = dict[str, tuple[Any, ...]]


def script(name: str) -> str:
    """The console script installed next to this interpreter (a nox venv, say), else PATH's."""
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    assert found, f"{name} is not installed: pip install -e packages/reversi-core"
    return found


def fingerprint(root: Path, *, with_backups: bool = False) -> Fingerprint:
    """Every entry under ``root``: kind, permission bits, and sha256 and size for files.

    Directories are entries of their own, so an empty directory counts. The backup
    directory at the top is left out unless ``with_backups``.
    """
    out: Fingerprint = {".": ("dir", oct(stat.S_IMODE(root.lstat().st_mode)))}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == root and not with_backups and BACKUPS in dirnames:
            dirnames.remove(BACKUPS)
        for name in [*dirnames, *filenames]:
            path = here / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", oct(mode))
            elif stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                out[rel] = ("file", oct(mode), st.st_size, digest)
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("symlink", os.readlink(path))
            else:
                out[rel] = ("other", stat.S_IFMT(st.st_mode))
    return out


def differences(before: Fingerprint, after: Fingerprint) -> list[str]:
    lines = [f"missing: {k} {before[k]}" for k in sorted(before.keys() - after.keys())]
    lines += [f"extra: {k} {after[k]}" for k in sorted(after.keys() - before.keys())]
    lines += [
        f"changed: {k} {before[k]} -> {after[k]}"
        for k in sorted(before.keys() & after.keys())
        if before[k] != after[k]
    ]
    return lines


@dataclass
class Tree:
    root: Path
    texts: list[str]
    binaries: list[str]
    lone_file: str  # the only entry of its directory
    odd_dir: str  # a directory with mode 0o750
    modes: dict[str, int] = field(default_factory=dict)


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    source = Path(pip.__file__).parent
    root = tmp_path / "tree"
    root.mkdir()
    shutil.copytree(source, root / "pip", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "empty").mkdir()
    (root / "empty").chmod(0o755)
    (root / "pip" / "_vendor" / "empty_nested" / "a" / "b").mkdir(parents=True)
    (root / "pip" / "_vendor" / "empty_nested" / "a" / "b").chmod(0o700)

    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    binaries = [f for f in files if b"\0" in (root / f).read_bytes()]
    # Python files at least three levels down, taken from directory after directory so
    # that consecutive picks sit in different places
    by_dir: dict[str, list[str]] = {}
    for f in files:
        if f.endswith(".py") and f.count("/") >= 2 and f not in binaries:
            by_dir.setdefault(str(Path(f).parent), []).append(f)
    texts = [f for group in itertools.zip_longest(*by_dir.values()) for f in group if f]
    assert len(files) > 300, len(files)
    assert len(binaries) >= 4, binaries
    assert len(by_dir) >= 10, by_dir.keys()

    lone = [
        d.relative_to(root).as_posix()
        for d in sorted((root / "pip").rglob("*"))
        if d.is_dir() and len(list(d.iterdir())) == 1 and next(d.iterdir()).is_file()
    ]
    if lone:
        lone_file = next((root / lone[0]).iterdir()).relative_to(root).as_posix()
    else:  # a future pip without such a directory: make one
        (root / "pip" / "lonely").mkdir()
        (root / "pip" / "lonely" / "only.txt").write_text("alone\n")
        lone_file = "pip/lonely/only.txt"
    texts = [t for t in texts if not t.startswith(str(Path(lone_file).parent) + "/")]

    # unusual permission bits: executable, private, group-only, a 0o750 directory
    modes = {texts[0]: 0o751, texts[1]: 0o600, texts[2]: 0o640, binaries[0]: 0o640}
    for rel, mode in modes.items():
        (root / rel).chmod(mode)
    odd_dir = str(Path(texts[20]).parent)
    (root / odd_dir).chmod(0o750)
    return Tree(root, texts, binaries, lone_file, odd_dir, modes)


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    directory = tmp_path / "manifests"
    directory.mkdir()
    out = subprocess.run(
        [script("reversi-connectors"), "manifests", "fs", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    (directory / "fs.json").write_text(out.stdout)
    return directory


@asynccontextmanager
async def gateway(
    tmp_path: Path, manifests: Path, root: Path
) -> AsyncIterator[tuple[ClientSession, Path]]:
    args = ["--manifests", str(manifests), "--data", str(tmp_path / "data")]
    args += ["--upstream-cmd", script("reversi-connectors")]
    for arg in ("serve", "fs", "--root", str(root)):
        args += ["--upstream-arg", arg]
    params = StdioServerParameters(
        command=script("reversi-gateway"), args=args, env=dict(os.environ)
    )
    errlog = tmp_path / "gateway.err"
    with errlog.open("a") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client, errlog


class Calls:
    """Calls the gateway and keeps what every answer says about its run and step."""

    def __init__(self, client: ClientSession) -> None:
        self.client = client
        self.runs: set[str] = set()
        self.steps: dict[int, tuple[str, str]] = {}  # step: (tool, outcome)

    async def raw(self, tool: str, **args: Any) -> Any:
        result = await self.client.call_tool(tool, args)
        assert result.meta is not None, (tool, args, result)
        self.runs.add(result.meta["reversi/run"])
        step = result.meta["reversi/step"]
        assert step not in self.steps, (step, self.steps)
        self.steps[step] = (tool, result.meta["reversi/outcome"])
        return result

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.raw(tool, **args)
        assert not result.is_error, (tool, args, result.content)
        assert result.meta["reversi/outcome"] == "succeeded", result.meta
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async def fails(self, tool: str, code: str, **args: Any) -> None:
        result = await self.raw(tool, **args)
        assert result.is_error, (tool, args, result.structured_content)
        assert result.meta["reversi/outcome"] == "failed", result.meta
        assert result.structured_content["error"]["code"] == code, result.structured_content


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def reversi(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script("reversi"), *args], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.anyio
@pytest.mark.slow
async def test_gateway_run_on_a_copy_of_pip_rolls_back_byte_identical(
    tmp_path: Path, tree: Tree, manifests: Path
) -> None:
    root = tree.root
    before = fingerprint(root)
    for rel, mode in tree.modes.items():
        assert before[rel][:2] == ("file", oct(mode))
    assert before[tree.odd_dir] == ("dir", "0o750")
    assert before["empty"] == ("dir", "0o755")
    assert before["pip/_vendor/empty_nested/a/b"] == ("dir", "0o700")
    texts, bins = tree.texts, tree.binaries
    # distinct files for each role, from different directories where it matters
    executable, private, group_only = texts[0], texts[1], texts[2]
    twice, to_binary, deleted_text, overwritten_then_deleted = texts[3:7]
    in_odd_dir = texts[20]
    movers = texts[30:36]
    replaced_by_move = next(
        t for t in texts[40:] if Path(t).parent != Path(movers[2]).parent and t not in movers
    )
    new_bin = os.urandom(4096) + b"\0\xff\xfe"

    async with gateway(tmp_path, manifests, root) as (client, errlog):
        calls = Calls(client)
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {
            "fs.read_file",
            "fs.list_dir",
            "fs.write_file",
            "fs.delete_file",
            "fs.make_dir",
            "fs.move_file",
        } <= tools

        # --- read and list ---
        top = await calls.ok("fs.list_dir", path=".")
        assert [e["name"] for e in top["entries"]] == ["empty", "pip"]
        distlib = str(Path(bins[1]).parent)
        listed = await calls.ok("fs.list_dir", path=distlib)
        on_disk = sorted(os.listdir(root / distlib))
        assert [e["name"] for e in listed["entries"]] == on_disk
        for entry in listed["entries"]:
            if entry["type"] == "file":
                assert entry["size"] == (root / distlib / entry["name"]).stat().st_size
        text = await calls.ok("fs.read_file", path=executable)
        assert text["content"].encode() == (root / executable).read_bytes()
        binary = await calls.ok("fs.read_file", path=bins[1], encoding="base64")
        assert base64.b64decode(binary["content"]) == (root / bins[1]).read_bytes()
        await calls.fails("fs.read_file", "not_utf8", path=bins[1])

        # --- overwrite text and binary files (modes are kept) ---
        await calls.ok("fs.write_file", path=executable, content="#!/bin/sh\necho replaced\n")
        await calls.ok("fs.write_file", path=private, content="secret = 'replaced'\n")
        await calls.ok("fs.write_file", path=group_only, content="")
        await calls.ok("fs.write_file", path=twice, content="# first\n")
        await calls.ok("fs.write_file", path=twice, content="# second\n")
        await calls.ok("fs.write_file", path=to_binary, content=b64(new_bin), encoding="base64")
        written = await calls.ok(
            "fs.write_file", path=bins[0], content=b64(b"MZ" + new_bin), encoding="base64"
        )
        assert written["existed"] is True
        assert written["backup"]
        await calls.ok("fs.write_file", path=bins[1], content="now text\n")
        await calls.ok("fs.write_file", path=in_odd_dir, content="# in a 0o750 directory\n")
        assert (root / twice).read_text() == "# second\n"
        assert (root / to_binary).read_bytes() == new_bin
        assert (root / bins[0]).read_bytes() == b"MZ" + new_bin
        assert stat.S_IMODE((root / executable).stat().st_mode) == 0o751
        assert stat.S_IMODE((root / private).stat().st_mode) == 0o600
        assert stat.S_IMODE((root / bins[0]).stat().st_mode) == 0o640

        # --- new files in new nested directories ---
        made = await calls.ok("fs.make_dir", path="newpkg/sub/deeper")
        assert made["created"] == ["newpkg", "newpkg/sub", "newpkg/sub/deeper"]
        await calls.ok("fs.write_file", path="newpkg/sub/deeper/new.txt", content="new\n")
        await calls.ok(
            "fs.write_file", path="newpkg/sub/blob.bin", content=b64(new_bin), encoding="base64"
        )
        await calls.ok("fs.write_file", path="newpkg/top.md", content="# top\n")
        await calls.ok("fs.make_dir", path="pip/_internal/extra/inner")
        await calls.ok("fs.write_file", path="pip/_internal/extra/inner/x.py", content="x = 1\n")
        await calls.ok("fs.write_file", path="pip/_internal/new_module.py", content="y = 2\n")
        again = await calls.ok("fs.make_dir", path="empty")
        assert again["created"] == []
        await calls.ok("fs.write_file", path="empty/filled.txt", content="no longer empty\n")
        await calls.ok("fs.write_file", path="pip/_vendor/empty_nested/a/b/c.txt", content="c")
        await calls.ok("fs.write_file", path="newpkg/short_lived.txt", content="gone soon\n")
        await calls.ok("fs.delete_file", path="newpkg/short_lived.txt")
        assert (root / "newpkg/sub/blob.bin").read_bytes() == new_bin

        # --- deletions: text, binary, a file changed earlier, the only file of a directory ---
        await calls.ok("fs.delete_file", path=deleted_text)
        await calls.ok("fs.delete_file", path=bins[2])
        await calls.ok("fs.write_file", path=overwritten_then_deleted, content="# doomed\n")
        await calls.ok("fs.delete_file", path=overwritten_then_deleted)
        await calls.ok("fs.delete_file", path=private)
        await calls.ok("fs.delete_file", path=tree.lone_file)
        assert list((root / tree.lone_file).parent.iterdir()) == []
        await calls.fails("fs.delete_file", "not_found", path=deleted_text)

        # --- moves across directories ---
        await calls.ok("fs.move_file", source=movers[0], destination="newpkg/moved0.py")
        await calls.ok("fs.move_file", source=movers[1], destination="newpkg/sub/deeper/m1.py")
        await calls.ok("fs.move_file", source="newpkg/sub/deeper/m1.py", destination="empty/m1.py")
        await calls.fails("fs.move_file", "exists", source=movers[2], destination=replaced_by_move)
        replaced = await calls.ok(
            "fs.move_file", source=movers[2], destination=replaced_by_move, overwrite=True
        )
        assert replaced["replaced_backup"]
        await calls.ok(
            "fs.move_file", source=bins[3], destination=bins[1], overwrite=True
        )  # a binary over a file this run overwrote
        await calls.ok("fs.move_file", source=executable, destination=f"{tree.odd_dir}/exe.py")
        await calls.ok(
            "fs.move_file", source="newpkg/top.md", destination=f"{Path(movers[3]).parent}/top.md"
        )
        await calls.ok("fs.move_file", source=movers[4], destination="pip/renamed_here.py")
        await calls.ok("fs.move_file", source=movers[5], destination="newpkg/sub/deeper/m5.py")
        assert stat.S_IMODE((root / tree.odd_dir / "exe.py").stat().st_mode) == 0o751

        # --- read and list the result ---
        deeper = await calls.ok("fs.list_dir", path="newpkg/sub/deeper")
        assert [e["name"] for e in deeper["entries"]] == ["m5.py", "new.txt"]
        back = await calls.ok("fs.read_file", path="empty/m1.py")
        assert hashlib.sha256(back["content"].encode()).hexdigest() == before[movers[1]][3]
        over = await calls.ok("fs.read_file", path=bins[1], encoding="base64")
        assert hashlib.sha256(base64.b64decode(over["content"])).hexdigest() == before[bins[3]][3]
        assert differences(before, fingerprint(root))

    assert len(calls.runs) == 1, calls.runs
    (run_id,) = calls.runs
    assert list(calls.steps) == sorted(calls.steps)
    reads = {"fs.read_file", "fs.list_dir"}
    writes = [
        n for n, (tool, out) in calls.steps.items() if tool not in reads and out == "succeeded"
    ]
    failed = [n for n, (_, out) in calls.steps.items() if out == "failed"]
    assert len(writes) > 30
    assert len(failed) == 3
    assert run_id in errlog.read_text(), "the run id is printed on stderr at start"
    data = str(tmp_path / "data")

    shown = reversi("show", run_id, "--data", data, "--json")
    assert shown.returncode == 0, shown.stderr
    journaled = json.loads(shown.stdout)
    assert journaled["run"]["id"] == run_id
    assert {s["step"]: (s["tool"], s["state"]) for s in journaled["steps"]} == calls.steps

    compensator = (
        f"{shlex.quote(script('reversi-connectors'))} compensate --root {shlex.quote(str(root))}"
    )
    rollback = ("rollback", run_id, "--data", data, "--compensator-cmd", compensator, "--json")
    first = reversi(*rollback)
    assert first.returncode == 0, first.stdout + first.stderr
    report = json.loads(first.stdout)
    assert report["complete"] is True, report
    assert report["status"] == "complete"
    assert report["outstanding"] == []
    assert report["unrecoverable"] == []
    assert sorted(report["compensated_now"]) == writes
    assert {s["step"]: s["rollback_state"] for s in report["steps"] if s["step"] in writes} == {
        n: "compensated" for n in writes
    }
    assert differences(before, fingerprint(root)) == []
    assert fingerprint(root) == before
    assert (root / BACKUPS).is_dir()

    settled = fingerprint(root, with_backups=True)
    second = reversi(*rollback)
    assert second.returncode == 0, second.stdout + second.stderr
    again = json.loads(second.stdout)
    assert again["complete"] is True, again
    assert again["status"] == "complete"
    assert again["compensated_now"] == []
    assert differences(settled, fingerprint(root, with_backups=True)) == []

    runs = reversi("runs", "--data", data, "--json")
    assert runs.returncode == 0, runs.stderr
    assert [r["status"] for r in json.loads(runs.stdout) if r["id"] == run_id] == ["rolled_back"]
