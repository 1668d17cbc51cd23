"""The arguments of each gitlab tool, as pydantic models (each tool's ``input_schema``).

Every model refuses fields it does not declare. ``project`` is a numeric ID (``42`` or
``"42"``) or a full path (``group/sub/project``), checked the way GitLab checks project
and group paths; it goes into the request path as one segment, encoded as GitLab expects
(``group%2Fsub%2Fproject``, https://docs.gitlab.com/api/rest/#namespaced-paths), so no
value can add a segment, a query or a fragment. Branch names are checked as git checks
them and also travel as one encoded segment.

Text that starts a line with a quick action (``/close``, ``/label ~bug``, in any case,
``\r\n`` line ends included) is refused: GitLab runs quick actions written in a
description or a note (https://docs.gitlab.com/user/project/quick_actions/), and deleting
the note or closing the issue would not undo what they did.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr

__all__ = [
    "AddNoteArgs",
    "CloseIssueArgs",
    "CreateBranchArgs",
    "CreateIssueArgs",
    "DeleteBranchArgs",
    "DeleteNoteArgs",
    "GetIssueArgs",
    "check_branch",
    "check_project",
]

# matched with fullmatch: "$" would also match before a final "\n" ("acme/backend\n")
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*")
# GitLab's extractor (lib/gitlab/quick_actions/extractor.rb) deletes every "\r" first, then
# runs a command named at a line's start, its name matched case-insensitively, followed by a
# space and arguments, or by nothing but whitespace to the line's end. This refuses a little
# more (spaces or tabs before the "/", any such name, not only the commands GitLab knows).
_QUICK_ACTION = re.compile(r"^[ \t]*/[a-z][a-z0-9_]*(?=\s|$)", re.MULTILINE | re.IGNORECASE)


def check_project(value: int | str) -> int | str:
    """A project ID (a positive integer, or its ASCII digits) or a full path; ``ValueError`` otherwise.

    A path has at least two ``/``-separated parts (namespace and project); each part has
    letters, digits, ``_``, ``-`` and ``.`` only, does not start with ``-``, is not ``.``
    or ``..``, and does not end in ``.git`` or ``.atom``
    (https://docs.gitlab.com/user/reserved_names/).
    """
    if isinstance(value, bool):
        raise ValueError("a project is its numeric ID or its full path, not a boolean")
    if isinstance(value, int):
        if value < 1:
            raise ValueError("a project ID is a positive integer")
        return value
    # ASCII digits only: str.isdigit() also takes other scripts' digits ("٤٢"), which GitLab
    # reads as a path (its numeric-ID pattern is Ruby's ASCII \d), not as project 42
    if value.isascii() and value.isdigit() and value[0] != "0" and len(value) <= 19:
        return value
    parts = value.split("/")
    if len(parts) < 2 or len(parts) > 21 or len(value) > 1000:
        raise ValueError(
            "give the project's numeric ID or its full path with its namespace, such as "
            "'group/project' or 'group/sub/project'"
        )
    for part in parts:
        if part in (".", "..") or not _SEGMENT.fullmatch(part) or part.endswith((".git", ".atom")):
            raise ValueError(
                f"{part!r} is not a valid part of a GitLab path: letters, digits, '_', '-' and "
                "'.' only, not starting with '-', not ending in '.git' or '.atom'"
            )
    return value


def check_branch(name: str) -> str:
    """Refuse a branch name git would refuse (``git check-ref-format --branch``), in short."""
    problems = []
    if name.startswith("refs/"):
        problems.append("give the branch name without 'refs/heads/'")
    if name.startswith(("-", "/")) or name.endswith(("/", ".", ".lock")):
        problems.append("it may not start with '-' or '/' nor end with '/', '.' or '.lock'")
    if ".." in name or "//" in name or "@{" in name or name in ("@", "HEAD"):
        problems.append("it may not contain '..', '//' or '@{', nor be '@' or 'HEAD'")
    if re.search(r"[\x00-\x20\x7f~^:?*\[\\]", name):
        problems.append("it may not contain spaces, control characters or any of ~ ^ : ? * [ \\")
    if any(part.startswith(".") for part in name.split("/")):
        problems.append("no '/'-separated part may start with '.'")
    if problems:
        raise ValueError("not a valid branch name: " + "; ".join(problems))
    return name


def _no_quick_actions(text: str | None) -> str | None:
    if text is not None and _QUICK_ACTION.search(text.replace("\r", "")):
        raise ValueError(
            "a line starts with a GitLab quick action (such as '/close'); GitLab would run it, "
            "and no undo could take it back: remove it, or put the line in a code span"
        )
    return text


Project = Annotated[
    StrictInt | StrictStr,
    Field(
        description="The project: its numeric ID (such as 42) or its full path (such as "
        "'group/sub/project'), as GitLab shows it."
    ),
    AfterValidator(check_project),
]
IssueIid = Annotated[
    int, Field(ge=1, description="The issue's number in the project (its 'iid', shown after '#').")
]
Branch = Annotated[
    str,
    Field(min_length=1, max_length=255, description="A branch name such as 'agent/fix-42'."),
    AfterValidator(check_branch),
]
Label = Annotated[
    str,
    Field(
        min_length=1,
        max_length=255,
        pattern=r"^[^,\x00-\x1f]+$",
        description="A label name (no commas: GitLab reads commas as separators).",
    ),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: Project


class GetIssueArgs(_Args):
    """Arguments of gitlab.get_issue."""

    issue_iid: IssueIid


class CreateIssueArgs(_Args):
    """Arguments of gitlab.create_issue."""

    title: str = Field(min_length=1, max_length=255, description="The issue's title.")
    description: Annotated[
        str | None,
        Field(
            max_length=1_048_576,
            description="The issue's text, in GitLab Flavored Markdown; no quick actions.",
        ),
        AfterValidator(_no_quick_actions),
    ] = None
    labels: list[Label] = Field(
        default_factory=list,
        max_length=100,
        description="Labels to give the issue. A name the project does not have yet is created "
        "by GitLab (and stays after a rollback).",
    )
    confidential: bool = Field(
        default=False, description="Make the issue visible to project members only."
    )


class AddNoteArgs(_Args):
    """Arguments of gitlab.add_note."""

    issue_iid: IssueIid
    body: Annotated[
        str,
        Field(
            min_length=1,
            max_length=1_000_000,
            description="The comment, in GitLab Flavored Markdown; no quick actions.",
        ),
        AfterValidator(_no_quick_actions),
    ]


class CreateBranchArgs(_Args):
    """Arguments of gitlab.create_branch."""

    branch: Branch
    ref: str = Field(
        min_length=1,
        max_length=255,
        pattern=r"^[^\x00-\x20\x7f~^:?*\[\\]+$",
        description="Where the branch starts: an existing branch's name, a tag, or a commit SHA.",
    )


class CloseIssueArgs(_Args):
    """Arguments of gitlab.close_issue."""

    issue_iid: IssueIid


class DeleteNoteArgs(_Args):
    """Arguments of gitlab.delete_note."""

    issue_iid: IssueIid
    note_id: int = Field(ge=1, description="The note's id (the 'id' add_note returned).")
    expected_body: str | None = Field(
        default=None,
        description="The body add_note set (its result's 'body'). When given, the note is read "
        "first and left alone if someone changed it since: the call fails saying so.",
    )


class DeleteBranchArgs(_Args):
    """Arguments of gitlab.delete_branch."""

    branch: Branch
    expected_sha: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$",
        description="The commit create_branch started the branch at (its result's 'sha'). When "
        "given, the branch is read first and left alone if it has moved since (someone pushed "
        "to it): the call fails saying so.",
    )
