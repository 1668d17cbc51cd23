"""The SQLite journal asks for a run's status before a read only after a commit
(``journal/_sqlite_status.py``): every way the WAL index's header could mislead it is
tried here, and each ends in a query or in a status that is still right (CALL-10: a
rolled-back run takes no call)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from reversi_core import RunClosedError, SQLiteJournal
from reversi_core.journal._sqlite_status import WalIndex
from reversi_core.journal.sqlite import JOURNAL_FILENAME


class _Counting:
    """A cursor that counts the queries it runs."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self.cursor = cursor
        self.queries = 0

    def execute(self, sql: str, params: Any) -> Any:
        self.queries += 1
        return self.cursor.execute(sql, params)


def _counted(journal: SQLiteJournal) -> _Counting:
    check = journal._status
    assert check is not None
    counting = _Counting(check._cursor)
    check._cursor = counting  # type: ignore[assignment]
    return counting


def _raw(data_dir: Path) -> sqlite3.Connection:
    """Another connection, as another process's: plain sqlite3 on the journal file."""
    conn = sqlite3.connect(data_dir / JOURNAL_FILENAME, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


@pytest.fixture
def journal(data_dir: Path) -> Any:
    opened = SQLiteJournal.open(data_dir)
    opened.create_run("run_a", ["x:y"], None)
    opened.create_run("run_b", ["x:y"], None)
    yield opened
    opened.close()


@pytest.mark.req("CALL-10")
def test_reads_with_nothing_committed_between_them_ask_once(journal: SQLiteJournal) -> None:
    counting = _counted(journal)
    assert [journal.reserve_step("run_a") for _ in range(3)] == [1, 2, 3]
    assert counting.queries == 1
    assert journal.reserve_step("run_b") == 1  # another run: asked for
    assert counting.queries == 2


@pytest.mark.req("CALL-10")
def test_a_rollback_by_this_handle_or_another_is_seen_by_the_next_read(
    journal: SQLiteJournal, data_dir: Path
) -> None:
    counting = _counted(journal)
    journal.reserve_step("run_a")
    other = SQLiteJournal.open(data_dir)
    try:
        other.start_rollback("run_a")
    finally:
        other.close()
    with pytest.raises(RunClosedError, match="run_a was rolled back"):
        journal.reserve_step("run_a")
    journal.reserve_step("run_b")
    journal.start_rollback("run_b")  # this handle's own commit changes the header too
    with pytest.raises(RunClosedError, match="run_b was rolled back"):
        journal.reserve_step("run_b")
    assert counting.queries == 4


@pytest.mark.req("CALL-10")
def test_another_connections_commit_is_seen(journal: SQLiteJournal, data_dir: Path) -> None:
    journal.reserve_step("run_a")
    raw = _raw(data_dir)
    try:
        raw.execute("UPDATE runs SET status = 'rolled_back' WHERE id = 'run_a'")
    finally:
        raw.close()
    with pytest.raises(RunClosedError):
        journal.reserve_step("run_a")


@pytest.mark.req("CALL-10")
def test_a_checkpoint_and_a_restarted_log_are_seen(journal: SQLiteJournal, data_dir: Path) -> None:
    counting = _counted(journal)
    journal.reserve_step("run_a")
    raw = _raw(data_dir)
    try:
        # a checkpoint commits nothing: the status found stays right, whether asked or not
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert journal.reserve_step("run_a") == 2
        # after it the next writer restarts the log from its first frame (new salts):
        # a header that could repeat an old one's frame count; the change is still seen
        raw.execute("UPDATE runs SET status = 'rolled_back' WHERE id = 'run_a'")
        with pytest.raises(RunClosedError):
            journal.reserve_step("run_a")
        raw.execute("UPDATE runs SET status = 'open' WHERE id = 'run_a'")
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        raw.execute("UPDATE runs SET status = 'rolled_back' WHERE id = 'run_a'")
        with pytest.raises(RunClosedError):
            journal.reserve_step("run_a")
    finally:
        raw.close()
    assert counting.queries >= 3


@pytest.mark.req("CALL-10")
def test_without_a_header_to_read_every_read_asks(journal: SQLiteJournal, data_dir: Path) -> None:
    check = journal._status
    assert check is not None
    check._index.close()  # as when the -shm file could not be mapped
    assert check._index.header() is None
    counting = _counted(journal)
    assert [journal.reserve_step("run_a") for _ in range(3)] == [1, 2, 3]
    assert counting.queries == 3
    raw = _raw(data_dir)
    try:
        raw.execute("UPDATE runs SET status = 'rolled_back' WHERE id = 'run_a'")
    finally:
        raw.close()
    with pytest.raises(RunClosedError):
        journal.reserve_step("run_a")


def _fake_shm(path: Path, header: bytes) -> Path:
    database = path / "fake.sqlite3"
    Path(f"{database}-shm").write_bytes(header + b"\0" * 4000)
    return database


def _header(init: int = 1, change: int = 7) -> bytes:
    one = bytearray(48)
    one[0:4] = (3007000).to_bytes(4, "little")  # iVersion
    one[8:12] = change.to_bytes(4, "little")  # iChange
    one[12] = init  # isInit
    return bytes(one)


def test_the_header_is_read_only_when_it_can_be_trusted(tmp_path: Path) -> None:
    good = _header()
    database = _fake_shm(tmp_path, good + good)
    index = WalIndex(database)
    try:
        assert index.header() == good + good
        shm = Path(f"{database}-shm")
        data = bytearray(shm.read_bytes())
        data[8] = 8  # a writer halfway through: the two copies differ
        with shm.open("r+b") as f:
            f.write(data)
        assert index.header() is None
        uninit = _header(init=0)
        with shm.open("r+b") as f:
            f.write(uninit + uninit)
        assert index.header() is None
        with shm.open("r+b") as f:
            f.write(good + good)
        assert index.header() == good + good
        # another -shm in its place (another inode), even with the same bytes: not trusted
        shutil.copyfile(shm, tmp_path / "copy")
        os.replace(tmp_path / "copy", shm)
        assert index.header() is None
        shm.unlink()  # none at all
        assert index.header() is None
    finally:
        index.close()
    assert index.header() is None  # unmapped


def test_no_or_a_short_shm_file_gives_no_header(tmp_path: Path) -> None:
    assert WalIndex(tmp_path / "none.sqlite3").header() is None
    short = tmp_path / "short.sqlite3"
    Path(f"{short}-shm").write_bytes(b"\1" * 50)
    assert WalIndex(short).header() is None


def test_a_read_only_handle_checks_a_run_by_query(data_dir: Path) -> None:
    writer = SQLiteJournal.open(data_dir)
    try:
        writer.create_run("run_a", ["x:y"], None)
        writer.start_rollback("run_a")
        reader = SQLiteJournal.open(data_dir, create=False, read_only=True)
        try:
            with pytest.raises(RunClosedError):
                reader.reserve_step("run_a")
        finally:
            reader.close()
    finally:
        writer.close()


# -- SQLite's locks on the -shm file are the process's: never dropped by the map -----------


def _locks_held(path: Path) -> list[str]:
    """This process's POSIX locks on ``path`` (Linux ``/proc/locks``)."""
    inode = os.stat(path).st_ino
    me = os.getpid()
    with open("/proc/locks", encoding="ascii") as locks:
        return [
            line
            for line in locks
            if f":{inode} " in line and line.split()[4] == str(me) and "POSIX" in line
        ]


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads Linux's /proc/locks")
def test_the_header_map_leaves_sqlites_locks_in_place(data_dir: Path) -> None:
    """Closing any descriptor of the -shm drops every POSIX lock the process holds on it
    (SQLite's shared lock that tells others the index is in use included): the journal
    keeps its connection's lock through opening, reading and a second handle's close."""
    first = SQLiteJournal.open(data_dir)
    shm = data_dir / f"{JOURNAL_FILENAME}-shm"
    try:
        first.create_run("run_a", ["x:y"], None)
        assert first.reserve_step("run_a") == 1
        assert first._status is not None
        assert first._status._index.header() is not None
        assert _locks_held(shm), "the journal's connection holds no lock on its -shm"
        second = SQLiteJournal.open(data_dir)
        second.reserve_step("run_a")  # its own map of the same -shm, shared
        second.close()
        assert _locks_held(shm), "closing the second handle dropped the first one's lock"
        assert first._status._index.header() is not None
        first.reserve_step("run_a")
    finally:
        first.close()
