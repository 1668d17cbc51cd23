"""The second oracle: Slack's own Web API description, and slack-sdk's WebClient, against the fake.

1. The connector is driven through every tool on FakeSlack: the certification fixture's
   EXAMPLES and FAILURES, more refusals (a read-only token on every write, an unknown
   token, a rate limit, answers that count as done). Every request the fake received is
   checked against the method's parameters in Slack's OpenAPI description, and every
   answer the fake gave against the method's success or error schema
   (``_slack_oracle``). Fakes changed on purpose fail, naming the method and the field.
2. slack-sdk's ``WebClient`` (Slack's own client) is pointed at the fake (``base_url``)
   and makes the same calls: it must accept each success and raise ``SlackApiError``
   with Slack's code for each refusal. A fake that drops ``ok`` or answers a status
   other than 200 fails it.

See docs/connectors/slack.md ("The second oracle").
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from reversi_connector_slack import SlackConnector
from reversi_connector_slack.testing import (
    BOT_MESSAGE_TS,
    EXAMPLES,
    FAILURES,
    GENERAL,
    HUMAN_MESSAGE_TS,
    FakeSlack,
    seed_example,
)
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.testing import Example, Exchange, FakeRequest, FakeResponse, FakeServer

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _slack_oracle import (  # noqa: E402 - found only after the tests folder is put on sys.path above
    AMENDMENTS,
    request_problems,
    response_problems,
)

TOKEN = "xoxb-1111111111-2222222222-oracleToken"
READ_ONLY_TOKEN = "xoxb-1111111111-2222222222-oracleReadOnly"
WRONG_TOKEN = "xoxb-1111111111-2222222222-notKnownHere"

Call = tuple[str, Example]
Prepare = Callable[[FakeSlack], None]

WRITES: list[Call] = [
    ("slack.post_message", {"channel": GENERAL, "text": "x"}),
    ("slack.add_reaction", {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "tada"}),
    ("slack.delete_message", {"channel": GENERAL, "ts": BOT_MESSAGE_TS}),
    (
        "slack.remove_reaction",
        {"channel": GENERAL, "timestamp": BOT_MESSAGE_TS, "name": "white_check_mark"},
    ),
]
MORE: list[Call] = [
    (
        "slack.add_reaction",
        {"channel": GENERAL, "timestamp": BOT_MESSAGE_TS, "name": "white_check_mark"},
    ),
    ("slack.remove_reaction", {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "eyes"}),
    (
        "slack.remove_reaction",
        {"channel": GENERAL, "timestamp": "1712345000.999999", "name": "eyes"},
    ),
    ("slack.delete_message", {"channel": GENERAL, "ts": "1712345000.999999"}),
    ("slack.list_channels", {"types": ["private_channel"], "limit": 1}),
]
"""Answers that count as done (already_reacted, no_reaction, message_not_found) and a page."""


@dataclass
class _Context:
    """What the certification fixture's argument builders are given (ExampleContext)."""

    handle: FakeServer
    connector: SlackConnector
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def call(self, tool: str, args: Any) -> dict[str, Any]:
        result = await self.connector.call(tool, args)
        self.results[tool] = result
        return result


