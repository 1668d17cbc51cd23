"""FakeGitLab: the part of GitLab's REST API v4 the connector uses, on the kit's vendor fake."""

from __future__ import annotations

import copy
import itertools
import json as jsonlib
import time
from collections.abc import Iterable
from typing import Any

from reversi_core.testing import (
    FakeRequest,
    FakeResponse,
    FakeServer,
    HeaderAuth,
    VendorFake,
    vendor_route,
)

from ._state import FakeCommit, FakeIssue, FakeNote, FakeProject, Role, commit_sha, now
from ._wire import Wire

__all__ = ["BOT", "FakeGitLab"]

BOT = "reversi-bot"
"""The user the fake's tokens belong to: author of what the connector creates."""

_ISSUES = "https://docs.gitlab.com/api/issues"
_NOTES = "https://docs.gitlab.com/api/notes"
_BRANCHES = "https://docs.gitlab.com/api/branches"
_PROJECT = "/projects/{project}"

_PROTECTED_DELETE = (
    "You are not allowed to delete protected branches from this project. Only a project "
    "maintainer or owner can delete a protected branch."
)


def _invalid(**problems: list[str]) -> FakeResponse:
    """GitLab's validation error: 400 ``{"message": {field: [problem, ...]}}``."""
    return FakeResponse(400, json={"message": problems})


def _number(raw: str) -> int | None:
    """``raw`` as a number when it is ASCII digits, else ``None``.

    GitLab tells a project's numeric ID from its path with Ruby's ``\\d``, which is ASCII
    only; ``str.isdigit()`` and ``int()`` would also read other scripts' digits (``"٤٢"``
    as 42), so ``/projects/٤٢`` is a path here too, and no project has it (404).
    """
    return int(raw) if raw.isascii() and raw.isdigit() else None


def _may_change(project: FakeProject, note: FakeNote) -> bool:
    """Whether the token user may edit or delete ``note``: its own, or anyone's as Maintainer."""
    return not note.system and (note.author == BOT or project.may("maintainer"))


