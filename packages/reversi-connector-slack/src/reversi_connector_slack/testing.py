"""A fake Slack Web API to test against, and the connector's certification opt-in.

:class:`FakeSlack` is a :class:`reversi_core.testing.VendorFake` that models the part of
Slack's Web API the ``slack`` connector uses, written from Slack's method pages (each
route cites its page): ``conversations.list``, ``chat.postMessage``, ``chat.delete``,
``reactions.add`` and ``reactions.remove``, with Slack's answers (HTTP 200 with ``{"ok":
true}`` or ``{"ok": false, "error": "<code>"}``, HTTP 429 with ``Retry-After`` for a rate
limit), the token check and token scopes. Serve it with
:class:`reversi_core.testing.FakeServer` and point the connector at it::

    from reversi_core.testing import FakeServer
    from reversi_connector_slack import SlackConnector
    from reversi_connector_slack.testing import FakeSlack, seed_example, GENERAL

    fake = FakeSlack(token="xoxb-test-token-0001")
    seed_example(fake)
    with FakeServer(fake) as server:
        slack = SlackConnector("xoxb-test-token-0001", base_url=fake.base_url(server))
        posted = await slack.call("slack.post_message", {"channel": GENERAL, "text": "Hi"})
        assert fake.message(GENERAL, posted["ts"]).text == "Hi"

What the fake does not model: direct messages and group DMs (it has channels only),
message edits (chat.update), files, blocks and attachments, emoji aliases (``thumbsup``
and ``+1`` are two names to it), the per-channel limit of about one message a second,
the tombstone Slack leaves for a deleted message that has replies, events, and anything
Slack does besides answering (notifications, unread marks).

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
    Dependency,
    Example,
    ExampleContext,
    Failure,
    FakeServer,
    LiveScenario,
)

from ._fake import (
    ALL_SCOPES,
    BOT_ID,
    BOT_USER,
    KNOWN_EMOJI,
    MAX_DISTINCT_REACTIONS,
    READ_SCOPES,
    TEAM_ID,
    FakeSlack,
)
from ._live import LIVE_CHANNEL_VARIABLE, LIVE_SUMMARY, LIVE_VARIABLES, live_scenario
from ._state import FakeChannel, FakeMessage
from .connector import SlackConnector

__all__ = [
    "ALICE",
    "ALL_SCOPES",
    "ARCHIVED",
    "BOT_ID",
    "BOT_MESSAGE_TS",
    "BOT_USER",
    "CERTIFICATION_TOKEN",
    "DEPENDENCIES",
    "EXAMPLES",
    "FAILURES",
    "GENERAL",
    "HUMAN_MESSAGE_TS",
    "KNOWN_EMOJI",
    "LIMIT",
    "LIVE",
    "MAX_DISTINCT_REACTIONS",
    "NOT_A_MEMBER",
    "PATIENCE",
    "PRIVATE",
    "READ_SCOPES",
    "RESTORES_NOTHING",
    "TEAM_ID",
    "FakeChannel",
    "FakeMessage",
    "FakeSlack",
    "certification_fixture",
    "concurrent_change",
    "seed_example",
    "slack_backend",
]

CERTIFICATION_TOKEN = "xoxb-1111111111-2222222222-reversiCertification"  # noqa: S105 - made up
"""The token the certification fixture gives the fake and the connector."""

LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""

GENERAL = "C0GENERAL01"
"""#general: the bot is a member; it holds :data:`HUMAN_MESSAGE_TS` and :data:`BOT_MESSAGE_TS`."""
NOT_A_MEMBER = "C0RANDOM001"
"""#random: public, the bot is not a member (``not_in_channel``)."""
ARCHIVED = "C0OLDNEWS01"
"""#old-news: archived (``is_archived``)."""
PRIVATE = "C0SECRET001"
"""#secret: a private channel; the bot is a member."""
ALICE = "U0ALICE001"
"""A person of the workspace."""
HUMAN_MESSAGE_TS = "1712345000.000100"
"""Alice's message in #general, with her ``eyes`` reaction."""
BOT_MESSAGE_TS = "1712345000.000200"
"""A message the bot posted in #general before any run, with the bot's ``white_check_mark``."""


def seed_example(fake: FakeSlack) -> None:
    """Put the example workspace in ``fake`` (see the constants of this module)."""
    fake.add_channel(GENERAL, "general", general=True, members=[ALICE])
    fake.add_channel(NOT_A_MEMBER, "random", bot_is_member=False, members=[ALICE])
    fake.add_channel(ARCHIVED, "old-news", archived=True)
    fake.add_channel(PRIVATE, "secret", private=True, members=[ALICE])
    fake.add_message(
        GENERAL, "Deploy at noon?", user=ALICE, ts=HUMAN_MESSAGE_TS, reactions={"eyes": [ALICE]}
    )
    fake.add_message(
        GENERAL,
        "Build 41 passed.",
        user=BOT_USER,
        ts=BOT_MESSAGE_TS,
        reactions={"white_check_mark": [BOT_USER]},
    )


