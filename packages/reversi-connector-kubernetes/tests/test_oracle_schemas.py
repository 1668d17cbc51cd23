"""A second oracle: every object FakeKubernetes serves fits the Kubernetes JSON Schemas.

``kubernetes-validate`` ships the JSON Schemas generated from the API server's OpenAPI
description, one per kind and release, in a *strict* variant that refuses unknown fields.
The connector is driven against the fake through every example and every declared failure
of the certification fixture; every JSON answer that names its kind (a Deployment, a
Scale, a PodList and each pod in it, a ConfigMap, a Status) is validated against the
schema of its kind for Kubernetes 1.37, and so is every body the connector sends: the
ConfigMap it creates, each ``DeleteOptions``, and each patch once applied to the object it
patches. A fake changed on purpose (a misspelt field, a count sent as a string, a Status
without its ``status``) fails, and the failure names the route and the field.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from kubernetes_validate.utils import schema_contents
from referencing import Registry, Resource

from reversi_connector_kubernetes import KubernetesConnector
from reversi_connector_kubernetes._state import merge_patch
from reversi_connector_kubernetes.testing import (
    EXAMPLES,
    FAILURES,
    FakeKubernetes,
    seed_example,
)
from reversi_core.errors import ToolError
from reversi_core.testing import ExampleCalls, FakeRequest, FakeResponse, FakeServer

KUBERNETES = "1.37.0"
TOKEN = "kube-schemaOracleToken-0123456789abcdef"

_FILES = {  # kinds whose schema file is not <kind>-<group>-<version>.json
    ("v1", "Status"): "status-meta-v1",
    ("v1", "DeleteOptions"): "deleteoptions-meta-v1",
}


def schema_problems(obj: Any, where: str) -> list[str]:
    """Why ``obj`` does not fit the strict schema of its ``kind`` and ``apiVersion`` (empty: it fits)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
        return [f"{where}: not an object naming its kind: {str(obj)[:80]}"]
    api, kind = str(obj.get("apiVersion")), obj["kind"]
    name = _FILES.get((api, kind))
    if name is None:
        group = api.split("/")[0].split(".")[0] + "-" if "/" in api else ""
        name = f"{kind.lower()}-{group}{api.split('/')[-1]}"
    folder = f"kubernetes-json-schema/v{KUBERNETES}-local-strict"
    try:
        schema = schema_contents(f"{folder}/{name}.json", KUBERNETES)
    except FileNotFoundError:
        return [f"{where}: no schema for {api} {kind}"]
    definitions = schema_contents(f"{folder}/_definitions.json", KUBERNETES)
    registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
    registry = Resource.from_contents(definitions) @ registry
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    return [
        f"{where}: {kind} at {'.'.join(str(p) for p in error.absolute_path) or '(top)'}: "
        f"{error.message}"
        for error in validator.iter_errors(obj)
    ]


def _patched_object(fake: FakeKubernetes, request: FakeRequest) -> dict[str, Any] | None:
    """The object a PATCH request would produce, from the fake's state before it."""
    p = request.path_params
    found = fake.object("deployments", p.get("namespace", ""), p.get("name", ""))
    if found is None or not isinstance(request.json, dict):
        return None
    target = fake._scale(found) if request.path.endswith("/scale") else found
    return merge_patch(copy.deepcopy(target), request.json)


@dataclass
class Recorder:
    """The schema problems of every exchange, and the kinds checked."""

    problems: list[str]
    checked: set[str]

    def check(self, request: FakeRequest, answer: FakeResponse, patched: Any) -> None:
        route = f"{request.method} {request.path}"
        if request.method in ("POST", "DELETE") and isinstance(request.json, dict):
            self._validate(request.json, f"{route} (request body)")
        if patched is not None:
            self._validate(patched, f"{route} (the patched object)")
        if isinstance(answer.json, dict):
            self._validate(answer.json, f"{route} -> {answer.status}")
            if answer.json.get("kind") == "PodList":
                for index, pod in enumerate(answer.json.get("items") or []):
                    item = {"apiVersion": "v1", "kind": "Pod", **pod}
                    self._validate(item, f"{route} -> items[{index}]")

    def _validate(self, obj: Any, where: str) -> None:
        if isinstance(obj, dict) and isinstance(obj.get("kind"), str):
            self.checked.add(obj["kind"])
        self.problems.extend(schema_problems(obj, where))


