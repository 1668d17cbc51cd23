"""A fake GitLab REST API to test against, and the connector's certification opt-in.

:class:`FakeGitLab` is a :class:`reversi_core.testing.VendorFake` that models the part of
GitLab's REST API v4 the ``gitlab`` connector uses, written from GitLab's documentation
(each route cites its page): issues, issue notes and repository branches, with GitLab's
status codes and both of its error shapes (``{"message": ...}``, ``{"error": ...}``), the
``PRIVATE-TOKEN`` check, token scopes (``api``, ``read_api``), the token user's role in
each project, protected branches, and rate limits. Serve it with
:class:`reversi_core.testing.FakeServer` and point the connector at the server's root::

    from reversi_core.testing import FakeServer
    from reversi_connector_gitlab import GitlabConnector
    from reversi_connector_gitlab.testing import FakeGitLab, seed_example

    fake = FakeGitLab(token="glpat-test-token-0001")
    seed_example(fake)
    with FakeServer(fake) as server:
        gitlab = GitlabConnector("glpat-test-token-0001", base_url=fake.base_url(server))
        made = await gitlab.call("gitlab.create_issue", {"project": "acme/backend", "title": "Hi"})
        assert fake.project("acme/backend").issues[made["iid"]].state == "opened"

What the fake does not model: merge requests, tags (a ``ref`` is a branch or a commit),
pagination, quick actions (the connector refuses text that holds one), groups and
visibility (the token user is a member of every project, with the project's ``role``),
protected-branch rules beyond "Maintainer may delete", ``If-Unmodified-Since``, webhooks
and e-mail notifications.

:func:`certification_fixture` opts the connector into the repository's certification
suite (docs/certification-guide.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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

from ._fake import BOT, FakeGitLab
from ._live import LIVE_PROJECT_VARIABLE, LIVE_SUMMARY, LIVE_VARIABLES, live_scenario
from ._state import ROLES, FakeCommit, FakeIssue, FakeNote, FakeProject, Role, commit_sha
from .connector import GitlabConnector

__all__ = [
    "BOT",
    "BOT_NOTE_ID",
    "CERTIFICATION_TOKEN",
    "DEPENDENCIES",
    "DOCS_PROJECT",
    "EXAMPLES",
    "FAILURES",
    "ISSUE_STAYS_CLOSED",
    "LIMIT",
    "LIVE",
    "NESTED",
    "NOTE_ID",
    "PATIENCE",
    "PROJECT",
    "PROJECT_ID",
    "RESTORES_NOTHING",
    "ROLES",
    "SHA_DEV",
    "SHA_FEATURE",
    "FakeCommit",
    "FakeGitLab",
    "FakeIssue",
    "FakeNote",
    "FakeProject",
    "Role",
    "certification_fixture",
    "commit_sha",
    "concurrent_change",
    "gitlab_backend",
    "seed_example",
]

CERTIFICATION_TOKEN = "glpat-reversiCertification000000001"  # noqa: S105 - made up
"""The token the certification fixture gives the fake and the connector."""

LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""

PROJECT_ID = 42
PROJECT = "acme/backend"
"""Project 42: branches ``main`` (default, protected), ``dev``, ``release`` (protected);
issues #1 (opened, two notes) and #2 (closed). The token user is a Developer there."""
NESTED = "acme/platform/infra"
"""Project 7, in a subgroup: one issue."""
DOCS_PROJECT = "acme/docs"
"""Project 8, where the token user is only a Reporter (no branches of its own)."""
SHA_DEV = commit_sha(PROJECT, "dev")
"""The commit branch ``dev`` points at."""
SHA_FEATURE = commit_sha(PROJECT, "feature")
"""A commit no branch points at."""
NOTE_ID = 9_001
"""Alice's note on issue #1 (the bot, a Developer, may not delete it)."""
BOT_NOTE_ID = 9_002
"""The bot's own note on issue #1, from before any run."""


