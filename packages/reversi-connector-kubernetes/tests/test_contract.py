"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_kubernetes import KubernetesConnector
from reversi_core.testing import ConnectorContract


class TestKubernetesContract(ConnectorContract):
    connector = KubernetesConnector
