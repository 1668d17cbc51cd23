"""What the gcalendar tests share: the tokens the fakes know and a connector builder."""

from __future__ import annotations

from reversi_connector_gcalendar import GcalendarConnector
from reversi_connector_gcalendar.testing import FakeCalendar
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer

TOKEN = "ya29.testSecretToken-0123456789abcdefXYZ"
"""The token every test connector and fake use; it must never show up outside headers."""
READ_ONLY_TOKEN = "ya29.readOnlyToken-0123456789abcdefXYZ"
"""A token with calendar.events.readonly only."""


def connector_for(fake: FakeCalendar, server: FakeServer, token: str = TOKEN) -> GcalendarConnector:
    """A connector with short limits on ``fake`` (close it with ``aclose``)."""
    return GcalendarConnector(
        token, base_url=fake.base_url(server), timeouts=Timeouts(connect=2, read=2, total=2)
    )
