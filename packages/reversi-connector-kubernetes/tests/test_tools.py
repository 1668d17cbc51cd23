"""The kubernetes tools against the fake: each vendor behaviour of the spec, the issue and the API docs."""

from __future__ import annotations

from typing import Any

import pytest

from reversi_connector_kubernetes import (
    MERGE_PATCH,
    RESTARTED_AT,
    STRATEGIC_MERGE_PATCH,
    KubernetesConnector,
)
from reversi_connector_kubernetes.testing import FakeKubernetes
from reversi_core.errors import EffectUncertainError, InvalidArgumentsError, ToolError
from reversi_core.manifest import Approval, Effect
from reversi_core.testing import FakeServer, Fault

NS = {"namespace": "default"}


def at(name: str, **more: Any) -> dict[str, Any]:
    return {**NS, "name": name, **more}


def writes(server: FakeServer) -> list[str]:
    return [f"{r.method} {r.path}" for r in server.requests if r.method != "GET"]


# -- deployments and their scale --------------------------------------------------------


@pytest.mark.anyio
async def test_scale_reads_the_scale_then_merge_patches_it_with_the_read_s_version(
    k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer
) -> None:
    made = await k8s.call("kubernetes.scale_deployment", at("web", replicas=5))
    uid = fake.object("deployments", "default", "web")["metadata"]["uid"]
    assert made == {**at("web"), "previous_replicas": 3, "replicas": 5, "uid": uid,
                    "resource_version": made["resource_version"], "changed": True}
    read, patch = server.requests
    assert (read.method, read.path) == ("GET", "/apis/apps/v1/namespaces/default/deployments/web/scale")
    assert (patch.method, patch.path) == ("PATCH", read.path)
    assert patch.headers["content-type"] == MERGE_PATCH
    version = server.exchanges[0].response.json["metadata"]["resourceVersion"]
    assert patch.json == {"metadata": {"uid": uid, "resourceVersion": version},
                          "spec": {"replicas": 5}}
    assert fake.object("deployments", "default", "web")["spec"]["replicas"] == 5


@pytest.mark.anyio
async def test_scale_to_the_current_count_writes_nothing(
    k8s: KubernetesConnector, server: FakeServer
) -> None:
    made = await k8s.call("kubernetes.scale_deployment", at("web", replicas=3))
    assert (made["previous_replicas"], made["changed"]) == (3, False)
    assert writes(server) == []


@pytest.mark.anyio
async def test_a_scale_to_zero_and_back_reads_an_omitted_count_as_zero(
    k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer
) -> None:
    await k8s.call("kubernetes.scale_deployment", at("worker", replicas=0))
    assert "replicas" not in server.exchanges[-1].response.json["spec"]  # omitempty, as the API
    again = await k8s.call("kubernetes.scale_deployment", at("worker", replicas=2))
    assert again["previous_replicas"] == 0


@pytest.mark.anyio
async def test_a_scale_between_the_read_and_the_patch_is_a_conflict_not_a_lost_update(
    token: str,
) -> None:
    class ScaledRightAfterTheRead(FakeKubernetes):
        def read_scale(self, request: Any) -> Any:
            answer = super().read_scale(request)
            self.set_replicas("default", "web", 4)
            return answer

    fake = ScaledRightAfterTheRead(token=token)
    fake.add_deployment("default", "web", replicas=3)
    with FakeServer(fake, tls=True) as server:
        k8s = KubernetesConnector(api_server=server.url, token=token, ca_cert=server.ca_path)
        with pytest.raises(ToolError) as caught:
            await k8s.call("kubernetes.scale_deployment", at("web", replicas=5))
        await k8s.aclose()
    assert (caught.value.status, caught.value.code) == (409, "conflict")
    assert fake.object("deployments", "default", "web")["spec"]["replicas"] == 4


