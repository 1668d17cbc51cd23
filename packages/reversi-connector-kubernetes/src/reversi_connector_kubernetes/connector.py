"""The ``kubernetes`` connector: deployments, pods and config maps through the Kubernetes API.

Eight tools. Two read (``kubernetes.get_deployment``, ``kubernetes.list_pods``); two
change the cluster and are each undone by a compensation (``kubernetes.scale_deployment``
by ``kubernetes.restore_replicas``, ``kubernetes.create_configmap`` by
``kubernetes.delete_configmap``); two replace pods and cannot be undone, so they are
declared irreversible and always need approval (``kubernetes.rollout_restart``,
``kubernetes.delete_pod``).

Every request goes to ``KUBE_API_SERVER`` with ``Authorization: Bearer <KUBE_TOKEN>``
(https://kubernetes.io/docs/reference/access-authn-authz/authentication/). The API
server's TLS certificate is always verified: against the CA certificate in
``KUBE_CA_CERT`` (a PEM file, such as a kubeconfig's ``certificate-authority``) when it is
set, otherwise against the system's trust store; a certificate that fails (another CA,
expired, issued for another name) is refused before anything is sent, with
``ToolError(code="tls_verify_failed")`` saying why and what it was checked against. Plain
``http://`` is accepted only for a loopback address (``kubectl proxy``).

No compensation overwrites a change someone else made after the call: restore_replicas
puts the saved count back only while the deployment still has the count scale_deployment
set (and is the same deployment, by uid), and sends the resourceVersion it read as a
precondition; delete_configmap deletes only the config map the call created (uid) and only
while its data and labels are those the call wrote (a content hash), with the uid and the
resourceVersion it read as preconditions. Otherwise they fail with
``ToolError(code="changed_since")`` naming what changed, unless a person allowed that
step's undo to overwrite it (``reversi rollback RUN --overwrite STEP``, which the
compensation sees as ``CallContext.overwrite``; docs/engine.md, RB-10).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import ipaddress
import json
import re
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import httpx

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ConfigurationError, ToolError
from reversi_core.http import (
    BaseUrl,
    Bearer,
    HttpConnector,
    HttpResponse,
    RequestTool,
    Setting,
    Timeouts,
    url_path,
)
from reversi_core.manifest import Compensation, Effect, Match, Requirement

from ._args import (
    CreateConfigMapArgs,
    DeleteConfigMapArgs,
    DeletePodArgs,
    DeploymentArgs,
    ListPodsArgs,
    RestoreReplicasArgs,
    ScaleDeploymentArgs,
)
from ._errors import ERRORS
from ._results import (
    ConfigMapCreated,
    ConfigMapDeleted,
    DeploymentRead,
    DeploymentRestarted,
    DeploymentScaled,
    PodDeleted,
    PodsListed,
    ReplicasRestored,
)

if TYPE_CHECKING:
    import os

__all__ = [
    "CHANGED_SINCE",
    "MERGE_PATCH",
    "RESTARTED_AT",
    "STRATEGIC_MERGE_PATCH",
    "KubernetesConnector",
    "content_hash",
]

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
"""The pod template annotation ``kubectl rollout restart`` sets, and rollout_restart too."""

MERGE_PATCH = "application/merge-patch+json"
"""A JSON merge patch (RFC 7386): how scale_deployment and restore_replicas change replicas."""

STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
"""The patch type ``kubectl rollout restart`` sends; rollout_restart sends the same."""

CHANGED_SINCE = "changed_since"
"""The code of a compensation that refuses to overwrite a change made after its call
(the code fs, postgres and github use too)."""

_DEPLOYMENTS = "https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/deployment-v1/"
_PODS = "https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/"
_CONFIGMAPS = (
    "https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/config-map-v1/"
)
_DEPLOYMENT = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
_SCALE = _DEPLOYMENT + "/scale"
_CONFIGMAP = "/api/v1/namespaces/{namespace}/configmaps/{name}"
_POD = "/api/v1/namespaces/{namespace}/pods/{name}"

_FORCE = "to undo it anyway: reversi rollback RUN --overwrite STEP (docs/engine.md)"

_SAME_DEPLOYMENT = Requirement(
    tool="kubernetes.scale_deployment",
    match=[
        Match(this="args.namespace", earlier="args.namespace"),
        Match(this="args.name", earlier="args.name"),
    ],
)
"""A second scale of the same deployment in one run builds on the first.

