"""The SQLite journal's check that a run is open before a read: :class:`RunStatusCheck`.

Every call checks the run's status before it runs (docs/engine.md, CALL-10), and for a
read that check was a query of SQLite, its two ``fcntl`` locks the costliest part of the
read's way to its tool. SQLite's own readers know whether any connection committed
since they last looked by the header of the WAL index (the ``-shm`` file,
https://www.sqlite.org/walformat.html, "The WAL-Index Header"): a counter that every
committed transaction of every connection increments, the log's last frame, its salts
(new when the log restarts) and checksums, written twice, the two copies equal except
while a writer updates them. :class:`WalIndex` maps it read-only and
:class:`RunStatusCheck` asks SQLite again only when the header differs from the one it
saw when it last found the run open.

It falls back to the query on any doubt: no ``-shm`` file, a map that failed, a header
not initialised or halfway written, or a ``-shm`` that is not the file mapped (another
inode: the database was reopened by everyone and its index rebuilt). A checkpoint does
not change the header (its progress is kept after it, in the checkpoint information)
and commits nothing, so it needs no query; a log restarted after one changes the salts.
SQLite never shrinks or removes the ``-shm`` while a connection (the journal's own) has
the database open in WAL mode, and no connection can leave WAL mode while another has it
open, as long as that connection keeps its locks: :class:`WalIndex` never closes a
descriptor of the file while the journal's connection is open (closing one would drop
them). Idea from issue-10q (``5127fd7``), with the inode check added.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sqlite3
import threading
from pathlib import Path

from ..errors import RunClosedError, UnknownRunError
from ._base import RunStatus

__all__ = ["RunStatusCheck", "WalIndex"]

_RUN_STATUS = "SELECT status FROM runs WHERE id = ?"


class _Mapped:
    """One ``-shm`` file's descriptors and map, shared by this process's WalIndex objects."""

    __slots__ = ("fds", "map", "users")

    def __init__(self) -> None:
        self.fds: list[int] = []
        self.map: mmap.mmap | None = None
        self.users = 0


_MAPPED: dict[tuple[int, int], _Mapped] = {}
"""The ``-shm`` files this process opened, by ``(st_dev, st_ino)``, until their last user
closes (see :class:`WalIndex` for why a descriptor of one is never closed earlier)."""
_MAPPED_LOCK = threading.Lock()


class WalIndex:
    """The header of a WAL database's wal-index (``<database>-shm``), read without SQLite.

    :meth:`header` returns both copies of the header (96 bytes) or ``None`` when there is
    nothing trustworthy to read (see the module docstring).

    SQLite keeps its locks of the ``-shm`` as POSIX record locks (``fcntl``), and those
    belong to the process: closing *any* descriptor of the file, one SQLite never saw
    included, drops every lock the process holds on it
    (https://www.sqlite.org/howtocorrupt.html, section 2.2). Had this class closed the
    descriptor it mapped the header with, the journal's connection would have lost its
    shared lock on the file (and any read lock it held then): another process opening
    the journal would then take the ``-shm`` for unused and truncate it, and the next
    look at the map would kill this process with ``SIGBUS`` (a gateway and a
    ``reversi rollback`` sharing a data directory did so). So each ``-shm`` is opened and
    mapped once per process and kept until the last :class:`WalIndex` of it is closed by
    :meth:`close`, which the journal calls only after closing its connection. (Another
    connection of this process to the same database that has no map of its own, a
    read-only handle that never reserved a step, still loses its locks when the last map
    is closed: one process holding two handles, one of them closing while the other
    reads.)
    """

    __slots__ = ("_file", "_id", "_key", "_map")

    _COPY = 48  # bytes of one copy of the header (WalIndexHdr)

    def __init__(self, database: Path) -> None:
        self._file = f"{database}-shm"
        self._map: mmap.mmap | None = None
        self._id: tuple[int, int] | None = None
        self._key: tuple[int, int] | None = None
        with _MAPPED_LOCK:
            try:
                seen = os.stat(self._file)
            except OSError:
                return
            key = (seen.st_dev, seen.st_ino)
            mapped = _MAPPED.get(key)
            if mapped is None:
                try:
                    fd = os.open(self._file, os.O_RDONLY)
                except OSError:
                    return
                info = os.fstat(fd)  # the file opened, should it have changed since
                key = (info.st_dev, info.st_ino)
                mapped = _MAPPED.setdefault(key, _Mapped())
                mapped.fds.append(fd)  # kept open: closing it would drop SQLite's locks
                if mapped.map is None and info.st_size >= 2 * self._COPY:
                    try:
                        mapped.map = mmap.mmap(fd, 2 * self._COPY, access=mmap.ACCESS_READ)
                    except (OSError, ValueError):
                        mapped.map = None
            mapped.users += 1
            self._key = key
            if mapped.map is not None:
                self._map, self._id = mapped.map, key

    def header(self) -> bytes | None:
        """Both copies of the header as they are now, or ``None``."""
        view = self._map
        if view is None:
            return None
        try:
            info = os.stat(self._file)
            header = view[: 2 * self._COPY]
        except (OSError, ValueError):  # gone, or unmapped
            return None
        if (info.st_dev, info.st_ino) != self._id:
            return None  # another -shm than the one mapped
        if header[12] != 1 or header[: self._COPY] != header[self._COPY :]:
            return None  # not initialised, or a writer is halfway through it
        return header

    def close(self) -> None:
        """Stop using the header; the last user of a ``-shm`` in this process unmaps it and
        closes its descriptors. Call it only once the journal's connection is closed."""
        self._map = None
        key, self._key = self._key, None
        if key is None:
            return
        with _MAPPED_LOCK:
            mapped = _MAPPED.get(key)
            if mapped is None:
                return
            mapped.users -= 1
            if mapped.users > 0:
                return
            del _MAPPED[key]
            if mapped.map is not None:
                mapped.map.close()
            for fd in mapped.fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


class RunStatusCheck:
    """Whether a run takes calls, asking SQLite only after a commit (module docstring).

    ``conn`` is the journal's connection (its lock held by the caller), ``database`` the
    journal file, whose ``-shm`` the connection has open by now.
    """

    __slots__ = ("_cursor", "_found_open", "_index", "_path")

    def __init__(self, conn: sqlite3.Connection, database: Path) -> None:
        self._cursor = conn.cursor()
        self._index = WalIndex(database)
        self._path = database
        # (wal-index header, run id) when the run was last found open
        self._found_open: tuple[bytes, str] | None = None

    def check(self, run_id: str) -> None:
        """Return when ``run_id`` is open; raise :class:`RunClosedError` when it was rolled
        back and :class:`JournalError` when there is no such run."""
        header = self._index.header()
        if header is not None and self._found_open == (header, run_id):
            return
        row = self._cursor.execute(_RUN_STATUS, (run_id,)).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id!r} in {self._path}")
        if row[0] != RunStatus.OPEN:
            raise RunClosedError(
                f"run {run_id} was rolled back ({row[0]}); it takes no new calls. Start a new run."
            )
        # the header read before the query: a commit in between makes the next check ask
        self._found_open = (header, run_id) if header is not None else None

    def close(self) -> None:
        """Unmap the header."""
        self._index.close()
