"""The result models of the github tools: what each tool returns, field by field.

They are the manifests' ``output_schema``: the registry checks every ``result.`` source of
an argument map or a ``requires`` declaration against them, and
:meth:`reversi_core.connector.Connector.call` checks every result against them. All are
closed (a result has exactly these keys). ``owner``, ``repo`` and the other names a call
was given come back as given. A field read from GitHub's answer that the connector does
not need is null when the answer lacks it (so that a write GitHub accepted is not made
uncertain by a missing ``html_url``); the fields a compensation or an edge reads
(``number``, ``id``, ``added``, ``sha``) are never null. The shapes follow GitHub's issue,
comment, label and git reference objects
(https://docs.github.com/en/rest/issues/issues#get-an-issue,
https://docs.github.com/en/rest/issues/comments#create-an-issue-comment,
https://docs.github.com/en/rest/git/refs#create-a-reference).
"""

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

_OWNER = "The repository's owner, as given."
_REPO = "The repository's name, as given."
_URL = "The issue's page on GitHub; null if GitHub's answer lacks it."

State = Literal["open", "closed"]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")

    owner: str = Field(description=_OWNER)
    repo: str = Field(description=_REPO)


class GetIssueResult(_Result):
    """Result of github.get_issue."""

    number: int | None = Field(description="The issue's number (null if GitHub's answer lacks it).")
    title: str | None = Field(description="The issue's title (null if GitHub's answer lacks it).")
    body: str | None = Field(description="The issue's text in Markdown; null when it has none.")
    state: State | None = Field(description="'open' or 'closed' (null if the answer lacks it).")
    state_reason: str | None = Field(
        description="Why it is in that state, as GitHub records it ('completed', "
        "'not_planned', 'reopened', 'duplicate'), or null."
    )
    labels: list[str] = Field(description="The names of its labels.")
    comments: int | None = Field(
        description="How many comments it has (null if GitHub's answer lacks it)."
    )
    html_url: str | None = Field(description=_URL)
    is_pull_request: bool = Field(description="Whether the issue is a pull request.")


class CreateIssueResult(_Result):
    """Result of github.create_issue."""

    number: int = Field(ge=1, description="The new issue's number (github.close_issue takes it).")
    title: str | None = Field(description="Its title (null if GitHub's answer lacks it).")
    state: State | None = Field(description="'open' (null if GitHub's answer lacks it).")
    html_url: str | None = Field(description=_URL)
    labels: list[str] = Field(description="The names of the labels it was given.")


class AddCommentResult(_Result):
    """Result of github.add_comment."""

    issue_number: int = Field(description="The issue commented on, as given.")
    id: int = Field(ge=1, description="The new comment's id (github.delete_comment takes it).")
    body_sha256: str = Field(
        description="The SHA-256 (hex, of its UTF-8) of the body as GitHub stored it: "
        "github.delete_comment deletes the comment only while its body is still that."
    )
    html_url: str | None = Field(
        description="The comment's page on GitHub; null if GitHub's answer lacks it."
    )


class AddLabelsResult(_Result):
    """Result of github.add_labels."""

    issue_number: int = Field(description="The issue labelled, as given.")
    added: list[str] = Field(
        description="The labels this call put on the issue, as GitHub spells them "
        "(github.remove_labels takes them)."
    )
    already_present: list[str] = Field(
        description="The labels asked for that the issue carried already."
    )
    labels: list[str] = Field(description="All the issue's labels after the call.")


class CreateBranchResult(_Result):
    """Result of github.create_branch."""

    branch: str = Field(description="The new branch's name, as given.")
    ref: str = Field(description="Its full reference, 'refs/heads/<branch>'.")
    sha: str = Field(description="The commit the branch was created at.")


class CloseIssueResult(_Result):
    """Result of github.close_issue."""

    number: int = Field(description="The issue closed, as given.")
    state: State = Field(description="The issue's state after the call: 'closed'.")
    state_reason: str | None = Field(
        description="Why it is closed, as GitHub records it ('not_planned', 'completed'...)."
    )


class DeleteCommentResult(_Result):
    """Result of github.delete_comment."""

    comment_id: int = Field(description="The comment, as given.")
    deleted: bool = Field(description="False when it was gone already (GitHub answered 404).")


class RemoveLabelsResult(_Result):
    """Result of github.remove_labels."""

    issue_number: int = Field(description="The issue, as given.")
    removed: list[str] = Field(description="The labels this call took off the issue.")
    absent: list[str] = Field(description="The labels the issue did not carry.")


class DeleteBranchResult(_Result):
    """Result of github.delete_branch."""

    branch: str = Field(description="The branch, as given.")
    deleted: bool = Field(description="False when it was gone already.")
