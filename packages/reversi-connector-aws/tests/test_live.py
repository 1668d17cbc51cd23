"""aws's live scenario: what it leaves on the fake, and its cassette as an oracle.

The cassette in tests/cassettes/ was recorded against the fake (``python scripts/live.py
aws --test-backend``): no AWS credentials are available to this project. The contract
(test_contract.py) replays it; here connectors changed on purpose must fail it.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from reversi_connector_aws import AwsConnector
from reversi_connector_aws._args import PutObjectArgs
from reversi_connector_aws.testing import (
    ACCESS_KEY,
    BUCKET,
    LIVE,
    REGION,
    SECRET_KEY,
    FakeS3,
    seed_example,
    without_backups,
)
from reversi_core.testing import CassetteMismatch, FakeServer, replay_cassette, run_live

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"

pytestmark = pytest.mark.anyio


async def test_the_scenario_leaves_only_its_backups(tmp_path: Path) -> None:
    fake = FakeS3(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)
    seed_example(fake)
    before = fake.snapshot()
    with FakeServer(fake) as server:
        environ = {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL_S3": server.url,
            "REVERSI_LIVE_AWS_BUCKET": BUCKET,
        }
        outcome = await run_live(AwsConnector, LIVE, environ, data_dir=tmp_path, log=lambda _l: None)
    assert outcome.steps == 4
    after = fake.snapshot()
    assert len(after["buckets"][BUCKET]["backups"]) == 2  # the first note, the odd key
    assert without_backups(after) == without_backups(before)


async def test_the_shipped_cassette_replays_offline() -> None:
    report = await replay_cassette(AwsConnector, LIVE, CASSETTE)
    assert report.exchanges == len(report.sent) == 32
    odd = urllib.parse.quote("odd name +%?#", safe="")
    assert f"PUT /{BUCKET}/reversi-live/cassette00/{odd}/%2E/%C3%BCn%C3%AF.bin" in report.sent


class FoldsDotSegments(AwsConnector):
    """Sends a key's ``.`` segment as it is, which an HTTP stack folds away: another key."""

    def _where(self, bucket: str, key: str | None) -> tuple[str | None, str]:
        root, path = super()._where(bucket, key)
        return root, path.replace("/%2E/", "/./")


class WritesText(AwsConnector):
    """Decodes base64 content as text before sending it: other bytes on the wire."""

    def _decode(self, args: PutObjectArgs) -> bytes:
        return super()._decode(args).decode("latin-1").encode("utf-8")


@pytest.mark.parametrize(
    ("changed", "differing"), [(FoldsDotSegments, "differing in path"), (WritesText, "differing in body")]
)
async def test_a_connector_changed_on_purpose_fails_the_replay(
    changed: type[AwsConnector], differing: str
) -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(AwsConnector, LIVE, CASSETTE, connector_class=changed)
    assert any(differing in p for p in failed.value.problems), failed.value.problems


async def test_backup_keys_are_made_anew_each_run_yet_replay() -> None:
    """The backups' uuid4 differ from the recording's, and the replay still matches them
    (the scenario declares them volatile): proof that the replay did not reuse them."""
    recorded = CASSETTE.read_text(encoding="utf-8")
    report = await replay_cassette(AwsConnector, LIVE, CASSETTE)
    backups = [s for s in report.sent if "/.reversi-backups/" in s]
    assert len(backups) == 4  # two copies made, each read back by its restore
    assert all(s.rsplit("/", 1)[1] not in recorded for s in backups)
