"""Each linear tool against the fake: what it sends, what it does, what it refuses, how its undo behaves."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from reversi_connector_linear import LinearConnector
from reversi_connector_linear._operation import parse_operation
from reversi_connector_linear.testing import (
    EXAMPLES,
    RESTORES_NOTHING,
    SEEDED_COMMENT,
    SEEDED_ISSUE,
    TEAM_ID,
    FakeLinear,
    concurrent_change,
)
from reversi_core.errors import (
    ConfigurationError,
    EffectUncertainError,
    InvalidArgumentsError,
    ToolError,
)
from reversi_core.manifest import Effect
from reversi_core.testing import FakeServer, Fault

pytestmark = pytest.mark.anyio

MISSING = "5e1c2b9a-0000-4000-8000-00000000beef"


def sent(server: FakeServer) -> list[dict[str, Any]]:
    """The GraphQL bodies the server received, in order."""
    return [json.loads(r.body) for r in server.requests]


# -- the fake's GraphQL reader ---------------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [
        'query {\u00a0issue(id: "x") { id } }',  # NO-BREAK SPACE is not GraphQL whitespace
        'query {\u3000issue(id: "x") { id } }',  # nor IDEOGRAPHIC SPACE
        "query { issues(first: \u0665) { nodes { id } } }",  # ARABIC-INDIC DIGIT FIVE
    ],
)
def test_the_fakes_reader_takes_graphql_whitespace_and_digits_only(document: str) -> None:
    ascii_only = document.replace("\u00a0", " ").replace("\u3000", " ").replace("\u0665", "5")
    assert parse_operation(ascii_only).root.name in ("issue", "issues")
    with pytest.raises(ValueError, match="Unexpected character"):
        parse_operation(document)


# -- one endpoint, reads and writes told apart -------------------------------------------


async def test_every_call_is_a_post_to_graphql_and_only_mutations_write(
    linear: LinearConnector, fake: FakeLinear, server: FakeServer
) -> None:
    before = fake.snapshot()
    issue = await linear.call("linear.get_issue", {"id": SEEDED_ISSUE})
    assert fake.snapshot() == before
    assert issue["identifier"] == SEEDED_ISSUE
    assert issue["title"] == "Crash on start"
    assert issue["state"] == "Todo"
    assert issue["state_type"] == "unstarted"
    assert issue["team_key"] == "ENG"
    assert issue["description"] == "It crashes.\n\nEvery time."
    assert issue["archived_at"] is None
    made = await linear.call("linear.create_issue", {"team_id": TEAM_ID, "title": "New one"})
    assert made["identifier"] == "ENG-2"
    assert made["team_id"] == TEAM_ID
    assert [(r.method, r.path, r.writes) for r in server.requests] == [
        ("POST", "/graphql", False),
        ("POST", "/graphql", True),
    ]
    bodies = sent(server)
    assert bodies[0]["variables"] == {"id": SEEDED_ISSUE}
    assert bodies[1]["variables"] == {"input": {"teamId": TEAM_ID, "title": "New one"}}
    assert bodies[1]["query"].startswith("mutation CreateIssue(")


async def test_the_api_key_is_the_whole_authorization_value(
    linear: LinearConnector, server: FakeServer, api_key: str
) -> None:
    await linear.call("linear.get_issue", {"id": SEEDED_ISSUE})
    assert server.requests[-1].headers["authorization"] == api_key


async def test_an_oauth_token_is_given_and_sent_with_its_bearer_prefix() -> None:
    token = "lin_oauth_testToken_0123456789abcdef"
    fake = FakeLinear(api_key=f"Bearer {token}")
    team = fake.add_team("OPS", "Operations")
    with FakeServer(fake) as server:
        linear = LinearConnector.from_env(
            {"LINEAR_API_KEY": f"Bearer {token}", "LINEAR_BASE_URL": server.url}
        )
        made = await linear.call("linear.create_issue", {"team_id": team["id"], "title": "t"})
        await linear.aclose()
    assert made["identifier"] == "OPS-1"
    assert server.requests[-1].headers["authorization"] == f"Bearer {token}"


async def test_an_api_key_sent_as_a_bearer_token_gets_linears_hint(
    server: FakeServer, api_key: str
) -> None:
    wrong = LinearConnector(f"Bearer {api_key}", base_url=server.url)
    with pytest.raises(ToolError) as caught:
        await wrong.call("linear.get_issue", {"id": SEEDED_ISSUE})
    await wrong.aclose()
    assert (caught.value.status, caught.value.code) == (400, "AUTHENTICATION_ERROR")
    assert "Remove the Bearer prefix" in str(caught.value)
    assert api_key not in str(caught.value)


@pytest.mark.parametrize(
    "value", ["lin_api with space", "Bearer ", "Bearer two words", "Token abc"]
)
def test_a_key_with_whitespace_is_refused_without_showing_it(value: str) -> None:
    with pytest.raises(ConfigurationError, match="LINEAR_API_KEY") as caught:
        LinearConnector.from_env({"LINEAR_API_KEY": value})
    assert "with space" not in str(caught.value)
    assert "two words" not in str(caught.value)


# -- errors ------------------------------------------------------------------------------


async def test_graphql_errors_with_http_200_are_failures_with_linears_code(
    linear: LinearConnector,
) -> None:
    with pytest.raises(ToolError) as caught:
        await linear.call("linear.get_issue", {"id": "ENG-404"})
    assert (caught.value.status, caught.value.code) == (200, "entity_not_found")
    assert "Entity not found: Issue" in str(caught.value)
    assert "Could not find referenced Issue." in str(caught.value)
    with pytest.raises(ToolError) as blank:
        await linear.call("linear.create_issue", {"team_id": TEAM_ID, "title": "  "})
    assert (blank.value.status, blank.value.code) == (200, "INVALID_INPUT")


async def test_graphql_errors_with_http_400_are_failures_with_linears_code(
    server: FakeServer, read_only_key: str
) -> None:
    reader = LinearConnector(read_only_key, base_url=server.url)
    assert (await reader.call("linear.get_issue", {"id": SEEDED_ISSUE}))[
        "identifier"
    ] == SEEDED_ISSUE
    with pytest.raises(ToolError) as caught:
        await reader.call("linear.add_comment", {"issue_id": SEEDED_ISSUE, "body": "x"})
    await reader.aclose()
    assert (caught.value.status, caught.value.code) == (400, "FORBIDDEN")
    stranger = LinearConnector("lin_api_unknownKey_000000000000000", base_url=server.url)
    with pytest.raises(ToolError) as refused:
        await stranger.call("linear.get_issue", {"id": SEEDED_ISSUE})
    await stranger.aclose()
    assert (refused.value.status, refused.value.code) == (400, "AUTHENTICATION_ERROR")


async def test_ratelimited_is_a_rate_limit(linear: LinearConnector, fake: FakeLinear) -> None:
    fake.exhaust_rate_limit()
    with pytest.raises(ToolError) as caught:
        await linear.call("linear.get_issue", {"id": SEEDED_ISSUE})
    assert (caught.value.status, caught.value.code) == (400, "rate_limited")
    assert "retry after 60 s" in str(caught.value)


async def test_a_payload_without_success_is_refused_and_one_without_its_id_is_uncertain(
    linear: LinearConnector, server: FakeServer
) -> None:
    server.faults.add(
        Fault.status(200, json={"data": {"issueCreate": {"success": False, "issue": None}}})
    )
    with pytest.raises(ToolError) as refused:
        await linear.call("linear.create_issue", {"team_id": TEAM_ID, "title": "t"})
    assert refused.value.code == "unsuccessful"
    server.faults.add(
        Fault.status(200, json={"data": {"commentCreate": {"success": True, "comment": None}}})
    )
    with pytest.raises(EffectUncertainError, match=r"commentCreate\.comment\.id"):
        await linear.call("linear.add_comment", {"issue_id": SEEDED_ISSUE, "body": "b"})


NESTED_ERROR = {
    "message": "Cannot return null for non-nullable field Team.name",
    "path": ["issueCreate", "issue", "team", "name"],
    "extensions": {"code": "INTERNAL_SERVER_ERROR"},
}


async def test_errors_beside_data_are_a_partial_success_for_a_mutation_and_a_failure_for_a_query(
    linear: LinearConnector, fake: FakeLinear, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GraphQL's partial answer: a mutation in it ran, so it is recorded to be undone."""
    answer = fake.dispatch

    def with_errors(request: Any) -> Any:
        resp = answer(request)
        return dataclasses.replace(resp, json={**resp.json, "errors": [NESTED_ERROR]})

    monkeypatch.setattr(fake, "dispatch", with_errors)
    made = await linear.call("linear.create_issue", {"team_id": TEAM_ID, "title": "Half told"})
    assert fake.issues[made["id"]]["title"] == "Half told"  # it ran, and the result says which
    with pytest.raises(ToolError) as caught:
        await linear.call("linear.get_issue", {"id": SEEDED_ISSUE})
    assert (caught.value.status, caught.value.code) == (200, "INTERNAL_SERVER_ERROR")
    assert "answered in part" in str(caught.value)
    assert "Team.name" in str(caught.value)
    undone = await linear.call("linear.archive_issue", {"id": made["id"]})
    assert undone["archived"] is True
    assert fake.issues[made["id"]]["archivedAt"] is not None


