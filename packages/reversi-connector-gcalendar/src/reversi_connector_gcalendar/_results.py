"""The result models of the gcalendar tools: what each tool returns, field by field.

They are the manifests' ``output_schema``; the registry checks every ``result.`` source of
an argument map and a ``requires`` against them. All are closed. ``calendar_id`` is the
calendar as given (``primary`` when left out), so each undo is computed from the result
alone. Shapes follow Calendar's Event resource
(https://developers.google.com/calendar/api/v3/reference/events#resource).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CreateEventResult",
    "DeleteEventResult",
    "EventSummary",
    "ListEventsResult",
    "RestoreEventResult",
    "UpdateEventResult",
]

_CALENDAR = "The calendar, as given ('primary' when left out)."

FieldValues = dict[
    Literal["summary", "description", "location", "start", "end"], str | dict[str, str] | None
]
"""Some of an event's five fields by name, each its value or null (empty). A map, not a model
with five properties: which fields it holds is part of what it says (update_event's
``previous`` holds exactly the fields the call changed). ``start`` and ``end`` are
EventDateTime objects as Calendar answers them."""


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EventSummary(_Result):
    """One event as gcalendar.list_events returns it."""

    id: str = Field(description="The event's id.")
    status: str | None = Field(description="'confirmed', 'tentative' or 'cancelled'.")
    summary: str | None = Field(description="Its title, or null.")
    description: str | None = Field(description="Its description, or null.")
    location: str | None = Field(description="Its location, or null.")
    start: dict[str, str] | None = Field(description="Its start ({'dateTime', 'timeZone'} or {'date'}).")
    end: dict[str, str] | None = Field(description="Its end, the same way.")
    html_link: str | None = Field(description="Its page in Google Calendar, or null.")
    updated: str | None = Field(description="When it last changed (RFC 3339), or null.")
    etag: str | None = Field(description="Its current ETag, or null.")


class ListEventsResult(_Result):
    """Result of gcalendar.list_events."""

    calendar_id: str = Field(description=_CALENDAR)
    events: list[EventSummary] = Field(description="The events of this page.")
    next_page_token: str | None = Field(description="Pass it as page_token for the next page; null at the end.")


class CreateEventResult(_Result):
    """Result of gcalendar.create_event."""

    calendar_id: str = Field(description=_CALENDAR)
    id: str = Field(description="The new event's id (gcalendar.delete_event takes it).")
    etag: str | None = Field(
        description="Its ETag, or null if Calendar's answer lacks it (delete_event sends it as If-Match)."
    )
    status: str | None = Field(description="'confirmed' (null if the answer lacks it).")
    html_link: str | None = Field(description="Its page in Google Calendar, or null.")
    applied: FieldValues = Field(
        description="Its summary, description, location, start and end as Calendar stored "
        "them (null where empty): what delete_event expects to find before it deletes."
    )


class UpdateEventResult(_Result):
    """Result of gcalendar.update_event."""

    calendar_id: str = Field(description=_CALENDAR)
    event_id: str = Field(description="The event, as given.")
    changed: list[str] = Field(description="The fields this call changed (empty: it changed nothing).")
    previous: FieldValues = Field(
        description="Exactly the changed fields, each with its old value, or null where it was "
        "empty (gcalendar.restore_event puts them back)."
    )
    applied: FieldValues = Field(
        description="The same fields with the values Calendar stored: what restore_event "
        "expects to find before it puts 'previous' back."
    )
    etag: str = Field(description="The event's ETag after the call (restore_event sends it as If-Match).")
    html_link: str | None = Field(description="The event's page in Google Calendar, or null.")


class RestoreEventResult(_Result):
    """Result of gcalendar.restore_event."""

    calendar_id: str = Field(description=_CALENDAR)
    event_id: str = Field(description="The event, as given.")
    restored: list[str] = Field(description="The fields this call put back.")
    already: list[str] = Field(description="The fields that held their old value already.")


class DeleteEventResult(_Result):
    """Result of gcalendar.delete_event."""

    calendar_id: str = Field(description=_CALENDAR)
    event_id: str = Field(description="The event, as given.")
    deleted: bool = Field(
        description="False when it was gone already (Calendar answered 404 or 410, or, after a "
        "412, read it back deleted)."
    )
