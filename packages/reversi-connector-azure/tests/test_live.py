"""azure's live scenario: what it leaves on the fake, and its cassette as an oracle.

The cassette in tests/cassettes/ was recorded against the HTTPS fake (``python
scripts/live.py azure --test-backend``): no Azure credentials are available to this
project. The contract (test_contract.py) replays it; here connectors changed on purpose
must fail it.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from reversi_connector_azure import AzureConnector
from reversi_connector_azure.testing import (
    ACCOUNT,
    CONTAINER,
    LIVE,
    TOKEN,
    FakeBlobStorage,
    seed_example,
    without_backups,
)
from reversi_core.connector import CallContext
from reversi_core.http import HttpResponse
from reversi_core.testing import CassetteMismatch, FakeServer, replay_cassette, run_live

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"

pytestmark = pytest.mark.anyio


async def test_the_scenario_leaves_only_its_backups(tmp_path: Path) -> None:
    """Built from the environment alone, SSL_CERT_FILE naming the fake's CA."""
    fake = FakeBlobStorage(token=TOKEN, account=ACCOUNT)
    seed_example(fake)
    before = fake.snapshot()
    with FakeServer(fake, tls=True) as server:
        environ = {
            "AZURE_STORAGE_TOKEN": TOKEN,
            "AZURE_STORAGE_ACCOUNT": ACCOUNT,
            "AZURE_STORAGE_BLOB_ENDPOINT": f"{server.url}/{ACCOUNT}",
            "SSL_CERT_FILE": str(server.ca_path),
            "REVERSI_LIVE_AZURE_CONTAINER": CONTAINER,
        }
        outcome = await run_live(AzureConnector, LIVE, environ, data_dir=tmp_path, log=lambda _l: None)
    assert outcome.steps == 4
    after = fake.snapshot()
    assert len(after["containers"][CONTAINER]["backups"]) == 2  # the first note, the odd blob
    assert without_backups(after) == without_backups(before)


async def test_the_shipped_cassette_replays_offline() -> None:
    report = await replay_cassette(AzureConnector, LIVE, CASSETTE)
    assert report.exchanges == len(report.sent) == 29
    odd = urllib.parse.quote("odd name +%?#", safe="")
    assert f"DELETE /{ACCOUNT}/{CONTAINER}/reversi-live/cassette00/{odd}//%C3%BCn%C3%AF.bin" in report.sent
    backups = [s for s in report.sent if "/.reversi-backups/" in s]
    assert backups  # made anew in the replay, matched as the scenario's volatile part
    recorded = CASSETTE.read_text(encoding="utf-8")
    assert all(s.rsplit("/", 1)[1] not in recorded for s in backups)


class FoldsDoubleSlashes(AzureConnector):
    """Sends ``a//b`` as ``a/b``, as a careless URL join would: another blob."""

    async def _send(self, ctx: CallContext, method: str, path: str, **options: Any) -> HttpResponse:
        return await super()._send(ctx, method, path.replace("//", "/"), **options)


class ListsAnotherPageSize(AzureConnector):
    """Asks List Blobs for another page size than the tool's argument."""

    async def _send(self, ctx: CallContext, method: str, path: str, **options: Any) -> HttpResponse:
        params: Mapping[str, Any] | None = options.pop("params", None)
        if params and params.get("comp") == "list":
            params = {**params, "maxresults": 10}
        return await super()._send(ctx, method, path, params=params, **options)


@pytest.mark.parametrize(
    ("changed", "differing"),
    [(FoldsDoubleSlashes, "differing in path"), (ListsAnotherPageSize, "differing in query")],
)
async def test_a_connector_changed_on_purpose_fails_the_replay(
    changed: type[AzureConnector], differing: str
) -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(AzureConnector, LIVE, CASSETTE, connector_class=changed)
    assert any(differing in p for p in failed.value.problems), failed.value.problems
