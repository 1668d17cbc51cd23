"""The public test helpers of reversi_connector_fs.testing, and its certification opt-in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reversi_connector_fs import FsConnector
from reversi_connector_fs.testing import (
    NOT_APPLICABLE,
    SEED_FILES,
    FsBackend,
    certification_fixture,
    fs_backend,
    undo_fault,
)
from reversi_core.errors import ToolError
from reversi_core.testing import CHECKS, load_fixture


def test_the_fixture_is_found_through_the_connector_class() -> None:
    fixture = load_fixture(FsConnector)
    assert set(fixture.examples) == {m.name for m in FsConnector.manifests()}
    assert set(fixture.not_applicable) == set(NOT_APPLICABLE) <= set(CHECKS)
    assert fixture.credential is None
    assert {d.later for d in fixture.dependencies} == {
        m.name for m in FsConnector.manifests() if m.requires
    }


def test_seed_and_fingerprint(tmp_path: Path) -> None:
    with fs_backend(tmp_path) as backend:
        assert backend.fingerprint() == {"tree": {}, "backups": []}
        backend.seed()
        seeded = backend.fingerprint()
        assert set(SEED_FILES) <= set(seeded["tree"])
        assert seeded["tree"]["empty"]["type"] == "dir"
        assert certification_fixture().fingerprint(backend) == seeded
        (backend.root / "readme.txt").write_text("changed\n")
        changed = backend.fingerprint()
        assert changed["tree"]["readme.txt"] != seeded["tree"]["readme.txt"]


def test_outside_sees_the_sentinel_tree_beside_the_root_and_nothing_in_it(tmp_path: Path) -> None:
    with fs_backend(tmp_path) as backend:
        backend.seed()
        around = backend.outside()
        assert {"beside/sentinel.txt", "beside/keep/inner.txt", "beside/empty", "aside"} <= set(
            around
        )
        assert not any(path.startswith("root") for path in around)
        assert certification_fixture().outside is not None
        (backend.root / "readme.txt").write_text("changed inside\n")
        (backend.root / "new.txt").write_text("new inside\n")
        assert backend.outside() == around
        (backend.beside / "sentinel.txt").write_text("changed outside\n")
        assert backend.outside()["beside/sentinel.txt"] != around["beside/sentinel.txt"]
        (tmp_path / "escaped.txt").write_text("next to the root\n")
        assert "escaped.txt" in backend.outside()


@pytest.mark.anyio
async def test_every_writing_tool_has_failures_leaving_the_root_both_ways(tmp_path: Path) -> None:
    """For each writing tool: a '..' path and an absolute one, aimed at the sentinel tree."""
    from types import SimpleNamespace

    from reversi_core.manifest import Effect

    fixture = certification_fixture()
    writing = {m.name for m in FsConnector.manifests() if m.effect is not Effect.READ_ONLY}
    with fs_backend(tmp_path) as backend:
        for tool in sorted(writing):
            ways = set()
            for failure in fixture.failures[tool]:
                given = failure.args
                args = await given(SimpleNamespace(handle=backend)) if callable(given) else given
                paths = [
                    str(p)
                    for v in args.values()
                    for p in (v if isinstance(v, list) else [v])
                    if isinstance(p, str)
                ]
                leaving = {
                    way
                    for way, prefix in (("..", "../beside/"), ("absolute", f"{backend.beside}/"))
                    if any(p.startswith(prefix) for p in paths)
                }
                if leaving:
                    assert failure.code == "path_refused", (tool, args)
                ways |= leaving
            assert ways == {"..", "absolute"}, tool


async def _undo_fails_then_works(
    backend: FsBackend, connector: FsConnector, tool: str, args: dict[str, Any], code: str
) -> None:
    before = backend.fingerprint()
    with undo_fault(backend, tool, args):
        with pytest.raises(ToolError) as caught:
            await connector.call(tool, args)
        assert caught.value.code == code
    assert backend.fingerprint() == before, "the fault must leave nothing behind"
    await connector.call(tool, args)


@pytest.mark.anyio
async def test_each_undo_fault_makes_its_undo_fail_until_it_ends(tmp_path: Path) -> None:
    with fs_backend(tmp_path) as backend:
        backend.seed()
        fs = backend.connector()
        replaced = await fs.call("fs.write_file", {"path": "readme.txt", "content": "new\n"})
        await _undo_fails_then_works(
            backend,
            fs,
            "fs.restore_file",
            {"path": "readme.txt", "backup": replaced["backup"]},
            "backup_missing",
        )
        await fs.call("fs.write_file", {"path": "fresh.txt", "content": "x"})
        await _undo_fails_then_works(
            backend, fs, "fs.restore_file", {"path": "fresh.txt", "backup": None}, "is_a_directory"
        )
        made = await fs.call("fs.make_dir", {"path": "a/b"})
        await _undo_fails_then_works(
            backend, fs, "fs.remove_dir", {"paths": made["created"]}, "not_empty"
        )
        await fs.call("fs.move_file", {"source": "notes/todo.txt", "destination": "todo.txt"})
        await _undo_fails_then_works(
            backend,
            fs,
            "fs.unmove_file",
            {"source": "notes/todo.txt", "destination": "todo.txt"},
            "conflict",
        )
        with pytest.raises(ValueError, match="no fault"), undo_fault(backend, "fs.read_file", {}):
            pass
