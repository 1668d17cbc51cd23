"""A fake Microsoft Graph (Teams channel messages) to test against, and the certification opt-in.

:class:`FakeGraph` is a :class:`reversi_core.testing.VendorFake` that models the part of
Microsoft Graph v1.0 the ``teams`` connector uses, written from Graph's documentation
(each route's docstring cites its page): a team's channels (paged with
``@odata.nextLink``), posting a root message, reading it back and soft-deleting it, with
Graph's error bodies (``{"error": {"code", "message", "innerError"}}``), throttling (429
``TooManyRequests`` with ``Retry-After``) and three kinds of token: delegated with every
permission, delegated with only ``Channel.ReadBasic.All`` (403 on writes), and
application tokens (401 on a post, as Graph refuses app-only posts). Serve it with
:class:`reversi_core.testing.FakeServer` and point the connector at it::

    from reversi_core.testing import FakeServer
    from reversi_connector_teams import TeamsConnector
    from reversi_connector_teams.testing import FakeGraph, GENERAL, TEAM_ID, seed_example

    fake = FakeGraph(token="delegated-test-token")
    seed_example(fake)
    with FakeServer(fake) as server:
        teams = TeamsConnector("delegated-test-token", base_url=fake.base_url(server))
        posted = await teams.call("teams.post_message",
                                  {"team_id": TEAM_ID, "channel_id": GENERAL, "content": "Hi"})
        assert fake.message(TEAM_ID, GENERAL, posted["id"]).content == "Hi"

What the fake does not model: replies, reactions, mentions, hosted contents, message
edits through the API (:meth:`FakeGraph.edit_message` is a person's edit in Teams),
private and shared channel membership, ``$filter``/``$select``, and the real tenant's
policies (who may delete whose message). Messages are Graph's shape; the texts
of the 404 answers and of the 401 for an application token's soft-delete are the fake's
own (Graph's documentation names those cases, not their wording). Its answers and the
connector's request bodies are checked against the JSON Schemas derived from Graph's
metadata in the package's tests (docs/connectors/teams.md, "The second oracle").

:func:`certification_fixture` opts the connector into the certification suite
(docs/certification-guide.md): every check applies to teams but ``dependency_block``,
which the suite finds not applicable by itself (no tool declares ``requires``); the
concurrent-change check edits the posted message (:func:`concurrent_change`).
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
    Example,
    ExampleContext,
    Failure,
    FakeServer,
    LiveScenario,
    Residue,
)

from ._fake import (
    APP_ONLY_POST,
    DEFAULT_USER,
    MESSAGE_IDS_START,
    FakeChannel,
    FakeGraph,
    FakeMessage,
    FakeTeam,
)
from ._live import (
    LIVE_CHANNEL_VARIABLE,
    LIVE_SUMMARY,
    LIVE_TEAM_VARIABLE,
    LIVE_VARIABLES,
    live_scenario,
)
from .connector import TeamsConnector

__all__ = [
    "APP_ONLY_POST",
    "CERTIFICATION_TOKEN",
    "DEFAULT_USER",
    "EXAMPLES",
    "FAILURES",
    "GENERAL",
    "LIMIT",
    "LIVE",
    "MESSAGE_IDS_START",
    "MESSAGE_STAYS_SOFT_DELETED",
    "PATIENCE",
    "RANDOM",
    "RELEASES",
    "SANDBOX_CHANNEL",
    "SANDBOX_TEAM_ID",
    "TEAM_ID",
    "FakeChannel",
    "FakeGraph",
    "FakeMessage",
    "FakeTeam",
    "certification_fixture",
    "concurrent_change",
    "graph_backend",
    "seed_example",
]

CERTIFICATION_TOKEN = "eyJ0eXAiOiJKV1QiLCJub25jZSI6InJldmVyc2kifQ.certification.delegated"  # noqa: S105 - made up
"""The (delegated) token the certification fixture gives the fake and the connector."""

TEAM_ID = "fbe2bf47-16c8-47cf-b4a5-4b9b187c508b"
"""The example team :func:`seed_example` makes."""
GENERAL = "19:561fbdbbfca848a484f0a6f00ce9dbbd@thread.tacv2"
"""Its General channel."""
RELEASES = "19:7d2e1c0f6b5a4e3d9c8b7a6f5e4d3c2b@thread.tacv2"
"""A second channel of the example team."""
RANDOM = "19:0f1e2d3c4b5a69788796a5b4c3d2e1f0@thread.tacv2"
"""A third (private) channel of the example team."""
SANDBOX_TEAM_ID = "3c1f7a52-9d0e-4b8a-a6f1-2e5d7c9b0a14"
"""A second example team with a single channel (the live scenario's on the fake: one page)."""
SANDBOX_CHANNEL = "19:5a4b3c2d1e0f49a8b7c6d5e4f3a2b1c0@thread.tacv2"
"""The channel of :data:`SANDBOX_TEAM_ID`."""
UNKNOWN_TEAM = "00000000-0000-0000-0000-000000000000"
"""A team id the fake does not know."""
LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""
PAGE_SIZE = 2
"""Channels per page in the certification backend, so that listing follows a next link."""


def seed_example(fake: FakeGraph) -> dict[str, str]:
    """Put the example state in ``fake``; return the ids of the seeded messages.

    Team :data:`TEAM_ID` ("Platform") with channels General (:data:`GENERAL`), Releases
    (:data:`RELEASES`) and a private one (:data:`RANDOM`); in General, a message
    ``"Welcome"`` (id under ``"welcome"``) and one already soft-deleted (``"deleted"``).
    """
    fake.add_team(TEAM_ID, "Platform")
    fake.add_channel(TEAM_ID, GENERAL, "General", description="Everything about the platform")
    fake.add_channel(TEAM_ID, RELEASES, "Releases")
    fake.add_channel(TEAM_ID, RANDOM, "Random", membership_type="private")
    welcome = fake.add_message(TEAM_ID, GENERAL, "Welcome")
    gone = fake.add_message(TEAM_ID, GENERAL, "Oops", deleted=True)
    fake.add_team(SANDBOX_TEAM_ID, "Sandbox")
    fake.add_channel(SANDBOX_TEAM_ID, SANDBOX_CHANNEL, "General")
    return {"welcome": welcome.id, "deleted": gone.id}


WELCOME_ID = str(MESSAGE_IDS_START)
"""The id of the message :func:`seed_example` posts first (in a fresh fake)."""
DELETED_ID = str(MESSAGE_IDS_START + 1)
"""The id of the soft-deleted message :func:`seed_example` puts in (in a fresh fake)."""


@contextmanager
def graph_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeGraph` (token :data:`CERTIFICATION_TOKEN`, channels paged by 2) on a fresh port."""
    with FakeServer(FakeGraph(token=CERTIFICATION_TOKEN, channel_page_size=PAGE_SIZE)) as server:
        yield server


def _fake(server: FakeServer) -> FakeGraph:
    app = server.app
    if not isinstance(app, FakeGraph):
        raise TypeError(f"the server does not serve a FakeGraph but a {type(app).__name__}")
    return app


def _seed(server: FakeServer) -> None:
    seed_example(_fake(server))


def _build_with_timeout(server: FakeServer, seconds: float) -> TeamsConnector:
    return TeamsConnector(
        CERTIFICATION_TOKEN,
        base_url=_fake(server).base_url(server),
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


def _in(channel: str = GENERAL, **more: Any) -> dict[str, Any]:
    return {"team_id": TEAM_ID, "channel_id": channel, **more}


def _undo_args(posted: Mapping[str, Any]) -> dict[str, Any]:
    """delete_message's arguments, as post_message's compensation map makes them."""
    return {
        "team_id": posted["team_id"],
        "channel_id": posted["channel_id"],
        "message_id": posted["id"],
        "subject_sha256": posted["subject_sha256"],
        "content_sha256": posted["content_sha256"],
    }


async def _delete_new_message(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    posted = await ctx.call("teams.post_message", _in(RELEASES, content="To be deleted"))
    return _undo_args(posted)


async def _delete_after_someone_edited(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    posted = await ctx.call("teams.post_message", _in(RELEASES, content="Deploying at 5"))
    _fake(ctx.handle).edit_message(TEAM_ID, RELEASES, posted["id"], content="Deploying at 6")
    return _undo_args(posted)


EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "teams.list_channels": [{"team_id": TEAM_ID}],
    "teams.post_message": [
        _in(content="Build 42 is green."),
        _in(
            RELEASES,
            content="<p>Release <b>1.4</b> is out: <a href=\"https://example.com/r\">notes</a></p>",
            content_type="html",
            subject="Release 1.4",
            importance="high",
        ),
    ],
    "teams.delete_message": [
        _in(message_id=WELCOME_ID),
        _delete_new_message,
        _in(message_id=DELETED_ID),
    ],
}

FAILURES: Mapping[str, list[Failure]] = {
    "teams.list_channels": [Failure({"team_id": UNKNOWN_TEAM}, code="NotFound", status=404)],
    "teams.post_message": [
        Failure(_in("19:doesnotexist@thread.tacv2", content="x"), code="NotFound", status=404),
    ],
    "teams.delete_message": [
        Failure(_in(message_id="42"), code="NotFound", status=404),
        Failure(_delete_after_someone_edited, code="changed_since"),
    ],
}
"""Calls Graph turns down, each with its status and Graph's code: 404 ``NotFound`` for an
unknown team, channel or message; and the undo of a post whose message someone edited
since (``changed_since``, no status: Graph answered the read 200). A blank message, which
Graph answers 400, never reaches it: the arguments refuse it."""


def _without_soft_deleted_posts(fingerprint: Any) -> Any:
    for team in fingerprint["teams"].values():
        for channel in team["channels"].values():
            channel["messages"] = {
                mid: m
                for mid, m in channel["messages"].items()
                if not (m["origin"] == "api" and m["deleted"])
            }
    return fingerprint


MESSAGE_STAYS_SOFT_DELETED = Residue(
    reason="Graph cannot purge a channel message: the undo soft-deletes it, so members see a "
    "'message deleted' placeholder where it was and compliance exports keep it",
    normalise=_without_soft_deleted_posts,
)
"""post_message's residue: messages the API posted that are now soft-deleted are ignored."""

def concurrent_change(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange | None:
    """After teams.post_message, its sender edits the message in Teams (in the fake itself).

    The undo must then keep the message, saying "someone edited the message"; ``revert``
    puts the posted text back (the message stays marked edited, as in Teams). ``None`` for
    any other tool (they have no undo).
    """
    if tool != "teams.post_message":
        return None
    fake = _fake(server)
    team, channel, message = result["team_id"], result["channel_id"], result["id"]
    posted = fake.message(team, channel, message).content
    fake.edit_message(team, channel, message, content=posted + " (edited: the time moved)")
    return ConcurrentChange(
        what="someone edited the message",
        revert=lambda: fake.edit_message(team, channel, message, content=posted),
    )


LIVE = LiveScenario(
    name="post-and-soft-delete",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {LIVE_TEAM_VARIABLE: SANDBOX_TEAM_ID, LIVE_CHANNEL_VARIABLE: SANDBOX_CHANNEL},
)
"""teams's live scenario (:mod:`reversi_connector_teams._live`): ``nox -s live -- teams``."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The teams connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of Microsoft Graph v1.0 (team channels and channel messages), "
        "faults included",
        command_line=lambda server: (
            {"TEAMS_TOKEN": CERTIFICATION_TOKEN, "TEAMS_BASE_URL": _fake(server).base_url(server)},
            [],
        ),
        backend=graph_backend,
        seed=_seed,
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        residue={"teams.post_message": MESSAGE_STAYS_SOFT_DELETED},
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
        live=LIVE,
        concurrent_change=concurrent_change,
    )
