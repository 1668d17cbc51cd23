"""Manifests, registry, dependency declarations, discovery, configuration and listing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reversi_connector_fs import FsConnector
from reversi_connector_fs._paths import Tree
from reversi_core.connector import (
    CompensationCall,
    available_connectors,
    compensator_for,
    enabled_from_env,
    load_connector_class,
    registry_for,
)
from reversi_core.errors import ConfigurationError, ToolError
from reversi_core.manifest import Effect, evaluate_argument_map, match_holds, resolve_source

TABLE = {
    # tool: (effect, permission, compensation tool)
    "fs.read_file": (Effect.READ_ONLY, "fs:read", None),
    "fs.list_dir": (Effect.READ_ONLY, "fs:read", None),
    "fs.write_file": (Effect.REVERSIBLE, "fs:write", "fs.restore_file"),
    "fs.delete_file": (Effect.REVERSIBLE, "fs:write", "fs.restore_file"),
    "fs.make_dir": (Effect.REVERSIBLE, "fs:write", "fs.remove_dir"),
    "fs.move_file": (Effect.REVERSIBLE, "fs:write", "fs.unmove_file"),
    "fs.restore_file": (Effect.IDEMPOTENT, "fs:write", None),
    "fs.remove_dir": (Effect.IDEMPOTENT, "fs:write", None),
    "fs.unmove_file": (Effect.IDEMPOTENT, "fs:write", None),
}


def test_manifests_form_a_valid_registry() -> None:
    registry = registry_for([FsConnector])
    assert registry.names == sorted(TABLE)
    for manifest in registry:
        effect, permission, compensation = TABLE[manifest.name]
        assert manifest.effect is effect
        assert manifest.permission == permission
        assert (manifest.compensation.tool if manifest.compensation else None) == compensation
        assert manifest.description, manifest.name
    assert registry.default_scope() == {"fs:read", "fs:write"}


def test_every_compensation_declares_the_paths_it_touches(manifests: dict[str, Any]) -> None:
    """The result's paths, which the connector normalised (docs/engine.md, "Rollback in parallel")."""
    touched = {n: m.compensation.resources for n, m in manifests.items() if m.compensation}
    assert touched == {
        "fs.write_file": ["fs:{result.path}"],
        "fs.delete_file": ["fs:{result.path}"],
        "fs.make_dir": ["fs:{result.created}"],
        "fs.move_file": ["fs:{result.source}", "fs:{result.destination}"],
    }


def test_input_schemas_are_closed_and_every_field_described(manifests: dict[str, Any]) -> None:
    for name, manifest in manifests.items():
        schema = manifest.input_schema
        assert schema["additionalProperties"] is False, name
        for prop, spec in schema["properties"].items():
            assert spec.get("description"), f"{name}.{prop} has no description"


def test_argument_maps_give_exactly_the_compensation_arguments(manifests: dict[str, Any]) -> None:
    for manifest in manifests.values():
        if manifest.compensation is None:
            continue
        target = manifests[manifest.compensation.tool].input_schema
        assert set(manifest.compensation.argument_map) == set(target["properties"]), manifest.name
    restore = manifests["fs.write_file"].compensation
    written = {"path": "a.txt", "backup": None, "sha256": "ab" * 32, "mode": 0o644}
    assert evaluate_argument_map(restore, {"path": "a.txt", "content": "x"}, written) == {
        "path": "a.txt",
        "backup": None,
        "left": "file",
        "sha256": "ab" * 32,
        "mode": 0o644,
    }
    deleted = manifests["fs.delete_file"].compensation
    assert evaluate_argument_map(deleted, {"path": "a.txt"}, {"backup": "b"}) == {
        "path": "a.txt",
        "backup": "b",
        "left": "absent",
        "sha256": None,
        "mode": None,
    }


