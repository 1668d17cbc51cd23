"""A second oracle: the official ``kubernetes`` Python client, pointed at the fake, accepts its answers.

The client (37.x, generated from the API server's OpenAPI description, with pydantic
models that check types and required fields) talks to FakeKubernetes over TLS
(``Configuration.host`` and ``ssl_ca_cert``), with the calls the connector makes: read a
deployment and its scale, patch the scale (merge patch) and the deployment (strategic
merge patch), list pods by label, page by page, create a config map twice (the second a
409), delete it with a uid precondition, delete a pod. Every answer must deserialize into
the client's model, and every error body into ``V1Status``. Fakes changed on purpose (a
Scale whose replicas is a string, a container without its name, a timestamp that is not
one) are refused by the client's models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from reversi_connector_kubernetes.testing import FakeKubernetes, seed_example
from reversi_core.testing import FakeServer

TOKEN = "kube-clientOracleToken-0123456789abcdef"
NS = "default"


def _clients(server: FakeServer) -> tuple[client.ApiClient, client.AppsV1Api, client.CoreV1Api]:
    config = client.Configuration(host=server.url)
    config.api_key = {"authorization": TOKEN}
    config.api_key_prefix = {"authorization": "Bearer"}
    config.ssl_ca_cert = str(server.ca_path)
    api = client.ApiClient(config)
    return api, client.AppsV1Api(api), client.CoreV1Api(api)


@pytest.fixture
def served() -> Iterator[tuple[FakeKubernetes, FakeServer]]:
    fake = FakeKubernetes(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake, tls=True) as server:
        yield fake, server


def _status(error: ApiException) -> client.V1Status:
    status = client.V1Status.from_dict(json.loads(error.body))
    assert status is not None
    return status


def test_the_client_accepts_every_answer_the_connector_relies_on(
    served: tuple[FakeKubernetes, FakeServer],
) -> None:
    fake, server = served
    api, apps, core = _clients(server)
    with api:
        deployment = apps.read_namespaced_deployment("web", NS)
        assert isinstance(deployment, client.V1Deployment)
        assert deployment.spec.replicas == 3
        assert deployment.metadata.uid == fake.object("deployments", NS, "web")["metadata"]["uid"]

        scale = apps.read_namespaced_deployment_scale("web", NS)
        assert isinstance(scale, client.V1Scale)
        assert (scale.spec.replicas, scale.status.selector) == (3, "app=web")
        patch = {"metadata": {"resourceVersion": scale.metadata.resource_version},
                 "spec": {"replicas": 5}}
        scaled = apps.patch_namespaced_deployment_scale(
            "web", NS, patch, _content_type="application/merge-patch+json"
        )
        assert isinstance(scaled, client.V1Scale)
        assert scaled.spec.replicas == 5
        with pytest.raises(ApiException) as stale:  # the same resourceVersion again: modified since
            apps.patch_namespaced_deployment_scale(
                "web", NS, patch, _content_type="application/merge-patch+json"
            )
        assert (stale.value.status, _status(stale.value).reason) == (409, "Conflict")

        restart = {"spec": {"template": {"metadata": {"annotations": {
            "kubectl.kubernetes.io/restartedAt": "2026-12-01T10:00:00Z"}}}}}
        restarted = apps.patch_namespaced_deployment(
            "web", NS, restart, _content_type="application/strategic-merge-patch+json"
        )
        assert restarted.spec.template.metadata.annotations == restart["spec"]["template"]["metadata"]["annotations"]

        first = core.list_namespaced_pod(NS, label_selector="app=web", limit=1)
        assert isinstance(first, client.V1PodList)
        assert [p.metadata.name for p in first.items] == ["web-5d8f9-abcde"]
        assert first.metadata.remaining_item_count == 1
        second = core.list_namespaced_pod(NS, label_selector="app=web", limit=1,
                                          _continue=first.metadata._continue)
        assert [p.metadata.name for p in second.items] == ["web-5d8f9-fghij"]
        assert second.metadata._continue is None
        owner = second.items[0].metadata.owner_references[0]
        assert (owner.kind, owner.controller) == ("ReplicaSet", True)

        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="made-by-client"),
                                  data={"k": "v"})
        made = core.create_namespaced_config_map(NS, body)
        assert isinstance(made, client.V1ConfigMap)
        assert made.metadata.uid
        with pytest.raises(ApiException) as taken:
            core.create_namespaced_config_map(NS, body)
        assert (taken.value.status, _status(taken.value).reason) == (409, "AlreadyExists")
        with pytest.raises(ApiException) as other_uid:
            core.delete_namespaced_config_map(
                "made-by-client", NS,
                body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-it")),
            )
        assert _status(other_uid.value).reason == "Conflict"
        deleted = core.delete_namespaced_config_map(
            "made-by-client", NS,
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=made.metadata.uid)),
        )
        # the API description types this answer "object": it must still be a V1Status
        success = client.V1Status.from_dict(deleted)
        assert success is not None
        assert success.status == "Success"
        assert success.details.uid == made.metadata.uid

        gone = core.delete_namespaced_pod("db-0", NS, grace_period_seconds=0)
        assert isinstance(gone, client.V1Pod)
        assert gone.metadata.deletion_timestamp is not None
        with pytest.raises(ApiException) as missing:
            apps.read_namespaced_deployment("missing", NS)
        status = _status(missing.value)
        assert (missing.value.status, status.reason, status.code) == (404, "NotFound", 404)
        assert status.details.name == "missing"

    assert fake.object("pods", NS, "db-0") is None


def test_a_wrong_token_is_a_401_status_the_client_reads(
    served: tuple[FakeKubernetes, FakeServer],
) -> None:
    _, server = served
    api, apps, _ = _clients(server)
    api.configuration.api_key = {"authorization": "not-the-token-0123456789"}
    with api, pytest.raises(ApiException) as refused:
        apps.read_namespaced_deployment("web", NS)
    assert (refused.value.status, _status(refused.value).reason) == (401, "Unauthorized")


# -- drift: the client's models refuse a fake changed on purpose ---------------------------


class _StringReplicas(FakeKubernetes):
    def _scale(self, obj: Any) -> dict[str, Any]:
        scale = super()._scale(obj)
        scale["spec"]["replicas"] = str(scale["spec"].get("replicas", 0))
        return scale


class _NamelessContainer(FakeKubernetes):
    def add_pod(self, namespace: str, name: str, **kwargs: Any) -> dict[str, Any]:
        pod = super().add_pod(namespace, name, **kwargs)
        with self.lock:
            del self.store.get("pods", namespace, name)["spec"]["containers"][0]["name"]
        return pod


class _ProseTimestamp(FakeKubernetes):
    def add_deployment(self, namespace: str, name: str, **kwargs: Any) -> dict[str, Any]:
        made = super().add_deployment(namespace, name, **kwargs)
        with self.lock:
            self.store.get("deployments", namespace, name)["metadata"]["creationTimestamp"] = "yesterday"
        return made


@pytest.mark.parametrize(
    ("drifted", "call", "expected"),
    [
        (_StringReplicas, lambda apps, core: apps.read_namespaced_deployment_scale("web", NS),
         "V1ScaleSpec\nreplicas"),
        (_NamelessContainer, lambda apps, core: core.list_namespaced_pod(NS),
         "V1Container\nname"),
        (_ProseTimestamp, lambda apps, core: apps.read_namespaced_deployment("web", NS),
         "creationTimestamp"),
    ],
    ids=["string count", "nameless container", "prose timestamp"],
)
def test_a_drifted_fake_is_refused_by_the_client(
    drifted: type[FakeKubernetes], call: Any, expected: str
) -> None:
    fake = drifted(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake, tls=True) as server:
        api, apps, core = _clients(server)
        with api, pytest.raises(ValueError, match=expected):
            call(apps, core)
