"""Test helpers for the ``fs`` connector, and its opt-in to the certification suite.

The fs "backend" is a directory tree, so there is no fake server to run: a test (or a
user testing an agent) points :class:`~reversi_connector_fs.FsConnector` at a scratch
directory. This module offers:

- :class:`FsBackend`: a scratch root and its backup directory, with :meth:`FsBackend.seed`
  (a few known files), :meth:`FsBackend.fingerprint` (the tree as plain data), and a
  sentinel tree beside the root with :meth:`FsBackend.outside` (what surrounds the root,
  which no call may change);
- :func:`certification_fixture`: what the repository's ``certification/`` suite needs
  to drive every fs tool (see docs/certification-guide.md). Its failing examples include,
  for every writing tool, a path that leaves the root with ``..`` and an absolute one,
  both aimed at the sentinel tree; :func:`someone_changes` is the person who, after the
  agent's call, edits the file it wrote or moved, makes a directory where it deleted a
  file, or puts a file into a directory it made (the concurrent-change check).

Four checks do not apply to fs, each for a reason stated in :data:`NOT_APPLICABLE`.
Compensation failures are injected by :func:`undo_fault`, which makes the file system
refuse the one undo in question (a missing backup, a directory in the way, a stray
file), since ``chmod`` stops nobody when tests run as root.
"""

from __future__ import annotations

import hashlib
import os
import stat
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reversi_core.testing import (
    ArgsBuilder,
    CertificationFixture,
    ConcurrentChange,
    Dependency,
    Example,
    ExampleContext,
    Failure,
    NotApplicable,
    Residue,
)

from .connector import DEFAULT_BACKUP_DIR, FsConnector

__all__ = [
    "NOT_APPLICABLE",
    "NO_LIVE_SCENARIO",
    "SEED_FILES",
    "SENTINEL_FILES",
    "FsBackend",
    "certification_fixture",
    "fs_backend",
    "someone_changes",
    "undo_fault",
]

SEED_FILES: Mapping[str, str] = {
    "notes/todo.txt": "buy milk\n",
    "readme.txt": "hello\n",
}
"""The files :meth:`FsBackend.seed` writes (UTF-8), by path relative to the root."""

SENTINEL_FILES: Mapping[str, str] = {
    "sentinel.txt": "outside the root: no call may touch this\n",
    "keep/inner.txt": "outside the root too\n",
}
"""The files :func:`fs_backend` writes beside the root (in ``beside/``, with an empty ``empty/``)."""

NOT_APPLICABLE: Mapping[str, str] = {
    "retry": "fs works on a local file system: no network transport sits between the tool "
    "and its effect, so there is no dropped connection to retry, and an OS error is definite",
    "permission_denial": "fs has no service to answer 401 or 403; access is the operating "
    "system's business, and the connector's own guard (paths confined to the root) is "
    "tested in the fs package",
    "timeout": "a local file operation has no remote peer that could stay silent, so there "
    "is nothing for a timeout to cut short",
    "redaction": "fs reads no credential, so there is no secret that could leak",
}
"""The checks that do not apply to fs, and why."""


def _entries(top: Path, *, skip: Path | None = None) -> dict[str, Any]:
    """Every entry under ``top`` (but ``skip`` and what is under it), by path relative to ``top``.

    Files give ``{"type": "file", "mode", "sha256"}``, directories ``{"type": "dir",
    "mode"}``, anything else ``{"type": "other"}``; links are not followed.
    """
    found: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        if skip is not None and skip.parent == here and skip.name in dirnames:
            dirnames.remove(skip.name)
        for name in sorted(dirnames + filenames):
            full = here / name
            st = full.lstat()
            rel = full.relative_to(top).as_posix()
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(full.read_bytes()).hexdigest()
                found[rel] = {"type": "file", "mode": stat.S_IMODE(st.st_mode), "sha256": digest}
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = {"type": "dir", "mode": stat.S_IMODE(st.st_mode)}
            else:
                found[rel] = {"type": "other"}
    return found