@pytest.mark.anyio
async def test_the_controller_moves_the_version_after_a_scale_so_the_undo_compares_counts(
    k8s: KubernetesConnector, fake: FakeKubernetes
) -> None:
    """Why restore_replicas does not send scale_deployment's resourceVersion: it is stale at once."""
    made = await k8s.call("kubernetes.scale_deployment", at("web", replicas=5))
    now = fake.object("deployments", "default", "web")
    assert fake.controller  # the default: status follows spec, as on a cluster
    assert now["metadata"]["resourceVersion"] != made["resource_version"]
    restored = await k8s.call("kubernetes.restore_replicas", at(
        "web", replicas=3, expected_replicas=5, uid=made["uid"]))
    assert restored == {**at("web"), "replicas": 3, "restored": True}
    assert fake.object("deployments", "default", "web")["status"]["readyReplicas"] == 3
    twice = await k8s.call("kubernetes.restore_replicas", at(
        "web", replicas=3, expected_replicas=5, uid=made["uid"]))
    assert twice["restored"] is False


@pytest.mark.anyio
async def test_get_deployment_reports_spec_status_and_the_restart_stamp(
    k8s: KubernetesConnector,
) -> None:
    before = await k8s.call("kubernetes.get_deployment", at("web"))
    assert (before["replicas"], before["ready_replicas"], before["restarted_at"]) == (3, 3, None)
    assert before["selector"] == {"app": "web"}
    restarted = await k8s.call("kubernetes.rollout_restart", at("web"))
    after = await k8s.call("kubernetes.get_deployment", at("web"))
    assert after["restarted_at"] == restarted["restarted_at"]
    assert after["generation"] == before["generation"] + 1
    paused = await k8s.call("kubernetes.get_deployment", at("frozen"))
    assert paused["paused"] is True


@pytest.mark.anyio
async def test_rollout_restart_stamps_the_template_like_kubectl(
    k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer
) -> None:
    done = await k8s.call("kubernetes.rollout_restart", at("web"))
    patch = server.requests[-1]
    assert patch.headers["content-type"] == STRATEGIC_MERGE_PATCH
    assert patch.json == {"spec": {"template": {"metadata": {"annotations": {
        RESTARTED_AT: done["restarted_at"]}}}}}
    template = fake.object("deployments", "default", "web")["spec"]["template"]
    assert template["metadata"]["annotations"][RESTARTED_AT] == done["restarted_at"]
    assert template["metadata"]["labels"] == {"app": "web"}  # merged, not replaced
    assert done["restarted_at"].endswith("Z")


@pytest.mark.anyio
async def test_a_paused_deployment_is_not_restarted(
    k8s: KubernetesConnector, server: FakeServer
) -> None:
    with pytest.raises(ToolError, match="is paused") as caught:
        await k8s.call("kubernetes.rollout_restart", at("frozen"))
    assert caught.value.code == "paused"
    assert writes(server) == []


def test_restart_and_pod_deletion_are_irreversible_and_always_need_approval() -> None:
    manifests = {m.name: m for m in KubernetesConnector.manifests()}
    for name in ("kubernetes.rollout_restart", "kubernetes.delete_pod"):
        assert manifests[name].effect is Effect.IRREVERSIBLE
        assert manifests[name].approval is Approval.ALWAYS
        assert manifests[name].compensation is None
    scale = manifests["kubernetes.scale_deployment"]
    assert scale.compensation is not None
    assert scale.compensation.argument_map == {
        "namespace": "args.namespace", "name": "args.name", "replicas": "result.previous_replicas",
        "expected_replicas": "result.replicas", "uid": "result.uid",
    }


