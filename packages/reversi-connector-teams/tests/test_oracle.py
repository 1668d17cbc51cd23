"""The second oracle: Graph's own schemas accept every answer FakeGraph gives, and every request body.

The connector is driven against the fake through every tool: the certification
fixture's examples and failures, an application token, a delegated token without the
write permissions, exhausted throttling, a soft-delete read back after a 404. Each
exchange the fake served is checked against the JSON Schemas derived from Graph's
metadata (``tests/vendor/graph``, see ``_graph_oracle``): channel collections, chat
messages and error bodies, and the chatMessage the connector posts. Fakes changed on
purpose to drift from Graph fail, naming the route and the field (docs/connectors/teams.md,
"The second oracle").
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest
from _graph_oracle import (
    DIFFERENCES,
    FORMATS,
    ROUTES,
    SCHEMAS,
    Route,
    problems,
    route_of,
    validator,
)
from _teams_support import APP_TOKEN, SCOPELESS_TOKEN, TOKEN, connector_for

from reversi_connector_teams._args import PostMessageArgs
from reversi_connector_teams.testing import (
    EXAMPLES,
    FAILURES,
    GENERAL,
    TEAM_ID,
    WELCOME_ID,
    FakeGraph,
    seed_example,
)
from reversi_core.connector import CallContext
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.testing import (
    Example,
    ExampleCalls,
    Exchange,
    FakeRequest,
    FakeResponse,
    FakeServer,
    Fault,
)

Call = tuple[str, Example]
Prepare = Callable[[FakeGraph, FakeServer], None]


def _main_calls() -> list[Call]:
    return [(tool, examples[0]) for tool, examples in sorted(EXAMPLES.items())]


async def _run(
    calls: Sequence[Call],
    *,
    fake_class: type[FakeGraph] = FakeGraph,
    token: str = TOKEN,
    prepare: Prepare | None = None,
) -> list[Exchange]:
    """Make ``calls`` on a freshly seeded fake; return every exchange it served."""
    fake = fake_class(
        token=TOKEN, read_only_tokens=[SCOPELESS_TOKEN], application_tokens=[APP_TOKEN], channel_page_size=2
    )
    seed_example(fake)
    with FakeServer(fake) as server:
        if prepare is not None:
            prepare(fake, server)
        teams = connector_for(fake, server, token)
        ctx = ExampleCalls(server, teams)
        try:
            for tool, example in calls:
                # a refusal is an answer to check like any other
                with contextlib.suppress(ToolError, EffectUncertainError):
                    await ctx.call(tool, await ctx.prepare(example))
        finally:
            await teams.aclose()
        return server.exchanges


def _exhausted(fake: FakeGraph, server: FakeServer) -> None:
    fake.exhaust_rate_limit()


def _softdelete_answers_404(fake: FakeGraph, server: FakeServer) -> None:
    gone = {"error": {"code": "NotFound", "message": "Message was deleted."}}
    path = f"/v1.0/teams/{TEAM_ID}/channels/{GENERAL}/messages/{WELCOME_ID}/softDelete"
    server.faults.add(Fault.status(404, json=gone, apply=True), path=path, times=1)


async def _refused_blank_post() -> list[Exchange]:
    """A blank post, which the connector's arguments refuse, sent past them: FakeGraph's 400."""
    fake = FakeGraph(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake) as server:
        teams = connector_for(fake, server, TOKEN)
        blank = PostMessageArgs.model_construct(**{**_POST_AT, "content": "  ", "content_type": "text",
                                                   "subject": None, "importance": None})
        try:
            with pytest.raises(ToolError) as caught:
                await teams.post_message(blank, CallContext())
        finally:
            await teams.aclose()
        assert (caught.value.status, caught.value.code) == (400, "BadRequest")
        return server.exchanges


async def _drive() -> list[Exchange]:
    made: list[Exchange] = []
    for tool, examples in sorted(EXAMPLES.items()):
        made += await _run([(tool, example) for example in examples])
    for tool, failures in sorted(FAILURES.items()):
        made += await _run([(tool, failure.args) for failure in failures])
    for token in (APP_TOKEN, SCOPELESS_TOKEN, "eyJ0eXAiOiJKV1QifQ.unknown.0123456789"):
        made += await _run(_main_calls(), token=token)
    made += await _run(_main_calls(), prepare=_exhausted)
    made += await _run(
        [("teams.delete_message", {"team_id": TEAM_ID, "channel_id": GENERAL, "message_id": WELCOME_ID})],
        prepare=_softdelete_answers_404,
    )
    made += await _refused_blank_post()
    return made


@pytest.fixture(scope="module")
def exchanges() -> list[Exchange]:
    """Every exchange of the drive, in order."""
    return anyio.run(_drive)


def test_every_answer_and_request_body_fits_graphs_schemas(exchanges: list[Exchange]) -> None:
    found = Counter(p for exchange in exchanges for p in problems(exchange))
    assert not found, "FakeGraph or the connector departs from Graph's schemas:\n" + "\n".join(
        f"{problem} [x{count}]" for problem, count in sorted(found.items())
    )


def test_every_route_was_checked_on_success_and_on_refusal(exchanges: list[Exchange]) -> None:
    seen: dict[Route, set[int]] = {}
    for exchange in exchanges:
        route = route_of(exchange)
        assert route is not None, f"unrouted: {exchange.request.method} {exchange.request.path}"
        if exchange.response is not None and exchange.request.fault is None:
            seen.setdefault(route, set()).add(exchange.response.status)
    assert set(seen) == set(ROUTES)
    for route, statuses in seen.items():
        assert route.ok in statuses, f"{route}: no success answer was checked"
        assert any(s >= 400 for s in statuses), f"{route}: no error answer was checked"
    errors = {s for statuses in seen.values() for s in statuses if s >= 400}
    assert {400, 401, 403, 404, 429} <= errors
    posted = [e for e in exchanges if route_of(e) is ROUTES[1] and e.request.json]
    kinds = {e.request.json["body"]["contentType"] for e in posted}
    assert kinds == {"text", "html"}  # both kinds of body were validated


def test_the_schemas_refuse_what_graph_does_not_allow() -> None:
    message = {"body": {"contentType": "text", "content": "hi"}}
    assert list(validator("chatMessage").iter_errors(message)) == []
    for wrong in (
        {"body": {"contentType": "markdown", "content": "hi"}},
        {"body": {"contentType": "text", "content": "hi"}, "text": "hi"},
        {"body": None},
        {"importance": "low"},
    ):
        assert list(validator("chatMessage").iter_errors(wrong)), wrong
    assert list(validator("odataError").iter_errors({"error": {"code": "NotFound"}}))
    assert list(validator("channel").iter_errors({"id": "19:x", "displayName": None}))


def _formats(node: Any) -> set[str]:
    if isinstance(node, dict):
        own = {node["format"]} if isinstance(node.get("format"), str) else set()
        return own.union(*(_formats(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_formats(v) for v in node))
    return set()


def test_the_oracle_checks_every_format_the_schemas_name_itself() -> None:
    named = _formats(json.loads(SCHEMAS.read_text(encoding="utf-8")))
    assert named == {"base64url", "date-time", "int32", "int64"}
    assert named | {d.format for d in DIFFERENCES} == set(FORMATS.checkers)


def test_date_times_are_checked_whatever_else_is_installed() -> None:
    def refused(name: str, body: dict[str, Any]) -> bool:
        return any(e.validator == "format" for e in validator(name).iter_errors(body))

    def message(created: str) -> dict[str, Any]:
        return {"createdDateTime": created}

    assert not refused("chatMessage", message("2026-12-01T16:44:58Z"))
    assert not refused("chatMessage", message("2026-12-01T16:44:58.123+01:00"))
    for wrong in ("2026-12-01T16:44:58", "2026-02-30T10:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01"):
        assert refused("chatMessage", message(wrong)), wrong

    def error(date: str) -> dict[str, Any]:
        return {"error": {"code": "NotFound", "message": "m", "innerError": {"date": date}}}

    # the documented difference: Graph's errors give their date without an offset
    assert not refused("odataError", error("2026-12-01T16:44:58"))
    assert not refused("odataError", error("2026-12-01T16:44:58Z"))
    for wrong in ("2026-02-30T16:44:58", "yesterday", "2026-12-01 16:44:58"):
        assert refused("odataError", error(wrong)), wrong


def test_the_other_formats_are_checked() -> None:
    assert FORMATS.conforms(2**31 - 1, "int32")
    assert not FORMATS.conforms(2**31, "int32")
    assert FORMATS.conforms(-(2**63), "int64")
    assert not FORMATS.conforms(2**63, "int64")
    assert FORMATS.conforms("aGk_-w", "base64url")
    assert FORMATS.conforms("aGk=", "base64url")
    assert not FORMATS.conforms("aGk+/w==", "base64url")
    assert not FORMATS.conforms("a", "base64url")
    hosted = {"hostedContents": [{"contentBytes": "not base64!"}]}
    assert any(e.validator == "format" for e in validator("chatMessage").iter_errors(hosted))


# -- a fake that drifted from Graph fails the oracle ---------------------------------------


def _drifted(route: Route, status: int, change: Callable[[Any], Any]) -> type[FakeGraph]:
    """A FakeGraph whose answers with ``status`` on ``route`` pass through ``change``."""

    class Drifted(FakeGraph):
        def dispatch(self, request: FakeRequest) -> FakeResponse:
            response = super().dispatch(request)
            if (
                request.method == route.method
                and route.pattern.fullmatch(request.target)
                and response.status == status
            ):
                return dataclasses.replace(response, json=change(copy.deepcopy(response.json)))
            return response

    return Drifted


def _null_display_name(body: dict[str, Any]) -> dict[str, Any]:
    body["value"][0]["displayName"] = None
    return body


def _markdown_body(body: dict[str, Any]) -> dict[str, Any]:
    body["body"]["contentType"] = "markdown"
    return body


def _invented_property(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "sender": body["from"]}


def _error_without_message(body: dict[str, Any]) -> dict[str, Any]:
    del body["error"]["message"]
    return body


def _a_body_on_no_content(body: Any) -> dict[str, Any]:
    return {"deleted": True}


_POST_AT = {"team_id": TEAM_ID, "channel_id": GENERAL}

DRIFTS = [
    pytest.param(
        (ROUTES[0], 200, _null_display_name),
        ("teams.list_channels", {"team_id": TEAM_ID}),
        "GET /teams/{team-id}/channels -> 200 (channelCollectionResponse): "
        "$.value[0].displayName: None is not of type 'string'",
        id="channel-without-a-name",
    ),
    pytest.param(
        (ROUTES[1], 201, _markdown_body),
        ("teams.post_message", {**_POST_AT, "content": "hi"}),
        "POST /teams/{team-id}/channels/{channel-id}/messages -> 201 (chatMessage): $.body.contentType:",
        id="markdown-body",
    ),
    pytest.param(
        (ROUTES[1], 201, _invented_property),
        ("teams.post_message", {**_POST_AT, "content": "hi"}),
        "-> 201 (chatMessage): $: 'sender' does not match any of the regexes: '@'",
        id="invented-property",
    ),
    pytest.param(
        (ROUTES[1], 404, _error_without_message),
        ("teams.post_message", {**_POST_AT, "channel_id": "19:nope@thread.tacv2", "content": "hi"}),
        "-> 404 (odataError): $.error: 'message' is a required property",
        id="error-without-message",
    ),
    pytest.param(
        (ROUTES[3], 204, _a_body_on_no_content),
        ("teams.delete_message", {**_POST_AT, "message_id": WELCOME_ID}),
        "POST /teams/{team-id}/channels/{channel-id}/messages/{message-id}/softDelete -> 204: a 204 with a body",
        id="soft-delete-with-a-body",
    ),
]


@pytest.mark.parametrize(("drift", "call", "expected"), DRIFTS)
def test_a_fake_that_drifted_fails_the_oracle_naming_route_and_field(
    drift: tuple[Route, int, Callable[[Any], Any]], call: Call, expected: str
) -> None:
    route, status, change = drift
    faithful = anyio.run(lambda: _run([call]))
    drifted = anyio.run(lambda: _run([call], fake_class=_drifted(route, status, change)))
    assert [p for e in faithful for p in problems(e)] == []
    found = [p for e in drifted for p in problems(e)]
    assert any(expected in p for p in found), found


def test_a_request_body_graph_would_not_take_is_reported() -> None:
    exchanges = anyio.run(lambda: _run([("teams.post_message", {**_POST_AT, "content": "hi"})]))
    (posted,) = exchanges
    assert problems(posted) == []
    sloppy = dataclasses.replace(
        posted, request=dataclasses.replace(posted.request, json={"content": "hi", "contentType": "text"})
    )
    assert problems(sloppy) == [
        "POST /teams/{team-id}/channels/{channel-id}/messages request body (chatMessage): $: "
        "'content', 'contentType' do not match any of the regexes: '@'"
    ]
