"""Each changing tool, then its compensation run twice (the second changes nothing).

Compensation arguments are always computed from the manifest's argument map with
``evaluate_argument_map``, as the engine does, so these tests also prove the maps.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import pytest

import reversi_connector_fs.connector as fs_module
from reversi_connector_fs import FsConnector
from reversi_core.errors import EffectUncertainError, InvalidArgumentsError, ToolError

BINARY = os.urandom(4096) + b"\xff\xfe\xc3\x28\x80" + bytes(range(256))


def content_of(root: Path) -> dict[str, Any]:
    """Root contents without the backup directory: what a rollback must bring back."""
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".reversi-backups"]
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            st = full.lstat()
            data = full.read_bytes() if stat.S_ISREG(st.st_mode) else None
            out[str(full.relative_to(root))] = (
                stat.S_IFMT(st.st_mode),
                stat.S_IMODE(st.st_mode),
                data,
            )
    return out


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# -- write_file ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_write_new_text_file_then_restore_deletes_it(plain: Any, undo_twice: Any) -> None:
    (plain.root / "docs").mkdir()
    before = content_of(plain.root)
    args = {"path": "./docs//notes.txt", "content": "héllo\nwörld\n"}
    result = await plain.fs.call("fs.write_file", args)
    assert result == {
        "path": "docs/notes.txt",
        "existed": False,
        "backup": None,
        "size": len("héllo\nwörld\n".encode()),
        "mode": stat.S_IMODE((plain.root / "docs" / "notes.txt").stat().st_mode),
        "sha256": hashlib.sha256("héllo\nwörld\n".encode()).hexdigest(),
    }
    assert (plain.root / "docs" / "notes.txt").read_text() == "héllo\nwörld\n"
    first, second = await undo_twice(plain, "fs.write_file", args, result)
    assert first["action"] == "deleted"
    assert second["action"] == "absent"
    assert content_of(plain.root) == before
    assert not plain.backups.exists()  # a new file needs no backup


@pytest.mark.anyio
async def test_overwrite_binary_keeps_mode_and_restore_brings_back_bytes(
    plain: Any, undo_twice: Any
) -> None:
    target = plain.root / "blob.bin"
    target.write_bytes(b"original \x00\x01\x02 bytes")
    target.chmod(0o751)
    os.utime(target, ns=(1_000_000_000_000_000_000, 1_100_000_000_000_000_000))
    before = content_of(plain.root)
    args = {"path": "blob.bin", "content": b64(BINARY), "encoding": "base64"}
    result = await plain.fs.call("fs.write_file", args)
    assert result["existed"] is True
    assert result["mode"] == 0o751
    assert result["size"] == len(BINARY)
    assert result["backup"].endswith("-blob.bin")
    assert target.read_bytes() == BINARY
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    saved = plain.backups / result["backup"]
    assert saved.read_bytes() == b"original \x00\x01\x02 bytes"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o751
    assert stat.S_IMODE(plain.backups.stat().st_mode) == 0o700

    first, second = await undo_twice(plain, "fs.write_file", args, result)
    assert (first["action"], second["action"]) == ("restored", "unchanged")
    assert content_of(plain.root) == before
    assert target.stat().st_mtime_ns == 1_100_000_000_000_000_000
    assert saved.exists()  # the backup stays: residue, and what makes a rerun safe


@pytest.mark.anyio
async def test_binary_content_reads_back_only_as_base64(plain: Any) -> None:
    await plain.fs.call(
        "fs.write_file", {"path": "b.bin", "content": b64(BINARY), "encoding": "base64"}
    )
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.read_file", {"path": "b.bin"})
    assert caught.value.code == "not_utf8"
    assert "base64" in str(caught.value)
    result = await plain.fs.call("fs.read_file", {"path": "b.bin", "encoding": "base64"})
    assert base64.b64decode(result["content"]) == BINARY
    assert result["size"] == len(BINARY)
    assert result["encoding"] == "base64"


@pytest.mark.anyio
async def test_overwrite_text_with_text_twice_then_undo_newest_first(
    plain: Any, undo_twice: Any
) -> None:
    target = plain.root / "t.txt"
    target.write_text("v0")
    target.chmod(0o640)
    before = content_of(plain.root)
    a1 = {"path": "t.txt", "content": "v1"}
    r1 = await plain.fs.call("fs.write_file", a1)
    a2 = {"path": "t.txt", "content": "v2"}
    r2 = await plain.fs.call("fs.write_file", a2)
    assert target.read_text() == "v2"
    await undo_twice(plain, "fs.write_file", a2, r2)
    assert target.read_text() == "v1"
    await undo_twice(plain, "fs.write_file", a1, r1)
    assert content_of(plain.root) == before


@pytest.mark.anyio
async def test_write_errors_leave_everything_unchanged(plain: Any) -> None:
    (plain.root / "d").mkdir()
    before = plain.snapshot(strict=True)
    cases = [
        ({"path": "missing/x.txt", "content": "x"}, "not_found"),
        ({"path": "d", "content": "x"}, "is_a_directory"),
    ]
    for args, code in cases:
        with pytest.raises(ToolError) as caught:
            await plain.fs.call("fs.write_file", args)
        assert caught.value.code == code
    os.mkfifo(plain.root / "fifo")
    before = plain.snapshot(strict=True)
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.write_file", {"path": "fifo", "content": "x"})
    assert caught.value.code == "not_a_file"
    assert plain.snapshot(strict=True) == before


@pytest.mark.anyio
async def test_invalid_arguments_are_rejected_before_running(plain: Any) -> None:
    for args in [
        {"path": "a.txt", "content": "!!not base64!!", "encoding": "base64"},
        {"path": "a.txt", "content": "x", "mode": 0o777},
        {"path": "a.txt", "content": "x", "encoding": "latin-1"},
        {"path": "a.txt", "content": "\ud800"},
        {"content": "x"},
    ]:
        with pytest.raises(InvalidArgumentsError):
            await plain.fs.call("fs.write_file", args)
    with pytest.raises(InvalidArgumentsError):
        await plain.fs.call("fs.restore_file", {"path": "a.txt"})  # backup must be explicit
    assert os.listdir(plain.root) == []


@pytest.mark.anyio
async def test_size_limits(plain: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs_module, "MAX_FILE_BYTES", 16)
    (plain.root / "big.txt").write_bytes(b"x" * 17)
    (plain.root / "ok.txt").write_bytes(b"x" * 16)
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.read_file", {"path": "big.txt"})
    assert caught.value.code == "too_large"
    assert (await plain.fs.call("fs.read_file", {"path": "ok.txt"}))["size"] == 16
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.write_file", {"path": "new.txt", "content": "y" * 17})
    assert caught.value.code == "too_large"
    assert not (plain.root / "new.txt").exists()


@pytest.mark.anyio
async def test_reading_a_fifo_is_refused_without_blocking(plain: Any) -> None:
    os.mkfifo(plain.root / "pipe")
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.read_file", {"path": "pipe"})
    assert caught.value.code == "not_a_file"
    (plain.root / "d").mkdir()
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.read_file", {"path": "d"})
    assert caught.value.code == "is_a_directory"
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.read_file", {"path": "nothing.txt"})
    assert caught.value.code == "not_found"


# -- delete_file -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_delete_then_restore(plain: Any, undo_twice: Any) -> None:
    (plain.root / "d").mkdir()
    target = plain.root / "d" / "data.bin"
    target.write_bytes(BINARY)
    target.chmod(0o751)
    before = content_of(plain.root)
    args = {"path": "d/data.bin"}
    result = await plain.fs.call("fs.delete_file", args)
    assert result["existed"] is True
    assert result["mode"] == 0o751
    assert result["size"] == len(BINARY)
    assert not target.exists()
    assert (plain.backups / result["backup"]).read_bytes() == BINARY
    first, second = await undo_twice(plain, "fs.delete_file", args, result)
    assert (first["action"], second["action"]) == ("restored", "unchanged")
    assert content_of(plain.root) == before


@pytest.mark.anyio
async def test_delete_missing_file_or_directory_fails(plain: Any) -> None:
    (plain.root / "d").mkdir()
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.delete_file", {"path": "nope.txt"})
    assert caught.value.code == "not_found"
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.delete_file", {"path": "d"})
    assert caught.value.code == "is_a_directory"
    assert (plain.root / "d").is_dir()


@pytest.mark.anyio
async def test_delete_across_devices_copies_then_unlinks(
    plain: Any, undo_twice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = plain.root / "far.bin"
    target.write_bytes(BINARY)
    target.chmod(0o604)
    before = content_of(plain.root)
    real_rename = os.rename

    def no_cross_device(
        src: Any, dst: Any, *, src_dir_fd: Any = None, dst_dir_fd: Any = None
    ) -> None:
        if src == "far.bin" and dst != "far.bin":
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
        real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "rename", no_cross_device)
    result = await plain.fs.call("fs.delete_file", {"path": "far.bin"})
    monkeypatch.undo()
    assert not target.exists()
    saved = plain.backups / result["backup"]
    assert saved.read_bytes() == BINARY
    assert stat.S_IMODE(saved.stat().st_mode) == 0o604
    await undo_twice(plain, "fs.delete_file", {"path": "far.bin"}, result)
    assert content_of(plain.root) == before


@pytest.mark.anyio
async def test_restore_reads_a_backup_its_owner_may_not_read(
    plain: Any, undo_twice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deleted 0o200 file keeps its bits in the backup; restore still reads it."""
    target = plain.root / "wo.txt"
    target.write_text("write only")
    target.chmod(0o200)
    args = {"path": "wo.txt"}
    result = await plain.fs.call("fs.delete_file", args)
    real_open = os.open
    refused_once: list[bool] = []

    def like_a_non_root_user(
        path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None
    ) -> int:
        if path == result["backup"] and not refused_once:
            refused_once.append(True)
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", like_a_non_root_user)
    first, _ = await undo_twice(plain, "fs.delete_file", args, result)
    assert refused_once
    assert first["action"] == "restored"
    assert target.read_text() == "write only"
    assert stat.S_IMODE(target.stat().st_mode) == 0o200
    assert stat.S_IMODE((plain.backups / result["backup"]).stat().st_mode) == 0o200


