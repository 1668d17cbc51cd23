"""Fixtures of the stripe connector tests: a seeded FakeStripe on a real port, a connector on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from reversi_connector_stripe import StripeConnector
from reversi_connector_stripe.testing import FakeStripe, seed_example
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

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
def server(fake: FakeStripe) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


@pytest.fixture
async def stripe(fake: FakeStripe, server: FakeServer) -> AsyncIterator[StripeConnector]:
    """A connector on the fake with short limits (closed after the test)."""
    connector = StripeConnector(
        KEY, base_url=fake.base_url(server), timeouts=Timeouts(connect=2, read=2, total=2)
    )
    yield connector
    await connector.aclose()
