"""The arguments of each gcalendar tool, as pydantic models (each tool's ``input_schema``).

Every model refuses fields it does not declare. ``calendar_id`` defaults to ``primary``
(the calendar of the user the token belongs to); a calendar id is any text without
whitespace or ``/`` (Google's ids are email addresses, such as
``team@group.calendar.google.com`` or ``en.usa#holiday@group.v.calendar.google.com``),
an event id holds only letters, digits, ``_`` and ``-``
(https://developers.google.com/calendar/api/v3/reference/events#id). Each is
percent-encoded once into the path, so no value can add a path segment, a query or a
fragment. Times are RFC 3339 (https://developers.google.com/calendar/api/v3/reference/events#resource),
and each date and date-time is checked to name a real day and moment (no 2026-13-45, no
31 February, no 25:00, no offset beyond ±23:59) before any request.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "FIELDS",
    "CreateEventArgs",
    "DeleteEventArgs",
    "EventFields",
    "EventTime",
    "ListEventsArgs",
    "RestoreEventArgs",
    "UpdateEventArgs",
]

FIELDS = ("summary", "description", "location", "start", "end")
"""The event fields update_event may change and restore_event puts back, in this order."""

RFC3339 = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
"""A date-time with its offset, as Calendar takes it (``2026-12-01T10:00:00+01:00``)."""

DAY = r"^\d{4}-\d{2}-\d{2}$"
"""A day, as Calendar takes an all-day event's ``date`` (``2026-12-01``)."""


def _real_day(value: str) -> str:
    """``value`` (matching :data:`DAY`), once it names a day of the calendar; else ``ValueError``."""
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a day of the calendar (YYYY-MM-DD)") from None
    return value


def _real_moment(value: str) -> str:
    """``value`` (matching :data:`RFC3339`), once it names a real moment; else ``ValueError``.

    RFC 3339 section 5.6 (https://www.rfc-editor.org/rfc/rfc3339#section-5.6): month
    01-12, a day the month has, hour 00-23, minute and second 00-59 (a leap second is not
    taken), an offset of at most 23:59.
    """
    try:
        dt.datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError:
        raise ValueError(f"{value!r} is not a real moment (RFC 3339, such as 2026-12-01T10:00:00+01:00)") from None
    return value


Day = Annotated[str, Field(pattern=DAY), AfterValidator(_real_day)]
Moment = Annotated[str, Field(pattern=RFC3339), AfterValidator(_real_moment)]

CalendarId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=254,
        pattern=r"^[^\s/]+$",
        description="The calendar's id: 'primary' (the default: the token's user's own "
        "calendar) or an id such as 'team@group.calendar.google.com'.",
    ),
]
EventId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1024,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The event's id (the 'id' create_event or list_events returned).",
    ),
]
Summary = Annotated[str, Field(min_length=1, max_length=1024, description="The event's title.")]
Description = Annotated[
    str, Field(max_length=8192, description="The event's description (may contain HTML).")
]
Location = Annotated[str, Field(max_length=1024, description="Where the event takes place.")]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EventTime(_Args):
    """A start or end: ``{"dateTime", "timeZone"?}`` for a timed event, ``{"date"}`` for an all-day one.

    Google's EventDateTime (https://developers.google.com/calendar/api/v3/reference/events#resource).
    """

    date: Day | None = Field(
        default=None,
        description="The day, 'YYYY-MM-DD', for an all-day event (the end day is exclusive).",
    )
    dateTime: Moment | None = Field(
        default=None,
        description="The moment, RFC 3339 with its offset, such as '2026-12-01T10:00:00+01:00'.",
    )
    timeZone: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[A-Za-z_]+(/[A-Za-z0-9_+-]+)*$",
        description="An IANA time zone such as 'Europe/Zurich' (optional for a timed event).",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> EventTime:
        if (self.date is None) == (self.dateTime is None):
            raise ValueError("give exactly one of 'date' (all-day) and 'dateTime'")
        return self


class ListEventsArgs(_Args):
    """Arguments of gcalendar.list_events."""

    calendar_id: CalendarId = "primary"
    time_min: Moment | None = Field(default=None, description="Only events that end after this moment.")
    time_max: Moment | None = Field(default=None, description="Only events that start before this moment.")
    query: str | None = Field(
        default=None,
        max_length=256,
        description="Free text the events must contain (summary, description, location...).",
    )
    single_events: bool = Field(
        default=False,
        description="Expand recurring events into their instances (needed to order by start).",
    )
    order_by: Literal["startTime", "updated"] | None = Field(
        default=None, description="'startTime' (with single_events) or 'updated'."
    )
    max_results: int = Field(
        default=50, ge=1, le=2500, description="Events on one page (Calendar allows up to 2500)."
    )
    page_token: str | None = Field(
        default=None,
        max_length=2048,
        description="The next_page_token of an earlier call, for the next page.",
    )