@pytest.mark.anyio
async def test_restore_with_missing_backup_fails(plain: Any) -> None:
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.restore_file", {"path": "x.txt", "backup": "a" * 32 + "-x.txt"})
    assert caught.value.code == "backup_missing"
    assert not (plain.root / "x.txt").exists()


# -- make_dir / remove_dir ------------------------------------------------------------


@pytest.mark.anyio
async def test_make_dir_with_parents_then_remove(plain: Any, undo_twice: Any) -> None:
    (plain.root / "a").mkdir()
    before = content_of(plain.root)
    args = {"path": "a/b/c/d"}
    result = await plain.fs.call("fs.make_dir", args)
    assert result == {"path": "a/b/c/d", "created": ["a/b", "a/b/c", "a/b/c/d"]}
    assert (plain.root / "a/b/c/d").is_dir()
    first, second = await undo_twice(plain, "fs.make_dir", args, result)
    assert first == {"removed": ["a/b/c/d", "a/b/c", "a/b"], "absent": []}
    assert second == {"removed": [], "absent": ["a/b/c/d", "a/b/c", "a/b"]}
    assert content_of(plain.root) == before


@pytest.mark.anyio
async def test_make_existing_dir_creates_nothing_and_undo_is_a_no_op(
    plain: Any, undo_twice: Any
) -> None:
    (plain.root / "here").mkdir()
    args = {"path": "here", "parents": False}
    result = await plain.fs.call("fs.make_dir", args)
    assert result["created"] == []
    first, second = await undo_twice(plain, "fs.make_dir", args, result)
    assert first == second == {"removed": [], "absent": []}
    assert (plain.root / "here").is_dir()


