"""The __connector__ connector, on the HTTP kit.

TEMPLATE: an example "notes" API stands in for the vendor's, so that a new package
builds, is discovered, is certified and documented from the first minute. Replace the
settings, base URL, auth scheme, error table and tools with the vendor's: a tool that is
one request is one :class:`~reversi_core.http.RequestTool` declaration; one that needs
more is an ``@tool`` method calling :meth:`~reversi_core.http.HttpConnector.request`.
Cite the vendor's documentation page in every tool (see docs/development.md).

A compensation never overwrites a change someone made after the call (docs/engine.md,
RB-10): the forward call returns what its write produced (here the note's ``ETag``), and
the undo sends it as a precondition (``If-Match``), so a note someone edited since is
refused with code ``changed_since`` naming what changed, unless a person allowed the
step to overwrite (``ctx.overwrite``). Where the vendor offers no precondition, read and
compare first.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import (
    BaseUrl,
    Bearer,
    ErrorTable,
    HttpConnector,
    HttpResponse,
    RequestTool,
    Setting,
    url_path,
)
from reversi_core.manifest import Compensation, Effect

__all__ = ["DEFAULT_BASE_URL", "__Connector__Connector"]

DEFAULT_BASE_URL = "https://api.__connector__.example"
"""TEMPLATE: the vendor's API root."""

_DOCS = "https://api.__connector__.example/docs"
"""TEMPLATE: the vendor's documentation; each tool cites its own page."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateNoteArgs(_Model):
    """Input of ``__connector__.create_note``."""

    text: str = Field(min_length=1, max_length=10_000, description="The note's text.")


_NOTE_ID = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="The note's id, as create_note gave it.")


class NoteIdArgs(_Model):
    """Input of ``__connector__.get_note``."""

    id: str = _NOTE_ID


class DeleteNoteArgs(_Model):
    """Input of ``__connector__.delete_note``."""

    id: str = _NOTE_ID
    etag: str | None = Field(
        default=None,
        description="The ETag create_note returned: the note is deleted only while it still has "
        "it (code changed_since otherwise). Null: deleted whatever it holds.",
    )


class NoteResult(_Model):
    """What ``__connector__.get_note`` returns."""

    id: str = Field(description="The note's id.")
    text: str | None = Field(description="The note's text.")


class CreatedNoteResult(NoteResult):
    """What ``__connector__.create_note`` returns."""

    etag: str = Field(description="The new note's ETag: its undo deletes it only while it has it.")


class DeleteNoteResult(_Model):
    """What ``__connector__.delete_note`` returns."""

    id: str
    deleted: bool = Field(description="False when the note was already gone.")


def _created(connector: Any, args: CreateNoteArgs, resp: HttpResponse) -> dict[str, Any]:
    """The new note's id, text and ETag (an accepted create without them is uncertain)."""
    note = connector.expect_object(resp, "note", wrote=True)
    tag = resp.headers.get("etag")
    if not tag:
        raise connector.malformed("has no ETag", resp, wrote=True)
    ident = connector.expect_field(note, "id", resp, wrote=True)
    return {"id": ident, "text": note.get("text"), "etag": tag}


class __Connector__Connector(HttpConnector):
    """The __connector__ connector (template: an example notes API over HTTP)."""

    name = "__connector__"
    settings = (
        Setting("__CONNECTOR___TOKEN", "token", "a __connector__ API token", secret=True),
        Setting("__CONNECTOR___BASE_URL", "base_url", "the __connector__ API root", required=False),
    )
    base = BaseUrl(DEFAULT_BASE_URL)
    auth = Bearer("token")
    errors = ErrorTable(code_fields=("error.code",), message_fields=("error.message",))

    get_note = RequestTool(
        "GET",
        "/notes/{id}",
        effect=Effect.READ_ONLY,
        permission="__connector__:notes:read",
        input=NoteIdArgs,
        output=NoteResult,
        summary="Read a note.",
        docs=f"{_DOCS}/get-note",
        echo=("id",),
        keep={"text": "text"},
    )
    create_note = RequestTool(
        "POST",
        "/notes",
        effect=Effect.REVERSIBLE,
        permission="__connector__:notes:write",
        input=CreateNoteArgs,
        output=CreatedNoteResult,
        compensation=Compensation(
            tool="__connector__.delete_note", argument_map={"id": "result.id", "etag": "result.etag"}
        ),
        summary="Create a note; undone by deleting it (only while nobody edited it).",
        docs=f"{_DOCS}/create-note",
        body=("text",),
        keep=_created,
    )

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="__connector__:notes:write",
        input=DeleteNoteArgs,
        output=DeleteNoteResult,
    )
    async def delete_note(self, args: DeleteNoteArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a note; one already gone (404) counts as success.

        TEMPLATE: ``DELETE /notes/{id}`` with ``If-Match: <etag>`` (the vendor's page:
        https://api.__connector__.example/docs/delete-note); the vendor's 412 means someone
        changed the note since, and the undo must refuse, naming what changed. Returns
        ``{"id", "deleted"}``. Raises ``ToolError`` with code ``changed_since``, or naming
        the HTTP status; ``EffectUncertainError`` when the answer was lost.
        """
        precondition = {} if args.etag is None or ctx.overwrite else {"If-Match": args.etag}
        try:
            resp = await self.request(
                ctx,
                "DELETE",
                url_path("/notes/{id}", id=args.id),
                headers=precondition,
                ok_statuses=frozenset({404}),
            )
        except ToolError as exc:
            if exc.status != 412:
                raise
            raise ToolError(
                "__connector__.delete_note: the note's text changed since the call (HTTP 412); "
                "it was not deleted. Undo that change and roll back again, or let the rollback "
                "overwrite it (reversi rollback RUN --overwrite STEP)",
                status=412,
                code="changed_since",
            ) from None
        return {"id": args.id, "deleted": resp.status != 404}