class CreateEventArgs(_Args):
    """Arguments of gcalendar.create_event."""

    calendar_id: CalendarId = "primary"
    summary: Summary
    description: Description | None = None
    location: Location | None = None
    start: EventTime = Field(description="When it starts.")
    end: EventTime = Field(description="When it ends (after the start; exclusive for all-day).")


class UpdateEventArgs(_Args):
    """Arguments of gcalendar.update_event: the fields to set; a field left out is not touched.

    ``summary``, ``description`` and ``location`` may be null to clear them; ``start`` and
    ``end`` are replaced whole.
    """

    calendar_id: CalendarId = "primary"
    event_id: EventId
    summary: Summary | None = None
    description: Description | None = None
    location: Location | None = None
    start: EventTime | None = None
    end: EventTime | None = None

    @model_validator(mode="after")
    def _something_to_set(self) -> UpdateEventArgs:
        given = self.model_fields_set & set(FIELDS)
        if not given:
            raise ValueError("give at least one of " + ", ".join(FIELDS))
        for name in ("start", "end"):
            if name in given and getattr(self, name) is None:
                raise ValueError(f"'{name}' cannot be cleared, only replaced")
        return self

    def wanted(self) -> dict[str, Any]:
        """The fields given, as Calendar spells them (``None`` clears a text field)."""
        out: dict[str, Any] = {}
        for name in FIELDS:
            if name in self.model_fields_set:
                value = getattr(self, name)
                out[name] = value.model_dump(exclude_none=True) if isinstance(value, EventTime) else value
        return out


class EventFields(_Args):
    """Some of an event's fields, each a value or null (empty); a field left out is not concerned.

    ``start`` and ``end`` are EventDateTime objects as Calendar answers them.
    """

    summary: str | None = Field(default=None, description="The title, or null for none.")
    description: str | None = Field(default=None, description="The description, or null for none.")
    location: str | None = Field(default=None, description="The location, or null for none.")
    start: dict[str, str] | None = Field(
        default=None, description="The start as Calendar gave it ({'dateTime', 'timeZone'} or {'date'})."
    )
    end: dict[str, str] | None = Field(
        default=None, description="The end as Calendar gave it ({'dateTime', 'timeZone'} or {'date'})."
    )

    def given(self) -> dict[str, Any]:
        """The fields present, by name (in :data:`FIELDS` order)."""
        return {name: getattr(self, name) for name in FIELDS if name in self.model_fields_set}


class RestoreEventArgs(_Args):
    """Arguments of gcalendar.restore_event: what update_event returned (``previous``, ``applied``, ``etag``)."""

    calendar_id: CalendarId = "primary"
    event_id: EventId
    previous: EventFields = Field(
        description="The values to put back (update_event's 'previous'); null removes the field."
    )
    expected: EventFields = Field(
        description="The values the update left (update_event's 'applied'): a field that no "
        "longer holds this value was changed by someone since, and is not overwritten."
    )
    etag: str | None = Field(
        default=None,
        max_length=256,
        description="The event's ETag after the update (update_event's 'etag'); sent as "
        "If-Match, so the restore applies directly only to the event as the update left it.",
    )

    @model_validator(mode="after")
    def _same_fields(self) -> RestoreEventArgs:
        if set(self.previous.given()) != set(self.expected.given()):
            raise ValueError("'previous' and 'expected' must name the same fields")
        for name in ("start", "end"):
            if name in self.previous.given() and self.previous.given()[name] is None:
                raise ValueError(f"an event always has a '{name}': it cannot be restored to null")
        return self


class DeleteEventArgs(_Args):
    """Arguments of gcalendar.delete_event; ``etag`` and ``expected`` come from create_event.

    Without ``etag`` the event is deleted whatever it holds. With it (the undo of
    create_event), the delete applies only to the event as the creation left it: one that
    changed since is read, and deleted only if its fields still hold ``expected`` and it
    has no guests.
    """

    calendar_id: CalendarId = "primary"
    event_id: EventId
    etag: str | None = Field(
        default=None,
        max_length=256,
        description="The event's ETag as create_event left it (create_event's 'etag'); sent "
        "as If-Match, so an event someone changed since is not deleted without a look.",
    )
    expected: EventFields | None = Field(
        default=None,
        description="The fields as create_event left them (create_event's 'applied'): when "
        "the ETag no longer matches, an event whose fields differ from these is kept.",
    )
