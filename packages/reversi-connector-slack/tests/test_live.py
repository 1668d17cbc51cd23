"""slack's live scenario: what it leaves on the fake, and its cassette as an oracle.

The cassette in tests/cassettes/ was recorded against the fake (``python scripts/live.py
slack --test-backend``): no Slack credentials are available to this project. The contract
(test_contract.py) replays it; here connectors changed on purpose must fail it.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from reversi_connector_slack import SlackConnector
from reversi_connector_slack.testing import GENERAL, LIVE, FakeSlack, seed_example
from reversi_core.testing import CassetteMismatch, FakeServer, replay_cassette, run_live

pytestmark = pytest.mark.anyio

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"
TOKEN = "xoxb-1111111111-2222222222-liveScenarioToken"


async def test_the_scenario_leaves_the_channel_as_it_was(tmp_path: Path) -> None:
    fake = FakeSlack(token=TOKEN)
    seed_example(fake)
    before = fake.snapshot()
    with FakeServer(fake) as server:
        environ = {
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_BASE_URL": fake.base_url(server),
            "REVERSI_LIVE_SLACK_CHANNEL": GENERAL,
        }
        outcome = await run_live(
            SlackConnector, LIVE, environ, data_dir=tmp_path, log=lambda _: None
        )
        posts = [r for r in server.requests if r.path.endswith("/chat.postMessage")]
    assert outcome.steps == 3
    assert len(posts) == 2
    assert fake.snapshot() == before


class ForgetsTheThread(SlackConnector):
    """post_message drops thread_ts: a reply would land at the top of the channel."""

    post_message = copy.copy(SlackConnector.post_message)
    post_message.body = lambda args: {"channel": args.channel, "text": args.text}


async def test_the_shipped_cassette_replays_and_catches_a_lost_thread() -> None:
    report = await replay_cassette(SlackConnector, LIVE, CASSETTE)
    assert report.exchanges == 10
    assert report.sent.count("POST /api/chat.delete") == 4  # two undos, then two checks
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(SlackConnector, LIVE, CASSETTE, connector_class=ForgetsTheThread)
    # the reply, sent without its thread_ts, is a request the cassette does not hold
    assert failed.value.problems[0].startswith(
        "the connector sent POST /api/chat.postMessage, which the cassette does not hold"
    ), failed.value.problems
    assert "the connector never sent POST /api/chat.postMessage (recorded exchange 2)" in (
        failed.value.problems
    )
