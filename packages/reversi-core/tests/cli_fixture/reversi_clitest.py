"""Two tiny connectors for the command-line and MCP-serving tests (test-only, never shipped).

This directory is put on ``sys.path`` (in-process) or ``PYTHONPATH`` (subprocesses);
its ``reversi_clitest-0.1.dist-info`` registers both classes in the
``reversi.connectors`` entry-point group, exactly as an installed connector would.

* ``note``: notes as files under ``<root>/notes``; always enabled, needs ``root``.
  Creating ``<root>/.locked`` makes every write fail definitely (a ToolError), which
  lets a test make a compensation fail on demand. ``note.create`` declares the note it
  touches (``note:<name>``), the others no resources.
* ``vault``: enabled by ``VAULT_TOKEN``; keeps nothing, and reports a 403 that quotes
  its token (which must come out scrubbed) for the secret named ``forbidden``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reversi_core import (
    CallContext,
    CliOption,
    Compensation,
    ConfigurationError,
    Connector,
    Effect,
    EffectUncertainError,
    ToolError,
    register_secret,
    tool,
)

NAME = Field(pattern=r"^[a-z0-9_-]+$", description="note name")


class NameArgs(BaseModel):
    name: str = NAME


class NoteArgs(BaseModel):
    name: str = NAME
    text: str


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadResult(_Result):
    name: str
    text: str


class CreatedResult(_Result):
    """What note.create returns (and what note.flaky and note.crash would, had they returned)."""

    name: str
    created: bool


class DeletedResult(_Result):
    name: str
    deleted: bool


class PublishedResult(_Result):
    name: str
    published: bool


class SecretResult(_Result):
    name: str


class RemovedResult(_Result):
    name: str
    removed: bool


class NoteConnector(Connector):
    """Notes as files: the smallest connector with every effect."""

    name = "note"
    credential_env = None
    open_world = False
    cli_options = (CliOption("--root", "root", "where the notes live", "DIR"),)

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.dir = self.root / "notes"
        #: idempotency keys seen, for tests that check the key reached the tool
        self.keys: list[str | None] = []

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> NoteConnector:
        root = options.get("root")
        if root is None:
            raise ConfigurationError("note needs --root DIR")
        return cls(root)

    def _path(self, name: str) -> Path:
        return self.dir / f"{name}.txt"

    def _check_lock(self) -> None:
        if (self.root / ".locked").exists():
            raise ToolError("note store is locked (remove .locked)", status=423, code="locked")

    def _record_key(self, ctx: CallContext) -> None:
        self.keys.append(ctx.idempotency_key)
        if ctx.idempotency_key:
            (self.root / "last-key").write_text(ctx.idempotency_key)

    @tool(
        effect=Effect.REVERSIBLE,
        permission="note:write",
        input=NoteArgs,
        output=CreatedResult,
        compensation=Compensation(
            tool="note.delete", argument_map={"name": "args.name"}, resources=["note:{args.name}"]
        ),
    )
    async def create(self, args: NoteArgs, ctx: CallContext) -> dict[str, Any]:
        """Create a note; fails if it exists."""
        self._record_key(ctx)
        self._check_lock()
        path = self._path(args.name)
        if path.exists():
            raise ToolError(f"note {args.name} exists", status=409, code="exists")
        self.dir.mkdir(parents=True, exist_ok=True)
        path.write_text(args.text)
        return {"name": args.name, "created": True}

    @tool(effect=Effect.IDEMPOTENT, permission="note:delete", input=NameArgs, output=DeletedResult)
    async def delete(self, args: NameArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a note; deleting a missing note changes nothing."""
        self._record_key(ctx)
        self._check_lock()
        path = self._path(args.name)
        existed = path.exists()
        path.unlink(missing_ok=True)
        return {"name": args.name, "deleted": existed}

    @tool(effect=Effect.READ_ONLY, permission="note:read", input=NameArgs, output=ReadResult)
    async def read(self, args: NameArgs, ctx: CallContext) -> dict[str, Any]:
        """Read a note."""
        path = self._path(args.name)
        if not path.exists():
            raise ToolError(f"no note {args.name}", status=404, code="not_found")
        return {"name": args.name, "text": path.read_text()}

    @tool(
        effect=Effect.IRREVERSIBLE,
        permission="note:publish",
        input=NameArgs,
        output=PublishedResult,
    )
    async def publish(self, args: NameArgs, ctx: CallContext) -> dict[str, Any]:
        """Publish a note to the world (cannot be taken back)."""
        return {"name": args.name, "published": True}

    @tool(
        effect=Effect.REVERSIBLE,
        permission="note:write",
        input=NoteArgs,
        output=CreatedResult,
        compensation=Compensation(tool="note.delete", argument_map={"name": "args.name"}),
    )
    async def flaky(self, args: NoteArgs, ctx: CallContext) -> dict[str, Any]:
        """Write a note, then lose the connection before the answer arrives."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self._path(args.name).write_text(args.text)
        raise EffectUncertainError(
            f"connection lost while writing note {args.name}; outcome unknown"
        )

    @tool(
        effect=Effect.REVERSIBLE,
        permission="note:write",
        input=NoteArgs,
        output=CreatedResult,
        compensation=Compensation(tool="note.delete", argument_map={"name": "args.name"}),
    )
    async def crash(self, args: NoteArgs, ctx: CallContext) -> dict[str, Any]:
        """A tool with a bug: raises something unexpected."""
        raise RuntimeError("boom")


class SecretArgs(BaseModel):
    name: str = NAME


class VaultConnector(Connector):
    """A credentialed connector that keeps nothing: for flag refusal and scrubbing tests."""

    name = "vault"
    credential_env = "VAULT_TOKEN"
    env_vars = ("VAULT_TOKEN", "VAULT_URL")

    def __init__(self, token: str) -> None:
        register_secret(token)
        self.token = token

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> VaultConnector:
        token = environ.get("VAULT_TOKEN")
        if not token:
            raise ConfigurationError("vault needs VAULT_TOKEN in the environment")
        return cls(token)

    @tool(
        effect=Effect.REVERSIBLE,
        permission="vault:write",
        input=SecretArgs,
        output=SecretResult,
        compensation=Compensation(tool="vault.remove", argument_map={"name": "args.name"}),
    )
    async def put(self, args: SecretArgs, ctx: CallContext) -> dict[str, Any]:
        """Store a secret."""
        return {"name": args.name}

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="vault:delete",
        input=SecretArgs,
        output=RemovedResult,
    )
    async def remove(self, args: SecretArgs, ctx: CallContext) -> dict[str, Any]:
        """Remove a secret; the secret named ``forbidden`` answers 403."""
        if args.name == "forbidden":
            raise ToolError(f"403 Forbidden for token {self.token}", status=403, code="forbidden")
        return {"name": args.name, "removed": True}
