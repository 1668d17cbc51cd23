"""The gcalendar connector's live scenario (``nox -s live -- gcalendar``; docs/connectors/gcalendar.md).

On the calendar ``REVERSI_LIVE_GCALENDAR_CALENDAR`` (a throwaway one: the token has the
``calendar.events`` scope), through the real engine: create an event named with the run's
suffix, update its summary and location, check Calendar lists it as updated, roll the run
back (the restore under the update's ETag, then the delete), and check it is no longer
listed and that deleting it again answers "already gone". What stays behind: the deleted
event in the calendar's trash.
"""

from __future__ import annotations

from reversi_core.testing import LiveContext, LiveVariable

__all__ = ["LIVE_CALENDAR_VARIABLE", "LIVE_SUMMARY", "LIVE_VARIABLES", "live_scenario"]

LIVE_CALENDAR_VARIABLE = "REVERSI_LIVE_GCALENDAR_CALENDAR"
"""The id of the throwaway calendar the scenario works on."""


async def live_scenario(live: LiveContext) -> None:
    """Create, update, roll back, checked on Calendar (module docstring)."""
    calendar = live.env[LIVE_CALENDAR_VARIABLE]
    title = live.name("Reversi live check", " ")
    run = live.start_run()
    _, made = await run.call(
        "gcalendar.create_event",
        {
            "calendar_id": calendar,
            "summary": title,
            "start": {"dateTime": "2030-01-07T09:00:00Z"},
            "end": {"dateTime": "2030-01-07T09:30:00Z"},
        },
    )
    live.log(f"created event {made['id']}")
    _, updated = await run.call(
        "gcalendar.update_event",
        {"calendar_id": calendar, "event_id": made["id"], "summary": f"{title} (updated)", "location": "Nowhere"},
    )
    live.check(updated["changed"] == ["summary", "location"], "the update to change summary and location")
    live.check(updated["previous"] == {"summary": title, "location": None}, "previous to hold the old values")
    seen = await live.call("gcalendar.list_events", {"calendar_id": calendar, "query": live.suffix})
    live.check(
        [e["summary"] for e in seen["events"]] == [f"{title} (updated)"],
        "Calendar to list the event, updated",
    )
    await live.rollback(run)
    after = await live.call("gcalendar.list_events", {"calendar_id": calendar, "query": live.suffix})
    live.check(after["events"] == [], "the event to be gone from the calendar after the rollback")
    again = await live.call("gcalendar.delete_event", {"calendar_id": calendar, "event_id": made["id"]})
    live.check(again["deleted"] is False, "deleting the event again to answer that it is gone")


LIVE_SUMMARY = (
    "Creates an event on a throwaway calendar, updates its summary and location, rolls the "
    "run back (restore, then delete) and checks that the event is gone."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(LIVE_CALENDAR_VARIABLE, "the id of a throwaway calendar the token may write events to"),
)
"""The variables the scenario reads besides the connector's own."""