def _edges(
    manifests: dict[str, Any], steps: list[tuple[str, dict[str, Any], dict[str, Any]]]
) -> set[tuple[int, int]]:
    """Which later step requires which earlier one, evaluated as the engine does: when the
    later call's intent is journaled, so before it has a result."""
    found = set()
    for later, (tool, args, _) in enumerate(steps):
        for requirement in manifests[tool].requires:
            for earlier, (etool, eargs, eresult) in enumerate(steps[:later]):
                if etool != requirement.tool:
                    continue
                if all(
                    match_holds(
                        m,
                        resolve_source(m.this, args, None),
                        resolve_source(m.earlier, eargs, eresult),
                    )
                    for m in requirement.match
                ):
                    found.add((later, earlier))
    return found


def test_requires_name_only_arguments_of_the_new_call(manifests: dict[str, Any]) -> None:
    """The engine evaluates ``this`` before the call runs: a result source would never match."""
    for manifest in manifests.values():
        for requirement in manifest.requires:
            for match in requirement.match:
                assert match.this.startswith("args."), (manifest.name, match)


@pytest.mark.anyio
async def test_requires_link_contents_to_the_directories_the_run_made(
    plain: Any, manifests: Any
) -> None:
    (plain.root / "existing").mkdir()
    calls = [
        ("fs.make_dir", {"path": "proj/src"}),  # 0: creates proj, proj/src
        ("fs.write_file", {"path": "./proj//src/main.py", "content": "x"}),  # 1 -> 0
        ("fs.write_file", {"path": "existing/other.txt", "content": "x"}),  # 2: no edge
        ("fs.make_dir", {"path": "proj/src/deep"}),  # 3 -> 0
        ("fs.write_file", {"path": "proj/src/main.py", "content": "y"}),  # 4 -> 0, 1
        (
            "fs.move_file",
            {"source": "proj/src/main.py", "destination": "existing/m.py"},
        ),  # 5 -> 0, 1, 4
        ("fs.delete_file", {"path": "existing/m.py"}),  # 6 -> 5
        ("fs.make_dir", {"path": "proj"}),  # 7: already there, created nothing, and no edge
    ]
    steps = [(tool, args, await plain.fs.call(tool, args)) for tool, args in calls]
    assert steps[7][2]["created"] == []
    assert _edges(manifests, steps) == {
        (1, 0),
        (3, 0),
        (4, 0),
        (4, 1),
        (5, 0),
        (5, 1),
        (5, 4),
        (6, 5),
    }


def test_within_is_strict_and_normalised(manifests: dict[str, Any]) -> None:
    (requirement,) = [r for r in manifests["fs.write_file"].requires if r.tool == "fs.make_dir"]
    (match,) = requirement.match
    assert match.relation == "within"
    made = ["a", "a/b"]
    assert match_holds(match, "a/b/f.txt", made)
    assert match_holds(match, "./a//f.txt", made)
    assert not match_holds(match, "a", ["a"])  # the directory itself is not inside itself
    assert not match_holds(match, "ab/f.txt", made)
    assert not match_holds(match, "c/f.txt", made)
    assert not match_holds(match, "a/f.txt", [])


def test_found_through_the_entry_point() -> None:
    assert available_connectors()["fs"] == "reversi_connector_fs:FsConnector"
    assert load_connector_class("fs") is FsConnector


def test_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    fs = FsConnector.from_env({}, token="for another connector")
    assert fs.root == os.path.realpath(tmp_path)
    assert fs.backup_dir == os.path.join(os.path.realpath(tmp_path), ".reversi-backups")
    assert not os.path.exists(fs.backup_dir)  # created lazily
    custom = FsConnector.from_env({}, root=str(tmp_path), backup_dir=tmp_path.parent / "elsewhere")
    assert custom.backup_dir == os.path.realpath(tmp_path.parent / "elsewhere")
    with pytest.raises(ConfigurationError, match="not an existing directory"):
        FsConnector.from_env({}, root=str(tmp_path / "missing"))
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigurationError):
        FsConnector.from_env({}, root=str(tmp_path / "file"))
    with pytest.raises(ConfigurationError, match="must not be the root"):
        FsConnector(tmp_path, backup_dir=tmp_path)
    with pytest.raises(ConfigurationError, match="must not be the root"):
        FsConnector(tmp_path, backup_dir=tmp_path.parent)
    with pytest.raises(ConfigurationError, match="not a directory"):
        FsConnector(tmp_path, backup_dir=tmp_path / "file")
    (enabled,) = enabled_from_env({}, root=str(tmp_path))
    assert isinstance(enabled, FsConnector)


