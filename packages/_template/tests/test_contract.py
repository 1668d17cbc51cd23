"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector___connector__ import __Connector__Connector
from reversi_core.testing import ConnectorContract


class Test__Connector__Contract(ConnectorContract):
    connector = __Connector__Connector
