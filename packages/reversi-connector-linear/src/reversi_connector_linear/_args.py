"""The arguments of each linear tool, as pydantic models (each tool's ``input_schema``).

Every model refuses fields it does not declare. Identifiers travel in GraphQL variables,
never in a URL, and are checked before any request: a Linear id is a UUID; an issue may
also be named by its identifier (``ENG-123``), which Linear accepts wherever it takes an
issue (https://linear.app/developers/graphql).

Both are taken only as Linear writes them: a UUID in lower case, an identifier in upper
case. The run links a comment to the step that created its issue by comparing the
arguments as given with that step's result (``requires``, compared exactly), so
``eng-2`` would not be linked to the issue created as ``ENG-2``; refusing it, rather than
rewriting it, keeps the journaled arguments the ones sent.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AddCommentArgs",
    "ArchiveIssueArgs",
    "CreateIssueArgs",
    "DeleteCommentArgs",
    "GetIssueArgs",
]

UUID_PATTERN = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
"""A Linear id: a UUID in lower case, as Linear gives it (Linear generates version 4 UUIDs)."""

IDENTIFIER_PATTERN = r"[A-Z][A-Z0-9_]{0,9}-[0-9]{1,9}"
"""An issue's identifier in upper case, as Linear writes it: its team's key, a dash and its
number (``ENG-123``)."""

Uuid = Annotated[
    str,
    Field(pattern=f"^{UUID_PATTERN}$", description="A Linear id: a UUID, in lower case."),
]
IssueRef = Annotated[
    str,
    Field(
        pattern=f"^(?:{UUID_PATTERN}|{IDENTIFIER_PATTERN})$",
        description="The issue: its id (a UUID, in lower case) or its identifier in upper case, "
        "such as 'ENG-123', as Linear writes them (another spelling would not be linked to the "
        "step of this run that created the issue, so it is refused).",
    ),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetIssueArgs(_Args):
    """Arguments of linear.get_issue."""

    id: IssueRef


class CreateIssueArgs(_Args):
    """Arguments of linear.create_issue."""

    team_id: Uuid = Field(description="The id (a UUID) of the team the issue belongs to.")
    title: str = Field(min_length=1, max_length=255, description="The issue's title.")
    description: str | None = Field(
        default=None, max_length=100_000, description="The issue's description, in Markdown."
    )
    priority: int | None = Field(
        default=None,
        ge=0,
        le=4,
        description="0 no priority, 1 urgent, 2 high, 3 medium, 4 low (Linear's scale); "
        "the team's default when omitted.",
    )


class AddCommentArgs(_Args):
    """Arguments of linear.add_comment."""

    issue_id: IssueRef
    body: str = Field(min_length=1, max_length=100_000, description="The comment, in Markdown.")


class ArchiveIssueArgs(_Args):
    """Arguments of linear.archive_issue."""

    id: IssueRef


class DeleteCommentArgs(_Args):
    """Arguments of linear.delete_comment."""

    id: Uuid = Field(description="The comment's id (the 'id' add_comment returned).")