def seed_example(fake: FakeGitLab) -> None:
    """Put the example projects in ``fake`` (see the constants of this module)."""
    fake.add_project(PROJECT_ID, PROJECT)
    fake.add_branch(PROJECT_ID, "dev", fake.add_commit(PROJECT_ID, "dev"))
    fake.add_branch(PROJECT_ID, "release", protected=True)
    fake.add_commit(PROJECT_ID, "feature")
    first = fake.add_issue(PROJECT_ID, "Crash on start", description="It crashes.", labels=["bug"])
    fake.add_note(PROJECT_ID, first.iid, "Seen it too.")
    fake.add_note(PROJECT_ID, first.iid, "Triaged.", author=BOT)
    fake.add_issue(PROJECT_ID, "Old idea", state="closed")
    fake.add_project(7, NESTED)
    fake.add_issue(7, "Disk fills up")
    fake.add_project(8, DOCS_PROJECT, role="reporter")


@contextmanager
def gitlab_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeGitLab` (token :data:`CERTIFICATION_TOKEN`) served on a fresh port."""
    with FakeServer(FakeGitLab(token=CERTIFICATION_TOKEN)) as server:
        yield server


def _fake(server: FakeServer) -> FakeGitLab:
    app = server.app
    if not isinstance(app, FakeGitLab):
        raise TypeError(f"the server does not serve a FakeGitLab but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> GitlabConnector:
    return GitlabConnector(
        CERTIFICATION_TOKEN,
        base_url=_fake(server).base_url(server),
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


def _at(**more: Any) -> dict[str, Any]:
    return {"project": PROJECT, **more}


async def _close_new_issue(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("gitlab.create_issue", _at(title="To be closed"))
    return _at(issue_iid=made["iid"])


async def _delete_new_note(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("gitlab.add_note", _at(issue_iid=1, body="To be deleted"))
    return _at(issue_iid=1, note_id=made["id"], expected_body=made["body"])


async def _delete_new_branch(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("gitlab.create_branch", _at(branch="agent/tmp", ref=SHA_FEATURE))
    return _at(branch="agent/tmp", expected_sha=made["sha"])


async def _note_on_new_issue(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _at(issue_iid=ctx.results["gitlab.create_issue"]["iid"], body="Working on it.")


async def _branch_from_new_branch(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _at(branch="agent/child", ref=ctx.results["gitlab.create_branch"]["branch"])


EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "gitlab.get_issue": [
        _at(issue_iid=1),
        {"project": PROJECT_ID, "issue_iid": 2},
        {"project": NESTED, "issue_iid": 1},
    ],
    "gitlab.create_issue": [
        _at(title="Found by the agent", description="Steps to reproduce..."),
        {"project": PROJECT_ID, "title": "Labelled", "labels": ["bug", "needs-triage"]},
        {"project": NESTED, "title": "ünïcødé, 100% / a?b#c", "confidential": True},
    ],
    "gitlab.add_note": [
        _at(issue_iid=1, body="Looking into it."),
        {"project": NESTED, "issue_iid": 1, "body": "Is it 100%? See a/b#c and `/close`."},
    ],
    "gitlab.create_branch": [
        _at(branch="agent/fix", ref="main"),
        {"project": str(PROJECT_ID), "branch": "agent/from-sha", "ref": SHA_FEATURE},
    ],
    "gitlab.close_issue": [_at(issue_iid=1), _close_new_issue, _at(issue_iid=2)],
    "gitlab.delete_note": [
        _at(issue_iid=1, note_id=BOT_NOTE_ID),
        _delete_new_note,
        _at(issue_iid=1, note_id=99_999, expected_body="gone"),
    ],
    "gitlab.delete_branch": [
        _at(branch="dev"),
        _delete_new_branch,
        _at(branch="never-existed"),
    ],
}

FAILURES: Mapping[str, list[Failure]] = {
    "gitlab.get_issue": [
        Failure(_at(issue_iid=999), code="not_found", status=404),
        Failure({"project": "acme/missing", "issue_iid": 1}, code="project_not_found", status=404),
    ],
    "gitlab.create_issue": [
        Failure({"project": "acme/missing", "title": "x"}, code="project_not_found", status=404),
        Failure(_at(title="   "), code="validation_failed", status=400),
    ],
    "gitlab.add_note": [Failure(_at(issue_iid=999, body="x"), code="not_found", status=404)],
    "gitlab.create_branch": [
        Failure(_at(branch="dev", ref="main"), code="branch_exists", status=400),
        Failure(_at(branch="agent/x", ref="no-such-ref"), code="invalid_reference", status=400),
        Failure(
            {"project": DOCS_PROJECT, "branch": "agent/x", "ref": "main"},
            code="forbidden",
            status=403,
        ),
    ],
    "gitlab.close_issue": [Failure(_at(issue_iid=999), code="not_found", status=404)],
    "gitlab.delete_note": [
        Failure(_at(issue_iid=1, note_id=NOTE_ID), code="forbidden", status=403)
    ],
    "gitlab.delete_branch": [
        Failure(_at(branch="release"), code="protected_branch", status=400),
        Failure(_at(branch="main"), code="default_branch", status=400),
    ],
}
"""Calls GitLab turns down, each with its status and the connector's code for it."""

DEPENDENCIES: list[Dependency] = [
    Dependency("gitlab.create_issue", _at(title="New"), "gitlab.add_note", _note_on_new_issue),
    Dependency(
        "gitlab.create_branch",
        _at(branch="agent/base", ref="main"),
        "gitlab.create_branch",
        _branch_from_new_branch,
    ),
]


def _without_closed_new_issues(fingerprint: Any) -> Any:
    for project in fingerprint["projects"].values():
        project["issues"] = {
            iid: issue
            for iid, issue in project["issues"].items()
            if not (issue["origin"] == "api" and issue["state"] == "closed")
        }
        project["labels"] = {name: auto for name, auto in project["labels"].items() if not auto}
    return fingerprint


ISSUE_STAYS_CLOSED = Residue(
    reason="GitLab's API deletes an issue only for an administrator or the project's owner, so "
    "the undo closes it: the issue stays visible, closed, with GitLab's 'closed' system note; "
    "label names it introduced stay defined in the project",
    normalise=_without_closed_new_issues,
)
"""create_issue's residue: issues the API created that are now closed, and labels GitLab made."""

RESTORES_NOTHING: Mapping[str, str] = {
    "gitlab.create_issue": "its undo only closes the issue the call opened: it writes back no "
    "earlier value, so nothing someone changed since (a comment, an edit, a label) is overwritten",
}
"""The tools whose undo restores no earlier state (the concurrent-change declaration)."""


def concurrent_change(
    handle: Any, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange | None:
    """Change, through the fake's own state, what ``tool``'s undo would otherwise overwrite.

    For ``gitlab.add_note``: someone edits the note (``what``: "the note's body"); for
    ``gitlab.create_branch``: someone pushes to the branch ("the branch's head"). ``revert``
    puts back what the call produced. ``None`` for every other tool.
    """
    fake = _fake(handle)
    project = fake.project(args["project"])
    if tool == "gitlab.add_note":
        iid, note_id, body = args["issue_iid"], result["id"], result["body"]
        fake.edit_note(project.id, iid, note_id, body + "\n\n(edited by a maintainer)")
        return ConcurrentChange(
            "the note's body", lambda: fake.edit_note(project.id, iid, note_id, body)
        )
    if tool == "gitlab.create_branch":
        branch, sha = args["branch"], result["sha"]
        fake.push(project.id, branch, "someone else's work")

        def move_back() -> None:
            fake.add_branch(project.id, branch, sha)

        return ConcurrentChange("the branch's head", move_back)
    return None


LIVE = LiveScenario(
    name="issue-note-branches",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {LIVE_PROJECT_VARIABLE: PROJECT},
)
"""gitlab's live scenario (:mod:`reversi_connector_gitlab._live`): ``nox -s live -- gitlab`` runs it against
the vendor; against the fake it works in the seeded example."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The gitlab connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of GitLab's REST API v4, faults included",
        command_line=lambda server: (
            {
                "GITLAB_TOKEN": CERTIFICATION_TOKEN,
                "GITLAB_BASE_URL": _fake(server).base_url(server),
            },
            [],
        ),
        backend=gitlab_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={"gitlab.create_issue": ISSUE_STAYS_CLOSED},
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
        live=LIVE,
        concurrent_change=concurrent_change,
        restores_nothing=RESTORES_NOTHING,
    )
