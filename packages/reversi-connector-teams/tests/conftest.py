"""Fixtures of the teams connector tests: a seeded FakeGraph on a real port, a connector on it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from reversi_connector_teams import TeamsConnector
from reversi_connector_teams.testing import FakeGraph, seed_example
from reversi_core.testing import FakeServer

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _teams_support import APP_TOKEN, SCOPELESS_TOKEN, TOKEN, connector_for  # noqa: E402


@pytest.fixture
def fake() -> FakeGraph:
    """A FakeGraph holding :func:`seed_example`'s team, channels paged by 2."""
    app = FakeGraph(
        token=TOKEN,
        read_only_tokens=[SCOPELESS_TOKEN],
        application_tokens=[APP_TOKEN],
        channel_page_size=2,
    )
    seed_example(app)
    return app


@pytest.fixture
def server(fake: FakeGraph) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


@pytest.fixture
async def teams(fake: FakeGraph, server: FakeServer) -> AsyncIterator[TeamsConnector]:
    """A connector on the fake with the delegated token (closed after the test)."""
    connector = connector_for(fake, server)
    yield connector
    await connector.aclose()
