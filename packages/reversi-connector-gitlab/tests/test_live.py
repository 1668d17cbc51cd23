"""gitlab's live scenario: what it leaves on the fake, and its cassette as an oracle.

The cassette in tests/cassettes/ was recorded against the fake (``python scripts/live.py
gitlab --test-backend``): no GitLab credentials are available to this project. The
contract (test_contract.py) replays it; here a connector changed on purpose must fail it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector_gitlab import GitlabConnector
from reversi_connector_gitlab.testing import LIVE, PROJECT, FakeGitLab, seed_example
from reversi_core.http import url_path
from reversi_core.testing import CassetteMismatch, FakeServer, replay_cassette, run_live

pytestmark = pytest.mark.anyio

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"
TOKEN = "glpat-liveScenarioToken-0123456789ab"


async def test_the_scenario_leaves_only_the_closed_issue(tmp_path: Path) -> None:
    fake = FakeGitLab(token=TOKEN)
    seed_example(fake)
    before = fake.snapshot()["projects"][PROJECT]
    with FakeServer(fake) as server:
        environ = {
            "GITLAB_TOKEN": TOKEN,
            "GITLAB_BASE_URL": fake.base_url(server),
            "REVERSI_LIVE_GITLAB_PROJECT": PROJECT,
        }
        outcome = await run_live(
            GitlabConnector, LIVE, environ, data_dir=tmp_path, log=lambda _: None
        )
    assert outcome.steps == 4
    after = fake.snapshot()["projects"][PROJECT]
    assert after["branches"] == before["branches"]
    assert after["issues"]["1"] == before["issues"]["1"]
    new = after["issues"]["3"]
    assert (new["state"], [n["body"] for n in new["notes"]]) == ("closed", ["closed"])


class UnencodedPaths(GitlabConnector):
    """Sends the project's path with raw slashes, as GitLab does not take it."""

    async def request(self, ctx, method, path, **options):  # type: ignore[no-untyped-def]
        raw = path.replace(url_path("{p}", p=PROJECT), PROJECT)
        return await super().request(ctx, method, raw, **options)


async def test_the_shipped_cassette_replays_and_catches_unencoded_paths() -> None:
    report = await replay_cassette(GitlabConnector, LIVE, CASSETTE)
    assert report.exchanges == 17  # the note found gone: its issue read to tell it from a lost one
    assert report.sent[0] == "POST /api/v4/projects/acme%2Fbackend/issues"
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(GitlabConnector, LIVE, CASSETTE, connector_class=UnencodedPaths)
    assert "/projects/acme/backend/issues" in failed.value.problems[0], failed.value.problems