async def test_errors_without_data_and_without_a_code_are_graphql_error(
    linear: LinearConnector, fake: FakeLinear, server: FakeServer
) -> None:
    before = fake.snapshot()
    server.faults.add(
        Fault.status(200, json={"data": None, "errors": [{"message": "Something went wrong"}]})
    )
    with pytest.raises(ToolError) as caught:
        await linear.call("linear.create_issue", {"team_id": TEAM_ID, "title": "t"})
    assert not isinstance(caught.value, EffectUncertainError)  # Linear said it did not
    assert (caught.value.status, caught.value.code) == (200, "graphql_error")
    assert "Something went wrong" in str(caught.value)
    assert fake.snapshot() == before


async def test_a_lost_answer_is_uncertain_for_a_mutation_and_a_plain_failure_for_a_query(
    linear: LinearConnector, server: FakeServer, fake: FakeLinear
) -> None:
    server.faults.add(Fault.drop_after_read(apply=True), writes=True, times=None)
    assert (await linear.call("linear.get_issue", {"id": SEEDED_ISSUE}))["title"]  # not a write
    with pytest.raises(EffectUncertainError):
        await linear.call("linear.create_issue", {"team_id": TEAM_ID, "title": "lost"})
    assert fake.find_issue("ENG-2") is not None  # applied, the answer lost
    server.faults.clear()
    server.faults.add(Fault.drop_after_read(), times=1)
    with pytest.raises(ToolError) as caught:
        await linear.call("linear.get_issue", {"id": SEEDED_ISSUE})
    assert caught.value.code == "connection_lost"


