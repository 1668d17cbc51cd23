"""A fake GitHub REST API to test against, and the connector's certification opt-in.

:class:`FakeGitHub` is a :class:`reversi_core.testing.VendorFake` that models the part of
the GitHub REST API the ``github`` connector uses, written from GitHub's documentation
(each route's docstring cites its page): issues, issue comments, issue labels and git
references, with GitHub's status codes and error bodies (``{"message",
"documentation_url", "status"}``, ``"errors"`` details on a 422), the rate-limit
headers on every answer, and the token check. Serve it with
:class:`reversi_core.testing.FakeServer` and point the connector at it::

    from reversi_core.testing import FakeServer
    from reversi_connector_github import GithubConnector
    from reversi_connector_github.testing import FakeGitHub

    fake = FakeGitHub(token="ghp_test_token_0001")
    fake.add_repo("octo", "hello")
    with FakeServer(fake) as server:
        github = GithubConnector("ghp_test_token_0001", base_url=fake.base_url(server))
        made = await github.call("github.create_issue", {"owner": "octo", "repo": "hello",
                                                         "title": "Hi"})
        assert fake.repo("octo", "hello").issues[made["number"]].state == "open"

``FakeGitHub(prefix="/api/v3")`` serves the same routes under a GitHub Enterprise
Server style prefix. Faults (a dropped connection, a 5xx, a 401, a 403, a reply that
never comes) are armed on the server: ``server.faults.add(Fault.status(503), ...)``
(see docs/fakes.md).

What the fake does not model: pagination other than of an issue's labels, pull requests,
permissions finer than "read-only token" versus "read-write token", locked issues,
repository visibility (every repository behaves as private: no anonymous access),
conditional requests and ETags, and the web side of GitHub (notifications, the
timeline). Message texts are GitHub's where its documentation or its API shows them;
the 422 for deleting the default branch carries a message of our own, since the
documentation names the case but not the text.

:func:`certification_fixture` opts the connector into the repository's certification
suite (docs/certification-guide.md): every check applies to github. For the
concurrent-change check, :func:`someone_changes` is the maintainer who edits the agent's
comment or pushes to its branch through GitHub itself (the fake's state), and
:data:`RESTORES_NOTHING` says why the undo of create_issue and of add_labels can lose
nobody's later change. It also declares :data:`LIVE`, the live scenario
``nox -s live -- github`` runs against GitHub itself.
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

from ._fake import (
    AUTO_LABEL_COLOR,
    COMMENT_IDS_START,
    DEFAULT_LABELS,
    DOCS,
    SUPPORTED_API_VERSIONS,
    FakeComment,
    FakeGitHub,
    FakeIssue,
    FakeLabel,
    FakeRepo,
    commit_sha,
)
from ._live import LIVE_REPO_VARIABLE, LIVE_SUMMARY, LIVE_VARIABLES, live_scenario
from .connector import GithubConnector, body_digest

__all__ = [
    "AUTO_LABEL_COLOR",
    "CERTIFICATION_TOKEN",
    "DEFAULT_LABELS",
    "DEPENDENCIES",
    "DOCS",
    "EXAMPLES",
    "FAILURES",
    "ISSUE_STAYS_CLOSED",
    "LIMIT",
    "LIVE",
    "NEW_LABELS_STAY_DEFINED",
    "NO_ISSUES_REPO",
    "OWNER",
    "PATIENCE",
    "REPO",
    "RESTORES_NOTHING",
    "SEEDED_COMMENT_ID",
    "SHA_DEV",
    "SHA_FEATURE",
    "SUPPORTED_API_VERSIONS",
    "FakeComment",
    "FakeGitHub",
    "FakeIssue",
    "FakeLabel",
    "FakeRepo",
    "certification_fixture",
    "commit_sha",
    "github_backend",
    "seed_example",
    "someone_changes",
]

# -- certification -----------------------------------------------------------------------

CERTIFICATION_TOKEN = "ghp_reversiCertification0000000000000001"  # noqa: S105 - made up
"""The token the certification fixture gives the fake and the connector."""

OWNER = "octo"
"""The owner of the example repositories :func:`seed_example` makes."""
REPO = "hello"
"""The example repository with issues, comments, labels and branches."""
NO_ISSUES_REPO = "no-issues"
"""An example repository whose issues are disabled (410 for every issue route)."""
SEEDED_COMMENT_ID = COMMENT_IDS_START
"""The id of the comment :func:`seed_example` puts on issue #1."""
SHA_DEV = commit_sha(OWNER, REPO, "dev")
"""The commit branch ``dev`` points at after :func:`seed_example`."""
SHA_FEATURE = commit_sha(OWNER, REPO, "feature-commit")
"""A commit :func:`seed_example` records that no branch points at."""
SEEDED_COMMENT_BODY = "Seen it too."
"""The body of the comment :func:`seed_example` puts on issue #1."""
LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""


