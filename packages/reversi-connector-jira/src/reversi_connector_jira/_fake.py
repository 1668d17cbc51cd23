"""FakeJira: the part of Jira Cloud's REST API v3 the connector uses, on the kit's vendor fake."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reversi_core.testing import BasicAuth, FakeRequest, FakeResponse, VendorFake, vendor_route

__all__ = ["STATUSES", "TRANSITIONS", "FakeJira", "Status", "Transition"]

_ISSUES = "https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues"
_COMMENTS = "https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments"
_NO_ISSUE = "Issue does not exist or you do not have permission to see it."


@dataclass(frozen=True)
class Status:
    """A workflow status: id, name and status category (``new``, ``indeterminate``, ``done``)."""

    id: str
    name: str
    category: str


@dataclass(frozen=True)
class Transition:
    """A workflow transition: id, name, the statuses it starts from and the one it leads to."""

    id: str
    name: str
    sources: frozenset[str]
    to: str


STATUSES: Mapping[str, Status] = {
    s.id: s
    for s in (
        Status("10000", "To Do", "new"),
        Status("3", "In Progress", "indeterminate"),
        Status("10001", "In Review", "indeterminate"),
        Status("10002", "Done", "done"),
        Status("10003", "Archived", "done"),
    )
}
"""The statuses of the fake's one workflow, by id."""

TRANSITIONS: tuple[Transition, ...] = (
    Transition("11", "Start Progress", frozenset({"10000"}), "3"),
    Transition("21", "Stop Progress", frozenset({"3"}), "10000"),
    Transition("31", "Review", frozenset({"3"}), "10001"),
    Transition("41", "Done", frozenset({"3", "10001"}), "10002"),
    Transition("42", "Resolve", frozenset({"3"}), "10002"),
    Transition("51", "Back to Progress", frozenset({"10001"}), "3"),
    Transition("61", "Reopen", frozenset({"10002"}), "10000"),
    Transition("71", "Archive", frozenset({"10000", "10002"}), "10003"),
)
"""The fake's workflow. Every status but one has a way back to where it came from, with
two exceptions on purpose: Done leads only to To Do and Archived (so "Done" from In
Progress or In Review cannot be walked back), and Archived leads nowhere. Two
transitions from In Progress lead to Done ("Done" and "Resolve"), so the status name
"Done" is ambiguous there."""

ISSUE_TYPES = frozenset({"Task", "Bug", "Story", "Sub-task"})
"""The issue types every project of the fake has ("Sub-task" needs a parent)."""


def _paragraph(text: str) -> dict[str, Any]:
    """An ADF document of one paragraph holding ``text``."""
    return {
        "type": "doc",
        "version": 1,
        "content": [{"type": "paragraph", "content": [{"type": "text", "text": text}]}],
    }


