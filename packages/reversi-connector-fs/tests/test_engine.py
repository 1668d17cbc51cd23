"""The fs connector driven by the real engine: journaled calls, edges, rollback."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.engine import WriteCall
from reversi_core.journal import RollbackState


def tree_of(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".reversi-backups"]
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            st = full.lstat()
            data = full.read_bytes() if stat.S_ISREG(st.st_mode) else None
            out[str(full.relative_to(root))] = (stat.S_IMODE(st.st_mode), data)
    return out


@pytest.mark.anyio
async def test_a_run_is_journaled_and_rolled_back(plain: Any, tmp_path: Path) -> None:
    (plain.root / "notes.txt").write_text("mine")
    (plain.root / "notes.txt").chmod(0o640)
    before = tree_of(plain.root)
    fs = plain.fs
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([fs]), executor=executor_for([fs]))
        made, _ = await run.call("fs.make_dir", {"path": "out/logs"})
        wrote, _ = await run.call("fs.write_file", {"path": "out/logs/a.log", "content": "1"})
        edited, _ = await run.call("fs.write_file", {"path": "notes.txt", "content": "agent"})
        moved, _ = await run.call(
            "fs.move_file", {"source": "notes.txt", "destination": "out/notes.txt"}
        )
        await run.call("fs.read_file", {"path": "out/notes.txt"})
        requires = {s.seq: s.requires for s in run.steps()}
        assert requires[wrote] == [made]
        assert sorted(requires[moved]) == [made, edited]
        report = await run.rollback(compensate=compensator_for([fs]))
        assert report.complete, report.to_json()
    assert tree_of(plain.root) == before


@pytest.mark.anyio
async def test_a_write_sent_before_its_directory_was_made_still_depends_on_it(
    plain: Any, tmp_path: Path
) -> None:
    """A client that does not wait for each answer (as over the gateway): the write into
    a directory begins while fs.make_dir, whose result says what it created, is still in
    flight. The edge is kept, so the directory waits when undoing the file fails."""
    fs = plain.fs
    execute = executor_for([fs])
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([fs]), executor=execute)
        made = run.begin_call("fs.make_dir", {"path": "work"})
        wrote = run.begin_call("fs.write_file", {"path": "work/f.txt", "content": "x"})
        other = run.begin_call("fs.write_file", {"path": "elsewhere.txt", "content": "y"})
        assert isinstance(made, WriteCall)
        assert isinstance(wrote, WriteCall)
        assert isinstance(other, WriteCall)
        assert journal.get_step(run.id, wrote.seq).requires == [made.seq]
        made.succeeded(await execute("fs.make_dir", made.args, made.context(None)))
        wrote.succeeded(await execute("fs.write_file", wrote.args, wrote.context(None)))
        other.succeeded(await execute("fs.write_file", other.args, other.context(None)))
        # once make_dir's result is known, a later write elsewhere does not depend on it
        later = await run.call("fs.write_file", {"path": "later.txt", "content": "z"})
        assert later.step is not None
        assert journal.get_step(run.id, later.step).requires == []
        (plain.root / "work" / "f.txt").unlink()
        (plain.root / "work" / "f.txt").mkdir()
        report = await run.rollback(compensate=compensator_for([fs]), parallel=4)
        states = {s.seq: s.rollback_state for s in report.steps}
        assert states[wrote.seq] is RollbackState.COMPENSATION_FAILED
        assert states[made.seq] is RollbackState.DEFERRED
        assert (plain.root / "work").is_dir()


@pytest.mark.anyio
async def test_a_directory_waits_for_what_was_put_in_it(plain: Any, tmp_path: Path) -> None:
    """When undoing the file fails, the directory holding it is deferred, not attempted."""
    fs = plain.fs
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([fs]), executor=executor_for([fs]))
        made, _ = await run.call("fs.make_dir", {"path": "work"})
        wrote, _ = await run.call("fs.write_file", {"path": "work/f.txt", "content": "x"})
        # someone replaces the file by a directory: the write's undo cannot delete it
        (plain.root / "work" / "f.txt").unlink()
        (plain.root / "work" / "f.txt").mkdir()
        report = await run.rollback(compensate=compensator_for([fs]))
        assert not report.complete
        states = {s.seq: s.rollback_state for s in report.steps}
        assert states[wrote] is RollbackState.COMPENSATION_FAILED
        assert states[made] is RollbackState.DEFERRED
        assert (plain.root / "work").is_dir()
        (plain.root / "work" / "f.txt").rmdir()
        again = await run.rollback(compensate=compensator_for([fs]))
        assert again.complete, again.to_json()
    assert os.listdir(plain.root) == []


@pytest.mark.anyio
async def test_what_each_compensation_touches_is_journaled_as_the_normalised_paths(
    plain: Any, tmp_path: Path
) -> None:
    fs = plain.fs
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([fs]), executor=executor_for([fs]))
        made, _ = await run.call("fs.make_dir", {"path": "./x//y"})
        again, _ = await run.call("fs.make_dir", {"path": "x"})  # made nothing
        wrote, _ = await run.call("fs.write_file", {"path": "x/./y/a.txt", "content": "1"})
        moved, _ = await run.call("fs.move_file", {"source": "x/y/a.txt", "destination": "b.txt"})
        gone, _ = await run.call("fs.delete_file", {"path": "./b.txt"})
        touched = {s.seq: (s.compensation or {}).get("resources") for s in run.steps()}
    assert touched == {
        made: ["fs:x", "fs:x/y"],
        again: [],
        wrote: ["fs:x/y/a.txt"],
        moved: ["fs:b.txt", "fs:x/y/a.txt"],
        gone: ["fs:b.txt"],
    }


@pytest.mark.anyio
async def test_a_long_run_is_undone_in_parallel_exactly(plain: Any, tmp_path: Path) -> None:
    """Rewrites of the same files, a directory and what was put in it, a move and a
    delete, undone eight at a time: the tree is byte for byte what it was, and each
    file's writes were undone newest first."""
    for i in range(8):
        (plain.root / f"f{i}.txt").write_text(f"original {i}")
    before = tree_of(plain.root)
    fs = plain.fs
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([fs]), executor=executor_for([fs]))
        writes: dict[str, list[int]] = {}
        for round_ in range(3):
            for i in range(8):
                seq, _ = await run.call(
                    "fs.write_file", {"path": f"f{i}.txt", "content": f"round {round_}"}
                )
                writes.setdefault(f"f{i}.txt", []).append(seq)
        await run.call("fs.make_dir", {"path": "d/e"})
        await run.call("fs.write_file", {"path": "d/e/g.txt", "content": "new"})
        await run.call("fs.move_file", {"source": "f1.txt", "destination": "d/f1.txt"})
        await run.call("fs.delete_file", {"path": "f2.txt"})
        await run.call("fs.write_file", {"path": "f2.txt", "content": "back again"})
        plan = run.plan_rollback(parallel=8)
        report = await run.rollback(compensate=compensator_for([fs]), parallel=8)
        assert report.complete, report.to_json()
    assert tree_of(plain.root) == before
    assert report.waves == plan.waves
    wave_of = {seq: n for n, wave in enumerate(report.waves) for seq in wave}
    assert len(report.waves) < sum(len(w) for w in report.waves)  # some ran side by side
    for path, seqs in writes.items():  # later writes of a file are undone first
        assert [wave_of[s] for s in seqs] == sorted((wave_of[s] for s in seqs), reverse=True), path
        assert len({wave_of[s] for s in seqs}) == len(seqs), path
