"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_teams import TeamsConnector
from reversi_core.testing import ConnectorContract


class TestTeamsContract(ConnectorContract):
    connector = TeamsConnector