class FakeGitLab(VendorFake):
    """A fake of GitLab's REST API v4: issues, issue notes and repository branches.

    ``token`` has the ``api`` scope; each of ``read_only_tokens`` has ``read_api`` only: a
    write with one gets 403 ``{"error": "insufficient_scope", ...}``, the OAuth shape. A
    request without ``PRIVATE-TOKEN``, or with an unknown one, gets 401 ``{"message": "401
    Unauthorized"}`` (https://docs.gitlab.com/api/rest/authentication/). A path no route
    serves gets 404 ``{"error": "404 Not Found"}``; a missing project or branch 404
    ``{"message": "404 Project Not Found"}``, ``"404 Branch Not Found"``
    (https://docs.gitlab.com/api/rest/troubleshooting/); a missing issue, and a missing note,
    404 ``{"message": "404 Not found"}``, as GitLab answers the ``RecordNotFound`` of its
    finders (lib/api/api.rb): on the notes routes a missing issue and a missing note look
    alike.
    A project is found by its numeric ID or by its full path, encoded as one segment
    (``group%2Fproject``); a path sent with raw slashes matches no route, as on GitLab.

    The token user's role in a project (:attr:`FakeProject.role`) decides what it may do:
    Developer to create and delete branches, Maintainer to delete a protected one (GitLab
    answers a Developer 400 with its "not allowed to delete protected branches" message),
    the note's author or a Maintainer to delete a note
    (https://docs.gitlab.com/user/permissions/). Closing an issue adds a system note, as
    GitLab does. With ``rate_limit`` set, requests beyond it get 429 ``Retry later`` with
    ``Retry-After`` and ``RateLimit-*`` headers (https://docs.gitlab.com/security/rate_limits/).

    Routes are served under ``prefix`` (``/api/v4``). State lives in :attr:`projects`;
    take :attr:`lock` to change it while requests may be in flight; :meth:`snapshot`
    returns it as plain data.
    """

    auth = HeaderAuth("PRIVATE-TOKEN")

    def __init__(
        self,
        *,
        token: str,
        read_only_tokens: Iterable[str] = (),
        rate_limit: int | None = None,
        prefix: str = "/api/v4",
        web_url: str = "https://gitlab.example.com",
    ) -> None:
        super().__init__(
            token=token, read_only_tokens=read_only_tokens, rate_limit=rate_limit, prefix=prefix
        )
        self.wire = Wire(web_url.rstrip("/"))
        self.projects: dict[int, FakeProject] = {}
        """Projects by ID."""
        self.rate_reset = int(time.time()) + 60
        self._issue_ids = itertools.count(5_001)
        self._note_ids = itertools.count(9_001)

    # -- GitLab's answers to what the kit checks -----------------------------------------

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        """GitLab's usual error body, ``{"message": message}``."""
        return FakeResponse(status, json={"message": message, **extra})

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(404, json={"error": "404 Not Found"})

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        return self.error(401, "401 Unauthorized")

    def read_only(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(
            403,
            json={
                "error": "insufficient_scope",
                "error_description": "The request requires higher privileges than provided by "
                "the access token.",
                "scope": "api",
            },
        )

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(
            429,
            body="Retry later\n",
            headers={"Retry-After": "60", **self.rate_headers()},
        )

    def rate_headers(self) -> dict[str, str]:
        if self.rate_limit is None:
            return {}
        return {
            "RateLimit-Limit": str(self.rate_limit),
            "RateLimit-Remaining": str(self.rate_remaining),
            "RateLimit-Reset": str(self.rate_reset),
        }

    def malformed_body(self, request: FakeRequest, problem: str) -> FakeResponse:
        return self.error(400, "400 Bad request - the body is not valid JSON")

    # -- set-up and inspection -----------------------------------------------------------

    def base_url(self, server: FakeServer) -> str:
        """The connector's ``base_url`` for this fake: the instance's root (without ``/api/v4``)."""
        return server.url

    def add_project(
        self,
        project_id: int,
        path: str,
        *,
        role: Role = "developer",
        default_branch: str = "main",
        labels: Iterable[str] = ("bug", "feature"),
    ) -> FakeProject:
        """Create a project with one commit on ``default_branch`` (protected, as GitLab makes it)."""
        with self.lock:
            project = FakeProject(
                project_id,
                path,
                role=role,
                default_branch=default_branch,
                labels=dict.fromkeys(labels, False),
            )
            first = FakeCommit(commit_sha(path, "initial"), "Initial commit")
            project.commits[first.sha] = first
            project.branches[default_branch] = first.sha
            project.protected.add(default_branch)
            self.projects[project_id] = project
            return project

    def project(self, ref: int | str) -> FakeProject:
        """A project by ID or full path (without regard to case); ``KeyError`` if absent."""
        found = self._find(str(ref))
        if found is None:
            raise KeyError(ref)
        return found

    def add_commit(self, project_id: int, title: str) -> str:
        """Record a commit in the project's repository and return its (made-up) SHA."""
        with self.lock:
            project = self.projects[project_id]
            commit = FakeCommit(commit_sha(project.path, title), title)
            project.commits[commit.sha] = commit
            return commit.sha

    def add_branch(
        self, project_id: int, name: str, sha: str | None = None, *, protected: bool = False
    ) -> str:
        """Point ``name`` at ``sha`` (a new commit when ``None``); return the SHA."""
        with self.lock:
            target = sha if sha is not None else self.add_commit(project_id, f"work on {name}")
            project = self.projects[project_id]
            project.branches[name] = target
            if protected:
                project.protected.add(name)
            return target

    def push(self, project_id: int, branch: str, title: str) -> str:
        """Someone pushes a commit to ``branch``: it moves to a new commit, whose SHA is returned."""
        with self.lock:
            sha = self.add_commit(project_id, f"{branch}: {title}")
            self.projects[project_id].branches[branch] = sha
            return sha

    def add_issue(
        self,
        project_id: int,
        title: str,
        *,
        description: str | None = None,
        labels: Iterable[str] = (),
        state: str = "opened",
    ) -> FakeIssue:
        """Put an issue in a project (``origin="seed"``)."""
        with self.lock:
            project = self.projects[project_id]
            issue = FakeIssue(
                next(self._issue_ids),
                project.next_iid,
                title,
                description,
                state="closed" if state == "closed" else "opened",
                labels=list(labels),
                closed_at=now() if state == "closed" else None,
            )
            project.issues[issue.iid] = issue
            project.next_iid += 1
            return issue

    def add_note(self, project_id: int, iid: int, body: str, *, author: str = "alice") -> FakeNote:
        """Put a note on an issue and return it."""
        with self.lock:
            note = FakeNote(next(self._note_ids), body, author)
            self.projects[project_id].issues[iid].notes.append(note)
            return note

    def edit_note(self, project_id: int, iid: int, note_id: int, body: str) -> None:
        """Someone edits a note (as a Maintainer may edit anyone's)."""
        with self.lock:
            note = self.projects[project_id].issues[iid].note(note_id)
            if note is None:
                raise KeyError(note_id)
            note.body, note.updated_at = body, now()

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain data (what certification fingerprints).

        ``{"projects": {path: {"default_branch", "labels": {name: auto_created},
        "protected", "branches": {name: sha}, "issues": {"<iid>": {"title",
        "description", "state", "labels", "confidential", "origin", "notes": [{"id",
        "body", "system"}]}}}}}``. Timestamps are left out.
        """
        with self.lock:
            return copy.deepcopy(
                {"projects": {p.path: p.snapshot() for _, p in sorted(self.projects.items())}}
            )

    # -- finding things ----------------------------------------------------------------

    def _find(self, ref: str) -> FakeProject | None:
        number = _number(ref)
        if number is not None:
            return self.projects.get(number)
        return next((p for p in self.projects.values() if p.path.lower() == ref.lower()), None)

    def _project_of(self, request: FakeRequest) -> FakeProject | FakeResponse:
        project = self._find(request.path_params["project"])
        return project if project is not None else self.error(404, "404 Project Not Found")

    def _issue_of(
        self, request: FakeRequest, missing: str
    ) -> tuple[FakeProject, FakeIssue] | FakeResponse:
        project = self._project_of(request)
        if isinstance(project, FakeResponse):
            return project
        raw = request.path_params["iid"]
        number = _number(raw)
        issue = project.issues.get(number) if number is not None else None
        return (project, issue) if issue is not None else self.error(404, missing)

    def _params(self, request: FakeRequest) -> dict[str, Any]:
        """The call's parameters: the query string, then a JSON or form body over it (Grape reads all)."""
        params: dict[str, Any] = dict(request.query)
        kind = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        if request.body and kind == "application/json":
            body = jsonlib.loads(request.body)  # a body that is not JSON was answered 400 already
            if isinstance(body, dict):
                params.update(body)
        elif request.body:
            params.update(request.form)
        return params

    def _api(self, request: FakeRequest) -> str:
        return f"http://{request.headers.get('host', '127.0.0.1')}{self.prefix}"

    def _issue_json(
        self, request: FakeRequest, project: FakeProject, issue: FakeIssue
    ) -> dict[str, Any]:
        return self.wire.issue(project, issue, self._api(request))

    # -- issues ------------------------------------------------------------------------

    @vendor_route("GET", f"{_PROJECT}/issues/{{iid}}", docs=f"{_ISSUES}/#single-project-issue")
    def get_issue(self, request: FakeRequest) -> FakeResponse:
        """200; 404 ``404 Project Not Found`` or ``404 Not found`` (no such issue)."""
        found = self._issue_of(request, "404 Not found")
        if isinstance(found, FakeResponse):
            return found
        return FakeResponse(200, json=self._issue_json(request, *found))

    @vendor_route("POST", f"{_PROJECT}/issues", docs=f"{_ISSUES}/#new-issue", body="json")
    def create_issue(self, request: FakeRequest) -> FakeResponse:
        """201; 400 ``{"error": "title is missing"}``, 400 ``{"message": {"title": [...]}}``
        for a blank or long title; 404. ``labels`` is a comma-separated string (or a list);
        a name the project lacks is created in the project."""
        project = self._project_of(request)
        if isinstance(project, FakeResponse):
            return project
        params = self._params(request)
        title = params.get("title")
        if title is None:
            return FakeResponse(400, json={"error": "title is missing"})
        if not isinstance(title, str) or not title.strip():
            return _invalid(title=["can't be blank"])
        if len(title) > 255:
            return _invalid(title=["is too long (maximum is 255 characters)"])
        raw = params.get("labels") or []
        labels = [
            x.strip() for x in (raw.split(",") if isinstance(raw, str) else raw) if str(x).strip()
        ]
        for label in labels:
            project.labels.setdefault(label, True)
        description = params.get("description")
        issue = FakeIssue(
            next(self._issue_ids),
            project.next_iid,
            title,
            description if isinstance(description, str) else None,
            labels=list(dict.fromkeys(labels)),
            confidential=params.get("confidential") in (True, "true"),
            author=BOT,
            origin="api",
        )
        project.issues[issue.iid] = issue
        project.next_iid += 1
        return FakeResponse(201, json=self._issue_json(request, project, issue))

    @vendor_route(
        "PUT", f"{_PROJECT}/issues/{{iid}}", docs=f"{_ISSUES}/#edit-an-issue", body="json"
    )
    def edit_issue(self, request: FakeRequest) -> FakeResponse:
        """200; 404; 403 below Reporter. ``state_event`` ``close`` or ``reopen`` (each adds a
        system note when it changes the state; closing a closed issue answers 200 again),
        ``title``, ``description``."""
        found = self._issue_of(request, "404 Not found")
        if isinstance(found, FakeResponse):
            return found
        project, issue = found
        if not project.may("reporter"):
            return self.error(403, "403 Forbidden")
        params = self._params(request)
        event = params.get("state_event")
        if event not in (None, "close", "reopen"):
            return FakeResponse(400, json={"error": "state_event does not have a valid value"})
        wanted = {"close": "closed", "reopen": "opened"}.get(str(event), issue.state)
        if wanted != issue.state:
            issue.state = "closed" if wanted == "closed" else "opened"
            issue.closed_at = now() if wanted == "closed" else None
            issue.notes.append(FakeNote(next(self._note_ids), str(wanted), BOT, system=True))
        if isinstance(params.get("title"), str) and params["title"].strip():
            issue.title = params["title"]
        if isinstance(params.get("description"), str):
            issue.description = params["description"]
        issue.updated_at = now()
        return FakeResponse(200, json=self._issue_json(request, project, issue))

    # -- notes -------------------------------------------------------------------------

    @vendor_route(
        "POST",
        f"{_PROJECT}/issues/{{iid}}/notes",
        docs=f"{_NOTES}/#create-new-issue-note",
        body="json",
    )
    def create_note(self, request: FakeRequest) -> FakeResponse:
        """201; 400 ``{"error": "body is missing"}`` or ``{"message": {"note": ["can't be
        blank"]}}``; 404 ``404 Not found`` for a missing issue (GitLab's NotesFinder looks it
        up with ``find_by!``; ``404 Issue Not Found`` is its answer for an issue whose notes
        the user cannot read, which the fake does not model)."""
        found = self._issue_of(request, "404 Not found")
        if isinstance(found, FakeResponse):
            return found
        project, issue = found
        body = self._params(request).get("body")
        if body is None:
            return FakeResponse(400, json={"error": "body is missing"})
        if not isinstance(body, str) or not body.strip():
            return _invalid(note=["can't be blank"])
        note = FakeNote(next(self._note_ids), body, BOT)
        issue.notes.append(note)
        issue.updated_at = now()
        return FakeResponse(201, json=self.wire.note(project, issue, note))

    def _note_of(
        self, request: FakeRequest
    ) -> tuple[FakeProject, FakeIssue, FakeNote] | FakeResponse:
        found = self._issue_of(request, "404 Not found")
        if isinstance(found, FakeResponse):
            return found
        project, issue = found
        raw = request.path_params["note"]
        number = _number(raw)
        note = issue.note(number) if number is not None else None
        return (project, issue, note) if note is not None else self.error(404, "404 Not found")

    @vendor_route(
        "GET", f"{_PROJECT}/issues/{{iid}}/notes/{{note}}", docs=f"{_NOTES}/#get-single-issue-note"
    )
    def get_note(self, request: FakeRequest) -> FakeResponse:
        """200; 404."""
        found = self._note_of(request)
        if isinstance(found, FakeResponse):
            return found
        return FakeResponse(200, json=self.wire.note(*found))

    @vendor_route(
        "PUT",
        f"{_PROJECT}/issues/{{iid}}/notes/{{note}}",
        docs=f"{_NOTES}/#modify-existing-issue-note",
        body="json",
    )
    def edit_note_route(self, request: FakeRequest) -> FakeResponse:
        """200; 404; 403 for someone else's note below Maintainer, or a system note."""
        found = self._note_of(request)
        if isinstance(found, FakeResponse):
            return found
        project, issue, note = found
        if not _may_change(project, note):
            return self.error(403, "403 Forbidden")
        body = self._params(request).get("body")
        if not isinstance(body, str) or not body.strip():
            return FakeResponse(400, json={"error": "body is missing"})
        note.body, note.updated_at = body, now()
        return FakeResponse(200, json=self.wire.note(project, issue, note))

    @vendor_route(
        "DELETE",
        f"{_PROJECT}/issues/{{iid}}/notes/{{note}}",
        docs=f"{_NOTES}/#delete-an-issue-note",
    )
    def delete_note(self, request: FakeRequest) -> FakeResponse:
        """204; 404; 403 for someone else's note below Maintainer, or a system note."""
        found = self._note_of(request)
        if isinstance(found, FakeResponse):
            return found
        project, issue, note = found
        if not _may_change(project, note):
            return self.error(403, "403 Forbidden")
        issue.notes.remove(note)
        return FakeResponse(204)

    # -- branches ----------------------------------------------------------------------

    def _resolve(self, project: FakeProject, ref: str) -> str | None:
        """The commit a ``ref`` names: a branch, or a known commit SHA (full or abbreviated)."""
        if ref in project.branches:
            return project.branches[ref]
        if len(ref) >= 7 and all(c in "0123456789abcdef" for c in ref):
            return next((sha for sha in project.commits if sha.startswith(ref)), None)
        return None

    @vendor_route(
        "POST",
        f"{_PROJECT}/repository/branches",
        docs=f"{_BRANCHES}/#create-repository-branch",
        body="json",
    )
    def create_branch(self, request: FakeRequest) -> FakeResponse:
        """201; 400 ``{"error": "branch is missing"}``, ``Branch already exists``, ``Invalid
        reference name: <ref>``, ``Branch name is invalid``; 403 below Developer; 404.
        ``branch`` and ``ref`` may come in the query string or the body."""
        project = self._project_of(request)
        if isinstance(project, FakeResponse):
            return project
        params = self._params(request)
        for name in ("branch", "ref"):
            if not isinstance(params.get(name), str) or not params[name]:
                return FakeResponse(400, json={"error": f"{name} is missing"})
        if not project.may("developer"):
            return self.error(403, "403 Forbidden")
        branch, ref = params["branch"], params["ref"]
        if any(c in branch for c in " ~^:?*[\\") or ".." in branch or branch.startswith(("-", "/")):
            return self.error(400, "Branch name is invalid")
        if branch in project.branches:
            return self.error(400, "Branch already exists")
        sha = self._resolve(project, ref)
        if sha is None:
            return self.error(400, f"Invalid reference name: {ref}")
        project.branches[branch] = sha
        return FakeResponse(201, json=self.wire.branch(project, branch))

    def _branch_of(self, request: FakeRequest) -> tuple[FakeProject, str] | FakeResponse:
        project = self._project_of(request)
        if isinstance(project, FakeResponse):
            return project
        name = request.path_params["branch"]
        return (
            (project, name) if name in project.branches else self.error(404, "404 Branch Not Found")
        )

    @vendor_route(
        "GET",
        f"{_PROJECT}/repository/branches/{{branch}}",
        docs=f"{_BRANCHES}/#get-single-repository-branch",
    )
    def get_branch(self, request: FakeRequest) -> FakeResponse:
        """200; 404 ``404 Branch Not Found`` (the name must be encoded as one segment)."""
        found = self._branch_of(request)
        if isinstance(found, FakeResponse):
            return found
        return FakeResponse(200, json=self.wire.branch(*found))

    @vendor_route(
        "DELETE",
        f"{_PROJECT}/repository/branches/{{branch}}",
        docs=f"{_BRANCHES}/#delete-repository-branch",
    )
    def delete_branch(self, request: FakeRequest) -> FakeResponse:
        """204; 404 ``404 Branch Not Found``; 403 below Developer; 400 for the default branch
        and, below Maintainer, for a protected one (GitLab's messages)."""
        found = self._branch_of(request)
        if isinstance(found, FakeResponse):
            return found
        project, name = found
        if not project.may("developer"):
            return self.error(403, "403 Forbidden")
        if name == project.default_branch:
            return self.error(400, "The default branch of a project cannot be deleted.")
        if name in project.protected and not project.may("maintainer"):
            return self.error(400, _PROTECTED_DELETE)
        del project.branches[name]
        return FakeResponse(204)
