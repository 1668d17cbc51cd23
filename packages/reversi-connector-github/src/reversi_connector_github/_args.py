"""The arguments of each github tool, as pydantic models (each tool's ``input_schema``).

Every model refuses fields it does not declare. Owners, repositories and branch names
are checked the way GitHub and git check them before any request is made, so no value
can add a path segment, a query or a fragment to a request.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "AddCommentArgs",
    "AddLabelsArgs",
    "CloseIssueArgs",
    "CreateBranchArgs",
    "CreateIssueArgs",
    "DeleteBranchArgs",
    "DeleteCommentArgs",
    "GetIssueArgs",
    "RemoveLabelsArgs",
]

def _check_branch(name: str) -> str:
    """Refuse a branch name git would refuse (``git check-ref-format --branch``), in short."""
    problems = []
    if name.startswith("refs/"):
        problems.append("give the branch name without 'refs/' (refs/heads/ is added)")
    if name.startswith(("-", "/")) or name.endswith(("/", ".", ".lock")):
        problems.append("it may not start with '-' or '/' nor end with '/', '.' or '.lock'")
    if ".." in name or "//" in name or "@{" in name or name == "@":
        problems.append("it may not contain '..', '//' or '@{', nor be '@'")
    if re.search(r"[\x00-\x20\x7f~^:?*\[\\]", name):
        problems.append("it may not contain spaces, control characters or any of ~ ^ : ? * [ \\")
    if any(part.startswith(".") for part in name.split("/")):
        problems.append("no '/'-separated part may start with '.'")
    if problems:
        raise ValueError("not a valid branch name: " + "; ".join(problems))
    return name


Owner = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="The account (user or organization) that owns the repository, such as "
        "'octocat'; not case sensitive.",
    ),
]
Repo = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="The repository's name without '.git', such as 'hello-world'; not case "
        "sensitive.",
    ),
]
IssueNumber = Annotated[
    int, Field(ge=1, description="The issue's number in the repository (as shown after '#').")
]
Label = Annotated[str, Field(min_length=1, max_length=100, description="A label name.")]
Branch = Annotated[
    str,
    Field(min_length=1, max_length=255, description="A branch name such as 'agent/fix-42'."),
    AfterValidator(_check_branch),
]
Sha = Annotated[
    str,
    Field(
        pattern=r"^[0-9a-fA-F]{40}([0-9a-fA-F]{24})?$",
        description="A full commit SHA (40 hexadecimal digits, or 64 in a SHA-256 repository).",
    ),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _RepoArgs(_Args):
    owner: Owner
    repo: Repo


class GetIssueArgs(_RepoArgs):
    """Arguments of github.get_issue."""

    issue_number: IssueNumber


class CreateIssueArgs(_RepoArgs):
    """Arguments of github.create_issue."""

    title: str = Field(min_length=1, max_length=256, description="The issue's title.")
    body: str | None = Field(default=None, description="The issue's text, in Markdown.")
    labels: list[Label] = Field(
        default_factory=list,
        max_length=100,
        description="Labels to give the issue. A name the repository does not have yet is "
        "created in the repository by GitHub (and stays after a rollback). GitHub ignores "
        "labels silently when the token may not push to the repository.",
    )


class AddCommentArgs(_RepoArgs):
    """Arguments of github.add_comment."""

    issue_number: IssueNumber
    body: str = Field(min_length=1, max_length=65536, description="The comment, in Markdown.")


class AddLabelsArgs(_RepoArgs):
    """Arguments of github.add_labels."""

    issue_number: IssueNumber
    labels: list[Label] = Field(
        min_length=1,
        max_length=100,
        description="Labels to add to those the issue has. A name the repository does not have "
        "yet is created in the repository by GitHub (and stays after a rollback).",
    )


class CreateBranchArgs(_RepoArgs):
    """Arguments of github.create_branch: the new branch, and where it starts (one of two)."""

    branch: Branch
    from_branch: Branch | None = Field(
        default=None,
        description="Start the new branch at the current commit of this existing branch. Give "
        "this or 'sha', not both.",
    )
    sha: Sha | None = Field(
        default=None, description="Start the new branch at this commit. Give this or 'from_branch'."
    )

    @model_validator(mode="after")
    def _one_start(self) -> CreateBranchArgs:
        if (self.from_branch is None) == (self.sha is None):
            raise ValueError("give exactly one of 'from_branch' and 'sha'")
        return self


class CloseIssueArgs(_RepoArgs):
    """Arguments of github.close_issue."""

    issue_number: IssueNumber
    state_reason: Literal["not_planned", "completed"] = Field(
        default="not_planned",
        description="Why the issue is closed, as GitHub records it; 'not_planned' (the default) "
        "suits undoing an issue that should not have been opened.",
    )


class DeleteCommentArgs(_RepoArgs):
    """Arguments of github.delete_comment."""

    comment_id: int = Field(ge=1, description="The comment's id (the 'id' add_comment returned).")
    body_sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="The SHA-256 of the body add_comment posted (its 'body_sha256'): the "
        "comment is deleted only while its body is still that; one someone edited since is "
        "refused (code changed_since). Null: deleted whatever it says.",
    )


class RemoveLabelsArgs(_RepoArgs):
    """Arguments of github.remove_labels."""

    issue_number: IssueNumber
    labels: list[Label] = Field(
        max_length=100,
        description="Labels to take off the issue (the 'added' list of add_labels); one the "
        "issue does not carry is skipped. An empty list does nothing.",
    )


class DeleteBranchArgs(_RepoArgs):
    """Arguments of github.delete_branch."""

    branch: Branch
    sha: Sha | None = Field(
        default=None,
        description="The commit create_branch made the branch point at (its 'sha'): the branch "
        "is deleted only while it still points there; one someone moved since (a push) is "
        "refused (code changed_since). Null: deleted wherever it points.",
    )

