"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_gcp import GcpConnector
from reversi_core.testing import ConnectorContract


class TestGcpContract(ConnectorContract):
    connector = GcpConnector