# -- the compensations ---------------------------------------------------------------------


async def test_entity_not_found_is_success_for_archive_and_delete(
    linear: LinearConnector, fake: FakeLinear, server: FakeServer
) -> None:
    assert await linear.call("linear.archive_issue", {"id": MISSING}) == {
        "id": MISSING,
        "archived": False,
    }
    assert await linear.call("linear.delete_comment", {"id": MISSING}) == {
        "id": MISSING,
        "deleted": False,
    }
    # the same answer with HTTP 400 counts too
    body = fake.error(400, "Entity not found: Comment", code="INVALID_INPUT").json
    server.faults.add(Fault.status(400, json=body))
    assert (await linear.call("linear.delete_comment", {"id": SEEDED_COMMENT}))["deleted"] is False
    assert SEEDED_COMMENT in fake.comments
    # any other error is not
    other = fake.error(400, "Argument Validation Error", code="INVALID_INPUT").json
    server.faults.add(Fault.status(400, json=other))
    with pytest.raises(ToolError, match="Argument Validation Error"):
        await linear.call("linear.archive_issue", {"id": SEEDED_ISSUE})


async def test_archive_keeps_the_issue_and_a_second_archive_changes_nothing(
    linear: LinearConnector, fake: FakeLinear
) -> None:
    assert (await linear.call("linear.archive_issue", {"id": SEEDED_ISSUE}))["archived"] is True
    issue = fake.find_issue(SEEDED_ISSUE)
    assert issue is not None
    assert issue["archivedAt"] is not None
    after = fake.snapshot()
    assert (await linear.call("linear.archive_issue", {"id": SEEDED_ISSUE}))["archived"] is True
    assert fake.snapshot() == after
    found = await linear.call("linear.get_issue", {"id": SEEDED_ISSUE})
    assert found["archived_at"] == issue["archivedAt"]


async def test_delete_comment_removes_it(linear: LinearConnector, fake: FakeLinear) -> None:
    made = await linear.call("linear.add_comment", {"issue_id": SEEDED_ISSUE, "body": "temp"})
    assert fake.comments[made["id"]]["body"] == "temp"
    assert (await linear.call("linear.delete_comment", {"id": made["id"]}))["deleted"] is True
    assert made["id"] not in fake.comments


def test_no_compensation_restores_a_prior_state() -> None:
    """The concurrent-change rule has nothing to guard: every undo removes what its call made."""
    undoable = {
        m.name
        for m in LinearConnector.manifests()
        if m.effect in (Effect.REVERSIBLE, Effect.COMPENSABLE)
    }
    assert set(RESTORES_NOTHING) == undoable
    assert all(len(why.split()) >= 6 for why in RESTORES_NOTHING.values())
    for tool in undoable:
        assert concurrent_change(None, tool, EXAMPLES[tool][0], {}) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("linear.get_issue", {"id": "ENG-1/../x"}),
        ("linear.get_issue", {"id": "not an id"}),
        ("linear.create_issue", {"team_id": "ENG", "title": "x"}),
        ("linear.create_issue", {"team_id": TEAM_ID, "title": "x", "priority": 5}),
        ("linear.delete_comment", {"id": "ENG-1"}),
        # Linear's own spelling only (lower-case UUIDs, upper-case identifiers): the run's edges
        # compare arguments as given
        ("linear.delete_comment", {"id": "5E1C2B9A-0000-4000-8000-00000000BEEF"}),
        ("linear.get_issue", {"id": "eng-1"}),
        ("linear.add_comment", {"issue_id": SEEDED_ISSUE, "body": "x", "extra": 1}),
    ],
)
async def test_arguments_are_checked_before_any_request(
    linear: LinearConnector, server: FakeServer, tool: str, args: dict[str, Any]
) -> None:
    with pytest.raises(InvalidArgumentsError):
        await linear.call(tool, args)
    assert server.requests == []
