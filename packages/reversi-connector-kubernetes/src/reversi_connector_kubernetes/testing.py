"""A fake Kubernetes API server to test against, and the connector's certification opt-in.

:class:`FakeKubernetes` is a :class:`reversi_core.testing.VendorFake` that models the part
of the Kubernetes API the ``kubernetes`` connector uses, written from the API reference
(each route's docstring cites its page): deployments and their scale subresource, pods,
config maps, ``Status`` error bodies, resourceVersion and uid preconditions, selectors,
paginated lists, and RBAC by token (:class:`Rule`, :data:`RBAC`). Serve it over HTTPS
with :class:`reversi_core.testing.FakeServer` and point the connector at it with the
server's CA, as a cluster's CA certificate::

    from reversi_core.testing import FakeServer
    from reversi_connector_kubernetes import KubernetesConnector
    from reversi_connector_kubernetes.testing import FakeKubernetes

    fake = FakeKubernetes(token="test-token-0001")
    fake.add_deployment("default", "web", replicas=3)
    with FakeServer(fake, tls=True) as server:
        k8s = KubernetesConnector(api_server=server.url, token="test-token-0001",
                                  ca_cert=server.ca_path)
        scaled = await k8s.call("kubernetes.scale_deployment",
                                {"namespace": "default", "name": "web", "replicas": 5})
        assert scaled["previous_replicas"] == 3

Faults (a dropped connection, a 5xx, a 401, a 403, a reply that never comes) are armed
on the server (docs/fakes.md). :func:`certification_fixture` opts the connector into the
certification suite: every check applies to kubernetes, over a real TLS handshake.
:func:`concurrent_change` makes, through the fake, the later change each restoring
compensation must not overwrite.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reversi_core.http import Timeouts
from reversi_core.testing import (
    CertificationFixture,
    ConcurrentChange,
    Dependency,
    Example,
    ExampleContext,
    Failure,
    FakeServer,
    LiveScenario,
)

from ._fake import DEFAULT_IMAGE, PATCH_TYPES, FakeKubernetes, request_attributes
from ._live import (
    LIVE_DEPLOYMENT_VARIABLE,
    LIVE_NAMESPACE_VARIABLE,
    LIVE_SUMMARY,
    LIVE_TOOLS,
    LIVE_VARIABLES,
    live_scenario,
)
from ._rbac import RBAC, Rule, role
from .connector import KubernetesConnector

__all__ = [
    "CERTIFICATION_TOKEN",
    "DEFAULT_IMAGE",
    "DEPENDENCIES",
    "EXAMPLES",
    "FAILURES",
    "LIMIT",
    "LIVE",
    "LIVE_TOOLS",
    "NAMESPACE",
    "PATCH_TYPES",
    "PATIENCE",
    "RBAC",
    "FakeKubernetes",
    "Rule",
    "certification_fixture",
    "concurrent_change",
    "kubernetes_backend",
    "request_attributes",
    "role",
    "seed_example",
]

CERTIFICATION_TOKEN = "kube-certification-token-0123456789abcdef"  # noqa: S105 - made up
"""The bearer token the certification fixture gives the fake and the connector."""

NAMESPACE = "default"
"""The namespace of the example objects :func:`seed_example` makes."""

LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""


def seed_example(fake: FakeKubernetes) -> None:
    """Put the example state in ``fake``.

    Namespace ``default``: deployments ``web`` (3 replicas), ``worker`` (2) and ``frozen``
    (1, paused); pods ``web-5d8f9-abcde`` and ``web-5d8f9-fghij`` (``app=web``, owned by
    ReplicaSet ``web-5d8f9``), ``db-0`` (``app=db``, owned by StatefulSet ``db``) and
    ``report-28131`` (``Succeeded``); config map ``app-settings``. Namespace ``staging``:
    deployment ``web`` (1 replica). Namespace ``empty``: nothing.
    """
    fake.add_deployment(NAMESPACE, "web", replicas=3)
    fake.add_deployment(NAMESPACE, "worker", replicas=2)
    fake.add_deployment(NAMESPACE, "frozen", replicas=1, paused=True)
    for suffix in ("abcde", "fghij"):
        fake.add_pod(NAMESPACE, f"web-5d8f9-{suffix}", labels={"app": "web"},
                     owner=("ReplicaSet", "web-5d8f9"))
    fake.add_pod(NAMESPACE, "db-0", labels={"app": "db"}, owner=("StatefulSet", "db"), restarts=2)
    fake.add_pod(NAMESPACE, "report-28131", labels={"job": "report"}, phase="Succeeded",
                 ready=False)
    fake.add_configmap(NAMESPACE, "app-settings", {"mode": "production", "level": "info"},
                       labels={"app": "web"})
    fake.add_deployment("staging", "web", replicas=1)
    fake.add_namespace("empty")


@contextmanager
def kubernetes_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeKubernetes` (token :data:`CERTIFICATION_TOKEN`) served over HTTPS on a fresh port.

    The server's certificate is issued for ``127.0.0.1`` by a throwaway CA;
    ``server.ca_path`` is that CA's certificate, for ``KUBE_CA_CERT``.
    """
    with FakeServer(FakeKubernetes(token=CERTIFICATION_TOKEN), tls=True) as server:
        yield server


