"""Fixtures of the linear connector tests: a seeded FakeLinear on a real port, a connector on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from reversi_connector_linear import LinearConnector
from reversi_connector_linear.testing import FakeLinear, seed_example
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

API_KEY = "lin_api_testSecretKey_0123456789abcdefXYZ"
"""The API key every test connector and fake use; it must never show up outside headers."""

READ_ONLY_KEY = "lin_api_readOnlyKey_0123456789abcdefXYZ"
"""A key the fake lets run queries but not mutations."""


@pytest.fixture
def api_key() -> str:
    """The read-write key of the fake and the connector."""
    return API_KEY


@pytest.fixture
def read_only_key() -> str:
    return READ_ONLY_KEY


@pytest.fixture
def fake() -> FakeLinear:
    """A FakeLinear holding :func:`seed_example`'s workspace."""
    app = FakeLinear(api_key=API_KEY, read_only_keys=[READ_ONLY_KEY])
    seed_example(app)
    return app


@pytest.fixture
def server(fake: FakeLinear) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


@pytest.fixture
async def linear(server: FakeServer) -> AsyncIterator[LinearConnector]:
    """A connector on the fake with short limits (closed after the test)."""
    connector = LinearConnector(
        API_KEY, base_url=server.url, timeouts=Timeouts(connect=2, read=2, total=2)
    )
    yield connector
    await connector.aclose()