async def _run(
    calls: Sequence[Call],
    *,
    fake_class: type[FakeSlack] = FakeSlack,
    token: str = TOKEN,
    prepare: Prepare | None = None,
) -> list[Exchange]:
    """Make ``calls`` on a freshly seeded fake; return every exchange, refusals included."""
    fake = fake_class(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(fake)
    if prepare is not None:
        prepare(fake)
    with FakeServer(fake) as server:
        connector = SlackConnector(token, base_url=fake.base_url(server))
        ctx = _Context(server, connector)
        try:
            for tool, example in calls:
                try:
                    args = await example(ctx) if callable(example) else example
                    await ctx.call(tool, args)
                except (ToolError, EffectUncertainError):
                    pass  # a refusal is an answer to check like any other
        finally:
            await connector.aclose()
        return server.exchanges


async def _drive(fake_class: type[FakeSlack] = FakeSlack) -> list[Exchange]:
    exchanges: list[Exchange] = []
    failing = {tool: [f.args for f in failures] for tool, failures in FAILURES.items()}
    for examples in (EXAMPLES, failing):
        for tool, calls in sorted(examples.items()):
            exchanges += await _run([(tool, example) for example in calls], fake_class=fake_class)
    exchanges += await _run(MORE, fake_class=fake_class)
    exchanges += await _run(WRITES, token=READ_ONLY_TOKEN, fake_class=fake_class)
    exchanges += await _run([("slack.list_channels", {})], token=WRONG_TOKEN, fake_class=fake_class)
    exchanges += await _run(WRITES[:1], prepare=FakeSlack.exhaust_rate_limit, fake_class=fake_class)
    return exchanges


def _method(request: FakeRequest) -> str:
    return request.path.rsplit("/", 1)[-1]


def problems_of(
    exchanges: Sequence[Exchange], token: str = TOKEN
) -> tuple[list[str], Counter[tuple[str, str]]]:
    """Every problem the description finds in ``exchanges``, and which outcomes each method had."""
    problems: list[str] = []
    seen: Counter[tuple[str, str]] = Counter()
    for exchange in exchanges:
        request, response = exchange.request, exchange.response
        method = _method(request)
        sent_token = (request.headers.get("authorization") or "").removeprefix("Bearer ")
        problems += request_problems(
            method,
            request.method,
            request.headers,
            request.query,
            request.form if request.method == "POST" else {},
            request.headers.get("content-type"),
            sent_token if sent_token in (TOKEN, READ_ONLY_TOKEN, WRONG_TOKEN) else token,
        )
        if response is None or request.fault is not None:
            continue  # no answer, or an injected one: not the fake's to check
        problems += response_problems(method, response.status, response.json)
        body = response.json if isinstance(response.json, dict) else {}
        seen[(method, "ok" if body.get("ok") else str(body.get("error")))] += 1
    return problems, seen


@pytest.fixture(scope="module")
def exchanges() -> list[Exchange]:
    """Every exchange of the connector's drive against the fake."""
    return anyio.run(_drive)


def test_every_request_and_answer_fits_slacks_description(exchanges: list[Exchange]) -> None:
    problems, seen = problems_of(exchanges)
    assert problems == []
    methods = {m for m, _ in seen}
    assert methods == {
        "conversations.list",
        "chat.postMessage",
        "chat.delete",
        "reactions.add",
        "reactions.remove",
    }
    for method in methods:  # each method was checked with a success and a refusal
        assert seen[(method, "ok")] > 0, method
        assert any(outcome != "ok" for m, outcome in seen if m == method), method
    for outcome in (
        "already_reacted",
        "no_reaction",
        "message_not_found",
        "missing_scope",
        "invalid_auth",
    ):
        assert any(o == outcome for _, o in seen), outcome
    assert seen[("chat.postMessage", "ratelimited")] == 1


def test_every_amendment_is_used_by_the_fake(exchanges: list[Exchange]) -> None:
    """An amendment no answer needs would widen the description for nothing."""
    _, seen = problems_of(exchanges)
    codes = {outcome for _, outcome in seen}
    unused = {code for extra in AMENDMENTS.values() for code in extra} - codes
    assert unused == set()


# -- drift: the description catches a fake that answers or reads differently from Slack --------


class TsAsNumber(FakeSlack):
    """chat.postMessage answers the new message's ts as a JSON number."""

    def post_message(self, request: FakeRequest) -> FakeResponse:
        answer = super().post_message(request)
        if isinstance(answer.json, dict) and answer.json.get("ok"):
            return dataclasses.replace(answer, json={**answer.json, "ts": float(answer.json["ts"])})
        return answer


class TsInWideDigits(FakeSlack):
    """chat.postMessage answers the new message's ts in full-width digits (Unicode, not [0-9])."""

    def post_message(self, request: FakeRequest) -> FakeResponse:
        answer = super().post_message(request)
        if isinstance(answer.json, dict) and answer.json.get("ok"):
            wide = answer.json["ts"].translate({ord(d): 0xFF10 + int(d) for d in "0123456789"})
            return dataclasses.replace(answer, json={**answer.json, "ts": wide})
        return answer


class InventedCode(FakeSlack):
    """chat.delete refuses someone else's message with a code Slack does not use."""

    def delete_message(self, request: FakeRequest) -> FakeResponse:
        answer = super().delete_message(request)
        if isinstance(answer.json, dict) and answer.json.get("error") == "cant_delete_message":
            return self.refuse("not_your_message")
        return answer


class ChannelsAsObject(FakeSlack):
    """conversations.list answers its channels keyed by ID instead of as a list."""

    def list_conversations(self, request: FakeRequest) -> FakeResponse:
        answer = super().list_conversations(request)
        if isinstance(answer.json, dict) and answer.json.get("ok"):
            channels = {c["id"]: c for c in answer.json["channels"]}
            return dataclasses.replace(answer, json={**answer.json, "channels": channels})
        return answer


class ExtraField(FakeSlack):
    """reactions.add answers a field Slack's closed success schema does not have."""

    def add_reaction(self, request: FakeRequest) -> FakeResponse:
        answer = super().add_reaction(request)
        if isinstance(answer.json, dict) and answer.json.get("ok"):
            return dataclasses.replace(answer, json={**answer.json, "reaction": "added"})
        return answer


@pytest.mark.parametrize(
    ("fake_class", "words"),
    [
        (TsAsNumber, "chat.postMessage -> 200: ts:"),
        (InventedCode, "chat.delete -> 200: error: 'not_your_message' is not one of"),
        (ChannelsAsObject, "conversations.list -> 200: channels:"),
        (
            ExtraField,
            "reactions.add -> 200: (top): Additional properties are not allowed ('reaction'",
        ),
    ],
)
def test_a_fake_that_drifts_from_slack_fails_the_description(
    fake_class: type[FakeSlack], words: str
) -> None:
    problems, _ = problems_of(anyio.run(_drive, fake_class))
    assert any(words in problem for problem in problems), problems


def test_a_timestamp_in_other_digits_fails_the_description() -> None:
    """The description's ``\\d`` is ECMA-262's ``[0-9]``, not Python's Unicode digit."""
    post = functools.partial(_run, WRITES[:1], fake_class=TsInWideDigits)
    problems, _ = problems_of(anyio.run(post))
    assert len(problems) == 1, problems
    assert problems[0].startswith("chat.postMessage -> 200: ts: '\uff11\uff17\uff11\uff12")
    assert problems[0].endswith("does not match '^[0-9]{10}\\\\.[0-9]{6}$'")


def test_a_request_slack_would_not_take_fails_the_description() -> None:
    """The request half: parameters the method lacks, a missing one, a wrong type, the token."""
    problems = request_problems(
        "chat.delete",
        "POST",
        {"authorization": f"Bearer {TOKEN}"},
        {},
        {"ts": "yesterday", "message": "x"},
        "application/x-www-form-urlencoded",
        TOKEN,
    )
    assert problems == [
        "POST chat.delete: 'message' is not a parameter of chat.delete",
        "POST chat.delete: ts='yesterday' is not a number",
    ]
    wide = "\uff11\uff17\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18.000200"
    for ts in (wide, "1712345000.00010\u0967"):  # digits, but not ASCII ones
        assert request_problems(
            "chat.delete",
            "POST",
            {"authorization": f"Bearer {TOKEN}"},
            {},
            {"channel": GENERAL, "ts": ts},
            "application/x-www-form-urlencoded",
            TOKEN,
        ) == [f"POST chat.delete: ts={ts!r} is not a number"]
    assert request_problems(
        "chat.postMessage", "POST", {}, {"token": TOKEN}, {"text": "x"}, "text/plain", TOKEN
    ) == [
        "POST chat.postMessage: the token must travel as 'Authorization: Bearer'",
        "POST chat.postMessage: a POST carries its arguments in the body, not ['token']",
        "POST chat.postMessage: content type 'text/plain' is not one of "
        "['application/x-www-form-urlencoded', 'application/json']",
        "POST chat.postMessage: the required 'channel' is missing",
    ]


# -- slack-sdk: Slack's own client must accept the fake's answers --------------------------------


SDK_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("conversations_list", {"types": "public_channel,private_channel", "limit": 2}, "ok"),
    ("conversations_list", {"cursor": "bm9wZQ=="}, "invalid_cursor"),
    ("chat_postMessage", {"channel": GENERAL, "text": "from slack-sdk"}, "ok"),
    (
        "chat_postMessage",
        {"channel": GENERAL, "text": "a reply", "thread_ts": HUMAN_MESSAGE_TS},
        "ok",
    ),
    ("chat_postMessage", {"channel": "C0NOSUCH001", "text": "x"}, "channel_not_found"),
    ("reactions_add", {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "tada"}, "ok"),
    (
        "reactions_add",
        {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "tada"},
        "already_reacted",
    ),
    ("reactions_remove", {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "tada"}, "ok"),
    (
        "reactions_remove",
        {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "tada"},
        "no_reaction",
    ),
    ("chat_delete", {"channel": GENERAL, "ts": BOT_MESSAGE_TS}, "ok"),
    ("chat_delete", {"channel": GENERAL, "ts": BOT_MESSAGE_TS}, "message_not_found"),
    ("chat_delete", {"channel": GENERAL, "ts": HUMAN_MESSAGE_TS}, "cant_delete_message"),
]
"""slack-sdk's method, its arguments, and the outcome the fake must give (``ok`` or a code)."""


