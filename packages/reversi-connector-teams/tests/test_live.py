"""teams's live scenario: its cassette as an oracle, which a changed connector fails.

The cassette in tests/cassettes/ was recorded against the fake (``python scripts/live.py
teams --test-backend``): no Microsoft tenant is available to this project yet. The
contract (test_contract.py) replays it; here a connector changed on purpose must fail it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector_teams import TeamsConnector
from reversi_connector_teams.testing import LIVE
from reversi_core.http import url_path
from reversi_core.testing import CassetteMismatch, replay_cassette

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"

pytestmark = pytest.mark.anyio


async def test_the_cassette_replays(tmp_path: Path) -> None:
    report = await replay_cassette(TeamsConnector, LIVE, CASSETTE, data_dir=tmp_path)
    assert report.exchanges == 5  # list, post, the undo's read and soft-delete, the second delete's read


async def test_a_connector_that_posts_another_body_fails_the_replay(tmp_path: Path) -> None:
    class TextOnly(TeamsConnector):
        async def post_message(self, args, ctx):  # type: ignore[no-untyped-def, override]
            return await super().post_message(args.model_copy(update={"content_type": "text"}), ctx)

    with pytest.raises(CassetteMismatch, match="POST"):
        await replay_cassette(TeamsConnector, LIVE, CASSETTE, connector_class=TextOnly, data_dir=tmp_path)


async def test_an_undo_that_does_not_read_the_message_first_fails_the_replay(tmp_path: Path) -> None:
    class Blind(TeamsConnector):
        async def delete_message(self, args, ctx):  # type: ignore[no-untyped-def, override]
            path = url_path(
                "/teams/{t}/channels/{c}/messages/{m}/softDelete",
                t=args.team_id, c=args.channel_id, m=args.message_id,
            )
            await self.request(ctx, "POST", path)
            return {"team_id": args.team_id, "channel_id": args.channel_id, "message_id": args.message_id,
                    "already_deleted": False}

    with pytest.raises(CassetteMismatch, match="never sent GET"):
        await replay_cassette(TeamsConnector, LIVE, CASSETTE, connector_class=Blind, data_dir=tmp_path)
