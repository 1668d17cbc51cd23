"""Each slack tool against FakeSlack: what it sends, what it returns, how Slack's answers map."""

from __future__ import annotations

import urllib.parse
from typing import Any

import httpx
import pytest

from reversi_connector_slack import SlackConnector
from reversi_connector_slack.testing import (
    ALICE,
    ARCHIVED,
    BOT_MESSAGE_TS,
    BOT_USER,
    GENERAL,
    HUMAN_MESSAGE_TS,
    NOT_A_MEMBER,
    PRIVATE,
    FakeSlack,
)
from reversi_core.connector import CallContext
from reversi_core.errors import EffectUncertainError, InvalidArgumentsError, ToolError
from reversi_core.testing import FakeServer, Fault

pytestmark = pytest.mark.anyio

TOKEN = "xoxb-1234567890-0987654321-testSecretToken"  # conftest's
READ_ONLY_TOKEN = "xoxb-1234567890-0987654321-readOnlyToken"  # conftest's
UNDO = CallContext(idempotency_key="reversi-run-1-undo", compensation=True)


# -- list_channels ------------------------------------------------------------------------


async def test_the_fake_reads_a_limit_in_ascii_digits_only(
    fake: FakeSlack, server: FakeServer
) -> None:
    async with httpx.AsyncClient(base_url=fake.base_url(server)) as client:
        pages = [
            await client.get(
                "/conversations.list",
                params={"limit": limit},
                headers={"authorization": f"Bearer {TOKEN}"},
            )
            for limit in ("1", "\u0661", "x")  # ARABIC-INDIC DIGIT ONE: int() reads it as 1
        ]
    one, arabic_one, not_a_number = [[c["id"] for c in p.json()["channels"]] for p in pages]
    assert one == [GENERAL]
    assert arabic_one == not_a_number  # the default page
    assert len(not_a_number) > 1


async def test_list_channels_reads_one_page_and_gives_the_next_cursor(
    slack: SlackConnector, server: FakeServer
) -> None:
    first = await slack.call("slack.list_channels", {"limit": 1})
    assert [c["id"] for c in first["channels"]] == [GENERAL]
    assert first["channels"][0] == {
        "id": GENERAL,
        "name": "general",
        "is_private": False,
        "is_archived": False,
        "is_member": True,
    }
    assert first["next_cursor"]
    rest = await slack.call("slack.list_channels", {"cursor": first["next_cursor"]})
    assert [c["id"] for c in rest["channels"]] == [NOT_A_MEMBER]  # archived left out
    assert rest["next_cursor"] is None
    request = server.requests[-1]
    assert request.method == "GET"
    assert request.query == {
        "types": "public_channel",
        "exclude_archived": "true",
        "limit": "200",
        "cursor": first["next_cursor"],
    }


async def test_list_channels_with_private_and_archived_ones(slack: SlackConnector) -> None:
    listed = await slack.call(
        "slack.list_channels",
        {
            "types": ["public_channel", "private_channel", "public_channel"],
            "exclude_archived": False,
        },
    )
    by_id = {c["id"]: c for c in listed["channels"]}
    assert sorted(by_id) == sorted([GENERAL, NOT_A_MEMBER, ARCHIVED, PRIVATE])
    assert by_id[PRIVATE]["is_private"]
    assert by_id[ARCHIVED]["is_archived"]
    assert by_id[NOT_A_MEMBER]["is_member"] is False


async def test_a_missing_scope_names_the_scope_needed(
    slack: SlackConnector, fake: FakeSlack
) -> None:
    fake.scopes = frozenset({"channels:read", "chat:write"})
    with pytest.raises(ToolError) as caught:
        await slack.call("slack.list_channels", {"types": ["private_channel"]})
    assert (caught.value.status, caught.value.code) == (200, "missing_scope")
    assert "needs scope groups:read (the token has: channels:read,chat:write)" in str(caught.value)


async def test_an_unknown_cursor_is_refused_by_slack(slack: SlackConnector) -> None:
    with pytest.raises(ToolError) as caught:
        await slack.call("slack.list_channels", {"cursor": "bm9wZQ=="})
    assert (caught.value.status, caught.value.code) == (200, "invalid_cursor")


# -- post_message ---------------------------------------------------------------------------


