"""Fixtures of the gcp tests: the fake per test, fake-gcs-server once per session (see _gcp_backends)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from reversi_connector_gcp.testing import TOKEN, FakeGCS
from reversi_core.testing import FakeServer

TESTS_DIR = Path(__file__).parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _gcp_backends import BUCKETS, Backend, Emulator  # noqa: E402 - found only after the tests folder is put on sys.path above


@pytest.fixture(scope="session")
def emulator() -> Iterator[Emulator]:
    running = Emulator.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def bucket() -> str:
    return next(BUCKETS)


@pytest.fixture
async def fake_backend(bucket: str) -> AsyncIterator[Backend]:
    fake = FakeGCS(token=TOKEN)
    fake.add_bucket(bucket)
    with FakeServer(fake) as server:
        backend = Backend("fake", bucket, server.url, fake=fake)
        yield backend
        await backend.aclose()


@pytest.fixture
async def emulator_backend(emulator: Emulator, bucket: str) -> AsyncIterator[Backend]:
    emulator.http.post("/storage/v1/b", json={"name": bucket}).raise_for_status()
    backend = Backend("fake-gcs-server", bucket, emulator.url, emulator=emulator)
    yield backend
    await backend.aclose()


@pytest.fixture(params=["fake", "emulator"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test that takes it runs on the fake and on fake-gcs-server."""
    found: Backend = request.getfixturevalue(f"{request.param}_backend")
    return found
