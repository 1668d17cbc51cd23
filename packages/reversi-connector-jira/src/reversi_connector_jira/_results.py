"""The result models of the jira tools (the manifests' ``output_schema``; closed).

Fields read from Jira's answer that no compensation needs are null when the answer
lacks them; the ids and statuses a compensation reads are never null. The shapes follow
Jira's issue, comment and transition objects
(https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AddCommentResult",
    "CreateIssueResult",
    "DeleteCommentResult",
    "DeleteIssueResult",
    "GetIssueResult",
    "RestoreStatusResult",
    "TransitionIssueResult",
]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetIssueResult(_Result):
    """Result of jira.get_issue."""

    id: str = Field(description="The issue's numeric id.")
    key: str | None = Field(
        description="Its key, such as 'PROJ-123' (the current one, if it moved)."
    )
    summary: str | None = Field(description="Its summary.")
    description: str | None = Field(
        description="Its description as plain text; null when it has none."
    )
    status: str | None = Field(description="The name of its status, such as 'In Progress'.")
    status_id: str | None = Field(description="The id of its status.")
    issue_type: str | None = Field(description="The name of its issue type.")
    project: str | None = Field(description="The key of its project.")
    parent: str | None = Field(description="Its parent's key, for a subtask; else null.")
    subtasks: list[str] = Field(description="The keys of its subtasks.")
    created: str | None = Field(description="When it was created, as Jira writes it.")
    updated: str | None = Field(description="When it last changed, as Jira writes it.")


class CreateIssueResult(_Result):
    """Result of jira.create_issue."""

    id: str = Field(description="The new issue's numeric id (jira.delete_issue takes it).")
    key: str = Field(description="Its key, such as 'PROJ-124'.")
    url: str | None = Field(description="Its REST URL ('self').")
    summary: str = Field(description="The summary the call set (jira.delete_issue compares it).")
    description: str | None = Field(
        description="The description the call set, as plain text (null: none); "
        "jira.delete_issue compares it."
    )


class AddCommentResult(_Result):
    """Result of jira.add_comment."""

    issue: str = Field(description="The issue commented on, as given.")
    id: str = Field(description="The new comment's id (jira.delete_comment takes it).")
    created: str | None = Field(description="When it was created, as Jira writes it.")
    url: str | None = Field(description="Its REST URL ('self').")
    body: str = Field(description="The text the call posted (jira.delete_comment compares it).")


class TransitionIssueResult(_Result):
    """Result of jira.transition_issue."""

    issue: str = Field(description="The issue, as given.")
    transition_id: str = Field(description="The transition that ran.")
    transition_name: str | None = Field(description="Its name.")
    previous_status: str = Field(
        description="The status's name before the call (restore_status takes it)."
    )
    previous_status_id: str = Field(description="That status's id (restore_status takes it).")
    status: str = Field(description="The status the transition set.")
    status_id: str = Field(description="Its id.")


class RestoreStatusResult(_Result):
    """Result of jira.restore_status."""

    issue: str = Field(description="The issue, as given.")
    restored: bool = Field(description="False when the issue was in that status already.")
    status: str = Field(description="The status the issue is in now.")
    status_id: str = Field(description="Its id.")
    transition_id: str | None = Field(
        description="The transition that ran; null when none was needed."
    )


class DeleteIssueResult(_Result):
    """Result of jira.delete_issue."""

    issue: str = Field(description="The issue, as given.")
    deleted: bool = Field(description="False when it was gone already (Jira answered 404).")


class DeleteCommentResult(_Result):
    """Result of jira.delete_comment."""

    issue: str = Field(description="The issue, as given.")
    comment_id: str = Field(description="The comment, as given.")
    deleted: bool = Field(description="False when it was gone already (Jira answered 404).")