async def test_post_message_sends_a_form_with_the_token_in_the_header_only(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer
) -> None:
    text = "Deploy done: 100% & a+b=c? #ops ünïcødé"
    posted = await slack.call("slack.post_message", {"channel": GENERAL, "text": text})
    assert posted == {"channel": GENERAL, "ts": posted["ts"], "thread_ts": None, "text": text}
    assert fake.message(GENERAL, posted["ts"]).text == text
    assert fake.message(GENERAL, posted["ts"]).user == BOT_USER
    request = server.requests[-1]
    assert (request.method, request.path) == ("POST", "/api/chat.postMessage")
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.form == {"channel": GENERAL, "text": text}
    assert TOKEN not in request.target
    assert TOKEN not in request.text
    assert TOKEN not in urllib.parse.unquote_plus(request.text)


async def test_a_reply_goes_into_the_thread_given(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer
) -> None:
    reply = await slack.call(
        "slack.post_message",
        {
            "channel": GENERAL,
            "text": "On it.",
            "thread_ts": HUMAN_MESSAGE_TS,
            "reply_broadcast": True,
        },
    )
    assert reply["thread_ts"] == HUMAN_MESSAGE_TS
    assert fake.message(GENERAL, reply["ts"]).thread_ts == HUMAN_MESSAGE_TS
    assert server.requests[-1].form == {
        "channel": GENERAL,
        "text": "On it.",
        "thread_ts": HUMAN_MESSAGE_TS,
        "reply_broadcast": "true",
    }


@pytest.mark.parametrize(
    "bad",
    [
        {"thread_ts": "1712345000.1"},  # a float that lost its trailing zeros
        {"thread_ts": 1712345000.0001},
        {"thread_ts": "1712345000"},
        {"thread_ts": "p1712345000000100"},  # a permalink's form
        {"thread_ts": "1712345000.000100 "},
        # digits, but not ASCII ones: Slack's timestamps are [0-9] (pydantic-core's \d is Unicode)
        {"thread_ts": "\uff11\uff17\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18.000200"},
        {"thread_ts": "1712345678.\u0660\u0660\u0660\u0662\u0660\u0660"},
        {"channel": "#general"},
        {"channel": "general"},
        {"channel": "c0general01"},
        {"channel": "C0GENERAL01/../chat.delete"},
        {"reply_broadcast": True},  # without a thread
        {"text": "   "},
        {"text": "x" * 40_001},
        {"unfurl_links": True},  # not an argument of the tool
    ],
)
async def test_arguments_are_checked_in_slacks_formats_before_anything_is_sent(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer, bad: dict[str, Any]
) -> None:
    before = fake.snapshot()
    with pytest.raises(InvalidArgumentsError):
        await slack.call("slack.post_message", {"channel": GENERAL, "text": "hi", **bad})
    assert server.requests == []
    assert fake.snapshot() == before


