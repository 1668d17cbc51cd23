"""How GitLab spells the fake's objects in its answers: users, issues, notes, commits, branches.

Each shape follows the entity GitLab's REST API documentation shows for the route
(https://docs.gitlab.com/api/issues/, https://docs.gitlab.com/api/notes/,
https://docs.gitlab.com/api/branches/, https://docs.gitlab.com/api/commits/).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ._state import FakeCommit, FakeIssue, FakeNote, FakeProject

__all__ = ["Wire"]


@dataclass(frozen=True)
class Wire:
    """The answers of one instance: ``web`` is its web root (``https://gitlab.example``)."""

    web: str

    def user(self, username: str) -> dict[str, Any]:
        """A user as issues and notes show their author (https://docs.gitlab.com/api/users/)."""
        user_id = int(hashlib.sha1(username.encode(), usedforsecurity=False).hexdigest()[:6], 16)
        return {
            "id": user_id,
            "username": username,
            "name": username.replace("-", " ").title(),
            "state": "active",
            "locked": False,
            "avatar_url": f"{self.web}/uploads/-/system/user/avatar/{user_id}/avatar.png",
            "web_url": f"{self.web}/{username}",
        }

    def issue(self, project: FakeProject, issue: FakeIssue, api: str) -> dict[str, Any]:
        """An issue (https://docs.gitlab.com/api/issues/#single-project-issue)."""
        links = f"{api}/projects/{project.id}/issues/{issue.iid}"
        return {
            "id": issue.id,
            "iid": issue.iid,
            "project_id": project.id,
            "title": issue.title,
            "description": issue.description,
            "state": issue.state,
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
            "closed_by": self.user("reversi-bot") if issue.state == "closed" else None,
            "labels": list(issue.labels),
            "milestone": None,
            "assignees": [],
            "assignee": None,
            "author": self.user(issue.author),
            "type": "ISSUE",
            "issue_type": "issue",
            "user_notes_count": sum(not n.system for n in issue.notes),
            "merge_requests_count": 0,
            "upvotes": 0,
            "downvotes": 0,
            "due_date": None,
            "confidential": issue.confidential,
            "discussion_locked": None,
            "web_url": f"{self.web}/{project.path}/-/issues/{issue.iid}",
            "time_stats": {
                "time_estimate": 0,
                "total_time_spent": 0,
                "human_time_estimate": None,
                "human_total_time_spent": None,
            },
            "task_completion_status": {"count": 0, "completed_count": 0},
            "has_tasks": False,
            "_links": {
                "self": links,
                "notes": f"{links}/notes",
                "award_emoji": f"{links}/award_emoji",
                "project": f"{api}/projects/{project.id}",
                "closed_as_duplicate_of": None,
            },
            "references": {
                "short": f"#{issue.iid}",
                "relative": f"#{issue.iid}",
                "full": f"{project.path}#{issue.iid}",
            },
            "severity": "UNKNOWN",
            "moved_to_id": None,
            "service_desk_reply_to": None,
        }

    def note(self, project: FakeProject, issue: FakeIssue, note: FakeNote) -> dict[str, Any]:
        """A note of an issue (https://docs.gitlab.com/api/notes/#get-single-issue-note)."""
        return {
            "id": note.id,
            "type": None,
            "body": note.body,
            "attachment": None,
            "author": self.user(note.author),
            "created_at": note.created_at,
            "updated_at": note.updated_at,
            "system": note.system,
            "noteable_id": issue.id,
            "noteable_type": "Issue",
            "project_id": project.id,
            "resolvable": False,
            "confidential": False,
            "internal": False,
            "imported": False,
            "imported_from": "none",
            "noteable_iid": issue.iid,
            "commands_changes": {},
        }

    def commit(self, project: FakeProject, commit: FakeCommit) -> dict[str, Any]:
        """A commit as a branch shows it (https://docs.gitlab.com/api/commits/#get-a-single-commit)."""
        return {
            "id": commit.sha,
            "short_id": commit.sha[:8],
            "created_at": commit.authored_date,
            "parent_ids": [],
            "title": commit.title,
            "message": commit.title,
            "author_name": "Alice",
            "author_email": "alice@example.com",
            "authored_date": commit.authored_date,
            "committer_name": "Alice",
            "committer_email": "alice@example.com",
            "committed_date": commit.authored_date,
            "trailers": {},
            "extended_trailers": {},
            "web_url": f"{self.web}/{project.path}/-/commit/{commit.sha}",
        }

    def branch(self, project: FakeProject, name: str) -> dict[str, Any]:
        """A branch (https://docs.gitlab.com/api/branches/#get-single-repository-branch)."""
        protected = name in project.protected
        return {
            "name": name,
            "merged": False,
            "protected": protected,
            "default": name == project.default_branch,
            "developers_can_push": not protected,
            "developers_can_merge": not protected,
            "can_push": project.may("maintainer") or (not protected and project.may("developer")),
            "web_url": f"{self.web}/{project.path}/-/tree/{name}",
            "commit": self.commit(project, project.commits[project.branches[name]]),
        }
