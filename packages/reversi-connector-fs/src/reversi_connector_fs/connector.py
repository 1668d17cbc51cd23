"""The ``fs`` connector: files under one root directory, every change undoable.

Nine tools. Two read (``fs.read_file``, ``fs.list_dir``); four change the tree and are
each undone by a compensation (``fs.write_file`` and ``fs.delete_file`` by
``fs.restore_file``, ``fs.make_dir`` by ``fs.remove_dir``, ``fs.move_file`` by
``fs.unmove_file``); the three compensations are idempotent, so running one twice
succeeds and changes nothing the second time.

Paths are ``/``-separated and relative to the root; the rules are in
:mod:`reversi_connector_fs._paths` and ``docs/connectors/fs.md``. In short: no absolute
path, no ``..``, no NUL, no symbolic link anywhere (not even one pointing inside the
root), and nothing in the backup directory. All file system work goes through directory
descriptors (https://docs.python.org/3/library/os.html#dir-fd).

Before a file is overwritten, deleted or replaced, its bytes, permission bits, owner
(when permitted) and timestamps are kept in the backup directory (default
``<root>/.reversi-backups``); results name the backup, and the compensations read it.
Backups are never removed by the connector.

A compensation never overwrites a change made after the call: ``fs.write_file`` and
``fs.move_file`` return the SHA-256 and permission bits of the file they left,
``fs.delete_file`` leaves nothing at its path, and ``fs.restore_file`` /
``fs.unmove_file`` refuse with code ``changed_since``, naming what changed, when the path
no longer holds that (unless a person allowed the step to overwrite:
``CallContext.overwrite``). See :mod:`reversi_connector_fs._since`.

The work is done synchronously inside each coroutine: every operation is a handful of
system calls on a local file system, and files read or written whole are limited to
:data:`MAX_FILE_BYTES`.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import stat
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator
from typing_extensions import TypedDict

from reversi_core.connector import CallContext, CliOption, Connector, tool
from reversi_core.errors import ConfigurationError, EffectUncertainError, ToolError
from reversi_core.manifest import Compensation, Const, Effect, Match, Requirement

from ._backups import Backups
from ._files import copy_fd, same_content, sync_dir, write_all, write_atomically
from ._paths import (
    Tree,
    describe,
    failure,
    from_spelling,
    kind,
    lstat,
    open_regular,
    refused,
    require_regular,
    spell,
)
from ._since import Left, changed_since, content_sha256, what_changed

__all__ = [
    "DEFAULT_BACKUP_DIR",
    "MAX_FILE_BYTES",
    "MAX_LIST_ENTRIES",
    "DeleteFileArgs",
    "DeleteFileResult",
    "DirEntry",
    "FsConnector",
    "ListDirArgs",
    "ListDirResult",
    "MakeDirArgs",
    "MakeDirResult",
    "MoveFileArgs",
    "MoveFileResult",
    "ReadFileArgs",
    "ReadFileResult",
    "RemoveDirArgs",
    "RemoveDirResult",
    "RestoreFileArgs",
    "RestoreFileResult",
    "UnmoveFileArgs",
    "UnmoveFileResult",
    "WriteFileArgs",
    "WriteFileResult",
]

MAX_FILE_BYTES = 10 * 1024 * 1024
"""Largest file, in bytes, that ``fs.read_file`` returns or ``fs.write_file`` writes (10 MiB)."""

MAX_LIST_ENTRIES = 10_000
"""Most entries ``fs.list_dir`` returns; beyond that the result says ``truncated``."""

DEFAULT_BACKUP_DIR = ".reversi-backups"
"""Name of the backup directory inside the root when none is configured."""

Encoding = Literal["utf-8", "base64"]

_PATH_HELP = (
    "'/'-separated and relative to the connector root; no '..', no absolute path, no symbolic link."
)


# -- input models --------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileArgs(_Args):
    """Arguments of fs.read_file."""

    path: str = Field(description=f"The file to read, {_PATH_HELP}")
    encoding: Encoding = Field(
        default="utf-8",
        description="'utf-8' returns the bytes as text and fails (code not_utf8) when they are "
        "not valid UTF-8; 'base64' returns any bytes base64-encoded.",
    )


class ListDirArgs(_Args):
    """Arguments of fs.list_dir."""

    path: str = Field(
        default=".", description=f"The directory to list ('.' is the root), {_PATH_HELP}"
    )


class WriteFileArgs(_Args):
    """Arguments of fs.write_file; the content must decode under the encoding."""

    path: str = Field(
        description=f"The file to create or replace; its directory must exist. {_PATH_HELP}"
    )
    content: str = Field(
        description="The new content of the whole file, encoded as 'encoding' says."
    )
    encoding: Encoding = Field(
        default="utf-8",
        description="'utf-8': 'content' is text, stored as UTF-8 bytes; 'base64': 'content' is "
        "base64 and its decoded bytes are stored.",
    )
    _data: bytes = PrivateAttr(default=b"")

    @model_validator(mode="after")
    def _decode(self) -> WriteFileArgs:
        if self.encoding == "base64":
            try:
                self._data = base64.b64decode(self.content, validate=True)
            except ValueError:
                raise ValueError("content is not valid base64") from None
        else:
            try:
                self._data = self.content.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("content holds characters that UTF-8 cannot encode") from None
        return self

    def data(self) -> bytes:
        """The bytes to write."""
        return self._data


class DeleteFileArgs(_Args):
    """Arguments of fs.delete_file."""

    path: str = Field(
        description=f"The file to delete (it is moved into the backups), {_PATH_HELP}"
    )


class MakeDirArgs(_Args):
    """Arguments of fs.make_dir."""

    path: str = Field(description=f"The directory to create, {_PATH_HELP}")
    parents: bool = Field(
        default=True,
        description="Also create missing parent directories; when false, the parent must exist.",
    )


class MoveFileArgs(_Args):
    """Arguments of fs.move_file."""

    source: str = Field(description=f"The file to move, {_PATH_HELP}")
    destination: str = Field(
        description=f"Its new path; the directory must already exist. {_PATH_HELP}"
    )
    overwrite: bool = Field(
        default=False,
        description="Replace an existing file at 'destination' (it is kept in the backups first); "
        "when false, an existing destination makes the call fail with code exists.",
    )


class RestoreFileArgs(_Args):
    """Arguments of fs.restore_file."""

    path: str = Field(description=f"The file to put back, {_PATH_HELP}")
    backup: str | None = Field(
        description="The backup name from the result of fs.write_file or fs.delete_file; null "
        "means the file did not exist before, so it is deleted if present."
    )
    left: Literal["file", "absent"] | None = Field(
        default=None,
        description="What the undone call left at 'path': 'file' (fs.write_file: the file "
        "with 'sha256' and 'mode'), 'absent' (fs.delete_file). When the path no longer holds "
        "it, the call fails with code changed_since and changes nothing (unless the rollback "
        "was told to overwrite). Null: no such check.",
    )
    sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="With left 'file': the SHA-256 (hex) of the bytes the call wrote.",
    )
    mode: int | None = Field(
        default=None, ge=0, description="With left 'file': the file's permission bits."
    )

    @model_validator(mode="after")
    def _left_consistent(self) -> RestoreFileArgs:
        if self.left == "file" and self.sha256 is None:
            raise ValueError("left 'file' needs the sha256 of what the call wrote")
        if self.left != "file" and (self.sha256 is not None or self.mode is not None):
            raise ValueError("sha256 and mode describe a file the call left (left 'file')")
        if self.left == "absent" and self.backup is None:
            raise ValueError("left 'absent' undoes a delete, which always has a backup")
        return self

    def expected(self) -> Left | None:
        """What the path must hold for the restore to go ahead (``None``: no check)."""
        if self.left is None:
            return None
        return Left(self.left, self.sha256, self.mode)


class RemoveDirArgs(_Args):
    """Arguments of fs.remove_dir."""

    paths: list[str] = Field(
        description="Directories to remove, each relative to the root (the 'created' list of "
        "fs.make_dir). Each must be empty apart from other listed directories; missing ones "
        "are skipped."
    )


class UnmoveFileArgs(_Args):
    """Arguments of fs.unmove_file."""

    source: str = Field(description=f"Where the file was before fs.move_file, {_PATH_HELP}")
    destination: str = Field(description=f"Where fs.move_file put it, {_PATH_HELP}")
    replaced_backup: str | None = Field(
        default=None,
        description="The backup of the file the move replaced ('replaced_backup' in the move's "
        "result); it is put back at 'destination'.",
    )
    sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="The SHA-256 (hex) of the moved file ('sha256' in the move's result): a "
        "file at 'destination' that no longer has it is not moved back (code changed_since). "
        "Null: its content is not compared.",
    )
    mode: int | None = Field(
        default=None,
        ge=0,
        description="The moved file's permission bits ('mode' in the move's result), compared "
        "likewise; null: not compared.",
    )

    def expected(self) -> Left | None:
        """What the destination must hold to be moved back (``None``: no check)."""
        if self.sha256 is None and self.mode is None:
            return None
        return Left("file", self.sha256, self.mode)


# -- result models ---------------------------------------------------------------------
#
# Each tool's result, field by field: the manifests' output_schema, checked by the registry
# (every ``result.`` source must name one of these fields) and by Connector.call (every
# result must match). All are closed: a result has exactly these keys.

_NORMALISED = "normalised: '/'-separated, relative to the root, no '.' parts or doubled slashes"
_BACKUP_NAME = "the name of its copy in the backup directory"


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileResult(_Result):
    """Result of fs.read_file."""

    path: str = Field(description=f"The file read, {_NORMALISED}.")
    content: str = Field(description="The whole file: text, or base64 of its bytes.")
    encoding: Encoding = Field(description="How 'content' is encoded (as asked).")
    size: int = Field(ge=0, description="The file's size in bytes.")


class DirEntry(TypedDict):
    """One entry of fs.list_dir.

    A TypedDict rather than a model: a listing holds up to 10,000 of them, and checking a
    result builds no object for a TypedDict, which halves the check's cost per entry
    (benchmarks/result_validation.py). Its JSON Schema is the same, closed.
    """

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    name: Annotated[str, Field(description="The entry's name in the directory.")]
    type: Annotated[
        Literal["file", "dir", "symlink", "other"],
        Field(description="What it is, links not followed; 'other' is a fifo, socket or device."),
    ]
    size: Annotated[
        int | None, Field(ge=0, description="Its size in bytes for a file; null otherwise.")
    ]


class ListDirResult(_Result):
    """Result of fs.list_dir."""

    path: str = Field(description=f"The directory listed, {_NORMALISED} ('.' is the root).")
    entries: list[DirEntry] = Field(
        description=f"Its entries sorted by name, at most {MAX_LIST_ENTRIES}, the backup "
        "directory left out."
    )
    truncated: bool = Field(description="Whether entries were left out beyond the limit.")


class WriteFileResult(_Result):
    """Result of fs.write_file."""

    path: str = Field(description=f"The file written, {_NORMALISED}.")
    existed: bool = Field(description="Whether the file existed before (and was replaced).")
    backup: str | None = Field(
        description=f"For a replaced file, {_BACKUP_NAME} (fs.restore_file puts it back); "
        "null for a new file."
    )
    size: int = Field(ge=0, description="The bytes written.")
    mode: int = Field(ge=0, description="The new file's permission bits, as an integer.")
    sha256: str = Field(
        description="The SHA-256 (hex) of the bytes written: fs.restore_file refuses to undo "
        "the write once the file holds anything else."
    )


class DeleteFileResult(_Result):
    """Result of fs.delete_file."""

    path: str = Field(description=f"The file deleted, {_NORMALISED}.")
    existed: Literal[True] = Field(description="Always true: only an existing file is deleted.")
    backup: str = Field(description=f"The deleted file's backup, {_BACKUP_NAME}.")
    mode: int = Field(ge=0, description="Its permission bits, as an integer.")
    size: int = Field(ge=0, description="Its size in bytes.")


class MakeDirResult(_Result):
    """Result of fs.make_dir."""

    path: str = Field(description=f"The directory asked for, {_NORMALISED}.")
    created: list[str] = Field(
        description="The directories this call made, outermost first (normalised paths); "
        "empty when it existed already."
    )


class MoveFileResult(_Result):
    """Result of fs.move_file."""

    source: str = Field(description=f"Where the file was, {_NORMALISED}.")
    destination: str = Field(description=f"Where it is now, {_NORMALISED}.")
    replaced_backup: str | None = Field(
        description=f"For a file the move replaced (overwrite), {_BACKUP_NAME}; null otherwise."
    )
    sha256: str | None = Field(
        description="The SHA-256 (hex) of the moved file, or null when it could not be read "
        "(no read permission): fs.unmove_file moves back only a file that still has it."
    )
    mode: int = Field(ge=0, description="The moved file's permission bits, as an integer.")


class RestoreFileResult(_Result):
    """Result of fs.restore_file."""

    path: str = Field(description=f"The file put back, {_NORMALISED}.")
    backup: str | None = Field(description="The backup it was restored from, or null.")
    action: Literal["restored", "unchanged", "deleted", "absent"] = Field(
        description="'restored' (copied back), 'unchanged' (it matched the backup already), "
        "'deleted' (no backup: the file was removed) or 'absent' (no backup, and no file)."
    )


class RemoveDirResult(_Result):
    """Result of fs.remove_dir."""

    removed: list[str] = Field(description="The directories removed, deepest first.")
    absent: list[str] = Field(description="The directories that were already gone.")


class UnmoveFileResult(_Result):
    """Result of fs.unmove_file."""

    source: str = Field(description=f"Where the file is back, {_NORMALISED}.")
    destination: str = Field(description=f"Where fs.move_file had put it, {_NORMALISED}.")
    action: Literal[
        "moved_back", "restored_replaced", "moved_back_and_restored", "already_undone"
    ] = Field(
        description="'moved_back'; 'restored_replaced' (it was back already, the replaced file "
        "is restored); 'moved_back_and_restored'; or 'already_undone'."
    )


# -- dependency declarations ------------------------------------------------------------
#
# The engine records a step's edges when it journals the intent, before the call runs, so
# every ``this`` source below names an argument; ``within`` and ``same_path`` compare
# normalised paths, so ``./a.txt`` and ``a.txt`` are the same file.


def _inside_made_dir(source: str) -> Requirement:
    """This call's ``source`` path lies in a directory an earlier fs.make_dir created."""
    return Requirement(
        tool="fs.make_dir", match=[Match(this=source, earlier="result.created", relation="within")]
    )