@pytest.mark.anyio
async def test_list_dir_hides_backups_and_shows_links_unfollowed(world: Any) -> None:
    await world.fs.call("fs.write_file", {"path": "victim.txt", "content": "makes a backup"})
    assert len(os.listdir(world.backups)) == 2
    result = await world.fs.call("fs.list_dir", {})
    names = [e["name"] for e in result["entries"]]
    assert ".reversi-backups" not in names
    assert names == sorted(names)
    by_name = {e["name"]: e for e in result["entries"]}
    assert by_name["victim.txt"] == {
        "name": "victim.txt",
        "type": "file",
        "size": len("makes a backup"),
    }
    assert by_name["sub"] == {"name": "sub", "type": "dir", "size": None}
    assert by_name["link_out"]["type"] == "symlink"
    assert by_name["backup_alias"]["type"] == "symlink"
    assert result["truncated"] is False
    listed_sub = await world.fs.call("fs.list_dir", {"path": "./sub/"})
    assert listed_sub["path"] == "sub"
    with pytest.raises(ToolError) as caught:
        await world.fs.call("fs.list_dir", {"path": "victim.txt"})
    assert caught.value.code == "not_a_directory"


@pytest.mark.anyio
async def test_nested_backup_dir_is_hidden_and_reserved(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "var").mkdir(parents=True)
    (root / "f.txt").write_text("one")
    fs = FsConnector(root, backup_dir=root / "var" / "bk")
    await fs.call("fs.write_file", {"path": "f.txt", "content": "two"})
    assert len(os.listdir(root / "var" / "bk")) == 1
    for spelling in ["var", "./var/", "var//."]:
        assert (await fs.call("fs.list_dir", {"path": spelling}))["entries"] == []
    for path in ["var/bk", "./var/bk/x", "var//bk/."]:
        with pytest.raises(ToolError) as caught:
            await fs.call("fs.read_file", {"path": path})
        assert caught.value.code == "path_refused"


def test_backup_recognised_by_identity_under_any_name(tmp_path: Path) -> None:
    backup = tmp_path / "bk"
    backup.mkdir()
    tree = Tree(str(tmp_path / "root"), str(backup))
    ident = tree.backup_identity()
    assert tree.is_backup(("some", "where"), "OTHER-NAME", backup.stat(), ident)
    assert not tree.is_backup((), "bk", tmp_path.stat(), ident)


@pytest.mark.anyio
async def test_list_dir_truncates(plain: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import reversi_connector_fs.connector as fs_module

    monkeypatch.setattr(fs_module, "MAX_LIST_ENTRIES", 3)
    for name in "edcba":
        (plain.root / name).write_text("")
    result = await plain.fs.call("fs.list_dir", {"path": "."})
    assert [e["name"] for e in result["entries"]] == ["a", "b", "c"]
    assert result["truncated"] is True


@pytest.mark.anyio
async def test_in_process_compensator_undoes_a_write(plain: Any, manifests: dict[str, Any]) -> None:
    (plain.root / "n.txt").write_text("before")
    args = {"path": "n.txt", "content": "after"}
    result = await plain.fs.call("fs.write_file", args)
    compensation = manifests["fs.write_file"].compensation
    call = CompensationCall(
        tool=compensation.tool,
        args=evaluate_argument_map(compensation, args, result),
        idempotency_key="run-1:step-0",
        run_id="run-1",
        step=0,
    )
    compensate = compensator_for([plain.fs])
    assert (await compensate(call))["action"] == "restored"
    assert (await compensate(CompensationCall.from_json(call.to_json())))["action"] == "unchanged"
    assert (plain.root / "n.txt").read_text() == "before"


def test_declared_as_a_closed_world() -> None:
    """Its tools touch only the tree under the root (served as openWorldHint false)."""
    assert FsConnector.open_world is False
    assert FsConnector.credential_env is None
