"""The embedded journal: one SQLite database in the data directory.

Layout: ``<data>/journal.sqlite3`` (plus SQLite's ``-wal`` and ``-shm`` files), created
with mode 0600 in a directory created with mode 0700. WAL mode lets a gateway and a
``reversi rollback`` use one journal at once; writers take ``BEGIN IMMEDIATE`` and wait
up to ``busy_timeout`` seconds for each other.

Crash recovery: each pending step records its owner (host, pid and the process's start
time, so a reused pid is not mistaken for the owner). Opening the journal turns every
pending step whose owner is gone into ``uncertain``, and releases rollback locks held
by dead processes. Every write of a rollback (a step's rollback state, its events, the
end) checks in its own transaction that the run still names this process as the
rollback's owner, and is refused with
:class:`~reversi_core.errors.RollbackInProgressError` otherwise: a process judged dead
by its pid (another pid namespace with the same host name) must not overwrite the
rollback that took over.

Schema versions live in ``PRAGMA user_version``; :data:`MIGRATIONS` brings an older file
forward in one transaction, and a newer file is refused with
:class:`~reversi_core.errors.JournalVersionError` rather than misread.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import JournalError, RunClosedError, UnknownRunError
from ..redact import scrub, scrub_json
from . import _chain as chain
from ._approvals import APPROVAL_METHODS, SQLiteApprovals
from ._base import (
    Durability,
    Journal,
    LostStep,
    RollbackState,
    RunRecord,
    RunStatus,
    StepRecord,
    StepState,
    step_idempotency_key,
)
from ._deferred import DeferredSteps, step_row, taken_message, write_step
from ._owner import claim_in_process, process_owner, release_in_process
from ._schema import (
    MIGRATIONS,
    RUN_COLUMNS,
    SCHEMA_VERSION,
    dumps,
    run_from_row,
)
from ._sqlite_chain import PendingLink, move_links, sqlite_append
from ._sqlite_file import (
    JOURNAL_FILENAME,
    Transaction,
    connect,
    connect_read_only,
    journal_errors,
    migrate,
    prepare_file,
)
from ._sqlite_operate import SQLiteReads
from ._sqlite_owners import check_rollback, recover, take_rollback
from ._sqlite_status import RunStatusCheck
from ._summaries import SUMMARY_METHODS, SQLiteRunSummaries

__all__ = ["JOURNAL_FILENAME", "MIGRATIONS", "SCHEMA_VERSION", "SQLiteJournal", "process_owner"]

_RESOLVE_MOVES = frozenset({"finish", "recorded"})
"""The records of a step's row whose content a resolution changes (``_sqlite_chain.py``)."""

_STORE_METHODS = tuple(
    name for name, value in vars(Journal).items() if callable(value) and not name.startswith("_")
)
"""The methods of the :class:`~reversi_core.journal.Journal` protocol."""


