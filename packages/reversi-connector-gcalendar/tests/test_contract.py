"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_gcalendar import GcalendarConnector
from reversi_core.testing import ConnectorContract


class TestGcalendarContract(ConnectorContract):
    connector = GcalendarConnector
