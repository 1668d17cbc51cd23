"""Fixtures of the azure tests: the HTTPS fake per test, Azurite once per session (see _azure_backends)."""

from __future__ import annotations

import ssl
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from reversi_connector_azure.testing import ACCOUNT, TOKEN, FakeBlobStorage
from reversi_core.testing import FakeServer

TESTS_DIR = Path(__file__).parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _azure_backends import CONTAINERS, Azurite, Backend  # noqa: E402 - found only after the tests folder is put on sys.path above


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    running = Azurite.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def container() -> str:
    return next(CONTAINERS)


@pytest.fixture
async def fake_backend(container: str) -> AsyncIterator[Backend]:
    fake = FakeBlobStorage(token=TOKEN, account=ACCOUNT)
    fake.add_container(container)
    with FakeServer(fake, tls=True) as server:
        backend = Backend(
            "fake",
            container,
            f"{server.url}/{ACCOUNT}",
            TOKEN,
            server.client_ssl_context(),
            fake=fake,
        )
        yield backend
        await backend.aclose()


@pytest.fixture
async def azurite_backend(azurite: Azurite, container: str) -> AsyncIterator[Backend]:
    azurite.http.put(
        f"/{container}", params={"restype": "container"}, headers=azurite.dated()
    ).raise_for_status()
    verify = ssl.create_default_context(cafile=str(azurite.ca_path))
    backend = Backend("azurite", container, azurite.url, azurite.token, verify, azurite=azurite)
    yield backend
    await backend.aclose()


@pytest.fixture(params=["fake", "azurite"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test that takes it runs on the fake and on Azurite."""
    found: Backend = request.getfixturevalue(f"{request.param}_backend")
    return found