def _recording(fake_class: type[FakeKubernetes], recorder: Recorder) -> FakeKubernetes:
    """A seeded fake of ``fake_class`` whose every exchange ``recorder`` checks."""
    fake = fake_class(token=TOKEN)
    seed_example(fake)
    original = fake.dispatch

    def dispatch(request: FakeRequest) -> FakeResponse:
        with fake.lock:
            patched = _patched_object(fake, request) if request.method == "PATCH" else None
            answer = original(request)
            recorder.check(request, answer, patched)
            return answer

    fake.dispatch = dispatch  # type: ignore[method-assign]
    return fake


async def _drive(fake_class: type[FakeKubernetes], *, strict: bool = True) -> Recorder:
    """Every example and declared failure of the fixture, each on a fresh seeded fake.

    ``strict``: every example must succeed and every failure be refused. Otherwise (a
    drifted fake, which may break the connector too) the first example of each tool and
    the first declared failure are enough, and only the schema problems are looked at.
    """
    recorder = Recorder([], set())
    calls = [(t, e, False) for t, es in EXAMPLES.items() for e in (es if strict else es[:1])]
    calls += [(t, f.args, True) for t, fs in FAILURES.items() for f in (fs if strict else fs[:1])]
    for tool, example, refused in calls:
        with FakeServer(_recording(fake_class, recorder), tls=True) as server:
            k8s = KubernetesConnector(api_server=server.url, token=TOKEN, ca_cert=server.ca_path)
            outcome: ToolError | None = None
            try:
                args = await ExampleCalls(server, k8s).prepare(example)
                await k8s.call(tool, args)
            except ToolError as exc:
                outcome = exc
            if strict:
                assert (outcome is not None) == refused, f"{tool}: {outcome}"
            await k8s.aclose()
    return recorder


@pytest.mark.anyio
async def test_every_object_the_fake_serves_and_the_connector_sends_fits_the_schemas() -> None:
    recorder = await _drive(FakeKubernetes)
    assert recorder.problems == []
    assert recorder.checked >= {
        "Deployment", "Scale", "PodList", "Pod", "ConfigMap", "Status", "DeleteOptions"
    }


# -- drift: the oracle catches a fake changed on purpose --------------------------------


class _MisspeltStatus(FakeKubernetes):
    """Reports readyReplicas as 'readyReplica'."""

    def _reconcile(self, obj: dict[str, Any]) -> None:
        super()._reconcile(obj)
        status = obj.get("status", {})
        if "readyReplicas" in status:
            status["readyReplica"] = status.pop("readyReplicas")


class _StringReplicas(FakeKubernetes):
    """Answers a Scale whose spec.replicas is a string."""

    def _scale(self, obj: Any) -> dict[str, Any]:
        scale = super()._scale(obj)
        if "replicas" in scale["spec"]:
            scale["spec"]["replicas"] = str(scale["spec"]["replicas"])
        return scale


class _StatusWithoutCode(FakeKubernetes):
    """Puts the HTTP code of a Status in a string and names its outcome 'failed'."""

    def status(self, code: int, reason: str, message: str, details: Any = None) -> FakeResponse:
        answer = super().status(code, reason, message, details)
        return FakeResponse(answer.status, json={**answer.json, "code": str(code)})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("drifted", "expected"),
    [
        (_MisspeltStatus, "Deployment at status: Additional properties are not allowed ('readyReplica'"),
        (_StringReplicas, "Scale at spec.replicas: '3' is not of type 'integer'"),
        (_StatusWithoutCode, "Status at code: '404' is not of type 'integer'"),
    ],
    ids=["misspelt field", "string count", "status code as text"],
)
async def test_a_drifted_fake_fails_the_schemas(drifted: type[FakeKubernetes], expected: str) -> None:
    recorder = await _drive(drifted, strict=False)
    assert any(expected in problem for problem in recorder.problems), recorder.problems[:5]


def test_the_schemas_are_those_of_a_current_release() -> None:
    assert kubernetes_validate.utils.latest_version() >= "1.37"

