"""The generic facts every connector meets (reversi_core.testing.ConnectorContract), for github."""

from __future__ import annotations

from reversi_connector_github import GithubConnector
from reversi_core.testing import ConnectorContract


class TestGithubContract(ConnectorContract):
    connector = GithubConnector
