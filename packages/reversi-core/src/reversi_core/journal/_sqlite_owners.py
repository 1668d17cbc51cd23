"""Who owns what in the SQLite journal: crash recovery, and a rollback's lock.

The owner of a pending step or of a rollback is the storage-neutral ``host:pid:start``
of ``_owner.py``, judged by :func:`~._owner.owner_alive` (every process sharing a SQLite
file runs on one host). Each function runs inside one of the journal's write
transactions (``BEGIN IMMEDIATE``): no other process writes between its check and its
write.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

from ..errors import RollbackInProgressError, UnknownRunError
from ._chain import recovered_content
from ._owner import owner_alive, owner_pid, taken_over
from ._sqlite_chain import sqlite_append

__all__ = ["check_rollback", "recover", "take_rollback"]

Event = Callable[[sqlite3.Connection, str, "int | None", str, dict[str, Any]], None]
"""The journal's ``_event(conn, run_id, seq, kind, detail)``."""


def recover(c: sqlite3.Connection, event: Event) -> None:
    """Every pending step of a dead owner becomes ``uncertain`` (JNL-1) and every rollback
    lock of one is released (the run is ``rollback_incomplete``), each with its event."""
    now = time.time()
    for run_id, seq, owner in c.execute(
        "SELECT run_id, seq, owner FROM steps WHERE state = 'pending'"
    ).fetchall():
        if owner_alive(owner):
            continue
        error = (
            f"the process that ran this call (pid {owner_pid(owner)}) stopped before "
            "recording its outcome; the call may or may not have taken effect"
        )
        c.execute(
            "UPDATE steps SET state = 'uncertain', finished_at = ?, error = ? "
            "WHERE run_id = ? AND seq = ? AND state = 'pending'",
            (now, error, run_id, seq),
        )
        sqlite_append(c, run_id, seq, "recovered", recovered_content(now, error))
        event(c, run_id, seq, "recovered", {"from": "pending", "to": "uncertain"})
    for run_id, owner in c.execute(
        "SELECT id, rollback_owner FROM runs WHERE status = 'rolling_back'"
    ).fetchall():
        if not owner_alive(owner):
            c.execute(
                "UPDATE runs SET status = 'rollback_incomplete', rollback_owner = NULL WHERE id = ?",
                (run_id,),
            )
            event(c, run_id, None, "rollback_abandoned", {"owner": owner})


def take_rollback(c: sqlite3.Connection, run_id: str, me: str, where: str, event: Event) -> None:
    """Close the run to new calls and record ``me`` as its rollback's owner, or refuse.

    Raises :class:`~reversi_core.errors.RollbackInProgressError` naming the pid of a live
    process that holds it, :class:`~reversi_core.errors.JournalError` for an unknown run.
    """
    row = c.execute("SELECT status, rollback_owner FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise UnknownRunError(f"no run {run_id!r} in {where}")
    status, owner = row
    if status == "rolling_back" and owner != me and owner_alive(owner):
        raise RollbackInProgressError(
            f"run {run_id} is being rolled back by another process (pid {owner_pid(owner)}); "
            "this rollback refused to run at the same time. Try again when it ends."
        )
    c.execute(
        "UPDATE runs SET status = 'rolling_back', rollback_owner = ?, "
        "rollback_started_at = coalesce(rollback_started_at, ?) WHERE id = ?",
        (me, time.time(), run_id),
    )
    event(c, run_id, None, "rollback_started", {"owner": me})


def check_rollback(c: sqlite3.Connection, run_id: str, me: str, where: str) -> None:
    """Raise :func:`~._owner.taken_over`'s :class:`~reversi_core.errors.RollbackInProgressError`
    unless the run's rollback is running and ``me`` owns it (a write of that rollback is
    about to be made); :class:`~reversi_core.errors.JournalError` for an unknown run."""
    row = c.execute("SELECT status, rollback_owner FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise UnknownRunError(f"no run {run_id!r} in {where}")
    if row[0] != "rolling_back" or row[1] != me:
        raise taken_over(run_id, row[0], row[1], me)
