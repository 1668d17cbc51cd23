"""kubernetes's live scenario: what it does on the fake, and its cassette as an oracle.

The cassette in tests/cassettes/ was recorded against the fake over TLS (``python
scripts/live.py kubernetes --test-backend``): no cluster can be had here. The contract
(test_contract.py) replays it and records it afresh; here the scenario's requests are
checked one by one, and connectors changed on purpose must fail the replay.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reversi_connector_kubernetes import KubernetesConnector
from reversi_connector_kubernetes.testing import (
    LIVE,
    LIVE_TOOLS,
    RBAC,
    FakeKubernetes,
    seed_example,
)
from reversi_core.connector import CallContext
from reversi_core.http import HttpResponse
from reversi_core.testing import (
    CassetteMismatch,
    FakeServer,
    LiveCheckFailed,
    replay_cassette,
    run_live,
)

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"
TOKEN = "kube-liveScenarioToken-0123456789abcdef"
SCALE = "/apis/apps/v1/namespaces/default/deployments/web/scale"


def _environ(server: FakeServer, **more: str) -> dict[str, str]:
    return {
        "KUBE_API_SERVER": server.url,
        "KUBE_TOKEN": TOKEN,
        "KUBE_CA_CERT": str(server.ca_path),
        "REVERSI_LIVE_KUBE_NAMESPACE": "default",
        "REVERSI_LIVE_KUBE_DEPLOYMENT": "web",
        **more,
    }


@pytest.mark.anyio
async def test_the_scenario_leaves_the_cluster_as_it_was(tmp_path: Path) -> None:
    fake = FakeKubernetes(token=TOKEN)
    seed_example(fake)
    before = fake.snapshot()
    lines: list[str] = []
    with FakeServer(fake, tls=True) as server:
        outcome = await run_live(KubernetesConnector, LIVE, _environ(server), data_dir=tmp_path,
                                 log=lines.append)
        sent = [(r.method, r.path, r.body) for r in server.requests]
    assert (outcome.steps, len(outcome.runs)) == (2, 1)
    assert fake.snapshot() == before  # the scale undone, the config map gone
    patches = [json.loads(body) for method, path, body in sent if (method, path) == ("PATCH", SCALE)]
    assert [p["spec"] for p in patches] == [{"replicas": 4}, {"replicas": 3}]
    assert all(p["metadata"]["resourceVersion"] and p["metadata"]["uid"] for p in patches)
    deletes = [json.loads(body) for method, _, body in sent if method == "DELETE"]
    assert len(deletes) == 1
    assert set(deletes[0]["preconditions"]) == {"uid", "resourceVersion"}
    assert any(line.startswith("scaled deployment default/web to 4; created config map "
                               "reversi-live-") for line in lines), lines


@pytest.mark.anyio
async def test_the_role_of_the_scenario_s_tools_is_enough_for_it(tmp_path: Path) -> None:
    """The Role docs/connectors/kubernetes.md gives the live token (role(LIVE_TOOLS)) suffices."""
    fake = FakeKubernetes(token="kube-admin-token-notTheLiveOne-0000",
                          grants={TOKEN: [r for t in LIVE_TOOLS for r in RBAC[t]]})
    seed_example(fake)
    with FakeServer(fake, tls=True) as server:
        outcome = await run_live(KubernetesConnector, LIVE, _environ(server), data_dir=tmp_path,
                                 log=lambda _line: None)
    assert outcome.steps == 2


@pytest.mark.anyio
async def test_the_scenario_fails_on_a_deployment_someone_paused(tmp_path: Path) -> None:
    fake = FakeKubernetes(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake, tls=True) as server:
        with pytest.raises(LiveCheckFailed, match="deployment default/frozen not to be paused"):
            await run_live(KubernetesConnector, LIVE,
                           _environ(server, REVERSI_LIVE_KUBE_DEPLOYMENT="frozen"),
                           data_dir=tmp_path, log=lambda _line: None)
        assert [r.method for r in server.requests] == ["GET"]  # nothing was changed


class PatchesWithoutAPrecondition(KubernetesConnector):
    """Every scale patch leaves out the resourceVersion it read (a blind overwrite)."""

    async def _patch(
        self, ctx: CallContext, path: str, body: Any, patch_type: str
    ) -> HttpResponse:
        blind = {**body, "metadata": {k: v for k, v in body.get("metadata", {}).items()
                                      if k != "resourceVersion"}}
        return await super()._patch(ctx, path, blind, patch_type)


class KeepsTheConfigMap(KubernetesConnector):
    """delete_configmap reads the config map but never sends its DELETE (as if it were gone)."""

    async def request(self, ctx: CallContext, method: str, path: str, **options: Any) -> HttpResponse:
        if method == "DELETE":
            return HttpResponse(status=404, headers={}, json=None, text="")
        return await super().request(ctx, method, path, **options)


class CreatesInAnotherNamespace(KubernetesConnector):
    """create_configmap posts to another namespace than the one asked for."""

    async def request(self, ctx: CallContext, method: str, path: str, **options: Any) -> HttpResponse:
        if method == "POST":
            path = path.replace("/namespaces/default/", "/namespaces/kube-system/")
        return await super().request(ctx, method, path, **options)


@pytest.mark.anyio
async def test_the_shipped_cassette_replays_offline() -> None:
    report = await replay_cassette(KubernetesConnector, LIVE, CASSETTE)
    assert report.exchanges == 13
    assert report.sent.count(f"PATCH {SCALE}") == 2
    assert "DELETE /api/v1/namespaces/default/configmaps/reversi-live-cassette00" in report.sent
    assert report.sent.count("POST /api/v1/namespaces/default/configmaps") == 2  # the 409 too


@pytest.mark.anyio
async def test_a_patch_without_its_precondition_fails_the_replay() -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(KubernetesConnector, LIVE, CASSETTE,
                              connector_class=PatchesWithoutAPrecondition)
    first = failed.value.problems[0]
    assert first.startswith(f"the connector sent PATCH {SCALE}, which the cassette does not hold"), first
    assert "resourceVersion" in first


@pytest.mark.anyio
async def test_an_undo_that_deletes_nothing_fails_the_replay() -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(KubernetesConnector, LIVE, CASSETTE, connector_class=KeepsTheConfigMap)
    assert failed.value.problems == [
        "the connector never sent DELETE /api/v1/namespaces/default/configmaps/reversi-live-cassette00 "
        "(recorded exchange 9)"
    ]


@pytest.mark.anyio
async def test_a_changed_path_fails_the_replay() -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(KubernetesConnector, LIVE, CASSETTE, connector_class=CreatesInAnotherNamespace)
    assert failed.value.problems[0].startswith(
        "the connector sent POST /api/v1/namespaces/kube-system/configmaps, which the cassette does "
        "not hold (closest recorded: POST /api/v1/namespaces/default/configmaps, differing in path"
    ), failed.value.problems
