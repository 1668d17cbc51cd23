"""The second oracle: every request the connector sends, and every answer of the fake, against Jira's OpenAPI.

The connector is driven against the fake through every example and refusal of the
certification fixture, the dependency pairs, and each tool refused for a wrong token, a
read-only account and an exhausted rate limit. Each exchange the fake server recorded
is checked with ``_jira_oracle.problems`` (openapi-core over
``vendor/jira/openapi-v3-trimmed.json``). A fake changed on purpose to drift from the
description, and a request the description does not allow, fail it. See
docs/connectors/jira.md ("The second oracle").
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reversi_connector_jira import JiraConnector
from reversi_connector_jira.testing import DEPENDENCIES, EXAMPLES, FAILURES, FakeJira, seed_example
from reversi_core.errors import ReversiError
from reversi_core.testing import ExampleCalls, FakeRequest, FakeResponse, FakeServer

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _jira_oracle import problems  # noqa: E402 - the tests folder is on sys.path only now

pytestmark = pytest.mark.anyio

EMAIL, TOKEN = "oracle@reversi.example", "ATATT3xOracleToken_0123456789"
READER = ("reader@reversi.example", "ATATT3xOracleReader_0123456789")


@pytest.fixture
def served() -> Iterator[tuple[FakeJira, FakeServer]]:
    fake = FakeJira(email=EMAIL, api_token=TOKEN, read_only=[READER])
    seed_example(fake)
    with FakeServer(fake) as server:
        yield fake, server


def problems_of(server: FakeServer) -> list[str]:
    found = []
    for exchange in server.exchanges:
        request, answer = exchange.request, exchange.response
        checked = answer is not None and request.fault is None
        found += problems(
            request.method,
            request.target,
            dict(request.headers),
            request.body,
            answer.status if checked and answer is not None else None,
            answer.json if checked and answer is not None else None,
        )
    return found


async def _drive(server: FakeServer, email: str, token: str, calls: list[tuple[str, Any]]) -> None:
    jira = JiraConnector(server.url, email, token)
    examples = ExampleCalls(server, jira)
    for tool, example in calls:
        with contextlib.suppress(ReversiError):  # refusals are checked on the wire too
            await jira.call(tool, await examples.prepare(example))
    await jira.aclose()


async def test_every_request_and_answer_fits_jiras_openapi(
    served: tuple[FakeJira, FakeServer],
) -> None:
    fake, server = served
    calls: list[tuple[str, Any]] = [(t, e) for t, es in EXAMPLES.items() for e in es]
    calls += [(t, f.args) for t, fs in FAILURES.items() for f in fs]
    calls += [(d.earlier, d.earlier_args) for d in DEPENDENCIES]
    await _drive(server, EMAIL, TOKEN, calls)
    main = [(tool, examples[0]) for tool, examples in EXAMPLES.items()]
    await _drive(server, *READER, main)
    await _drive(server, EMAIL, "ATATT3xWrongToken_000000000000", main[:2])
    fake.exhaust_rate_limit()
    await _drive(server, EMAIL, TOKEN, main[:2])
    routes = {
        (
            e.request.method,
            e.request.path.split("/")[-1]
            if e.request.path.endswith(("comment", "transitions"))
            else "x",
        )
        for e in server.exchanges
    }
    assert {("POST", "comment"), ("GET", "transitions"), ("POST", "transitions")} <= routes
    statuses = {e.response.status for e in server.exchanges if e.response is not None}
    assert {200, 201, 204, 400, 401, 403, 404, 429} <= statuses
    assert len(server.exchanges) > 60
    assert problems_of(server) == []


def _exchange(method: str, target: str, body: Any, status: int, answer: Any) -> list[str]:
    raw = json.dumps(body).encode() if body is not None else b""
    headers = (
        {"Authorization": "Basic eA==", "Content-Type": "application/json"}
        if raw
        else {"Authorization": "Basic eA=="}
    )
    return problems(method, target, headers, raw, status, answer)


def test_the_oracle_accepts_what_jira_documents() -> None:
    made = {
        "id": "10000",
        "key": "ED-24",
        "self": "https://your-domain.atlassian.net/rest/api/3/issue/10000",
    }
    body = {"fields": {"project": {"key": "ED"}, "summary": "s", "issuetype": {"name": "Task"}}}
    assert _exchange("POST", "/rest/api/3/issue", body, 201, made) == []
    assert (
        _exchange(
            "POST", "/rest/api/3/issue/ED-24/transitions", {"transition": {"id": "11"}}, 204, None
        )
        == []
    )


@pytest.mark.parametrize(
    ("method", "target", "body", "status", "answer", "words"),
    [
        # an answer with a field CreatedIssue does not have
        (
            "POST",
            "/rest/api/3/issue",
            {"fields": {}},
            201,
            {"id": "1", "key": "A-1", "url": "x"},
            "url",
        ),
        # an error body that is not an ErrorCollection
        ("GET", "/rest/api/3/issue/A-1", None, 401, {"message": "no"}, "ErrorCollection"),
        # a status the operation does not declare
        ("DELETE", "/rest/api/3/issue/A-1", None, 200, None, "200"),
        # transitions that are not a list
        (
            "GET",
            "/rest/api/3/issue/A-1/transitions",
            None,
            200,
            {"transitions": {"id": "1"}},
            "array",
        ),
        # a timestamp that is not one
        (
            "GET",
            "/rest/api/3/issue/A-1/comment/1",
            None,
            200,
            {"id": "1", "created": "yesterday"},
            "date-time",
        ),
        # one in digits of another script (ARABIC-INDIC)
        (
            "GET",
            "/rest/api/3/issue/A-1/comment/1",
            None,
            200,
            {"id": "1", "created": "\u0662\u0660\u0662\u0661-01-17T12:34:00.000+0000"},
            "date-time",
        ),
        # a query parameter value the description does not allow
        ("DELETE", "/rest/api/3/issue/A-1?deleteSubtasks=maybe", None, 204, None, "deleteSubtasks"),
    ],
)
def test_a_drifted_exchange_fails(
    method: str, target: str, body: Any, status: int, answer: Any, words: str
) -> None:
    found = _exchange(method, target, body, status, answer)
    assert any(words in p for p in found), found


class DriftedJira(FakeJira):
    """A fake whose created issue carries a field Jira's CreatedIssue does not have."""

    def create_issue(self, request: FakeRequest) -> FakeResponse:
        answer = super().create_issue(request)
        return FakeResponse(answer.status, json={**answer.json, "created": "now"})


async def test_the_fake_itself_drifted_is_caught_on_the_wire() -> None:
    """The drift passes the connector (it reads id and key), not the oracle."""
    fake = DriftedJira(email=EMAIL, api_token=TOKEN)
    seed_example(fake)
    with FakeServer(fake) as server:
        jira = JiraConnector(server.url, EMAIL, TOKEN)
        made = await jira.call("jira.create_issue", {"project": "PROJ", "summary": "S"})
        await jira.aclose()
        found = problems_of(server)
    assert made["key"].startswith("PROJ-")
    assert any("created" in p for p in found), found
