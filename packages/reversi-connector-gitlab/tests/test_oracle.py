"""The second oracle: python-gitlab, GitLab's own-ecosystem client, driven against the fake.

python-gitlab (``gitlab.Gitlab(url=...)``) is pointed at FakeGitLab and makes, through its
object API, every request the connector makes: read, create and close an issue, add,
read and delete a note, create, read and delete a branch, each with a success and a
refusal. It must accept every answer: an object of its class whose id attribute (``iid``
for an issue, ``id`` for a note, ``name`` for a branch) and the parent attributes its
sub-managers need (an issue's ``project_id`` and ``iid``) are there, with the types
GitLab gives them; each refusal must raise python-gitlab's exception for the call, with
the status and an ``error_message`` read from GitLab's ``{"message": ...}`` or
``{"error": ...}`` body. The paths python-gitlab builds (its own encoding of
``group/sub/project`` and of branch names) must be the very paths the connector sends.
Fakes changed on purpose fail.

See docs/connectors/gitlab.md ("The second oracle").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import gitlab
import gitlab.exceptions as gle
import pytest

from reversi_connector_gitlab import GitlabConnector
from reversi_connector_gitlab.testing import (
    NESTED,
    PROJECT,
    SHA_FEATURE,
    FakeGitLab,
    seed_example,
)
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.testing import FakeRequest, FakeResponse, FakeServer

TOKEN = "glpat-oracleToken-0123456789abcdef"
READ_ONLY_TOKEN = "glpat-oracleReadApi-0123456789abc"


@dataclass(frozen=True)
class Step:
    """One thing python-gitlab does, and what the fake's answer must give it."""

    name: str
    act: Callable[[gitlab.Gitlab], Any]
    check: Callable[[Any], str | None]  # a problem in words, or None
    refusal: tuple[type[Exception], int, Any] | None = None  # exception, status, error_message


def _is(kind: type, attr: str) -> Callable[[Any], str | None]:
    """The object python-gitlab made has ``attr`` of type ``kind``."""

    def check(obj: Any) -> str | None:
        value = getattr(obj, attr, None)
        return (
            None
            if isinstance(value, kind) and not isinstance(value, bool)
            else f"{attr} is {value!r}"
        )

    return check


def _issue(obj: Any) -> str | None:
    if not isinstance(obj, gitlab.v4.objects.ProjectIssue):
        return f"not a ProjectIssue: {obj!r}"
    problems = [
        p for p in (_is(int, "iid")(obj), _is(int, "project_id")(obj), _is(str, "state")(obj)) if p
    ]
    if obj.get_id() != getattr(obj, "iid", None):
        problems.append("get_id() is not the iid")
    return "; ".join(problems) or None


def _note(obj: Any) -> str | None:
    if not isinstance(obj, gitlab.v4.objects.ProjectIssueNote):
        return f"not a ProjectIssueNote: {obj!r}"
    return _is(int, "id")(obj) or _is(str, "body")(obj)


def _branch(obj: Any) -> str | None:
    if not isinstance(obj, gitlab.v4.objects.ProjectBranch):
        return f"not a ProjectBranch: {obj!r}"
    commit = getattr(obj, "commit", None)
    if not isinstance(commit, dict) or not isinstance(commit.get("id"), str):
        return f"commit is {commit!r}"
    return _is(str, "name")(obj)


def _nothing(value: Any) -> str | None:
    return None


def _closed(gl: gitlab.Gitlab) -> Any:
    issue = gl.projects.get(PROJECT, lazy=True).issues.create({"title": "to close"})
    issue.state_event = "close"
    issue.save()
    return issue


def _new_note(gl: gitlab.Gitlab) -> Any:
    issue = gl.projects.get(PROJECT, lazy=True).issues.get(
        1
    )  # the note manager needs its attributes
    return issue.notes.create({"body": "from python-gitlab"})


def _note_round_trip(gl: gitlab.Gitlab) -> Any:
    issue = gl.projects.get(PROJECT, lazy=True).issues.get(1)
    made = issue.notes.create({"body": "read me back"})
    got = issue.notes.get(made.id)
    issue.notes.delete(made.id)
    return got


def _branch_round_trip(gl: gitlab.Gitlab) -> Any:
    project = gl.projects.get(PROJECT, lazy=True)
    project.branches.create({"branch": "agent/py", "ref": SHA_FEATURE})
    got = project.branches.get("agent/py")
    project.branches.delete("agent/py")
    return got


def _project(path: str = PROJECT) -> Callable[[gitlab.Gitlab], Any]:
    return lambda gl: gl.projects.get(path, lazy=True)


