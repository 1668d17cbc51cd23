"""gcp's live scenario: what it leaves on the fake, and its cassette as an oracle.

The cassette in tests/cassettes/ was recorded against the fake (``python scripts/live.py
gcp --test-backend``): no Google credentials are available to this project. The
contract (test_contract.py) replays it; here connectors changed on purpose must fail it.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from reversi_connector_gcp import GcpConnector
from reversi_connector_gcp.connector import _Meta
from reversi_connector_gcp.testing import (
    BUCKET,
    LIVE,
    TOKEN,
    FakeGCS,
    seed_example,
    without_backups,
)
from reversi_core.connector import CallContext
from reversi_core.http import HttpResponse
from reversi_core.testing import CassetteMismatch, FakeServer, replay_cassette, run_live

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"

pytestmark = pytest.mark.anyio


async def test_the_scenario_leaves_only_its_backups(tmp_path: Path) -> None:
    fake = FakeGCS(token=TOKEN)
    seed_example(fake)
    before = fake.snapshot()
    with FakeServer(fake) as server:
        environ = {"GCP_ACCESS_TOKEN": TOKEN, "GCP_STORAGE_URL": server.url, "REVERSI_LIVE_GCP_BUCKET": BUCKET}
        outcome = await run_live(GcpConnector, LIVE, environ, data_dir=tmp_path, log=lambda _l: None)
    assert outcome.steps == 4
    after = fake.snapshot()
    assert len(after["buckets"][BUCKET]["backups"]) == 2  # the first note, the odd object
    assert without_backups(after) == without_backups(before)


async def test_the_shipped_cassette_replays_offline() -> None:
    report = await replay_cassette(GcpConnector, LIVE, CASSETTE)
    assert report.exchanges == len(report.sent) == 38
    odd = urllib.parse.quote("reversi-live/cassette00/odd name +%?#/./ünï.bin", safe="")
    assert any(s.startswith(f"DELETE /storage/v1/b/{BUCKET}/o/{odd}?ifGenerationMatch=") for s in report.sent)
    backups = [s for s in report.sent if "/o/.reversi-backups%2F" in s]
    assert backups  # made anew in the replay, matched as the scenario's volatile part
    recorded = CASSETTE.read_text(encoding="utf-8")
    assert all(s.split(".reversi-backups%2F", 1)[1][:36] not in recorded for s in backups)


class KeepsSlashes(GcpConnector):
    """Reads an object with the ``/`` of its name left unencoded: another URL."""

    async def _meta(self, ctx: CallContext, bucket: str, name: str) -> _Meta | None:
        path = f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='/')}"
        resp = await self.request(ctx, "GET", path, ok_statuses=(404,))
        return None if resp.status == 404 else self._meta_of(resp, wrote=False)


class UploadsAsBinary(GcpConnector):
    """Labels every upload application/octet-stream, whatever the call said."""

    async def _upload(
        self, ctx: CallContext, bucket: str, name: str, data: bytes, content_type: str, if_generation: str
    ) -> HttpResponse:
        return await super()._upload(ctx, bucket, name, data, "application/octet-stream", if_generation)


@pytest.mark.parametrize(
    ("changed", "differing"), [(KeepsSlashes, "differing in path"), (UploadsAsBinary, "differing in body")]
)
async def test_a_connector_changed_on_purpose_fails_the_replay(
    changed: type[GcpConnector], differing: str
) -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(GcpConnector, LIVE, CASSETTE, connector_class=changed)
    assert any(differing in p for p in failed.value.problems), failed.value.problems
