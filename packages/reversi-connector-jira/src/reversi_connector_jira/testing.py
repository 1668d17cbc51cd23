"""A fake Jira Cloud REST API v3 to test against, and the connector's certification opt-in.

:class:`FakeJira` is a :class:`reversi_core.testing.VendorFake` that models the part of
Jira Cloud's REST API v3 the ``jira`` connector uses, written from Atlassian's
documentation (each route's decorator cites its page): issues (create, read with a
``fields`` selection, delete, refused while it has subtasks), comments (add, delete),
and one workflow with statuses and transitions (:data:`STATUSES`, :data:`TRANSITIONS`),
including a status with no way back and a status name two transitions lead to; each
issue keeps the history of its status changes. Errors are Jira's ``ErrorCollection``
bodies; authentication is HTTP basic (email and API token). Serve it with
:class:`reversi_core.testing.FakeServer`::

    from reversi_core.testing import FakeServer
    from reversi_connector_jira import JiraConnector
    from reversi_connector_jira.testing import FakeJira

    fake = FakeJira(email="me@example.com", api_token="tok_0001")
    fake.add_project("PROJ", "Project")
    with FakeServer(fake) as server:
        jira = JiraConnector(server.url, "me@example.com", "tok_0001")
        made = await jira.call("jira.create_issue", {"project": "PROJ", "summary": "Hi"})
        assert fake.find_issue(made["key"])["summary"] == "Hi"

What the fake does not model: permissions beyond read-only versus read-write
accounts, issue security, screens and fields on transitions, resolutions and other
post-functions, custom fields, JQL search, pagination of comments, moved issues, and
``updateHistory``. Messages are Jira's where its documentation or API shows them; the
subtask refusal's text is the fake's own (the documentation names the 400 only).

:func:`certification_fixture` opts the connector into the repository's certification
suite (docs/certification-guide.md): every check applies to jira.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reversi_core.http import Timeouts
from reversi_core.testing import (
    CertificationFixture,
    ConcurrentChange,
    Dependency,
    Example,
    ExampleContext,
    Failure,
    FakeServer,
    LiveScenario,
    Residue,
)

from ._fake import STATUSES, TRANSITIONS, FakeJira, Status, Transition
from ._live import LIVE_SUMMARY, LIVE_VARIABLES, live_scenario
from .connector import JiraConnector

__all__ = [
    "CERTIFICATION_EMAIL",
    "CERTIFICATION_TOKEN",
    "DEPENDENCIES",
    "EXAMPLES",
    "FAILURES",
    "LIMIT",
    "LIVE",
    "PATIENCE",
    "RESTORES_NOTHING",
    "STATUSES",
    "TRANSITIONS",
    "FakeJira",
    "Status",
    "Transition",
    "certification_fixture",
    "concurrent_change",
    "jira_backend",
    "seed_example",
]

CERTIFICATION_EMAIL = "agent@reversi.example"
"""The account email the certification fixture gives the fake and the connector."""

CERTIFICATION_TOKEN = "ATATT3xReversiCertification0000000001"  # noqa: S105 - made up
"""The API token the certification fixture gives the fake and the connector."""

LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""

TO_DO, IN_PROGRESS, IN_REVIEW, DONE, ARCHIVED = "10000", "3", "10001", "10002", "10003"


def seed_example(fake: FakeJira) -> None:
    """Put the example state in ``fake``: project PROJ with PROJ-1 "Crash on start" (To Do,
    one comment), PROJ-2 "Epic work" (In Progress) with its subtask PROJ-3, and PROJ-4
    "Shipped" (Done)."""
    fake.add_project("PROJ", "Project")
    first = fake.add_issue("PROJ", "Crash on start")
    fake.add_comment(first["id"], "Seen it too.")
    parent = fake.add_issue("PROJ", "Epic work", status=IN_PROGRESS)
    fake.add_issue("PROJ", "A part of it", parent=parent["id"], issue_type="Sub-task")
    fake.add_issue("PROJ", "Shipped", status=DONE)


@contextmanager
def jira_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeJira` (the certification account) served on a fresh port."""
    with FakeServer(FakeJira(email=CERTIFICATION_EMAIL, api_token=CERTIFICATION_TOKEN)) as server:
        yield server


