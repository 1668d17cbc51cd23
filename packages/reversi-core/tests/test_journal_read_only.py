"""A read-only open of the journal (``open_journal(..., read_only=True)``): what
``reversi runs``, ``reversi show`` and ``reversi rollback --dry-run`` use. It migrates
nothing, recovers nothing and writes nothing, on both stores; a journal of an older
schema is refused with the commands that migrate it (docs/cli.md).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from _stores import is_postgres, sql, stored_bytes

from reversi_core import JournalError, JournalVersionError, RunStatus, StepState
from reversi_core.cli.reversi import main
from reversi_core.journal import open_journal
from reversi_core.journal._owner import process_owner
from reversi_core.journal.sqlite import SCHEMA_VERSION

# this process's host and pid with another start time: a process that is gone, on both
# stores (PostgreSQL judges an owner of this host by its pid and start time first)
DEAD = process_owner().rsplit(":", 1)[0] + ":0"


def content(location: str) -> object:
    """What the journal holds: every row of the SQLite file (read without writing), or of
    the PostgreSQL schema's tables, and the bytes of the SQLite database file itself."""
    if is_postgres(location):
        return stored_bytes(location)
    path = Path(location) / "journal.sqlite3"
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return (list(conn.iterdump()), path.read_bytes())
    finally:
        conn.close()


def q(location: str, statement: str) -> str:
    """``statement`` with its placeholders for the store (``?`` for SQLite, ``%s`` for PostgreSQL)."""
    return statement if is_postgres(location) else statement.replace("%s", "?")


def left_by_a_dead_process(location: str) -> None:
    """run_a with a pending step and run_b in a rollback, both of a process that is gone."""
    with open_journal(location) as journal:
        journal.create_run("run_a", ["x:y"], None)
        journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        journal.create_run("run_b", ["x:y"], None)
    sql(location, q(location, "UPDATE steps SET owner = %s WHERE run_id = 'run_a'"), [DEAD])
    sql(
        location,
        q(
            location,
            "UPDATE runs SET status = 'rolling_back', rollback_owner = %s WHERE id = 'run_b'",
        ),
        [DEAD],
    )


def make_older(location: str) -> None:
    """Take the journal back to schema version 1: without what versions 2 (``steps.overwrite``)
    and 3 (the ``approvals`` table, ``steps.resolved_by``) added."""
    sql(location, "DROP TABLE approvals")
    sql(location, "ALTER TABLE steps DROP COLUMN resolved_by")
    sql(location, "ALTER TABLE steps DROP COLUMN overwrite")
    if is_postgres(location):
        sql(location, "DELETE FROM reversi_migrations WHERE version >= 2")
    else:
        sql(location, "PRAGMA user_version = 1")


@pytest.mark.req("JNL-1")
def test_a_read_only_open_recovers_nothing_and_writes_nothing(location: str) -> None:
    left_by_a_dead_process(location)
    before = content(location)
    with open_journal(location, read_only=True) as journal:
        assert journal.get_run("run_b").status is RunStatus.ROLLING_BACK  # not released
        assert journal.get_step("run_a", 1).state is StepState.PENDING  # not recovered
        assert journal.list_events("run_a") == []
        with pytest.raises(JournalError):
            journal.create_run("run_c", [], None)
        with pytest.raises(JournalError):
            journal.add_event("run_a", 1, "resolved", {})
    assert content(location) == before
    # an open that writes does recover them: there was something to recover
    with open_journal(location, create=False) as journal:
        assert journal.get_step("run_a", 1).state is StepState.UNCERTAIN
        assert journal.get_run("run_b").status is RunStatus.ROLLBACK_INCOMPLETE


@pytest.mark.req("JNL-3")
def test_a_read_only_open_refuses_an_older_journal_naming_the_commands_that_migrate(
    location: str,
) -> None:
    open_journal(location).close()
    make_older(location)
    before = content(location)
    with pytest.raises(JournalVersionError) as info:
        open_journal(location, read_only=True)
    message = str(info.value)
    assert f"schema version 1, older than the {SCHEMA_VERSION} of this reversi-core" in message
    assert "does not migrate it" in message
    assert "(reversi-gateway, reversi rollback, reversi resolve)" in message
    assert content(location) == before  # not migrated
    open_journal(location, create=False).close()  # an open that writes migrates it
    with open_journal(location, read_only=True) as journal:
        assert journal.list_runs() == []


def test_a_read_only_open_never_creates_a_journal(location: str) -> None:
    with pytest.raises(JournalError, match=r"does not exist|no Reversi journal"):
        open_journal(location, read_only=True, create=True)
    if not is_postgres(location):
        assert not Path(location).exists()


@pytest.mark.req("RB-15")
def test_runs_show_and_a_dry_run_read_the_journal_as_it_is(
    location: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    left_by_a_dead_process(location)
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv("REVERSI_JOURNAL", location)  # never on the command line (a URL)
    before = content(location)
    assert main(["runs", "--json"]) == 0
    statuses = {r["id"]: r["status"] for r in json.loads(capsys.readouterr().out)}
    assert statuses == {"run_a": "open", "run_b": "rolling_back"}
    assert main(["show", "run_a", "--json"]) == 0
    assert [s["state"] for s in json.loads(capsys.readouterr().out)["steps"]] == ["pending"]
    assert main(["rollback", "run_a", "--dry-run", "--json"]) == 1  # a step still pending
    plan = json.loads(capsys.readouterr().out)
    assert plan["steps"][0]["action"] == "uncertain"
    assert content(location) == before


@pytest.mark.req("JNL-3")
@pytest.mark.parametrize(
    "argv", [["runs"], ["show", "run_a"], ["rollback", "run_a", "--dry-run"]], ids=" ".join
)
def test_reading_commands_refuse_an_older_journal_and_name_the_commands_that_migrate(
    location: str,
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with open_journal(location) as journal:
        journal.create_run("run_a", ["x:y"], None)
    make_older(location)
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv("REVERSI_JOURNAL", location)
    before = content(location)
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "older than the" in err
    assert "a command that writes to the journal migrates it" in err
    assert content(location) == before
