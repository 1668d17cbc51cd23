"""Fixtures of the gitlab connector tests: a seeded FakeGitLab on a real port, a connector on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from reversi_connector_gitlab import GitlabConnector
from reversi_connector_gitlab.testing import FakeGitLab, seed_example
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

TOKEN = "glpat-testSecretToken-0123456789abcdef"
"""The token every test connector and fake use; it must never show up outside headers."""

READ_ONLY_TOKEN = "glpat-readApiOnlyToken-0123456789abc"
"""A token of the fake with the read_api scope only."""


@pytest.fixture
def fake() -> FakeGitLab:
    """A FakeGitLab holding :func:`seed_example`'s projects."""
    app = FakeGitLab(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(app)
    return app


@pytest.fixture
def server(fake: FakeGitLab) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


@pytest.fixture
async def gitlab(fake: FakeGitLab, server: FakeServer) -> AsyncIterator[GitlabConnector]:
    """A connector on the fake with short limits (closed after the test)."""
    connector = GitlabConnector(
        TOKEN, base_url=fake.base_url(server), timeouts=Timeouts(connect=2, read=2, total=2)
    )
    yield connector
    await connector.aclose()
