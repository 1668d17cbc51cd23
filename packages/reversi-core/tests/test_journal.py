"""The journal on both stores (opening, versions, what it keeps), and what only the
embedded SQLite journal has: its files, pragmas and bad inputs on disk. The PostgreSQL
journal's own (its URL, migrations, roles, connections) is in test_journal_postgres.py."""

from __future__ import annotations

import socket
import sqlite3
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from _stores import sql

from reversi_core import (
    ConfigurationError,
    Durability,
    JournalError,
    JournalVersionError,
    SQLiteJournal,
    StepState,
    UnknownRunError,
)
from reversi_core.journal import (
    JOURNAL_ENV,
    Journal,
    RunStatus,
    StepRecord,
    describe_location,
    open_journal,
    resolve_location,
)
from reversi_core.journal.sqlite import JOURNAL_FILENAME, SCHEMA_VERSION

TABLES = {"runs", "steps", "edges", "events"}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def _user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def test_journal_file_is_0600_in_a_0700_directory(data_dir: Path) -> None:
    journal = SQLiteJournal.open(data_dir)
    try:
        journal.create_run("run_a", ["x:y"], None)
        journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        assert _mode(data_dir) == 0o700
        assert _mode(data_dir / JOURNAL_FILENAME) == 0o600
        for side in data_dir.iterdir():  # -wal and -shm too
            assert _mode(side) == 0o600, side.name
    finally:
        journal.close()


def test_wal_mode_is_on(sqlite_journal: SQLiteJournal) -> None:
    journal = sqlite_journal
    assert journal._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.req("JNL-2")
def test_durability_power_sets_synchronous_full(data_dir: Path) -> None:
    journal = SQLiteJournal.open(data_dir, durability="power")
    try:
        assert journal.durability is Durability.POWER
        assert journal._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        journal.close()


def _commit_modes(journal: SQLiteJournal) -> list[str]:
    """The ``synchronous`` setting in force at each COMMIT the journal runs from now on."""
    modes: list[str] = []
    current = ["FULL" if journal.durability is Durability.POWER else "NORMAL"]

    def trace(statement: str) -> None:
        if statement.startswith("PRAGMA synchronous="):
            current[0] = statement.split("=", 1)[1]
        elif statement == "COMMIT":
            modes.append(current[0])

    journal._conn.set_trace_callback(trace)
    return modes


@pytest.mark.req("JNL-2")
def test_power_durability_syncs_every_write_step_but_not_each_read(data_dir: Path) -> None:
    journal = SQLiteJournal.open(data_dir, durability="power")
    try:
        journal.create_run("run_a", ["x:y"], None)
        modes = _commit_modes(journal)
        read = journal.begin_step("run_a", "mem.get", "read_only", "x:y", {}, None, None, [])
        journal.finish_step(
            "run_a",
            read.seq,
            StepState.SUCCEEDED,
            result={"v": 1},
            error=None,
            compensation=None,
            compensation_error=None,
        )
        write = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        journal.finish_step(
            "run_a",
            write.seq,
            StepState.SUCCEEDED,
            result={},
            error=None,
            compensation=None,
            compensation_error=None,
        )
        # the read's intent and outcome reach the log without an fsync of their own; the
        # write's commits (which flush the log, the read's frames included) are synced
        assert modes == ["NORMAL", "NORMAL", "FULL", "FULL"]
        assert journal._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert journal.get_step("run_a", read.seq).result == {"v": 1}
    finally:
        journal.close()


@pytest.mark.req("CALL-4", "JNL-2")
def test_a_read_recorded_after_it_answered_is_one_commit_without_an_fsync_under_power(
    data_dir: Path,
) -> None:
    journal = SQLiteJournal.open(data_dir, durability="power")
    try:
        journal.create_run("run_a", ["x:y"], None)
        modes = _commit_modes(journal)
        seq = journal.reserve_step("run_a")
        assert modes == []  # reserving writes nothing
        key = SQLiteJournal.forward_key("run_a", seq)
        journal.record_step(
            StepRecord(
                run_id="run_a",
                seq=seq,
                tool="mem.get",
                effect="read_only",
                permission="x:y",
                args={"k": "v"},
                reason=None,
                state=StepState.SUCCEEDED,
                idempotency_key=key,
                started_at=1.0,
                finished_at=2.0,
                result={"v": 1},
                requires=[],
            )
        )
        write = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        assert write.seq == seq + 1  # the reserved number is not handed out again
        assert modes == ["NORMAL", "FULL"]
        step = journal.get_step("run_a", seq)
        assert (step.state, step.result, step.owner) == (StepState.SUCCEEDED, {"v": 1}, None)
        with pytest.raises(JournalError, match="written by another journal handle"):
            journal.record_step(step)  # the number is taken now
    finally:
        journal.close()


