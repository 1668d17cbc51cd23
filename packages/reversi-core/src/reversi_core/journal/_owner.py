"""Who owns a pending step or a rollback lock, and whether that owner still lives.

Storage-neutral: an owner is the text ``host:pid:start``, where ``start`` is the
process's start time in clock ticks since boot (``/proc/PID/stat``), so that a reused pid
is not mistaken for the owner. Any journal store records the owner of each pending step
and of each rollback lock as this text, and asks :func:`owner_alive` when it must decide
whether a step was orphaned or a lock abandoned. An owner on another host is always
taken to be alive: it cannot be checked from here, and a guess could steal a call that is
still running.
"""

from __future__ import annotations

import os
import socket

__all__ = ["owner_alive", "owner_pid", "process_owner"]


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
