"""Who owns a pending step or a rollback lock, and whether that owner still lives.

Storage-neutral: an owner is the text ``host:pid:start``, where ``start`` is the
process's start time in clock ticks since boot (``/proc/PID/stat``), so that a reused pid
is not mistaken for the owner. Any journal store records the owner of each pending step
and of each rollback lock as this text, and asks :func:`owner_alive` when it must decide
whether a step was orphaned or a lock abandoned. An owner on another host is always
taken to be alive: it cannot be checked from here, and a guess could steal a call that is
still running.

A rollback is owned the same way, and the storage-neutral rules of its lock live here
too: the set of the rollbacks running in this process (:func:`claim_in_process`), and
the refusal of a write by a rollback that another process took over
(:func:`taken_over`).
"""

from __future__ import annotations

import os
import socket
import threading

from ..errors import RollbackInProgressError

__all__ = [
    "claim_in_process",
    "owner_alive",
    "owner_host",
    "owner_pid",
    "process_owner",
    "release_in_process",
    "taken_over",
]

# Rollbacks running in this process, by (journal identity, run id). A rollback's lock in
# the journal names its owner by process, so two rollbacks of one run inside one process
# (two tasks of a gateway, two journal handles) would both pass it; this set refuses the
# second one. A journal's identity is its file's real path (SQLite) or its location and
# schema (PostgreSQL).
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


def owner_alive(owner: str | None) -> bool:
    """True unless ``owner`` (``host:pid:start``) is a process of this host that is gone.

    A pid now used by a process with another start time counts as gone; a malformed or
    missing owner counts as gone too (nothing can be waiting on it).
    """
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


def owner_pid(owner: str | None) -> str:
    """The pid part of ``owner``, for messages (``"?"`` when there is none)."""
    if not owner:
        return "?"
    parts = owner.rsplit(":", 2)
    return parts[1] if len(parts) == 3 else "?"


def owner_host(owner: str | None) -> str:
    """The host part of ``owner`` (``"?"`` when there is none)."""
    return str(owner).rsplit(":", 2)[0] if owner and owner.count(":") >= 2 else "?"


def claim_in_process(key: tuple[str, str]) -> None:
    """Mark ``key`` (journal identity, run id) as rolling back in this process, or raise
    :class:`~reversi_core.errors.RollbackInProgressError` when it is already (RB-9)."""
    with _ACTIVE_LOCK:
        if key in _ACTIVE_ROLLBACKS:
            raise RollbackInProgressError(
                f"run {key[1]} is being rolled back by this process (pid {os.getpid()}) "
                "already; this rollback refused to run at the same time (it does not "
                "wait). Try again when it ends."
            )
        _ACTIVE_ROLLBACKS.add(key)


def release_in_process(key: tuple[str, str]) -> None:
    """Forget ``key`` (:func:`claim_in_process`); nothing happens if it was not claimed."""
    with _ACTIVE_LOCK:
        _ACTIVE_ROLLBACKS.discard(key)


def taken_over(
    run_id: str, status: str | None, owner: str | None, me: str
) -> RollbackInProgressError:
    """The refusal of a write by the rollback of ``run_id`` that ``me`` no longer owns.

    ``status`` and ``owner`` are the run's as the journal holds them now: another
    process's rollback (it judged ``me`` gone and took the rollback over), one that has
    ended since (no owner), or ``me`` again when another journal handle of this process
    holds the run's lock (PostgreSQL, after a lost connection).
    """
    if status == "rolling_back" and owner == me:
        who = f"another journal handle of this process (pid {os.getpid()})"
    elif status == "rolling_back":
        who = f"another process (pid {owner_pid(owner)}) on host {owner_host(owner)}"
    elif status is None:
        who = "nobody: the run is no longer in the journal"
    else:
        who = f"another process, which has ended it since (the run is {status} now)"
    return RollbackInProgressError(
        f"run {run_id}: this rollback was taken over by {who}, after this process was "
        "judged gone (its connection to the journal was lost, or its pid was taken for a "
        "dead process's); it journals nothing more and starts no more compensations. A "
        "compensation it had started may have run: the rollback that took over runs it "
        f"again under the same idempotency key. See: reversi show {run_id}"
    )
