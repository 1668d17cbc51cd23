"""What an operator asks of the PostgreSQL journal: verifying a run's chain, reading the
chain for an export, deleting a run that retention let go; and the chain's appends.

:class:`PgReads` is a half of :class:`~reversi_core.journal.postgres.PostgresJournal`.
A verification reads the run's row (with the chain's head), its chain and its steps in
one ``REPEATABLE READ`` read-only transaction: one snapshot, so a gateway writing at the
same moment cannot make a run look tampered with
(https://www.postgresql.org/docs/current/transaction-iso.html#XACT-REPEATABLE-READ).
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ..errors import JournalCorruptError, UnknownRunError
from ._base import StepRecord
from ._chain import (
    CHAIN_COLUMNS,
    CHAIN_SCHEMA,
    ChainRecord,
    Verification,
    corrupt_verdict,
    verify_chain,
)
from ._pg_schema import MIGRATIONS_TABLE
from ._pg_sql import CHAIN_APPEND

__all__ = ["RUN_TABLES", "PgReads"]

RUN_TABLES = ("chain", "events", "edges", "steps")

LATE_MARGIN = 300.0
"""Seconds after the chain's migration within which a run's start may still be one made
before it (another host's clock ahead): a run marked unchained is reported after that."""
"""The tables holding a run's rows besides ``runs`` (deleted first, in this order)."""


class PgReads:
    """Chain reads and retention's deletes of the PostgreSQL journal (see the module docstring)."""

    if TYPE_CHECKING:  # what PostgresJournal brings
        _lock: threading.RLock
        _conn: Any
        location: str

        def _c(self) -> Any: ...
        def _tx(self) -> Any: ...
        def _reading(self) -> Any: ...
        def list_steps(self, run_id: str) -> list[StepRecord]: ...

    def _append(self, run_id: str, seq: int, kind: str, text: str) -> None:
        """Append a record to the run's chain, in the caller's transaction (under the lock)."""
        self._conn.execute(
            CHAIN_APPEND, {"run": run_id, "step": seq, "kind": kind, "content": text}
        )

    def _chain(self, c: Any, run_id: str) -> tuple[bool, tuple[int, str], list[ChainRecord]]:
        row = c.execute(
            "SELECT chained, chain_seq, chain_hash FROM runs WHERE id = %s", [run_id]
        ).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id!r} in {self.location}")
        records = [
            ChainRecord(*r)
            for r in c.execute(
                f"SELECT {CHAIN_COLUMNS} FROM chain WHERE run_id = %s ORDER BY seq",  # noqa: S608 - constant columns
                [run_id],
            )
        ]
        return bool(row[0]), (int(row[1]), str(row[2])), records

    def run_chain(self, run_id: str) -> list[ChainRecord]:
        with self._lock:
            return self._chain(self._reading(), run_id)[2]

    def verify_run(self, run_id: str) -> Verification:
        with self._lock:
            c = self._reading()
            c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                chained, head, records = self._chain(c, run_id)
                try:
                    steps = self.list_steps(run_id)
                except JournalCorruptError as exc:
                    return corrupt_verdict(run_id, records, exc)
                late = None if chained else self._late(c, run_id)
            finally:
                c.execute("COMMIT")
        return verify_chain(run_id, chained, records, steps, head if chained else None, late)

    def _late(self, c: Any, run_id: str) -> str | None:
        """Why a run marked as unchained was made after the chain's migration: it started
        more than :data:`LATE_MARGIN` seconds after schema 3 was applied (the migrations
        table's ``applied_at``; the margin is for the clocks of other hosts)."""
        row = c.execute(
            f"SELECT r.started_at, m.applied_at FROM runs r, {MIGRATIONS_TABLE} m "  # noqa: S608 - a constant table name
            "WHERE r.id = %s AND m.version = %s",
            [run_id, CHAIN_SCHEMA],
        ).fetchone()
        if row is None or row[0] <= row[1] + LATE_MARGIN:
            return None
        return (
            f"it started at {row[0]:.0f}, after schema {CHAIN_SCHEMA} (the chain) was applied "
            f"at {row[1]:.0f}"
        )

    def delete_run(self, run_id: str, statuses: Collection[str]) -> bool:
        with self._lock, self._tx():
            c = self._conn
            row = c.execute("SELECT status FROM runs WHERE id = %s FOR UPDATE", [run_id]).fetchone()
            if row is None or row[0] not in statuses:
                return False
            for table in RUN_TABLES:
                c.execute(f"DELETE FROM {table} WHERE run_id = %s", [run_id])  # noqa: S608 - constant table names
            c.execute("DELETE FROM runs WHERE id = %s", [run_id])
        return True