def seed_example(fake: FakeGitHub) -> None:
    """Put the example state in ``fake``.

    ``octo/hello`` (default labels, branches ``main`` and ``dev``, a further known
    commit :data:`SHA_FEATURE`) with issue #1 "Crash on start" (open, ``bug``, one
    comment, id :data:`SEEDED_COMMENT_ID`) and #2 "Old idea" (closed); ``octo/no-issues``,
    whose issues are disabled.
    """
    fake.add_repo(OWNER, REPO)
    fake.add_branch(OWNER, REPO, "dev", SHA_DEV)
    fake.add_commit(OWNER, REPO, "feature-commit")
    first = fake.add_issue(OWNER, REPO, "Crash on start", body="It crashes.", labels=["bug"])
    fake.add_comment(OWNER, REPO, first.number, SEEDED_COMMENT_BODY)
    fake.add_issue(OWNER, REPO, "Old idea", state="closed")
    fake.add_repo(OWNER, NO_ISSUES_REPO, has_issues=False)


@contextmanager
def github_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeGitHub` (token :data:`CERTIFICATION_TOKEN`) served on a fresh port."""
    with FakeServer(FakeGitHub(token=CERTIFICATION_TOKEN)) as server:
        yield server


def _fake(server: FakeServer) -> FakeGitHub:
    app = server.app
    if not isinstance(app, FakeGitHub):
        raise TypeError(f"the server does not serve a FakeGitHub but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> GithubConnector:
    return GithubConnector(
        CERTIFICATION_TOKEN,
        base_url=_fake(server).base_url(server),
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


def _at(**more: Any) -> dict[str, Any]:
    return {"owner": OWNER, "repo": REPO, **more}


async def _close_new_issue(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("github.create_issue", _at(title="To be closed"))
    return _at(issue_number=made["number"])


async def _delete_new_comment(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("github.add_comment", _at(issue_number=1, body="To be deleted"))
    return _at(comment_id=made["id"], body_sha256=made["body_sha256"])


async def _remove_added_labels(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("github.add_labels", _at(issue_number=1, labels=["bug", "enhancement"]))
    return _at(issue_number=1, labels=made["added"])


async def _delete_new_branch(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("github.create_branch", _at(branch="agent/tmp", sha=SHA_FEATURE))
    return _at(branch="agent/tmp", sha=made["sha"])


async def _on_new_issue_comment(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    number = ctx.results["github.create_issue"]["number"]
    return _at(issue_number=number, body="Working on it.")


async def _on_new_issue_labels(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    number = ctx.results["github.create_issue"]["number"]
    return _at(issue_number=number, labels=["enhancement", "needs-triage"])


EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "github.get_issue": [_at(issue_number=1), _at(issue_number=2)],
    "github.create_issue": [
        _at(title="Found by the agent", body="Steps to reproduce..."),
        _at(title="Labelled", labels=["bug", "needs-triage"]),
    ],
    "github.add_comment": [
        _at(issue_number=1, body="Looking into it."),
        _at(issue_number=2, body="Reopening soon?"),
    ],
    "github.add_labels": [
        _at(issue_number=1, labels=["documentation", "needs-triage"]),
        _at(issue_number=1, labels=["bug", "Enhancement"]),
    ],
    "github.create_branch": [
        _at(branch="agent/fix", sha=SHA_FEATURE),
        _at(branch="agent/from-dev", from_branch="dev"),
    ],
    "github.close_issue": [_at(issue_number=1), _close_new_issue],
    "github.delete_comment": [
        _at(comment_id=SEEDED_COMMENT_ID, body_sha256=body_digest(SEEDED_COMMENT_BODY)),
        _delete_new_comment,
        _at(comment_id=SEEDED_COMMENT_ID),
        _at(comment_id=999_999),
    ],
    "github.remove_labels": [
        _at(issue_number=1, labels=["bug"]),
        _remove_added_labels,
        _at(issue_number=1, labels=["not-on-the-issue"]),
    ],
    "github.delete_branch": [
        _at(branch="dev", sha=SHA_DEV),
        _delete_new_branch,
        _at(branch="dev"),
        _at(branch="never-existed"),
    ],
}

FAILURES: Mapping[str, list[Failure]] = {
    "github.get_issue": [
        Failure(_at(issue_number=999), code="not_found", status=404),
        Failure(
            {"owner": OWNER, "repo": "missing", "issue_number": 1}, code="not_found", status=404
        ),
        Failure(
            {"owner": OWNER, "repo": NO_ISSUES_REPO, "issue_number": 1},
            code="issues_disabled",
            status=410,
        ),
    ],
    "github.create_issue": [
        Failure({"owner": OWNER, "repo": "missing", "title": "x"}, code="not_found", status=404),
        Failure(
            {"owner": OWNER, "repo": NO_ISSUES_REPO, "title": "x"},
            code="issues_disabled",
            status=410,
        ),
        Failure(_at(title="   "), code="validation_failed", status=422),
    ],
    "github.add_comment": [Failure(_at(issue_number=999, body="x"), code="not_found", status=404)],
    "github.add_labels": [
        Failure(_at(issue_number=999, labels=["bug"]), code="not_found", status=404)
    ],
    "github.create_branch": [
        Failure(_at(branch="dev", sha=SHA_FEATURE), code="reference_exists", status=422),
        Failure(_at(branch="agent/x", sha="0" * 40), code="object_not_found", status=422),
        Failure(_at(branch="agent/x", from_branch="no-such-branch"), code="not_found", status=404),
    ],
    "github.close_issue": [Failure(_at(issue_number=999), code="not_found", status=404)],
    "github.delete_branch": [Failure(_at(branch="main"), code="validation_failed", status=422)],
}
"""Calls GitHub turns down, each with the status and code the connector must answer with:
404 ``not_found`` for a missing issue, repository or branch, 410 ``issues_disabled``,
422 ``reference_exists`` for a branch that exists, 422 ``object_not_found`` for an
unknown commit, 422 ``validation_failed`` for a blank title or the default branch."""

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "github.create_issue", _at(title="New"), "github.add_comment", _on_new_issue_comment
    ),
    Dependency("github.create_issue", _at(title="New"), "github.add_labels", _on_new_issue_labels),
]


def _without_auto_labels(fingerprint: Any) -> Any:
    for repo in fingerprint["repos"].values():
        repo["labels"] = {k: v for k, v in repo["labels"].items() if not v["auto_created"]}
    return fingerprint


def _without_closed_new_issues(fingerprint: Any) -> Any:
    for repo in fingerprint["repos"].values():
        repo["issues"] = {
            number: issue
            for number, issue in repo["issues"].items()
            if not (
                issue["origin"] == "api" and issue["state"] == "closed" and not issue["comments"]
            )
        }
    return _without_auto_labels(fingerprint)


ISSUE_STAYS_CLOSED = Residue(
    reason="GitHub's REST API cannot delete an issue, so the undo closes it (state_reason "
    "not_planned): the issue and its number stay visible, closed; label names it introduced "
    "stay defined in the repository",
    normalise=_without_closed_new_issues,
)
"""create_issue's residue: issues the API created that are now closed and bare are ignored."""

def someone_changes(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange:
    """After the agent's call, a maintainer changes what it made, on GitHub itself.

    - ``github.add_comment``: edits the comment (``the comment's body``);
    - ``github.create_branch``: pushes, so the branch points at another commit (``now
      points at commit``).

    Raises ``ValueError`` for any other tool.
    """
    fake = _fake(server)
    repo = fake.repo(str(args["owner"]), str(args["repo"]))
    if tool == "github.add_comment":
        comment = repo.comment(int(result["id"]))
        assert comment is not None
        written = comment.body
        with fake.lock:
            comment.body = written + "\n\n(edited by a maintainer)"

        def unedit() -> None:
            with fake.lock:
                comment.body = written

        return ConcurrentChange(what="the comment's body", revert=unedit)
    if tool == "github.create_branch":
        branch, made = str(result["branch"]), str(result["sha"])
        pushed = fake.add_commit(repo.owner, repo.name, f"a push onto {branch}")
        with fake.lock:
            repo.branches[branch] = pushed

        def unpush() -> None:
            with fake.lock:
                repo.branches[branch] = made

        return ConcurrentChange(what="now points at commit", revert=unpush)
    raise ValueError(f"no concurrent change is defined for {tool}")


RESTORES_NOTHING: Mapping[str, str] = {
    "github.create_issue": "the undo closes the issue the call opened and changes nothing "
    "else: a title, body, label or comment someone added since stays as they left it, and an "
    "issue someone closed already is left closed, with their reason (github.close_issue reads "
    "it first)",
    "github.add_labels": "a label is on an issue or not, and the undo takes off only the "
    "labels this call added; one someone took off since is skipped, not put back. A label "
    "someone took off and then put back by hand looks exactly like the one the call added "
    "(only the issue's timeline tells them apart), so the undo removes it: see "
    "docs/connectors/github.md",
}
"""The github tools whose compensation restores no prior state a later change could be lost from."""


NEW_LABELS_STAY_DEFINED = Residue(
    reason="a label name the repository did not know is created in the repository by GitHub "
    "when it is added to an issue; the undo takes it off the issue but leaves it defined "
    "in the repository, where others may already use it",
    normalise=_without_auto_labels,
)
"""add_labels' residue: labels GitHub created for unknown names are ignored."""


LIVE = LiveScenario(
    name="issue-comment-label-branch",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {LIVE_REPO_VARIABLE: f"{OWNER}/{REPO}"},
)
"""github's live scenario (:mod:`reversi_connector_github._live`): ``nox -s live -- github``
runs it against GitHub; against the fake it works in :data:`OWNER`/:data:`REPO`."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The github connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of the GitHub REST API, faults included",
        command_line=lambda server: (
            {"GITHUB_TOKEN": CERTIFICATION_TOKEN, "GITHUB_BASE_URL": _fake(server).base_url(server)},
            [],
        ),
        backend=github_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={
            "github.create_issue": ISSUE_STAYS_CLOSED,
            "github.add_labels": NEW_LABELS_STAY_DEFINED,
        },
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
        concurrent_change=someone_changes,
        restores_nothing=RESTORES_NOTHING,
        live=LIVE,
    )