def _sdk_drive(fake_class: type[FakeSlack] = FakeSlack) -> tuple[list[str], list[Exchange]]:
    """Make :data:`SDK_CALLS` with slack-sdk on a fresh fake; return what went wrong and the exchanges."""
    fake = fake_class(token=TOKEN)
    seed_example(fake)
    wrong: list[str] = []
    with FakeServer(fake) as server:
        client = WebClient(token=TOKEN, base_url=fake.base_url(server) + "/", timeout=5)
        for method, kwargs, expected in SDK_CALLS:
            try:
                response = getattr(client, method)(**kwargs)
            except SlackApiError as exc:
                got = exc.response.get("error") if isinstance(exc.response.data, dict) else None
                if got != expected:
                    wrong.append(
                        f"{method}{kwargs}: SlackApiError {got!r} (status {exc.response.status_code})"
                    )
                continue
            if expected != "ok" or response.get("ok") is not True:
                wrong.append(f"{method}{kwargs}: accepted {response.data!r}, expected {expected}")
        return wrong, server.exchanges


def test_slack_sdks_web_client_accepts_every_answer_of_the_fake() -> None:
    wrong, exchanges = _sdk_drive()
    assert wrong == []
    assert [e.request.method for e in exchanges] == ["POST"] * len(SDK_CALLS)  # slack-sdk POSTs all
    for exchange in exchanges:  # and the answers it accepted fit the description too
        assert exchange.response is not None
        assert (
            response_problems(
                _method(exchange.request), exchange.response.status, exchange.response.json
            )
            == []
        )


class NoOk(FakeSlack):
    """chat.postMessage leaves ``ok`` out of its success."""

    def post_message(self, request: FakeRequest) -> FakeResponse:
        answer = super().post_message(request)
        if isinstance(answer.json, dict) and answer.json.get("ok"):
            return dataclasses.replace(
                answer, json={k: v for k, v in answer.json.items() if k != "ok"}
            )
        return answer


class Created(FakeSlack):
    """reactions.add answers its success with HTTP 201."""

    def add_reaction(self, request: FakeRequest) -> FakeResponse:
        return dataclasses.replace(super().add_reaction(request), status=201)


@pytest.mark.parametrize("fake_class", [NoOk, Created])
def test_a_fake_that_drifts_from_slack_fails_slack_sdk(fake_class: type[FakeSlack]) -> None:
    wrong, _ = _sdk_drive(fake_class)
    assert wrong, "slack-sdk accepted a drifted fake"
