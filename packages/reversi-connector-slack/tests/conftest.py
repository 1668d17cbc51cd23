"""Fixtures of the slack connector tests: a seeded FakeSlack on a real port, a connector on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from reversi_connector_slack import SlackConnector
from reversi_connector_slack.testing import FakeSlack, seed_example
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

TOKEN = "xoxb-1234567890-0987654321-testSecretToken"
"""The token every test connector and fake use; it must never show up outside headers."""

READ_ONLY_TOKEN = "xoxb-1234567890-0987654321-readOnlyToken"
"""A token of the fake with the read scopes only."""


@pytest.fixture
def fake() -> FakeSlack:
    """A FakeSlack holding :func:`seed_example`'s workspace."""
    app = FakeSlack(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(app)
    return app


@pytest.fixture
def server(fake: FakeSlack) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


@pytest.fixture
async def slack(fake: FakeSlack, server: FakeServer) -> AsyncIterator[SlackConnector]:
    """A connector on the fake with short limits (closed after the test)."""
    connector = SlackConnector(
        TOKEN, base_url=fake.base_url(server), timeouts=Timeouts(connect=2, read=2, total=2)
    )
    yield connector
    await connector.aclose()
