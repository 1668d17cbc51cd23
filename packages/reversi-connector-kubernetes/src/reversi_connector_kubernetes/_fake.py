"""FakeKubernetes: the part of the Kubernetes API the connector uses, on the kit's vendor fake."""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from reversi_core.testing import BearerAuth, FakeRequest, FakeResponse, VendorFake, vendor_route

from ._rbac import Rule
from ._state import LabelSelector, SelectorError, Store, field_matches, merge_patch, now

__all__ = ["DEFAULT_IMAGE", "PATCH_TYPES", "FakeKubernetes"]

DEFAULT_IMAGE = "registry.k8s.io/nginx:1.27"
"""The container image of a deployment or pod the fake is given without one."""

PATCH_TYPES = frozenset(
    {"application/merge-patch+json", "application/strategic-merge-patch+json"}
)
"""The patch media types the fake applies (both as a JSON merge patch: the connector patches maps)."""

_API = "https://kubernetes.io/docs/reference/kubernetes-api"
_DEPLOYMENT_DOCS = f"{_API}/workload-resources/deployment-v1/"
_POD_DOCS = f"{_API}/workload-resources/pod-v1/"
_CONFIGMAP_DOCS = f"{_API}/config-and-storage-resources/config-map-v1/"
_DEPLOYMENT = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/(?P<namespace>[^/]+))?"
    r"/(?P<resource>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)
