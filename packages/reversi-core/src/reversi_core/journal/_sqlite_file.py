"""The SQLite journal's file: checking the data directory, connecting, one transaction."""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from ..errors import JournalError, JournalVersionError
from ._base import Durability
from ._schema import MIGRATIONS, SCHEMA_VERSION, older_message

__all__ = [
    "JOURNAL_FILENAME",
    "Transaction",
    "connect",
    "connect_read_only",
    "journal_errors",
    "migrate",
    "newer_message",
    "prepare_file",
]

JOURNAL_FILENAME = "journal.sqlite3"


def newer_message(path: Path, version: int) -> str:
    return (
        f"journal {path} has schema version {version}, newer than the "
        f"{SCHEMA_VERSION} this reversi-core understands; upgrade reversi-core"
    )


class Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK``) under the journal's lock.

    A plain class rather than ``contextlib.contextmanager``: it runs twice per call on
    the gateway's hot path, and the generator machinery costs more than the rest of the
    Python around the two commits.
    """

    __slots__ = ("_conn", "_light", "_lock")

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock, light: bool) -> None:
        self._conn = conn
        self._lock = lock
        self._light = light

    def __enter__(self) -> sqlite3.Connection:
        self._lock.acquire()
        try:
            if self._light:
                self._conn.execute("PRAGMA synchronous=NORMAL")
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except BaseException:
                if self._light:
                    self._conn.execute("PRAGMA synchronous=FULL")
                raise
        except BaseException:
            self._lock.release()
            raise
        return self._conn

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is None:
                try:
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:  # a failed COMMIT leaves it open
                        self._conn.execute("ROLLBACK")
                    raise
            elif self._conn.in_transaction:  # SQLite may have rolled back by itself already
                self._conn.execute("ROLLBACK")
        finally:
            try:
                if self._light:
                    self._conn.execute("PRAGMA synchronous=FULL")
            finally:
                self._lock.release()


def prepare_file(data: Path, create: bool, *, read_only: bool = False) -> Path:
    """Check (and with ``create``, make) ``data`` and its journal file; return the file's path.

    Raises :class:`JournalError` naming what is wrong: a missing directory or journal
    (without ``create``), one that is not a directory, unreadable or (unless
    ``read_only``) not writable, an empty file.
    """
    path = data / JOURNAL_FILENAME
    if not data.exists():
        if not create:
            raise JournalError(
                f"data directory {data} does not exist, so nothing was journaled there"
            )
        try:  # exist_ok: another process opening the same new journal may make it first
            data.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalError(f"cannot create data directory {data}: {exc.strerror}") from None
    if not data.is_dir():
        raise JournalError(f"data directory {data} is not a directory")
    if not os.access(data, os.R_OK | os.X_OK):
        raise JournalError(f"data directory {data} is not readable")
    if not path.exists():
        if not create:
            raise JournalError(f"no journal in {data} (expected {path.name}); nothing has run here")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.close(fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise JournalError(f"cannot create journal {path}: {exc.strerror}") from None
    elif not os.access(path, os.R_OK):
        raise JournalError(f"journal {path} is not readable")
    elif not create and path.stat().st_size == 0:
        raise JournalError(f"{path} is empty: it is not a Reversi journal")
    if read_only:
        return path
    if path.exists() and not (os.access(path, os.W_OK) and os.access(data, os.W_OK)):
        raise JournalError(
            f"journal {path} (or its directory) is not writable; Reversi needs write access "
            "even to read it (WAL mode, crash recovery)"
        )
    return path


def connect(path: Path, durability: Durability, busy_timeout: float) -> sqlite3.Connection:
    """Open the SQLite file ``path`` in WAL mode with ``durability``'s ``synchronous``.

    Raises :class:`JournalError` for a file that is not a journal and
    :class:`JournalVersionError` for one written by a newer schema (before writing to it).
    """
    try:
        conn = sqlite3.connect(
            str(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    except sqlite3.DatabaseError as exc:
        raise JournalError(f"{path} is not a Reversi journal: {exc}") from None
    try:
        # Refuse a newer file before anything writes to it (switching to WAL rewrites
        # the header of a file in rollback-journal mode).
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise JournalVersionError(newer_message(path, version))
        conn.execute("PRAGMA journal_mode=WAL").fetchone()
        sync = "FULL" if durability is Durability.POWER else "NORMAL"
        conn.execute(f"PRAGMA synchronous={sync}")
        conn.execute("PRAGMA foreign_keys=ON")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise JournalError(f"{path} is not a Reversi journal: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def connect_read_only(path: Path, busy_timeout: float) -> sqlite3.Connection:
    """Open the journal ``path`` to read it only (``mode=ro``, ``query_only``).

    Nothing is written: no WAL switch, no migration, no recovery, no checkpoint on close
    (https://www.sqlite.org/uri.html, https://www.sqlite.org/pragma.html#pragma_query_only).
    Raises :class:`JournalVersionError` for a schema other than :data:`SCHEMA_VERSION`
    (an older one says which commands migrate it) and :class:`JournalError` for a file
    that is not a journal.
    """
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    try:
        conn = sqlite3.connect(
            uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    except sqlite3.DatabaseError as exc:
        raise JournalError(f"{path} is not a Reversi journal: {exc}") from None
    try:
        conn.execute("PRAGMA query_only=ON")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise JournalVersionError(newer_message(path, version))
        if version == 0:
            raise JournalError(f"{path} holds no Reversi journal (no schema version)")
        if version < SCHEMA_VERSION:
            raise JournalVersionError(older_message(str(path), version))
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise JournalError(f"{path} is not a Reversi journal: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def migrate(c: sqlite3.Connection, path: Path) -> None:
    """Bring the schema of the journal ``path`` forward, inside the caller's transaction.

    Raises :class:`JournalVersionError` for a newer schema and :class:`JournalError` for a
    file that holds tables but no Reversi schema version.
    """
    version = c.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise JournalVersionError(newer_message(path, version))
    if version == 0:
        tables = c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables:
            raise JournalError(f"{path} holds tables but no Reversi schema version")
    for number in range(version, SCHEMA_VERSION):
        for statement in MIGRATIONS[number].split(";"):
            if statement.strip():
                c.execute(statement)
        c.execute(f"PRAGMA user_version={number + 1}")


_C = TypeVar("_C", bound=type)


def journal_errors(methods: Iterable[str]) -> Callable[[_C], _C]:
    """A class decorator: ``methods`` raise ``JournalError`` where SQLite raised its own error.

    The message names the journal (the instance's ``path``) and SQLite's error.
    """

    def wrap(method: Any) -> Any:
        @functools.wraps(method)
        def inner(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except sqlite3.Error as exc:
                raise JournalError(f"journal {self.path}: {type(exc).__name__}: {exc}") from None

        return inner

    def decorate(cls: _C) -> _C:
        for name in methods:
            setattr(cls, name, wrap(getattr(cls, name)))
        return cls

    return decorate
