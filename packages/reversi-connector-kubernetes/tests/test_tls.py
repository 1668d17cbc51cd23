"""TLS against the API server, over a real handshake with trustme CAs.

With ``KUBE_CA_CERT`` the server's certificate must chain to that CA; without it, to the
system's trust store; verification cannot be turned off. A certificate from another CA,
an expired one and one for another name are each refused before anything is sent, with
``ToolError(code="tls_verify_failed")`` saying why and what it was checked against.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from reversi_connector_kubernetes import KubernetesConnector
from reversi_connector_kubernetes import connector as connector_module
from reversi_connector_kubernetes.testing import FakeKubernetes, seed_example
from reversi_core.errors import ConfigurationError, EffectUncertainError, ToolError
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

TOKEN = "kube-tlsTestToken-0123456789abcdefXYZ"

READ = ("kubernetes.get_deployment", {"namespace": "default", "name": "web"})
WRITE = ("kubernetes.scale_deployment", {"namespace": "default", "name": "web", "replicas": 9})


def _connector(server: FakeServer, ca_cert: Path | str | None) -> KubernetesConnector:
    return KubernetesConnector(
        api_server=server.url, token=TOKEN, ca_cert=ca_cert, timeouts=Timeouts(2, 2, 2)
    )


def _ca_file(ca: trustme.CA, directory: Path) -> Path:
    path = directory / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def seeded() -> FakeKubernetes:
    fake = FakeKubernetes(token=TOKEN)
    seed_example(fake)
    return fake


@pytest.fixture
def fresh_system_trust() -> Iterator[None]:
    """Forget the cached system trust store before and after the test (it reads SSL_CERT_FILE)."""
    connector_module._system_trust.cache_clear()
    yield
    connector_module._system_trust.cache_clear()


async def _refused(k8s: KubernetesConnector, call: tuple[str, dict[str, Any]]) -> ToolError:
    try:
        with pytest.raises(ToolError) as caught:
            await k8s.call(*call)
    finally:
        await k8s.aclose()
    assert not isinstance(caught.value, EffectUncertainError)
    assert caught.value.code == "tls_verify_failed"
    assert caught.value.status is None
    assert TOKEN not in str(caught.value)
    return caught.value


@pytest.mark.anyio
async def test_the_cluster_ca_is_trusted_over_a_real_handshake(
    seeded: FakeKubernetes, ca: trustme.CA, tmp_path: Path
) -> None:
    with FakeServer(seeded, tls=ca) as server:
        assert server.url.startswith("https://127.0.0.1:")
        k8s = _connector(server, _ca_file(ca, tmp_path))
        assert (await k8s.call(*READ))["replicas"] == 3
        assert (await k8s.call(*WRITE))["previous_replicas"] == 3
        await k8s.aclose()
        assert [r.method for r in server.requests] == ["GET", "GET", "PATCH"]
        assert server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"


@pytest.mark.anyio
@pytest.mark.parametrize("call", [READ, WRITE], ids=["read", "write"])
async def test_a_certificate_from_another_ca_is_refused(
    seeded: FakeKubernetes, ca: trustme.CA, tmp_path: Path, call: tuple[str, dict[str, Any]]
) -> None:
    other = _ca_file(trustme.CA(), tmp_path)
    with FakeServer(seeded, tls=ca) as server:
        before = seeded.snapshot()
        error = await _refused(_connector(server, other), call)
        assert server.requests == []  # nothing got past the handshake
        assert seeded.snapshot() == before
    text = str(error)
    assert "the API server's TLS certificate was refused (unable to get local issuer certificate)" in text
    assert f"checked against the CA certificate in KUBE_CA_CERT ({other})" in text
    assert "nothing was sent" in text


@pytest.mark.anyio
async def test_an_expired_certificate_is_refused(
    seeded: FakeKubernetes, ca: trustme.CA, tmp_path: Path
) -> None:
    ended = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    expired = ca.issue_cert(
        "127.0.0.1", not_before=ended - dt.timedelta(days=90), not_after=ended
    )
    with FakeServer(seeded, tls=ca, certificate=expired) as server:
        error = await _refused(_connector(server, _ca_file(ca, tmp_path)), WRITE)
        assert server.requests == []
    assert "refused (certificate has expired)" in str(error)


@pytest.mark.anyio
async def test_a_certificate_for_another_name_is_refused(
    seeded: FakeKubernetes, ca: trustme.CA, tmp_path: Path
) -> None:
    elsewhere = ca.issue_cert("kubernetes.default.svc", "10.96.0.1")
    with FakeServer(seeded, tls=ca, certificate=elsewhere) as server:
        error = await _refused(_connector(server, _ca_file(ca, tmp_path)), READ)
        assert server.requests == []
    text = str(error)
    assert "IP address mismatch, certificate is not valid for '127.0.0.1'" in text
    assert "KUBE_API_SERVER must name a host or address the certificate is issued for" in text


@pytest.mark.anyio
@pytest.mark.usefixtures("fresh_system_trust")
async def test_without_a_ca_file_the_system_trust_store_decides(
    seeded: FakeKubernetes, ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(seeded, tls=ca) as server:
        # the throwaway CA is in no system store: refused, naming the system's trust store
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        error = await _refused(_connector(server, None), READ)
        assert "checked against the system's trust store (set KUBE_CA_CERT" in str(error)
        # a system store that holds the CA (OpenSSL reads SSL_CERT_FILE) trusts the server
        connector_module._system_trust.cache_clear()
        monkeypatch.setenv("SSL_CERT_FILE", str(_ca_file(ca, tmp_path)))
        k8s = _connector(server, None)
        assert (await k8s.call(*READ))["name"] == "web"
        await k8s.aclose()


@pytest.mark.anyio
async def test_kube_ca_cert_from_the_environment(
    seeded: FakeKubernetes, ca: trustme.CA, tmp_path: Path
) -> None:
    with FakeServer(seeded, tls=ca) as server:
        env = {"KUBE_API_SERVER": server.url, "KUBE_TOKEN": TOKEN,
               "KUBE_CA_CERT": str(_ca_file(ca, tmp_path))}
        k8s = KubernetesConnector.from_env(env)
        assert isinstance(k8s, KubernetesConnector)
        assert k8s.ca_cert == env["KUBE_CA_CERT"]
        assert (await k8s.call(*READ))["replicas"] == 3
        await k8s.aclose()


def test_verification_cannot_be_turned_off() -> None:
    with pytest.raises(TypeError):
        KubernetesConnector(api_server="https://k8s.example:6443", token=TOKEN, verify=False)  # type: ignore[call-arg]
    env = {"KUBE_API_SERVER": "https://k8s.example:6443", "KUBE_TOKEN": TOKEN}
    with pytest.raises(TypeError):
        KubernetesConnector.from_env(env, verify=False)


def test_a_ca_file_that_is_missing_or_not_pem_is_refused_when_built(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.pem"
    with pytest.raises(ConfigurationError, match="KUBE_CA_CERT names no file"):
        KubernetesConnector(api_server="https://k8s.example", token=TOKEN, ca_cert=missing)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    with pytest.raises(ConfigurationError, match="holds no CA certificate in PEM"):
        KubernetesConnector(api_server="https://k8s.example", token=TOKEN, ca_cert=garbage)


@pytest.mark.parametrize(
    "url",
    ["http://k8s.example:8080", "http://10.0.0.1:6443", "ftp://k8s.example", "k8s.example:6443"],
)
def test_the_token_never_travels_in_clear_to_another_machine(url: str) -> None:
    with pytest.raises(ConfigurationError, match="KUBE_API_SERVER") as caught:
        KubernetesConnector(api_server=url, token=TOKEN)
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8001", "http://localhost:8001", "http://[::1]:8001"])
def test_plain_http_to_a_loopback_proxy_is_accepted(url: str) -> None:
    assert KubernetesConnector(api_server=url, token=TOKEN).base_url.startswith("http://")
