"""Fixtures for the fs connector tests: a root with hostile links beside an "outside" tree."""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reversi_connector_fs import FsConnector
from reversi_core.manifest import Manifest, evaluate_argument_map

BACKUP_SEED = "0123456789abcdef0123456789abcdef-seed.txt"
"""A backup that exists in the backup directory before each test."""

Snapshot = dict[str, tuple[Any, ...]]


def take_snapshot(top: Path, *, strict: bool = False, skip: tuple[str, ...] = ()) -> Snapshot:
    """Every entry under ``top``, byte for byte, without following links.

    Files give (kind, mode, bytes), links (kind, target), directories (kind, mode).
    ``strict`` adds inode and modification time, so that "changed nothing" also means no
    file was rewritten with equal bytes. Relative paths starting with one of ``skip``
    are left out.
    """
    out: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name in sorted(dirnames + filenames):
            full = Path(dirpath) / name
            rel = str(full.relative_to(top))
            if rel.startswith(skip):
                continue
            st = full.lstat()
            extra = (st.st_ino, st.st_mtime_ns) if strict else ()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), *extra)
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", stat.S_IMODE(st.st_mode), full.read_bytes(), *extra)
            else:
                out[rel] = ("other", stat.S_IMODE(st.st_mode))
    top_st = top.lstat()
    out["."] = ("dir", stat.S_IMODE(top_st.st_mode), *((top_st.st_mtime_ns,) if strict else ()))
    return out


@dataclass
class World:
    """``base`` holds ``root`` (the connector's) and ``outside`` (which must never change)."""

    base: Path
    root: Path
    outside: Path
    fs: FsConnector
    seed_backup: str = BACKUP_SEED

    @property
    def backups(self) -> Path:
        return Path(self.fs.backup_dir)

    def snapshot(self, *, strict: bool = False) -> Snapshot:
        """Snapshot of everything: root, backups and outside."""
        return take_snapshot(self.base, strict=strict)


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A root full of traps, an outside directory, and a connector on the root.

    root/
      sub/file.txt, sub/secret.txt ("inside"), victim.txt
      link_out -> ../outside, link_abs -> /abs/outside, link_file_out -> outside secret
      chain1 -> chain2 -> link_out; loop_a <-> loop_b; sub/link_up -> ../../outside
      sub/abs_link -> /abs/outside; inside_link -> sub; dangling -> ../outside/new.txt
      backup_alias -> .reversi-backups; selflink -> .
      .reversi-backups/<BACKUP_SEED>
    outside/secret.txt ("SECRET"), outside/sub/
    """
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    (outside / "sub").mkdir()
    (root / "sub").mkdir()
    (root / "sub" / "file.txt").write_text("inside file")
    (root / "sub" / "secret.txt").write_text("inside")
    (root / "victim.txt").write_text("victim")
    links = {
        "link_out": "../outside",
        "link_abs": str(outside),
        "link_file_out": "../outside/secret.txt",
        "chain2": "link_out",
        "chain1": "chain2",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "sub/link_up": "../../outside",
        "sub/abs_link": str(outside),
        "inside_link": "sub",
        "dangling": "../outside/new.txt",
        "backup_alias": ".reversi-backups",
        "selflink": ".",
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    (root / ".reversi-backups").mkdir(mode=0o700)
    (root / ".reversi-backups" / BACKUP_SEED).write_text("seed backup")
    return World(base=tmp_path, root=root, outside=outside, fs=FsConnector(root))


@pytest.fixture
def plain(tmp_path: Path) -> World:
    """An empty root (with a sibling outside directory) and a connector on it."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    return World(base=tmp_path, root=root, outside=outside, fs=FsConnector(root))


@pytest.fixture
def manifests() -> dict[str, Manifest]:
    """The connector's manifests by tool name."""
    return {m.name: m for m in FsConnector.manifests()}


Undo = Callable[
    [World, str, dict[str, Any], dict[str, Any]], Awaitable[tuple[dict[str, Any], dict[str, Any]]]
]


@pytest.fixture
def undo_twice(manifests: dict[str, Manifest]) -> Undo:
    """Run a call's compensation twice, with arguments computed from its manifest's map.

    Asserts that the second run changes nothing at all (strict snapshot of root and
    backups); returns both results.
    """

    async def run(
        world: World, tool: str, args: dict[str, Any], result: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        compensation = manifests[tool].compensation
        assert compensation is not None
        comp_args = evaluate_argument_map(compensation, args, result)
        first = await world.fs.call(compensation.tool, comp_args)
        between = world.snapshot(strict=True)
        second = await world.fs.call(compensation.tool, comp_args)
        assert world.snapshot(strict=True) == between
        return first, second

    return run
