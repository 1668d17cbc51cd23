"""The __connector__ connector.

TEMPLATE: the note tools below keep notes in memory so that a new package builds, is
discovered and passes its tests from the first minute. Replace them with the vendor's
tools; keep the shape: a pydantic input model and a pydantic result model per tool (the
result model declares every field the tool returns: the registry checks each ``result.``
path of a compensation against it, and every call's result is checked against it), one
``@tool`` declaration with effect, permission and compensation, and errors mapped into
``reversi_core.errors``. And keep the rule of docs/engine.md (RB-10): a compensation never
overwrites a change someone made after the call; here the undo of ``create_note`` is
given the text the call wrote and refuses (code ``changed_since``) to delete a note
that holds anything else, unless a person allowed the step to overwrite
(``ctx.overwrite``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reversi_core.connector import CallContext, Connector, tool
from reversi_core.errors import ToolError
from reversi_core.manifest import Compensation, Effect


class CreateNoteArgs(BaseModel):
    """Input of ``__connector__.create_note``."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(description="The note's text.")


class NoteIdArgs(BaseModel):
    """Input of ``__connector__.get_note``."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="The note's id, as create_note returned it.")


class DeleteNoteArgs(NoteIdArgs):
    """Input of ``__connector__.delete_note``."""

    text: str | None = Field(
        default=None,
        description="The text create_note wrote: the note is deleted only while it still holds "
        "it (code changed_since otherwise). Null: deleted whatever it holds.",
    )


class NoteResult(BaseModel):
    """Result of ``__connector__.get_note``."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="The note's id.")
    text: str = Field(description="The note's text.")


class CreatedNoteResult(BaseModel):
    """Result of ``__connector__.create_note``."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="The new note's id (``__connector__.delete_note`` takes it).")
    text: str = Field(description="The text written (its undo deletes only a note holding it).")


class DeletedNoteResult(BaseModel):
    """Result of ``__connector__.delete_note``."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="The note's id, as given.")
    deleted: bool = Field(description="False when the note was gone already.")


class __Connector__Connector(Connector):
    """The __connector__ connector (template: notes kept in memory)."""

    name = "__connector__"
    credential_env = None

    def __init__(self, notes: dict[str, str] | None = None) -> None:
        self.notes: dict[str, str] = {} if notes is None else notes

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> __Connector__Connector:
        """Build the connector; the template reads no variable."""
        return cls()

    @tool(
        effect=Effect.READ_ONLY,
        permission="__connector__:notes:read",
        input=NoteIdArgs,
        output=NoteResult,
    )
    async def get_note(self, args: NoteIdArgs, ctx: CallContext) -> dict[str, Any]:
        """Read a note. Returns ``{"id", "text"}``; raises ToolError(code="not_found")."""
        if args.id not in self.notes:
            raise ToolError(f"HTTP 404: no note {args.id}", status=404, code="not_found")
        return {"id": args.id, "text": self.notes[args.id]}

    @tool(
        effect=Effect.REVERSIBLE,
        permission="__connector__:notes:write",
        input=CreateNoteArgs,
        output=CreatedNoteResult,
        compensation=Compensation(
            tool="__connector__.delete_note",
            argument_map={"id": "result.id", "text": "result.text"},
            # what the undo touches, so a rollback undoes different notes at once
            # (docs/engine.md, "Rollback in parallel"); leave it out if unsure
            resources=["__connector__:notes/{result.id}"],
        ),
    )
    async def create_note(self, args: CreateNoteArgs, ctx: CallContext) -> dict[str, Any]:
        """Create a note. Returns ``{"id", "text"}``."""
        note_id = uuid.uuid4().hex
        self.notes[note_id] = args.text
        return {"id": note_id, "text": args.text}

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="__connector__:notes:write",
        input=DeleteNoteArgs,
        output=DeletedNoteResult,
    )
    async def delete_note(self, args: DeleteNoteArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a note; a note already gone is success. Returns ``{"id", "deleted": bool}``.

        With ``text``, only while the note still holds it: raises ``ToolError`` with code
        ``changed_since`` otherwise (unless ``ctx.overwrite``).
        """
        now = self.notes.get(args.id)
        if now is not None and args.text is not None and now != args.text and not ctx.overwrite:
            raise ToolError(
                f"note {args.id}: the note's text changed since the call; it was not deleted",
                code="changed_since",
            )
        return {"id": args.id, "deleted": self.notes.pop(args.id, None) is not None}
