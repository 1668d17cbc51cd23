"""Fixtures of the github connector tests: a seeded FakeGitHub on a real port, a connector on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from reversi_connector_github import GithubConnector
from reversi_connector_github.testing import FakeGitHub, seed_example
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

TOKEN = "ghp_testSecretToken_0123456789abcdefXYZ"
"""The token every test connector and fake use; it must never show up outside headers."""

READ_ONLY_TOKEN = "ghp_readOnlyToken_0123456789abcdefXYZ"
"""A token the fake lets read but not write."""


@pytest.fixture
def token() -> str:
    """The token of the read-write connector."""
    return TOKEN


@pytest.fixture
def read_only_token() -> str:
    return READ_ONLY_TOKEN


@pytest.fixture
def fake() -> FakeGitHub:
    """A FakeGitHub holding :func:`seed_example`'s repositories."""
    app = FakeGitHub(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(app)
    return app


@pytest.fixture
def server(fake: FakeGitHub) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


@pytest.fixture
async def github(fake: FakeGitHub, server: FakeServer) -> AsyncIterator[GithubConnector]:
    """A connector on the fake with short limits (closed after the test)."""
    connector = GithubConnector(
        TOKEN, base_url=fake.base_url(server), timeouts=Timeouts(connect=2, read=2, total=2)
    )
    yield connector
    await connector.aclose()