def _fake(server: FakeServer) -> FakeJira:
    app = server.app
    if not isinstance(app, FakeJira):
        raise TypeError(f"the server does not serve a FakeJira but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> JiraConnector:
    return JiraConnector(
        server.url,
        CERTIFICATION_EMAIL,
        CERTIFICATION_TOKEN,
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


def _restore_after(issue: str, transition: str) -> Callable[[ExampleContext[Any]], Any]:
    """An args builder: run ``transition`` on ``issue``, then give restore_status its undo's arguments."""

    async def build(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
        moved = await ctx.call("jira.transition_issue", {"issue": issue, "transition": transition})
        return _undo_args(moved)

    return build


def _undo_args(moved: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "issue": moved["issue"],
        "status_id": moved["previous_status_id"],
        "status": moved["previous_status"],
        "expected_status_id": moved["status_id"],
        "expected_status": moved["status"],
    }


async def _changed_since(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    moved = await ctx.call(
        "jira.transition_issue", {"issue": "PROJ-1", "transition": "Start Progress"}
    )
    _fake(ctx.handle).set_status("PROJ-1", IN_REVIEW)  # someone else moves it on
    return _undo_args(moved)


async def _delete_new_issue(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    """delete_issue's arguments as create_issue's undo has them (what the call set)."""
    made = await ctx.call("jira.create_issue", {"project": "PROJ", "summary": "To delete"})
    return {
        "issue": made["id"],
        "expected_summary": made["summary"],
        "expected_description": made["description"],
    }


async def _delete_new_comment(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    """delete_comment's arguments as add_comment's undo has them (the text it posted)."""
    made = await ctx.call("jira.add_comment", {"issue": "PROJ-1", "body": "To delete\n\nTwice"})
    return {"issue": "PROJ-1", "comment_id": made["id"], "expected_body": made["body"]}


async def _commented_since(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    undo = await _delete_new_issue(ctx)
    _fake(ctx.handle).add_comment(str(undo["issue"]), "Mine too.")  # someone else comments
    return undo


async def _edited_since(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    undo = await _delete_new_comment(ctx)
    _fake(ctx.handle).edit_comment(str(undo["comment_id"]), "Edited.")  # by a project admin
    return undo


def _on_new(field: str, which: str, **more: Any) -> Callable[[ExampleContext[Any]], Any]:
    async def build(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
        return {field: ctx.results["jira.create_issue"][which], **more}

    return build


EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "jira.get_issue": [{"issue": "PROJ-1"}, {"issue": "PROJ-2"}],
    "jira.create_issue": [
        {
            "project": "PROJ",
            "summary": "Found by the agent",
            "description": "Steps:\n1. run\n\nSeen twice.",
        },
        {"project": "PROJ", "summary": "A part", "issue_type": "Sub-task", "parent": "PROJ-1"},
    ],
    "jira.add_comment": [
        {"issue": "PROJ-1", "body": "Looking into it.\nLine two.\n\nSecond paragraph."},
        {"issue": "PROJ-4", "body": "Odd: 100% + /path?x=1#frag ünïcode *not bold*"},
    ],
    "jira.transition_issue": [
        {"issue": "PROJ-1", "transition": "Start Progress"},
        {"issue": "PROJ-1", "transition": "11"},
        {"issue": "PROJ-2", "transition": "in review"},
    ],
    "jira.restore_status": [
        _restore_after("PROJ-1", "Start Progress"),
        {
            "issue": "PROJ-1",
            "status_id": TO_DO,
            "status": "To Do",
            "expected_status_id": IN_PROGRESS,
            "expected_status": "In Progress",
        },
    ],
    "jira.delete_issue": [_delete_new_issue, {"issue": "PROJ-4"}, {"issue": "PROJ-999"}],
    "jira.delete_comment": [_delete_new_comment, {"issue": "PROJ-1", "comment_id": "99999"}],
}

FAILURES: Mapping[str, list[Failure]] = {
    "jira.get_issue": [Failure({"issue": "PROJ-999"}, code="not_found", status=404)],
    "jira.create_issue": [
        Failure({"project": "NOPE", "summary": "x"}, code="bad_request", status=400),
        Failure({"project": "PROJ", "summary": "   "}, code="bad_request", status=400),
        Failure(
            {"project": "PROJ", "summary": "x", "issue_type": "Epic"},
            code="bad_request",
            status=400,
        ),
    ],
    "jira.add_comment": [Failure({"issue": "PROJ-999", "body": "x"}, code="not_found", status=404)],
    "jira.transition_issue": [
        Failure({"issue": "PROJ-1", "transition": "Teleport"}, code="transition_not_found"),
        Failure({"issue": "PROJ-2", "transition": "Done"}, code="ambiguous_transition"),
        Failure({"issue": "PROJ-999", "transition": "11"}, code="not_found", status=404),
    ],
    "jira.restore_status": [
        Failure(_restore_after("PROJ-2", "Resolve"), code="no_way_back"),
        Failure(_changed_since, code="changed_since"),
    ],
    "jira.delete_issue": [
        Failure({"issue": "PROJ-2"}, code="has_subtasks", status=400),
        Failure(_commented_since, code="changed_since"),
    ],
    "jira.delete_comment": [Failure(_edited_since, code="changed_since")],
}
"""Calls Jira turns down, each with the code (and status) the connector must answer:
404 ``not_found``; 400 ``bad_request`` for an unknown project, a blank summary, an
unknown issue type; ``transition_not_found`` and ``ambiguous_transition`` (nothing sent);
``no_way_back`` (Done leads only to To Do and Archived); ``changed_since`` (someone
moved the issue after the transition; someone commented on the issue, or edited the
comment, the undo would delete); 400 ``has_subtasks``."""

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "jira.create_issue",
        {"project": "PROJ", "summary": "New"},
        "jira.add_comment",
        _on_new("issue", "key", body="Working on it."),
    ),
    Dependency(
        "jira.create_issue",
        {"project": "PROJ", "summary": "New"},
        "jira.add_comment",
        _on_new("issue", "id", body="By id."),
    ),
    Dependency(
        "jira.create_issue",
        {"project": "PROJ", "summary": "New"},
        "jira.transition_issue",
        _on_new("issue", "key", transition="Start Progress"),
    ),
    Dependency(
        "jira.create_issue",
        {"project": "PROJ", "summary": "New"},
        "jira.create_issue",
        _on_new("parent", "key", project="PROJ", summary="Its part", issue_type="Sub-task"),
    ),
]


def _without_used_numbers(fingerprint: Any) -> Any:
    for project in fingerprint["projects"].values():
        project.pop("next_number", None)
    return fingerprint


def _without_history(fingerprint: Any) -> Any:
    for issue in fingerprint["issues"].values():
        issue.pop("history", None)
        issue.pop("updated", None)
    return fingerprint


RESIDUE: Mapping[str, Residue] = {
    "jira.create_issue": Residue(
        reason="the undo deletes the issue, which cannot be brought back, and Jira does not give "
        "its key number again",
        normalise=_without_used_numbers,
    ),
    "jira.transition_issue": Residue(
        reason="the undo runs a second transition back, so the issue history shows both (and its "
        "updated time moves); workflow post-functions ran both times",
        normalise=_without_history,
    ),
}

RESTORES_NOTHING: Mapping[str, str] = {}
"""No jira compensation is exempt from the concurrent-change rule: restore_status checks the
status, and the two deletes check that nobody edited or commented on what they delete."""


def concurrent_change(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange | None:
    """Change, through the backend, what ``tool``'s compensation would lose; ``None`` if nothing.

    For jira.transition_issue: someone moves the issue on to another status after the
    transition (In Review, or Archived when the transition led to In Review), so
    jira.restore_status must refuse, naming the issue's status. For jira.add_comment:
    someone edits the comment ("the comment's body"). For jira.create_issue: someone
    comments on the new issue ("comment someone added"). ``revert`` puts back what the
    call left (the status it set, the text it posted; the comment taken away again).
    """
    fake = _fake(server)
    if tool == "jira.transition_issue":
        elsewhere = IN_REVIEW if result["status_id"] != IN_REVIEW else ARCHIVED
        fake.set_status(str(args["issue"]), elsewhere)
        return ConcurrentChange(
            what="the issue's status",
            revert=lambda: fake.set_status(str(args["issue"]), str(result["status_id"])),
        )
    if tool == "jira.add_comment":
        comment = str(result["id"])
        posted = copy.deepcopy(fake.comments[comment]["body"])
        fake.edit_comment(comment, "Edited by a project admin: see the linked incident.")
        return ConcurrentChange(
            what="the comment's body", revert=lambda: fake.restore_comment(comment, posted)
        )
    if tool == "jira.create_issue":
        theirs = fake.add_comment(str(result["id"]), "I can reproduce this on 2.3 as well.")
        return ConcurrentChange(
            what="comment someone added", revert=lambda: fake.remove_comment(theirs["id"])
        )
    return None


LIVE = LiveScenario(
    name="issue-comment-transition",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {"REVERSI_LIVE_JIRA_PROJECT": "PROJ"},
)
"""The live scenario of ``jira`` (``nox -s live -- jira``; ``reversi_connector_jira._live``)."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The jira connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of Jira Cloud's REST API v3 with a workflow, faults included",
        command_line=lambda server: (
            {
                "JIRA_BASE_URL": server.url,
                "JIRA_EMAIL": CERTIFICATION_EMAIL,
                "JIRA_API_TOKEN": CERTIFICATION_TOKEN,
            },
            [],
        ),
        backend=jira_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue=RESIDUE,
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
        live=LIVE,
        concurrent_change=concurrent_change,
        restores_nothing=RESTORES_NOTHING,
    )
