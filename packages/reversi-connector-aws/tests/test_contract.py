"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_aws import AwsConnector
from reversi_core.testing import ConnectorContract


class TestAwsContract(ConnectorContract):
    connector = AwsConnector
