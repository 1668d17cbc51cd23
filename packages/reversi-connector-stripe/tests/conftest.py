"""Fixtures of the stripe connector tests: a seeded FakeStripe on a real port, a connector on it.

Every exchange a test has with the fake of :func:`server` is checked against Stripe's
OpenAPI description when the test ends (``tests/_openapi.py``): what the connector sent
and what the fake answered must both fit it, in every test that uses the fixture.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from reversi_connector_stripe import StripeConnector
from reversi_connector_stripe.testing import FakeStripe, seed_example
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _openapi

KEY = "sk_test_stripeTestsSecretKey0123456789"
"""The key every test connector and fake use; it must never show up outside headers."""

READ_ONLY_KEY = "rk_test_stripeReadOnlyKey0123456789"
"""A restricted key the fake lets read but not write."""


class Clock:
    """A clock the tests move: UNIX seconds, starting now."""

    def __init__(self, start: float = 1_760_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fake(clock: Clock) -> FakeStripe:
    """A FakeStripe holding :func:`seed_example`'s objects, on the test's clock."""
    app = FakeStripe(token=KEY, read_only_tokens=[READ_ONLY_KEY], clock=clock)
    seed_example(app)
    return app


@pytest.fixture
def off_description() -> list[str]:
    """``"METHOD /path"`` of requests a test sends outside Stripe's description on purpose
    (to see the fake refuse them): their request is not checked, their answer still is."""
    return []


@pytest.fixture
def server(fake: FakeStripe, off_description: list[str]) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running
    _, problems = _openapi.server_problems(running)
    meant = tuple(f"{where}: request" for where in off_description)
    unmeant = [p for p in problems if not p.startswith(meant)] if meant else problems
    assert unmeant == [], "exchanges that do not fit Stripe's OpenAPI description"


@pytest.fixture
async def stripe(fake: FakeStripe, server: FakeServer) -> AsyncIterator[StripeConnector]:
    """A connector on the fake with short limits (closed after the test)."""
    connector = StripeConnector(
        KEY, base_url=fake.base_url(server), timeouts=Timeouts(connect=2, read=2, total=2)
    )
    yield connector
    await connector.aclose()