@journal_errors(_STORE_METHODS + APPROVAL_METHODS + SUMMARY_METHODS + ("recover_orphans",))
class SQLiteJournal(SQLiteReads, SQLiteApprovals, SQLiteRunSummaries):
    """The embedded journal (see the module docstring).

    Open with :meth:`open`. Safe to share between threads of one process; several
    processes may open the same data directory at once.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path, durability: Durability) -> None:
        self._conn = conn
        self._lock = threading.RLock()
        self.path = path
        self.location = str(path.parent)
        """The data directory, as :func:`~reversi_core.journal.open_journal` takes it."""
        self.durability = durability
        self._owner = process_owner()
        # next step number per run, as this handle last wrote it (checked by the primary key)
        self._seq_hint: dict[str, int] = {}
        # read-only steps begun under power durability and not finished (see _is_light)
        self._light: set[tuple[str, int]] = set()
        self._deferred = DeferredSteps()  # finished steps not yet written (defer_step)
        self._rollbacks: set[str] = set()  # the runs this handle rolls back
        self._status: RunStatusCheck | None = None  # reserve_step's, once the file is open

    # -- opening -----------------------------------------------------------------

    @classmethod
    def open(
        cls,
        data_dir: str | os.PathLike[str],
        *,
        durability: Durability | str = Durability.PROCESS,
        create: bool = True,
        busy_timeout: float = 30.0,
        read_only: bool = False,
    ) -> SQLiteJournal:
        """Open (and with ``create``, create) the journal in ``data_dir``.

        ``busy_timeout`` is how long, in seconds, a write waits for another process's.
        ``read_only`` opens an existing journal to read it and nothing else: no
        migration, no recovery, not a byte written (every write raises
        :class:`JournalError`); ``create`` is then not used. Raises :class:`JournalError`
        when the directory is missing (and ``create`` is false), unreadable, or holds
        something that is not a journal, and :class:`JournalVersionError` when the
        file's schema is newer than this build (or, ``read_only``, older).
        """
        durability = Durability(durability)
        if read_only:
            path = prepare_file(Path(data_dir), False, read_only=True)
            return cls(connect_read_only(path, busy_timeout), path, durability)
        path = prepare_file(Path(data_dir), create)
        conn = connect(path, durability, busy_timeout)
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
        journal._status = RunStatusCheck(conn, path)  # the connection has its -shm by now
        return journal

    def _tx(self, *, light: bool = False) -> Transaction:
        """One write transaction (``with self._tx() as c:``), committed at the end of the
        block and rolled back if it raises. ``light``: commit without waiting for the
        disk even under ``power`` durability (see :meth:`_is_light`). Deferred steps are
        written first, in a commit of their own."""
        if self._deferred:
            self.flush()
        return Transaction(self._conn, self._lock, light)

    def _reading(self) -> threading.RLock:
        """The lock, for a query of the journal, once the deferred steps are written."""
        if self._deferred:
            self.flush()
        return self._lock

    def _is_light(self, effect: str) -> bool:
        """Whether a step of ``effect`` is journaled without an fsync of its own.

        Under ``power`` durability, a read-only step (one commit, after it answered) is
        committed to the write-ahead log as under ``process`` durability: a crash of the
        process does not lose it, and the next step that writes (or a checkpoint) flushes them to
        the disk with its own fsync, as the log is one file written in order. Only a
        power cut right after reads can drop the record of those reads, which changed
        nothing and are never compensated; every step that can change something is on
        the disk before it runs.
        """
        return self.durability is Durability.POWER and effect == "read_only"

    def _migrate(self) -> None:
        with self._tx() as c:
            migrate(c, self.path)

    def _recover(self) -> None:
        with self._tx() as c:
            recover(c, self._event)

    def recover_orphans(self) -> None:
        """Recover what a process that is gone left behind, as an open does (JNL-1): each
        pending step of a dead owner becomes ``uncertain`` and each rollback lock of one
        is released, each with its event. For a handle held open for long (``reversi
        console``), which sees other processes die after it opened the journal. Raises
        :class:`~reversi_core.errors.JournalError` when the journal cannot be written."""
        self._recover()

    # -- runs --------------------------------------------------------------------

    def create_run(self, run_id: str, scope: list[str], label: str | None) -> RunRecord:
        with self._tx() as c:
            c.execute(
                "INSERT INTO runs (id, started_at, status, scope, label, chained, num) "
                "VALUES (?, ?, 'open', ?, ?, 1, (SELECT coalesce(max(num), 0) + 1 FROM runs))",
                (run_id, time.time(), json.dumps(sorted(scope)), label),
            )
        return self.get_run(run_id)

    def get_run(self, run_id: str) -> RunRecord:
        with self._reading():
            row = self._conn.execute(
                f"SELECT {RUN_COLUMNS} FROM runs r WHERE r.id = ?", (run_id,)
            ).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id!r} in {self.path}")
        return run_from_row(row)

    def list_runs(self) -> list[RunRecord]:
        with self._reading():
            rows = self._conn.execute(
                f"SELECT {RUN_COLUMNS} FROM runs r ORDER BY r.started_at, r.id"
            ).fetchall()
        return [run_from_row(r) for r in rows]

    # -- steps -------------------------------------------------------------------

    forward_key = staticmethod(step_idempotency_key)

    def _next_seq(self, c: sqlite3.Connection, run_id: str) -> int:
        row = c.execute(
            "SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE run_id = ?", (run_id,)
        ).fetchone()
        return int(row[0])

    def _require_run(self, c: sqlite3.Connection, run_id: str) -> str:
        row = c.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id!r} in {self.path}")
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
        with self._lock, self._tx() as c:  # the RLock: _tx takes it again
            self._require_run(c, run_id)
            # past every number this handle handed out, a read's in flight included
            seq = max(self._seq_hint.get(run_id, 0), self._next_seq(c, run_id))
            args_json, approval_json, error = dumps(args), dumps(approval), scrub(error)
            text = chain.rejected_content(
                tool, effect, permission, args_json, reason, now, error, approval_json
            )
            link = PendingLink(c, run_id, seq, "rejected", text)
            c.execute(
                "INSERT INTO steps (run_id, seq, tool, effect, permission, args, reason, state, "
                "idempotency_key, started_at, finished_at, error, approval, links) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'rejected', ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    seq,
                    tool,
                    effect,
                    permission,
                    args_json,
                    reason,
                    self.forward_key(run_id, seq),
                    now,
                    now,
                    error,
                    approval_json,
                    link.link,
                ),
            )
            link.commit(c)
            self._seq_hint[run_id] = seq + 1
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
        args_json = dumps(args)
        approval_json = dumps(approval)
        edges = sorted(set(requires))
        light = self._is_light(effect)
        text = chain.begin_content(
            tool, effect, permission, args_json, reason, self._owner, now, approval_json, edges
        )
        with self._lock:
            with self._tx(light=light) as c:
                for _attempt in range(2):
                    seq = self._seq_hint.get(run_id) or self._next_seq(c, run_id)
                    key = self.forward_key(run_id, seq)
                    link = PendingLink(c, run_id, seq, "begin", text)
                    try:
                        # one statement: insert only if the run exists and is open
                        cur = c.execute(
                            "INSERT INTO steps (run_id, seq, tool, effect, permission, args, reason, "
                            "state, idempotency_key, owner, started_at, approval, links) "
                            "SELECT ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ? "
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
                                link.link,
                                run_id,
                            ),
                        )
                    except sqlite3.IntegrityError:
                        # another handle wrote this step number meanwhile: recount, past
                        # the numbers this handle reserved for reads in flight, and retry
                        self._seq_hint[run_id] = max(seq + 1, self._next_seq(c, run_id))
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
                link.commit(c)
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
            raise UnknownRunError(f"no run {run_id!r} in {self.path}")
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
        values = (
            state.value,
            time.time(),
            dumps(result),
            scrub(error) if error else None,
            dumps(compensation),
            scrub(compensation_error) if compensation_error else None,
        )
        text = chain.finish_content(*values)
        with self._tx(light=light) as c:
            link = PendingLink(c, run_id, seq, "finish", text)
            cur = c.execute(
                "UPDATE steps SET state = ?, finished_at = ?, result = ?, error = ?, "
                "compensation = ?, compensation_error = ?, "
                "links = nullif(trim(coalesce(links, '') || ' ' || coalesce(?, '')), ''), "
                "head = CASE WHEN ? THEN NULL ELSE head END "
                "WHERE run_id = ? AND seq = ? AND state = 'pending'",
                (*values, link.link, link.tail, run_id, seq),
            )
            if cur.rowcount == 1:
                link.commit(c)
            else:
                # Another process decided this step was orphaned: keep the late outcome as
                # an event, do not overwrite what a person may already have resolved.
                self._event(c, run_id, seq, "late_outcome", {"state": state.value, "error": error})
        self._light.discard((run_id, seq))

    def reserve_step(self, run_id: str) -> int:
        with self._lock:
            if self._status is None:  # a read-only handle
                self._status = RunStatusCheck(self._conn, self.path)
            self._status.check(run_id)  # a query only after a commit (_sqlite_status)
            seq = self._seq_hint.get(run_id) or self._next_seq(self._conn, run_id)
            self._seq_hint[run_id] = seq + 1
        return seq

    def record_step(self, step: StepRecord) -> None:
        try:
            with self._tx(light=self._is_light(step.effect)) as c:
                write_step(c, step, step_row(step), strict=True)
        except sqlite3.IntegrityError:
            raise JournalError(taken_message(step)) from None

    def defer_step(self, step: StepRecord, on_lost: LostStep) -> None:
        with self._lock:
            full = self._deferred.add(step, on_lost)
        if full:
            self.flush()

    def flush(self) -> None:
        lost: list[tuple[StepRecord, LostStep, JournalError]] = []
        with self._lock:
            items = self._deferred.take()
            if not items:
                return
            light = all(self._is_light(step.effect) for step, _, _ in items)
            try:
                with self._tx(light=light) as c:
                    taken = DeferredSteps.write(c, items)
            except sqlite3.Error as exc:
                error = JournalError(f"journal {self.path}: {type(exc).__name__}: {exc}")
                lost = [(step, on_lost, error) for step, _, on_lost in items]
            else:
                lost = [
                    (step, on_lost, JournalError(taken_message(step))) for step, on_lost in taken
                ]
        for step, on_lost, error in lost:  # told outside the lock
            with contextlib.suppress(Exception):  # a failing report must not fail a write
                on_lost(step, error)

    def resolve_step(
        self,
        run_id: str,
        seq: int,
        applied: bool,
        result: dict[str, Any] | None,
        compensation: dict[str, Any] | None,
        compensation_error: str | None,
        decided_by: str | None = None,
    ) -> None:
        values = (
            dumps(result),
            dumps(compensation),
            scrub(compensation_error) if compensation_error else None,
        )
        by = scrub(decided_by) if decided_by else None
        with self._tx() as c:
            # the fields it changes are held by the step's finish (or recorded) record
            move_links(c, run_id, seq, _RESOLVE_MOVES)
            cur = c.execute(
                "UPDATE steps SET resolution = ?, result = coalesce(?, result), compensation = ?, "
                "compensation_error = ?, rollback_state = NULL, rollback_reason = NULL, "
                "resolved_by = ? WHERE run_id = ? AND seq = ?",
                ("applied" if applied else "not_applied", *values, by, run_id, seq),
            )
            if cur.rowcount == 1:
                text = chain.resolve_content(applied, *values, by)
                sqlite_append(c, run_id, seq, "resolve", text)
            self._event(c, run_id, seq, "resolved", {"applied": applied, "by": by})

    def begin_replay(self, run_id: str, seq: int) -> bool:
        with self._tx() as c:
            # one statement: record the replay only if the run is open and the step unresolved
            cur = c.execute(
                "INSERT INTO events (run_id, seq, at, kind, detail) "
                "SELECT ?, ?, ?, 'replay_started', '{}' "
                "WHERE (SELECT status FROM runs WHERE id = ?) = 'open' "
                "AND EXISTS (SELECT 1 FROM steps WHERE run_id = ? AND seq = ? "
                "AND state = 'uncertain' AND resolution IS NULL)",
                (run_id, seq, time.time(), run_id, run_id, seq),
            )
            return cur.rowcount == 1

    # -- rollback ----------------------------------------------------------------

    def start_rollback(self, run_id: str) -> RunRecord:
        key = (os.path.realpath(self.path), run_id)
        claim_in_process(key)
        try:
            with self._tx() as c:
                take_rollback(c, run_id, self._owner, str(self.path), self._event)
            record = self.get_run(run_id)
        except BaseException:
            release_in_process(key)
            raise
        with self._lock:
            self._rollbacks.add(run_id)
        return record

    def set_rollback_state(
        self, run_id: str, seq: int, state: RollbackState | None, reason: str | None
    ) -> None:
        with self._tx() as c:
            check_rollback(c, run_id, self._owner, str(self.path))
            values = (state.value if state else None, scrub(reason) if reason else None)
            cur = c.execute(
                "UPDATE steps SET rollback_state = ?, rollback_reason = ? WHERE run_id = ? AND seq = ?",
                (*values, run_id, seq),
            )
            if cur.rowcount == 1:
                text = chain.rollback_content(*values)
                sqlite_append(c, run_id, seq, "rollback_state", text)
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
                check_rollback(c, run_id, self._owner, str(self.path))
                c.execute(
                    "UPDATE runs SET status = ?, rollback_owner = NULL, rollback_finished_at = ? "
                    "WHERE id = ?",
                    (status.value, time.time(), run_id),
                )
                self._event(c, run_id, None, "rollback_finished", {"complete": complete})
        finally:
            with self._lock:
                self._rollbacks.discard(run_id)
            release_in_process((os.path.realpath(self.path), run_id))

    def allow_overwrite(self, run_id: str, seq: int, decision: dict[str, Any]) -> None:
        text = dumps(decision)
        with self._tx() as c:
            changed = c.execute(
                "UPDATE steps SET overwrite = ? WHERE run_id = ? AND seq = ?",
                (text, run_id, seq),
            ).rowcount
            if not changed:
                raise JournalError(f"run {run_id!r} has no step {seq}")
            sqlite_append(c, run_id, seq, "overwrite", chain.overwrite_content(text))
            self._event(c, run_id, seq, "overwrite_allowed", decision)

    # -- events ------------------------------------------------------------------

    def _event(
        self, c: sqlite3.Connection, run_id: str, seq: int | None, kind: str, detail: dict[str, Any]
    ) -> None:
        c.execute(
            "INSERT INTO events (run_id, seq, at, kind, detail) VALUES (?, ?, ?, ?, ?)",
            (run_id, seq, time.time(), kind, dumps(detail)),
        )

    def add_event(self, run_id: str, seq: int | None, kind: str, detail: dict[str, Any]) -> None:
        with self._tx() as c:
            if run_id in self._rollbacks:  # an event of this handle's rollback
                check_rollback(c, run_id, self._owner, str(self.path))
            self._event(c, run_id, seq, kind, detail)

    def close(self) -> None:
        with self._lock:
            self.flush()
            self._conn.close()
            if self._status is not None:  # after the connection: see WalIndex
                self._status.close()

    def __enter__(self) -> SQLiteJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
