"""The result of each github tool, as a pydantic model (each tool's ``output_schema``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AddCommentResult",
    "AddLabelsResult",
    "CloseIssueResult",
    "CreateBranchResult",
    "CreateIssueResult",
    "DeleteBranchResult",
    "DeleteCommentResult",
    "GetIssueResult",
    "RemoveLabelsResult",
]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")

    owner: str = Field(description="The repository's owner, as the call gave it.")
    repo: str = Field(description="The repository's name, as the call gave it.")


class GetIssueResult(_Result):
    """What github.get_issue returns."""

    number: int | None = Field(description="The issue's number.")
    title: str | None
    body: str | None
    state: Literal["open", "closed"] | None
    state_reason: str | None = Field(description="completed, not_planned, reopened or null.")
    labels: list[str] = Field(description="Names of the labels the issue carries.")
    comments: int | None = Field(description="How many comments the issue has.")
    html_url: str | None
    is_pull_request: bool = Field(description="True when the issue is a pull request.")


class CreateIssueResult(_Result):
    """What github.create_issue returns."""

    number: int = Field(description="The new issue's number (what the undo closes).")
    title: str | None
    state: Literal["open", "closed"] | None
    html_url: str | None
    labels: list[str] = Field(description="Names of the labels GitHub gave the issue.")


class AddCommentResult(_Result):
    """What github.add_comment returns."""

    issue_number: int
    id: int = Field(description="The new comment's id (what the undo deletes).")
    html_url: str | None


class AddLabelsResult(_Result):
    """What github.add_labels returns."""

    issue_number: int
    added: list[str] = Field(description="Labels this call put on the issue (what the undo removes).")
    already_present: list[str] = Field(description="Labels asked for that the issue already had.")
    labels: list[str] = Field(description="Every label on the issue after the call.")


class CreateBranchResult(_Result):
    """What github.create_branch returns."""

    branch: str
    ref: str = Field(description="The full reference, refs/heads/<branch>.")
    sha: str = Field(description="The commit the branch was created at.")


class CloseIssueResult(_Result):
    """What github.close_issue returns."""

    number: int
    state: str
    state_reason: str | None


class DeleteCommentResult(_Result):
    """What github.delete_comment returns."""

    comment_id: int
    deleted: bool = Field(description="False when the comment was already gone (404).")


class RemoveLabelsResult(_Result):
    """What github.remove_labels returns."""

    issue_number: int
    removed: list[str] = Field(description="Labels this call took off the issue.")
    absent: list[str] = Field(description="Labels the issue did not carry (skipped).")


class DeleteBranchResult(_Result):
    """What github.delete_branch returns."""

    branch: str
    deleted: bool = Field(description="False when the branch was already gone.")
