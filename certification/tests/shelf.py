"""``shelf``: a small fs-like connector (text files under a root directory), and a broken variant.

It stands, in the self-test, for a connector confined to a directory, as fs is: its
backend is a scratch root with a sentinel tree beside it, its fixture's ``outside``
fingerprints that sentinel tree (everything in the backend directory but the root), and
its failing examples try to leave the root (``../``, an absolute path) with every
writing tool. :class:`ShelfConnector` refuses them before touching anything and passes
every check that applies to it; :class:`BrokenShelfEscapes` writes first and checks
the path afterwards, so it refuses the call but has already written beside the root,
which only a look outside the root can see.

Tools: ``shelf.read`` (read-only), ``shelf.put`` (creates a new file; reversible by
``shelf.remove``) and ``shelf.remove`` (idempotent: a file already gone is success). As
fs does, ``shelf.put`` returns the SHA-256 of what it wrote and its undo removes the file
only while it still holds that content, so a rollback never deletes someone's later edit.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reversi_core import CallContext, Compensation, Connector, ToolError, tool
from reversi_core.manifest import Effect
from reversi_core.testing import CertificationFixture, ConcurrentChange, ExampleContext, Failure

SENTINELS: Mapping[str, str] = {
    "sentinel.txt": "must stay\n",
    "keep/inner.txt": "must stay too\n",
}
"""The files written beside the root, by path relative to the backend directory's ``beside/``."""


class PathArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


class RemoveArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    sha256: str | None = None


class PutArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    text: str


class TextFile(BaseModel):
    """Result of shelf.read."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="The file's path, as given.")
    text: str = Field(description="Its text.")


class Placed(BaseModel):
    """Result of shelf.put."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="The new file's path, as given.")
    sha256: str = Field(description="The SHA-256 of the bytes written, in hex.")


class Removed(BaseModel):
    """Result of shelf.remove."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="The file's path, as given.")
    removed: bool = Field(description="False when it was gone already.")


PUT_UNDO = Compensation(
    tool="shelf.remove", argument_map={"path": "args.path", "sha256": "result.sha256"}
)


class ShelfConnector(Connector):
    """Text files under ``root``; every path is relative to it and may not leave it."""

    name = "shelf"
    credential_env = None

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> Connector:
        return cls(Path(options["root"]))

    def inside(self, path: str) -> Path:
        """``path`` under the root; raises ``ToolError(code="path_refused")`` if it would leave it."""
        if path.startswith("/") or ".." in path.split("/") or not path.strip("/."):
            raise ToolError(f"path {path!r} refused: it leaves the root", code="path_refused")
        return self.root / path

    @tool(effect=Effect.READ_ONLY, permission="shelf:read", input=PathArgs, output=TextFile)
    async def read(self, args: PathArgs, ctx: CallContext) -> dict[str, Any]:
        """Read a file: ``{"path", "text"}``; ``not_found`` when there is none."""
        target = self.inside(args.path)
        if not target.is_file():
            raise ToolError(f"{args.path!r} does not exist", code="not_found")
        return {"path": args.path, "text": target.read_text(encoding="utf-8")}

    @tool(
        effect=Effect.REVERSIBLE,
        permission="shelf:write",
        input=PutArgs,
        output=Placed,
        compensation=PUT_UNDO,
    )
    async def put(self, args: PutArgs, ctx: CallContext) -> dict[str, Any]:
        """Create a new file: ``{"path", "sha256"}``; ``exists`` when the path is taken."""
        target = self.inside(args.path)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise ToolError(f"{args.path!r} already exists", code="exists") from None
        except FileNotFoundError:
            raise ToolError(
                f"the directory of {args.path!r} does not exist", code="not_found"
            ) from None
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(args.text)
        return {"path": args.path, "sha256": _digest(args.text.encode())}

    @tool(effect=Effect.IDEMPOTENT, permission="shelf:write", input=RemoveArgs, output=Removed)
    async def remove(self, args: RemoveArgs, ctx: CallContext) -> dict[str, Any]:
        """Remove a file: ``{"path", "removed": bool}``; one already gone is success.

        With ``sha256``, only while the file holds that content: otherwise ``changed_since``
        (unless ``ctx.overwrite``).
        """
        target = self.inside(args.path)
        try:
            checked = args.sha256 is not None and not ctx.overwrite and target.is_file()
            if checked and _digest(target.read_bytes()) != args.sha256:
                raise ToolError(
                    f"{args.path!r}: the file's content changed since the call; not removed",
                    code="changed_since",
                )
            target.unlink()
        except FileNotFoundError:
            return {"path": args.path, "removed": False}
        except IsADirectoryError:
            raise ToolError(f"{args.path!r} is a directory", code="is_a_directory") from None
        return {"path": args.path, "removed": True}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class BrokenShelfEscapes(ShelfConnector):
    """put writes the file first and checks the path afterwards: refused, but written beside the root."""

    @tool(
        effect=Effect.REVERSIBLE,
        permission="shelf:write",
        input=PutArgs,
        output=Placed,
        compensation=PUT_UNDO,
    )
    async def put(self, args: PutArgs, ctx: CallContext) -> dict[str, Any]:
        """Create a new file (checking its path too late)."""
        target = self.root / args.path  # an absolute path replaces the root altogether
        if target.exists():
            raise ToolError(f"{args.path!r} already exists", code="exists")
        target.write_text(args.text, encoding="utf-8")
        self.inside(args.path)
        return {"path": args.path, "sha256": _digest(args.text.encode())}


# -- the fixture -----------------------------------------------------------------------


@dataclass(frozen=True)
class ShelfBackend:
    """A scratch ``root`` and, beside it in the same directory, the sentinel tree ``beside``."""

    root: Path
    beside: Path


def _files(top: Path, skip: Path | None = None) -> dict[str, str]:
    """Every entry under ``top`` (but ``skip``) by relative path: a file's text, or ``"<dir>"``."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        here = Path(dirpath)
        if skip is not None and here == top and skip.name in dirnames:
            dirnames.remove(skip.name)
        for name in dirnames:
            found[(here / name).relative_to(top).as_posix()] = "<dir>"
        for name in filenames:
            found[(here / name).relative_to(top).as_posix()] = (here / name).read_text("utf-8")
    return found


