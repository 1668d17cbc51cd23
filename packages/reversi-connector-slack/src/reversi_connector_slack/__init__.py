"""Reversi connector for Slack: post messages and reactions, each undoable.

The connector is :class:`SlackConnector`, registered in the ``reversi.connectors``
entry-point group as ``slack``; it reads ``SLACK_BOT_TOKEN`` (and, for a proxy or a test
server, ``SLACK_BASE_URL``). Its tools and their limits are described in
:mod:`reversi_connector_slack.connector` and ``docs/connectors/slack.md``; a fake Slack
Web API to test agents against is in :mod:`reversi_connector_slack.testing`.
"""

from .__about__ import __version__
from ._errors import ERRORS, MAYBE_APPLIED
from .connector import DEFAULT_BASE_URL, SlackConnector

__all__ = ["DEFAULT_BASE_URL", "ERRORS", "MAYBE_APPLIED", "SlackConnector", "__version__"]
