"""The GraphQL documents the linear connector sends, one per tool.

Each is validated against Linear's published schema in the package's tests (the second
oracle, tests/test_oracle.py). Operations are named, so that Linear's logs and the fake
can tell them apart; every document selects only what the tool returns.
"""

from __future__ import annotations

__all__ = ["ADD_COMMENT", "ARCHIVE_ISSUE", "CREATE_ISSUE", "DELETE_COMMENT", "GET_ISSUE"]

GET_ISSUE = """\
query GetIssue($id: String!) {
  issue(id: $id) {
    id
    identifier
    title
    description
    url
    priority
    archivedAt
    createdAt
    updatedAt
    state { id name type }
    team { id key }
  }
}
"""
"""``issue(id:)``: one issue by its id or identifier."""

CREATE_ISSUE = """\
mutation CreateIssue($input: IssueCreateInput!) {
  issueCreate(input: $input) {
    success
    issue { id identifier title url }
  }
}
"""
"""``issueCreate``: a new issue in a team."""

ADD_COMMENT = """\
mutation AddComment($input: CommentCreateInput!) {
  commentCreate(input: $input) {
    success
    comment { id url }
  }
}
"""
"""``commentCreate``: a comment on an issue."""

ARCHIVE_ISSUE = """\
mutation ArchiveIssue($id: String!) {
  issueArchive(id: $id) {
    success
    entity { id archivedAt }
  }
}
"""
"""``issueArchive``: hide an issue (it can be restored in Linear)."""

DELETE_COMMENT = """\
mutation DeleteComment($id: String!) {
  commentDelete(id: $id) {
    success
    entityId
  }
}
"""
"""``commentDelete``: remove a comment."""
