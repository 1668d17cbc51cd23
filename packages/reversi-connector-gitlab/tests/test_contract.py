"""The generic facts every connector meets (reversi_core.testing.ConnectorContract)."""

from __future__ import annotations

from reversi_connector_gitlab import GitlabConnector
from reversi_core.testing import ConnectorContract


class TestGitlabContract(ConnectorContract):
    connector = GitlabConnector
