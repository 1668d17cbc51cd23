"""The second oracle: every document the connector sends, and every answer of the fake, against Linear's schema.

The connector is driven against the fake through every example and refusal of the
certification fixture, the dependency pairs, and refusals for a wrong key, a read-only
key, a key sent as a Bearer token and an exhausted rate limit. Each exchange the fake
server recorded is checked with ``_linear_oracle``: the request's document validates
against ``vendor/linear/schema.graphql`` (with its variables), the answer fits the
types of its selection. A document naming a field the schema lacks, and answers changed
on purpose, fail it. See docs/connectors/linear.md ("The second oracle").
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reversi_connector_linear import LinearConnector
from reversi_connector_linear import _documents as documents
from reversi_connector_linear.testing import (
    DEPENDENCIES,
    EXAMPLES,
    FAILURES,
    SEEDED_ISSUE,
    TEAM_ID,
    FakeLinear,
    seed_example,
)
from reversi_core.errors import ReversiError
from reversi_core.testing import ExampleCalls, FakeServer

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _linear_oracle import answer_problems, document_problems  # noqa: E402 - the tests folder is on sys.path only now

pytestmark = pytest.mark.anyio

KEY = "lin_api_oracleKey_0123456789abcdefXYZ"
READ_ONLY = "lin_api_oracleReadOnly_0123456789abcdef"


@pytest.fixture
def served() -> Iterator[tuple[FakeLinear, FakeServer]]:
    fake = FakeLinear(api_key=KEY, read_only_keys=[READ_ONLY])
    seed_example(fake)
    with FakeServer(fake) as server:
        yield fake, server


def problems_of(server: FakeServer) -> list[str]:
    """Every problem the oracle finds in the exchanges the server recorded."""
    found = []
    for exchange in server.exchanges:
        request, answer = exchange.request, exchange.response
        body = request.json if isinstance(request.json, dict) else {}
        document, variables = str(body.get("query")), body.get("variables")
        name = document.split("(", 1)[0].strip()
        found += [f"{name} sent: {p}" for p in document_problems(document)]
        if answer is not None and request.fault is None:
            found += [
                f"{name} answered: {p}" for p in answer_problems(document, variables, answer.json)
            ]
    return found


async def _drive(server: FakeServer, key: str, calls: list[tuple[str, Any]]) -> int:
    linear = LinearConnector(key, base_url=server.url)
    examples = ExampleCalls(server, linear)
    made = 0
    for tool, example in calls:
        with contextlib.suppress(ReversiError):  # refusals are checked on the wire too
            await linear.call(tool, await examples.prepare(example))
        made += 1
    await linear.aclose()
    return made


async def test_every_document_and_answer_fits_linears_schema(
    served: tuple[FakeLinear, FakeServer],
) -> None:
    fake, server = served
    calls: list[tuple[str, Any]] = [(t, e) for t, es in EXAMPLES.items() for e in es]
    calls += [(t, f.args) for t, fs in FAILURES.items() for f in fs]
    for pair in DEPENDENCIES:
        calls += [(pair.earlier, pair.earlier_args)]
    await _drive(server, KEY, calls)
    main = [(tool, examples[0]) for tool, examples in EXAMPLES.items()]
    await _drive(server, READ_ONLY, main)  # mutations refused for the scope
    await _drive(server, "lin_api_notKnown_000000000000000000", main[:1])
    await _drive(server, f"Bearer {KEY}", main[:1])
    fake.exhaust_rate_limit()
    await _drive(server, KEY, main)
    assert len(server.exchanges) >= 30
    roots = {str((e.request.json or {}).get("query")).split("(", 1)[0] for e in server.exchanges}
    assert roots == {
        "query GetIssue",
        "mutation CreateIssue",
        "mutation AddComment",
        "mutation ArchiveIssue",
        "mutation DeleteComment",
    }
    statuses = {e.response.status for e in server.exchanges if e.response is not None}
    assert statuses == {200, 400}  # answers and refusals of both kinds were checked
    assert problems_of(server) == []


@pytest.mark.parametrize(
    "document",
    [
        documents.GET_ISSUE,
        documents.CREATE_ISSUE,
        documents.ADD_COMMENT,
        documents.ARCHIVE_ISSUE,
        documents.DELETE_COMMENT,
    ],
)
def test_the_connectors_documents_are_valid(document: str) -> None:
    assert document_problems(document) == []


async def test_a_field_missing_from_the_schema_fails_even_when_the_fake_serves_it(
    served: tuple[FakeLinear, FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, server = served
    drifted = documents.GET_ISSUE.replace("    identifier\n", "    identifier\n    estimateLabel\n")
    monkeypatch.setattr(documents, "GET_ISSUE", drifted)
    for issue in fake.issues.values():
        issue["estimateLabel"] = "M"  # a fake written from a guess serves it happily
    linear = LinearConnector(KEY, base_url=server.url)
    assert (await linear.call("linear.get_issue", {"id": SEEDED_ISSUE}))[
        "identifier"
    ] == SEEDED_ISSUE
    await linear.aclose()
    found = problems_of(server)
    assert any("Cannot query field 'estimateLabel' on type 'Issue'" in p for p in found), found


def test_a_wrong_input_field_or_variable_type_fails() -> None:
    assert document_problems(documents.CREATE_ISSUE.replace("IssueCreateInput!", "IssueInput!"))
    bad = documents.ARCHIVE_ISSUE.replace("issueArchive(id: $id)", "issueArchive(issueId: $id)")
    assert any("issueId" in p for p in document_problems(bad))
    issue = {"id": "x", "identifier": "E-1", "title": "t", "url": "u"}
    answer = {"data": {"issueCreate": {"success": True, "issue": issue}}}
    assert (
        answer_problems(
            documents.CREATE_ISSUE, {"input": {"teamId": TEAM_ID, "title": "t"}}, answer
        )
        == []
    )
    wrong = answer_problems(
        documents.CREATE_ISSUE, {"input": {"teamId": TEAM_ID, "name": "t"}}, answer
    )
    assert any("name" in p for p in wrong), wrong


ISSUE = {
    "id": "9a1c0000-0000-4000-8000-000000000001",
    "identifier": "ENG-1",
    "title": "t",
    "description": None,
    "url": "https://linear.app/x/issue/ENG-1/t",
    "priority": 0.0,
    "archivedAt": None,
    "createdAt": "2026-12-01T09:00:00.000Z",
    "updatedAt": "2026-12-01T09:00:00.000Z",
    "state": {"id": "s", "name": "Todo", "type": "unstarted"},
    "team": {"id": "t", "key": "ENG"},
}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"priority": "high"}, "Float cannot represent"),
        ({"identifier": None}, "Cannot return null for non-nullable field Issue.identifier"),
        ({"createdAt": "yesterday"}, "DateTime cannot represent"),
        (
            {"team": {"id": "t", "key": "ENG", "name": "Engineering"}},
            "not what the selection gives",
        ),
        ({"id": 7}, "not what the selection gives"),
    ],
)
def test_an_answer_drifted_from_the_schema_fails(change: dict[str, Any], words: str) -> None:
    good = {"data": {"issue": ISSUE}}
    assert answer_problems(documents.GET_ISSUE, {"id": "ENG-1"}, good) == []
    drifted = {"data": {"issue": {**ISSUE, **change}}}
    found = answer_problems(documents.GET_ISSUE, {"id": "ENG-1"}, drifted)
    assert any(words in p for p in found), found


@pytest.mark.parametrize(
    "answer",
    [
        {"errors": [{"msg": "no message"}], "data": None},
        {"errors": [], "data": None},
        {"errors": [{"message": "m", "code": "X"}], "data": None},
        {"error": "not the format"},
    ],
)
def test_an_error_answer_out_of_the_graphql_format_fails(answer: dict[str, Any]) -> None:
    assert answer_problems(documents.GET_ISSUE, {"id": "ENG-1"}, answer)


async def test_the_fake_itself_drifted_is_caught_on_the_wire(
    served: tuple[FakeLinear, FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fake that lost a non-null field passes the connector (it reads null), not the oracle."""
    fake, server = served
    for issue in fake.issues.values():
        issue["url"] = None
    linear = LinearConnector(KEY, base_url=server.url)
    assert (await linear.call("linear.get_issue", {"id": SEEDED_ISSUE}))["url"] is None
    await linear.aclose()
    found = problems_of(server)
    assert any("non-nullable field Issue.url" in p for p in found), found
