"""Byte-level helpers: copying between descriptors, comparing, and replacing a file atomically.

Everything here works on descriptors and on names inside a directory descriptor
(https://docs.python.org/3/library/os.html#dir-fd), never on path strings.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Callable

from ._paths import NAME_MAX

__all__ = [
    "CHUNK",
    "apply_metadata",
    "copy_fd",
    "same_content",
    "trim_name",
    "write_all",
    "write_atomically",
]

CHUNK = 1024 * 1024
"""Bytes read or written per system call when copying or comparing."""

_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def trim_name(name: str, limit: int) -> str:
    """Shorten ``name`` by whole characters until it encodes to at most ``limit`` bytes."""
    while len(os.fsencode(name)) > limit:
        name = name[:-1]
    return name


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def copy_fd(src: int, dst: int) -> int:
    """Copy all of ``src`` from offset 0 to ``dst``'s current position; returns the byte count."""
    offset = 0
    while True:
        chunk = os.pread(src, CHUNK, offset)
        if not chunk:
            return offset
        write_all(dst, chunk)
        offset += len(chunk)


def same_content(a: int, b: int) -> bool:
    """True when the regular files ``a`` and ``b`` have equal permission bits and bytes."""
    sa, sb = os.fstat(a), os.fstat(b)
    if stat.S_IMODE(sa.st_mode) != stat.S_IMODE(sb.st_mode) or sa.st_size != sb.st_size:
        return False
    offset = 0
    while True:
        ca = os.pread(a, CHUNK, offset)
        cb = os.pread(b, CHUNK, offset)
        if ca != cb:
            return False
        if not ca:
            return True
        offset += len(ca)


def apply_metadata(fd: int, like: os.stat_result, *, times: bool, setid: bool = True) -> None:
    """Give the file ``fd`` the owner (when permitted), permission bits and, if ``times``,
    the access and modification times of ``like``.

    With ``setid`` false the set-user-ID and set-group-ID bits are not copied. The owner
    comes first because changing it clears those bits.
    """
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (like.st_uid, like.st_gid):
        # Unprivileged, the file stays ours: all an unprivileged undo can do.
        with contextlib.suppress(PermissionError):
            os.fchown(fd, like.st_uid, like.st_gid)
    mode = stat.S_IMODE(like.st_mode)
    if not setid:
        mode &= ~(stat.S_ISUID | stat.S_ISGID)
    os.fchmod(fd, mode)
    if times:
        os.utime(fd, ns=(like.st_atime_ns, like.st_mtime_ns))


def write_atomically(
    dir_fd: int,
    name: str,
    fill: Callable[[int], object],
    *,
    like: os.stat_result | None,
    times: bool = False,
    setid: bool = True,
) -> os.stat_result:
    """Replace (or create) ``name`` in ``dir_fd`` with what ``fill(fd)`` writes, atomically.

    The bytes go to a new temporary file in the same directory, which is flushed to disk
    and then renamed over ``name`` with ``os.replace``, so a reader sees the old file or
    the new one, never a mixture. With ``like``, the new file takes its owner (when
    permitted), permission bits (set-ID bits only if ``setid``) and, if ``times``,
    timestamps; without it, it is created with mode ``0o666`` less the umask. Returns
    the new file's ``stat``. On any error the temporary file is removed and ``name`` is
    left as it was; the error propagates.
    """
    temp = f".{trim_name(name, NAME_MAX - 40)}.{uuid.uuid4().hex[:16]}.reversi-tmp"
    fd = os.open(temp, _NEW_FILE_FLAGS, 0o600 if like is not None else 0o666, dir_fd=dir_fd)
    try:
        try:
            fill(fd)
            if like is not None:
                apply_metadata(fd, like, times=times, setid=setid)
            os.fsync(fd)
            result = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    sync_dir(dir_fd)
    return result


def sync_dir(dir_fd: int) -> None:
    """Flush a directory's entries to disk; best effort (some file systems refuse)."""
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)