@pytest.mark.req("JNL-4")
def test_storage_errors_reach_callers_as_journal_errors(sqlite_journal: SQLiteJournal) -> None:
    journal = sqlite_journal
    journal.create_run("run_a", ["x:y"], None)
    journal._conn.execute("DROP TABLE edges")
    with pytest.raises(JournalError, match="no such table: edges") as info:
        journal.list_steps("run_a")
    assert not isinstance(info.value, sqlite3.Error)
    assert info.value.__cause__ is None
    journal._conn.close()
    with pytest.raises(JournalError, match="closed database"):
        journal.list_runs()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_open_journal_opens_a_data_directory_and_names_a_url_without_its_password(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_journal(data_dir) as journal:
        journal.create_run("run_a", [], None)
        assert journal.location == str(data_dir)
    monkeypatch.setenv("REVERSI_DATA", str(data_dir))
    with open_journal(None, create=False) as journal:
        assert [r.id for r in journal.list_runs()] == ["run_a"]
    port = _closed_port()  # nothing listens there: refused at once
    for url in (
        f"postgresql://agent:s3cr3t-pw@127.0.0.1:{port}/reversi",
        f"postgres://127.0.0.1:{port}/reversi?user=agent&password=s3cr3t-pw",
    ):
        with pytest.raises(JournalError) as info:
            open_journal(url)
        message = str(info.value)
        assert message.startswith(
            f"cannot connect to the PostgreSQL journal at postgresql://127.0.0.1:{port}/reversi: "
        ), message
        assert "s3cr3t" not in message
        assert "agent" not in message
    with pytest.raises(JournalError, match="malformed %-escape") as info:
        open_journal("postgresql://agent:s3cr3t%zz@127.0.0.1:5432/reversi")  # a bad escape
    assert "s3cr3t" not in str(info.value)
    with pytest.raises(JournalError, match="scheme 'mysql'"):
        open_journal("mysql://u:p@h/db")
    dsn = "host=127.0.0.1 dbname=reversi password=s3cr3t-pw"
    with pytest.raises(JournalError, match="key=value connection string") as info:
        open_journal(dsn)
    assert "s3cr3t" not in str(info.value)
    assert not Path(dsn).exists()  # not taken for a directory


@pytest.mark.parametrize(
    "text",
    [
        "sslmode=require host=db password=s3cr3t-pw",  # no key word of the old check first
        "./data password=s3cr3t-pw",  # a directory name, then a parameter
        "data\tPASSWORD = s3cr3t-pw",  # any case, spaces around "="
        "target_session_attrs=any dbname=x sslpassword=s3cr3t-pw",
    ],
)
def test_a_libpq_key_value_string_anywhere_is_never_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(JOURNAL_ENV, raising=False)
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    with pytest.raises(
        JournalError, match="looks like a libpq key=value connection string"
    ) as info:
        open_journal(text)
    assert "s3cr3t" not in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing created
    shown = describe_location(text)
    assert "s3cr3t" not in shown
    assert "password=" not in shown.lower().replace(" ", "")
    assert shown == "a libpq key=value connection string (not shown: it may hold a password)"
    with pytest.raises(ConfigurationError, match="key=value connection string") as refused:
        resolve_location(text)
    assert "s3cr3t" not in str(refused.value)
    monkeypatch.setenv(JOURNAL_ENV, text)
    with pytest.raises(ConfigurationError, match="key=value connection string"):
        resolve_location()


def test_a_directory_name_with_an_equals_sign_is_still_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("data=old", "runs/a=b", "myhost=x", "a/user=b"):  # no key word as a word
        assert resolve_location(name) == name
        assert describe_location(name) == name
    open_journal("data=old").close()
    assert (tmp_path / "data=old" / JOURNAL_FILENAME).exists()


def test_a_missing_psycopg_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    with pytest.raises(JournalError) as info:
        open_journal("postgresql://agent:s3cr3t-pw@127.0.0.1:5432/reversi")
    message = str(info.value)
    assert "pip install 'reversi-core[postgresql]'" in message
    assert "psycopg" in message
    assert "s3cr3t" not in message


def test_a_commit_that_fails_is_rolled_back_and_the_journal_stays_usable(
    sqlite_journal: SQLiteJournal,
) -> None:
    journal = sqlite_journal
    journal.create_run("run_a", ["x:y"], None)
    # a foreign key checked only at COMMIT makes the COMMIT itself fail
    journal._conn.execute("PRAGMA defer_foreign_keys=ON")
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"), journal._tx() as c:
        c.execute(
            "INSERT INTO steps (run_id, seq, tool, effect, permission, args, state, "
            "idempotency_key, started_at) VALUES ('no_such_run', 1, 't', 'read_only', 'x:y', "
            "'{}', 'pending', 'k', 0)"
        )
    assert not journal._conn.in_transaction
    step = journal.begin_step("run_a", "t", "read_only", "x:y", {}, None, None, [])
    assert journal.get_step("run_a", step.seq).state is StepState.PENDING
    assert journal._conn.execute("SELECT count(*) FROM steps").fetchone()[0] == 1


class _CommitFailsOnce:
    """A connection whose next COMMIT fails, as a full disk would make it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.armed = True

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT" and self.armed:
            self.armed = False
            raise sqlite3.OperationalError("database or disk is full (injected)")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@pytest.mark.req("JNL-4")
def test_a_step_whose_intent_fails_to_commit_leaves_no_trace(data_dir: Path) -> None:
    journal = SQLiteJournal.open(data_dir, durability="power")
    try:
        journal.create_run("run_a", ["x:y"], None)
        first = journal.begin_step("run_a", "t", "reversible", "x:y", {}, None, None, [])
        real = journal._conn
        journal._conn = _CommitFailsOnce(real)  # type: ignore[assignment]  # a test double
        with pytest.raises(JournalError, match="disk is full") as info:
            journal.begin_step("run_a", "t.read", "read_only", "x:y", {}, None, None, [])
        assert not isinstance(info.value, sqlite3.Error)
        journal._conn = real
        assert not real.in_transaction
        assert journal._light == set()  # no read-only step is waiting for its outcome
        assert real.execute("PRAGMA synchronous").fetchone()[0] == 2
        again = journal.begin_step("run_a", "t.read", "read_only", "x:y", {}, None, None, [])
        assert again.seq == first.seq + 1  # no gap where the failed step would have been
        assert [s.seq for s in journal.list_steps("run_a")] == [first.seq, again.seq]
    finally:
        journal.close()


def _interrupted_update(journal: SQLiteJournal) -> None:
    conn = journal._conn
    with journal._tx() as c:
        conn.set_progress_handler(lambda: 1, 1)
        try:
            c.execute("UPDATE runs SET label = 'x'")
        finally:
            conn.set_progress_handler(None, 1)


def test_an_error_sqlite_already_rolled_back_is_the_one_raised(
    sqlite_journal: SQLiteJournal,
) -> None:
    journal = sqlite_journal
    journal.create_run("run_a", ["x:y"], None)
    # an interrupted write rolls the whole transaction back inside SQLite
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        _interrupted_update(journal)
    assert not journal._conn.in_transaction
    assert journal.get_run("run_a").label is None


@pytest.mark.req("JNL-2")
def test_process_durability_never_syncs_a_step(data_dir: Path) -> None:
    journal = SQLiteJournal.open(data_dir)
    try:
        journal.create_run("run_a", ["x:y"], None)
        modes = _commit_modes(journal)
        for effect in ("read_only", "reversible"):
            step = journal.begin_step("run_a", "t", effect, "x:y", {}, None, None, [])
            journal.finish_step(
                "run_a",
                step.seq,
                StepState.SUCCEEDED,
                result={},
                error=None,
                compensation=None,
                compensation_error=None,
            )
        assert modes == ["NORMAL"] * 4
        assert journal._conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    finally:
        journal.close()


@pytest.mark.req("JNL-2")
def test_durability_process_sets_synchronous_normal_and_is_the_default(data_dir: Path) -> None:
    journal = SQLiteJournal.open(data_dir)
    try:
        assert journal.durability is Durability.PROCESS
        assert journal._conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    finally:
        journal.close()
    with pytest.raises(ValueError, match="fast"):
        SQLiteJournal.open(data_dir, durability="fast")


def _newer_journal(data_dir: Path, *, wal: bool) -> Path:
    data_dir.mkdir(mode=0o700)
    path = data_dir / JOURNAL_FILENAME
    conn = sqlite3.connect(path)
    try:
        if wal:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE future (x)")
        conn.execute("INSERT INTO future VALUES (1)")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
        conn.commit()
    finally:
        conn.close()
    return path


@pytest.mark.parametrize("wal", [True, False], ids=["wal", "rollback-journal"])
@pytest.mark.req("JNL-3")
def test_newer_schema_is_refused_and_the_file_left_unchanged(data_dir: Path, wal: bool) -> None:
    path = _newer_journal(data_dir, wal=wal)
    before = path.read_bytes()
    with pytest.raises(JournalVersionError) as info:
        SQLiteJournal.open(data_dir)
    message = str(info.value)
    assert f"schema version {SCHEMA_VERSION + 1}" in message
    assert f"newer than the {SCHEMA_VERSION}" in message
    assert "upgrade reversi-core" in message
    assert path.read_bytes() == before
    assert _user_version(path) == SCHEMA_VERSION + 1


def test_missing_data_dir_without_create_names_the_dir(data_dir: Path) -> None:
    with pytest.raises(JournalError, match=str(data_dir)):
        SQLiteJournal.open(data_dir, create=False)
    assert not data_dir.exists()


def test_data_dir_without_journal_without_create_is_refused(data_dir: Path) -> None:
    data_dir.mkdir()
    with pytest.raises(JournalError, match="no journal in"):
        SQLiteJournal.open(data_dir, create=False)
    assert list(data_dir.iterdir()) == []


def test_non_journal_file_is_refused(data_dir: Path) -> None:
    data_dir.mkdir()
    path = data_dir / JOURNAL_FILENAME
    garbage = b"this is not SQLite at all\x00\xff" * 200
    path.write_bytes(garbage)
    with pytest.raises(JournalError, match="not a Reversi journal"):
        SQLiteJournal.open(data_dir)
    assert path.read_bytes() == garbage


def test_sqlite_file_of_another_program_is_refused(data_dir: Path) -> None:
    data_dir.mkdir()
    path = data_dir / JOURNAL_FILENAME
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match="no Reversi schema version"):
        SQLiteJournal.open(data_dir)
    assert _tables(path) == {"notes"}


def test_migration_from_version_zero_creates_the_schema(data_dir: Path) -> None:
    data_dir.mkdir(mode=0o700)
    path = data_dir / JOURNAL_FILENAME
    path.touch(mode=0o600)  # an empty file is an empty database at user_version 0
    assert _user_version(path) == 0
    journal = SQLiteJournal.open(data_dir)
    try:
        journal.create_run("run_a", [], "label")
        assert journal.get_run("run_a").status is RunStatus.OPEN
    finally:
        journal.close()
    assert _user_version(path) == SCHEMA_VERSION
    assert _tables(path) >= TABLES


def test_reopening_keeps_every_step(location: str, store: str) -> None:
    journal = open_journal(location)
    journal.create_run("run_a", ["x:y"], None)
    step = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {"k": "v"}, "why", None, [])
    journal.finish_step(
        "run_a",
        step.seq,
        StepState.SUCCEEDED,
        result={"ok": True},
        error=None,
        compensation={"tool": "mem.restore", "args": {}},
        compensation_error=None,
    )
    journal.close()
    again = open_journal(location, create=False)
    try:
        [back] = again.list_steps("run_a")
        assert back.state is StepState.SUCCEEDED
        assert back.args == {"k": "v"}
        assert back.reason == "why"
        assert back.result == {"ok": True}
        assert back.compensation == {"tool": "mem.restore", "args": {}}
        assert back.idempotency_key == f"reversi-run_a-{back.seq}"
        if store == "sqlite":
            assert _user_version(Path(location) / JOURNAL_FILENAME) == SCHEMA_VERSION
        else:
            assert sql(location, "SELECT max(version) FROM reversi_migrations") == [
                (SCHEMA_VERSION,)
            ]
    finally:
        again.close()


def test_unknown_run_and_step_raise_journal_error(journal: Journal) -> None:
    """An unknown run is UnknownRunError (a JournalError) on every read of it, so that a
    caller can tell it from an outage (the console answers 404 for it, 503 for the other)."""
    for read in (journal.get_run, journal.run_status):
        with pytest.raises(UnknownRunError, match="no run 'run_x'"):
            read("run_x")
    assert issubclass(UnknownRunError, JournalError)
    journal.create_run("run_a", [], None)
    with pytest.raises(JournalError, match="has no step 7"):
        journal.get_step("run_a", 7)


@pytest.mark.req("JNL-8")
def test_processes_opening_a_fresh_journal_at_once_create_it_once(
    location: str, store: str
) -> None:
    """Eight sessions (threads, each with its own connection) open one journal that does
    not exist yet at the same moment: every open succeeds, the schema is made once."""
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []
    opened: list[Journal] = []

    def open_one() -> None:
        try:
            barrier.wait(timeout=30)
            opened.append(open_journal(location))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for journal in opened:
        journal.close()
    assert errors == []
    assert len(opened) == 8
    if store == "sqlite":
        assert _user_version(Path(location) / JOURNAL_FILENAME) == SCHEMA_VERSION
        assert _tables(Path(location) / JOURNAL_FILENAME) >= TABLES
    else:
        rows = sql(location, "SELECT version FROM reversi_migrations ORDER BY version")
        assert rows == [(n,) for n in range(1, SCHEMA_VERSION + 1)]