@contextmanager
def slack_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeSlack` (token :data:`CERTIFICATION_TOKEN`) served on a fresh port."""
    with FakeServer(FakeSlack(token=CERTIFICATION_TOKEN)) as server:
        yield server


def _fake(server: FakeServer) -> FakeSlack:
    app = server.app
    if not isinstance(app, FakeSlack):
        raise TypeError(f"the server does not serve a FakeSlack but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> SlackConnector:
    return SlackConnector(
        CERTIFICATION_TOKEN,
        base_url=_fake(server).base_url(server),
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


async def _delete_new_message(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("slack.post_message", {"channel": GENERAL, "text": "To be deleted"})
    return {"channel": made["channel"], "ts": made["ts"]}


async def _remove_new_reaction(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    at = {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "rocket"}
    made = await ctx.call("slack.add_reaction", at)
    return {**at, "added_by_call": made["added"]}


async def _reply_to_new_message(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    parent = ctx.results["slack.post_message"]
    return {
        "channel": parent["channel"],
        "text": "Details in the thread.",
        "thread_ts": parent["ts"],
    }


async def _react_to_new_message(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    posted = ctx.results["slack.post_message"]
    return {"channel": posted["channel"], "timestamp": posted["ts"], "name": "eyes"}


EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "slack.list_channels": [
        {},
        {"types": ["public_channel", "private_channel"], "exclude_archived": False},
        {"limit": 1},
    ],
    "slack.post_message": [
        {"channel": GENERAL, "text": "Deploy finished: 3 services updated."},
        {"channel": GENERAL, "text": "Looking into it.", "thread_ts": HUMAN_MESSAGE_TS},
        {
            "channel": GENERAL,
            "text": "ünïcødé, 100% & a+b=c?#",
            "thread_ts": HUMAN_MESSAGE_TS,
            "reply_broadcast": True,
        },
        {"channel": PRIVATE, "text": "A private note."},
    ],
    "slack.add_reaction": [
        {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "eyes"},
        {"channel": GENERAL, "timestamp": BOT_MESSAGE_TS, "name": "+1::skin-tone-3"},
    ],
    "slack.delete_message": [
        {"channel": GENERAL, "ts": BOT_MESSAGE_TS},
        _delete_new_message,
        {"channel": GENERAL, "ts": "1712345000.999999"},
    ],
    "slack.remove_reaction": [
        {"channel": GENERAL, "timestamp": BOT_MESSAGE_TS, "name": "white_check_mark"},
        _remove_new_reaction,
        {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "eyes"},
        {
            "channel": GENERAL,
            "timestamp": BOT_MESSAGE_TS,
            "name": "white_check_mark",
            "added_by_call": False,
        },
    ],
}
"""Calls of every tool. ``remove_reaction`` of Alice's ``eyes``: the bot has none, so
``no_reaction``, and Alice's stays; a reply with ``reply_broadcast`` and text with
characters that need encoding; a message that does not exist for ``delete_message``."""

FAILURES: Mapping[str, list[Failure]] = {
    "slack.list_channels": [Failure({"cursor": "bm90LWEtY3Vyc29y"}, code="invalid_cursor")],
    "slack.post_message": [
        Failure({"channel": "C0NOSUCH001", "text": "x"}, code="channel_not_found"),
        Failure({"channel": NOT_A_MEMBER, "text": "x"}, code="not_in_channel"),
        Failure({"channel": ARCHIVED, "text": "x"}, code="is_archived"),
    ],
    "slack.add_reaction": [
        Failure(
            {"channel": GENERAL, "timestamp": "1712345000.999999", "name": "eyes"},
            code="message_not_found",
        ),
        Failure(
            {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "not-an-emoji"},
            code="invalid_name",
        ),
    ],
    "slack.delete_message": [
        Failure({"channel": GENERAL, "ts": HUMAN_MESSAGE_TS}, code="cant_delete_message"),
        Failure({"channel": "C0NOSUCH001", "ts": BOT_MESSAGE_TS}, code="channel_not_found"),
    ],
    "slack.remove_reaction": [
        Failure(
            {"channel": "C0NOSUCH001", "timestamp": BOT_MESSAGE_TS, "name": "eyes"},
            code="channel_not_found",
        ),
    ],
}
"""Calls Slack turns down with HTTP 200 and ``"ok": false``, each with Slack's code."""

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "slack.post_message",
        {"channel": GENERAL, "text": "Release 2.1 is out."},
        "slack.post_message",
        _reply_to_new_message,
    ),
    Dependency(
        "slack.post_message",
        {"channel": GENERAL, "text": "Release 2.1 is out."},
        "slack.add_reaction",
        _react_to_new_message,
    ),
]

RESTORES_NOTHING: Mapping[str, str] = {
    "slack.post_message": "its undo deletes the message the call posted and puts back no earlier "
    "state; only the app that posted a message can edit it, so no one else's later change can be "
    "lost (replies in its thread are separate messages and stay)",
    "slack.add_reaction": "its undo takes off the bot's own reaction, which only the bot can add "
    "or remove, and puts back no earlier state; a reaction that was there before the call is "
    "left alone (added is false)",
}
"""The concurrent-change declaration (docs/connectors/slack.md): no slack compensation restores
an earlier value, so none can overwrite someone else's later change."""


def concurrent_change(handle: Any, tool: str, args: Any, result: Any) -> None:
    """No slack compensation restores an earlier value (see :data:`RESTORES_NOTHING`): ``None``."""
    return None


LIVE = LiveScenario(
    name="message-reply-reaction",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {LIVE_CHANNEL_VARIABLE: GENERAL},
)
"""slack's live scenario (:mod:`reversi_connector_slack._live`): ``nox -s live -- slack`` runs it against
the vendor; against the fake it works in the seeded example."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The slack connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of Slack's Web API, faults included",
        command_line=lambda server: (
            {
                "SLACK_BOT_TOKEN": CERTIFICATION_TOKEN,
                "SLACK_BASE_URL": _fake(server).base_url(server),
            },
            [],
        ),
        backend=slack_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
        live=LIVE,
        concurrent_change=concurrent_change,
        restores_nothing=RESTORES_NOTHING,
    )
