"""The arguments of each jira tool, as pydantic models (each tool's ``input_schema``).

Every model refuses fields it does not declare. Issues and comments go into URL paths,
so they are checked before any request: an issue is its numeric id or its key
(``PROJ-123``), a comment its numeric id; nothing else can add a path segment, a query
or a fragment (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/).

An issue key is taken only in upper case, as Jira writes keys (a project key's letters are
upper case). Jira would find ``proj-2`` too, but the run links a comment, a transition or
a subtask to the step that created its issue by comparing the arguments as given with that
step's result (``requires``, compared exactly), so ``proj-2`` would not be linked to the
issue created as ``PROJ-2``; refusing it, rather than rewriting it, keeps the journaled
arguments the ones sent.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AddCommentArgs",
    "CreateIssueArgs",
    "DeleteCommentArgs",
    "DeleteIssueArgs",
    "GetIssueArgs",
    "RestoreStatusArgs",
    "TransitionIssueArgs",
]

IssueRef = Annotated[
    str,
    Field(
        pattern=r"^(?:[0-9]{1,18}|[A-Z][A-Z0-9_]{0,254}-[0-9]{1,18})$",
        description="The issue: its key in upper case, as Jira writes it, such as 'PROJ-123' "
        "(another spelling would not be linked to the step of this run that created the "
        "issue, so it is refused), or its numeric id, such as '10042'.",
    ),
]
CommentId = Annotated[
    str,
    Field(pattern=r"^[0-9]{1,18}$", description="The comment's numeric id (add_comment's 'id')."),
]
StatusId = Annotated[str, Field(pattern=r"^[0-9]{1,18}$", description="A status's numeric id.")]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetIssueArgs(_Args):
    """Arguments of jira.get_issue."""

    issue: IssueRef


class CreateIssueArgs(_Args):
    """Arguments of jira.create_issue."""

    project: str = Field(
        pattern=r"^[A-Za-z][A-Za-z0-9_]{0,254}$",
        description="The key of the project to create the issue in, such as 'PROJ'.",
    )
    summary: str = Field(min_length=1, max_length=255, description="The issue's one-line summary.")
    description: str | None = Field(
        default=None,
        max_length=32_767,
        description="The issue's description as plain text: blank lines separate paragraphs, "
        "single line breaks are kept (sent as Atlassian Document Format).",
    )
    issue_type: str = Field(
        default="Task",
        min_length=1,
        max_length=60,
        description="The issue type's name as the project defines it ('Task', 'Bug', 'Story'; "
        "'Sub-task' with a parent).",
    )
    parent: IssueRef | None = Field(
        default=None, description="For a subtask: the parent issue's key or id."
    )


class AddCommentArgs(_Args):
    """Arguments of jira.add_comment."""

    issue: IssueRef
    body: str = Field(
        min_length=1,
        max_length=32_767,
        description="The comment as plain text: blank lines separate paragraphs, single line "
        "breaks are kept (sent as Atlassian Document Format).",
    )


class TransitionIssueArgs(_Args):
    """Arguments of jira.transition_issue."""

    issue: IssueRef
    transition: str = Field(
        min_length=1,
        max_length=255,
        description="The transition to run: its id ('31'), its name ('Start Progress') or the "
        "name of the status it leads to ('In Progress'); names are compared without case. A "
        "name that fits more than one transition is refused with the choices listed.",
    )


class RestoreStatusArgs(_Args):
    """Arguments of jira.restore_status (what jira.transition_issue returned)."""

    issue: IssueRef
    status_id: StatusId = Field(
        description="The status to bring the issue back to (previous_status_id)."
    )
    status: str = Field(description="That status's name (previous_status), for messages.")
    expected_status_id: StatusId = Field(
        description="The status the transition set (status_id): the issue must still be in it."
    )
    expected_status: str = Field(description="That status's name (status), for messages.")


class DeleteIssueArgs(_Args):
    """Arguments of jira.delete_issue."""

    issue: IssueRef
    expected_summary: str | None = Field(
        default=None,
        description="The summary jira.create_issue set (its undo passes it): the issue is then "
        "deleted only while its summary and description are still the ones the call set and "
        "it has no comments; one changed since is kept (code changed_since). Null: no check.",
    )
    expected_description: str | None = Field(
        default=None,
        description="With expected_summary: the description as plain text the call set "
        "(null: it set none).",
    )


class DeleteCommentArgs(_Args):
    """Arguments of jira.delete_comment."""

    issue: IssueRef
    comment_id: CommentId
    expected_body: str | None = Field(
        default=None,
        description="The text jira.add_comment posted (its undo passes it): the comment is then "
        "deleted only while it still reads so; one edited since is kept (code changed_since). "
        "Null: no check.",
    )