_TOUCHED = (
    ("fs.write_file", "args.path"),
    ("fs.delete_file", "args.path"),
    ("fs.move_file", "args.source"),
    ("fs.move_file", "args.destination"),
)


def _same_file_as_earlier(*this: str) -> list[Requirement]:
    """This call touches a file that an earlier change in the run touched."""
    return [
        Requirement(
            tool=earlier_tool, match=[Match(this=source, earlier=earlier, relation="same_path")]
        )
        for source in this
        for earlier_tool, earlier in _TOUCHED
    ]


# What each compensation touches (docs/engine.md, "Rollback in parallel"): the paths the
# result names, which the connector has normalised (an argument may spell one path in
# several ways: ``./a//b`` is ``a/b``). A name lies under its directory's (``fs:d/f``
# under ``fs:d``), so a file and the directory that holds it are undone in order.
_TOUCHES_PATH = ["fs:{result.path}"]

_RESTORE_WRITTEN = Compensation(
    tool="fs.restore_file",
    argument_map={
        "path": "args.path",
        "backup": "result.backup",
        "left": Const(const="file"),
        "sha256": "result.sha256",
        "mode": "result.mode",
    },
    resources=_TOUCHES_PATH,
)

_RESTORE_DELETED = Compensation(
    tool="fs.restore_file",
    argument_map={
        "path": "args.path",
        "backup": "result.backup",
        "left": Const(const="absent"),
        "sha256": Const(const=None),
        "mode": Const(const=None),
    },
    resources=_TOUCHES_PATH,
)


