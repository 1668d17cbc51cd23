"""Path rules of the fs connector: a textual check, then a walk that never follows a link.

Every path a tool receives is first checked as text by :func:`split`, which returns its
components or raises ``ToolError(code="path_refused")`` naming the path and the reason:

- an empty path, a NUL byte, or a lone surrogate (text that is not Unicode);
- an absolute path (leading ``/``);
- any ``..`` component, wherever it is and wherever it would lead;
- a name longer than :data:`NAME_MAX` bytes, or a path of :data:`PATH_MAX` bytes or more;
- the root itself where a file or a new directory is needed;
- anything at or under the backup directory when that directory lies inside the root
  (``.`` components and repeated slashes are dropped first, so every spelling of it is
  caught).

Names that are not valid UTF-8 have a JSON-safe spelling (:func:`spell`, read back by
:func:`from_spelling`): each byte that is not part of a UTF-8 character is written
``\\xHH`` (two hex digits, ``80`` to ``ff``), and a backslash that comes before ``x``,
another backslash or such a byte is doubled. Every result spells its names so, and
every path argument is read so; inside the connector a name is Python's
``surrogateescape`` form, what ``os.fsdecode`` gives.

Then :meth:`Tree.directory` opens the directories one component at a time, each relative
to a descriptor of the one before, starting from a descriptor of the root, with
``O_DIRECTORY | O_NOFOLLOW`` (the ``dir_fd`` mechanism:
https://docs.python.org/3/library/os.html#dir-fd). No symbolic link is ever followed, in
or out of the root: a link met as a component is refused. Because each step works on the
descriptor it holds rather than on a path string, a directory swapped for a link after
the textual check is refused at the moment it is opened. Each opened directory is also
compared (device and inode) with the backup directory, which catches any other spelling
of it, such as a bind mount or a case-insensitive file system.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from reversi_core.errors import ToolError

__all__ = [
    "NAME_MAX",
    "PATH_MAX",
    "Tree",
    "describe",
    "failure",
    "from_spelling",
    "kind",
    "lstat",
    "open_regular",
    "refused",
    "require_regular",
    "spell",
    "split",
]

NAME_MAX = 255
"""Longest file name accepted, in bytes (the Linux limit)."""

PATH_MAX = 4096
"""Paths of this many bytes or more are refused (the Linux limit, terminator included)."""

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

_CODES = {
    errno.ENOENT: "not_found",
    errno.EACCES: "permission_denied",
    errno.EPERM: "permission_denied",
    errno.ENAMETOOLONG: "path_refused",
    errno.ELOOP: "path_refused",
    errno.ENOTDIR: "not_a_directory",
    errno.EISDIR: "is_a_directory",
    errno.EEXIST: "exists",
    errno.ENOTEMPTY: "not_empty",
    errno.ENOSPC: "no_space",
    errno.EDQUOT: "no_space",
    errno.EFBIG: "too_large",
    errno.EROFS: "read_only_file_system",
}


_ESCAPE = re.compile(r"\\(\\|[xX]([89a-fA-F][0-9a-fA-F]))")


def _unescape(match: re.Match[str]) -> str:
    hexa = match.group(2)
    return "\\" if hexa is None else chr(0xDC00 + int(hexa, 16))


def from_spelling(text: str) -> str:
    """A name or path as the connector spells it (see the module docstring), read back.

    ``\\xHH`` (``HH`` from ``80`` to ``ff``) becomes that byte and ``\\\\`` one backslash;
    any other backslash stays as it is. Returns the ``os.fsdecode`` form.
    """
    if "\\" not in text:
        return text
    return _ESCAPE.sub(_unescape, text)


def spell(name: str) -> str:
    """The JSON-safe spelling of ``name`` (an ``os.fsdecode`` string, ``/`` kept).

    Valid UTF-8 without a backslash comes back unchanged.
    """
    if "\\" not in name:
        try:
            name.encode("utf-8")
            return name
        except UnicodeEncodeError:
            pass
    out: list[str] = []
    last = len(name) - 1
    for i, ch in enumerate(name):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif (
            ch == "\\"
            and i < last
            and (name[i + 1] in "\\xX" or 0xDC80 <= ord(name[i + 1]) <= 0xDCFF)
        ):
            out.append("\\\\")
        else:
            out.append(ch)
    return "".join(out)


def describe(path: str) -> str:
    """Quote ``path`` for an error message, shortened when it is very long."""
    text = repr(path)
    if len(text) <= 100:
        return text
    return f"{text[:70]}...' ({len(path)} characters)"


def refused(path: str, why: str) -> ToolError:
    """Build the ``path_refused`` error for ``path``; ``why`` completes "refused: ..."."""
    return ToolError(f"path {describe(path)} refused: {why}", code="path_refused")


def failure(exc: OSError, path: str, doing: str) -> ToolError:
    """Map an ``OSError`` raised while ``doing`` something to ``path`` into a ToolError.

    Only for errors after which nothing was changed. The code comes from the errno
    (``not_found``, ``permission_denied``, ``no_space``, ...; ``os_error`` otherwise).
    """
    code = _CODES.get(exc.errno or 0, "os_error")
    reason = exc.strerror or type(exc).__name__
    return ToolError(f"{doing} {describe(path)} failed: {reason}", code=code)


def split(
    path: str, *, allow_root: bool = False, reserved: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """Check ``path`` as text and return its components (``"./a//b"`` gives ``("a", "b")``).

    ``allow_root`` accepts ``"."`` (an empty tuple); ``reserved`` is the backup
    directory's components relative to the root, when it lies inside it. Raises
    ``ToolError(code="path_refused")`` for every rule in the module docstring.
    """
    if path == "":
        raise refused(path, "the path is empty (use '.' for the root directory)")
    if "\x00" in path:
        raise refused(path, "it contains a NUL byte")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise refused(
            path,
            "it holds a lone surrogate, which is not text; write a byte that is not UTF-8 "
            "as \\xHH, as fs.list_dir spells such names",
        ) from None
    try:
        encoded = os.fsencode(from_spelling(path))
    except UnicodeEncodeError:
        raise refused(path, "it cannot be encoded as a file name") from None
    if path.startswith("/"):
        raise refused(path, "absolute paths are not accepted; give a path relative to the root")
    if len(encoded) >= PATH_MAX:
        raise refused(path, f"it is {len(encoded)} bytes long; the limit is {PATH_MAX - 1}")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise refused(path, "'..' components are not accepted")
        part = from_spelling(part)
        if len(os.fsencode(part)) > NAME_MAX:
            raise refused(path, f"a name in it is longer than {NAME_MAX} bytes")
        parts.append(part)
    if not parts and not allow_root:
        raise refused(path, "it names the root directory itself, not an entry inside it")
    if reserved and tuple(parts[: len(reserved)]) == reserved:
        raise refused(path, "it lies in the backup directory, which the connector reserves")
    return tuple(parts)


def lstat(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` inside ``dir_fd`` (links not followed); ``None`` if absent."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def kind(st: os.stat_result) -> str:
    """``"file"``, ``"dir"``, ``"symlink"`` or ``"other"`` (fifo, socket, device)."""
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    return "other"


def require_regular(st: os.stat_result, path: str) -> None:
    """Raise unless ``st`` is a regular file: path_refused, is_a_directory or not_a_file."""
    what = kind(st)
    if what == "file":
        return
    if what == "symlink":
        raise refused(path, "it is a symbolic link, and links are never followed")
    if what == "dir":
        raise ToolError(f"{describe(path)} is a directory, not a file", code="is_a_directory")
    raise ToolError(
        f"{describe(path)} is not a regular file (fifo, socket or device)", code="not_a_file"
    )


def open_regular(dir_fd: int, name: str, path: str) -> int:
    """Open the regular file ``name`` inside ``dir_fd`` for reading, never through a link.

    Returns a descriptor the caller closes. Raises not_found, path_refused (a link, also
    one swapped in after an earlier check), is_a_directory, not_a_file or a mapped error.
    """
    st = lstat(dir_fd, name)
    if st is None:
        raise ToolError(f"{describe(path)} does not exist", code="not_found")
    require_regular(st, path)
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refused(path, "it is a symbolic link, and links are never followed") from None
        raise failure(exc, path, "opening") from None
    try:
        require_regular(os.fstat(fd), path)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Tree:
    """The root directory and the rules for walking it (see the module docstring).

    ``root`` and ``backup`` are absolute, already resolved paths. ``reserved`` holds the
    backup directory's components relative to the root when it lies inside it, else
    ``()``.
    """

    def __init__(self, root: str, backup: str) -> None:
        self.root = root
        self.backup = backup
        rel = os.path.relpath(backup, root)
        inside = rel != "." and rel != ".." and not rel.startswith("../")
        self.reserved: tuple[str, ...] = tuple(rel.split("/")) if inside else ()

    def split(self, path: str, *, allow_root: bool = False) -> tuple[str, ...]:
        """:func:`split` with this tree's reserved backup directory."""
        return split(path, allow_root=allow_root, reserved=self.reserved)

    def backup_identity(self) -> tuple[int, int] | None:
        """``(device, inode)`` of the backup directory, or ``None`` while it does not exist."""
        try:
            st = os.stat(self.backup)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def is_backup(
        self, parent: tuple[str, ...], name: str, st: os.stat_result, ident: tuple[int, int] | None
    ) -> bool:
        """True when entry ``name`` of directory ``parent`` is the backup directory.

        ``ident`` is :meth:`backup_identity`, read once by the caller.
        """
        if self.reserved and (*parent, name) == self.reserved:
            return True
        return stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == ident

    def open_root(self) -> int:
        """A descriptor of the root directory; raises ``ToolError`` if it is gone."""
        try:
            return os.open(self.root, DIR_FLAGS & ~os.O_NOFOLLOW)
        except OSError as exc:
            raise ToolError(
                f"the connector root {self.root!r} cannot be opened: {exc.strerror}",
                code="root_missing",
            ) from None

    @contextmanager
    def directory(
        self,
        parts: tuple[str, ...],
        *,
        path: str,
        create_from: int | None = None,
        created: list[str] | None = None,
        mode: int = 0o777,
        guard: bool = True,
    ) -> Iterator[int]:
        """Open the directory ``parts`` (relative to the root) and yield its descriptor.

        ``path`` is the caller's spelling, for messages. Components at index
        ``create_from`` or later are created (with ``mode``, before the umask) when
        missing, and each one created is appended to ``created`` as a ``/``-joined
        relative path. ``guard=False`` lets the walk enter the backup directory (only
        the connector itself does that). Raises not_found, path_refused (a link, the
        backup directory), not_a_directory, permission_denied or another mapped error;
        an error while creating propagates as ``OSError`` so the caller can undo.
        """
        ident = self.backup_identity() if guard else None
        fd = self.open_root()
        try:
            for index, name in enumerate(parts):
                prefix = parts[: index + 1]
                may_create = create_from is not None and index >= create_from
                next_fd = self._step(fd, name, prefix, path, may_create, created, mode)
                os.close(fd)
                fd = next_fd
                if ident is not None:
                    st = os.fstat(fd)
                    if (st.st_dev, st.st_ino) == ident:
                        raise refused(path, "it leads into the backup directory, which is reserved")
            yield fd
        finally:
            os.close(fd)

    def _step(
        self,
        fd: int,
        name: str,
        prefix: tuple[str, ...],
        path: str,
        may_create: bool,
        created: list[str] | None,
        mode: int,
    ) -> int:
        try:
            return os.open(name, DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not may_create:
                raise ToolError(
                    f"{describe(path)}: directory {'/'.join(prefix)!r} does not exist",
                    code="not_found",
                ) from None
        except OSError as exc:
            raise self._component_error(exc, fd, name, prefix, path) from None
        try:
            os.mkdir(name, mode, dir_fd=fd)
        except FileExistsError:
            pass  # made by someone else meanwhile: not ours to remove later
        else:
            if created is not None:
                created.append("/".join(prefix))
        try:
            return os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            raise self._component_error(exc, fd, name, prefix, path) from None

    @staticmethod
    def _component_error(
        exc: OSError, fd: int, name: str, prefix: tuple[str, ...], path: str
    ) -> ToolError:
        where = "/".join(prefix)
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            # O_DIRECTORY|O_NOFOLLOW reports a link as ENOTDIR on Linux: look again.
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                return ToolError(
                    f"{describe(path)}: {where!r} vanished while opening it", code="not_found"
                )
            if stat.S_ISLNK(st.st_mode) or exc.errno == errno.ELOOP:
                return refused(path, f"{where!r} is a symbolic link, and links are never followed")
            return ToolError(
                f"{describe(path)}: {where!r} exists and is not a directory", code="not_a_directory"
            )
        if exc.errno == errno.ENAMETOOLONG:
            return refused(path, "a name in it is too long for the file system")
        return failure(exc, path, "opening a directory of")
