"""A fake Linear GraphQL API to test against, and the connector's certification opt-in.

:class:`FakeLinear` is a :class:`reversi_core.testing.VendorFake` that models the part of
Linear's GraphQL API the ``linear`` connector uses, written from Linear's developer
documentation (https://linear.app/developers/graphql, the rate-limiting page and the
schema's own descriptions): one ``POST /graphql`` route that runs ``issue(id:)``,
``issueCreate``, ``commentCreate``, ``issueArchive`` and ``commentDelete``, answering with
exactly the fields the document selects, Linear's error shape (``extensions.code``,
HTTP 200 or 400), "Entity not found" for what is not there, the rate-limit headers and
``RATELIMITED``, and the ``Authorization`` rules (a bare API key, or ``Bearer`` and an
OAuth token). The route declares which requests write: a mutation does, a query does
not (``FakeRequest.writes``), so faults armed with ``writes=True`` land on mutations.
Serve it with :class:`reversi_core.testing.FakeServer`::

    from reversi_core.testing import FakeServer
    from reversi_connector_linear import LinearConnector
    from reversi_connector_linear.testing import FakeLinear

    fake = FakeLinear(api_key="lin_api_test_0001")
    team = fake.add_team("ENG", "Engineering")
    with FakeServer(fake) as server:
        linear = LinearConnector("lin_api_test_0001", base_url=server.url)
        made = await linear.call("linear.create_issue", {"team_id": team["id"], "title": "Hi"})
        assert fake.find_issue(made["identifier"])["title"] == "Hi"

What the fake does not model: workflow states beyond each team's default, labels,
assignees, projects, cycles, pagination, complexity-based rate limits, webhooks and
notifications, trashing, and GraphQL beyond the documents the connector sends (one
operation, one root field, no aliases or fragments: see ``_operation``). Messages are
Linear's where its documentation or its API shows them; the validation messages for a
blank title or body are the fake's own.

:func:`certification_fixture` opts the connector into the repository's certification
suite (docs/certification-guide.md): every check applies to linear.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reversi_core.http import Timeouts
from reversi_core.testing import (
    CertificationFixture,
    Dependency,
    Example,
    ExampleContext,
    Failure,
    FakeServer,
    LiveScenario,
    Residue,
)

from ._fake import ERROR_TYPES, FakeLinear, GraphQLError, is_mutation
from ._live import LIVE_SUMMARY, LIVE_VARIABLES, live_scenario
from .connector import LinearConnector

__all__ = [
    "CERTIFICATION_KEY",
    "DEPENDENCIES",
    "ERROR_CODES",
    "ERROR_TYPES",
    "EXAMPLES",
    "FAILURES",
    "ISSUE_STAYS_ARCHIVED",
    "LIMIT",
    "LIVE",
    "PATIENCE",
    "RESTORES_NOTHING",
    "SEEDED_COMMENT",
    "SEEDED_ISSUE",
    "TEAM_ID",
    "FakeLinear",
    "GraphQLError",
    "certification_fixture",
    "concurrent_change",
    "is_mutation",
    "linear_backend",
    "seed_example",
]

CERTIFICATION_KEY = "lin_api_reversiCertification00000000000001"
"""The personal API key the certification fixture gives the fake and the connector."""

TEAM_ID = "5e1c2b9a-0000-4000-8000-00000000e001"
"""The id of the team "ENG" that :func:`seed_example` makes."""

SEEDED_ISSUE = "ENG-1"
"""The identifier of the issue :func:`seed_example` puts in the team."""

SEEDED_COMMENT = "5e1c2b9a-0000-4000-8000-00000000c001"
"""The id of the comment :func:`seed_example` puts on :data:`SEEDED_ISSUE`."""

MISSING = "5e1c2b9a-0000-4000-8000-0000000dead0"
"""An id in Linear's format that nothing in the example workspace has."""

LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""

ERROR_CODES: Mapping[int, set[str]] = {401: {"AUTHENTICATION_ERROR"}, 403: {"FORBIDDEN"}}
"""Linear's codes for the statuses the certification checks inject: Linear answers a
refused key (401) and a missing scope (403) with HTTP 400 and these codes."""


def seed_example(fake: FakeLinear) -> None:
    """Put the example workspace in ``fake``: team "ENG" (id :data:`TEAM_ID`) with issue
    ENG-1 "Crash on start" carrying one comment (id :data:`SEEDED_COMMENT`)."""
    fake.add_team("ENG", "Engineering", team_id=TEAM_ID)
    issue = fake.add_issue(TEAM_ID, "Crash on start", description="It crashes.\n\nEvery time.")
    comment = fake.add_comment(issue["id"], "Seen it too.")
    with fake.lock:
        fake.comments[SEEDED_COMMENT] = {**fake.comments.pop(comment["id"]), "id": SEEDED_COMMENT}


