"""The API server's Status answers become ToolError codes; no credential in any of them."""

from __future__ import annotations

import pytest

from reversi_connector_kubernetes import KubernetesConnector, reason_code
from reversi_connector_kubernetes.testing import FakeKubernetes
from reversi_core.errors import ToolError
from reversi_core.testing import FakeServer, Fault

WEB = {"namespace": "default", "name": "web"}


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("NotFound", "not_found"),
        ("AlreadyExists", "already_exists"),
        ("Conflict", "conflict"),
        ("Invalid", "invalid"),
        ("Expired", "expired"),
        ("UnsupportedMediaType", "unsupported_media_type"),
        ("Timeout", "server_timeout"),
        ("TooManyRequests", "rate_limited"),
        ("Object Not Found", "object_not_found"),
    ],
)
def test_reasons_become_snake_case_codes(reason: str, code: str) -> None:
    assert reason_code(reason) == code


@pytest.mark.anyio
async def test_a_wrong_token_is_401_unauthorized_without_the_token(server: FakeServer) -> None:
    wrong = "kube-wrongToken-0123456789abcdefXYZ"
    k8s = KubernetesConnector(api_server=server.url, token=wrong, ca_cert=server.ca_path)
    with pytest.raises(ToolError) as caught:
        await k8s.call("kubernetes.get_deployment", WEB)
    await k8s.aclose()
    assert (caught.value.status, caught.value.code) == (401, "unauthorized")
    assert wrong not in str(caught.value)


@pytest.mark.anyio
async def test_a_role_without_the_verb_is_403_naming_it(token: str) -> None:
    agent = "kube-agentWithNothing-0123456789abcdef"
    fake = FakeKubernetes(token=token, grants={agent: ()})
    fake.add_deployment("default", "web")
    with FakeServer(fake, tls=True) as server:
        k8s = KubernetesConnector(api_server=server.url, token=agent, ca_cert=server.ca_path)
        with pytest.raises(ToolError) as caught:
            await k8s.call("kubernetes.scale_deployment", {**WEB, "replicas": 2})
        await k8s.aclose()
    assert (caught.value.status, caught.value.code) == (403, "forbidden")
    assert 'cannot get resource "deployments/scale" in API group "apps"' in str(caught.value)


@pytest.mark.anyio
async def test_priority_and_fairness_429_is_rate_limited_with_its_wait(
    k8s: KubernetesConnector, server: FakeServer, fake: FakeKubernetes
) -> None:
    fake.exhaust_rate_limit()
    with pytest.raises(ToolError) as caught:
        await k8s.call("kubernetes.get_deployment", WEB)
    assert (caught.value.status, caught.value.code) == (429, "rate_limited")
    assert "retry after 1 s" in str(caught.value)


@pytest.mark.anyio
async def test_an_invalid_answer_names_the_field(k8s: KubernetesConnector, server: FakeServer) -> None:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'ConfigMap "x" is invalid', "reason": "Invalid", "code": 422,
            "details": {"causes": [{"field": "data[a b]", "message": "a valid config key must..."}]}}
    server.faults.add(Fault.status(422, json=body), method="POST")
    with pytest.raises(ToolError) as caught:
        await k8s.call("kubernetes.create_configmap", {"namespace": "default", "name": "x"})
    assert (caught.value.status, caught.value.code) == (422, "invalid")
    assert "data[a b]: a valid config key must" in str(caught.value)


@pytest.mark.anyio
async def test_a_patch_of_an_unknown_media_type_is_415(server: FakeServer, token: str) -> None:
    import httpx

    async with httpx.AsyncClient(verify=server.client_ssl_context()) as http:
        answer = await http.patch(
            f"{server.url}/apis/apps/v1/namespaces/default/deployments/web/scale",
            json={"spec": {"replicas": 1}}, headers={"Authorization": f"Bearer {token}"},
        )
    assert answer.status_code == 415
    assert answer.json()["reason"] == "UnsupportedMediaType"
