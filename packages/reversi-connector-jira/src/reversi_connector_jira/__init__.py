"""The jira connector for Reversi."""

from .__about__ import __version__
from .connector import JiraConnector

__all__ = ["JiraConnector", "__version__"]
