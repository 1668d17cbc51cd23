"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_linear import LinearConnector
from reversi_core.testing import ConnectorContract


class TestLinearContract(ConnectorContract):
    connector = LinearConnector