@pytest.mark.anyio
async def test_make_dir_without_parents_needs_the_parent(plain: Any) -> None:
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.make_dir", {"path": "x/y", "parents": False})
    assert caught.value.code == "not_found"
    assert os.listdir(plain.root) == []
    (plain.root / "file").write_text("")
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.make_dir", {"path": "file/sub"})
    assert caught.value.code == "not_a_directory"


@pytest.mark.anyio
async def test_make_dir_failing_midway_removes_what_it_made(
    plain: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_mkdir = os.mkdir

    def fail_on_c(path: Any, mode: int = 0o777, *, dir_fd: Any = None) -> None:
        if path == "c":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", fail_on_c)
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.make_dir", {"path": "a/b/c"})
    assert caught.value.code == "no_space"
    assert os.listdir(plain.root) == []


@pytest.mark.anyio
async def test_remove_dir_refuses_non_empty_and_removes_nothing(plain: Any, manifests: Any) -> None:
    made = await plain.fs.call("fs.make_dir", {"path": "a/b/c"})
    await plain.fs.call("fs.write_file", {"path": "a/b/kept.txt", "content": "stay"})
    before = plain.snapshot(strict=True)
    comp_args = {"paths": made["created"]}
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.remove_dir", comp_args)
    assert caught.value.code == "not_empty"
    assert "1 entry" in str(caught.value)
    assert "'a/b'" in str(caught.value)
    assert plain.snapshot(strict=True) == before  # not even the empty a/b/c went
    (plain.root / "a/b/kept.txt").unlink()
    result = await plain.fs.call("fs.remove_dir", comp_args)
    assert result["removed"] == ["a/b/c", "a/b", "a"]


@pytest.mark.anyio
async def test_remove_dir_rejects_files_and_counts_entries(plain: Any) -> None:
    (plain.root / "full").mkdir()
    for i in range(7):
        (plain.root / "full" / f"f{i}").write_text("")
    (plain.root / "f.txt").write_text("")
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.remove_dir", {"paths": ["full"]})
    assert caught.value.code == "not_empty"
    assert "7 entries" in str(caught.value)
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.remove_dir", {"paths": ["f.txt"]})
    assert caught.value.code == "not_a_directory"
    assert (plain.root / "f.txt").exists()


# -- move_file / unmove_file --------------------------------------------------------------


@pytest.mark.anyio
async def test_move_then_unmove(plain: Any, undo_twice: Any) -> None:
    (plain.root / "from").mkdir()
    (plain.root / "to").mkdir()
    src = plain.root / "from" / "a.bin"
    src.write_bytes(BINARY)
    src.chmod(0o751)
    before = content_of(plain.root)
    args = {"source": "from/a.bin", "destination": "to/b.bin"}
    result = await plain.fs.call("fs.move_file", args)
    assert result == {
        "source": "from/a.bin",
        "destination": "to/b.bin",
        "replaced_backup": None,
        "sha256": hashlib.sha256(BINARY).hexdigest(),
        "mode": 0o751,
    }
    assert not src.exists()
    assert (plain.root / "to" / "b.bin").read_bytes() == BINARY
    first, second = await undo_twice(plain, "fs.move_file", args, result)
    assert (first["action"], second["action"]) == ("moved_back", "already_undone")
    assert content_of(plain.root) == before


@pytest.mark.anyio
async def test_move_with_overwrite_then_unmove(plain: Any, undo_twice: Any) -> None:
    src = plain.root / "new.bin"
    dst = plain.root / "old.txt"
    src.write_bytes(BINARY)
    src.chmod(0o751)
    dst.write_text("the file that gets replaced")
    dst.chmod(0o640)
    before = content_of(plain.root)
    args = {"source": "new.bin", "destination": "old.txt", "overwrite": True}
    result = await plain.fs.call("fs.move_file", args)
    assert result["replaced_backup"] is not None
    assert dst.read_bytes() == BINARY
    assert stat.S_IMODE(dst.stat().st_mode) == 0o751
    assert (plain.backups / result["replaced_backup"]).read_text() == "the file that gets replaced"
    first, second = await undo_twice(plain, "fs.move_file", args, result)
    assert (first["action"], second["action"]) == ("moved_back_and_restored", "already_undone")
    assert content_of(plain.root) == before


@pytest.mark.anyio
async def test_move_onto_existing_without_overwrite_fails(plain: Any) -> None:
    (plain.root / "a").write_text("a")
    (plain.root / "b").write_text("b")
    before = plain.snapshot(strict=True)
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.move_file", {"source": "a", "destination": "b"})
    assert caught.value.code == "exists"
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.move_file", {"source": "a", "destination": "./a"})
    assert caught.value.code == "same_path"
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.move_file", {"source": "a", "destination": "nodir/a"})
    assert caught.value.code == "not_found"
    os.link(plain.root / "a", plain.root / "hard")
    before = plain.snapshot(strict=True)
    with pytest.raises(ToolError) as caught:
        await plain.fs.call(
            "fs.move_file", {"source": "a", "destination": "hard", "overwrite": True}
        )
    assert caught.value.code == "same_path"
    assert plain.snapshot(strict=True) == before


@pytest.mark.anyio
async def test_unmove_finishes_an_interrupted_undo(plain: Any, undo_twice: Any) -> None:
    """Moved back but the replaced file not yet restored: unmove restores it."""
    (plain.root / "src").write_text("moved")
    (plain.root / "dst").write_text("replaced")
    before = content_of(plain.root)
    args = {"source": "src", "destination": "dst", "overwrite": True}
    result = await plain.fs.call("fs.move_file", args)
    (plain.root / "dst").rename(plain.root / "src")  # the first half of an undo
    first, second = await undo_twice(plain, "fs.move_file", args, result)
    assert (first["action"], second["action"]) == ("restored_replaced", "already_undone")
    assert content_of(plain.root) == before


@pytest.mark.anyio
async def test_unmove_conflicts_touch_nothing(plain: Any) -> None:
    (plain.root / "s").write_text("s")
    (plain.root / "d").write_text("d")
    before = plain.snapshot(strict=True)
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.unmove_file", {"source": "s", "destination": "d"})
    assert caught.value.code == "conflict"
    assert "'s'" in str(caught.value)
    assert "'d'" in str(caught.value)
    with pytest.raises(ToolError) as caught:
        await plain.fs.call("fs.unmove_file", {"source": "gone1", "destination": "gone2"})
    assert caught.value.code == "not_found"
    assert plain.snapshot(strict=True) == before


@pytest.mark.anyio
async def test_unmove_conflict_when_destination_differs_from_backup(plain: Any) -> None:
    (plain.root / "s").write_text("moved")
    (plain.root / "d").write_text("replaced")
    args = {"source": "s", "destination": "d", "overwrite": True}
    result = await plain.fs.call("fs.move_file", args)
    (plain.root / "s").write_text("someone made a new s")
    before = plain.snapshot(strict=True)
    with pytest.raises(ToolError) as caught:
        await plain.fs.call(
            "fs.unmove_file",
            {"source": "s", "destination": "d", "replaced_backup": result["replaced_backup"]},
        )
    assert caught.value.code == "conflict"
    assert plain.snapshot(strict=True) == before


@pytest.mark.anyio
async def test_move_across_devices_copies(
    plain: Any, undo_twice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (plain.root / "a").mkdir()
    src = plain.root / "a" / "f"
    src.write_bytes(BINARY)
    src.chmod(0o751)
    before = content_of(plain.root)

    def always_exdev(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "rename", always_exdev)
    args = {"source": "a/f", "destination": "g"}
    result = await plain.fs.call("fs.move_file", args)
    assert (plain.root / "g").read_bytes() == BINARY
    assert stat.S_IMODE((plain.root / "g").stat().st_mode) == 0o751
    assert not src.exists()
    await undo_twice(plain, "fs.move_file", args, result)
    assert content_of(plain.root) == before


@pytest.mark.anyio
async def test_move_copy_that_cannot_remove_the_source_is_uncertain(
    plain: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (plain.root / "f").write_text("x")

    def always_exdev(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    real_unlink = os.unlink

    def no_unlink_of_f(path: Any, *, dir_fd: Any = None) -> None:
        if path == "f":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "rename", always_exdev)
    monkeypatch.setattr(os, "unlink", no_unlink_of_f)
    with pytest.raises(EffectUncertainError):
        await plain.fs.call("fs.move_file", {"source": "f", "destination": "g"})


# -- a whole saga ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_run_undone_newest_first_restores_the_tree(plain: Any, undo_twice: Any) -> None:
    (plain.root / "keep.txt").write_text("keep")
    (plain.root / "keep.txt").chmod(0o600)
    before = content_of(plain.root)
    steps: list[tuple[str, dict[str, Any]]] = [
        ("fs.make_dir", {"path": "proj/src"}),
        ("fs.write_file", {"path": "proj/src/main.py", "content": "print('hi')\n"}),
        ("fs.write_file", {"path": "proj/src/main.py", "content": "print('bye')\n"}),
        ("fs.move_file", {"source": "keep.txt", "destination": "proj/keep.txt"}),
        ("fs.write_file", {"path": "proj/keep.txt", "content": "changed"}),
        (
            "fs.move_file",
            {"source": "proj/src/main.py", "destination": "proj/keep.txt", "overwrite": True},
        ),
        ("fs.delete_file", {"path": "proj/keep.txt"}),
    ]
    done = []
    for tool, args in steps:
        done.append((tool, args, await plain.fs.call(tool, args)))
    for tool, args, result in reversed(done):
        await undo_twice(plain, tool, args, result)
    assert content_of(plain.root) == before


# -- backup directory outside the root ------------------------------------------------------


@pytest.mark.anyio
async def test_backup_dir_outside_root(tmp_path: Path, undo_twice: Any) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "f.txt").write_text("first")
    fs = FsConnector(root, backup_dir=tmp_path / "var" / "backups")

    class W:  # the shape undo_twice needs
        def __init__(self) -> None:
            self.fs = fs

        def snapshot(self, *, strict: bool = False) -> Any:
            return content_of(tmp_path), [p.stat().st_mtime_ns for p in sorted(tmp_path.rglob("*"))]

    args = {"path": "f.txt", "content": "second"}
    result = await fs.call("fs.write_file", args)
    assert stat.S_IMODE((tmp_path / "var" / "backups").stat().st_mode) == 0o700
    assert (tmp_path / "var" / "backups" / result["backup"]).read_text() == "first"
    assert os.listdir(root) == ["f.txt"]
    await undo_twice(W(), "fs.write_file", args, result)
    assert (root / "f.txt").read_text() == "first"


@pytest.mark.anyio
async def test_new_content_never_inherits_set_id_bits_but_restore_brings_them_back(
    plain: Any, undo_twice: Any
) -> None:
    tool = plain.root / "tool"
    tool.write_bytes(b"#!/bin/sh\necho original\n")
    tool.chmod(0o6755)
    args = {"path": "tool", "content": "#!/bin/sh\necho replaced\n"}
    result = await plain.fs.call("fs.write_file", args)
    assert result["mode"] == 0o755
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755
    await undo_twice(plain, "fs.write_file", args, result)
    assert stat.S_IMODE(tool.stat().st_mode) == 0o6755
    assert tool.read_bytes() == b"#!/bin/sh\necho original\n"