async def test_timestamps_and_channels_are_checked_for_every_tool(
    slack: SlackConnector, server: FakeServer
) -> None:
    calls = [
        ("slack.delete_message", {"channel": GENERAL, "ts": "1712345000"}),
        ("slack.delete_message", {"channel": GENERAL, "ts": "171234500\u0660.000100"}),
        (
            "slack.add_reaction",
            {"channel": GENERAL, "timestamp": "1712345000.00010\u0967", "name": "eyes"},
        ),
        ("slack.add_reaction", {"channel": GENERAL, "timestamp": "now", "name": "eyes"}),
        (
            "slack.add_reaction",
            {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": ":eyes:"},
        ),
        (
            "slack.remove_reaction",
            {"channel": "#general", "timestamp": HUMAN_MESSAGE_TS, "name": "eyes"},
        ),
        ("slack.list_channels", {"types": ["channels"]}),
        ("slack.list_channels", {"cursor": "a b"}),
    ]
    for tool, args in calls:
        with pytest.raises(InvalidArgumentsError):
            await slack.call(tool, args)
    assert server.requests == []


@pytest.mark.parametrize(
    ("channel", "code", "words"),
    [
        ("C0NOSUCH001", "channel_not_found", "no conversation with that ID"),
        (NOT_A_MEMBER, "not_in_channel", "invite it first"),
        (ARCHIVED, "is_archived", "archived"),
    ],
)
async def test_slacks_refusals_in_http_200_are_tool_errors_with_slacks_code(
    slack: SlackConnector, fake: FakeSlack, channel: str, code: str, words: str
) -> None:
    before = fake.snapshot()
    with pytest.raises(ToolError) as caught:
        await slack.call("slack.post_message", {"channel": channel, "text": "hi"})
    assert not isinstance(caught.value, EffectUncertainError)
    assert (caught.value.status, caught.value.code) == (200, code)
    assert f"POST /chat.postMessage failed: HTTP 200, refused in the answer's body ({code})" in str(
        caught.value
    )
    assert words in str(caught.value)
    assert fake.snapshot() == before


async def test_a_read_only_token_cannot_post(fake: FakeSlack, server: FakeServer) -> None:
    reader = SlackConnector(READ_ONLY_TOKEN, base_url=fake.base_url(server))
    assert (await reader.call("slack.list_channels", {}))["channels"]
    with pytest.raises(ToolError) as caught:
        await reader.call("slack.post_message", {"channel": GENERAL, "text": "hi"})
    assert caught.value.code == "missing_scope"
    assert "needs scope chat:write" in str(caught.value)
    await reader.aclose()


@pytest.mark.parametrize(("token", "code"), [("xoxb-not-a-token-known-here", "invalid_auth")])
async def test_an_unknown_token_is_invalid_auth(
    fake: FakeSlack, server: FakeServer, token: str, code: str
) -> None:
    stranger = SlackConnector(token, base_url=fake.base_url(server))
    with pytest.raises(ToolError) as caught:
        await stranger.call("slack.list_channels", {})
    assert (caught.value.status, caught.value.code) == (200, code)
    assert token not in str(caught.value)
    await stranger.aclose()


# -- rate limits, lost answers, no retries ---------------------------------------------------


async def test_http_429_with_retry_after_is_a_rate_limit(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer
) -> None:
    fake.exhaust_rate_limit()
    with pytest.raises(ToolError) as caught:
        await slack.call("slack.post_message", {"channel": GENERAL, "text": "hi"})
    assert (caught.value.status, caught.value.code) == (429, "rate_limited")
    assert "retry after 30 s" in str(caught.value)
    assert len(server.requests) == 1  # nothing retried


@pytest.mark.parametrize("code", ["ratelimited", "rate_limited"])
async def test_a_rate_limit_code_in_an_http_200_answer_is_a_rate_limit(
    slack: SlackConnector, server: FakeServer, code: str
) -> None:
    server.faults.add(
        Fault.status(200, json={"ok": False, "error": code}, headers={"Retry-After": "7"})
    )
    with pytest.raises(ToolError) as caught:
        await slack.call(
            "slack.add_reaction",
            {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "eyes"},
        )
    assert (caught.value.status, caught.value.code) == (200, "rate_limited")
    assert "retry after 7 s" in str(caught.value)


async def test_a_post_whose_answer_was_lost_is_uncertain_and_never_sent_twice(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer
) -> None:
    server.faults.add(Fault.drop_after_read(apply=True), method="POST")
    with pytest.raises(EffectUncertainError):
        await slack.call("slack.post_message", {"channel": GENERAL, "text": "exactly once"})
    assert [r.path for r in server.requests] == ["/api/chat.postMessage"]
    posted = [m for m in fake.channels[GENERAL].messages.values() if m.text == "exactly once"]
    assert len(posted) == 1


@pytest.mark.parametrize("code", ["fatal_error", "internal_error"])
async def test_a_write_slack_says_may_be_partly_done_is_uncertain(
    slack: SlackConnector, server: FakeServer, code: str
) -> None:
    server.faults.add(Fault.status(200, json={"ok": False, "error": code}), method="POST")
    with pytest.raises(EffectUncertainError, match=code):
        await slack.call("slack.post_message", {"channel": GENERAL, "text": "hi"})
    server.faults.add(Fault.status(200, json={"ok": False, "error": code}), method="GET")
    with pytest.raises(ToolError) as caught:  # a read did nothing: a plain failure
        await slack.call("slack.list_channels", {})
    assert caught.value.code == code


async def test_an_ok_answer_without_the_messages_ts_is_uncertain(
    slack: SlackConnector, server: FakeServer
) -> None:
    server.faults.add(
        Fault.status(200, json={"ok": True, "channel": GENERAL}, apply=True), method="POST"
    )
    with pytest.raises(EffectUncertainError, match="has no 'ts'"):
        await slack.call("slack.post_message", {"channel": GENERAL, "text": "hi"})


# -- reactions ------------------------------------------------------------------------------


async def test_add_reaction_adds_the_bots_reaction_beside_someone_elses(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer
) -> None:
    at = {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "eyes"}
    assert await slack.call("slack.add_reaction", at) == {**at, "added": True}
    assert fake.message(GENERAL, HUMAN_MESSAGE_TS).reactions == {"eyes": [ALICE, BOT_USER]}
    assert server.requests[-1].form == at
    removed = await slack.call("slack.remove_reaction", at, UNDO)
    assert removed == {**at, "removed": True}
    assert fake.message(GENERAL, HUMAN_MESSAGE_TS).reactions == {"eyes": [ALICE]}  # Alice's stays


async def test_a_reaction_already_there_is_recorded_as_not_added_and_its_undo_leaves_it(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer
) -> None:
    at = {"channel": GENERAL, "timestamp": BOT_MESSAGE_TS, "name": "white_check_mark"}
    made = await slack.call("slack.add_reaction", at)
    assert made == {**at, "added": False}
    server.clear_requests()
    undo = await slack.call("slack.remove_reaction", {**at, "added_by_call": made["added"]}, UNDO)
    assert undo == {**at, "removed": False}
    assert server.requests == []  # nothing was even asked of Slack
    assert fake.message(GENERAL, BOT_MESSAGE_TS).reactions == {"white_check_mark": [BOT_USER]}


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"timestamp": HUMAN_MESSAGE_TS, "name": "eyes"}, "no_reaction"),  # Alice's, not the bot's
        ({"timestamp": "1712345000.999999", "name": "eyes"}, "message_not_found"),
    ],
)
async def test_remove_reaction_counts_a_reaction_not_there_as_done(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer, args: dict[str, Any], code: str
) -> None:
    before = fake.snapshot()
    done = await slack.call("slack.remove_reaction", {"channel": GENERAL, **args}, UNDO)
    assert done["removed"] is False
    assert server.exchanges[-1].response is not None
    assert server.exchanges[-1].response.json == {"ok": False, "error": code}
    assert fake.snapshot() == before


