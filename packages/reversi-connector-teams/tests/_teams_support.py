"""What the teams tests share: the tokens the fakes know and a connector builder."""

from __future__ import annotations

from reversi_connector_teams import TeamsConnector
from reversi_connector_teams.testing import FakeGraph
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

TOKEN = "eyJ0eXAiOiJKV1QifQ.delegatedTestToken.0123456789abcdef"
"""The delegated token every test connector and fake use; it must never show up outside headers."""
SCOPELESS_TOKEN = "eyJ0eXAiOiJKV1QifQ.delegatedReadOnly.0123456789abcdef"
"""A delegated token with Channel.ReadBasic.All only."""
APP_TOKEN = "eyJ0eXAiOiJKV1QifQ.applicationOnly.0123456789abcdef"
"""An application (app-only) token."""


def connector_for(fake: FakeGraph, server: FakeServer, token: str = TOKEN) -> TeamsConnector:
    """A connector with short limits on ``fake`` (close it with ``aclose``)."""
    return TeamsConnector(
        token, base_url=fake.base_url(server), timeouts=Timeouts(connect=2, read=2, total=2)
    )
