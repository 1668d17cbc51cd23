"""gcalendar's live scenario: its cassette as an oracle, which a changed connector fails.

The cassette in tests/cassettes/ was recorded against the fake (``python scripts/live.py
gcalendar --test-backend``): no Google credentials are available to this project yet. The
contract (test_contract.py) replays it; here connectors changed on purpose must fail it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector_gcalendar import GcalendarConnector, connector
from reversi_connector_gcalendar.testing import LIVE
from reversi_core.testing import CassetteMismatch, replay_cassette

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"

pytestmark = pytest.mark.anyio


async def test_the_cassette_replays(tmp_path: Path) -> None:
    report = await replay_cassette(GcalendarConnector, LIVE, CASSETTE, data_dir=tmp_path)
    # create, update, get; the rollback: the restore's PATCH, then the delete under the
    # creation's ETag (412: the update moved it on), the read, the delete; the check's get
    assert report.exchanges == 10


async def test_a_connector_that_would_send_emails_fails_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connector, "NO_EMAILS", {"sendUpdates": "all"})
    with pytest.raises(CassetteMismatch, match="sendUpdates"):
        await replay_cassette(GcalendarConnector, LIVE, CASSETTE, data_dir=tmp_path)


async def test_a_restore_without_its_precondition_fails_the_replay(tmp_path: Path) -> None:
    class NoPreviousCheck(GcalendarConnector):
        async def restore_event(self, args, ctx):  # type: ignore[no-untyped-def, override]
            return await super().restore_event(args.model_copy(update={"etag": None}), ctx)

    with pytest.raises(CassetteMismatch, match="GET"):
        await replay_cassette(
            GcalendarConnector, LIVE, CASSETTE, connector_class=NoPreviousCheck, data_dir=tmp_path
        )


async def test_a_delete_without_its_precondition_fails_the_replay(tmp_path: Path) -> None:
    class Blind(GcalendarConnector):
        async def delete_event(self, args, ctx):  # type: ignore[no-untyped-def, override]
            return await super().delete_event(args.model_copy(update={"etag": None}), ctx)

    with pytest.raises(CassetteMismatch, match="never sent GET"):
        await replay_cassette(GcalendarConnector, LIVE, CASSETTE, connector_class=Blind, data_dir=tmp_path)