# -- pods --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_list_pods_filters_by_labels_and_fields_and_pages(
    k8s: KubernetesConnector, server: FakeServer
) -> None:
    web = await k8s.call("kubernetes.list_pods", {**NS, "label_selector": "app in (web)"})
    assert [p["name"] for p in web["pods"]] == ["web-5d8f9-abcde", "web-5d8f9-fghij"]
    assert web["pods"][0]["owner"] == "ReplicaSet/web-5d8f9"
    assert web["pods"][0]["ready"]
    assert "labelSelector=app+in+%28web%29" in server.requests[-1].target
    done = await k8s.call("kubernetes.list_pods", {**NS, "field_selector": "status.phase!=Running"})
    assert [p["name"] for p in done["pods"]] == ["report-28131"]
    names, token, pages = [], None, 0
    while True:
        page = await k8s.call("kubernetes.list_pods", {**NS, "limit": 3, "continue_token": token}
                              if token else {**NS, "limit": 3})
        names += [p["name"] for p in page["pods"]]
        pages += 1
        token = page["continue_token"]
        if token is None:
            break
        assert page["remaining"] == 1
    assert (pages, len(names)) == (2, 4)
    assert names == sorted(names)


@pytest.mark.anyio
async def test_an_old_continue_token_is_expired(k8s: KubernetesConnector, fake: FakeKubernetes) -> None:
    first = await k8s.call("kubernetes.list_pods", {**NS, "limit": 1})
    fake.compact()
    with pytest.raises(ToolError) as caught:
        await k8s.call("kubernetes.list_pods", {**NS, "limit": 1,
                                                "continue_token": first["continue_token"]})
    assert (caught.value.status, caught.value.code) == (410, "expired")


@pytest.mark.anyio
async def test_delete_pod_sends_its_uid_precondition_and_grace_period(
    k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer
) -> None:
    uid = fake.object("pods", "default", "db-0")["metadata"]["uid"]
    with pytest.raises(ToolError) as other:
        await k8s.call("kubernetes.delete_pod", at("db-0", uid="not-this-one"))
    assert (other.value.status, other.value.code) == (409, "conflict")
    assert fake.object("pods", "default", "db-0") is not None
    gone = await k8s.call("kubernetes.delete_pod", at("db-0", uid=uid, grace_period_seconds=5))
    assert server.requests[-1].json == {"apiVersion": "v1", "kind": "DeleteOptions",
                                        "preconditions": {"uid": uid}, "gracePeriodSeconds": 5}
    assert (gone["uid"], gone["grace_period_seconds"]) == (uid, 5)
    assert gone["deletion_timestamp"]
    plain = await k8s.call("kubernetes.delete_pod", at("report-28131"))
    assert server.requests[-1].body == b""  # no options: no body
    assert plain["grace_period_seconds"] == 30


# -- config maps -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_create_configmap_refuses_a_taken_name_and_leaves_it(
    k8s: KubernetesConnector, fake: FakeKubernetes
) -> None:
    before = fake.object("configmaps", "default", "app-settings")
    with pytest.raises(ToolError) as caught:
        await k8s.call("kubernetes.create_configmap", at("app-settings", data={"mode": "test"}))
    assert (caught.value.status, caught.value.code) == (409, "already_exists")
    assert fake.object("configmaps", "default", "app-settings") == before


@pytest.mark.anyio
async def test_delete_configmap_deletes_only_its_uid_and_an_unedited_one(
    k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer
) -> None:
    made = await k8s.call("kubernetes.create_configmap", at("notes", data={"a": "1"},
                                                          labels={"owner": "agent"}))
    args = at("notes", uid=made["uid"], content_hash=made["content_hash"])
    stored = fake.object("configmaps", "default", "notes")
    deleted = await k8s.call("kubernetes.delete_configmap", args)
    assert deleted == {**at("notes"), "uid": made["uid"], "deleted": True, "replaced": False}
    assert server.requests[-1].json == {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {
        "uid": made["uid"], "resourceVersion": stored["metadata"]["resourceVersion"]}}
    assert fake.object("configmaps", "default", "notes") is None
    again = await k8s.call("kubernetes.delete_configmap", args)
    assert (again["deleted"], again["replaced"]) == (False, False)