@dataclass(frozen=True)
class FsBackend:
    """A scratch root for :class:`~reversi_connector_fs.FsConnector`, and what lies beside it.

    ``root`` is the connector's root; ``backup_dir`` its backup directory (the default,
    inside the root); ``aside`` a directory outside both, where :func:`undo_fault`
    parks what it takes away; ``beside`` a sentinel tree next to the root
    (:data:`SENTINEL_FILES` and an empty directory ``empty/``), at which the failing
    examples that try to leave the root aim.
    """

    root: Path
    backup_dir: Path
    aside: Path
    beside: Path

    def connector(self) -> FsConnector:
        """A connector on this root with the default backup directory."""
        return FsConnector(self.root)

    def seed(self) -> None:
        """Write :data:`SEED_FILES` and an empty directory ``empty/``."""
        for rel, text in SEED_FILES.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        (self.root / "empty").mkdir(exist_ok=True)

    def fingerprint(self) -> dict[str, Any]:
        """The tree as data: ``{"tree": {path: entry}, "backups": [names]}``.

        Files give ``{"type": "file", "mode", "sha256"}``, directories ``{"type": "dir",
        "mode"}``, anything else ``{"type": "other"}``; links are not followed. The backup
        directory is left out of ``tree`` and its entry names listed in ``backups``.
        """
        tree = _entries(self.root, skip=self.root / DEFAULT_BACKUP_DIR)
        backups = sorted(os.listdir(self.backup_dir)) if self.backup_dir.is_dir() else []
        return {"tree": tree, "backups": backups}

    def outside(self) -> dict[str, Any]:
        """Everything in the directory that holds the root, but the root: ``{path: entry}``.

        Entries as in :meth:`fingerprint`, by path relative to that directory
        (``beside/sentinel.txt``, ``aside``...): a file written, changed, moved or deleted
        beside the root shows here.
        """
        return _entries(self.root.parent, skip=self.root)


@contextmanager
def fs_backend(directory: Path) -> Iterator[FsBackend]:
    """A fresh, empty :class:`FsBackend` under ``directory`` (which the caller cleans up).

    ``directory`` holds ``root/``, ``aside/`` and the sentinel tree ``beside/``.
    """
    root = (directory / "root").resolve()
    root.mkdir(parents=True)
    aside = root.parent / "aside"
    aside.mkdir()
    beside = root.parent / "beside"
    for rel, text in SENTINEL_FILES.items():
        path = beside / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (beside / "empty").mkdir()
    yield FsBackend(root=root, backup_dir=root / DEFAULT_BACKUP_DIR, aside=aside, beside=beside)


@contextmanager
def undo_fault(backend: FsBackend, tool: str, args: Mapping[str, Any]) -> Iterator[None]:
    """Make the compensation ``tool`` with ``args`` fail until the block ends, then undo that.

    - ``fs.restore_file`` with a backup: the backup is moved aside (``backup_missing``);
    - ``fs.restore_file`` without one (undoing a new file): the file is moved aside and a
      directory stands at its path (``changed_since`` when the call says what the write
      left, ``is_a_directory`` otherwise);
    - ``fs.remove_dir``: a stray file sits in the deepest directory (``not_empty``);
    - ``fs.unmove_file``: a file appears at the move's source (``changed_since``, or
      ``conflict`` without the move's ``sha256``).

    Raises ``ValueError`` for any other tool.
    """
    spot = backend.aside / uuid.uuid4().hex
    if tool == "fs.restore_file" and args.get("backup"):
        held = backend.backup_dir / str(args["backup"])
        os.rename(held, spot)
        try:
            yield
        finally:
            os.rename(spot, held)
    elif tool == "fs.restore_file":
        target = backend.root / str(args["path"])
        os.rename(target, spot)
        target.mkdir()
        try:
            yield
        finally:
            target.rmdir()
            os.rename(spot, target)
    elif tool == "fs.remove_dir":
        deepest = max((str(p) for p in args["paths"]), key=lambda p: p.count("/"))
        stray = backend.root / deepest / "stray-file"
        stray.write_text("in the way\n", encoding="utf-8")
        try:
            yield
        finally:
            stray.unlink()
    elif tool == "fs.unmove_file":
        blocker = backend.root / str(args["source"])
        blocker.write_text("in the way\n", encoding="utf-8")
        try:
            yield
        finally:
            blocker.unlink()
    else:
        raise ValueError(f"no fault is defined for {tool}")