Its undo restores the count the first one set, which the first one's undo then expects:
a rollback undoes the later scale first, and defers the earlier one while it stands.
"""


# -- trust -------------------------------------------------------------------------------


@functools.cache
def _system_trust() -> ssl.SSLContext:
    """The system's trust store (OpenSSL's default paths, ``SSL_CERT_FILE``/``SSL_CERT_DIR``)."""
    return ssl.create_default_context()


def _cluster_trust(path: str) -> ssl.SSLContext:
    """A context that trusts exactly the CA certificate(s) in the PEM file at ``path``."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigurationError(
            f"kubernetes: KUBE_CA_CERT names no file ({file}); set it to the cluster's CA "
            "certificate in PEM, or leave it unset to use the system's trust store"
        )
    try:
        return ssl.create_default_context(cafile=str(file))
    except (ssl.SSLError, ValueError, OSError) as exc:
        raise ConfigurationError(
            f"kubernetes: KUBE_CA_CERT ({file}) holds no CA certificate in PEM that can be "
            f"loaded ({exc})"
        ) from None


def _check_server(url: str) -> str:
    """Refuse an API server URL that would send the token in clear to another machine."""
    parsed = httpx.URL(url.strip())
    if parsed.scheme == "http":
        host = parsed.host
        loopback = host == "localhost"
        with contextlib.suppress(ValueError):
            loopback = loopback or ipaddress.ip_address(host).is_loopback
        if not loopback:
            raise ValueError(
                "the API server must be reached over https (plain http only to a loopback "
                "address, such as kubectl proxy's http://127.0.0.1:8001)"
            )
    elif parsed.scheme != "https":
        raise ValueError("the API server URL must start with https://")
    return url


def _why_tls_failed(message: str) -> str:
    """OpenSSL's reason, from a connect error's text: ``certificate has expired``..."""
    found = re.search(r"certificate verify failed: ([^(]+?)\s*(?:\(_ssl|\)|$)", message)
    why = found.group(1).strip().rstrip(".") if found else "certificate verify failed"
    return why


