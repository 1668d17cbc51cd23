"""The embedded journal: one SQLite database in the data directory.

Layout: ``<data>/journal.sqlite3`` (plus SQLite's ``-wal`` and ``-shm`` files), created
with mode 0600 in a directory created with mode 0700. WAL mode lets a gateway and a
``reversi rollback`` use one journal at once; writers take ``BEGIN IMMEDIATE`` and wait
up to ``busy_timeout`` seconds for each other.

Crash recovery: each pending step records its owner (host, pid and the process's start
time, so a reused pid is not mistaken for the owner). Opening the journal turns every
pending step whose owner is gone into ``uncertain``, and releases rollback locks held
by dead processes.

Schema versions live in ``PRAGMA user_version``; :data:`MIGRATIONS` brings an older file
forward in one transaction, and a newer file is refused with
:class:`~reversi_core.errors.JournalVersionError` rather than misread.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import JournalError, JournalVersionError, RollbackInProgressError, RunClosedError
from ..redact import scrub, scrub_json
from ._base import (
    Durability,
    RollbackState,
    RunRecord,
    RunStatus,
    StepRecord,
    StepState,
    step_idempotency_key,
)

__all__ = ["JOURNAL_FILENAME", "MIGRATIONS", "SCHEMA_VERSION", "SQLiteJournal", "process_owner"]

JOURNAL_FILENAME = "journal.sqlite3"

MIGRATIONS: list[str] = [
    # 1: runs, steps, edges, events
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        started_at REAL NOT NULL,
        status TEXT NOT NULL,
        scope TEXT NOT NULL,
        label TEXT,
        rollback_owner TEXT,
        rollback_started_at REAL,
        rollback_finished_at REAL
    );
    CREATE TABLE steps (
        run_id TEXT NOT NULL REFERENCES runs(id),
        seq INTEGER NOT NULL,
        tool TEXT NOT NULL,
        effect TEXT NOT NULL,
        permission TEXT NOT NULL,
        args TEXT NOT NULL,
        reason TEXT,
        state TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        owner TEXT,
        started_at REAL NOT NULL,
        finished_at REAL,
        result TEXT,
        error TEXT,
        compensation TEXT,
        compensation_error TEXT,
        approval TEXT,
        resolution TEXT,
        rollback_state TEXT,
        rollback_reason TEXT,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE edges (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        requires_seq INTEGER NOT NULL,
        PRIMARY KEY (run_id, seq, requires_seq)
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL,
        seq INTEGER,
        at REAL NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX steps_pending ON steps(state) WHERE state = 'pending';
    CREATE INDEX events_run ON events(run_id, id);
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)

# Rollbacks running in this process, by (journal file, run id). The rollback lock in the
# journal names its owner by process, so two rollbacks of one run inside one process
# (two tasks of a gateway, two journal handles) would both pass it; this set refuses the
# second one.
_ACTIVE_ROLLBACKS: set[tuple[str, str]] = set()
_ACTIVE_LOCK = threading.Lock()


def _process_start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            data = fh.read()
        return data.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def process_owner(pid: int | None = None) -> str:
    """``host:pid:start`` for ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_process_start_time(pid)}"


def _owner_alive(owner: str | None) -> bool:
    if not owner:
        return False
    try:
        host, pid_s, start = owner.rsplit(":", 2)
        pid = int(pid_s)
    except ValueError:
        return False
    if host != socket.gethostname():
        return True  # cannot tell for another host: assume alive, never guess
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return start == "?" or _process_start_time(pid) == start


def _newer_message(path: Path, version: int) -> str:
    return (
        f"journal {path} has schema version {version}, newer than the "
        f"{SCHEMA_VERSION} this reversi-core understands; upgrade reversi-core"
    )


_ENCODER = json.JSONEncoder(separators=(",", ":"))
"""Compact ASCII JSON, made once (``json.dumps`` with options builds an encoder per call).

ASCII, so that any Python string can be stored, a lone surrogate read from a peer's JSON
included (SQLite's UTF-8 encoding would refuse it); it reads back unchanged."""


