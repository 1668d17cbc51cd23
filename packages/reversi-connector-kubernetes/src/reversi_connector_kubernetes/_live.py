"""The kubernetes connector's live scenario (``nox -s live -- kubernetes``; docs/connectors/kubernetes.md).

In the namespace named by ``REVERSI_LIVE_KUBE_NAMESPACE`` (a throwaway one), with the
deployment named by ``REVERSI_LIVE_KUBE_DEPLOYMENT`` (one no autoscaler manages, such as
``kubectl create deployment reversi-live --image=registry.k8s.io/pause:3.10``), through
the real engine: read the deployment's replica count N, scale it to N + 1 and create a
config map named with the live run's suffix; check that the deployment wants N + 1 pods,
that its pods are listed by its selector and that the config map's name is taken (a
second create answers 409); roll the run back; then check that the deployment wants N
pods again and that the config map is gone (deleting it again finds nothing). Nothing of
the scenario stays behind: the deployment's generation and resourceVersion move on, as
for any change, and the pod the scale started is stopped again by its controller.

The TLS handshake is the connector's own: ``KUBE_CA_CERT`` names the cluster's CA, or the
system's trust store verifies the API server.
"""

from __future__ import annotations

from reversi_core.errors import ToolError
from reversi_core.testing import LiveCheckFailed, LiveContext, LiveVariable

__all__ = [
    "LIVE_DEPLOYMENT_VARIABLE",
    "LIVE_NAMESPACE_VARIABLE",
    "LIVE_SUMMARY",
    "LIVE_TOOLS",
    "LIVE_VARIABLES",
    "live_scenario",
]

LIVE_NAMESPACE_VARIABLE = "REVERSI_LIVE_KUBE_NAMESPACE"
"""The throwaway namespace the live scenario works in."""

LIVE_DEPLOYMENT_VARIABLE = "REVERSI_LIVE_KUBE_DEPLOYMENT"
"""The deployment of that namespace the scenario scales up by one and back."""


LIVE_TOOLS = (
    "kubernetes.get_deployment",
    "kubernetes.list_pods",
    "kubernetes.scale_deployment",
    "kubernetes.restore_replicas",
    "kubernetes.create_configmap",
    "kubernetes.delete_configmap",
)
"""The tools the scenario calls: ``role(LIVE_TOOLS)`` is the Role its token needs."""


async def live_scenario(live: LiveContext) -> None:
    """A scale and a config map, then their rollback, checked on the cluster (module docstring)."""
    namespace = live.env[LIVE_NAMESPACE_VARIABLE]
    deployment = {"namespace": namespace, "name": live.env[LIVE_DEPLOYMENT_VARIABLE]}
    where = f"deployment {namespace}/{deployment['name']}"
    before = await live.call("kubernetes.get_deployment", deployment)
    live.check(not before["paused"], f"{where} not to be paused")
    start = before["replicas"]
    configmap = {"namespace": namespace, "name": live.name("reversi-live")}
    data = {"written-by": "the Reversi kubernetes connector's live scenario"}

    run = live.start_run()
    _, scaled = await run.call("kubernetes.scale_deployment", {**deployment, "replicas": start + 1})
    live.check(
        (scaled["previous_replicas"], scaled["replicas"], scaled["changed"]) == (start, start + 1, True),
        f"the scale of {where} to report {start} replaced by {start + 1}",
    )
    _, made = await run.call(
        "kubernetes.create_configmap", {**configmap, "data": data, "labels": {"reversi-live": "true"}}
    )
    live.log(f"scaled {where} to {start + 1}; created config map {configmap['name']} ({made['uid']})")

    seen = await live.call("kubernetes.get_deployment", deployment)
    live.check(seen["replicas"] == start + 1, f"{where} to want {start + 1} pods")
    selector = ",".join(f"{k}={v}" for k, v in sorted(before["selector"].items()))
    pods = await live.call("kubernetes.list_pods", {"namespace": namespace, "label_selector": selector})
    live.check(
        all(p["labels"].items() >= before["selector"].items() for p in pods["pods"]),
        f"the pods listed by {selector!r} to carry those labels",
    )
    try:
        await live.call("kubernetes.create_configmap", {**configmap, "data": {"again": "yes"}})
    except ToolError as exc:
        live.check(exc.code == "already_exists", f"a second create to be refused as already_exists, not {exc.code}")
    else:
        raise LiveCheckFailed(f"expected a second create of config map {configmap['name']} to be refused")

    await live.rollback(run)

    after = await live.call("kubernetes.get_deployment", deployment)
    live.check(after["replicas"] == start, f"{where} to want {start} pods again after the rollback")
    live.check(after["uid"] == before["uid"], f"{where} to be the same deployment")
    gone = await live.call("kubernetes.delete_configmap", {**configmap, "uid": made["uid"]})
    live.check(
        (gone["deleted"], gone["replaced"]) == (False, False),
        f"config map {configmap['name']} to be gone already",
    )


LIVE_SUMMARY = (
    "Scales a deployment of a throwaway namespace up by one and creates a config map, rolls the "
    "run back, and checks that the deployment wants its former count again and the config map is "
    "gone."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(
        LIVE_NAMESPACE_VARIABLE,
        "a throwaway namespace the token may read and scale deployments and create, read and "
        "delete config maps in",
    ),
    LiveVariable(
        LIVE_DEPLOYMENT_VARIABLE,
        "a deployment of that namespace that no autoscaler manages (it is scaled up by one, then back)",
    ),
)
"""The variables the scenario reads besides the connector's own."""