def someone_changes(
    backend: FsBackend, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange:
    """After ``tool``'s call, change what it left, as a person would; return how to take it back.

    - ``fs.write_file``, ``fs.move_file``: a line is added to the file it wrote (or moved
      to its destination): its undo must refuse, naming ``the file's content``;
    - ``fs.delete_file``: a directory is made where the file was (``a directory now stands
      at the path``);
    - ``fs.make_dir``: a file is put into the deepest directory it made (``is not empty``).

    Raises ``ValueError`` for any other tool.
    """
    if tool in ("fs.write_file", "fs.move_file"):
        target = backend.root / str(result["path" if tool == "fs.write_file" else "destination"])
        produced = target.read_bytes()
        target.write_bytes(produced + b"a line a person added\n")

        def put_back() -> None:
            target.write_bytes(produced)

        return ConcurrentChange(what="the file's content", revert=put_back)
    if tool == "fs.delete_file":
        target = backend.root / str(result["path"])
        target.mkdir()
        return ConcurrentChange(what="a directory now stands at the path", revert=target.rmdir)
    if tool == "fs.make_dir":
        stray = backend.root / str(result["created"][-1]) / "a-persons-notes.txt"
        stray.write_text("mine\n", encoding="utf-8")
        return ConcurrentChange(what="is not empty", revert=stray.unlink)
    raise ValueError(f"no concurrent change is defined for {tool}")


# -- example arguments ------------------------------------------------------------------


def _left(done: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments that say what fs.write_file left (as its argument map passes them on)."""
    return {"left": "file", "sha256": done["sha256"], "mode": done["mode"]}


async def _restore_after_overwrite(ctx: ExampleContext[FsBackend]) -> Mapping[str, Any]:
    done = await ctx.call("fs.write_file", {"path": "readme.txt", "content": "overwritten\n"})
    return {"path": "readme.txt", "backup": done["backup"], **_left(done)}


async def _restore_new_file(ctx: ExampleContext[FsBackend]) -> Mapping[str, Any]:
    done = await ctx.call("fs.write_file", {"path": "fresh.txt", "content": "new\n"})
    return {"path": "fresh.txt", "backup": None, **_left(done)}


async def _restore_deleted(ctx: ExampleContext[FsBackend]) -> Mapping[str, Any]:
    done = await ctx.call("fs.delete_file", {"path": "readme.txt"})
    return {"path": "readme.txt", "backup": done["backup"], "left": "absent"}


async def _restore_unchecked(ctx: ExampleContext[FsBackend]) -> Mapping[str, Any]:
    done = await ctx.call("fs.write_file", {"path": "readme.txt", "content": "by hand\n"})
    return {"path": "readme.txt", "backup": done["backup"]}


async def _remove_made_dirs(ctx: ExampleContext[FsBackend]) -> Mapping[str, Any]:
    done = await ctx.call("fs.make_dir", {"path": "made/inner"})
    return {"paths": done["created"]}


async def _unmove(ctx: ExampleContext[FsBackend]) -> Mapping[str, Any]:
    done = await ctx.call("fs.move_file", {"source": "notes/todo.txt", "destination": "todo.txt"})
    return {
        "source": "notes/todo.txt",
        "destination": "todo.txt",
        "replaced_backup": None,
        "sha256": done["sha256"],
        "mode": done["mode"],
    }


async def _unmove_over(ctx: ExampleContext[FsBackend]) -> Mapping[str, Any]:
    done = await ctx.call(
        "fs.move_file",
        {"source": "notes/todo.txt", "destination": "readme.txt", "overwrite": True},
    )
    return {
        "source": "notes/todo.txt",
        "destination": "readme.txt",
        "replaced_backup": done["replaced_backup"],
    }


EXAMPLES: Mapping[str, list[Example]] = {
    "fs.read_file": [
        {"path": "notes/todo.txt"},
        {"path": "readme.txt", "encoding": "base64"},
    ],
    "fs.list_dir": [{"path": "."}, {"path": "notes"}],
    "fs.write_file": [
        {"path": "fresh.txt", "content": "new file\n"},
        {"path": "notes/todo.txt", "content": "replaced\n"},
        {"path": "bin.dat", "content": "AAEC/w==", "encoding": "base64"},
    ],
    "fs.delete_file": [{"path": "notes/todo.txt"}],
    "fs.make_dir": [{"path": "a/b/c"}, {"path": "solo", "parents": False}],
    "fs.move_file": [
        {"source": "notes/todo.txt", "destination": "todo.txt"},
        {"source": "notes/todo.txt", "destination": "readme.txt", "overwrite": True},
    ],
    "fs.restore_file": [
        _restore_after_overwrite,
        _restore_new_file,
        _restore_deleted,
        _restore_unchecked,
    ],
    "fs.remove_dir": [_remove_made_dirs],
    "fs.unmove_file": [_unmove, _unmove_over],
}


def _beside(make: Callable[[Path], Mapping[str, Any]]) -> ArgsBuilder:
    """An args builder: ``make(beside)`` with the absolute path of the backend's sentinel tree."""

    async def build(ctx: ExampleContext[FsBackend]) -> Mapping[str, Any]:
        return make(ctx.handle.beside)

    return build


def _refused(args: Example) -> Failure:
    return Failure(args, code="path_refused")


FAILURES: Mapping[str, list[Failure]] = {
    "fs.read_file": [
        Failure({"path": "missing.txt"}, code="not_found"),
        _refused({"path": "../outside.txt"}),
    ],
    "fs.list_dir": [Failure({"path": "missing"}, code="not_found")],
    "fs.write_file": [
        Failure({"path": "no/such/dir/file.txt", "content": "x"}, code="not_found"),
        _refused({"path": "../beside/escaped.txt", "content": "x"}),
        _refused(_beside(lambda b: {"path": str(b / "sentinel.txt"), "content": "x"})),
    ],
    "fs.delete_file": [
        Failure({"path": "missing.txt"}, code="not_found"),
        Failure({"path": "empty"}, code="is_a_directory"),
        _refused({"path": "../beside/sentinel.txt"}),
        _refused(_beside(lambda b: {"path": str(b / "keep" / "inner.txt")})),
    ],
    "fs.make_dir": [
        Failure({"path": "missing/child", "parents": False}, code="not_found"),
        Failure({"path": "readme.txt"}, code="not_a_directory"),
        _refused({"path": "../beside/made"}),
        _refused(_beside(lambda b: {"path": str(b / "made")})),
    ],
    "fs.move_file": [
        Failure({"source": "notes/todo.txt", "destination": "readme.txt"}, code="exists"),
        _refused({"source": "../beside/sentinel.txt", "destination": "pulled-in.txt"}),
        _refused(_beside(lambda b: {"source": "readme.txt", "destination": str(b / "out.txt")})),
    ],
    "fs.restore_file": [
        Failure({"path": "readme.txt", "backup": "0" * 32 + "-gone.txt"}, code="backup_missing"),
        _refused({"path": "../beside/sentinel.txt", "backup": None}),
        _refused(_beside(lambda b: {"path": str(b / "keep" / "inner.txt"), "backup": None})),
    ],
    "fs.remove_dir": [
        Failure({"paths": ["notes"]}, code="not_empty"),
        _refused({"paths": ["../beside/empty"]}),
        _refused(_beside(lambda b: {"paths": [str(b / "empty")]})),
    ],
    "fs.unmove_file": [
        Failure({"source": "gone-a.txt", "destination": "gone-b.txt"}, code="not_found"),
        _refused({"source": "../beside/back.txt", "destination": "readme.txt"}),
        _refused(
            _beside(lambda b: {"source": "pulled.txt", "destination": str(b / "sentinel.txt")})
        ),
    ],
}
"""Calls fs refuses, each with its code: missing paths, conflicts, and, for every writing tool,
a path that leaves the root through ``..`` and an absolute one, aimed at the sentinel tree."""

DEPENDENCIES: list[Dependency] = [
    Dependency("fs.make_dir", {"path": "d"}, "fs.write_file", {"path": "d/f.txt", "content": "x"}),
    Dependency("fs.make_dir", {"path": "d"}, "fs.make_dir", {"path": "d/e"}),
    Dependency(
        "fs.write_file", {"path": "w.txt", "content": "x"}, "fs.delete_file", {"path": "w.txt"}
    ),
    Dependency(
        "fs.write_file",
        {"path": "w.txt", "content": "x"},
        "fs.move_file",
        {"source": "w.txt", "destination": "moved.txt"},
    ),
]

_BACKUPS_KEPT = Residue(
    reason="the copies in the backup directory stay after the undo, so that the undo can be "
    "run again; fs never deletes a backup it has named",
    normalise=lambda fingerprint: {k: v for k, v in fingerprint.items() if k != "backups"},
)


NO_LIVE_SCENARIO = NotApplicable(
    "fs works on a local directory: there is no remote vendor to run a live scenario against, "
    "and its certification already runs every tool on a real file system"
)
"""Why ``nox -s live -- fs`` has nothing to run."""


def certification_fixture() -> CertificationFixture[FsBackend]:
    """The fs connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="a scratch directory",
        command_line=lambda b: ({}, ["--root", str(b.root), "--backup-dir", str(b.backup_dir)]),
        backend=fs_backend,
        seed=FsBackend.seed,
        build=FsBackend.connector,
        fingerprint=FsBackend.fingerprint,
        outside=FsBackend.outside,
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={
            "fs.write_file": _BACKUPS_KEPT,
            "fs.delete_file": _BACKUPS_KEPT,
            "fs.move_file": _BACKUPS_KEPT,
        },
        undo_fault=undo_fault,
        concurrent_change=someone_changes,
        credential=None,
        not_applicable=dict(NOT_APPLICABLE),
        live=NO_LIVE_SCENARIO,
    )
