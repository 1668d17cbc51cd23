"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_azure import AzureConnector
from reversi_core.testing import ConnectorContract


class TestAzureContract(ConnectorContract):
    connector = AzureConnector
