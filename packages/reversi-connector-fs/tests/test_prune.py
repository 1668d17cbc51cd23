"""Retention with fs's backups: ``reversi prune --backups-cmd "reversi-connectors
prune-backups --root R"`` on both journal stores. A backup a kept step names, or one an
in-flight call may have made (its step pending), is never removed; a backup named only
by a pruned run, or by nothing, goes."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from reversi_connector_fs import FsConnector
from reversi_core import Run, compensator_for, executor_for, registry_for
from reversi_core.journal import Journal, open_journal


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "data")
        return
    try:
        from reversi_core.testing.postgres import PostgresUnavailable, fresh_schema, shared_server
    except ImportError as exc:
        pytest.fail(f"the PostgreSQL half needs psycopg: {exc}", pytrace=False)
    try:
        server = shared_server()
    except PostgresUnavailable as exc:
        pytest.fail(f"no PostgreSQL server: {exc}", pytrace=False)
    with fresh_schema(server, prefix="fsprune") as url:
        yield url


def script(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"console script {name} is not installed (pip install -e packages/reversi-core)"
    return path


def _backups(root: Path) -> set[str]:
    return set(os.listdir(root / ".reversi-backups"))


def _reversi(location: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REVERSI_DATA", "REVERSI_JOURNAL")}
    env["REVERSI_JOURNAL"] = location  # a URL may carry a password: never on the command line
    return subprocess.run(
        [script("reversi"), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


async def _write(run: Run, path: str, text: str) -> dict[str, Any]:
    _step, result = await run.call("fs.write_file", {"path": path, "content": text})
    assert result is not None
    return result


def _world(journal: Journal, root: Path) -> dict[str, str]:
    """Backups: one named by nothing, one by a run rolled back, one by an open run, one
    made by a call whose step is still pending (named nowhere yet)."""
    fs = FsConnector(root)
    registry = registry_for([fs])
    for name in ("orphan", "a", "b", "c"):
        (root / f"{name}.txt").write_text("old " + name)

    async def go() -> dict[str, str]:
        await fs.call("fs.write_file", {"path": "orphan.txt", "content": "new"})  # not journaled
        orphan = next(iter(_backups(root)))
        await anyio.sleep(1.5)  # past the prune's clock margin (retention.CLOCK_MARGIN)
        done = Run.start(
            journal, registry, executor=executor_for([fs]), scope=["fs:write"], run_id="done"
        )
        a = (await _write(done, "a.txt", "new a"))["backup"]
        report = await done.rollback(compensate=compensator_for([fs]))
        assert report.complete
        await anyio.sleep(1.5)  # the in-flight step below starts past the margin after a's backup
        live = Run.start(
            journal, registry, executor=executor_for([fs]), scope=["fs:write"], run_id="live"
        )
        b = (await _write(live, "b.txt", "new b"))["backup"]
        journal.create_run("inflight", ["fs:write"], None)
        journal.begin_step(
            "inflight",
            "fs.write_file",
            "compensable",
            "fs:write",
            {"path": "c.txt"},
            None,
            None,
            [],
        )
        before = _backups(root)
        await fs.call("fs.write_file", {"path": "c.txt", "content": "new c"})  # its call, in flight
        (c,) = _backups(root) - before
        return {"orphan": orphan, "a": a, "b": b, "c": c}

    return anyio.run(go)


def test_prune_removes_pruned_runs_and_unneeded_backups_only(location: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with open_journal(location) as journal:
        names = _world(journal, root)
    assert _backups(root) == set(names.values())
    backups_cmd = shlex.join([script("reversi-connectors"), "prune-backups", "--root", str(root)])
    argv = ["prune", "--older-than", "0s", "--backups-cmd", backups_cmd, "--json"]

    dry = _reversi(location, *argv, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert [r["run"] for r in plan["remove"]] == ["done"]
    assert sorted(plan["backups"]["fs"]) == sorted([names["orphan"], names["a"]])
    kept = {k["run"]: k["why"] for k in plan["kept"]}
    assert kept["live"] == "it is open"
    assert _backups(root) == set(names.values())  # a dry run removes nothing
    with open_journal(location) as journal:
        assert [r.id for r in journal.list_runs()] == ["done", "live", "inflight"]

    real = _reversi(location, *argv)
    assert real.returncode == 0, real.stderr
    assert json.loads(real.stdout)["removed"] == ["done"]
    # the open run's backup and the in-flight call's (named nowhere yet) stay
    assert _backups(root) == {names["b"], names["c"]}
    with open_journal(location) as journal:
        assert [r.id for r in journal.list_runs()] == ["live", "inflight"]
    verify = _reversi(location, "verify", "--all")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "2 runs, 0 tampered" in verify.stdout
    again = _reversi(location, "verify", "done")
    assert again.returncode == 2  # a pruned run is gone entirely
    assert "no run 'done'" in again.stderr


def _hand(location: str, statement: str, params: list[Any]) -> None:
    """Run one write on the journal's database, outside the journal (a killed process)."""
    if location.startswith(("postgresql:", "postgres:")):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(statement.encode(), params)
        return
    import sqlite3

    conn = sqlite3.connect(Path(location) / "journal.sqlite3")
    try:
        with conn:
            conn.execute(statement.replace("%s", "?"), params)
    finally:
        conn.close()


