"""How GitHub spells the fake's objects in its answers: users, labels, issues, comments, refs.

Each shape follows GitHub's REST API description for API version 2022-11-28 (the
package's second oracle, githubkit's models generated from it, checks every answer).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ._state import DEFAULT_LABELS, FakeComment, FakeIssue, FakeRepo

__all__ = ["Wire"]


@dataclass(frozen=True)
class Wire:
    """The answers of one request: ``api`` is the API root it reached, ``web`` the web root."""

    api: str
    web: str

    def repo_url(self, repo: FakeRepo) -> str:
        """The API URL of a repository."""
        return f"{self.api}/repos/{repo.full_name}"

    def user(self, login: str) -> dict[str, Any]:
        """A ``simple-user`` object, every field the REST API description requires (the ``user``
        of an issue or comment). https://docs.github.com/en/rest/users/users#get-a-user
        """
        api = f"{self.api}/users/{login}"
        user_id = int(hashlib.sha1(login.encode(), usedforsecurity=False).hexdigest()[:7], 16)
        return {
            "login": login,
            "id": user_id,
            "node_id": f"U_{user_id}",
            "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.web}/{login}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": "User",
            "site_admin": False,
        }

    def label(self, repo: FakeRepo, name: str) -> dict[str, Any]:
        """A label as the labels routes answer it; the fake archives none (``archived_*`` null).
        https://docs.github.com/en/rest/issues/labels#list-labels-for-an-issue
        """
        label = repo.label(name)
        assert label is not None
        return {
            "id": label.id,
            "node_id": f"LA_{label.id}",
            "url": f"{self.repo_url(repo)}/labels/{label.name}",
            "name": label.name,
            "description": label.description,
            "color": label.color,
            "default": label.name in DEFAULT_LABELS,
            "archived_at": None,
            "archived_by": None,
        }

    def issue(self, repo: FakeRepo, issue: FakeIssue) -> dict[str, Any]:
        """An issue as GitHub answers it (no assignee, no milestone: the fake has neither).
        https://docs.github.com/en/rest/issues/issues#get-an-issue
        """
        api = f"{self.repo_url(repo)}/issues/{issue.number}"
        return {
            "id": 10_000 + issue.number,
            "node_id": f"I_{repo.full_name}_{issue.number}",
            "url": api,
            "repository_url": self.repo_url(repo),
            "labels_url": f"{api}/labels{{/name}}",
            "comments_url": f"{api}/comments",
            "events_url": f"{api}/events",
            "html_url": f"{self.web}/{repo.full_name}/issues/{issue.number}",
            "number": issue.number,
            "state": issue.state,
            "state_reason": issue.state_reason,
            "title": issue.title,
            "body": issue.body,
            "user": self.user("reversi-agent"),
            "labels": [self.label(repo, name) for name in issue.labels],
            "assignee": None,
            "milestone": None,
            "locked": False,
            "comments": len(issue.comments),
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
        }

    def comment(self, repo: FakeRepo, comment: FakeComment) -> dict[str, Any]:
        """An issue comment. https://docs.github.com/en/rest/issues/comments#get-an-issue-comment"""
        api = self.repo_url(repo)
        return {
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "url": f"{api}/issues/comments/{comment.id}",
            "html_url": f"{self.web}/{repo.full_name}/issues/{comment.issue_number}"
            f"#issuecomment-{comment.id}",
            "issue_url": f"{api}/issues/{comment.issue_number}",
            "body": comment.body,
            "user": self.user(comment.user),
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
        }

    def ref(self, repo: FakeRepo, branch: str) -> dict[str, Any]:
        api = f"{self.repo_url(repo)}/git"
        sha = repo.branches[branch]
        return {
            "ref": f"refs/heads/{branch}",
            "node_id": f"REF_{repo.full_name}_{branch}",
            "url": f"{api}/refs/heads/{branch}",
            "object": {"type": "commit", "sha": sha, "url": f"{api}/commits/{sha}"},
        }