@pytest.mark.anyio
async def test_a_config_map_edited_between_the_read_and_the_delete_is_kept(token: str) -> None:
    class EditedRightAfterTheRead(FakeKubernetes):
        def read_configmap(self, request: Any) -> Any:
            answer = super().read_configmap(request)
            if answer.status == 200:
                self.edit_configmap("default", "notes", {"a": "theirs"})
            return answer

    fake = EditedRightAfterTheRead(token=token)
    made = fake.add_configmap("default", "notes", {"a": "1"})
    from reversi_connector_kubernetes import content_hash

    with FakeServer(fake, tls=True) as server:
        k8s = KubernetesConnector(api_server=server.url, token=token, ca_cert=server.ca_path)
        with pytest.raises(ToolError) as caught:
            await k8s.call("kubernetes.delete_configmap", at(
                "notes", uid=made["metadata"]["uid"], content_hash=content_hash(made)))
        await k8s.aclose()
    assert (caught.value.status, caught.value.code) == (409, "conflict")
    assert fake.object("configmaps", "default", "notes")["data"] == {"a": "theirs"}


@pytest.mark.anyio
async def test_a_lost_answer_to_a_delete_is_uncertain_and_running_again_finishes(
    k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer
) -> None:
    made = await k8s.call("kubernetes.create_configmap", at("notes", data={"a": "1"}))
    args = at("notes", uid=made["uid"], content_hash=made["content_hash"])
    server.faults.add(Fault.drop_after_read(apply=True), method="DELETE")
    with pytest.raises(EffectUncertainError):
        await k8s.call("kubernetes.delete_configmap", args)
    assert fake.object("configmaps", "default", "notes") is None
    assert (await k8s.call("kubernetes.delete_configmap", args))["deleted"] is False


# -- arguments: checked before any request ------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "args",
    [
        {"namespace": "Default", "name": "web"},
        {"namespace": "default/../kube-system", "name": "web"},
        {"namespace": "default", "name": "web/scale"},
        {"namespace": "default", "name": "web?watch=true"},
        {"namespace": "default", "name": "web#x"},
        {"namespace": "default", "name": "web%2Fx"},
        {"namespace": "default", "name": ".."},
        {"namespace": "default", "name": "wéb"},
        {"namespace": "default", "name": "web "},
        {"namespace": "a" * 64, "name": "web"},
        {"namespace": "default", "name": "a" * 254},
        {"namespace": "default", "name": "-web"},
        {"namespace": "default.x", "name": "web"},
        {"namespace": "default", "name": "web", "extra": 1},
    ],
)
async def test_names_are_dns_1123_before_any_request(
    k8s: KubernetesConnector, server: FakeServer, args: dict[str, Any]
) -> None:
    with pytest.raises(InvalidArgumentsError):
        await k8s.call("kubernetes.get_deployment", args)
    assert server.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    "extra",
    [
        {"data": {"bad key": "x"}},
        {"data": {"..": "x"}},
        {"data": {"big": "x" * (1024 * 1024)}},
        {"labels": {"app": "a b"}},
        {"labels": {"Bad_Prefix.example/app": "web"}},
        {"labels": {"a" * 64: "x"}},
    ],
)
async def test_config_map_keys_and_labels_are_checked_before_any_request(
    k8s: KubernetesConnector, server: FakeServer, extra: dict[str, Any]
) -> None:
    with pytest.raises(InvalidArgumentsError):
        await k8s.call("kubernetes.create_configmap", at("notes", **extra))
    assert server.requests == []


@pytest.mark.anyio
async def test_dotted_names_are_subdomains_and_reach_exactly_their_object(
    k8s: KubernetesConnector, fake: FakeKubernetes, server: FakeServer
) -> None:
    fake.add_deployment("default", "api.v2", replicas=2)
    read = await k8s.call("kubernetes.get_deployment", at("api.v2"))
    assert read["replicas"] == 2
    assert server.requests[-1].target == "/apis/apps/v1/namespaces/default/deployments/api.v2"