async def test_an_unknown_emoji_is_refused_by_slack(slack: SlackConnector) -> None:
    with pytest.raises(ToolError) as caught:
        await slack.call(
            "slack.add_reaction",
            {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "nope"},
        )
    assert caught.value.code == "invalid_name"


# -- delete_message ---------------------------------------------------------------------------


async def test_delete_message_deletes_the_bots_message_and_counts_one_gone_as_done(
    slack: SlackConnector, fake: FakeSlack
) -> None:
    at = {"channel": GENERAL, "ts": BOT_MESSAGE_TS}
    assert await slack.call("slack.delete_message", at, UNDO) == {**at, "deleted": True}
    assert BOT_MESSAGE_TS not in fake.channels[GENERAL].messages
    assert await slack.call("slack.delete_message", at, UNDO) == {**at, "deleted": False}


@pytest.mark.parametrize(
    ("prepare", "ts", "code"),
    [
        (lambda fake: None, HUMAN_MESSAGE_TS, "cant_delete_message"),
        (
            lambda fake: setattr(fake, "deletion_forbidden", True),
            BOT_MESSAGE_TS,
            "compliance_exports_prevent_deletion",
        ),
    ],
)
async def test_a_message_slack_will_not_delete_is_an_error(
    slack: SlackConnector, fake: FakeSlack, prepare: Any, ts: str, code: str
) -> None:
    prepare(fake)
    with pytest.raises(ToolError) as caught:
        await slack.call("slack.delete_message", {"channel": GENERAL, "ts": ts}, UNDO)
    assert (caught.value.status, caught.value.code) == (200, code)
    assert ts in fake.channels[GENERAL].messages


async def test_the_token_comes_from_slack_bot_token(fake: FakeSlack, server: FakeServer) -> None:
    connector = SlackConnector.from_env(
        {"SLACK_BOT_TOKEN": TOKEN, "SLACK_BASE_URL": fake.base_url(server)}
    )
    assert (await connector.call("slack.list_channels", {}))["channels"]
    assert server.requests[-1].headers["authorization"] == f"Bearer {TOKEN}"
    await connector.aclose()
    assert SlackConnector.credential_env == "SLACK_BOT_TOKEN"
    assert SlackConnector("xoxb-x-y-z-1234", base_url=None).base_url == "https://slack.com/api"
