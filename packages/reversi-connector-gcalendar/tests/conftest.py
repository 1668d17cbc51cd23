"""Fixtures of the gcalendar tests: a seeded FakeCalendar on a real port, a connector on it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from reversi_connector_gcalendar import GcalendarConnector
from reversi_connector_gcalendar.testing import FakeCalendar, seed_example
from reversi_core.testing import FakeServer

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _gcal_support import READ_ONLY_TOKEN, TOKEN, connector_for  # noqa: E402


@pytest.fixture
def fake() -> FakeCalendar:
    """A FakeCalendar holding :func:`seed_example`'s calendars."""
    app = FakeCalendar(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(app)
    return app


@pytest.fixture
def server(fake: FakeCalendar) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


@pytest.fixture
async def calendar(fake: FakeCalendar, server: FakeServer) -> AsyncIterator[GcalendarConnector]:
    """A connector on the fake (closed after the test)."""
    connector = connector_for(fake, server)
    yield connector
    await connector.aclose()
