"""The jira connector, on the HTTP kit.

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

__all__ = ["DEFAULT_BASE_URL", "JiraConnector"]

DEFAULT_BASE_URL = "https://api.jira.example"
"""TEMPLATE: the vendor's API root."""

_DOCS = "https://api.jira.example/docs"
"""TEMPLATE: the vendor's documentation; each tool cites its own page."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateNoteArgs(_Model):
    """Input of ``jira.create_note``."""

    text: str = Field(min_length=1, max_length=10_000, description="The note's text.")


class NoteIdArgs(_Model):
    """Input of ``jira.get_note`` and ``jira.delete_note``."""

    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="The note's id, as create_note gave it.")


class NoteResult(_Model):
    """What ``jira.get_note`` and ``jira.create_note`` return."""

    id: str = Field(description="The note's id.")
    text: str | None = Field(description="The note's text.")


class DeleteNoteResult(_Model):
    """What ``jira.delete_note`` returns."""

    id: str
    deleted: bool = Field(description="False when the note was already gone.")


class JiraConnector(HttpConnector):
    """The jira connector (template: an example notes API over HTTP)."""

    name = "jira"
    settings = (
        Setting("JIRA_TOKEN", "token", "a jira API token", secret=True),
        Setting("JIRA_BASE_URL", "base_url", "the jira API root", required=False),
    )
    base = BaseUrl(DEFAULT_BASE_URL)
    auth = Bearer("token")
    errors = ErrorTable(code_fields=("error.code",), message_fields=("error.message",))

    get_note = RequestTool(
        "GET",
        "/notes/{id}",
        effect=Effect.READ_ONLY,
        permission="jira:notes:read",
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
        permission="jira:notes:write",
        input=CreateNoteArgs,
        output=NoteResult,
        compensation=Compensation(tool="jira.delete_note", argument_map={"id": "result.id"}),
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
        permission="jira:notes:write",
        input=NoteIdArgs,
        output=DeleteNoteResult,
        summary="Delete a note; one already gone (404) counts as success.",
        docs=f"{_DOCS}/delete-note",
        already_done=(404,),
        echo=("id",),
        done_field="deleted",
    )
