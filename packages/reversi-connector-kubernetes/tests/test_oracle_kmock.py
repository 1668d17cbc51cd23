"""A second oracle: kmock's Kubernetes API emulator beside the fake, the same calls on both.

``kmock`` (PyPI) ships ``KubernetesEmulator``, an in-memory API server written
independently of this package: it routes by the API's URL layout (group, version,
namespace, resource, name, subresource), creates, merges patches into, lists and deletes
objects, and answers 404 and 409 ``Status`` objects. It is a pytest plugin, not a daemon,
and its plugin needs pytest-asyncio, so the workspace disables the plugin (``-p no:kmock``)
and this module runs the emulator itself: one event loop in a background thread for the
session, a fresh emulator on 127.0.0.1 per scenario, reached over plain HTTP (loopback,
as ``kubectl proxy``).

Each scenario seeds both backends with the same objects (the fake's seed, copied into
kmock), runs the same connector calls on each and compares what the connector returned
(or how it failed) and the state of the objects the calls touched. The differences that
are kmock's, not the API server's, are listed in :data:`KMOCK_DIFFERS` and in
docs/connectors/kubernetes.md; a fake changed on purpose (a patch that replaces the spec
instead of merging, a list that ignores the namespace, a pod deletion that deletes
nothing) makes the comparison fail, naming the scenario.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import kmock
import pytest

from reversi_connector_kubernetes import KubernetesConnector, content_hash
from reversi_connector_kubernetes.testing import FakeKubernetes, seed_example
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.testing import FakeRequest, FakeResponse, FakeServer

TOKEN = "kube-kmockOracleToken-0123456789abcdef"
NS = "default"
RESOURCES = {"deployments": "apps/v1/deployments", "pods": "v1/pods", "configmaps": "v1/configmaps"}

KMOCK_DIFFERS = {
    "create": "kmock gives a created object no uid and no resourceVersion, so the connector "
    "cannot describe the config map it made: uncertain there, where the API server (and the "
    "fake) answer 201 with both",
    "deletion": "kmock deletes a pod at once and answers it as it was, without the "
    "deletionTimestamp and grace period the API server (and the fake) set on a graceful deletion",
    "reasons": "kmock's Status reasons are its own ('Object Not Found', 'Object Already "
    "Exists'), not the API server's (NotFound, AlreadyExists): the statuses agree, the codes "
    "differ",
}
"""Where kmock is not the API server, so the comparison looks only at what both model."""


class KmockLoop:
    """An event loop in a background thread that serves kmock emulators on 127.0.0.1."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kmock", daemon=True)
        self.thread.start()

    def run(self, coro: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def emulator(self) -> Iterator[tuple[kmock.KubernetesEmulator, str]]:
        stack = contextlib.AsyncExitStack()

        async def start() -> tuple[kmock.KubernetesEmulator, str]:
            emulator = await stack.enter_async_context(kmock.KubernetesEmulator())
            server = await stack.enter_async_context(kmock.Server(emulator))
            return emulator, str(server.url).rstrip("/")

        emulator, url = self.run(start())
        try:
            yield emulator, url
        finally:
            self.run(stack.aclose())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="session")
def kmock_loop() -> Iterator[KmockLoop]:
    """The emulators' event loop, started once for the session and stopped at its end."""
    loop = KmockLoop()
    yield loop
    loop.close()


# -- the two backends behind one interface ---------------------------------------------------


def _seeded(fake_class: type[FakeKubernetes]) -> FakeKubernetes:
    fake = fake_class(token=TOKEN)
    seed_example(fake)
    return fake


class FakeSide:
    def __init__(self, fake: FakeKubernetes) -> None:
        self.fake = fake

    def state(self, resource: str, name: str) -> dict[str, Any] | None:
        return self.fake.object(resource, NS, name)


class KmockSide:
    def __init__(self, emulator: kmock.KubernetesEmulator, seed: FakeKubernetes) -> None:
        self.emulator = emulator
        for (resource, namespace, name), obj in sorted(seed.store.objects.items()):
            emulator.objects[RESOURCES[resource], namespace, name] = copy.deepcopy(obj)

    def state(self, resource: str, name: str) -> dict[str, Any] | None:
        wanted = kmock.resource(RESOURCES[resource])
        for (kind, namespace, found), obj in self.emulator.objects.items():
            if (kind, namespace, found) == (wanted, NS, name) and not obj.deleted:
                return copy.deepcopy(obj.raw)
        return None  # (ObjectsArray's "in" does not match a key given as strings)


Call = Callable[[KubernetesConnector, Any], Awaitable[Any]]