_VERBS = {"GET": "get", "POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}
_KINDS = {"deployments": ("apps", "Deployment"), "pods": ("", "Pod"), "configmaps": ("", "ConfigMap")}


def _qualified(resource: str) -> str:
    """``deployments.apps``, ``pods``: a resource as the API server names it in messages."""
    group = _KINDS.get(resource.split("/")[0], ("", ""))[0]
    return f"{resource}.{group}" if group else resource


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> tuple[str, str, str] | None:
    """``(api group, resource[/subresource], verb)`` of a request, as the authorizer sees it.

    https://kubernetes.io/docs/reference/access-authn-authz/authorization/#determine-the-request-verb:
    a GET of a collection is ``list`` (``watch`` with ``watch=true``), of one object
    ``get``; a DELETE of a collection is ``deletecollection``. ``None`` for a path that
    names no resource.
    """
    found = _PATH.match(path)
    if found is None:
        return None
    named = found["name"] is not None
    verb = _VERBS.get(method.upper(), method.lower())
    if method.upper() == "GET" and (not named or query.get("watch") == "true"):
        verb = "watch" if query.get("watch") == "true" else "list"
    elif method.upper() == "DELETE" and not named:
        verb = "deletecollection"
    resource = found["resource"] + (f"/{found['sub']}" if found["sub"] else "")
    return found["group"] or "", resource, verb


class FakeKubernetes(VendorFake):
    """A fake Kubernetes API server: deployments (and their scale), pods and config maps.

    Written from the API reference (each route cites its page). ``token`` may do
    anything (a cluster admin); each token of ``grants`` may do what its RBAC rules
    (:class:`reversi_connector_kubernetes.testing.Rule`) allow, and gets 403 ``Forbidden``
    otherwise, with the API server's message naming the verb, resource and group
    (https://kubernetes.io/docs/reference/access-authn-authz/rbac/). Any other bearer token
    gets 401 ``Unauthorized``. Every error is a ``Status`` object
    (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/).

    What it models: resourceVersions from one cluster revision counter (every write bumps
    it); uids; a deployment controller that, when :attr:`controller` is on (the default),
    brings a deployment's status to its spec at once and so moves its resourceVersion
    again after each spec change (as the real controller's status updates do); the scale
    subresource (autoscaling/v1 ``Scale``); merge and strategic merge patches of maps
    (JSON patch and server-side apply are 415); resourceVersion and uid preconditions
    (409 ``Conflict``) in patches and in ``DeleteOptions``; 409 ``AlreadyExists`` on
    create; 404 ``NotFound`` naming the object, and for a create in a namespace that does
    not exist; label and field selectors; paginated lists (``limit``, ``continue``,
    ``remainingItemCount``) whose tokens expire (410 ``Expired``) after :meth:`compact`;
    a ConfigMap's key and size rules (422 ``Invalid``). A deleted pod goes at once (the
    API server keeps it, terminating, for its grace period) and no controller replaces it;
    a restart changes the template annotation but replaces no pods.

    Every answer is a copy of what is stored (taken under the lock), so a later change
    cannot alter an answer on its way out.

    Set state up with :meth:`add_namespace`, :meth:`add_deployment`, :meth:`add_pod`,
    :meth:`add_configmap`; change it as someone else would with :meth:`set_replicas`,
    :meth:`edit_configmap`, :meth:`recreate_deployment`, :meth:`replace_configmap`.
    :meth:`snapshot` returns the state as plain data. Take :attr:`lock` to read or change
    :attr:`store` while requests may be in flight.
    """

    auth = BearerAuth()

    def __init__(
        self,
        *,
        token: str = "fake-kubernetes-admin-token-0000",  # noqa: S107 - a fake's made-up token
        grants: Mapping[str, Iterable[Rule]] | None = None,
        rate_limit: int | None = None,
        controller: bool = True,
    ) -> None:
        self.grants = {t: tuple(rules) for t, rules in (grants or {}).items()}
        super().__init__(token=token, read_only_tokens=self.grants, rate_limit=rate_limit)
        self.store = Store()
        self.controller = controller
        """Whether deployments' status follows their spec at once (the deployment controller)."""

    # -- the API server's answers to what the kit checks ---------------------------------

    def status(
        self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
    ) -> FakeResponse:
        """A ``Status`` failure object with HTTP status ``code``."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
        if details:
            body["details"] = dict(details)
        return FakeResponse(code, json=body)

    def error(self, status: int, message: str, *, code: str | None = None, **extra: Any) -> FakeResponse:
        reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
                   409: "Conflict", 415: "UnsupportedMediaType", 422: "Invalid",
                   429: "TooManyRequests"}
        return self.status(status, code or reasons.get(status, "InternalError"), message, extra)

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.status(404, "NotFound", "the server could not find the requested resource")

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        return self.status(401, "Unauthorized", "Unauthorized")

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        answer = self.status(429, "TooManyRequests", "Too many requests, please try again later.")
        return dataclasses.replace(answer, headers={"Retry-After": "1"})

    def malformed_body(self, request: FakeRequest, problem: str) -> FakeResponse:
        return self.status(400, "BadRequest", f"couldn't get version/kind; json parse error: {problem}")

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        """Authorize a granted token by its rules, then serve it as the kit's checks say.

        A token of :attr:`grants` whose rules allow the request is served as ``token``
        (the kit's read-only tokens may not write); one whose rules do not gets 403.
        """
        credential = self.auth.credential(request)
        if credential in self.grants:
            refused = self._authorize(request, credential)
            if refused is not None:
                return refused
            headers = {k: v for k, v in request.headers.items() if k.lower() != "authorization"}
            headers["authorization"] = f"Bearer {self.token}"
            request = dataclasses.replace(request, headers=headers)
        return super().dispatch(request)

    def _authorize(self, request: FakeRequest, token: str) -> FakeResponse | None:
        path = request.target.split("?", 1)[0]
        attributes = request_attributes(request.method, path, request.query)
        if attributes is None:
            return None
        group, resource, verb = attributes
        if any(rule.allows(group, resource, verb) for rule in self.grants[token]):
            return None
        found = _PATH.match(path)
        assert found is not None
        name, namespace = found["name"], found["namespace"]
        subject = f'{_qualified(resource.split("/")[0])} "{name}"' if name else _qualified(resource)
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        return self.status(
            403,
            "Forbidden",
            f'{subject} is forbidden: User "system:serviceaccount:{namespace or "default"}:agent" '
            f'cannot {verb} resource "{resource}" in API group "{group}"{where}',
            {"name": name, "group": group, "kind": resource.split("/")[0]},
        )

    # -- set-up, changes made by others, inspection --------------------------------------

    def add_namespace(self, namespace: str) -> None:
        """Make ``namespace`` exist (objects added to one make it exist too)."""
        with self.lock:
            self.store.namespaces.add(namespace)

    def add_deployment(
        self,
        namespace: str,
        name: str,
        *,
        replicas: int = 1,
        image: str = DEFAULT_IMAGE,
        labels: Mapping[str, str] | None = None,
        paused: bool = False,
    ) -> dict[str, Any]:
        """Create a deployment (selector and template labels ``app: <name>`` unless ``labels``)."""
        selector = dict(labels or {"app": name})
        spec: dict[str, Any] = {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": dict(selector)},
                "spec": {"containers": [{"name": name.split(".")[0], "image": image}]},
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        }
        if paused:
            spec["paused"] = True
        obj = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "generation": 1,
                         "labels": dict(selector)},
            "spec": spec,
        }
        with self.lock:
            self.store.put("deployments", obj)
            self._reconcile(obj)
            return copy.deepcopy(obj)

    def add_pod(
        self,
        namespace: str,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        phase: str = "Running",
        ready: bool = True,
        node: str | None = "node-1",
        owner: tuple[str, str] | None = None,
        restarts: int = 0,
        image: str = DEFAULT_IMAGE,
    ) -> dict[str, Any]:
        """Create a pod; ``owner`` is its controller as ``(kind, name)``, such as a ReplicaSet."""
        started = now()
        meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
        if owner is not None:
            meta["ownerReferences"] = [{
                "apiVersion": "apps/v1", "kind": owner[0], "name": owner[1],
                "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{owner[1]}")),
                "controller": True, "blockOwnerDeletion": True,
            }]
        spec: dict[str, Any] = {
            "containers": [{"name": "main", "image": image}],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
        }
        if node is not None:
            spec["nodeName"] = node
        running = phase == "Running"
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready and running else "False"}],
            "containerStatuses": [{
                "name": "main", "image": image, "imageID": "", "ready": ready and running,
                "restartCount": restarts, "started": running,
                "state": {"running": {"startedAt": started}} if running else {"waiting": {}},
            }],
            "startTime": started,
        }
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
        with self.lock:
            return copy.deepcopy(self.store.put("pods", obj))

    def add_configmap(
        self,
        namespace: str,
        name: str,
        data: Mapping[str, str] | None = None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Create a config map and return it (with its uid and resourceVersion)."""
        meta: dict[str, Any] = {"name": name, "namespace": namespace}
        if labels:
            meta["labels"] = dict(labels)
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data or {})}
        with self.lock:
            return copy.deepcopy(self.store.put("configmaps", obj))

    def set_replicas(self, namespace: str, name: str, replicas: int) -> None:
        """Scale a deployment as someone else would (an autoscaler, ``kubectl scale``)."""
        with self.lock:
            obj = self._stored("deployments", namespace, name)
            obj["spec"]["replicas"] = replicas
            self._spec_changed(obj)

    def recreate_deployment(self, namespace: str, name: str) -> None:
        """Delete a deployment and create one of the same name and spec: a new uid."""
        with self.lock:
            old = self.store.remove("deployments", namespace, name)
            old["metadata"] = {
                k: v for k, v in old["metadata"].items()
                if k in ("name", "namespace", "labels", "annotations")
            }
            old["metadata"]["generation"] = 1
            old.pop("status", None)
            self.store.put("deployments", old)
            self._reconcile(old)

    def edit_configmap(
        self,
        namespace: str,
        name: str,
        data: Mapping[str, str] | None = None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """Change a config map's data (and labels, when given) as someone else would."""
        with self.lock:
            obj = self._stored("configmaps", namespace, name)
            if data is not None:
                obj["data"] = dict(data)
            if labels is not None:
                obj["metadata"]["labels"] = dict(labels)
            self.store.write(obj)

    def replace_configmap(self, namespace: str, name: str) -> None:
        """Delete a config map and create another of the same name and data: a new uid."""
        with self.lock:
            old = self.store.remove("configmaps", namespace, name)
            self.store.put("configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace}, "data": old.get("data", {}),
            })

    def compact(self) -> None:
        """Compact the history: continue tokens handed out so far expire (410 ``Expired``)."""
        with self.lock:
            self.store.compacted = self.store.revision

    def object(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A copy of the stored object (``resource``: deployments, pods, configmaps), or ``None``."""
        with self.lock:
            found = self.store.get(resource, namespace, name)
            return copy.deepcopy(found) if found is not None else None

    def snapshot(self) -> dict[str, Any]:
        """The state as plain JSON data (what certification fingerprints).

        ``{"namespaces": [...], "deployments": {"ns/name": {"replicas", "paused",
        "restarted_at", "uid"}}, "pods": {"ns/name": uid}, "configmaps": {"ns/name":
        {"data", "labels", "uid"}}}``. ResourceVersions, timestamps and status are left
        out: they move with every write, also one that is undone.
        """
        with self.lock:
            store = self.store
            return copy.deepcopy({
                "namespaces": sorted(store.namespaces),
                "deployments": {
                    f"{ns}/{name}": {
                        "replicas": obj["spec"].get("replicas"),
                        "paused": obj["spec"].get("paused", False),
                        "restarted_at": (obj["spec"]["template"].get("metadata", {})
                                         .get("annotations", {}).get("kubectl.kubernetes.io/restartedAt")),
                        "uid": obj["metadata"]["uid"],
                    }
                    for ns, name, obj in store.all("deployments")
                },
                "pods": {f"{ns}/{name}": obj["metadata"]["uid"] for ns, name, obj in store.all("pods")},
                "configmaps": {
                    f"{ns}/{name}": {
                        "data": obj.get("data", {}),
                        "labels": obj["metadata"].get("labels", {}),
                        "uid": obj["metadata"]["uid"],
                    }
                    for ns, name, obj in store.all("configmaps")
                },
            })

    # -- helpers -----------------------------------------------------------------------

    def _stored(self, resource: str, namespace: str, name: str) -> dict[str, Any]:
        found = self.store.get(resource, namespace, name)
        if found is None:
            raise KeyError(f"no {resource} {namespace}/{name} in the fake")
        return found

    def _read(self, resource: str, request: FakeRequest) -> FakeResponse:
        """200 with a copy of the object the path names, or 404 naming it."""
        p = request.path_params
        obj = self.store.get(resource, p["namespace"], p["name"])
        return FakeResponse(200, json=copy.deepcopy(obj)) if obj is not None else self._missing(resource, p["name"])

    def _missing(self, resource: str, name: str) -> FakeResponse:
        kind = resource.split("/")[0]
        return self.status(
            404, "NotFound", f'{_qualified(kind)} "{name}" not found',
            {"name": name, "group": _KINDS[kind][0], "kind": kind},
        )

    def _conflict(self, resource: str, name: str, why: str) -> FakeResponse:
        kind = resource.split("/")[0]
        return self.status(
            409, "Conflict", f'Operation cannot be fulfilled on {_qualified(resource)} "{name}": {why}',
            {"name": name, "group": _KINDS[kind][0], "kind": resource},
        )

    def _invalid(self, kind: str, name: str, field: str, message: str) -> FakeResponse:
        return self.status(
            422, "Invalid", f'{kind} "{name}" is invalid: {field}: {message}',
            {"name": name, "kind": kind, "causes": [
                {"reason": "FieldValueInvalid", "message": message, "field": field}
            ]},
        )

    def _preconditions(
        self, resource: str, obj: Mapping[str, Any], uid: Any, version: Any
    ) -> FakeResponse | None:
        """409 when a given uid or resourceVersion is not the object's (the storage's check)."""
        meta, name = obj["metadata"], obj["metadata"]["name"]
        if uid is not None and uid != meta["uid"]:
            return self._conflict(
                resource, name, f"Precondition failed: UID in precondition: {uid}, UID in object "
                f"meta: {meta['uid']}",
            )
        if version is not None and version != meta["resourceVersion"]:
            return self._conflict(
                resource, name,
                "the object has been modified; please apply your changes to the latest version "
                "and try again",
            )
        return None

    def _deletable(
        self, resource: str, request: FakeRequest
    ) -> tuple[dict[str, Any], dict[str, Any]] | FakeResponse:
        """Delete the route's object when its ``DeleteOptions`` preconditions hold.

        Returns the deleted object and the options, or the answer refusing it (404, 409).
        """
        p = request.path_params
        obj = self.store.get(resource, p["namespace"], p["name"])
        if obj is None:
            return self._missing(resource, p["name"])
        options = request.json if isinstance(request.json, dict) else {}
        pre = options.get("preconditions") or {}
        refused = self._preconditions(resource, obj, pre.get("uid"), pre.get("resourceVersion"))
        if refused is not None:
            return refused
        self.store.remove(resource, p["namespace"], p["name"])
        return obj, options

    def _spec_changed(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Record a spec change; return the object as written, before the controller's update.

        That is what the API server answers a patch with: the controller's status update
        comes after, with a resourceVersion of its own.
        """
        obj["metadata"]["generation"] = obj["metadata"].get("generation", 1) + 1
        written = copy.deepcopy(self.store.write(obj))
        self._reconcile(obj)
        return written

    def _reconcile(self, obj: dict[str, Any]) -> None:
        """The deployment controller: status follows spec (another write: a new resourceVersion)."""
        if not self.controller:
            return
        want = obj["spec"].get("replicas", 1)
        counts = {"replicas": want, "updatedReplicas": want, "readyReplicas": want,
                  "availableReplicas": want}
        status: dict[str, Any] = {"observedGeneration": obj["metadata"].get("generation", 1)}
        status.update({k: v for k, v in counts.items() if v})  # the API server omits zeros
        status["conditions"] = [{
            "type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
            "message": "Deployment has minimum availability.",
            "lastUpdateTime": now(), "lastTransitionTime": now(),
        }]
        obj["status"] = status
        self.store.write(obj)

    def _patch_body(self, request: FakeRequest) -> dict[str, Any] | FakeResponse:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in PATCH_TYPES:
            return self.status(
                415, "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {', '.join(sorted(PATCH_TYPES))}",
            )
        if not isinstance(request.json, dict):
            return self.malformed_body(request, "a patch must be a JSON object")
        return request.json

    def _scale(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        replicas = obj["spec"].get("replicas", 0)
        labels = obj["spec"].get("selector", {}).get("matchLabels", {})
        spec = {"replicas": replicas} if replicas else {}  # omitempty
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                               "creationTimestamp")},
            "spec": spec,
            "status": {
                "replicas": obj.get("status", {}).get("replicas", 0),
                "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
            },
        }

    # -- deployments -------------------------------------------------------------------

    @vendor_route("GET", _DEPLOYMENT, docs=f"{_DEPLOYMENT_DOCS}#get-read-the-specified-deployment")
    def read_deployment(self, request: FakeRequest) -> FakeResponse:
        """200 with the Deployment, 404."""
        return self._read("deployments", request)

    @vendor_route("PATCH", _DEPLOYMENT, body="json",
                  docs=f"{_DEPLOYMENT_DOCS}#patch-partially-update-the-specified-deployment")
    def patch_deployment(self, request: FakeRequest) -> FakeResponse:
        """200 with the Deployment; 404, 409 (uid or resourceVersion precondition), 415, 422.

        The patch applies to metadata labels and annotations and to the spec; status is
        the controller's (ignored here, as the API server ignores it on the main resource).
        """
        p = request.path_params
        obj = self.store.get("deployments", p["namespace"], p["name"])
        if obj is None:
            return self._missing("deployments", p["name"])
        patch = self._patch_body(request)
        if isinstance(patch, FakeResponse):
            return patch
        meta_patch = patch.get("metadata") or {}
        refused = self._preconditions(
            "deployments", obj, meta_patch.get("uid"), meta_patch.get("resourceVersion")
        )
        if refused is not None:
            return refused
        spec = merge_patch(obj["spec"], patch.get("spec") or {})
        replicas = spec.get("replicas", 1)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            return self._invalid("Deployment", p["name"], "spec.replicas",
                                 f"Invalid value: {json.dumps(replicas)}: must be greater than or equal to 0")
        for key in ("labels", "annotations"):
            if key in meta_patch:
                merged = merge_patch(obj["metadata"].get(key, {}), meta_patch[key] or {})
                obj["metadata"][key] = merged
        if spec != obj["spec"]:
            obj["spec"] = spec
            return FakeResponse(200, json=self._spec_changed(obj))
        if meta_patch.get("labels") or meta_patch.get("annotations"):
            self.store.write(obj)
        return FakeResponse(200, json=copy.deepcopy(obj))

    @vendor_route("GET", _DEPLOYMENT + "/scale",
                  docs=f"{_DEPLOYMENT_DOCS}#get-read-scale-of-the-specified-deployment")
    def read_scale(self, request: FakeRequest) -> FakeResponse:
        """200 with the autoscaling/v1 Scale, 404."""
        p = request.path_params
        obj = self.store.get("deployments", p["namespace"], p["name"])
        if obj is None:
            return self._missing("deployments", p["name"])
        return FakeResponse(200, json=self._scale(obj))

    @vendor_route("PATCH", _DEPLOYMENT + "/scale", body="json",
                  docs=f"{_DEPLOYMENT_DOCS}#patch-partially-update-scale-of-the-specified-deployment")
    def patch_scale(self, request: FakeRequest) -> FakeResponse:
        """200 with the Scale; 404, 409 (uid or resourceVersion precondition), 415, 422.

        Only ``spec.replicas`` of the patched Scale reaches the deployment; a
        ``metadata.resourceVersion`` or ``metadata.uid`` in the patch is a precondition.
        """
        p = request.path_params
        obj = self.store.get("deployments", p["namespace"], p["name"])
        if obj is None:
            return self._missing("deployments", p["name"])
        patch = self._patch_body(request)
        if isinstance(patch, FakeResponse):
            return patch
        scaled = merge_patch(self._scale(obj), patch)
        meta = scaled.get("metadata") or {}
        refused = self._preconditions(
            "deployments/scale", obj, meta.get("uid"), meta.get("resourceVersion")
        )
        if refused is not None:
            return refused
        replicas = (scaled.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            return self._invalid("Scale", p["name"], "spec.replicas",
                                 f"Invalid value: {json.dumps(replicas)}: must be greater than or equal to 0")
        if replicas == obj["spec"].get("replicas"):
            return FakeResponse(200, json=self._scale(obj))  # a no-op writes nothing
        obj["spec"]["replicas"] = replicas
        return FakeResponse(200, json=self._scale(self._spec_changed(obj)))

    # -- pods --------------------------------------------------------------------------

    @vendor_route("GET", "/api/v1/namespaces/{namespace}/pods",
                  docs=f"{_POD_DOCS}#list-list-or-watch-objects-of-kind-pod")
    def list_pods(self, request: FakeRequest) -> FakeResponse:
        """200 with a PodList; 400 for a selector or continue token it cannot read, 410 ``Expired``.

        ``limit`` and ``continue`` page the list
        (https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks):
        the token names the list's revision and the last name served; it expires when the
        history is compacted past that revision.
        """
        q = request.query
        pods = self.store.listed("pods", request.path_params["namespace"])
        revision, after = self.store.revision, None
        token = q.get("continue")
        if token:
            try:
                state = json.loads(base64.urlsafe_b64decode(token.encode()))
                revision, after = int(state["rv"]), str(state["start"])
            except (ValueError, KeyError, TypeError, binascii.Error):
                return self.status(
                    400, "BadRequest", "continue key is not valid: incorrect encoded start "
                    "resourceVersion (version meta.k8s.io/v1)",
                )
            if revision <= self.store.compacted:
                return self.status(
                    410, "Expired",
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter.",
                )
        try:
            labels = LabelSelector.parse(q["labelSelector"]) if q.get("labelSelector") else None
            if labels is not None:
                pods = [o for o in pods if labels.matches(o["metadata"].get("labels", {}))]
            if q.get("fieldSelector"):
                pods = [o for o in pods if field_matches(o, q["fieldSelector"])]
        except SelectorError as exc:
            return self.status(400, "BadRequest", str(exc))
        if after is not None:
            pods = [o for o in pods if o["metadata"]["name"] > after]
        limit = int(q["limit"]) if q.get("limit", "").isdigit() and int(q["limit"]) > 0 else None
        page = pods[:limit] if limit else pods
        meta: dict[str, Any] = {"resourceVersion": str(self.store.revision)}
        if limit and len(pods) > limit:
            state = {"rv": revision, "start": page[-1]["metadata"]["name"]}
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
            meta["remainingItemCount"] = len(pods) - limit
        items = [{k: copy.deepcopy(v) for k, v in pod.items() if k not in ("kind", "apiVersion")} for pod in page]
        return FakeResponse(200, json={"kind": "PodList", "apiVersion": "v1", "metadata": meta,
                                       "items": items})

    @vendor_route("GET", "/api/v1/namespaces/{namespace}/pods/{name}",
                  docs=f"{_POD_DOCS}#get-read-the-specified-pod")
    def read_pod(self, request: FakeRequest) -> FakeResponse:
        """200 with the Pod, 404."""
        return self._read("pods", request)

    @vendor_route("DELETE", "/api/v1/namespaces/{namespace}/pods/{name}", body="json",
                  docs=f"{_POD_DOCS}#delete-delete-a-pod")
    def delete_pod(self, request: FakeRequest) -> FakeResponse:
        """200 with the Pod, its deletionTimestamp and grace period set; 404; 409 (preconditions)."""
        found = self._deletable("pods", request)
        if isinstance(found, FakeResponse):
            return found
        obj, options = found
        grace = options.get("gracePeriodSeconds", obj["spec"].get("terminationGracePeriodSeconds", 30))
        obj["metadata"]["deletionTimestamp"] = now()
        obj["metadata"]["deletionGracePeriodSeconds"] = grace
        return FakeResponse(200, json=copy.deepcopy(obj))

    # -- config maps -------------------------------------------------------------------

    @vendor_route("POST", "/api/v1/namespaces/{namespace}/configmaps", body="json",
                  docs=f"{_CONFIGMAP_DOCS}#create-create-a-configmap")
    def create_configmap(self, request: FakeRequest) -> FakeResponse:
        """201 with the ConfigMap; 400, 404 (no such namespace), 409 ``AlreadyExists``, 422."""
        namespace = request.path_params["namespace"]
        body = request.json if isinstance(request.json, dict) else None
        if body is None or body.get("kind", "ConfigMap") != "ConfigMap":
            return self.status(400, "BadRequest", "the body must be a v1 ConfigMap")
        given = body.get("metadata")
        meta: dict[str, Any] = given if isinstance(given, dict) else {}
        name = meta.get("name")
        if meta.get("namespace", namespace) != namespace:
            return self.status(400, "BadRequest", "the namespace of the provided object does not "
                               "match the namespace sent on the request")
        if not isinstance(name, str) or not name:
            return self._invalid("ConfigMap", "", "metadata.name", "Required value: name or "
                                 "generateName is required")
        if namespace not in self.store.namespaces:
            return self.status(404, "NotFound", f'namespaces "{namespace}" not found',
                               {"name": namespace, "kind": "namespaces"})
        if self.store.get("configmaps", namespace, name) is not None:
            return self.status(409, "AlreadyExists", f'configmaps "{name}" already exists',
                               {"name": name, "kind": "configmaps"})
        data = body.get("data") or {}
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            return self.status(400, "BadRequest", "data values must be strings")
        for key in data:
            if not re.fullmatch(r"[-._a-zA-Z0-9]+", key) or len(key) > 253:
                return self._invalid("ConfigMap", name, f"data[{key}]", f'Invalid value: "{key}": a '
                                     "valid config key must consist of alphanumeric characters, '-', "
                                     "'_' or '.'")
        if sum(len(k.encode()) + len(v.encode()) for k, v in data.items()) > 1024 * 1024:
            return self._invalid("ConfigMap", name, "[]", "Too long: must have at most 1048576 bytes")
        stored: dict[str, Any] = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": dict(data),
        }
        if meta.get("labels"):
            stored["metadata"]["labels"] = dict(meta["labels"])
        return FakeResponse(201, json=copy.deepcopy(self.store.put("configmaps", stored)))

    @vendor_route("GET", "/api/v1/namespaces/{namespace}/configmaps/{name}",
                  docs=f"{_CONFIGMAP_DOCS}#get-read-the-specified-configmap")
    def read_configmap(self, request: FakeRequest) -> FakeResponse:
        """200 with the ConfigMap, 404."""
        return self._read("configmaps", request)

    @vendor_route("DELETE", "/api/v1/namespaces/{namespace}/configmaps/{name}", body="json",
                  docs=f"{_CONFIGMAP_DOCS}#delete-delete-a-configmap")
    def delete_configmap(self, request: FakeRequest) -> FakeResponse:
        """200 with a ``Success`` Status naming the deleted uid; 404; 409 when a precondition fails."""
        found = self._deletable("configmaps", request)
        if isinstance(found, FakeResponse):
            return found
        obj, _ = found
        return FakeResponse(200, json={
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": obj["metadata"]["name"], "kind": "configmaps",
                        "uid": obj["metadata"]["uid"]},
        })