STEPS: list[Step] = [
    Step("get an issue", lambda gl: _project()(gl).issues.get(1), _issue),
    Step("get an issue by ID", lambda gl: gl.projects.get(42, lazy=True).issues.get(2), _issue),
    Step("get an issue of a nested project", lambda gl: _project(NESTED)(gl).issues.get(1), _issue),
    Step(
        "create an issue",
        lambda gl: _project()(gl).issues.create({"title": "x", "labels": "bug,new"}),
        _issue,
    ),
    Step(
        "close an issue",
        _closed,
        lambda obj: _issue(obj) or (None if obj.state == "closed" else obj.state),
    ),
    Step("create a note", _new_note, _note),
    Step("get and delete a note", _note_round_trip, _note),
    Step("create, get and delete a branch", _branch_round_trip, _branch),
    Step(
        "create a branch",
        lambda gl: _project()(gl).branches.create({"branch": "agent/kept", "ref": "main"}),
        _branch,
    ),
    Step(
        "a missing issue",
        lambda gl: _project()(gl).issues.get(999),
        _nothing,
        (gle.GitlabGetError, 404, "404 Not found"),
    ),
    Step(
        "a missing project",
        lambda gl: _project("acme/missing")(gl).issues.get(1),
        _nothing,
        (gle.GitlabGetError, 404, "404 Project Not Found"),
    ),
    Step(
        "a blank title",
        lambda gl: _project()(gl).issues.create({"title": " "}),
        _nothing,
        (gle.GitlabCreateError, 400, {"title": ["can't be blank"]}),
    ),
    Step(
        "closing a missing issue",
        lambda gl: _project()(gl).issues.update(999, {"state_event": "close"}),
        _nothing,
        (gle.GitlabUpdateError, 404, "404 Not found"),
    ),
    Step(
        "a note on a missing issue",
        lambda gl: _project()(gl).issues.get(999, lazy=True).notes.create({"body": "x"}),
        _nothing,
        (gle.GitlabCreateError, 404, "404 Not found"),
    ),
    Step(
        "someone else's note",
        lambda gl: _project()(gl).issues.get(1, lazy=True).notes.delete(9_001),
        _nothing,
        (gle.GitlabDeleteError, 403, "403 Forbidden"),
    ),
    Step(
        "a missing note",
        lambda gl: _project()(gl).issues.get(1, lazy=True).notes.get(99_999),
        _nothing,
        (gle.GitlabGetError, 404, "404 Not found"),
    ),
    Step(
        "an existing branch",
        lambda gl: _project()(gl).branches.create({"branch": "dev", "ref": "main"}),
        _nothing,
        (gle.GitlabCreateError, 400, "Branch already exists"),
    ),
    Step(
        "a missing branch",
        lambda gl: _project()(gl).branches.get("never-existed"),
        _nothing,
        (gle.GitlabGetError, 404, "404 Branch Not Found"),
    ),
    Step(
        "a protected branch",
        lambda gl: _project()(gl).branches.delete("release"),
        _nothing,
        (
            gle.GitlabDeleteError,
            400,
            "You are not allowed to delete protected branches from this project. Only a project "
            "maintainer or owner can delete a protected branch.",
        ),
    ),
    Step(
        "a missing branch deleted",
        lambda gl: _project()(gl).branches.delete("never-existed"),
        _nothing,
        (gle.GitlabDeleteError, 404, "404 Branch Not Found"),
    ),
]
"""What python-gitlab does against the fake, in order, on one seeded fake."""

READ_ONLY_STEPS: list[Step] = [
    Step("a read with read_api", lambda gl: _project()(gl).issues.get(1), _issue),
    Step(
        "a write with read_api",
        lambda gl: _project()(gl).issues.create({"title": "x"}),
        _nothing,
        (gle.GitlabCreateError, 403, "insufficient_scope"),
    ),
]


