"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_stripe import StripeConnector
from reversi_core.testing import ConnectorContract


class TestStripeContract(ConnectorContract):
    connector = StripeConnector
