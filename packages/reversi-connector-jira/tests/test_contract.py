"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_jira import JiraConnector
from reversi_core.testing import ConnectorContract


class TestJiraContract(ConnectorContract):
    connector = JiraConnector
