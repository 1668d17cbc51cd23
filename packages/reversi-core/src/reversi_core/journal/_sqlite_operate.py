"""What an operator asks of the SQLite journal: reading steps and events, verifying a
run's chain, reading the chain for an export, deleting a run that retention let go,
checking that the journal can be written.

:class:`SQLiteReads` is a half of :class:`~reversi_core.journal.sqlite.SQLiteJournal`.
A verification reads the chain and the steps inside one read transaction (``BEGIN``
... ``COMMIT``): in WAL mode that is one snapshot, so a gateway writing at the same
moment cannot make a run look tampered with.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import JournalCorruptError, JournalError, UnknownRunError
from ._base import StepRecord
from ._chain import ChainRecord, Verification, corrupt_verdict, verify_chain
from ._schema import STEP_COLUMNS, step_from_row
from ._sqlite_chain import (
    LINK_COLUMNS,
    SEQ_MASK,
    assemble,
    chain_rows,
    key_range,
    row_records,
    run_edges,
)

__all__ = ["RUN_TABLES", "SQLiteReads"]

RUN_TABLES = ("events", "edges", "steps")
"""The tables holding a run's rows by ``run_id`` besides ``runs`` (deleted after the run's
range of ``chain``, in this order)."""


class SQLiteReads:
    """Reads and operator's writes of the SQLite journal (see the module docstring)."""

    if TYPE_CHECKING:  # what SQLiteJournal brings
        _conn: sqlite3.Connection
        _lock: threading.RLock
        path: Path
        location: str

        def _reading(self) -> threading.RLock: ...
        def _tx(self, *, light: bool = False) -> Any: ...

    def _steps(self, run_id: str) -> list[StepRecord]:
        rows = self._conn.execute(
            f"SELECT {STEP_COLUMNS} FROM steps WHERE run_id = ? ORDER BY seq",  # noqa: S608 - constant columns
            (run_id,),
        ).fetchall()
        edges: dict[int, list[int]] = {}
        for seq, req in self._conn.execute(
            "SELECT seq, requires_seq FROM edges WHERE run_id = ? ORDER BY seq, requires_seq",
            (run_id,),
        ):
            edges.setdefault(seq, []).append(req)
        return [step_from_row(r, edges.get(r[1], [])) for r in rows]

    def list_steps(self, run_id: str) -> list[StepRecord]:
        with self._reading():
            return self._steps(run_id)

    def get_step(self, run_id: str, seq: int) -> StepRecord:
        with self._reading():
            row = self._conn.execute(
                f"SELECT {STEP_COLUMNS} FROM steps WHERE run_id = ? AND seq = ?",  # noqa: S608 - constant columns
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
        return step_from_row(row, reqs)

    def _chain(self, run_id: str) -> tuple[bool, tuple[int, str], list[ChainRecord], str | None]:
        """``(chained, head, records, misplaced)``: the run's chain, from the records of its
        range of keys in ``chain`` and the links of its step rows (``_sqlite_chain.py``),
        the head its row keeps, and what is wrong with the first record whose ``run_id``
        or ``seq`` does not agree with its key, or link that is malformed (``None``)."""
        c = self._conn
        found = chain_rows(c, run_id)
        if found is None:
            raise UnknownRunError(f"no run {run_id!r} in {self.path}")
        chained, head, rows = found
        misplaced = None
        for r in rows:
            if r[0] != run_id or r[1] != r[7] & SEQ_MASK:
                misplaced = (
                    f"record {r[7] & SEQ_MASK} of the run's range is stored as record {r[1]} "
                    f"of run {r[0]!r} (moved behind the journal)"
                )
                break
        linked, bad = row_records(
            run_id,
            c.execute(
                f"SELECT {LINK_COLUMNS} FROM steps WHERE run_id = ? AND links IS NOT NULL "  # noqa: S608 - constant columns
                "ORDER BY seq",
                (run_id,),
            ).fetchall(),
            run_edges(c, run_id),
        )
        records, twice = assemble(run_id, [ChainRecord(*r[:7]) for r in rows], linked)
        return chained, head, records, misplaced or bad or twice

    def run_chain(self, run_id: str) -> list[ChainRecord]:
        with self._reading():
            self._conn.execute("BEGIN")  # one snapshot for the chain table and the rows
            try:
                return self._chain(run_id)[2]
            finally:
                self._conn.execute("COMMIT")

    def verify_run(self, run_id: str) -> Verification:
        with self._reading():
            self._conn.execute("BEGIN")  # one snapshot for the chain and the steps
            try:
                chained, head, records, misplaced = self._chain(run_id)
                try:
                    steps = self._steps(run_id)
                except JournalCorruptError as exc:
                    return corrupt_verdict(run_id, records, exc)
                late = None if chained else self._late(run_id)
            finally:
                self._conn.execute("COMMIT")
        if misplaced is not None:
            return Verification(run_id, "tampered", records=len(records), what=misplaced)
        return verify_chain(run_id, chained, records, steps, head if chained else None, late)

    def _late(self, run_id: str) -> str | None:
        """Why a run marked as unchained was made after the chain's migration: its number
        (``runs.num``) is not below the first run's made under the chain (``chain_start``)."""
        row = self._conn.execute(
            "SELECT r.num, s.first_num FROM runs r, chain_start s WHERE r.id = ?", (run_id,)
        ).fetchone()
        if row is None or row[0] is None or row[0] < row[1]:
            return None
        return f"its number {row[0]} is not below {row[1]}, the first run made under the chain"

    def delete_run(self, run_id: str, statuses: Collection[str]) -> bool:
        with self._tx() as c:
            row = c.execute("SELECT status, num FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None or row[0] not in statuses:
                return False
            first, last = key_range(row[1])
            c.execute("DELETE FROM chain WHERE id BETWEEN ? AND ?", (first, last))
            for table in RUN_TABLES:
                c.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))  # noqa: S608 - constant table names
            c.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return True

    def list_events(self, run_id: str) -> list[dict[str, Any]]:
        with self._reading():
            rows = self._conn.execute(
                "SELECT seq, at, kind, detail FROM events WHERE run_id = ? ORDER BY id", (run_id,)
            ).fetchall()
        return [{"step": r[0], "at": r[1], "kind": r[2], "detail": json.loads(r[3])} for r in rows]

    def check_writable(self) -> None:
        with self._lock:
            try:  # takes the write lock and lets it go: nothing is written
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.execute("ROLLBACK")
            except sqlite3.Error as exc:
                raise JournalError(
                    f"journal {self.location} cannot be written ({exc}); a gateway needs a "
                    "journal it can write"
                ) from None