def test_prune_keeps_the_backup_of_a_resolved_step_whose_compensation_failed(
    location: str, tmp_path: Path
) -> None:
    """A write left pending by a killed process made a backup no record names; recovered
    to uncertain, resolved as applied, its compensation cannot be computed (no result) and
    fails. The run stays (outstanding), and so must the backup, though no step is pending
    or unresolved any more."""
    from reversi_core.journal._owner import process_owner

    root = tmp_path / "root"
    root.mkdir()
    (root / "w.txt").write_text("old w")
    fs = FsConnector(root)
    with open_journal(location) as journal:
        journal.create_run("killed", ["fs:write"], None)
        step = journal.begin_step(
            "killed", "fs.write_file", "compensable", "fs:write", {"path": "w.txt"}, None, None, []
        )
    anyio.run(fs.call, "fs.write_file", {"path": "w.txt", "content": "new w"})
    (backup,) = _backups(root)
    dead = process_owner().rsplit(":", 1)[0] + ":0"  # this host, another start: gone
    _hand(location, "UPDATE steps SET owner = %s WHERE run_id = 'killed'", [dead])
    anyio.run(anyio.sleep, 1.5)  # the prune's cut-off would be past the backup otherwise
    with open_journal(location) as journal:  # a writing open recovers the step
        assert journal.get_step("killed", step.seq).state.value == "uncertain"
    resolved = _reversi(location, "resolve", "killed", str(step.seq), "--applied")
    assert resolved.returncode == 0, resolved.stderr
    compensator = shlex.join([script("reversi-connectors"), "compensate", "--root", str(root)])
    rollback = _reversi(location, "rollback", "killed", "--compensator-cmd", compensator)
    assert rollback.returncode != 0, rollback.stdout
    with open_journal(location) as journal:
        assert journal.get_run("killed").status.value == "rollback_incomplete"
        assert journal.get_step("killed", step.seq).rollback_state.value == "compensation_failed"

    backups_cmd = shlex.join([script("reversi-connectors"), "prune-backups", "--root", str(root)])
    real = _reversi(location, "prune", "--older-than", "0s", "--backups-cmd", backups_cmd, "--json")
    assert real.returncode == 0, real.stderr
    answer = json.loads(real.stdout)
    assert answer["removed"] == []
    assert answer["backups"] == {"fs": []}
    assert answer["backups_before"] < step.started_at
    assert _backups(root) == {backup}  # the one copy of the old w.txt stays