def _now() -> str:
    """The time as Jira writes it (``2026-12-01T09:00:00.000+0000``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime())


def _is_doc(value: Any) -> bool:
    """Whether ``value`` is an Atlassian Document Format ``doc`` of version 1."""
    return (
        isinstance(value, dict)
        and value.get("type") == "doc"
        and value.get("version") == 1
        and isinstance(value.get("content"), list)
    )


class FakeJira(VendorFake):
    """A fake of Jira Cloud's REST API v3: projects, issues, comments and one workflow.

    ``email`` and ``api_token`` are the basic-authentication pair that may read and
    write; ``read_only`` pairs (``(email, token)``) may only read (a write gets 403).
    Anything else gets 401. Once ``rate_limit`` requests are used, every request gets
    429 with ``Retry-After``
    (https://developer.atlassian.com/cloud/jira/platform/rate-limiting/). Errors are
    ``ErrorCollection`` bodies (``{"errorMessages", "errors"}``).

    The workflow is :data:`STATUSES` and :data:`TRANSITIONS`; a new issue starts in To
    Do. Each issue keeps its ``history`` of status changes (Jira's changelog), which a
    rollback's two transitions leave behind. State is in :attr:`projects`,
    :attr:`issues` (by id) and :attr:`comments` (by id); take :attr:`lock` to read or
    change it while requests may be in flight; :meth:`snapshot` returns it as plain data.
    """

    auth = BasicAuth()

    def __init__(
        self,
        *,
        email: str,
        api_token: str,
        read_only: Iterable[tuple[str, str]] = (),
        rate_limit: int | None = None,
        site: str = "https://reversi-test.atlassian.net",
    ) -> None:
        super().__init__(
            token=f"{email}:{api_token}",
            read_only_tokens=[f"{e}:{t}" for e, t in read_only],
            rate_limit=rate_limit,
        )
        self.site = site.rstrip("/")
        self.projects: dict[str, dict[str, Any]] = {}
        """Projects by key: ``{"id", "key", "name", "next_number"}``."""
        self.issues: dict[str, dict[str, Any]] = {}
        """Issues by id: ``{"id", "key", "project", "summary", "description", "issuetype",
        "parent", "status", "history", "created", "updated", "origin"}``."""
        self.comments: dict[str, dict[str, Any]] = {}
        """Comments by id: ``{"id", "issue", "body", "created", "updated"}``."""
        self._ids = itertools.count(10001)
        self._comment_ids = itertools.count(20001)

    # -- Jira's answers to what the kit checks -----------------------------------------

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        """An ``ErrorCollection``: ``{"errorMessages": [message], "errors": {...}}``."""
        messages = [message] if message else []
        return FakeResponse(
            status, json={"errorMessages": messages, "errors": dict(extra.get("errors") or {})}
        )

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.error(404, "null for uri: " + request.path)

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        return self.error(401, "Client must be authenticated to access this resource.")

    def read_only(self, request: FakeRequest) -> FakeResponse:
        """A write without the permission: 403 where the operation documents it (create and
        delete an issue), else 400, which Jira documents for a missing permission on the
        comment and transition operations."""
        issue_route = request.path.rstrip("/").count("/") <= 4  # /rest/api/3/issue[/{issue}]
        status = 403 if issue_route and request.method in ("POST", "DELETE") else 400
        return self.error(status, "You do not have the permission to make this change.")

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        answer = self.error(429, "Rate limit exceeded.")
        return dataclasses.replace(answer, headers={"Retry-After": "30"})

    def malformed_body(self, request: FakeRequest, problem: str) -> FakeResponse:
        return self.error(400, f"Unexpected character in the request body ({problem})")

    # -- set-up and inspection ---------------------------------------------------------

    def add_project(self, key: str, name: str) -> dict[str, Any]:
        """Create a project and return it."""
        with self.lock:
            project = {"id": str(next(self._ids)), "key": key, "name": name, "next_number": 1}
            self.projects[key] = project
            return project

    def add_issue(
        self,
        project: str,
        summary: str,
        *,
        status: str = "10000",
        parent: str | None = None,
        issue_type: str = "Task",
        description: Any = None,
    ) -> dict[str, Any]:
        """Put an issue in a project (``origin="seed"``), in ``status`` (an id), and return it."""
        with self.lock:
            issue = self._new_issue(
                self.projects[project], summary, issue_type, description, parent, "seed"
            )
            issue["status"] = status
            return issue

    def add_comment(self, issue_id: str, text: str) -> dict[str, Any]:
        """Put a one-paragraph comment on an issue and return it."""
        with self.lock:
            return self._new_comment(self.issues[issue_id], _paragraph(text))

    def edit_comment(self, comment_id: str, text: str) -> None:
        """Change a comment's text as a person with *Edit all comments* would (``updated`` moves)."""
        with self.lock:
            comment = self.comments[comment_id]
            comment["body"] = _paragraph(text)
            comment["updated"] = _now()

    def restore_comment(self, comment_id: str, body: Any) -> None:
        """Put an ADF ``body`` back on a comment (a person undoing their edit)."""
        with self.lock:
            self.comments[comment_id]["body"] = copy.deepcopy(body)

    def remove_comment(self, comment_id: str) -> None:
        """Take a comment away as its author would."""
        with self.lock:
            del self.comments[comment_id]

    def find_issue(self, ref: str) -> dict[str, Any] | None:
        """The issue with id or key (without regard to case) ``ref``, if any."""
        with self.lock:
            if ref in self.issues:
                return self.issues[ref]
            return next((i for i in self.issues.values() if i["key"].upper() == ref.upper()), None)

    def set_status(self, ref: str, status: str) -> None:
        """Move an issue to ``status`` (an id) as a person would, through any path (history kept)."""
        with self.lock:
            issue = self.find_issue(ref)
            if issue is None:
                raise KeyError(ref)
            issue["history"].append({"from": issue["status"], "to": status, "by": "someone"})
            issue["status"] = status

    def snapshot(self) -> dict[str, Any]:
        """Projects, issues and comments as plain data (what certification fingerprints)."""
        with self.lock:
            state = {"projects": self.projects, "issues": self.issues, "comments": self.comments}
            return copy.deepcopy(state)

    # -- views ------------------------------------------------------------------------

    def _status_view(self, status_id: str) -> dict[str, Any]:
        status = STATUSES[status_id]
        keys = {
            "new": (2, "To Do", "blue-gray"),
            "indeterminate": (4, "In Progress", "yellow"),
            "done": (3, "Done", "green"),
        }
        cat_id, cat_name, colour = keys[status.category]
        return {
            "self": f"{self.site}/rest/api/3/status/{status.id}",
            "id": status.id,
            "name": status.name,
            "description": "",
            "iconUrl": f"{self.site}/images/icons/statuses/generic.png",
            "statusCategory": {
                "self": f"{self.site}/rest/api/3/statuscategory/{cat_id}",
                "id": cat_id,
                "key": status.category,
                "colorName": colour,
                "name": cat_name,
            },
        }

    def _issue_ref(self, issue: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": issue["id"],
            "key": issue["key"],
            "self": f"{self.site}/rest/api/3/issue/{issue['id']}",
        }

    def _fields(self, issue: dict[str, Any]) -> dict[str, Any]:
        project = self.projects[issue["project"]]
        parent = self.issues.get(issue["parent"]) if issue["parent"] else None
        subtasks = [self._issue_ref(i) for i in self.issues.values() if i["parent"] == issue["id"]]
        comments = [
            self._comment_view(c) for c in self.comments.values() if c["issue"] == issue["id"]
        ]
        fields: dict[str, Any] = {
            "summary": issue["summary"],
            "description": issue["description"],
            "status": self._status_view(issue["status"]),
            "issuetype": {"name": issue["issuetype"], "subtask": issue["issuetype"] == "Sub-task"},
            "project": {"id": project["id"], "key": project["key"], "name": project["name"]},
            "subtasks": subtasks,
            "created": issue["created"],
            "updated": issue["updated"],
            "comment": {
                "comments": comments,
                "maxResults": len(comments),
                "total": len(comments),
                "startAt": 0,
            },
        }
        if parent is not None:
            fields["parent"] = self._issue_ref(parent)
        return fields

    def _transition_view(self, transition: Transition) -> dict[str, Any]:
        return {
            "id": transition.id,
            "name": transition.name,
            "to": self._status_view(transition.to),
            "hasScreen": False,
            "isGlobal": False,
            "isInitial": False,
            "isAvailable": True,
            "isConditional": False,
            "isLooped": False,
        }

    def _issue_or_404(self, request: FakeRequest) -> dict[str, Any] | FakeResponse:
        issue = self.find_issue(request.path_params["issue"])
        return issue if issue is not None else self.error(404, _NO_ISSUE)

    # -- routes ------------------------------------------------------------------------

    @vendor_route(
        "GET", "/rest/api/3/issue/{issue}", docs=f"{_ISSUES}/#api-rest-api-3-issue-issueidorkey-get"
    )
    def get_issue(self, request: FakeRequest) -> FakeResponse:
        """The issue with the fields asked for in ``fields`` (comma-separated; all by default)."""
        issue = self._issue_or_404(request)
        if isinstance(issue, FakeResponse):
            return issue
        fields = self._fields(issue)
        wanted = request.query.get("fields")
        if wanted:
            names = {n.strip() for n in wanted.split(",")}
            fields = {k: v for k, v in fields.items() if k in names}
        body = {
            "expand": "renderedFields,names,schema,transitions,operations,editmeta,changelog",
            **self._issue_ref(issue),
            "fields": fields,
        }
        return FakeResponse(200, json=body)

    @vendor_route(
        "POST", "/rest/api/3/issue", docs=f"{_ISSUES}/#api-rest-api-3-issue-post", body="json"
    )
    def create_issue(self, request: FakeRequest) -> FakeResponse:
        """201 ``{"id", "key", "self"}``; 400 with field errors for what Jira would refuse."""
        given = request.json.get("fields") if isinstance(request.json, dict) else None
        if not isinstance(given, dict):
            return self.error(400, "", errors={"fields": "fields are required"})
        errors: dict[str, str] = {}
        project = self.projects.get(str((given.get("project") or {}).get("key")))
        if project is None:
            errors["project"] = "valid project is required"
        summary = given.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            errors["summary"] = "You must specify a summary of the issue."
        kind = str((given.get("issuetype") or {}).get("name"))
        if kind not in ISSUE_TYPES:
            errors["issuetype"] = "The issue type selected is invalid."
        parent = None
        if "parent" in given:
            ref = given["parent"] if isinstance(given["parent"], dict) else {}
            parent = self.find_issue(str(ref.get("key") or ref.get("id")))
            if parent is None:
                errors["parent"] = "Could not find issue by id or key."
        if (
            (kind == "Sub-task") != (parent is not None)
            and "parent" not in errors
            and "issuetype" not in errors
        ):
            errors["issuetype"] = "A subtask needs a parent, and only a subtask may have one."
        description = given.get("description")
        if description is not None and not _is_doc(description):
            errors["description"] = (
                "Operation value must be an Atlassian Document (see the Atlassian Document Format)"
            )
        if errors:
            return self.error(400, "", errors=errors)
        assert project is not None
        assert isinstance(summary, str)
        issue = self._new_issue(
            project, summary, kind, description, parent["id"] if parent else None, "api"
        )
        return FakeResponse(201, json=self._issue_ref(issue))

    @vendor_route(
        "DELETE",
        "/rest/api/3/issue/{issue}",
        docs=f"{_ISSUES}/#api-rest-api-3-issue-issueidorkey-delete",
    )
    def delete_issue(self, request: FakeRequest) -> FakeResponse:
        """204; 400 for an issue with subtasks unless ``deleteSubtasks=true``; 404."""
        issue = self._issue_or_404(request)
        if isinstance(issue, FakeResponse):
            return issue
        children = [i for i in self.issues.values() if i["parent"] == issue["id"]]
        if children and request.query.get("deleteSubtasks") != "true":
            return self.error(  # Jira's words, as its own REST tests expect them
                400,
                f"The issue '{issue['key']}' has subtasks.  You must specify the "
                "'deleteSubtasks' parameter to delete this issue and all its subtasks.",
            )
        for gone in [*children, issue]:
            del self.issues[gone["id"]]
            for ident in [
                c for c, comment in self.comments.items() if comment["issue"] == gone["id"]
            ]:
                del self.comments[ident]
        return FakeResponse(204)

    @vendor_route(
        "POST",
        "/rest/api/3/issue/{issue}/comment",
        docs=f"{_COMMENTS}/#api-rest-api-3-issue-issueidorkey-comment-post",
        body="json",
    )
    def post_comment(self, request: FakeRequest) -> FakeResponse:
        """201 with the comment; 400 for a body that is not a document with text; 404."""
        issue = self._issue_or_404(request)
        if isinstance(issue, FakeResponse):
            return issue
        body = request.json.get("body") if isinstance(request.json, dict) else None
        if not isinstance(body, dict) or not _is_doc(body) or not body["content"]:
            return self.error(400, "", errors={"comment": "Comment body can not be empty!"})
        comment = self._new_comment(issue, body)
        return FakeResponse(201, json=self._comment_view(comment))

    @vendor_route(
        "GET",
        "/rest/api/3/issue/{issue}/comment/{id}",
        docs=f"{_COMMENTS}/#api-rest-api-3-issue-issueidorkey-comment-id-get",
    )
    def get_comment(self, request: FakeRequest) -> FakeResponse:
        """200 with the comment; 404 for an unknown issue or a comment not on it."""
        found = self._comment_or_404(request)
        if isinstance(found, FakeResponse):
            return found
        return FakeResponse(200, json=self._comment_view(found))

    @vendor_route(
        "DELETE",
        "/rest/api/3/issue/{issue}/comment/{id}",
        docs=f"{_COMMENTS}/#api-rest-api-3-issue-issueidorkey-comment-id-delete",
    )
    def delete_comment(self, request: FakeRequest) -> FakeResponse:
        """204; 404 for an unknown issue or a comment not on it."""
        found = self._comment_or_404(request)
        if isinstance(found, FakeResponse):
            return found
        del self.comments[found["id"]]
        return FakeResponse(204)

    def _comment_or_404(self, request: FakeRequest) -> dict[str, Any] | FakeResponse:
        issue = self._issue_or_404(request)
        if isinstance(issue, FakeResponse):
            return issue
        comment = self.comments.get(request.path_params["id"])
        if comment is None or comment["issue"] != issue["id"]:
            return self.error(
                404, f"Can not find a comment for the id: {request.path_params['id']}."
            )
        return comment

    @vendor_route(
        "GET",
        "/rest/api/3/issue/{issue}/transitions",
        docs=f"{_ISSUES}/#api-rest-api-3-issue-issueidorkey-transitions-get",
    )
    def get_transitions(self, request: FakeRequest) -> FakeResponse:
        """The transitions from the issue's current status."""
        issue = self._issue_or_404(request)
        if isinstance(issue, FakeResponse):
            return issue
        found = [self._transition_view(t) for t in TRANSITIONS if issue["status"] in t.sources]
        return FakeResponse(200, json={"expand": "transitions", "transitions": found})

    @vendor_route(
        "POST",
        "/rest/api/3/issue/{issue}/transitions",
        docs=f"{_ISSUES}/#api-rest-api-3-issue-issueidorkey-transitions-post",
        body="json",
    )
    def do_transition(self, request: FakeRequest) -> FakeResponse:
        """204; 400 for a transition that is not available from the issue's status; 404."""
        issue = self._issue_or_404(request)
        if isinstance(issue, FakeResponse):
            return issue
        given = request.json.get("transition") if isinstance(request.json, dict) else None
        wanted = str(given.get("id")) if isinstance(given, dict) else ""
        chosen = next(
            (t for t in TRANSITIONS if t.id == wanted and issue["status"] in t.sources), None
        )
        if chosen is None:
            return self.error(400, f"Transition id '{wanted}' is not valid for this issue.")
        issue["history"].append(
            {"from": issue["status"], "to": chosen.to, "by": "transition " + chosen.id}
        )
        issue["status"] = chosen.to
        issue["updated"] = _now()
        return FakeResponse(204)

    # -- state changes ------------------------------------------------------------------

    def _new_issue(
        self,
        project: dict[str, Any],
        summary: str,
        kind: str,
        description: Any,
        parent: str | None,
        origin: str,
    ) -> dict[str, Any]:
        number = project["next_number"]
        project["next_number"] += 1
        stamp = _now()
        issue = {
            "id": str(next(self._ids)),
            "key": f"{project['key']}-{number}",
            "project": project["key"],
            "summary": summary,
            "description": description,
            "issuetype": kind,
            "parent": parent,
            "status": "10000",
            "history": [],
            "created": stamp,
            "updated": stamp,
            "origin": origin,
        }
        self.issues[issue["id"]] = issue
        return issue

    def _new_comment(self, issue: dict[str, Any], body: Any) -> dict[str, Any]:
        stamp = _now()
        comment = {
            "id": str(next(self._comment_ids)),
            "issue": issue["id"],
            "body": body,
            "created": stamp,
            "updated": stamp,
        }
        self.comments[comment["id"]] = comment
        return comment

    def _comment_view(self, comment: dict[str, Any]) -> dict[str, Any]:
        author = {
            "accountId": "5b10a2844c20165700ede21g",
            "displayName": "Reversi Agent",
            "active": True,
        }
        return {
            "self": f"{self.site}/rest/api/3/issue/{comment['issue']}/comment/{comment['id']}",
            "id": comment["id"],
            "author": author,
            "updateAuthor": author,
            "body": comment["body"],
            "created": comment["created"],
            "updated": comment["updated"],
            "jsdPublic": True,
        }