def _fake(server: FakeServer) -> FakeKubernetes:
    app = server.app
    if not isinstance(app, FakeKubernetes):
        raise TypeError(f"the server does not serve a FakeKubernetes but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> KubernetesConnector:
    return KubernetesConnector(
        api_server=server.url,
        token=CERTIFICATION_TOKEN,
        ca_cert=server.ca_path,
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


def _at(name: str, **more: Any) -> dict[str, Any]:
    return {"namespace": NAMESPACE, "name": name, **more}


def _uid(ctx: ExampleContext[Any], resource: str, name: str) -> str:
    found = _fake(ctx.handle).object(resource, NAMESPACE, name)
    assert found is not None, f"the example needs {resource} {name}"
    return str(found["metadata"]["uid"])


async def _restore_after_scale(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("kubernetes.scale_deployment", _at("web", replicas=5))
    return _at("web", replicas=made["previous_replicas"], expected_replicas=made["replicas"],
               uid=made["uid"])


async def _restore_already_there(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _at("worker", replicas=2, expected_replicas=4, uid=_uid(ctx, "deployments", "worker"))


async def _restore_after_someone_scaled(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    args = await _restore_after_scale(ctx)
    _fake(ctx.handle).set_replicas(NAMESPACE, "web", 7)
    return args


async def _delete_created(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("kubernetes.create_configmap", _at("scratch", data={"k": "v"}))
    return _at("scratch", uid=made["uid"], content_hash=made["content_hash"])


async def _delete_replaced(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    args = await _delete_created(ctx)
    _fake(ctx.handle).replace_configmap(NAMESPACE, "scratch")
    return args


async def _delete_edited(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    args = await _delete_created(ctx)
    _fake(ctx.handle).edit_configmap(NAMESPACE, "scratch", {"k": "edited by someone"})
    return args


async def _pod_of_another_uid(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _at("db-0", uid="00000000-0000-0000-0000-000000000000")


async def _expired_page(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    first = await ctx.call("kubernetes.list_pods", {"namespace": NAMESPACE, "limit": 1})
    _fake(ctx.handle).compact()
    return {"namespace": NAMESPACE, "limit": 1, "continue_token": first["continue_token"]}


async def _second_page(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    first = await ctx.call("kubernetes.list_pods", {"namespace": NAMESPACE, "limit": 2})
    return {"namespace": NAMESPACE, "limit": 2, "continue_token": first["continue_token"]}


async def _on_scaled_web(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _at("web", replicas=ctx.results["kubernetes.scale_deployment"]["replicas"] + 1)


EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "kubernetes.get_deployment": [_at("web"), {"namespace": "staging", "name": "web"}],
    "kubernetes.list_pods": [
        {"namespace": NAMESPACE},
        {"namespace": NAMESPACE, "label_selector": "app=web"},
        {"namespace": NAMESPACE, "field_selector": "status.phase=Running", "limit": 1},
        _second_page,
        {"namespace": "empty"},
    ],
    "kubernetes.scale_deployment": [_at("web", replicas=5), _at("worker", replicas=0)],
    "kubernetes.create_configmap": [
        _at("agent-notes", data={"note": "written by the agent"}),
        _at("feature-flags", data={"new-ui": "on"}, labels={"owner": "agent"}),
    ],
    "kubernetes.rollout_restart": [_at("web"), _at("worker")],
    "kubernetes.delete_pod": [
        _at("web-5d8f9-abcde"),
        _at("report-28131", grace_period_seconds=0),
    ],
    "kubernetes.restore_replicas": [_restore_after_scale, _restore_already_there],
    "kubernetes.delete_configmap": [
        _delete_created,
        _delete_replaced,
        _at("never-existed", uid="00000000-0000-0000-0000-000000000001"),
    ],
}
"""Calls that succeed on a seeded fake, for every tool."""

FAILURES: Mapping[str, list[Failure]] = {
    "kubernetes.get_deployment": [Failure(_at("missing"), code="not_found", status=404)],
    "kubernetes.list_pods": [
        Failure({"namespace": NAMESPACE, "label_selector": "app in (web"}, code="bad_request",
                status=400),
        Failure({"namespace": NAMESPACE, "field_selector": "spec.image=x"}, code="bad_request",
                status=400),
        Failure(_expired_page, code="expired", status=410),
    ],
    "kubernetes.scale_deployment": [Failure(_at("missing", replicas=1), code="not_found", status=404)],
    "kubernetes.create_configmap": [
        Failure(_at("app-settings", data={"x": "y"}), code="already_exists", status=409),
        Failure({"namespace": "nowhere", "name": "x", "data": {}}, code="not_found", status=404),
    ],
    "kubernetes.rollout_restart": [
        Failure(_at("frozen"), code="paused"),
        Failure(_at("missing"), code="not_found", status=404),
    ],
    "kubernetes.delete_pod": [
        Failure(_at("missing"), code="not_found", status=404),
        Failure(_pod_of_another_uid, code="conflict", status=409),
    ],
    "kubernetes.restore_replicas": [
        Failure(_restore_after_someone_scaled, code="changed_since"),
    ],
    "kubernetes.delete_configmap": [Failure(_delete_edited, code="changed_since")],
}
"""Calls the API server (or the connector's concurrent-change rule) turns down, with their codes."""

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "kubernetes.scale_deployment", _at("web", replicas=4), "kubernetes.scale_deployment",
        _on_scaled_web,
    ),
]
"""A second scale of the deployment a run scaled already builds on the first."""


def concurrent_change(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange | None:
    """The later change a restoring compensation must not overwrite, made through the fake.

    After ``kubernetes.scale_deployment``: the deployment is scaled by someone else to two
    more replicas than the call set (``what``: ``now has N replicas``); ``revert`` scales
    it back to the call's count. After ``kubernetes.create_configmap``: someone edits the
    config map's data (``what``: ``was changed since it was created``); ``revert`` puts
    the data the call wrote back. ``None`` for any other tool. Returns a
    :class:`reversi_core.testing.ConcurrentChange`.
    """
    fake = _fake(server)
    namespace, name = args["namespace"], args["name"]
    if tool == "kubernetes.scale_deployment":
        theirs = int(result["replicas"]) + 2
        fake.set_replicas(namespace, name, theirs)
        return ConcurrentChange(
            what=f"now has {theirs} replicas",
            revert=lambda: fake.set_replicas(namespace, name, int(result["replicas"])),
        )
    if tool == "kubernetes.create_configmap":
        ours = fake.object("configmaps", namespace, name)
        assert ours is not None
        fake.edit_configmap(namespace, name, {**ours.get("data", {}), "edited-by": "someone"})
        return ConcurrentChange(
            what="was changed since it was created",
            revert=lambda: fake.edit_configmap(namespace, name, ours.get("data", {})),
        )
    return None


LIVE = LiveScenario(
    name="scale-and-configmap",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {LIVE_NAMESPACE_VARIABLE: NAMESPACE, LIVE_DEPLOYMENT_VARIABLE: "web"},
)
"""kubernetes's live scenario (:mod:`reversi_connector_kubernetes._live`): ``nox -s live --
kubernetes`` runs it against a cluster; against the fake it scales :data:`NAMESPACE`'s
deployment ``web``."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The kubernetes connector's declaration for the certification suite (docs/certification-guide.md).

    The fake is served over HTTPS and the connector trusts its CA through ``ca_cert``
    (``KUBE_CA_CERT`` for a process started by hand), so every check runs over a real
    TLS handshake. Both restoring compensations refuse to overwrite a later change
    (:func:`concurrent_change`), and its live scenario is :data:`LIVE`.
    """
    return CertificationFixture(
        backend_summary="its fake of the Kubernetes API over TLS, faults and RBAC included",
        command_line=lambda server: (
            {
                "KUBE_API_SERVER": server.url,
                "KUBE_TOKEN": CERTIFICATION_TOKEN,
                "KUBE_CA_CERT": str(server.ca_path),
            },
            [],
        ),
        backend=kubernetes_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
        concurrent_change=concurrent_change,
        live=LIVE,
    )
