"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_slack import SlackConnector
from reversi_core.testing import ConnectorContract


class TestSlackContract(ConnectorContract):
    connector = SlackConnector