# -- shaping answers ---------------------------------------------------------------------


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _dig(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def _count(value: Any) -> int:
    """A replica count from an answer: absent (the API server omits zeros) means 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _deployment(k8s: KubernetesConnector, args: DeploymentArgs, resp: HttpResponse) -> dict[str, Any]:
    obj = k8s.expect_object(resp, "Deployment", wrote=False)
    meta, spec, status = _meta(obj), obj.get("spec") or {}, obj.get("status") or {}
    template = spec.get("template") or {}
    containers = _dig(template, "spec", "containers") or []
    conditions = status.get("conditions") or []
    return {
        "uid": k8s.expect_field(meta, "uid", resp, wrote=False),
        "resource_version": meta.get("resourceVersion"),
        "generation": meta.get("generation"),
        "observed_generation": status.get("observedGeneration"),
        "replicas": _count(spec.get("replicas")),
        "ready_replicas": _count(status.get("readyReplicas")),
        "available_replicas": _count(status.get("availableReplicas")),
        "updated_replicas": _count(status.get("updatedReplicas")),
        "paused": spec.get("paused") is True,
        "restarted_at": (_dig(template, "metadata", "annotations") or {}).get(RESTARTED_AT),
        "images": [c["image"] for c in containers if isinstance(c, dict) and c.get("image")],
        "selector": dict(_dig(spec, "selector", "matchLabels") or {}),
        "conditions": [
            {
                "type": str(c.get("type")),
                "status": str(c.get("status")),
                "reason": c.get("reason"),
                "message": c.get("message"),
            }
            for c in conditions
            if isinstance(c, dict)
        ],
    }


def _pod_summary(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta, status = _meta(pod), pod.get("status") or {}
    ready = any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    return {
        "name": str(meta.get("name")),
        "uid": meta.get("uid"),
        "phase": status.get("phase"),
        "ready": ready,
        "restarts": sum(
            _count(c.get("restartCount"))
            for c in status.get("containerStatuses") or []
            if isinstance(c, dict)
        ),
        "node": _dig(pod, "spec", "nodeName"),
        "labels": dict(meta.get("labels") or {}),
        "owner": f"{owner.get('kind')}/{owner.get('name')}" if owner else None,
        "created_at": meta.get("creationTimestamp"),
        "terminating": bool(meta.get("deletionTimestamp")),
    }


def _new_configmap(args: CreateConfigMapArgs) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": args.name, "namespace": args.namespace}
    if args.labels:
        metadata["labels"] = args.labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": args.data}


def content_hash(configmap: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of a ConfigMap's ``data``, ``binaryData`` and labels, as JSON with sorted keys.

    What delete_configmap compares to tell an edited config map from the one the run
    created: annotations and the server's bookkeeping (resourceVersion, managedFields) are
    left out, so a controller's annotation does not count as an edit.
    """
    content = {
        "data": configmap.get("data") or {},
        "binaryData": configmap.get("binaryData") or {},
        "labels": _meta(configmap).get("labels") or {},
    }
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _configmap_made(
    k8s: KubernetesConnector, args: CreateConfigMapArgs, resp: HttpResponse
) -> dict[str, Any]:
    obj = k8s.expect_object(resp, "ConfigMap", wrote=True)
    meta = _meta(obj)
    return {
        "uid": k8s.expect_field(meta, "uid", resp, wrote=True),
        "resource_version": k8s.expect_field(meta, "resourceVersion", resp, wrote=True),
        "content_hash": content_hash(obj),
        "keys": sorted(obj.get("data") or {}),
    }


def _pod_deletion(args: DeletePodArgs) -> dict[str, Any] | None:
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    if args.uid is not None:
        options["preconditions"] = {"uid": args.uid}
    if args.grace_period_seconds is not None:
        options["gracePeriodSeconds"] = args.grace_period_seconds
    return options if len(options) > 2 else None


def _pod_deleted(k8s: KubernetesConnector, args: DeletePodArgs, resp: HttpResponse) -> dict[str, Any]:
    obj = resp.json if isinstance(resp.json, dict) else {}  # a 2xx means the deletion began
    meta = _meta(obj) if obj.get("kind") == "Pod" else {}
    details = obj.get("details") if obj.get("kind") == "Status" else None
    return {
        "uid": meta.get("uid") or (details or {}).get("uid") or args.uid,
        "grace_period_seconds": meta.get("deletionGracePeriodSeconds", args.grace_period_seconds),
        "deletion_timestamp": meta.get("deletionTimestamp"),
    }


# -- the connector -----------------------------------------------------------------------


class KubernetesConnector(HttpConnector):
    """Deployments, pods and config maps of a Kubernetes cluster (see the module docstring).

    ``api_server`` is the API server's URL (``https://HOST:6443``; a path prefix, as a
    Rancher proxy has, is kept). ``token`` is a bearer token (a service account's token
    from ``kubectl create token NAME``), sent as ``Authorization: Bearer``. ``ca_cert`` is
    the path of the cluster's CA certificate in PEM: the API server's certificate must
    chain to it; without it, to the system's trust store. Verification is never turned
    off. ``timeouts`` are the per-request limits in seconds (default connect 5, read 30,
    total 60), lowered to the call's own limit; ``transport`` replaces the network
    transport (tests).

    Raises :class:`~reversi_core.errors.ConfigurationError` for an empty token or one with
    whitespace (never repeated), an API server URL that is not ``https://`` (or
    ``http://`` to a loopback address), and a ``ca_cert`` that names no file or no PEM
    certificate.
    """

    name = "kubernetes"
    settings = (
        Setting(
            "KUBE_API_SERVER",
            "api_server",
            "the API server's URL, such as https://HOST:6443",
            check=_check_server,
        ),
        Setting("KUBE_TOKEN", "token", "a bearer token, such as a service account's", secret=True),
        Setting(
            "KUBE_CA_CERT",
            "ca_cert",
            "the path of the cluster's CA certificate (PEM); unset: the system's trust store",
            required=False,
        ),
    )
    credential_env = "KUBE_API_SERVER"  # the spec: compensate enables kubernetes when it is set
    base = BaseUrl(None, option="api_server")
    auth = Bearer("token")
    headers: ClassVar[Mapping[str, str]] = {"Accept": "application/json"}
    errors = ERRORS

    def __init__(
        self,
        *,
        api_server: str,
        token: str,
        ca_cert: str | os.PathLike[str] | None = None,
        timeouts: Timeouts | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        ca = str(ca_cert) if ca_cert is not None else None
        trust = _cluster_trust(ca) if ca is not None else _system_trust()
        super().__init__(
            api_server=api_server,
            token=token,
            ca_cert=ca,
            timeouts=timeouts,
            transport=transport,
            verify=trust,
        )
        self.ca_cert = ca
        """The CA file the API server's certificate is checked against (``None``: the system's)."""

    # -- requests ----------------------------------------------------------------------

    async def request(
        self, ctx: CallContext, method: str, path: str, **options: Any
    ) -> HttpResponse:
        """As :meth:`HttpConnector.request`; a refused TLS certificate says why and against what.

        ``options`` are those of :meth:`HttpConnector.request`. Raises
        ``ToolError(code="tls_verify_failed")`` (nothing was sent) when the API server's
        certificate does not verify, naming OpenSSL's reason (``certificate has expired``,
        ``IP address mismatch``, ``unable to get local issuer certificate``) and the trust
        it was checked against (``KUBE_CA_CERT``'s file, or the system's).
        """
        try:
            return await super().request(ctx, method, path, **options)
        except ToolError as exc:
            if exc.code == "connect" and "CERTIFICATE_VERIFY_FAILED" in str(exc):
                raise self._tls_refused(method, path, str(exc)) from None
            raise

    def _tls_refused(self, method: str, path: str, message: str) -> ToolError:
        trust = (
            f"the CA certificate in KUBE_CA_CERT ({self.ca_cert})"
            if self.ca_cert is not None
            else "the system's trust store (set KUBE_CA_CERT to the cluster's CA certificate)"
        )
        why = _why_tls_failed(message)
        hint = ""
        if "mismatch" in why or "not valid for" in why:
            hint = "; KUBE_API_SERVER must name a host or address the certificate is issued for"
        return ToolError(
            f"kubernetes: {method} {path}: the API server's TLS certificate was refused ({why}); "
            f"it was checked against {trust}{hint}; nothing was sent",
            code="tls_verify_failed",
        )

    async def _patch(
        self, ctx: CallContext, path: str, body: Mapping[str, Any], patch_type: str
    ) -> HttpResponse:
        return await self.request(ctx, "PATCH", path, json=body, headers={"Content-Type": patch_type})

    async def _read_scale(self, ctx: CallContext, namespace: str, name: str) -> dict[str, Any]:
        resp = await self.request(ctx, "GET", url_path(_SCALE, namespace=namespace, name=name))
        scale = self.expect_object(resp, "Scale", wrote=False)
        meta = _meta(scale)
        replicas = _dig(scale, "spec", "replicas")
        if replicas is not None and (not isinstance(replicas, int) or isinstance(replicas, bool)):
            raise self.malformed("has a spec.replicas that is not a number", resp, wrote=False)
        return {
            "replicas": _count(replicas),
            "uid": self.expect_field(meta, "uid", resp, wrote=False),
            "resource_version": self.expect_field(meta, "resourceVersion", resp, wrote=False),
        }

    # -- reading -----------------------------------------------------------------------

    get_deployment = RequestTool(
        "GET",
        _DEPLOYMENT,
        effect=Effect.READ_ONLY,
        permission="kubernetes:deployments:read",
        input=DeploymentArgs,
        output=DeploymentRead,
        summary="Read a deployment: its desired and ready replicas, images, restart time and "
        "conditions.",
        docs=f"{_DEPLOYMENTS}#get-read-the-specified-deployment",
        details="RBAC: ``get`` on ``deployments`` (``apps``). 404 ``not_found``; 403 "
        "``forbidden`` when the token's role lacks the verb.",
        echo=("namespace", "name"),
        keep=_deployment,
    )

    @tool(effect=Effect.READ_ONLY, permission="kubernetes:pods:read", input=ListPodsArgs, output=PodsListed)
    async def list_pods(self, args: ListPodsArgs, ctx: CallContext) -> dict[str, Any]:
        """List the pods of a namespace, one page at a time, optionally filtered by selectors.

        ``GET /api/v1/namespaces/{namespace}/pods`` with ``labelSelector``,
        ``fieldSelector``, ``limit`` and ``continue``
        (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#list-list-or-watch-objects-of-kind-pod,
        https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks).
        Returns ``{"namespace", "pods": [{"name", "uid", "phase", "ready", "restarts",
        "node", "labels", "owner", "created_at", "terminating"}], "continue_token",
        "remaining"}``; pass ``continue_token`` back for the next page. RBAC: ``list`` on
        ``pods``. Raises ``ToolError`` naming the status: 410 ``expired`` for a continue
        token that is too old (list again from the start), 400 ``bad_request`` for a
        selector the API server cannot parse, 401, 403 ``forbidden``, ``rate_limited``.
        """
        params: dict[str, Any] = {"limit": args.limit}
        if args.label_selector is not None:
            params["labelSelector"] = args.label_selector
        if args.field_selector is not None:
            params["fieldSelector"] = args.field_selector
        if args.continue_token is not None:
            params["continue"] = args.continue_token
        resp = await self.request(
            ctx, "GET", url_path("/api/v1/namespaces/{namespace}/pods", namespace=args.namespace),
            params=params,
        )
        listed = self.expect_object(resp, "PodList", wrote=False)
        items = listed.get("items")
        if not isinstance(items, list):
            raise self.malformed("has no list of items", resp, wrote=False)
        meta = _meta(listed)
        remaining = meta.get("remainingItemCount")
        return {
            "namespace": args.namespace,
            "pods": [_pod_summary(pod) for pod in items if isinstance(pod, dict)],
            "continue_token": meta.get("continue") or None,
            "remaining": remaining if isinstance(remaining, int) else None,
        }

    # -- changing ----------------------------------------------------------------------

    @tool(
        effect=Effect.REVERSIBLE,
        permission="kubernetes:deployments:scale",
        input=ScaleDeploymentArgs,
        output=DeploymentScaled,
        compensation=Compensation(
            tool="kubernetes.restore_replicas",
            argument_map={
                "namespace": "args.namespace",
                "name": "args.name",
                "replicas": "result.previous_replicas",
                "expected_replicas": "result.replicas",
                "uid": "result.uid",
            },
            resources=["kubernetes:{args.namespace}/deployments/{args.name}"],
        ),
        requires=[_SAME_DEPLOYMENT],
    )
    async def scale_deployment(self, args: ScaleDeploymentArgs, ctx: CallContext) -> dict[str, Any]:
        """Set a deployment's replica count through its scale subresource; undone by restore_replicas.

        Reads the count first (``GET /apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale``,
        https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/deployment-v1/#get-read-scale-of-the-specified-deployment),
        then sets it with a JSON merge patch of the Scale
        (``PATCH .../scale``, ``Content-Type: application/merge-patch+json``,
        https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/deployment-v1/#patch-partially-update-scale-of-the-specified-deployment)
        that carries the resourceVersion it read, so a scale made by someone else between
        the two is not overwritten (409 ``conflict``, nothing changed) and
        ``previous_replicas`` is the count this call replaced. No write is sent when the
        deployment has that count already (``changed`` false). Returns ``{"namespace",
        "name", "previous_replicas", "replicas", "uid", "resource_version", "changed"}``.
        RBAC: ``get`` and ``patch`` on ``deployments/scale``. Raises ``ToolError`` naming
        the status: 404 ``not_found``, 409 ``conflict``, 422 ``invalid``, 401, 403
        ``forbidden``, ``rate_limited``; ``EffectUncertainError`` when the patch's answer
        was lost or did not come in time.
        """
        current = await self._read_scale(ctx, args.namespace, args.name)
        result = {
            "namespace": args.namespace,
            "name": args.name,
            "previous_replicas": current["replicas"],
            "replicas": args.replicas,
            "uid": current["uid"],
            "resource_version": current["resource_version"],
            "changed": current["replicas"] != args.replicas,
        }
        if not result["changed"]:
            return result
        patch = {
            "metadata": {"uid": current["uid"], "resourceVersion": current["resource_version"]},
            "spec": {"replicas": args.replicas},
        }
        resp = await self._patch(
            ctx, url_path(_SCALE, namespace=args.namespace, name=args.name), patch, MERGE_PATCH
        )
        scale = self.expect_object(resp, "Scale", wrote=True)
        result["resource_version"] = _meta(scale).get("resourceVersion")
        return result

    create_configmap = RequestTool(
        "POST",
        "/api/v1/namespaces/{namespace}/configmaps",
        effect=Effect.REVERSIBLE,
        permission="kubernetes:configmaps:write",
        input=CreateConfigMapArgs,
        output=ConfigMapCreated,
        compensation=Compensation(
            tool="kubernetes.delete_configmap",
            argument_map={
                "namespace": "args.namespace",
                "name": "args.name",
                "uid": "result.uid",
                "content_hash": "result.content_hash",
            },
            resources=["kubernetes:{args.namespace}/configmaps/{args.name}"],
        ),
        summary="Create a config map; fails if the name is taken, so the undo only ever deletes "
        "what this call made.",
        docs=f"{_CONFIGMAPS}#create-create-a-configmap",
        details="RBAC: ``create`` on ``configmaps``. 409 ``already_exists`` when a config map of "
        "that name exists (it is left as it is); 404 ``not_found`` for a missing namespace; 422 "
        "``invalid`` with the fields the API server refused. An answer without the new object's "
        "uid and resourceVersion is uncertain.",
        body=_new_configmap,
        echo=("namespace", "name"),
        keep=_configmap_made,
    )

    @tool(
        effect=Effect.IRREVERSIBLE,
        permission="kubernetes:deployments:restart",
        input=DeploymentArgs,
        output=DeploymentRestarted,
    )
    async def rollout_restart(self, args: DeploymentArgs, ctx: CallContext) -> dict[str, Any]:
        """Restart a deployment's pods as ``kubectl rollout restart`` does; cannot be undone.

        Reads the deployment (``GET /apis/apps/v1/namespaces/{namespace}/deployments/{name}``,
        https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/deployment-v1/#get-read-the-specified-deployment)
        and refuses a paused one, as kubectl does (code ``paused``: resume it first); then
        stamps the pod template's ``kubectl.kubernetes.io/restartedAt`` annotation with the
        current time with a strategic merge patch (``PATCH`` with ``Content-Type:
        application/strategic-merge-patch+json``,
        https://kubernetes.io/docs/reference/kubectl/generated/kubectl_rollout/kubectl_rollout_restart/).
        The controller then replaces every pod, so the call is irreversible and always
        needs approval. Returns ``{"namespace", "name", "restarted_at", "uid",
        "generation"}``. RBAC: ``get`` and ``patch`` on ``deployments``. Raises
        ``ToolError`` naming the status (404 ``not_found``, 401, 403 ``forbidden``,
        ``rate_limited``); ``EffectUncertainError`` when the patch's answer was lost or did
        not come in time.
        """
        path = url_path(_DEPLOYMENT, namespace=args.namespace, name=args.name)
        found = self.expect_object(await self.request(ctx, "GET", path), "Deployment", wrote=False)
        if _dig(found, "spec", "paused") is True:
            raise ToolError(
                f"kubernetes: deployment {args.namespace}/{args.name} is paused; a paused "
                "deployment does not roll out, so it is not restarted (resume it first)",
                code="paused",
            )
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}}
        resp = await self._patch(ctx, path, patch, STRATEGIC_MERGE_PATCH)
        obj = self.expect_object(resp, "Deployment", wrote=True)
        return {
            "namespace": args.namespace,
            "name": args.name,
            "restarted_at": stamp,
            "uid": _meta(obj).get("uid") or _meta(found).get("uid"),
            "generation": _meta(obj).get("generation"),
        }

    delete_pod = RequestTool(
        "DELETE",
        _POD,
        effect=Effect.IRREVERSIBLE,
        permission="kubernetes:pods:delete",
        input=DeletePodArgs,
        output=PodDeleted,
        summary="Delete a pod (its controller, if any, starts a replacement); cannot be undone.",
        docs=f"{_PODS}#delete-delete-a-pod",
        details="With ``uid``, only the pod of that uid is deleted (409 ``conflict`` when the "
        "name now belongs to another pod); with ``grace_period_seconds``, the pod gets that "
        "long to stop. RBAC: ``delete`` on ``pods``. 404 ``not_found`` when there is no such pod.",
        body=_pod_deletion,
        echo=("namespace", "name"),
        keep=_pod_deleted,
    )

    # -- compensations -----------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="kubernetes:deployments:scale",
        input=RestoreReplicasArgs,
        output=ReplicasRestored,
    )
    async def restore_replicas(self, args: RestoreReplicasArgs, ctx: CallContext) -> dict[str, Any]:
        """Put back the replica count scale_deployment replaced, unless someone scaled it since.

        When ``replicas`` and ``expected_replicas`` are the same count, the scale being
        undone found that count and left it (``changed`` false): it changed nothing, so
        nothing is read or written (``restored`` false, ``replicas`` null), whatever the
        deployment has now and even with ``ctx.overwrite``: a later scale is someone
        else's. Otherwise it reads the scale (``GET .../deployments/{name}/scale``). When
        the deployment has ``replicas`` already, nothing is written (``restored`` false).
        When it has another count than ``expected_replicas`` (the one scale_deployment
        set: an autoscaler or a person scaled it since), or its uid is not ``uid`` (it was
        deleted and created anew), nothing is changed and the call fails with code
        ``changed_since``, naming the count it has now. Otherwise it sets ``replicas``
        with a JSON merge patch carrying the uid and the resourceVersion it read
        (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/deployment-v1/#patch-partially-update-scale-of-the-specified-deployment),
        so a scale made between the read and the write fails it with 409 ``conflict``
        (run it again). When a person allowed this step's undo to overwrite
        (``ctx.overwrite``: ``reversi rollback RUN --overwrite STEP``, docs/engine.md),
        neither the count nor the uid is compared: the deployment of that name gets
        ``replicas`` back, with the uid and resourceVersion just read as preconditions.
        Returns ``{"namespace", "name", "replicas", "restored"}``. RBAC:
        ``get`` and ``patch`` on ``deployments/scale``. Raises ``ToolError``: code
        ``changed_since``; 404 ``not_found`` (the deployment is gone: nothing to
        restore); 409 ``conflict``; 401, 403, ``rate_limited``; ``EffectUncertainError``
        when the patch's answer was lost.
        """
        if args.replicas == args.expected_replicas:
            # The scale found that count and left it (changed false): it changed nothing, so
            # there is nothing to undo, whatever the deployment holds now.
            return {
                "namespace": args.namespace,
                "name": args.name,
                "replicas": None,
                "restored": False,
            }
        where = f"deployment {args.namespace}/{args.name}"
        current = await self._read_scale(ctx, args.namespace, args.name)
        if current["uid"] != args.uid and not ctx.overwrite:
            raise ToolError(
                f"kubernetes: {where} is not the one that was scaled: it was deleted and created "
                f"again since (uid {current['uid']}, not {args.uid}); not scaling the new one "
                f"({_FORCE})",
                code=CHANGED_SINCE,
            )
        done = {"namespace": args.namespace, "name": args.name, "replicas": current["replicas"]}
        if current["replicas"] == args.replicas:
            return {**done, "restored": False}
        if current["replicas"] != args.expected_replicas and not ctx.overwrite:
            raise ToolError(
                f"kubernetes: {where} now has {current['replicas']} replicas, not the "
                f"{args.expected_replicas} that kubernetes.scale_deployment set: someone (an "
                f"autoscaler or a person) scaled it since, so it is not put back to "
                f"{args.replicas} ({_FORCE})",
                code=CHANGED_SINCE,
            )
        patch = {
            "metadata": {"uid": current["uid"], "resourceVersion": current["resource_version"]},
            "spec": {"replicas": args.replicas},
        }
        await self._patch(
            ctx, url_path(_SCALE, namespace=args.namespace, name=args.name), patch, MERGE_PATCH
        )
        return {**done, "replicas": args.replicas, "restored": True}

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="kubernetes:configmaps:delete",
        input=DeleteConfigMapArgs,
        output=ConfigMapDeleted,
    )
    async def delete_configmap(self, args: DeleteConfigMapArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete the config map of ``uid``, unless it was edited; one gone or replaced is left.

        Reads it first (``GET /api/v1/namespaces/{namespace}/configmaps/{name}``). A 404
        means it is gone already, and a config map of another uid has taken the name
        (``replaced`` true): both leave everything as it is, with ``deleted`` false. When
        ``content_hash`` is given and its data or labels are no longer those the run's
        create_configmap wrote, nothing is deleted and the call fails with code
        ``changed_since``. Otherwise it deletes with ``DeleteOptions`` preconditions on
        the uid and the resourceVersion it read
        (``DELETE``, https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/config-map-v1/#delete-delete-a-configmap,
        https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/delete-options/),
        so an edit, or a new config map of the same name, arriving between the read and the
        delete is not deleted: the API server answers 409 ``conflict`` (run it again) and
        a 404 counts as gone. When a person allowed this step's undo to overwrite
        (``ctx.overwrite``: ``reversi rollback RUN --overwrite STEP``, docs/engine.md),
        an edited config map of ``uid`` is deleted all the same; one of another uid is
        still left alone (it is not the one the call created). Returns ``{"namespace",
        "name", "uid", "deleted", "replaced"}``. RBAC: ``get`` and ``delete`` on ``configmaps``. Raises ``ToolError``:
        code ``changed_since``; 409 ``conflict``; 401, 403 ``forbidden``,
        ``rate_limited``, 5xx naming the status; ``EffectUncertainError`` when the delete's
        answer was lost.
        """
        path = url_path(_CONFIGMAP, namespace=args.namespace, name=args.name)
        done = {"namespace": args.namespace, "name": args.name, "uid": args.uid}
        found = await self.request(ctx, "GET", path, ok_statuses={404})
        if found.status == 404:
            return {**done, "deleted": False, "replaced": False}
        configmap = self.expect_object(found, "ConfigMap", wrote=False)
        meta = _meta(configmap)
        if meta.get("uid") != args.uid:
            return {**done, "deleted": False, "replaced": True}
        edited = args.content_hash is not None and content_hash(configmap) != args.content_hash
        if edited and not ctx.overwrite:
            raise ToolError(
                f"kubernetes: config map {args.namespace}/{args.name} was changed since it was "
                "created: its data or labels are no longer what kubernetes.create_configmap "
                f"wrote (resourceVersion {meta.get('resourceVersion')}); not deleting someone "
                f"else's edit ({_FORCE})",
                code=CHANGED_SINCE,
            )
        preconditions = {"uid": args.uid}
        if isinstance(meta.get("resourceVersion"), str):
            preconditions["resourceVersion"] = meta["resourceVersion"]
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions}
        resp = await self.request(ctx, "DELETE", path, json=options, ok_statuses={404})
        return {**done, "deleted": resp.status != 404, "replaced": False}