@dataclass(frozen=True)
class Scenario:
    """Calls made on both backends; ``touches`` names the objects whose state is compared."""

    name: str
    calls: Call
    touches: tuple[tuple[str, str], ...]
    kmock_differs: str | None = None  # a key of KMOCK_DIFFERS: outcomes not compared


def _essence(resource: str, obj: dict[str, Any] | None) -> Any:
    """What both backends model of an object: a deployment's spec, a config map's data."""
    if obj is None:
        return None
    if resource == "deployments":
        spec = obj["spec"]
        return {
            "replicas": spec.get("replicas"),
            "images": [c.get("image") for c in spec["template"]["spec"]["containers"]],
            "selector": spec.get("selector"),
            "restarted": "kubectl.kubernetes.io/restartedAt"
            in spec["template"].get("metadata", {}).get("annotations", {}),
        }
    if resource == "configmaps":
        return {"data": obj.get("data"), "labels": obj["metadata"].get("labels")}
    return {"name": obj["metadata"]["name"], "labels": obj["metadata"].get("labels")}


_VOLATILE = {"resource_version", "restarted_at", "generation", "deletion_timestamp"}


def _outcome(value: Any) -> Any:
    if isinstance(value, BaseException):
        return (type(value).__name__, getattr(value, "status", None))
    if isinstance(value, dict):
        return {k: _outcome(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_outcome(v) for v in value]
    return value


async def _call(k8s: KubernetesConnector, tool: str, args: dict[str, Any]) -> Any:
    try:
        return await k8s.call(tool, args)
    except (ToolError, EffectUncertainError) as exc:
        return exc


def _at(name: str, **more: Any) -> dict[str, Any]:
    return {"namespace": NS, "name": name, **more}


async def _scale_and_restore(k8s: KubernetesConnector, side: Any) -> Any:
    made = await _call(k8s, "kubernetes.scale_deployment", _at("web", replicas=6))
    undone = await _call(k8s, "kubernetes.restore_replicas", _at(
        "web", replicas=made["previous_replicas"], expected_replicas=made["replicas"], uid=made["uid"]
    ))
    return [made, undone]


async def _delete_seeded_configmap(k8s: KubernetesConnector, side: Any) -> Any:
    seeded = side.state("configmaps", "app-settings")
    return await _call(k8s, "kubernetes.delete_configmap", _at(
        "app-settings", uid=seeded["metadata"]["uid"], content_hash=content_hash(seeded)
    ))


async def _pod_names(k8s: KubernetesConnector, side: Any) -> Any:
    listed = await _call(k8s, "kubernetes.list_pods", {"namespace": NS})
    return sorted(p["name"] for p in listed["pods"])


SCENARIOS = [
    Scenario("read a deployment", lambda k, s: _call(k, "kubernetes.get_deployment", _at("web")),
             (("deployments", "web"),)),
    Scenario("scale", lambda k, s: _call(k, "kubernetes.scale_deployment", _at("web", replicas=5)),
             (("deployments", "web"),)),
    Scenario("scale and restore", _scale_and_restore, (("deployments", "web"),)),
    Scenario("restart", lambda k, s: _call(k, "kubernetes.rollout_restart", _at("worker")),
             (("deployments", "worker"),)),
    Scenario("list the namespace's pods", _pod_names, (("pods", "db-0"),)),
    Scenario("delete a pod", lambda k, s: _call(k, "kubernetes.delete_pod", _at("db-0")),
             (("pods", "db-0"), ("pods", "web-5d8f9-abcde")), kmock_differs="deletion"),
    Scenario("delete the seeded config map", _delete_seeded_configmap,
             (("configmaps", "app-settings"),)),
    Scenario("create a config map",
             lambda k, s: _call(k, "kubernetes.create_configmap", _at("new-one", data={"a": "b"})),
             (("configmaps", "new-one"),), kmock_differs="create"),
    Scenario("create over an existing name",
             lambda k, s: _call(k, "kubernetes.create_configmap", _at("app-settings", data={})),
             (("configmaps", "app-settings"),)),
    Scenario("read a missing deployment",
             lambda k, s: _call(k, "kubernetes.get_deployment", _at("missing")), ()),
]


async def _differences(loop: KmockLoop, fake_class: type[FakeKubernetes]) -> list[str]:
    """Every way the fake's outcome or state differs from kmock's, scenario by scenario."""
    found = []
    for scenario in SCENARIOS:
        fake = _seeded(fake_class)
        with FakeServer(fake, tls=True) as server, loop.emulator() as (emulator, url):
            sides = {"fake": FakeSide(fake), "kmock": KmockSide(emulator, fake)}  # the same objects
            servers = {"fake": (server.url, server.ca_path), "kmock": (url, None)}
            outcomes, states = {}, {}
            for which, side in sides.items():
                api, ca = servers[which]
                k8s = KubernetesConnector(api_server=api, token=TOKEN, ca_cert=ca)
                outcomes[which] = _outcome(await scenario.calls(k8s, side))
                await k8s.aclose()
                states[which] = {f"{r}/{n}": _essence(r, side.state(r, n)) for r, n in scenario.touches}
        if scenario.kmock_differs is None and outcomes["fake"] != outcomes["kmock"]:
            found.append(f"{scenario.name}: the connector got {outcomes['fake']} from the fake, "
                         f"{outcomes['kmock']} from kmock")
        if states["fake"] != states["kmock"]:
            found.append(f"{scenario.name}: the fake ends with {states['fake']}, kmock with "
                         f"{states['kmock']}")
    return found


@pytest.mark.anyio
async def test_the_connector_sees_the_same_cluster_on_the_fake_and_on_kmock(
    kmock_loop: KmockLoop,
) -> None:
    assert await _differences(kmock_loop, FakeKubernetes) == []


@pytest.mark.anyio
async def test_where_kmock_differs_it_is_kmock_not_the_fake(kmock_loop: KmockLoop) -> None:
    """The listed differences, seen as described (so the list stays true)."""
    with loop_emulator(kmock_loop) as (side, url):
        k8s = KubernetesConnector(api_server=url, token=TOKEN)
        with pytest.raises(EffectUncertainError, match="has no 'uid'"):
            await k8s.call("kubernetes.create_configmap", _at("new-one", data={"a": "b"}))
        assert side.state("configmaps", "new-one") is not None  # created all the same
        with pytest.raises(ToolError) as missing:
            await k8s.call("kubernetes.get_deployment", _at("missing"))
        assert (missing.value.status, missing.value.code) == (404, "object_not_found")
        deleted = await k8s.call("kubernetes.delete_pod", _at("db-0"))
        assert (deleted["grace_period_seconds"], deleted["deletion_timestamp"]) == (None, None)
        await k8s.aclose()


@contextlib.contextmanager
def loop_emulator(loop: KmockLoop) -> Iterator[tuple[KmockSide, str]]:
    with loop.emulator() as (emulator, url):
        yield KmockSide(emulator, _seeded(FakeKubernetes)), url


# -- drift: the comparison catches a fake changed on purpose -----------------------------------


class _PatchReplacesTheSpec(FakeKubernetes):
    """A strategic merge patch that replaces the deployment's spec instead of merging into it."""

    def patch_deployment(self, request: FakeRequest) -> FakeResponse:
        answer = super().patch_deployment(request)
        if answer.status == 200 and isinstance(request.json, dict):
            p = request.path_params
            obj = self.store.get("deployments", p["namespace"], p["name"])
            assert obj is not None
            obj["spec"] = {**request.json["spec"], "selector": obj["spec"]["selector"],
                           "template": {**request.json["spec"]["template"], "spec": {"containers": []}}}
        return answer


class _ListsEveryNamespace(FakeKubernetes):
    """Lists the pods of every namespace whatever the path says."""

    def list_pods(self, request: FakeRequest) -> FakeResponse:
        answer = super().list_pods(request)
        with self.lock:
            self.add_pod("staging", "staging-pod")
        everything = [dict(obj) for _, _, obj in self.store.all("pods")]
        return FakeResponse(answer.status, json={**answer.json, "items": everything})


class _DeletesNothing(FakeKubernetes):
    """Answers a pod's deletion as done and keeps the pod."""

    def delete_pod(self, request: FakeRequest) -> FakeResponse:
        p = request.path_params
        kept = self.object("pods", p["namespace"], p["name"])
        answer = super().delete_pod(request)
        if kept is not None:
            self.store.objects[("pods", p["namespace"], p["name"])] = kept
        return answer


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("drifted", "scenario"),
    [
        (_PatchReplacesTheSpec, "restart"),
        (_ListsEveryNamespace, "list the namespace's pods"),
        (_DeletesNothing, "delete a pod"),
    ],
    ids=["patch replaces", "list ignores namespace", "delete keeps"],
)
async def test_a_drifted_fake_differs_from_kmock(
    kmock_loop: KmockLoop, drifted: type[FakeKubernetes], scenario: str
) -> None:
    found = await _differences(kmock_loop, drifted)
    assert found, f"{drifted.__name__} was not caught"
    assert all(line.startswith(f"{scenario}:") for line in found), found