@contextmanager
def linear_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeLinear` (key :data:`CERTIFICATION_KEY`) served on a fresh port."""
    with FakeServer(FakeLinear(api_key=CERTIFICATION_KEY)) as server:
        yield server


def _fake(server: FakeServer) -> FakeLinear:
    app = server.app
    if not isinstance(app, FakeLinear):
        raise TypeError(f"the server does not serve a FakeLinear but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> LinearConnector:
    return LinearConnector(
        CERTIFICATION_KEY,
        base_url=server.url,
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


async def _archive_new_issue(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("linear.create_issue", {"team_id": TEAM_ID, "title": "To archive"})
    return {"id": made["id"]}


async def _delete_new_comment(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("linear.add_comment", {"issue_id": SEEDED_ISSUE, "body": "To delete"})
    return {"id": made["id"]}


async def _on_new_issue_by_id(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return {"issue_id": ctx.results["linear.create_issue"]["id"], "body": "Working on it."}


async def _on_new_issue_by_identifier(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return {"issue_id": ctx.results["linear.create_issue"]["identifier"], "body": "On it."}


EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "linear.get_issue": [{"id": SEEDED_ISSUE}],
    "linear.create_issue": [
        {"team_id": TEAM_ID, "title": "Found by the agent", "description": "Steps:\n\n1. run"},
        {"team_id": TEAM_ID, "title": "Urgent", "priority": 1},
    ],
    "linear.add_comment": [
        {"issue_id": SEEDED_ISSUE, "body": "Looking into it."},
        {"issue_id": SEEDED_ISSUE, "body": "Odd: 100% + /path?x=1#frag ünïcode"},
    ],
    "linear.archive_issue": [{"id": SEEDED_ISSUE}, _archive_new_issue, {"id": MISSING}],
    "linear.delete_comment": [{"id": SEEDED_COMMENT}, _delete_new_comment, {"id": MISSING}],
}

FAILURES: Mapping[str, list[Failure]] = {
    "linear.get_issue": [
        Failure({"id": "ENG-999"}, code="entity_not_found"),
        Failure({"id": MISSING}, code="entity_not_found"),
    ],
    "linear.create_issue": [
        Failure({"team_id": MISSING, "title": "x"}, code="entity_not_found"),
        Failure({"team_id": TEAM_ID, "title": "   "}, code="INVALID_INPUT"),
    ],
    "linear.add_comment": [
        Failure({"issue_id": "ENG-999", "body": "x"}, code="entity_not_found"),
        Failure({"issue_id": SEEDED_ISSUE, "body": "  "}, code="INVALID_INPUT"),
    ],
}
"""Calls Linear turns down, with the code the connector must answer: ``entity_not_found``
for a missing issue or team (HTTP 200, errors inside), ``INVALID_INPUT`` for a blank
title or comment."""

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "linear.create_issue",
        {"team_id": TEAM_ID, "title": "New"},
        "linear.add_comment",
        _on_new_issue_by_id,
    ),
    Dependency(
        "linear.create_issue",
        {"team_id": TEAM_ID, "title": "New"},
        "linear.add_comment",
        _on_new_issue_by_identifier,
    ),
]


def _without_archived_new_issues(fingerprint: Any) -> Any:
    fingerprint["issues"] = {
        ident: issue
        for ident, issue in fingerprint["issues"].items()
        if not (issue["origin"] == "api" and issue["archivedAt"] is not None)
    }
    for team in fingerprint["teams"].values():
        team.pop("next_number", None)  # an identifier number, once used, is not given again
    return fingerprint


ISSUE_STAYS_ARCHIVED = Residue(
    reason="Linear's undo of a created issue archives it: the issue still exists, hidden from "
    "boards and restorable in Linear, its identifier number stays used, and the notifications "
    "its creation sent are not recalled",
    normalise=_without_archived_new_issues,
)
"""create_issue's residue: issues the API created that are now archived are ignored."""

RESTORES_NOTHING: Mapping[str, str] = {
    "linear.create_issue": "its compensation archives the issue the call created; no earlier "
    "state of anything is put back, so nobody's later change can be overwritten",
    "linear.add_comment": "its compensation deletes the comment the call created; no earlier "
    "state of anything is put back, so nobody's later change can be overwritten",
}
"""Why no linear compensation is subject to the concurrent-change rule (none restores a
prior state; see docs/connectors/linear.md)."""


def concurrent_change(server: FakeServer, tool: str, args: Any, result: Any) -> None:
    """No linear compensation restores a prior state (:data:`RESTORES_NOTHING`): nothing to race."""
    return None


LIVE = LiveScenario(
    name="issue-comment",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {"REVERSI_LIVE_LINEAR_TEAM": TEAM_ID},
)
"""The live scenario of ``linear`` (``nox -s live -- linear``; ``reversi_connector_linear._live``)."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The linear connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of Linear's GraphQL API, faults included",
        command_line=lambda server: (
            {"LINEAR_API_KEY": CERTIFICATION_KEY, "LINEAR_BASE_URL": server.url},
            [],
        ),
        backend=linear_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={"linear.create_issue": ISSUE_STAYS_ARCHIVED},
        credential=CERTIFICATION_KEY,
        call_timeout=LIMIT,
        error_codes=ERROR_CODES,
        live=LIVE,
        concurrent_change=concurrent_change,
        restores_nothing=RESTORES_NOTHING,
    )
