"""No compensation overwrites a change someone made after the call: the race, through the engine.

Each restoring compensation is driven as the ``concurrent_change`` certification check
drives it, with this package's :func:`~reversi_connector_kubernetes.testing.concurrent_change`:
forward call, a change through the fake, rollback (``compensation_failed``, the reason
naming the change, the change kept); the change reverted, rollback again (complete, the
backend as before); or, instead of reverting, a person's ``--overwrite`` of that step
(``Run.allow_overwrite``), after which the undo overwrites the change. Then the cases
around it: a deployment deleted and created anew, a config map replaced by another of
the same name, a scale that lands between the undo's read and its write, and two scales
of one deployment in one run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reversi_connector_kubernetes import KubernetesConnector
from reversi_connector_kubernetes.testing import FakeKubernetes, concurrent_change, seed_example
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.journal import RollbackState
from reversi_core.testing import FakeRequest, FakeResponse, FakeServer

NS = {"namespace": "default"}
FORWARD = {
    "kubernetes.scale_deployment": {**NS, "name": "web", "replicas": 5},
    "kubernetes.create_configmap": {**NS, "name": "agent-notes", "data": {"note": "hi"}},
}


def _run(k8s: KubernetesConnector, journal: SQLiteJournal) -> Run:
    return Run.start(journal, registry_for([k8s]), executor=executor_for([k8s]))


def _state(report: Any, seq: int) -> tuple[RollbackState | None, str]:
    step = next(s for s in report.steps if s.seq == seq)
    return step.rollback_state, step.rollback_reason or ""


@pytest.mark.anyio
@pytest.mark.parametrize("tool", sorted(FORWARD))
async def test_a_later_change_is_not_overwritten_until_it_is_reverted(
    tool: str, k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer, tmp_path: Path
) -> None:
    before = fake.snapshot()
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = _run(k8s, journal)
        seq, result = await run.call(tool, FORWARD[tool])
        change = concurrent_change(server, tool, FORWARD[tool], result)
        changed = fake.snapshot()
        assert changed != before

        first = await run.rollback(compensate=compensator_for([k8s]))
        state, reason = _state(first, seq)
        assert not first.complete
        assert state is RollbackState.COMPENSATION_FAILED
        assert change.what in reason
        assert "to undo it anyway: reversi rollback RUN --overwrite STEP" in reason
        assert fake.snapshot() == changed  # their change is still there

        change.revert()
        second = await run.rollback(compensate=compensator_for([k8s]))
        assert second.complete, second.to_json()
        assert fake.snapshot() == before


@pytest.mark.anyio
@pytest.mark.parametrize("tool", sorted(FORWARD))
async def test_a_person_s_overwrite_lets_the_undo_replace_the_later_change(
    tool: str, k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer, tmp_path: Path
) -> None:
    before = fake.snapshot()
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = _run(k8s, journal)
        seq, result = await run.call(tool, FORWARD[tool])
        concurrent_change(server, tool, FORWARD[tool], result)
        refused = await run.rollback(compensate=compensator_for([k8s]))
        assert _state(refused, seq)[0] is RollbackState.COMPENSATION_FAILED
        run.allow_overwrite(seq, by="an operator")
        server.clear_requests()
        forced = await run.rollback(compensate=compensator_for([k8s]))
    assert forced.complete, forced.to_json()
    assert fake.snapshot() == before  # their scale, their edit: overwritten, as decided
    write = next(r for r in server.requests if r.method in ("PATCH", "DELETE"))
    sent = write.json["metadata"] if write.method == "PATCH" else write.json["preconditions"]
    assert sent["resourceVersion"]  # still no blind write: the version just read


@pytest.mark.anyio
async def test_a_deployment_created_anew_under_the_same_name_is_not_scaled(
    k8s: KubernetesConnector, fake: FakeKubernetes, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = _run(k8s, journal)
        seq, _ = await run.call("kubernetes.scale_deployment", FORWARD["kubernetes.scale_deployment"])
        fake.recreate_deployment("default", "web")
        report = await run.rollback(compensate=compensator_for([k8s]))
        state, reason = _state(report, seq)
        assert state is RollbackState.COMPENSATION_FAILED
        assert "it was deleted and created again since (uid" in reason
        assert fake.snapshot()["deployments"]["default/web"]["replicas"] == 5
        run.allow_overwrite(seq, by="an operator")  # the new one is to be scaled back too
        assert (await run.rollback(compensate=compensator_for([k8s]))).complete
    assert fake.snapshot()["deployments"]["default/web"]["replicas"] == 3


@pytest.mark.anyio
async def test_a_config_map_that_took_the_name_later_is_left_alone(
    k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = _run(k8s, journal)
        _, made = await run.call("kubernetes.create_configmap", FORWARD["kubernetes.create_configmap"])
        fake.replace_configmap("default", "agent-notes")
        theirs = fake.object("configmaps", "default", "agent-notes")
        server.clear_requests()
        report = await run.rollback(compensate=compensator_for([k8s]))
        assert report.complete
        assert fake.object("configmaps", "default", "agent-notes") == theirs
        assert [r.method for r in server.requests] == ["GET"]  # no DELETE was sent
        # a person's overwrite is about what the call made: another uid's config map stays
        forced = await k8s.call(
            "kubernetes.delete_configmap", {**NS, "name": "agent-notes", "uid": made["uid"]},
            CallContext(compensation=True, overwrite=True),
        )
    assert (forced["deleted"], forced["replaced"]) == (False, True)
    assert fake.object("configmaps", "default", "agent-notes") == theirs


class _ScaledRightAfterTheRead(FakeKubernetes):
    """A fake in which someone scales ``web`` to 8 just after a scale is read, once armed."""

    armed = False

    def read_scale(self, request: FakeRequest) -> FakeResponse:
        answer = super().read_scale(request)
        if self.armed:
            self.armed = False
            self.set_replicas("default", "web", 8)
        return answer


@pytest.mark.anyio
async def test_a_scale_between_the_undo_s_read_and_its_write_is_not_overwritten(
    token: str, tmp_path: Path
) -> None:
    fake = _ScaledRightAfterTheRead(token=token)
    seed_example(fake)
    with FakeServer(fake, tls=True) as server, SQLiteJournal.open(tmp_path / "data") as journal:
        k8s = KubernetesConnector(api_server=server.url, token=token, ca_cert=server.ca_path)
        run = _run(k8s, journal)
        seq, _ = await run.call("kubernetes.scale_deployment", FORWARD["kubernetes.scale_deployment"])
        fake.armed = True
        report = await run.rollback(compensate=compensator_for([k8s]))
        state, reason = _state(report, seq)
        assert state is RollbackState.COMPENSATION_FAILED
        assert "HTTP 409 (conflict)" in reason
        assert "the object has been modified" in reason
        assert fake.snapshot()["deployments"]["default/web"]["replicas"] == 8
        patches = [r for r in server.requests if r.method == "PATCH"]
        assert patches[-1].json["metadata"]["resourceVersion"]  # the precondition was sent
        # the retried undo reads 8 now, which is not what the call set: refused by count
        again = await run.rollback(compensate=compensator_for([k8s]))
        assert "now has 8 replicas" in _state(again, seq)[1]
        await k8s.aclose()


@pytest.mark.anyio
async def test_two_scales_of_one_deployment_in_a_run_roll_back_to_the_start(
    k8s: KubernetesConnector, fake: FakeKubernetes, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = _run(k8s, journal)
        first, _ = await run.call("kubernetes.scale_deployment", {**NS, "name": "web", "replicas": 5})
        second, _ = await run.call("kubernetes.scale_deployment", {**NS, "name": "web", "replicas": 6})
        assert next(s for s in run.steps() if s.seq == second).requires == [first]
        report = await run.rollback(compensate=compensator_for([k8s]))
    assert report.complete, report.to_json()
    assert sorted(report.compensated_now) == [first, second]
    assert fake.snapshot()["deployments"]["default/web"]["replicas"] == 3


@pytest.mark.anyio
async def test_changes_to_different_objects_are_undone_at_once_and_to_one_newest_first(
    k8s: KubernetesConnector, fake: FakeKubernetes, tmp_path: Path
) -> None:
    before = fake.snapshot()
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = _run(k8s, journal)
        web, _ = await run.call("kubernetes.scale_deployment", {**NS, "name": "web", "replicas": 5})
        worker, _ = await run.call(
            "kubernetes.scale_deployment", {**NS, "name": "worker", "replicas": 4}
        )
        staged, _ = await run.call(
            "kubernetes.scale_deployment", {"namespace": "staging", "name": "web", "replicas": 2}
        )
        notes, _ = await run.call("kubernetes.create_configmap", FORWARD["kubernetes.create_configmap"])
        again, _ = await run.call("kubernetes.scale_deployment", {**NS, "name": "web", "replicas": 6})
        touched = {s.seq: (s.compensation or {}).get("resources") for s in run.steps()}
        report = await run.rollback(compensate=compensator_for([k8s]))
    assert touched == {
        web: ["kubernetes:default/deployments/web"],
        worker: ["kubernetes:default/deployments/worker"],
        staged: ["kubernetes:staging/deployments/web"],
        notes: ["kubernetes:default/configmaps/agent-notes"],
        again: ["kubernetes:default/deployments/web"],
    }
    assert report.complete, report.to_json()
    assert report.waves == [[again, notes, staged, worker], [web]]
    assert fake.snapshot() == before


@pytest.mark.anyio
@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
async def test_the_undo_of_a_scale_that_changed_nothing_leaves_a_later_scale(
    overwrite: bool,
    k8s: KubernetesConnector,
    fake: FakeKubernetes,
    server: FakeServer,
    tmp_path: Path,
) -> None:
    """A scale to the count the deployment had changed nothing, so its undo changes nothing:
    not even a person's ``--overwrite`` puts that count back over someone's later scale."""
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = _run(k8s, journal)
        seq, result = await run.call("kubernetes.scale_deployment", {**NS, "name": "web", "replicas": 3})
        assert result["changed"] is False
        fake.set_replicas("default", "web", 5)  # an autoscaler, later
        if overwrite:
            run.allow_overwrite(seq, by="tester")
        sent = len(server.requests)
        report = await run.rollback(compensate=compensator_for([k8s]))
        assert report.complete, report.to_json()
        assert _state(report, seq)[0] is RollbackState.COMPENSATED
        assert server.requests[sent:] == []  # not even read
    assert fake.object("deployments", "default", "web")["spec"]["replicas"] == 5
