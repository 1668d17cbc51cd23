"""The backup directory: where overwritten, deleted and replaced files are kept for an undo.

Backups are stored flat, one regular file each, named ``<uuid4 hex>-<original name>``
(the original name shortened so the whole stays within ``NAME_MAX`` bytes). A backup
keeps the original's bytes, permission bits, owner (when the process may set it) and
timestamps. The directory is created on first use with mode ``0o700``; the connector
never deletes a backup that a result has named, so a compensation can run any number
of times. The directory's entries are reached only through a descriptor of it
(https://docs.python.org/3/library/os.html#dir-fd).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import uuid
from collections.abc import Collection, Iterator
from contextlib import ExitStack, contextmanager, suppress

from reversi_core.errors import ToolError

from ._files import apply_metadata, copy_fd, sync_dir, trim_name
from ._paths import (
    DIR_FLAGS,
    FILE_FLAGS,
    NAME_MAX,
    Tree,
    describe,
    failure,
    lstat,
    open_regular,
    refused,
    spell,
)

__all__ = ["BACKUP_NAME", "Backups"]

BACKUP_NAME = re.compile(r"[0-9a-f]{32}(?:-[^/\x00]*)?")
"""What a backup name looks like; anything else given as a backup is refused."""

_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Backups:
    """The backup directory of one connector (see the module docstring)."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.path = tree.backup

    # -- names -------------------------------------------------------------------

    @staticmethod
    def new_name(original: str) -> str:
        """A fresh backup name for a file called ``original``."""
        return f"{uuid.uuid4().hex}-{trim_name(original, NAME_MAX - 33)}"

    @staticmethod
    def check_name(name: str) -> None:
        """Raise ``ToolError(code="path_refused")`` unless ``name`` is a backup name.

        A backup name is one flat file name made by :meth:`new_name`: no ``/``, no NUL,
        never ``.`` or ``..``, at most ``NAME_MAX`` bytes.
        """
        ok = BACKUP_NAME.fullmatch(name) is not None
        try:
            ok = ok and len(os.fsencode(name)) <= NAME_MAX
        except UnicodeEncodeError:
            ok = False
        if not ok:
            raise refused(name, "it is not a backup name made by this connector")

    # -- the directory -------------------------------------------------------------

    @contextmanager
    def directory(self, *, create: bool) -> Iterator[int | None]:
        """Yield a descriptor of the backup directory, creating it (mode 0o700) if ``create``.

        Yields ``None`` when it does not exist and ``create`` is false. Inside the root it
        is reached without following links, like any other path.
        """
        stack = ExitStack()
        fd: int | None = None
        try:
            if self.tree.reserved:
                fd = stack.enter_context(
                    self.tree.directory(
                        self.tree.reserved,
                        path=self.path,
                        create_from=0 if create else None,
                        mode=0o700,
                        guard=False,
                    )
                )
            else:
                if create:
                    os.makedirs(self.path, mode=0o700, exist_ok=True)
                fd = os.open(self.path, DIR_FLAGS & ~os.O_NOFOLLOW)
                stack.callback(os.close, fd)
        except ToolError as exc:
            if exc.code != "not_found" or create:
                raise
        except FileNotFoundError:
            if create:
                raise ToolError(
                    f"the backup directory {self.path!r} vanished", code="not_found"
                ) from None
        except OSError as exc:
            raise failure(exc, self.path, "opening the backup directory") from None
        with stack:
            yield fd

    # -- saving --------------------------------------------------------------------

    def save_copy(self, src: int, original: str) -> str:
        """Copy the open regular file ``src`` into a new backup; returns its name.

        Bytes, permission bits, owner (when permitted) and timestamps are kept. On error
        nothing is left behind and the ``OSError`` propagates.
        """
        like = os.fstat(src)
        name = self.new_name(original)
        with self.directory(create=True) as bfd:
            assert bfd is not None
            fd = os.open(name, _NEW_FILE_FLAGS, 0o600, dir_fd=bfd)
            try:
                try:
                    copy_fd(src, fd)
                    apply_metadata(fd, like, times=True)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except BaseException:
                _unlink_quietly(name, bfd)
                raise
            sync_dir(bfd)
        return name

    def save_by_move(self, dir_fd: int, name: str, path: str) -> str:
        """Move the regular file ``name`` of ``dir_fd`` into a new backup; returns its name.

        Uses ``os.rename``; when the backup directory is on another device (``EXDEV``),
        copies the file and then unlinks the original. On a definite failure the file is
        where it was and a ``ToolError`` is raised.
        """
        backup = self.new_name(name)
        with self.directory(create=True) as bfd:
            assert bfd is not None
            try:
                os.rename(name, backup, src_dir_fd=dir_fd, dst_dir_fd=bfd)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise failure(exc, path, "moving into the backup directory") from None
            else:
                sync_dir(bfd)
                sync_dir(dir_fd)
                return backup
        # another device: copy, then remove the original
        backup = self._copy_from(dir_fd, name, path)
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError as exc:
            self.discard(backup)
            raise failure(exc, path, "removing") from None
        sync_dir(dir_fd)
        return backup

    def save_by_link(self, dir_fd: int, name: str, path: str) -> str:
        """Keep the regular file ``name`` of ``dir_fd`` as a new backup; returns its name.

        A hard link is made when the file system allows it (cheap, same bytes, same
        metadata), otherwise a copy. The original stays in place.
        """
        backup = self.new_name(name)
        with self.directory(create=True) as bfd:
            assert bfd is not None
            try:
                os.link(name, backup, src_dir_fd=dir_fd, dst_dir_fd=bfd, follow_symlinks=False)
            except OSError:
                pass  # another device, no hard links here, or protected_hardlinks: copy
            else:
                sync_dir(bfd)
                return backup
        return self._copy_from(dir_fd, name, path)

    def _copy_from(self, dir_fd: int, name: str, path: str) -> str:
        src = open_regular(dir_fd, name, path)
        try:
            return self.save_copy(src, name)
        except OSError as exc:
            raise failure(exc, path, "backing up") from None
        finally:
            os.close(src)

    def discard(self, name: str) -> None:
        """Remove a backup this call has just made and no longer needs; best effort."""
        try:
            with self.directory(create=False) as bfd:
                if bfd is not None:
                    _unlink_quietly(name, bfd)
        except (OSError, ToolError):
            pass

    def prune(self, needed: Collection[str], before: float, dry_run: bool) -> list[str]:
        """Remove the backups no journal step names and made before ``before``.

        ``needed`` holds the names (as results spell them) that some step still kept in
        a journal names; ``before`` is a UNIX time in seconds: a backup whose inode
        changed since (its ``st_ctime``: when it was made, moved or linked in) is kept,
        since the call that made it may not be journaled yet. Only flat regular files
        named as :meth:`new_name` names them are considered. With ``dry_run`` nothing is
        removed. Returns the names removed (or that would be), sorted. Raises
        ``ToolError`` when the backup directory cannot be read.
        """
        gone: list[str] = []
        with self.directory(create=False) as bfd:
            if bfd is None:
                return gone
            for name in sorted(os.listdir(bfd)):
                if BACKUP_NAME.fullmatch(name) is None or spell(name) in needed:
                    continue
                try:
                    st = os.stat(name, dir_fd=bfd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if not stat.S_ISREG(st.st_mode) or st.st_ctime >= before:
                    continue
                if not dry_run:
                    _unlink_quietly(name, bfd)
                gone.append(spell(name))
        return gone

    # -- reading -------------------------------------------------------------------

    def open(self, name: str) -> int:
        """Open the backup ``name`` for reading; returns a descriptor the caller closes.

        Raises ``ToolError`` with code ``path_refused`` (not a backup name) or
        ``backup_missing``. A backup whose permission bits deny its owner reading (a
        file saved by a move) is opened by granting owner-read for the moment of the
        open and then putting the bits back.
        """
        self.check_name(name)
        missing = ToolError(
            f"backup {describe(name)} is not in the backup directory {self.path!r}",
            code="backup_missing",
        )
        with self.directory(create=False) as bfd:
            if bfd is None:
                raise missing
            st = lstat(bfd, name)
            if st is None:
                raise missing
            if not stat.S_ISREG(st.st_mode):
                raise refused(name, "the backup is not a regular file")
            try:
                return os.open(name, FILE_FLAGS, dir_fd=bfd)
            except PermissionError:
                pass
            except OSError as exc:
                raise failure(exc, name, "opening backup") from None
            mode = stat.S_IMODE(st.st_mode)
            try:
                os.chmod(name, mode | stat.S_IRUSR, dir_fd=bfd)
                try:
                    return os.open(name, FILE_FLAGS, dir_fd=bfd)
                finally:
                    os.chmod(name, mode, dir_fd=bfd)
            except OSError as exc:
                raise failure(exc, name, "opening backup") from None


def _unlink_quietly(name: str, dir_fd: int) -> None:
    with suppress(OSError):
        os.unlink(name, dir_fd=dir_fd)
