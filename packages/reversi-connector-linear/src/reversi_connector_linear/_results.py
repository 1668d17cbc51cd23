"""The result models of the linear tools: what each tool returns, field by field.

They are the manifests' ``output_schema`` (closed: a result has exactly these keys).
Fields read from Linear's answer that no compensation needs are null when the answer
lacks them; the ids a compensation or an edge reads are never null. The shapes follow
Linear's ``Issue``, ``Comment`` and payload types
(https://studio.apollographql.com/public/Linear-API/variant/current/schema/reference).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AddCommentResult",
    "ArchiveIssueResult",
    "CreateIssueResult",
    "DeleteCommentResult",
    "GetIssueResult",
]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetIssueResult(_Result):
    """Result of linear.get_issue."""

    id: str = Field(description="The issue's id (a UUID).")
    identifier: str | None = Field(description="Its identifier, such as 'ENG-123'.")
    title: str | None = Field(description="Its title.")
    description: str | None = Field(description="Its description in Markdown; null when empty.")
    url: str | None = Field(description="Its page in Linear.")
    priority: float | None = Field(description="0 none, 1 urgent, 2 high, 3 medium, 4 low.")
    state: str | None = Field(description="The name of its workflow state, such as 'Todo'.")
    state_type: str | None = Field(
        description="The kind of that state: triage, backlog, unstarted, started, completed "
        "or canceled."
    )
    team_key: str | None = Field(description="The key of its team, such as 'ENG'.")
    archived_at: str | None = Field(description="When it was archived; null if it is not.")
    created_at: str | None = Field(description="When it was created (ISO 8601).")
    updated_at: str | None = Field(description="When it last changed (ISO 8601).")


class CreateIssueResult(_Result):
    """Result of linear.create_issue."""

    id: str = Field(description="The new issue's id (linear.archive_issue takes it).")
    identifier: str | None = Field(description="Its identifier, such as 'ENG-124'.")
    title: str | None = Field(description="Its title.")
    url: str | None = Field(description="Its page in Linear.")
    team_id: str = Field(description="The team, as given.")


class AddCommentResult(_Result):
    """Result of linear.add_comment."""

    id: str = Field(description="The new comment's id (linear.delete_comment takes it).")
    issue_id: str = Field(description="The issue commented on, as given.")
    url: str | None = Field(description="The comment's page in Linear.")


class ArchiveIssueResult(_Result):
    """Result of linear.archive_issue."""

    id: str = Field(description="The issue, as given.")
    archived: bool = Field(
        description="False when Linear answered 'Entity not found': the issue is gone already "
        "(or the key can no longer see it)."
    )


class DeleteCommentResult(_Result):
    """Result of linear.delete_comment."""

    id: str = Field(description="The comment, as given.")
    deleted: bool = Field(description="False when Linear answered 'Entity not found'.")