def _sdk_drive(
    fake_class: type[FakeGitLab] = FakeGitLab,
) -> tuple[list[str], list[FakeRequest], FakeGitLab]:
    """Run :data:`STEPS` (and :data:`READ_ONLY_STEPS`) with python-gitlab; return what went wrong."""
    fake = fake_class(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(fake)
    wrong: list[str] = []
    with FakeServer(fake) as server:
        for token, steps in ((TOKEN, STEPS), (READ_ONLY_TOKEN, READ_ONLY_STEPS)):
            gl = gitlab.Gitlab(
                url=server.url, private_token=token, timeout=5, retry_transient_errors=False
            )
            for step in steps:
                try:
                    value = step.act(gl)
                except gle.GitlabError as exc:
                    got = (type(exc), exc.response_code, exc.error_message)
                    if (
                        step.refusal is None
                        or not isinstance(exc, step.refusal[0])
                        or got[1:] != step.refusal[1:]
                    ):
                        wrong.append(
                            f"{step.name}: python-gitlab raised {type(exc).__name__}{got[1:]}"
                        )
                    continue
                except (AttributeError, KeyError, TypeError) as exc:
                    wrong.append(f"{step.name}: python-gitlab could not use the answer: {exc!r}")
                    continue
                if step.refusal is not None:
                    wrong.append(
                        f"{step.name}: python-gitlab accepted {value!r}, expected a refusal"
                    )
                    continue
                problem = step.check(value)
                if problem:
                    wrong.append(f"{step.name}: {problem}")
            gl.session.close()
        return wrong, server.requests, fake


def test_python_gitlab_accepts_every_answer_of_the_fake() -> None:
    wrong, requests, _ = _sdk_drive()
    assert wrong == []
    assert len(requests) >= len(STEPS) + len(READ_ONLY_STEPS)


def _routes(fake: FakeGitLab, requests: list[FakeRequest]) -> set[tuple[str, str]]:
    found = [fake.route_for(r.method, r.target.split("?", 1)[0]) for r in requests]
    return {(f[0].method, f[0].template) for f in found if f is not None}


async def _connector_drive() -> tuple[list[FakeRequest], FakeGitLab]:
    """The connector makes the same kind of calls; return what the fake received."""
    fake = FakeGitLab(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake) as server:
        connector = GitlabConnector(TOKEN, base_url=fake.base_url(server))
        at = {"project": PROJECT}
        calls = [
            ("gitlab.get_issue", {**at, "issue_iid": 1}),
            ("gitlab.get_issue", {"project": NESTED, "issue_iid": 1}),
            ("gitlab.create_issue", {**at, "title": "x"}),
            ("gitlab.close_issue", {**at, "issue_iid": 3}),
            ("gitlab.add_note", {**at, "issue_iid": 1, "body": "x"}),
            ("gitlab.create_branch", {**at, "branch": "agent/py", "ref": SHA_FEATURE}),
            ("gitlab.delete_branch", {**at, "branch": "agent/py", "expected_sha": SHA_FEATURE}),
            ("gitlab.delete_branch", {**at, "branch": "release"}),
        ]
        for tool, args in calls:
            try:
                result = await connector.call(tool, args)
            except (ToolError, EffectUncertainError):
                continue
            if tool == "gitlab.add_note":
                await connector.call(
                    "gitlab.delete_note",
                    {
                        **at,
                        "issue_iid": 1,
                        "note_id": result["id"],
                        "expected_body": result["body"],
                    },
                )
        await connector.aclose()
        return server.requests, fake


def test_python_gitlab_covers_every_route_the_connector_uses_with_the_same_paths() -> None:
    sdk_requests, fake = _sdk_drive()[1:]
    ours, _ = anyio.run(_connector_drive)
    assert _routes(fake, ours) <= _routes(fake, sdk_requests)
    assert (
        len(_routes(fake, ours)) == 9
    )  # GET/POST/PUT issue, POST/GET/DELETE note, POST/GET/DELETE branch
    sdk_paths = {r.target.split("?", 1)[0] for r in sdk_requests}
    for path in (
        "/api/v4/projects/acme%2Fbackend/issues/1",
        "/api/v4/projects/acme%2Fplatform%2Finfra/issues/1",
        "/api/v4/projects/acme%2Fbackend/repository/branches/agent%2Fpy",
    ):
        assert path in sdk_paths
        assert path in {r.target for r in ours}


# -- drift: python-gitlab fails a fake that answers in a shape GitLab does not use ------------


class IssueWithoutIid(FakeGitLab):
    """An issue answered without its ``iid``."""

    def get_issue(self, request: FakeRequest) -> FakeResponse:
        answer = super().get_issue(request)
        if isinstance(answer.json, dict):
            return dataclasses.replace(
                answer, json={k: v for k, v in answer.json.items() if k != "iid"}
            )
        return answer


class NoteAsList(FakeGitLab):
    """A new note answered as a one-item list."""

    def create_note(self, request: FakeRequest) -> FakeResponse:
        answer = super().create_note(request)
        return dataclasses.replace(answer, json=[answer.json]) if answer.status == 201 else answer


class ErrorAsDetail(FakeGitLab):
    """Errors answered as ``{"detail": ...}``, a shape GitLab does not use."""

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        return FakeResponse(status, json={"detail": message})


class BranchAsText(FakeGitLab):
    """A branch answered with ``Content-Type: text/plain``."""

    def get_branch(self, request: FakeRequest) -> FakeResponse:
        answer = super().get_branch(request)
        return dataclasses.replace(answer, headers={"Content-Type": "text/plain"})


class IssueWithoutProjectId(FakeGitLab):
    """Issues answered without ``project_id``: python-gitlab falls back on the path it was given."""

    def get_issue(self, request: FakeRequest) -> FakeResponse:
        answer = super().get_issue(request)
        if isinstance(answer.json, dict):
            return dataclasses.replace(
                answer, json={k: v for k, v in answer.json.items() if k != "project_id"}
            )
        return answer


@pytest.mark.parametrize(
    ("fake_class", "words"),
    [
        (IssueWithoutIid, "get an issue: iid is None"),
        (NoteAsList, "create a note: python-gitlab raised GitlabParsingError"),
        (ErrorAsDetail, 'a missing project: python-gitlab raised GitlabGetError(404, \'{"detail"'),
        (BranchAsText, "create, get and delete a branch: python-gitlab raised GitlabParsingError"),
        (IssueWithoutProjectId, "get an issue: project_id is 'acme%2Fbackend'"),
    ],
)
def test_a_fake_that_drifts_from_gitlab_fails_python_gitlab(
    fake_class: type[FakeGitLab], words: str
) -> None:
    wrong, _, _ = _sdk_drive(fake_class)
    assert any(w.startswith(words) for w in wrong), wrong