@contextmanager
def shelf_backend(directory: Path) -> Iterator[ShelfBackend]:
    root = directory / "root"
    beside = directory / "beside"
    root.mkdir(parents=True)
    for rel, text in SENTINELS.items():
        path = beside / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    yield ShelfBackend(root=root, beside=beside)


def _seed(backend: ShelfBackend) -> None:
    (backend.root / "kept.txt").write_text("seeded\n", encoding="utf-8")


@contextmanager
def _undo_fault(backend: ShelfBackend, tool: str, args: Mapping[str, Any]) -> Iterator[None]:
    """A directory stands where shelf.remove must remove a file, until the block ends."""
    target = backend.root / str(args["path"])
    held = target.read_bytes()
    target.unlink()
    target.mkdir()
    try:
        yield
    finally:
        target.rmdir()
        target.write_bytes(held)


async def _a_put_file(ctx: ExampleContext[ShelfBackend]) -> Mapping[str, Any]:
    await ctx.call("shelf.put", {"path": "made.txt", "text": "x"})
    return {"path": "made.txt"}


def _absolute(name: str, **more: Any) -> Any:
    """An args builder giving ``path`` as the absolute path of ``name`` in the sentinel tree."""

    async def build(ctx: ExampleContext[ShelfBackend]) -> Mapping[str, Any]:
        return {"path": str(ctx.handle.beside / name), **more}

    return build


def _someone_edits(
    backend: ShelfBackend, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange:
    """A person rewrites the file ``shelf.put`` created."""
    target = backend.root / str(args["path"])
    produced = target.read_bytes()
    target.write_bytes(produced + b"a person's line\n")
    return ConcurrentChange(what="the file's content", revert=lambda: target.write_bytes(produced))


def shelf_fixture(cls: type[ShelfConnector] = ShelfConnector) -> CertificationFixture[ShelfBackend]:
    """The fixture of ``cls`` (the good connector or the broken one)."""
    refused = "path_refused"
    return CertificationFixture(
        backend=shelf_backend,
        seed=_seed,
        build=lambda backend: cls(backend.root),
        fingerprint=lambda backend: _files(backend.root),
        outside=lambda backend: _files(backend.root.parent, skip=backend.root),
        examples={
            "shelf.read": [{"path": "kept.txt"}],
            "shelf.put": [{"path": "new.txt", "text": "hello\n"}],
            "shelf.remove": [_a_put_file, {"path": "never-there.txt"}],
        },
        failures={
            "shelf.read": [
                Failure({"path": "missing.txt"}, code="not_found"),
                Failure({"path": "../beside/sentinel.txt"}, code=refused),
            ],
            "shelf.put": [
                Failure({"path": "kept.txt", "text": "x"}, code="exists"),
                Failure({"path": "../beside/escaped.txt", "text": "x"}, code=refused),
                Failure(_absolute("escaped.txt", text="x"), code=refused),
            ],
            "shelf.remove": [
                Failure({"path": "../beside/sentinel.txt"}, code=refused),
                Failure(_absolute("keep/inner.txt"), code=refused),
            ],
        },
        undo_fault=_undo_fault,
        concurrent_change=_someone_edits,
        not_applicable={
            "retry": "the shelf lives on a local disk: no transport can drop a connection",
            "permission_denial": "the shelf has no service that could answer 401 or 403",
            "timeout": "a local file operation has no remote peer that could stay silent",
            "redaction": "the shelf connector holds no credential that could leak",
        },
    )