@contextmanager
def _definite(path: str, doing: str) -> Iterator[None]:
    """Turn an ``OSError`` into a ToolError; only around work that leaves nothing changed."""
    try:
        yield
    except OSError as exc:
        raise failure(exc, path, doing) from None


# -- the connector -------------------------------------------------------------------------


class FsConnector(Connector):
    """Files under one root directory (see the module docstring).

    ``root`` must be an existing directory. ``backup_dir`` defaults to
    ``<root>/.reversi-backups``; it may lie outside the root, is created with mode
    ``0o700`` on first use, and is hidden from and refused to every tool. Raises
    :class:`~reversi_core.errors.ConfigurationError` for a missing root or a backup
    directory that is the root, contains it, or is not a directory.
    """

    name = "fs"
    credential_env = None
    open_world = False  # only the directory tree under the root is touched
    cli_options = (
        CliOption(
            "--root",
            "root",
            "root directory of the fs connector: the only tree it may touch",
            "DIR",
        ),
        CliOption(
            "--backup-dir",
            "backup_dir",
            "where the fs connector keeps backups (default: <root>/.reversi-backups)",
            "DIR",
        ),
    )

    def __init__(
        self, root: str | os.PathLike[str], backup_dir: str | os.PathLike[str] | None = None
    ) -> None:
        given = os.fspath(root)
        real_root = os.path.realpath(given)
        if not os.path.isdir(real_root):
            raise ConfigurationError(f"fs root {given!r} is not an existing directory")
        if backup_dir is None:
            real_backup = os.path.join(real_root, DEFAULT_BACKUP_DIR)
        else:
            real_backup = os.path.realpath(os.fspath(backup_dir))
        if real_backup == real_root or real_root.startswith(real_backup.rstrip("/") + "/"):
            raise ConfigurationError(
                f"fs backup directory {real_backup!r} must not be the root {real_root!r} "
                "or contain it"
            )
        if os.path.lexists(real_backup) and not os.path.isdir(real_backup):
            raise ConfigurationError(
                f"fs backup directory {real_backup!r} exists and is not a directory"
            )
        self._tree = Tree(real_root, real_backup)
        self._backups = Backups(self._tree)

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str],
        *,
        root: str | os.PathLike[str] | None = None,
        backup_dir: str | os.PathLike[str] | None = None,
        **ignored: Any,
    ) -> FsConnector:
        """Build the connector from CLI options; it reads no environment variable.

        ``root`` defaults to the current directory. Options meant for other connectors
        are ignored. Raises ``ConfigurationError`` when ``root`` is not an existing
        directory (see the class docstring for the backup directory).
        """
        return cls(root if root is not None else ".", backup_dir=backup_dir)

    @property
    def root(self) -> str:
        """The root directory, absolute and with links resolved."""
        return self._tree.root

    @property
    def backup_dir(self) -> str:
        """The backup directory, absolute and with links resolved."""
        return self._tree.backup

    def prune_backups(
        self, needed: Collection[str], before: float, *, dry_run: bool = False
    ) -> list[str]:
        """Retention's hook (``reversi prune``): remove the backups no kept step needs.

        ``needed``: every backup name a step still kept in the journal names; ``before``:
        UNIX seconds, only backups made earlier may go. Returns the names removed (or,
        ``dry_run``, that would be), sorted. See docs/operate.md.
        """
        return self._backups.prune(needed, before, dry_run)

    # -- reading -------------------------------------------------------------------------

    @tool(effect=Effect.READ_ONLY, permission="fs:read", input=ReadFileArgs, output=ReadFileResult)
    async def read_file(self, args: ReadFileArgs, ctx: CallContext) -> dict[str, Any]:
        """Read a whole file under the root, as UTF-8 text or base64.

        Returns ``{"path", "content", "encoding", "size"}``: ``path`` normalised (no ``.``
        components or doubled slashes), ``size`` in bytes. Raises ``ToolError`` with code
        ``path_refused``, ``not_found``, ``is_a_directory``, ``not_a_file``,
        ``too_large`` (over :data:`MAX_FILE_BYTES`), ``not_utf8`` (use base64) or a
        mapped OS error code.
        """
        parts = self._tree.split(args.path)
        with (
            _definite(args.path, "reading"),
            self._tree.directory(parts[:-1], path=args.path) as dfd,
        ):
            fd = open_regular(dfd, parts[-1], args.path)
            try:
                data = _read_limited(fd, args.path)
            finally:
                os.close(fd)
        if args.encoding == "base64":
            content = base64.b64encode(data).decode("ascii")
        else:
            try:
                content = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ToolError(
                    f"{describe(args.path)} is not valid UTF-8 (byte {exc.start}); "
                    "read it again with encoding 'base64'",
                    code="not_utf8",
                ) from None
        return {
            "path": spell("/".join(parts)),
            "content": content,
            "encoding": args.encoding,
            "size": len(data),
        }

    @tool(effect=Effect.READ_ONLY, permission="fs:read", input=ListDirArgs, output=ListDirResult)
    async def list_dir(self, args: ListDirArgs, ctx: CallContext) -> dict[str, Any]:
        """List a directory under the root, sorted by name, without following links.

        Returns ``{"path", "entries": [{"name", "type", "size"}], "truncated"}``;
        ``type`` is ``file``, ``dir``, ``symlink`` or ``other`` (fifo, socket, device),
        ``size`` is in bytes for files and null otherwise. The backup directory is never
        listed. At most :data:`MAX_LIST_ENTRIES` entries are returned (the first ones by
        name) and ``truncated`` says whether any were left out. Raises ``ToolError``
        with code ``path_refused``, ``not_found``, ``not_a_directory`` or a mapped OS
        error code.
        """
        parts = self._tree.split(args.path, allow_root=True)
        entries: list[dict[str, Any]] = []
        ident = self._tree.backup_identity()
        with (
            _definite(args.path, "listing"),
            self._tree.directory(parts, path=args.path) as fd,
            os.scandir(fd) as found,
        ):
            for entry in found:
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed while listing
                if self._tree.is_backup(parts, entry.name, st, ident):
                    continue
                what = kind(st)
                entries.append(
                    {
                        "name": spell(entry.name),
                        "type": what,
                        "size": st.st_size if what == "file" else None,
                    }
                )
        entries.sort(key=lambda e: str(e["name"]))
        return {
            "path": spell("/".join(parts)) or ".",
            "entries": entries[:MAX_LIST_ENTRIES],
            "truncated": len(entries) > MAX_LIST_ENTRIES,
        }

    # -- changing -------------------------------------------------------------------------

    @tool(
        effect=Effect.REVERSIBLE,
        permission="fs:write",
        input=WriteFileArgs,
        output=WriteFileResult,
        compensation=_RESTORE_WRITTEN,
        requires=[_inside_made_dir("args.path"), *_same_file_as_earlier("args.path")],
    )
    async def write_file(self, args: WriteFileArgs, ctx: CallContext) -> dict[str, Any]:
        """Create or replace a file under the root; its directory must already exist.

        An existing file is first copied (bytes, permission bits, owner when permitted,
        timestamps) into the backup directory, and the new content keeps its permission
        bits, except set-user-ID and set-group-ID, which new content never inherits; a
        new file gets ``0o666`` less the umask. The file is replaced atomically
        (a temporary file in the same directory, then ``os.replace``), which also breaks
        any hard link it had. Returns ``{"path", "existed", "backup", "size", "mode",
        "sha256"}``: ``backup`` is the backup name or null for a new file, ``size`` the
        bytes written, ``mode`` the permission bits as an integer, ``sha256`` the hex digest
        of the bytes written. Undone by ``fs.restore_file``, which refuses once the file
        holds anything else (someone's later edit is kept).
        Raises ``ToolError`` with code ``path_refused``, ``not_found`` (no such
        directory), ``is_a_directory``, ``not_a_file``, ``too_large`` (over
        :data:`MAX_FILE_BYTES`) or a mapped OS error code; the file is then unchanged.
        """
        parts = self._tree.split(args.path)
        data = args.data()
        if len(data) > MAX_FILE_BYTES:
            raise ToolError(
                f"content for {describe(args.path)} is {len(data)} bytes; "
                f"the limit is {MAX_FILE_BYTES}",
                code="too_large",
            )
        name = parts[-1]
        with (
            _definite(args.path, "writing"),
            self._tree.directory(parts[:-1], path=args.path) as dfd,
        ):
            before = lstat(dfd, name)
            backup: str | None = None
            like: os.stat_result | None = None
            if before is not None:
                require_regular(before, args.path)
                src = open_regular(dfd, name, args.path)
                try:
                    like = os.fstat(src)
                    backup = self._backups.save_copy(src, name)
                finally:
                    os.close(src)
            try:
                after = write_atomically(
                    dfd, name, lambda fd: write_all(fd, data), like=like, setid=False
                )
            except BaseException:
                if backup is not None:
                    self._backups.discard(backup)
                raise
        return {
            "path": spell("/".join(parts)),
            "existed": before is not None,
            "backup": spell(backup) if backup is not None else None,
            "size": len(data),
            "mode": stat.S_IMODE(after.st_mode),
            "sha256": hashlib.sha256(data).hexdigest(),
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="fs:write",
        input=DeleteFileArgs,
        output=DeleteFileResult,
        compensation=_RESTORE_DELETED,
        requires=[_inside_made_dir("args.path"), *_same_file_as_earlier("args.path")],
    )
    async def delete_file(self, args: DeleteFileArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a file under the root by moving it into the backup directory.

        The file is renamed into the backups (copied and then unlinked when the backup
        directory is on another device), so its bytes and metadata survive. Returns
        ``{"path", "existed": true, "backup", "mode", "size"}`` (``size`` in bytes).
        Undone by ``fs.restore_file``, which refuses while anything stands at the path
        again (a file or directory made there since is kept). Raises ``ToolError`` with code ``not_found``,
        ``path_refused``, ``is_a_directory``, ``not_a_file`` or a mapped OS error code;
        the file is then where it was.
        """
        parts = self._tree.split(args.path)
        name = parts[-1]
        with (
            _definite(args.path, "deleting"),
            self._tree.directory(parts[:-1], path=args.path) as dfd,
        ):
            before = lstat(dfd, name)
            if before is None:
                raise ToolError(f"{describe(args.path)} does not exist", code="not_found")
            require_regular(before, args.path)
            backup = self._backups.save_by_move(dfd, name, args.path)
        return {
            "path": spell("/".join(parts)),
            "existed": True,
            "backup": spell(backup),
            "mode": stat.S_IMODE(before.st_mode),
            "size": before.st_size,
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="fs:write",
        input=MakeDirArgs,
        output=MakeDirResult,
        compensation=Compensation(
            tool="fs.remove_dir",
            argument_map={"paths": "result.created"},
            resources=["fs:{result.created}"],  # each directory made (none: touches nothing)
        ),
        requires=[_inside_made_dir("args.path")],
    )
    async def make_dir(self, args: MakeDirArgs, ctx: CallContext) -> dict[str, Any]:
        """Create a directory under the root (and, by default, its missing parents).

        An existing directory is not an error. Returns ``{"path", "created"}``:
        ``created`` lists the directories this call made, outermost first (empty when
        it already existed). Undone by ``fs.remove_dir`` on ``created``. Raises
        ``ToolError`` with code ``path_refused``, ``not_found`` (a missing parent with
        ``parents`` false), ``not_a_directory`` (a file is in the way) or a mapped OS
        error code, after removing whatever it had created; ``EffectUncertainError`` if
        that removal fails too.
        """
        parts = self._tree.split(args.path)
        created: list[str] = []
        try:
            with self._tree.directory(
                parts,
                path=args.path,
                create_from=0 if args.parents else len(parts) - 1,
                created=created,
            ):
                pass
        except (OSError, ToolError) as exc:
            error = failure(exc, args.path, "creating") if isinstance(exc, OSError) else exc
            if created:
                try:
                    self._remove_empty(created[::-1])
                except (OSError, ToolError) as undo:
                    raise EffectUncertainError(
                        f"fs.make_dir {describe(args.path)} failed ({error}) after creating "
                        f"{created}, and removing them failed too: {undo}"
                    ) from None
            raise error from None
        return {"path": spell("/".join(parts)), "created": [spell(c) for c in created]}

    @tool(
        effect=Effect.REVERSIBLE,
        permission="fs:write",
        input=MoveFileArgs,
        output=MoveFileResult,
        compensation=Compensation(
            tool="fs.unmove_file",
            argument_map={
                "source": "args.source",
                "destination": "args.destination",
                "replaced_backup": "result.replaced_backup",
                "sha256": "result.sha256",
                "mode": "result.mode",
            },
            resources=["fs:{result.source}", "fs:{result.destination}"],
        ),
        requires=[
            _inside_made_dir("args.source"),
            _inside_made_dir("args.destination"),
            *_same_file_as_earlier("args.source", "args.destination"),
        ],
    )
    async def move_file(self, args: MoveFileArgs, ctx: CallContext) -> dict[str, Any]:
        """Move or rename a file under the root; the destination's directory must exist.

        Only regular files move. With ``overwrite``, an existing destination file is
        first kept in the backup directory. Returns ``{"source", "destination",
        "replaced_backup", "sha256", "mode"}`` (normalised paths; the backup name or null;
        the moved file's SHA-256, read once before the move, or null when it cannot be
        read; its permission bits). Undone by ``fs.unmove_file``, which refuses once the
        moved file holds anything else. Raises ``ToolError`` with code ``not_found``, ``exists``
        (destination present, ``overwrite`` false), ``same_path``, ``path_refused``,
        ``is_a_directory``, ``not_a_file`` or a mapped OS error code; nothing has moved
        then. Raises ``EffectUncertainError`` only when a move across devices copied the
        file but could not remove the source.
        """
        sparts = self._tree.split(args.source)
        dparts = self._tree.split(args.destination)
        if sparts == dparts:
            raise ToolError(
                f"{describe(args.source)} and {describe(args.destination)} are the same path",
                code="same_path",
            )
        with (
            _definite(args.source, "moving"),
            self._tree.directory(sparts[:-1], path=args.source) as sfd,
            self._tree.directory(dparts[:-1], path=args.destination) as dfd,
        ):
            src = lstat(sfd, sparts[-1])
            if src is None:
                raise ToolError(f"{describe(args.source)} does not exist", code="not_found")
            require_regular(src, args.source)
            digest = self._digest(sfd, sparts[-1], args.source)
            dst = lstat(dfd, dparts[-1])
            replaced: str | None = None
            if dst is not None:
                require_regular(dst, args.destination)
                if (dst.st_dev, dst.st_ino) == (src.st_dev, src.st_ino):
                    raise ToolError(
                        f"{describe(args.source)} and {describe(args.destination)} "
                        "are links to one file",
                        code="same_path",
                    )
                if not args.overwrite:
                    raise ToolError(
                        f"{describe(args.destination)} already exists; "
                        "pass overwrite=true to replace it",
                        code="exists",
                    )
                replaced = self._backups.save_by_link(dfd, dparts[-1], args.destination)
            try:
                self._rename(sfd, sparts[-1], args.source, dfd, dparts[-1], args.destination)
            except ToolError:
                if replaced is not None:
                    self._backups.discard(replaced)
                raise
        return {
            "source": spell("/".join(sparts)),
            "destination": spell("/".join(dparts)),
            "replaced_backup": spell(replaced) if replaced is not None else None,
            "sha256": digest,
            "mode": stat.S_IMODE(src.st_mode),
        }

    # -- compensations -------------------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="fs:write",
        input=RestoreFileArgs,
        output=RestoreFileResult,
    )
    async def restore_file(self, args: RestoreFileArgs, ctx: CallContext) -> dict[str, Any]:
        """Put a file back as a backup recorded it, or delete it when it did not exist before.

        With a ``backup``: the backup's bytes, permission bits, owner (when permitted)
        and timestamps are copied to ``path`` atomically; the backup itself stays, so
        running again gives the same file (and changes nothing when it already matches).
        With ``backup`` null: ``path`` is deleted if present. Returns ``{"path",
        "backup", "action"}``, ``action`` being ``restored``, ``unchanged``, ``deleted``
        or ``absent``.

        With ``left`` (what the undone call left at ``path``: the file with ``sha256`` and
        ``mode``, or nothing), the path must still hold exactly that, or already match the
        backup: otherwise someone changed it since the call, and the call fails with code
        ``changed_since``, naming what changed (``the file's content changed since the
        call``, ``a directory now stands at the path``), and changes nothing. A compensation
        a person allowed to overwrite (``ctx.overwrite``) skips that check.

        Raises ``ToolError`` with code ``changed_since``, ``backup_missing``,
        ``path_refused``, ``not_found`` (its directory is gone), ``is_a_directory``,
        ``not_a_file`` or a mapped OS error code; the file is then unchanged.
        """
        parts = self._tree.split(args.path)
        expected = None if ctx.overwrite else args.expected()
        if args.backup is not None:
            action = self._put_backup(
                parts, args.path, from_spelling(args.backup), expected=expected
            )
        else:
            action = "absent"
            name = parts[-1]
            try:
                with (
                    _definite(args.path, "deleting"),
                    self._tree.directory(parts[:-1], path=args.path) as dfd,
                ):
                    st = lstat(dfd, name)
                    if st is not None:
                        self._still_left(dfd, name, args.path, expected, "it was not deleted")
                        require_regular(st, args.path)
                        try:
                            os.unlink(name, dir_fd=dfd)
                        except FileNotFoundError:
                            pass
                        else:
                            sync_dir(dfd)
                            action = "deleted"
            except ToolError as exc:
                if exc.code != "not_found":
                    raise
        return {"path": spell("/".join(parts)), "backup": args.backup, "action": action}

    @tool(
        effect=Effect.IDEMPOTENT, permission="fs:write", input=RemoveDirArgs, output=RemoveDirResult
    )
    async def remove_dir(self, args: RemoveDirArgs, ctx: CallContext) -> dict[str, Any]:
        """Remove empty directories under the root, deepest first; missing ones are fine.

        Every directory is checked before any is removed: one that holds anything other
        than directories also listed fails the whole call with code ``not_empty``
        (naming how many entries it holds) and nothing is removed. Returns
        ``{"removed", "absent"}``, lists of normalised paths. Raises ``ToolError`` with
        code ``not_empty``, ``path_refused``, ``not_a_directory`` or a mapped OS error
        code, with nothing removed; ``EffectUncertainError`` if a directory changed
        between the check and the removal after others were already removed.
        """
        targets = sorted(
            {self._tree.split(p) for p in args.paths}, key=lambda t: (len(t), t), reverse=True
        )
        removable: list[tuple[str, ...]] = []
        absent: list[str] = []
        for parts in targets:
            shown = "/".join(parts)
            names = self._list_if_dir(parts, shown)
            if names is None:
                absent.append(shown)
                continue
            left = sorted(n for n in names if (*parts, n) not in removable)
            if left:
                preview = ", ".join(repr(n) for n in left[:5]) + (", ..." if len(left) > 5 else "")
                raise ToolError(
                    f"directory {describe(shown)} is not empty: it holds {len(left)} "
                    f"{'entry' if len(left) == 1 else 'entries'} ({preview}); nothing was removed",
                    code="not_empty",
                )
            removable.append(parts)
        removed = self._remove_empty(["/".join(p) for p in removable], absent=absent)
        return {"removed": [spell(r) for r in removed], "absent": [spell(a) for a in absent]}

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="fs:write",
        input=UnmoveFileArgs,
        output=UnmoveFileResult,
    )
    async def unmove_file(self, args: UnmoveFileArgs, ctx: CallContext) -> dict[str, Any]:
        """Undo fs.move_file: move the file back and put back the file it replaced.

        Decided from what exists now, so that a repeated or interrupted undo finishes
        the job without doing anything twice:

        - destination present, source absent: move it back to ``source``, then, with
          ``replaced_backup``, restore that backup at ``destination``;
        - source present, destination absent: already moved back; with
          ``replaced_backup`` the backup is restored at ``destination``;
        - both present: already undone when ``replaced_backup`` is given and
          ``destination`` matches it (bytes and permission bits); otherwise a
          ``conflict`` error (``changed_since`` when ``sha256`` or ``mode`` is given: a
          file was made at the source since the call), and neither file is touched;
        - neither present: the moved file is gone; a ``not_found`` error, nothing done.

        With ``sha256`` and ``mode`` (what the move left at ``destination``), the file found
        there, or back at ``source``, must still have them: a file someone edited since the
        call is not moved back, and the call fails with code ``changed_since``, naming what
        changed, touching nothing. ``ctx.overwrite`` (a person allowed the step to
        overwrite) skips those checks, and then also moves the file back over one made at
        the source since.

        Returns ``{"source", "destination", "action"}``, ``action`` being
        ``moved_back``, ``restored_replaced``, ``moved_back_and_restored`` or
        ``already_undone``. Raises ``ToolError`` as above and with ``path_refused``,
        ``backup_missing``, ``same_path`` or a mapped OS error code (nothing changed);
        ``EffectUncertainError`` when the file was moved back but restoring the replaced
        file then failed (running the call again completes it).
        """
        sparts = self._tree.split(args.source)
        dparts = self._tree.split(args.destination)
        if sparts == dparts:
            raise ToolError(
                f"{describe(args.source)} and {describe(args.destination)} are the same path",
                code="same_path",
            )
        backup = from_spelling(args.replaced_backup) if args.replaced_backup is not None else None
        if backup is not None:
            self._backups.check_name(backup)
        expected = None if ctx.overwrite else args.expected()
        src = self._probe(sparts, args.source)
        dst = self._probe(dparts, args.destination)
        if src is not None and dst is not None:
            undone = backup is not None and self._matches_backup(dparts, args.destination, backup)
            if undone:
                self._check_left(sparts, args.source, expected, "the source")
                action = "already_undone"
            elif ctx.overwrite:
                action = self._move_back(args, sparts, dparts, backup)
            elif expected is not None:
                self._check_left(dparts, args.destination, expected, "the destination")
                raise changed_since(
                    args.source,
                    "a file now stands at the source (made since the call)",
                    "nothing was moved back",
                )
            else:
                raise ToolError(
                    f"both {describe(args.source)} and {describe(args.destination)} exist"
                    + (
                        ""
                        if backup is None
                        else " and the destination differs from the replaced file"
                    )
                    + "; refusing to overwrite either",
                    code="conflict",
                )
        elif dst is not None:
            self._check_left(dparts, args.destination, expected, "the destination")
            action = self._move_back(args, sparts, dparts, backup)
        elif src is not None:
            self._check_left(sparts, args.source, expected, "the source")
            action = "already_undone"
            if backup is not None:
                self._put_backup(dparts, args.destination, backup)
                action = "restored_replaced"
        else:
            raise ToolError(
                f"neither {describe(args.source)} nor {describe(args.destination)} exists: "
                "the moved file is gone, so there is nothing to move back",
                code="not_found",
            )
        return {
            "source": spell("/".join(sparts)),
            "destination": spell("/".join(dparts)),
            "action": action,
        }

    def _move_back(
        self,
        args: UnmoveFileArgs,
        sparts: tuple[str, ...],
        dparts: tuple[str, ...],
        backup: str | None,
    ) -> str:
        """Move the file at the destination back to the source, then restore the replaced one."""
        with (
            _definite(args.destination, "moving back"),
            self._tree.directory(sparts[:-1], path=args.source) as sfd,
            self._tree.directory(dparts[:-1], path=args.destination) as dfd,
        ):
            self._rename(dfd, dparts[-1], args.destination, sfd, sparts[-1], args.source)
        if backup is None:
            return "moved_back"
        try:
            self._put_backup(dparts, args.destination, backup)
        except (ToolError, OSError) as exc:
            raise EffectUncertainError(
                f"moved {describe(args.destination)} back to {describe(args.source)}, but "
                f"restoring the replaced file failed: {exc}; run fs.unmove_file again"
            ) from None
        return "moved_back_and_restored"

    # -- helpers ------------------------------------------------------------------------

    @staticmethod
    def _digest(dir_fd: int, name: str, path: str) -> str | None:
        """The SHA-256 of regular file ``name``, or ``None`` when it may not be read."""
        try:
            fd = open_regular(dir_fd, name, path)
        except ToolError as exc:
            if exc.code == "permission_denied":
                return None
            raise
        try:
            return content_sha256(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _still_left(
        dir_fd: int, name: str, path: str, expected: Left | None, kept: str, where: str = "the path"
    ) -> None:
        """Raise ``changed_since`` unless ``name`` still holds what the call left (``expected``)."""
        if expected is None:
            return
        why = what_changed(dir_fd, name, path, expected, where=where)
        if why is not None:
            raise changed_since(path, why, kept)

    def _check_left(
        self, parts: tuple[str, ...], path: str, expected: Left | None, where: str
    ) -> None:
        """:meth:`_still_left` for the file a move left at ``parts``."""
        if expected is None:
            return
        with _definite(path, "inspecting"), self._tree.directory(parts[:-1], path=path) as dfd:
            self._still_left(dfd, parts[-1], path, expected, "nothing was moved back", where)

    def _probe(self, parts: tuple[str, ...], path: str) -> os.stat_result | None:
        """The regular file at ``parts``, or ``None`` when it (or its directory) is absent."""
        try:
            with _definite(path, "inspecting"), self._tree.directory(parts[:-1], path=path) as dfd:
                st = lstat(dfd, parts[-1])
        except ToolError as exc:
            if exc.code == "not_found":
                return None
            raise
        if st is not None:
            require_regular(st, path)
        return st

    def _list_if_dir(self, parts: tuple[str, ...], path: str) -> list[str] | None:
        """The entry names of directory ``parts``, or ``None`` when it is absent."""
        try:
            with _definite(path, "inspecting"), self._tree.directory(parts[:-1], path=path) as pfd:
                st = lstat(pfd, parts[-1])
                if st is None:
                    return None
                if stat.S_ISLNK(st.st_mode):
                    raise refused(path, "it is a symbolic link, and links are never followed")
                if not stat.S_ISDIR(st.st_mode):
                    raise ToolError(f"{describe(path)} is not a directory", code="not_a_directory")
            with _definite(path, "listing"), self._tree.directory(parts, path=path) as fd:
                return os.listdir(fd)
        except ToolError as exc:
            if exc.code == "not_found":
                return None
            raise

    def _remove_empty(self, paths: list[str], absent: list[str] | None = None) -> list[str]:
        """``rmdir`` each of ``paths`` in the order given (deepest first) and return those removed.

        A path already gone is appended to ``absent``. The first failure raises a
        ToolError when nothing was removed yet, else ``EffectUncertainError``.
        """
        removed: list[str] = []
        for shown in paths:
            parts = tuple(shown.split("/"))
            try:
                with (
                    _definite(shown, "removing"),
                    self._tree.directory(parts[:-1], path=shown) as pfd,
                ):
                    try:
                        os.rmdir(parts[-1], dir_fd=pfd)
                    except FileNotFoundError:
                        if absent is not None:
                            absent.append(shown)
                        continue
                    sync_dir(pfd)
            except ToolError as exc:
                if exc.code == "not_found":
                    if absent is not None:
                        absent.append(shown)
                    continue
                if not removed:
                    raise
                raise EffectUncertainError(
                    f"removed {removed}, then failed on {describe(shown)}: {exc}"
                ) from None
            removed.append(shown)
        return removed

    def _rename(
        self, sfd: int, sname: str, source: str, dfd: int, dname: str, destination: str
    ) -> None:
        """Rename ``sname`` of ``sfd`` to ``dname`` of ``dfd``, copying across devices.

        Raises ``ToolError`` when nothing moved, ``EffectUncertainError`` when a copy
        across devices succeeded but the source could not be removed.
        """
        try:
            os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise failure(exc, source, "moving") from None
        else:
            sync_dir(dfd)
            sync_dir(sfd)
            return
        src = open_regular(sfd, sname, source)
        try:
            like = os.fstat(src)
            write_atomically(dfd, dname, lambda fd: copy_fd(src, fd), like=like, times=True)
        except OSError as exc:
            raise failure(exc, destination, "copying to") from None
        finally:
            os.close(src)
        try:
            os.unlink(sname, dir_fd=sfd)
        except OSError as exc:
            raise EffectUncertainError(
                f"copied {describe(source)} to {describe(destination)} across devices, "
                f"but removing the source failed: {exc.strerror}"
            ) from None
        sync_dir(sfd)

    def _put_backup(
        self, parts: tuple[str, ...], path: str, backup: str, *, expected: Left | None = None
    ) -> str:
        """Make the file at ``parts`` equal to ``backup``; ``"restored"`` or ``"unchanged"``.

        With ``expected``, a path that matches neither the backup nor what the undone call
        left there raises ``changed_since`` and nothing is written.
        """
        bfd = self._backups.open(backup)
        try:
            with _definite(path, "restoring"), self._tree.directory(parts[:-1], path=path) as dfd:
                st = lstat(dfd, parts[-1])
                if st is not None and stat.S_ISREG(st.st_mode):
                    current = open_regular(dfd, parts[-1], path)
                    try:
                        if same_content(current, bfd):
                            return "unchanged"
                    finally:
                        os.close(current)
                self._still_left(dfd, parts[-1], path, expected, "nothing was restored")
                if st is not None:
                    require_regular(st, path)
                like = os.fstat(bfd)
                write_atomically(dfd, parts[-1], lambda fd: copy_fd(bfd, fd), like=like, times=True)
                return "restored"
        finally:
            os.close(bfd)

    def _matches_backup(self, parts: tuple[str, ...], path: str, backup: str) -> bool:
        """True when the file at ``parts`` has the bytes and permission bits of ``backup``."""
        bfd = self._backups.open(backup)
        try:
            with _definite(path, "comparing"), self._tree.directory(parts[:-1], path=path) as dfd:
                current = open_regular(dfd, parts[-1], path)
                try:
                    return same_content(current, bfd)
                finally:
                    os.close(current)
        finally:
            os.close(bfd)


def _read_limited(fd: int, path: str) -> bytes:
    """Read all of ``fd``, failing with ``too_large`` beyond :data:`MAX_FILE_BYTES`."""
    limit = MAX_FILE_BYTES
    if os.fstat(fd).st_size > limit:
        raise ToolError(
            f"{describe(path)} is {os.fstat(fd).st_size} bytes; the limit is {limit}",
            code="too_large",
        )
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(1024 * 1024, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise ToolError(
                f"{describe(path)} grew beyond {limit} bytes while being read", code="too_large"
            )
    return b"".join(chunks)
