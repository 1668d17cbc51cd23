"""Reversi connector for Google Calendar: events through the Calendar API v3, each change undoable.

The connector is :class:`GcalendarConnector`, registered in the ``reversi.connectors``
entry-point group as ``gcalendar``; it reads ``GOOGLE_CALENDAR_TOKEN`` (and, optionally,
``GOOGLE_CALENDAR_BASE_URL``). Its tools and limits are described in
:mod:`reversi_connector_gcalendar.connector` and ``docs/connectors/gcalendar.md``; a fake
Calendar to test agents against is in :mod:`reversi_connector_gcalendar.testing`.
"""

from .__about__ import __version__
from ._errors import CHANGED_SINCE, error_code_and_message
from .connector import DEFAULT_BASE_URL, NO_EMAILS, GcalendarConnector

__all__ = [
    "CHANGED_SINCE",
    "DEFAULT_BASE_URL",
    "NO_EMAILS",
    "GcalendarConnector",
    "__version__",
    "error_code_and_message",
]
