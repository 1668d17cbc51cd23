"""Reversi connector for Microsoft Teams: channel messages through Microsoft Graph v1.0.

The connector is :class:`TeamsConnector`, registered in the ``reversi.connectors``
entry-point group as ``teams``; it reads ``TEAMS_TOKEN`` (a Microsoft Graph access
token) and, optionally, ``TEAMS_BASE_URL``. Its tools and limits are described in
:mod:`reversi_connector_teams.connector` and ``docs/connectors/teams.md``; a fake Graph
to test agents against is in :mod:`reversi_connector_teams.testing`.
"""

from .__about__ import __version__
from ._errors import error_code_and_message
from .connector import DEFAULT_BASE_URL, POST_NEEDS_DELEGATION, TeamsConnector

__all__ = [
    "DEFAULT_BASE_URL",
    "POST_NEEDS_DELEGATION",
    "TeamsConnector",
    "__version__",
    "error_code_and_message",
]
