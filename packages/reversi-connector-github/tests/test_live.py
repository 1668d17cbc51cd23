"""github's live scenario: what it leaves on the fake, and its cassette as an oracle.

The cassette in tests/cassettes/ was recorded against the fake (``python scripts/live.py
github --test-backend``): no GitHub credentials are available to this project yet. The
contract (test_contract.py) replays it; here connectors changed on purpose must fail it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reversi_connector_github import GithubConnector
from reversi_connector_github.testing import LIVE, OWNER, REPO, FakeGitHub, seed_example
from reversi_core.connector import CallContext
from reversi_core.testing import CassetteMismatch, FakeServer, replay_cassette, run_live

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"
TOKEN = "ghp_liveScenarioToken_0123456789abcdef"


@pytest.mark.anyio
async def test_the_scenario_leaves_only_the_documented_residue(tmp_path: Path) -> None:
    fake = FakeGitHub(token=TOKEN)
    seed_example(fake)
    before = fake.snapshot()["repos"][f"{OWNER}/{REPO}"]
    lines: list[str] = []
    with FakeServer(fake) as server:
        environ = {
            "GITHUB_TOKEN": TOKEN,
            "GITHUB_BASE_URL": fake.base_url(server),
            "REVERSI_LIVE_GITHUB_REPO": f"{OWNER}/{REPO}",
        }
        outcome = await run_live(GithubConnector, LIVE, environ, data_dir=tmp_path, log=lines.append)
        methods = [f"{r.method} {r.path}" for r in server.requests]
    assert outcome.steps == 4
    repo = fake.repo(OWNER, REPO)
    issue = repo.issues[3]
    assert issue.title.startswith("Reversi live check ")
    assert (issue.state, issue.state_reason, issue.labels, issue.comments) == (
        "closed",
        "not_planned",
        [],
        [],
    )
    after = fake.snapshot()["repos"][f"{OWNER}/{REPO}"]
    assert after["branches"] == before["branches"]  # the scenario's branch is gone
    assert after["issues"]["1"] == before["issues"]["1"]
    assert set(after["labels"]) - set(before["labels"]) == {"reversi-live"}  # defined once, stays
    assert methods.count("POST /repos/octo/hello/git/refs") == 1
    assert f"opened issue #{issue.number}" in lines


def _is_close(method: str, path: str) -> bool:
    return method == "PATCH" and path.startswith("/repos/octo/hello/issues/")


class ClosesElsewhere(GithubConnector):
    """close_issue sends its PATCH to another path."""

    async def request(self, ctx: CallContext, method: str, path: str, **options: Any) -> Any:
        if _is_close(method, path):
            path += "/state"
        return await super().request(ctx, method, path, **options)


class ClosesAsCompleted(GithubConnector):
    """close_issue sends another state_reason than the one recorded."""

    async def request(self, ctx: CallContext, method: str, path: str, **options: Any) -> Any:
        if _is_close(method, path):
            options["json"] = {"state": "closed", "state_reason": "completed"}
        return await super().request(ctx, method, path, **options)


class TrustsItsLabels(GithubConnector):
    """add_labels no longer reads the issue's labels before adding."""

    async def _labels_of(self, ctx: CallContext, path: str) -> list[str]:
        return []


@pytest.mark.anyio
async def test_the_shipped_cassette_replays_offline() -> None:
    report = await replay_cassette(GithubConnector, LIVE, CASSETTE)
    assert report.exchanges == 17
    assert report.sent[0] == "POST /repos/octo/hello/issues"
    assert report.sent.count("DELETE /repos/octo/hello/git/refs/heads/reversi-live/cassette00") == 2


@pytest.mark.anyio
async def test_a_changed_path_fails_the_replay() -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(GithubConnector, LIVE, CASSETTE, connector_class=ClosesElsewhere)
    assert failed.value.problems[0].startswith(
        "the connector sent PATCH /repos/octo/hello/issues/3/state, which the cassette does not "
        "hold (closest recorded: PATCH /repos/octo/hello/issues/3, differing in path"
    ), failed.value.problems
    assert "the connector never sent PATCH /repos/octo/hello/issues/3 (recorded exchange 14)" in (
        failed.value.problems
    )


@pytest.mark.anyio
async def test_a_changed_body_field_fails_the_replay() -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(GithubConnector, LIVE, CASSETTE, connector_class=ClosesAsCompleted)
    first = failed.value.problems[0]
    assert first.startswith(
        "the connector sent PATCH /repos/octo/hello/issues/3, which the cassette does not hold"
    ), first
    assert '"completed"' in first
    assert '"not_planned"' in first


@pytest.mark.anyio
async def test_a_missing_request_fails_the_replay() -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(GithubConnector, LIVE, CASSETTE, connector_class=TrustsItsLabels)
    assert failed.value.problems == [
        "the connector never sent GET /repos/octo/hello/issues/3/labels?per_page=100&page=1 "
        "(recorded exchange 3)"
    ]
