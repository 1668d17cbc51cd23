"""Fixtures of the jira connector tests: a seeded FakeJira on a real port, a connector on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from reversi_connector_jira import JiraConnector
from reversi_connector_jira.testing import FakeJira, seed_example
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

EMAIL = "tester@reversi.example"
TOKEN = "ATATT3xTestSecretToken_0123456789abcdef"
"""The API token every test connector and fake use; it must never show up outside headers."""


@pytest.fixture
def token() -> str:
    return TOKEN


@pytest.fixture
def fake() -> FakeJira:
    """A FakeJira holding :func:`seed_example`'s project (and a read-only account)."""
    app = FakeJira(
        email=EMAIL,
        api_token=TOKEN,
        read_only=[("reader@reversi.example", "ATATT3xReader_0123456789")],
    )
    seed_example(app)
    return app


@pytest.fixture
def server(fake: FakeJira) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


@pytest.fixture
async def jira(server: FakeServer) -> AsyncIterator[JiraConnector]:
    """A connector on the fake with short limits (closed after the test)."""
    connector = JiraConnector(
        server.url, EMAIL, TOKEN, timeouts=Timeouts(connect=2, read=2, total=2)
    )
    yield connector
    await connector.aclose()
