"""Who owns what in the PostgreSQL journal, whether the owner lives, and crash recovery.

An owner is the storage-neutral text ``host:pid:start`` (``_owner.py``). Every
connection of the PostgreSQL journal holds a shared session advisory lock on
``advisory_key("owner", owner)`` for as long as it is open
(https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS); the
server lets go of it when the connection ends, however the process ended.

:func:`owner_dead` decides:

- an owner of another host, which cannot be asked, by its lock: it is dead when
  ``pg_try_advisory_xact_lock`` on its key succeeds, that is, when no session of it is
  connected. A call still running on another host is never taken for orphaned while its
  gateway is connected.
- an owner of this host by its pid and start time AND its lock: dead only when no
  process of that pid and start time is seen here and no session holds its lock.
  Containers on the host's network share its host name but not its pid namespace, so a
  live process of another container looks gone to the pid check alone; its lock says it
  is connected. The session of a process just killed (``kill -9``) ends a moment after
  it, so its lock is waited for, up to :data:`DEAD_PID_GRACE` seconds.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from ..errors import RollbackInProgressError, UnknownRunError
from ._chain import recovered_content
from ._owner import owner_alive, owner_host, owner_pid, taken_over
from ._pg_conn import advisory_key

__all__ = [
    "busy_error",
    "check_rollback",
    "owner_dead",
    "reclaim_rollback",
    "recover",
    "take_rollback",
]

Event = Callable[[Any, str, "int | None", str, dict[str, Any]], None]
"""The journal's ``_event(conn, run_id, seq, kind, detail)``."""

DEAD_PID_GRACE = 1.0
"""Seconds :func:`owner_dead` waits for the owner lock of a process of this host whose
pid is gone (its server session ends a moment after a ``kill -9``) before it takes the
process for one of another pid namespace, alive."""

_POLL = 0.01


def owner_dead(c: Any, owner: str | None, me: str) -> bool:
    """Whether ``owner`` is gone; ``me`` is the asking process's owner (never dead).

    Call inside a transaction on ``c``: the probe's lock is held until it ends, so the
    owner cannot come back between the probe and what the caller does about it.
    """
    if owner == me:
        return False
    if not owner or owner_pid(owner) == "?" or not owner_pid(owner).isdigit():
        return True  # malformed: no process can be waiting on it
    key = advisory_key("owner", owner)

    def free() -> bool:
        return bool(c.execute("SELECT pg_try_advisory_xact_lock(%s)", [key]).fetchone()[0])

    if owner_host(owner) != socket.gethostname():
        return free()
    if owner_alive(owner):
        return False
    deadline = time.monotonic() + DEAD_PID_GRACE
    while not free():
        if time.monotonic() >= deadline:
            return False  # connected: a process of another pid namespace, alive
        time.sleep(_POLL)
    return True


def recover(c: Any, me: str, event: Event, append: Callable[[str, int, str, str], None]) -> None:
    """Inside a transaction on ``c``: every pending step of a dead owner becomes
    ``uncertain`` (JNL-1) and every rollback lock of one is released, each with its event.

    Two processes recovering at once do it once: the second's ``UPDATE ... WHERE state
    = 'pending'`` waits for the first's row locks and then finds nothing to change.
    """
    now = time.time()
    owners = {
        r[0]
        for r in c.execute(
            "SELECT DISTINCT owner FROM steps WHERE state = 'pending' UNION "
            "SELECT DISTINCT rollback_owner FROM runs WHERE status = 'rolling_back'"
        )
    }
    for owner in sorted((o for o in owners if owner_dead(c, o, me)), key=str):
        error = (
            f"the process that ran this call (pid {owner_pid(owner)}) stopped before "
            "recording its outcome; the call may or may not have taken effect"
        )
        for run_id, seq in c.execute(
            "UPDATE steps SET state = 'uncertain', finished_at = %s, error = %s "
            "WHERE state = 'pending' AND owner IS NOT DISTINCT FROM %s::text "
            "RETURNING run_id, seq",
            [now, error, owner],
        ).fetchall():
            append(run_id, seq, "recovered", recovered_content(now, error))
            event(c, run_id, seq, "recovered", {"from": "pending", "to": "uncertain"})
        for (run_id,) in c.execute(
            "UPDATE runs SET status = 'rollback_incomplete', rollback_owner = NULL "
            "WHERE status = 'rolling_back' AND rollback_owner IS NOT DISTINCT FROM %s::text "
            "RETURNING id",
            [owner],
        ).fetchall():
            event(c, run_id, None, "rollback_abandoned", {"owner": owner})


