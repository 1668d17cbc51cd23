"""A rollback never overwrites a change someone made after the call (docs/engine.md, RB-10).

Each changing tool runs, then "a person" changes what it left (through the file system,
not the connector), then its compensation runs with the arguments the manifest's map
computes from the call, as the engine does: it must refuse with ``changed_since``, name
what changed and leave everything as the person left it; with ``ctx.overwrite`` (a
person's decision for that step) it goes ahead. Every refusal is checked with a strict
snapshot (inodes and mtimes too), so "changed nothing" means no file was rewritten.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from reversi_core.connector import CallContext
from reversi_core.errors import ToolError
from reversi_core.manifest import Manifest, evaluate_argument_map

pytestmark = pytest.mark.anyio

OVERWRITE = CallContext(compensation=True, overwrite=True)


def undo_args(
    manifests: dict[str, Manifest], tool: str, args: dict[str, Any], result: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    compensation = manifests[tool].compensation
    assert compensation is not None
    return compensation.tool, evaluate_argument_map(compensation, args, result)


async def refused(world: Any, tool: str, args: dict[str, Any], words: str) -> ToolError:
    """The compensation must refuse naming ``words`` and change nothing at all."""
    before = world.snapshot(strict=True)
    with pytest.raises(ToolError) as caught:
        await world.fs.call(tool, args, CallContext(compensation=True))
    assert caught.value.code == "changed_since", caught.value
    assert words in str(caught.value)
    assert "--overwrite STEP" in str(caught.value)
    assert world.snapshot(strict=True) == before
    return caught.value


# -- fs.write_file undone by fs.restore_file ------------------------------------------------


@pytest.mark.parametrize("existed", [True, False], ids=["replaced", "new"])
async def test_an_edit_after_a_write_is_kept(
    plain: Any, manifests: dict[str, Manifest], existed: bool
) -> None:
    target = plain.root / "notes.txt"
    if existed:
        target.write_text("the original\n")
    args = {"path": "notes.txt", "content": "the agent's\n"}
    result = await plain.fs.call("fs.write_file", args)
    undo, undo_with = undo_args(manifests, "fs.write_file", args, result)
    target.write_text("the agent's\nand a person's line\n")
    error = await refused(plain, undo, undo_with, "the file's content changed since the call")
    assert str(error).startswith("'notes.txt': ")
    target.write_text("the agent's\n")  # the person takes their line back
    done = await plain.fs.call(undo, undo_with, CallContext(compensation=True))
    if existed:
        assert done["action"] == "restored"
        assert target.read_text() == "the original\n"
    else:
        assert done["action"] == "deleted"
        assert not target.exists()


async def test_a_changed_permission_is_named_with_both_modes(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    (plain.root / "run.sh").write_text("echo one\n")
    (plain.root / "run.sh").chmod(0o644)
    args = {"path": "run.sh", "content": "echo two\n"}
    undo, undo_with = undo_args(
        manifests, "fs.write_file", args, await plain.fs.call("fs.write_file", args)
    )
    (plain.root / "run.sh").chmod(0o755)
    await refused(
        plain, undo, undo_with, "permission bits changed since the call (0o644, now 0o755)"
    )


@pytest.mark.parametrize(
    ("replace", "words"),
    [
        (lambda p: p.mkdir(), "a directory now stands at the path"),
        (lambda p: os.symlink("elsewhere", p), "a symbolic link now stands at the path"),
        (lambda p: os.mkfifo(p), "a fifo, socket or device now stands at the path"),
    ],
    ids=["directory", "link", "fifo"],
)
async def test_something_else_standing_at_the_written_path_is_kept(
    plain: Any, manifests: dict[str, Manifest], replace: Any, words: str
) -> None:
    args = {"path": "fresh.txt", "content": "new\n"}
    undo, undo_with = undo_args(
        manifests, "fs.write_file", args, await plain.fs.call("fs.write_file", args)
    )
    (plain.root / "fresh.txt").unlink()
    replace(plain.root / "fresh.txt")
    await refused(plain, undo, undo_with, words)


async def test_a_replaced_file_someone_deleted_is_not_brought_back(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    (plain.root / "old.txt").write_text("old\n")
    args = {"path": "old.txt", "content": "agent\n"}
    undo, undo_with = undo_args(
        manifests, "fs.write_file", args, await plain.fs.call("fs.write_file", args)
    )
    (plain.root / "old.txt").unlink()
    await refused(plain, undo, undo_with, "the file was deleted since the call")


async def test_a_new_file_someone_deleted_is_simply_already_undone(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    args = {"path": "fresh.txt", "content": "new\n"}
    undo, undo_with = undo_args(
        manifests, "fs.write_file", args, await plain.fs.call("fs.write_file", args)
    )
    (plain.root / "fresh.txt").unlink()
    assert (await plain.fs.call(undo, undo_with))["action"] == "absent"


async def test_a_file_someone_put_back_as_it_was_counts_as_restored(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    (plain.root / "a.txt").write_text("first\n")
    args = {"path": "a.txt", "content": "second\n"}
    undo, undo_with = undo_args(
        manifests, "fs.write_file", args, await plain.fs.call("fs.write_file", args)
    )
    (plain.root / "a.txt").write_text("first\n")  # the person restored it by hand
    assert (await plain.fs.call(undo, undo_with))["action"] == "unchanged"


async def test_overwrite_puts_the_backup_back_over_the_later_edit(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    (plain.root / "a.txt").write_text("first\n")
    args = {"path": "a.txt", "content": "second\n"}
    undo, undo_with = undo_args(
        manifests, "fs.write_file", args, await plain.fs.call("fs.write_file", args)
    )
    (plain.root / "a.txt").write_text("a person's third\n")
    assert (await plain.fs.call(undo, undo_with, OVERWRITE))["action"] == "restored"
    assert (plain.root / "a.txt").read_text() == "first\n"
    assert (await plain.fs.call(undo, undo_with))["action"] == "unchanged"  # idempotent after


async def test_overwrite_deletes_an_edited_new_file_but_never_a_directory(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    args = {"path": "fresh.txt", "content": "new\n"}
    undo, undo_with = undo_args(
        manifests, "fs.write_file", args, await plain.fs.call("fs.write_file", args)
    )
    (plain.root / "fresh.txt").write_text("edited\n")
    assert (await plain.fs.call(undo, undo_with, OVERWRITE))["action"] == "deleted"
    assert not (plain.root / "fresh.txt").exists()
    (plain.root / "fresh.txt").mkdir()
    with pytest.raises(ToolError) as caught:
        await plain.fs.call(undo, undo_with, OVERWRITE)
    assert caught.value.code == "is_a_directory"
    assert (plain.root / "fresh.txt").is_dir()


# -- fs.delete_file undone by fs.restore_file -----------------------------------------------


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (
            lambda p: p.write_text("a new one\n"),
            "a file now stands at the path (made since the call)",
        ),
        (lambda p: p.mkdir(), "a directory now stands at the path (made since the call)"),
    ],
    ids=["file", "directory"],
)
async def test_what_someone_made_where_a_file_was_deleted_is_kept(
    plain: Any, manifests: dict[str, Manifest], make: Any, words: str
) -> None:
    (plain.root / "gone.txt").write_text("deleted by the agent\n")
    args = {"path": "gone.txt"}
    undo, undo_with = undo_args(
        manifests, "fs.delete_file", args, await plain.fs.call("fs.delete_file", args)
    )
    make(plain.root / "gone.txt")
    await refused(plain, undo, undo_with, words)


async def test_overwrite_restores_a_deleted_file_over_a_new_one(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    (plain.root / "gone.txt").write_text("deleted by the agent\n")
    args = {"path": "gone.txt"}
    undo, undo_with = undo_args(
        manifests, "fs.delete_file", args, await plain.fs.call("fs.delete_file", args)
    )
    (plain.root / "gone.txt").write_text("a new one\n")
    assert (await plain.fs.call(undo, undo_with, OVERWRITE))["action"] == "restored"
    assert (plain.root / "gone.txt").read_text() == "deleted by the agent\n"


# -- fs.move_file undone by fs.unmove_file --------------------------------------------------


@pytest.mark.parametrize("overwrote", [False, True], ids=["plain", "over-a-file"])
async def test_an_edit_of_a_moved_file_is_kept(
    plain: Any, manifests: dict[str, Manifest], overwrote: bool
) -> None:
    (plain.root / "a.txt").write_text("moved\n")
    if overwrote:
        (plain.root / "b.txt").write_text("replaced\n")
    args = {"source": "a.txt", "destination": "b.txt", "overwrite": overwrote}
    undo, undo_with = undo_args(
        manifests, "fs.move_file", args, await plain.fs.call("fs.move_file", args)
    )
    (plain.root / "b.txt").write_text("moved\nand edited\n")
    error = await refused(plain, undo, undo_with, "the file's content changed since the call")
    assert str(error).startswith("'b.txt': ")
    (plain.root / "b.txt").write_text("moved\n")
    done = await plain.fs.call(undo, undo_with)
    assert done["action"] == ("moved_back_and_restored" if overwrote else "moved_back")
    assert (plain.root / "a.txt").read_text() == "moved\n"
    assert (plain.root / "b.txt").exists() is overwrote


async def test_a_file_made_at_the_source_since_the_move_is_kept(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    (plain.root / "a.txt").write_text("moved\n")
    args = {"source": "a.txt", "destination": "b.txt"}
    undo, undo_with = undo_args(
        manifests, "fs.move_file", args, await plain.fs.call("fs.move_file", args)
    )
    (plain.root / "a.txt").write_text("a person's new a.txt\n")
    await refused(plain, undo, undo_with, "a file now stands at the source (made since the call)")
    done = await plain.fs.call(undo, undo_with, OVERWRITE)
    assert done["action"] == "moved_back"
    assert (plain.root / "a.txt").read_text() == "moved\n"
    assert not (plain.root / "b.txt").exists()


async def test_a_moved_file_someone_moved_back_and_edited_is_not_called_undone(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    (plain.root / "a.txt").write_text("moved\n")
    args = {"source": "a.txt", "destination": "b.txt"}
    undo, undo_with = undo_args(
        manifests, "fs.move_file", args, await plain.fs.call("fs.move_file", args)
    )
    (plain.root / "b.txt").rename(plain.root / "a.txt")
    (plain.root / "a.txt").chmod(0o600)
    await refused(plain, undo, undo_with, "permission bits changed since the call")


async def test_a_moved_file_that_cannot_be_read_is_compared_by_type_and_mode(
    plain: Any, manifests: dict[str, Manifest], monkeypatch: pytest.MonkeyPatch
) -> None:
    import reversi_connector_fs.connector as fs_module

    (plain.root / "a.txt").write_text("moved\n")
    real = fs_module.open_regular

    def unreadable(dir_fd: int, name: str, path: str) -> int:
        if name == "a.txt":
            raise ToolError(f"{path}: permission denied", code="permission_denied")
        return real(dir_fd, name, path)

    monkeypatch.setattr(fs_module, "open_regular", unreadable)
    args = {"source": "a.txt", "destination": "b.txt"}
    result = await plain.fs.call("fs.move_file", args)
    assert result["sha256"] is None
    undo, undo_with = undo_args(manifests, "fs.move_file", args, result)
    (plain.root / "b.txt").chmod(0o600)
    await refused(plain, undo, undo_with, "permission bits changed since the call")


# -- names that are not UTF-8 ----------------------------------------------------------------


def put(raw: bytes, data: bytes) -> None:
    """Write ``data`` to the file whose path is the bytes ``raw``."""
    fd = os.open(raw, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


async def test_a_refusal_names_a_non_utf8_path_by_its_spelling(
    plain: Any, manifests: dict[str, Manifest]
) -> None:
    raw = os.fsencode(plain.root) + b"/caf\xe9.txt"
    put(raw, b"before\n")
    args = {"path": "caf\\xe9.txt", "content": "agent\n"}
    undo, undo_with = undo_args(
        manifests, "fs.write_file", args, await plain.fs.call("fs.write_file", args)
    )
    put(raw, b"a person's\n")
    error = await refused(plain, undo, undo_with, "the file's content changed since the call")
    assert str(error).startswith("'caf\\\\xe9.txt': ")
