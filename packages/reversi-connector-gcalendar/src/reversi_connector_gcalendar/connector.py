"""The gcalendar connector, on the HTTP kit.

TEMPLATE: an example "notes" API stands in for the vendor's, so that a new package
builds, is discovered, is certified and documented from the first minute. Replace the
settings, base URL, auth scheme, error table and tools with the vendor's: a tool that is
one request is one :class:`~reversi_core.http.RequestTool` declaration; one that needs
more is an ``@tool`` method calling :meth:`~reversi_core.http.HttpConnector.request`.
Cite the vendor's documentation page in every tool (see docs/development.md).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from reversi_core.http import BaseUrl, Bearer, ErrorTable, HttpConnector, RequestTool, Setting
from reversi_core.manifest import Compensation, Effect

__all__ = ["DEFAULT_BASE_URL", "GcalendarConnector"]

DEFAULT_BASE_URL = "https://api.gcalendar.example"
"""TEMPLATE: the vendor's API root."""

_DOCS = "https://api.gcalendar.example/docs"
"""TEMPLATE: the vendor's documentation; each tool cites its own page."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateNoteArgs(_Model):
    """Input of ``gcalendar.create_note``."""

    text: str = Field(min_length=1, max_length=10_000, description="The note's text.")


class NoteIdArgs(_Model):
    """Input of ``gcalendar.get_note`` and ``gcalendar.delete_note``."""

    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="The note's id, as create_note gave it.")


class NoteResult(_Model):
    """What ``gcalendar.get_note`` and ``gcalendar.create_note`` return."""

    id: str = Field(description="The note's id.")
    text: str | None = Field(description="The note's text.")


class DeleteNoteResult(_Model):
    """What ``gcalendar.delete_note`` returns."""

    id: str
    deleted: bool = Field(description="False when the note was already gone.")


class GcalendarConnector(HttpConnector):
    """The gcalendar connector (template: an example notes API over HTTP)."""

    name = "gcalendar"
    settings = (
        Setting("GCALENDAR_TOKEN", "token", "a gcalendar API token", secret=True),
        Setting("GCALENDAR_BASE_URL", "base_url", "the gcalendar API root", required=False),
    )
    base = BaseUrl(DEFAULT_BASE_URL)
    auth = Bearer("token")
    errors = ErrorTable(code_fields=("error.code",), message_fields=("error.message",))

    get_note = RequestTool(
        "GET",
        "/notes/{id}",
        effect=Effect.READ_ONLY,
        permission="gcalendar:notes:read",
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
        permission="gcalendar:notes:write",
        input=CreateNoteArgs,
        output=NoteResult,
        compensation=Compensation(tool="gcalendar.delete_note", argument_map={"id": "result.id"}),
        summary="Create a note; undone by deleting it.",
        docs=f"{_DOCS}/create-note",
        body=("text",),
        keep={"id": "id", "text": "text"},
        required=("id",),
    )
    delete_note = RequestTool(
        "DELETE",
        "/notes/{id}",
        effect=Effect.IDEMPOTENT,
        permission="gcalendar:notes:write",
        input=NoteIdArgs,
        output=DeleteNoteResult,
        summary="Delete a note; one already gone (404) counts as success.",
        docs=f"{_DOCS}/delete-note",
        already_done=(404,),
        echo=("id",),
        done_field="deleted",
    )
