"""What a change left at a path, and whether the path still holds it when the undo comes.

A compensation of fs puts back a prior state: the backup of a file that ``fs.write_file``
replaced, the file ``fs.delete_file`` moved away, the file ``fs.move_file`` moved. If
someone changed the same path after the call (edited the file, made a directory there,
created a new file where the deleted one was), putting the prior state back would
destroy their change. So each forward call records what it left (:class:`Left`: a file
with the SHA-256 of its bytes and its permission bits, or nothing at all), its
compensation receives that record, and :func:`what_changed` compares it with what the
path holds now. When they differ, the compensation raises :func:`changed_since`, a
``ToolError`` with code ``changed_since`` whose message names what changed, unless a
person allowed the step to overwrite (``CallContext.overwrite``; docs/engine.md, RB-10).

The comparison reads the file through a descriptor of its directory, as every fs
operation does, and never follows a link. Between the comparison and the restore there
is a window of a few system calls in which another process could still write: POSIX
offers no compare-and-replace of a file, so a change made inside that window is lost.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from typing import Literal

from reversi_core.errors import ToolError

from ._files import CHUNK
from ._paths import describe, kind, lstat, open_regular

__all__ = ["Left", "changed_since", "content_sha256", "standing", "what_changed"]

_WHAT_STANDS = {
    "file": "a file",
    "dir": "a directory",
    "symlink": "a symbolic link",
    "other": "a fifo, socket or device",
}


@dataclass(frozen=True)
class Left:
    """What a forward call left at a path: ``"file"`` (its SHA-256 and mode) or ``"absent"``.

    ``sha256`` is ``None`` when the file could not be read at the time (a moved file
    without read permission): then only its type and permission bits are compared.
    """

    kind: Literal["file", "absent"]
    sha256: str | None = None
    mode: int | None = None


def content_sha256(fd: int) -> str:
    """The SHA-256 (hex) of every byte of the open file ``fd``, read from offset 0."""
    digest = hashlib.sha256()
    offset = 0
    while True:
        chunk = os.pread(fd, CHUNK, offset)
        if not chunk:
            return digest.hexdigest()
        digest.update(chunk)
        offset += len(chunk)


def standing(st: os.stat_result, where: str) -> str:
    """``"a directory now stands at the path"`` (or a file, a link, a fifo...) for ``st``."""
    return f"{_WHAT_STANDS[kind(st)]} now stands at {where}"


def what_changed(
    dir_fd: int, name: str, path: str, left: Left, *, where: str = "the path"
) -> str | None:
    """Words naming how ``name`` in ``dir_fd`` departs from ``left``, or ``None`` if it holds it.

    ``where`` is how the messages name the path (``"the source"`` for a move's).
    Raises the ``ToolError`` of :func:`~reversi_connector_fs._paths.open_regular` when
    the file cannot be read.
    """
    st = lstat(dir_fd, name)
    if left.kind == "absent":
        return None if st is None else standing(st, where) + " (made since the call)"
    if st is None:
        return "the file was deleted since the call"
    if not stat.S_ISREG(st.st_mode):
        return standing(st, where)
    if left.sha256 is not None:
        fd = open_regular(dir_fd, name, path)
        try:
            if content_sha256(fd) != left.sha256:
                return "the file's content changed since the call"
        finally:
            os.close(fd)
    mode = stat.S_IMODE(st.st_mode)
    if left.mode is not None and mode != left.mode:
        return (
            f"the file's permission bits changed since the call (0o{left.mode:o}, now 0o{mode:o})"
        )
    return None


def changed_since(path: str, what: str, kept: str) -> ToolError:
    """The refusal of an undo whose path no longer holds what the call left there.

    ``what`` comes from :func:`what_changed`; ``kept`` says what was left alone
    (``"nothing was restored"``).
    """
    return ToolError(
        f"{describe(path)}: {what}; {kept}. The later change is kept: undo it and roll back "
        "again, or let the rollback overwrite it (reversi rollback RUN --overwrite STEP)",
        code="changed_since",
    )