def _dumps(value: Any) -> str | None:
    if value is None:
        return None
    return _ENCODER.encode(scrub_json(value))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class _Transaction:
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


class SQLiteJournal:
    """The embedded journal (see the module docstring).

    Open with :meth:`open`. Safe to share between threads of one process; several
    processes may open the same data directory at once.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path, durability: Durability) -> None:
        self._conn = conn
        self._lock = threading.RLock()
        self.path = path
        self.durability = durability
        self._owner = process_owner()
        # next step number per run, as this handle last wrote it (checked by the primary key)
        self._seq_hint: dict[str, int] = {}
        # read-only steps begun under power durability and not finished (see _is_light)
        self._light: set[tuple[str, int]] = set()

    # -- opening -----------------------------------------------------------------

    @classmethod
    def open(
        cls,
        data_dir: str | os.PathLike[str],
        *,
        durability: Durability | str = Durability.PROCESS,
        create: bool = True,
        busy_timeout: float = 30.0,
    ) -> SQLiteJournal:
        """Open (and with ``create``, create) the journal in ``data_dir``.

        ``busy_timeout`` is how long, in seconds, a write waits for another process's.
        Raises :class:`JournalError` when the directory is missing (and ``create`` is
        false), unreadable, or holds something that is not a journal, and
        :class:`JournalVersionError` when the file's schema is newer than this build.
        """
        durability = Durability(durability)
        data = Path(data_dir)
        path = data / JOURNAL_FILENAME
        if not data.exists():
            if not create:
                raise JournalError(
                    f"data directory {data} does not exist (pass --data DIR or set REVERSI_DATA)"
                )
            try:
                data.mkdir(mode=0o700, parents=True)
            except OSError as exc:
                raise JournalError(f"cannot create data directory {data}: {exc.strerror}") from None
        if not data.is_dir():
            raise JournalError(f"data directory {data} is not a directory")
        if not os.access(data, os.R_OK | os.X_OK):
            raise JournalError(f"data directory {data} is not readable")
        if not path.exists():
            if not create:
                raise JournalError(
                    f"no journal in {data} (expected {path.name}); nothing has run here"
                )
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
        if path.exists() and not (os.access(path, os.W_OK) and os.access(data, os.W_OK)):
            raise JournalError(
                f"journal {path} (or its directory) is not writable; Reversi needs write access "
                "even to read it (WAL mode, crash recovery)"
            )
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
                raise JournalVersionError(_newer_message(path, version))
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
        journal = cls(conn, path, durability)
        try:
            journal._migrate()
            journal._recover()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise JournalError(f"{path} is not a Reversi journal: {exc}") from None
        except Exception:
            conn.close()
            raise
        for suffix in ("-wal", "-shm"):
            side = Path(str(path) + suffix)
            if side.exists() and stat.S_IMODE(side.stat().st_mode) & 0o077:
                os.chmod(side, 0o600)
        return journal

    def _tx(self, *, light: bool = False) -> _Transaction:
        """One write transaction (``with self._tx() as c:``), committed at the end of the
        block and rolled back if it raises. ``light``: commit without waiting for the
        disk even under ``power`` durability (see :meth:`_is_light`)."""
        return _Transaction(self._conn, self._lock, light)

    def _is_light(self, effect: str) -> bool:
        """Whether a step of ``effect`` is journaled without an fsync of its own.

        Under ``power`` durability, a read-only step's intent and outcome are committed
        to the write-ahead log as under ``process`` durability: a crash of the process
        loses neither, and the next step that writes (or a checkpoint) flushes them to
        the disk with its own fsync, as the log is one file written in order. Only a
        power cut right after reads can drop the record of those reads, which changed
        nothing and are never compensated; every step that can change something is on
        the disk before it runs.
        """
        return self.durability is Durability.POWER and effect == "read_only"

    def _migrate(self) -> None:
        with self._tx() as c:
            version = c.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise JournalVersionError(_newer_message(self.path, version))
            if version == 0:
                tables = c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if tables:
                    raise JournalError(f"{self.path} holds tables but no Reversi schema version")
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number].split(";"):
                    if statement.strip():
                        c.execute(statement)
                c.execute(f"PRAGMA user_version={number + 1}")

    def _recover(self) -> None:
        now = time.time()
        with self._tx() as c:
            for run_id, seq, owner in c.execute(
                "SELECT run_id, seq, owner FROM steps WHERE state = 'pending'"
            ).fetchall():
                if _owner_alive(owner):
                    continue
                pid = owner.rsplit(":", 2)[1] if owner else "?"
                c.execute(
                    "UPDATE steps SET state = 'uncertain', finished_at = ?, error = ? "
                    "WHERE run_id = ? AND seq = ? AND state = 'pending'",
                    (
                        now,
                        f"the process that ran this call (pid {pid}) stopped before recording "
                        "its outcome; the call may or may not have taken effect",
                        run_id,
                        seq,
                    ),
                )
                self._event(c, run_id, seq, "recovered", {"from": "pending", "to": "uncertain"})
            for run_id, owner in c.execute(
                "SELECT id, rollback_owner FROM runs WHERE status = 'rolling_back'"
            ).fetchall():
                if not _owner_alive(owner):
                    c.execute(
                        "UPDATE runs SET status = 'rollback_incomplete', rollback_owner = NULL WHERE id = ?",
                        (run_id,),
                    )
                    self._event(c, run_id, None, "rollback_abandoned", {"owner": owner})

    # -- runs --------------------------------------------------------------------

    def create_run(self, run_id: str, scope: list[str], label: str | None) -> RunRecord:
        with self._tx() as c:
            c.execute(
                "INSERT INTO runs (id, started_at, status, scope, label) VALUES (?, ?, 'open', ?, ?)",
                (run_id, time.time(), json.dumps(sorted(scope)), label),
            )
        return self.get_run(run_id)

    _RUN_COLUMNS = (
        "r.id, r.started_at, r.status, r.scope, r.label, r.rollback_started_at, "
        "r.rollback_finished_at, (SELECT count(*) FROM steps s WHERE s.run_id = r.id)"
    )

    @staticmethod
    def _run(row: tuple[Any, ...]) -> RunRecord:
        return RunRecord(
            id=row[0],
            started_at=row[1],
            status=RunStatus(row[2]),
            scope=json.loads(row[3]),
            label=row[4],
            rollback_started_at=row[5],
            rollback_finished_at=row[6],
            step_count=row[7],
        )

    def get_run(self, run_id: str) -> RunRecord:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {self._RUN_COLUMNS} FROM runs r WHERE r.id = ?", (run_id,)
            ).fetchone()
        if row is None:
            raise JournalError(f"no run {run_id!r} in {self.path}")
        return self._run(row)

    def list_runs(self) -> list[RunRecord]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {self._RUN_COLUMNS} FROM runs r ORDER BY r.started_at, r.id"
            ).fetchall()
        return [self._run(r) for r in rows]

    # -- steps -------------------------------------------------------------------

    _STEP_COLUMNS = (
        "run_id, seq, tool, effect, permission, args, reason, state, idempotency_key, owner, "
        "started_at, finished_at, result, error, compensation, compensation_error, approval, "
        "resolution, rollback_state, rollback_reason"
    )

    def _step(self, row: tuple[Any, ...], requires: list[int]) -> StepRecord:
        return StepRecord(
            run_id=row[0],
            seq=row[1],
            tool=row[2],
            effect=row[3],
            permission=row[4],
            args=json.loads(row[5]),
            reason=row[6],
            state=StepState(row[7]),
            idempotency_key=row[8],
            owner=row[9],
            started_at=row[10],
            finished_at=row[11],
            result=_loads(row[12]),
            error=row[13],
            compensation=_loads(row[14]),
            compensation_error=row[15],
            approval=_loads(row[16]),
            resolution=row[17],
            rollback_state=RollbackState(row[18]) if row[18] else None,
            rollback_reason=row[19],
            requires=requires,
        )

    def list_steps(self, run_id: str) -> list[StepRecord]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {self._STEP_COLUMNS} FROM steps WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
            edges: dict[int, list[int]] = {}
            for seq, req in self._conn.execute(
                "SELECT seq, requires_seq FROM edges WHERE run_id = ? ORDER BY seq, requires_seq",
                (run_id,),
            ):
                edges.setdefault(seq, []).append(req)
        return [self._step(r, edges.get(r[1], [])) for r in rows]

    def get_step(self, run_id: str, seq: int) -> StepRecord:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {self._STEP_COLUMNS} FROM steps WHERE run_id = ? AND seq = ?",
                (run_id, seq),
            ).fetchone()
            reqs = [
                r[0]
                for r in self._conn.execute(
                    "SELECT requires_seq FROM edges WHERE run_id = ? AND seq = ? ORDER BY requires_seq",
                    (run_id, seq),
                )
            ]
        if row is None:
            raise JournalError(f"run {run_id!r} has no step {seq}")
        return self._step(row, reqs)

    forward_key = staticmethod(step_idempotency_key)

    def _next_seq(self, c: sqlite3.Connection, run_id: str) -> int:
        row = c.execute(
            "SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE run_id = ?", (run_id,)
        ).fetchone()
        return int(row[0])

    def _require_run(self, c: sqlite3.Connection, run_id: str) -> str:
        row = c.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise JournalError(f"no run {run_id!r} in {self.path}")
        return str(row[0])

    def record_rejected(
        self,
        run_id: str,
        tool: str,
        effect: str,
        permission: str,
        args: dict[str, Any],
        reason: str | None,
        error: str,
        approval: dict[str, Any] | None,
    ) -> int:
        now = time.time()
        with self._tx() as c:
            self._require_run(c, run_id)
            seq = self._next_seq(c, run_id)
            self._seq_hint[run_id] = seq + 1
            c.execute(
                "INSERT INTO steps (run_id, seq, tool, effect, permission, args, reason, state, "
                "idempotency_key, started_at, finished_at, error, approval) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'rejected', ?, ?, ?, ?, ?)",
                (
                    run_id,
                    seq,
                    tool,
                    effect,
                    permission,
                    _dumps(args),
                    reason,
                    self.forward_key(run_id, seq),
                    now,
                    now,
                    scrub(error),
                    _dumps(approval),
                ),
            )
        return seq

    def begin_step(
        self,
        run_id: str,
        tool: str,
        effect: str,
        permission: str,
        args: dict[str, Any],
        reason: str | None,
        approval: dict[str, Any] | None,
        requires: list[int],
    ) -> StepRecord:
        now = time.time()
        args_json = _dumps(args)
        approval_json = _dumps(approval)
        edges = sorted(set(requires))
        light = self._is_light(effect)
        with self._lock:
            with self._tx(light=light) as c:
                for _attempt in range(2):
                    seq = self._seq_hint.get(run_id) or self._next_seq(c, run_id)
                    key = self.forward_key(run_id, seq)
                    try:
                        # one statement: insert only if the run exists and is open
                        cur = c.execute(
                            "INSERT INTO steps (run_id, seq, tool, effect, permission, args, reason, "
                            "state, idempotency_key, owner, started_at, approval) "
                            "SELECT ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ? "
                            "WHERE (SELECT status FROM runs WHERE id = ?) = 'open'",
                            (
                                run_id,
                                seq,
                                tool,
                                effect,
                                permission,
                                args_json,
                                reason,
                                key,
                                self._owner,
                                now,
                                approval_json,
                                run_id,
                            ),
                        )
                    except sqlite3.IntegrityError:
                        # another handle wrote this step number meanwhile: recount and retry
                        self._seq_hint.pop(run_id, None)
                        continue
                    break
                else:  # two other writers took the number twice in a row
                    raise JournalError(f"cannot allocate a step number in run {run_id}")
                if cur.rowcount != 1:
                    status = self._require_run(c, run_id)
                    raise RunClosedError(
                        f"run {run_id} was rolled back ({status}); it takes no new calls. Start a new run."
                    )
                if edges:
                    c.executemany(
                        "INSERT INTO edges (run_id, seq, requires_seq) VALUES (?, ?, ?)",
                        [(run_id, seq, r) for r in edges],
                    )
            # only once committed (a failed COMMIT leaves no gap in the numbers, no stale
            # entry), and under the lock still (the RLock: _tx takes it again)
            self._seq_hint[run_id] = seq + 1
            if light:
                self._light.add((run_id, seq))
        # what was written, without reading it back (values as the journal stores them)
        return StepRecord(
            run_id=run_id,
            seq=seq,
            tool=tool,
            effect=effect,
            permission=permission,
            args=scrub_json(args),
            reason=reason,
            state=StepState.PENDING,
            idempotency_key=key,
            started_at=now,
            approval=scrub_json(approval),
            requires=edges,
            owner=self._owner,
        )

    def run_status(self, run_id: str) -> RunStatus:
        """The run's status alone (cheaper than :meth:`get_run`); raises JournalError if unknown."""
        with self._lock:
            row = self._conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise JournalError(f"no run {run_id!r} in {self.path}")
        return RunStatus(row[0])

    def finish_step(
        self,
        run_id: str,
        seq: int,
        state: StepState,
        *,
        result: dict[str, Any] | None,
        error: str | None,
        compensation: dict[str, Any] | None,
        compensation_error: str | None,
    ) -> None:
        light = (run_id, seq) in self._light
        with self._tx(light=light) as c:
            cur = c.execute(
                "UPDATE steps SET state = ?, finished_at = ?, result = ?, error = ?, "
                "compensation = ?, compensation_error = ? WHERE run_id = ? AND seq = ? AND state = 'pending'",
                (
                    state.value,
                    time.time(),
                    _dumps(result),
                    scrub(error) if error else None,
                    _dumps(compensation),
                    scrub(compensation_error) if compensation_error else None,
                    run_id,
                    seq,
                ),
            )
            if cur.rowcount != 1:
                # Another process decided this step was orphaned: keep the late outcome as
                # an event, do not overwrite what a person may already have resolved.
                self._event(c, run_id, seq, "late_outcome", {"state": state.value, "error": error})
        self._light.discard((run_id, seq))

    def reserve_step(self, run_id: str) -> int:
        with self._lock:
            row = self._conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise JournalError(f"no run {run_id!r} in {self.path}")
            if row[0] != RunStatus.OPEN:
                raise RunClosedError(
                    f"run {run_id} was rolled back ({row[0]}); it takes no new calls. Start a new run."
                )
            seq = self._seq_hint.get(run_id) or self._next_seq(self._conn, run_id)
            self._seq_hint[run_id] = seq + 1
        return seq

    def record_step(self, step: StepRecord) -> None:
        light = self._is_light(step.effect)
        edges = sorted(set(step.requires))
        try:
            with self._tx(light=light) as c:
                c.execute(
                    "INSERT INTO steps (run_id, seq, tool, effect, permission, args, reason, state, "
                    "idempotency_key, started_at, finished_at, result, error, compensation, "
                    "compensation_error, approval) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        step.run_id,
                        step.seq,
                        step.tool,
                        step.effect,
                        step.permission,
                        _dumps(step.args),
                        step.reason,
                        step.state.value,
                        step.idempotency_key,
                        step.started_at,
                        step.finished_at,
                        _dumps(step.result),
                        scrub(step.error) if step.error else None,
                        _dumps(step.compensation),
                        scrub(step.compensation_error) if step.compensation_error else None,
                        _dumps(step.approval),
                    ),
                )
                if edges:
                    c.executemany(
                        "INSERT INTO edges (run_id, seq, requires_seq) VALUES (?, ?, ?)",
                        [(step.run_id, step.seq, r) for r in edges],
                    )
        except sqlite3.IntegrityError:
            raise JournalError(
                f"step {step.seq} of run {step.run_id} was written by another journal handle "
                f"meanwhile; the record of this {step.tool} call is lost"
            ) from None

    def resolve_step(
        self,
        run_id: str,
        seq: int,
        applied: bool,
        result: dict[str, Any] | None,
        compensation: dict[str, Any] | None,
        compensation_error: str | None,
    ) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE steps SET resolution = ?, result = coalesce(?, result), compensation = ?, "
                "compensation_error = ?, rollback_state = NULL, rollback_reason = NULL "
                "WHERE run_id = ? AND seq = ?",
                (
                    "applied" if applied else "not_applied",
                    _dumps(result),
                    _dumps(compensation),
                    scrub(compensation_error) if compensation_error else None,
                    run_id,
                    seq,
                ),
            )
            self._event(c, run_id, seq, "resolved", {"applied": applied})

    # -- rollback ----------------------------------------------------------------

    def start_rollback(self, run_id: str) -> RunRecord:
        key = (os.path.realpath(self.path), run_id)
        with _ACTIVE_LOCK:
            if key in _ACTIVE_ROLLBACKS:
                raise RollbackInProgressError(
                    f"run {run_id} is being rolled back by this process (pid {os.getpid()}) "
                    "already; this rollback refused to run at the same time. "
                    "Try again when it ends."
                )
            _ACTIVE_ROLLBACKS.add(key)
        try:
            return self._start_rollback(run_id)
        except BaseException:
            with _ACTIVE_LOCK:
                _ACTIVE_ROLLBACKS.discard(key)
            raise

    def _start_rollback(self, run_id: str) -> RunRecord:
        with self._tx() as c:
            row = c.execute(
                "SELECT status, rollback_owner FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise JournalError(f"no run {run_id!r} in {self.path}")
            status, owner = row
            if status == RunStatus.ROLLING_BACK and owner != self._owner and _owner_alive(owner):
                pid = owner.rsplit(":", 2)[1]
                raise RollbackInProgressError(
                    f"run {run_id} is being rolled back by another process (pid {pid}); "
                    "this rollback refused to run at the same time. Try again when it ends."
                )
            c.execute(
                "UPDATE runs SET status = 'rolling_back', rollback_owner = ?, "
                "rollback_started_at = coalesce(rollback_started_at, ?) WHERE id = ?",
                (self._owner, time.time(), run_id),
            )
            self._event(c, run_id, None, "rollback_started", {"owner": self._owner})
        return self.get_run(run_id)

    def set_rollback_state(
        self, run_id: str, seq: int, state: RollbackState | None, reason: str | None
    ) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE steps SET rollback_state = ?, rollback_reason = ? WHERE run_id = ? AND seq = ?",
                (state.value if state else None, scrub(reason) if reason else None, run_id, seq),
            )
            self._event(
                c,
                run_id,
                seq,
                "rollback_state",
                {"state": state.value if state else None, "reason": reason},
            )

    def finish_rollback(self, run_id: str, complete: bool) -> None:
        status = RunStatus.ROLLED_BACK if complete else RunStatus.ROLLBACK_INCOMPLETE
        try:
            with self._tx() as c:
                c.execute(
                    "UPDATE runs SET status = ?, rollback_owner = NULL, rollback_finished_at = ? "
                    "WHERE id = ?",
                    (status.value, time.time(), run_id),
                )
                self._event(c, run_id, None, "rollback_finished", {"complete": complete})
        finally:
            with _ACTIVE_LOCK:
                _ACTIVE_ROLLBACKS.discard((os.path.realpath(self.path), run_id))

    # -- events ------------------------------------------------------------------

    def _event(
        self, c: sqlite3.Connection, run_id: str, seq: int | None, kind: str, detail: dict[str, Any]
    ) -> None:
        c.execute(
            "INSERT INTO events (run_id, seq, at, kind, detail) VALUES (?, ?, ?, ?, ?)",
            (run_id, seq, time.time(), kind, _dumps(detail)),
        )

    def add_event(self, run_id: str, seq: int | None, kind: str, detail: dict[str, Any]) -> None:
        with self._tx() as c:
            self._event(c, run_id, seq, kind, detail)

    def list_events(self, run_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, at, kind, detail FROM events WHERE run_id = ? ORDER BY id", (run_id,)
            ).fetchall()
        return [{"step": r[0], "at": r[1], "kind": r[2], "detail": json.loads(r[3])} for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
