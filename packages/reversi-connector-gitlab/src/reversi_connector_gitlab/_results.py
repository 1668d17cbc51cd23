"""The result models of the gitlab tools: what each tool returns, field by field.

They are the manifests' ``output_schema``: the registry checks every ``result.`` source of
an argument map or a ``requires`` declaration against them. All are closed. ``project``
and the other identifiers a call was given come back as given; the fields a compensation
or an edge reads (``iid``, ``id``, ``body``, ``sha``) are never null. The shapes follow
GitLab's issue, note and branch entities (https://docs.gitlab.com/api/issues/,
https://docs.gitlab.com/api/notes/, https://docs.gitlab.com/api/branches/).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AddNoteResult",
    "CloseIssueResult",
    "CreateBranchResult",
    "CreateIssueResult",
    "DeleteBranchResult",
    "DeleteNoteResult",
    "GetIssueResult",
]

_PROJECT = "The project, as given (its ID or its full path)."
State = Literal["opened", "closed"]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: int | str = Field(description=_PROJECT)


class GetIssueResult(_Result):
    """Result of gitlab.get_issue."""

    iid: int = Field(description="The issue's number in the project.")
    id: int | None = Field(description="Its ID across the instance (null if not in the answer).")
    title: str | None = Field(description="Its title.")
    description: str | None = Field(description="Its text; null when it has none.")
    state: State | None = Field(description="'opened' or 'closed'.")
    labels: list[str] = Field(description="Its labels.")
    user_notes_count: int | None = Field(description="How many comments people left on it.")
    web_url: str | None = Field(description="Its page on GitLab.")


class CreateIssueResult(_Result):
    """Result of gitlab.create_issue."""

    iid: int = Field(ge=1, description="The new issue's number (gitlab.close_issue takes it).")
    id: int | None = Field(description="Its ID across the instance.")
    title: str | None = Field(description="Its title.")
    state: State | None = Field(description="'opened'.")
    labels: list[str] = Field(description="The labels it was given.")
    web_url: str | None = Field(description="Its page on GitLab.")


class AddNoteResult(_Result):
    """Result of gitlab.add_note."""

    issue_iid: int = Field(description="The issue commented on, as given.")
    id: int = Field(ge=1, description="The new note's id (gitlab.delete_note takes it).")
    body: str = Field(
        description="The body as GitLab stored it; the undo deletes the note only while it "
        "still reads so."
    )


class CreateBranchResult(_Result):
    """Result of gitlab.create_branch."""

    branch: str = Field(description="The new branch's name, as given.")
    ref: str = Field(description="Where it was started, as given.")
    sha: str = Field(
        description="The commit the branch was created at; the undo deletes the branch only "
        "while it still points there."
    )
    protected: bool | None = Field(
        description="Whether the name falls under a protected-branch rule."
    )
    web_url: str | None = Field(description="The branch's page on GitLab.")


class CloseIssueResult(_Result):
    """Result of gitlab.close_issue."""

    iid: int = Field(description="The issue, as given.")
    state: State = Field(description="The issue's state after the call: 'closed'.")


class DeleteNoteResult(_Result):
    """Result of gitlab.delete_note."""

    issue_iid: int = Field(description="The issue, as given.")
    note_id: int = Field(description="The note, as given.")
    deleted: bool = Field(description="False when it was gone already (GitLab answered 404).")


class DeleteBranchResult(_Result):
    """Result of gitlab.delete_branch."""

    branch: str = Field(description="The branch, as given.")
    deleted: bool = Field(description="False when it was gone already (GitLab answered 404).")