def busy_error(run_id: str, owner: str | None, me: str) -> RollbackInProgressError:
    """The refusal of a second rollback of ``run_id``, naming who holds it (RB-9)."""
    who = (
        f"another journal handle of this process (pid {os.getpid()})"
        if owner == me
        else f"another process (pid {owner_pid(owner)}) on host {owner_host(owner)}"
    )
    return RollbackInProgressError(
        f"run {run_id} is being rolled back by {who}; this rollback refused to run at "
        "the same time (it does not wait). Try again when it ends."
    )


def take_rollback(c: Any, run_id: str, me: str, lock_key: int, where: str, event: Event) -> None:
    """Close the run to new calls and record ``me`` as its rollback's owner, or refuse.

    The run's row ``FOR UPDATE`` orders rollbacks starting at once: the second waits for
    the first's commit and then sees its owner, alive, and refuses. The session advisory
    lock ``lock_key``, taken under the row lock and kept past the commit until
    ``finish_rollback``, refuses a second journal handle of this same process (same
    owner, another session). Raises :class:`RollbackInProgressError` or
    :class:`~reversi_core.errors.JournalError` (an unknown run).
    """
    locked = False
    try:
        with c.transaction():
            row = c.execute(
                "SELECT status, rollback_owner FROM runs WHERE id = %s FOR UPDATE", [run_id]
            ).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in {where}")
            status, owner = row
            live = status == "rolling_back" and not owner_dead(c, owner, me)
            if live and owner != me:
                raise busy_error(run_id, owner, me)
            locked = bool(c.execute("SELECT pg_try_advisory_lock(%s)", [lock_key]).fetchone()[0])
            if not locked:  # held by another session: another handle of this process
                raise busy_error(run_id, me, me)
            c.execute(
                "UPDATE runs SET status = 'rolling_back', rollback_owner = %s, "
                "rollback_started_at = coalesce(rollback_started_at, %s) WHERE id = %s",
                [me, time.time(), run_id],
            )
            event(c, run_id, None, "rollback_started", {"owner": me})
    except BaseException:
        if locked:  # a session lock outlives its transaction's rollback: let it go
            with contextlib.suppress(Exception):
                c.execute("SELECT pg_advisory_unlock(%s)", [lock_key])
        raise


def check_rollback(c: Any, run_id: str, me: str, where: str) -> None:
    """Inside a transaction on ``c``: raise unless ``me`` still owns ``run_id``'s rollback.

    Reads the run's row ``FOR SHARE``, so that no process takes the rollback over between
    this check and the commit of the write it guards (a takeover's ``UPDATE`` waits for
    it). Raises :func:`~._owner.taken_over`'s
    :class:`~reversi_core.errors.RollbackInProgressError`, or
    :class:`~reversi_core.errors.JournalError` for an unknown run.
    """
    row = c.execute(
        "SELECT status, rollback_owner FROM runs WHERE id = %s FOR SHARE", [run_id]
    ).fetchone()
    if row is None:
        raise UnknownRunError(f"no run {run_id!r} in {where}")
    if row[0] != "rolling_back" or row[1] != me:
        raise taken_over(run_id, row[0], row[1], me)


def reclaim_rollback(c: Any, run_id: str, me: str, lock_key: int) -> RollbackInProgressError | None:
    """On a new connection, take ``run_id``'s rollback back: ``None`` once done, else why not.

    The session advisory lock ``lock_key`` went with the lost connection. The run's row
    is read ``FOR UPDATE``; when it still names ``me`` as the owner of a rollback that is
    running, the lock is taken again. Otherwise (another process took the rollback over,
    or another journal handle of this process holds the lock now) the error to raise on
    every later write of this rollback is returned.
    """
    with c.transaction():
        row = c.execute(
            "SELECT status, rollback_owner FROM runs WHERE id = %s FOR UPDATE", [run_id]
        ).fetchone()
        status, owner = row if row is not None else (None, None)
        if status != "rolling_back" or owner != me:
            return taken_over(run_id, status, owner, me)
        if not c.execute("SELECT pg_try_advisory_lock(%s)", [lock_key]).fetchone()[0]:
            return taken_over(run_id, status, me, me)
    return None
