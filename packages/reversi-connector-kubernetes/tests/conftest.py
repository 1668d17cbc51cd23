"""Fixtures of the kubernetes connector tests: a seeded FakeKubernetes over TLS, a connector on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from reversi_connector_kubernetes import KubernetesConnector
from reversi_connector_kubernetes.testing import FakeKubernetes, seed_example
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

TOKEN = "kube-testSecretToken-0123456789abcdefXYZ"
"""The token every test connector and fake use; it must never show up outside headers."""


@pytest.fixture
def token() -> str:
    return TOKEN


@pytest.fixture
def fake() -> FakeKubernetes:
    """A FakeKubernetes holding :func:`seed_example`'s objects."""
    app = FakeKubernetes(token=TOKEN)
    seed_example(app)
    return app


@pytest.fixture
def server(fake: FakeKubernetes) -> Iterator[FakeServer]:
    with FakeServer(fake, tls=True) as running:
        yield running


@pytest.fixture
async def k8s(server: FakeServer) -> AsyncIterator[KubernetesConnector]:
    """A connector on the fake, trusting its CA, with short limits (closed after the test)."""
    connector = KubernetesConnector(
        api_server=server.url,
        token=TOKEN,
        ca_cert=server.ca_path,
        timeouts=Timeouts(connect=2, read=2, total=2),
    )
    yield connector
    await connector.aclose()
