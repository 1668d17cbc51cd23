"""What the gcalendar tools do against FakeCalendar: requests sent, answers read, refusals reported."""

from __future__ import annotations

import pytest
from _gcal_support import READ_ONLY_TOKEN, TOKEN, connector_for

from reversi_connector_gcalendar import GcalendarConnector
from reversi_connector_gcalendar.testing import (
    CANCELLED_ID,
    OFFSITE_ID,
    OWNER,
    RETRO_ID,
    STANDUP_ID,
    TEAM,
    FakeCalendar,
    seed_example,
)
from reversi_core.errors import EffectUncertainError, InvalidArgumentsError, ToolError
from reversi_core.testing import FakeRequest, FakeResponse, FakeServer, Fault

pytestmark = pytest.mark.anyio

STANDUP_START = {"dateTime": "2026-12-01T09:00:00Z"}
WRITES = ("POST", "PATCH", "PUT", "DELETE")


def _at(hour: int, minute: int = 0) -> dict[str, str]:
    return {"dateTime": f"2026-12-02T{hour:02d}:{minute:02d}:00Z"}


def _writes(server: FakeServer) -> list[str]:
    return [r.method for r in server.requests if r.method in WRITES]


# -- calendar_id, sendUpdates, paths --------------------------------------------------------


async def test_calendar_id_defaults_to_primary(
    calendar: GcalendarConnector, server: FakeServer
) -> None:
    listed = await calendar.call("gcalendar.list_events", {})
    assert listed["calendar_id"] == "primary"
    assert server.requests[-1].path == "/calendar/v3/calendars/primary/events"
    assert [e["summary"] for e in listed["events"]] == ["Standup", "Offsite"]  # not the deleted one


async def test_every_write_sends_no_emails(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    made = await calendar.call(
        "gcalendar.create_event", {"summary": "Sync", "start": _at(9), "end": _at(10)}
    )
    updated = await calendar.call("gcalendar.update_event", {"event_id": made["id"], "summary": "Sync 2"})
    restore = {
        "event_id": made["id"],
        "previous": updated["previous"],
        "expected": updated["applied"],
        "etag": updated["etag"],
    }
    await calendar.call("gcalendar.restore_event", restore)
    await calendar.call("gcalendar.delete_event", {"event_id": made["id"]})
    writes = [r for r in server.requests if r.method in WRITES]
    assert [r.method for r in writes] == ["POST", "PATCH", "PATCH", "DELETE"]
    assert all(r.query.get("sendUpdates") == "none" for r in writes)
    assert fake.send_updates == ["none"] * 4


async def test_a_calendar_id_with_hash_and_at_is_encoded_once(
    calendar: GcalendarConnector, server: FakeServer
) -> None:
    listed = await calendar.call("gcalendar.list_events", {"calendar_id": TEAM})
    assert [e["id"] for e in listed["events"]] == [RETRO_ID]
    assert server.requests[-1].target.startswith(
        "/calendar/v3/calendars/team%23ops%40group.calendar.google.com/events?"
    )


@pytest.mark.parametrize("event_id", ["a/../b", "x?alt=media", "x#y", "x y", "x%2F", ""])
async def test_an_event_id_that_could_change_the_path_is_refused_before_sending(
    calendar: GcalendarConnector, server: FakeServer, event_id: str
) -> None:
    with pytest.raises(InvalidArgumentsError):
        await calendar.call("gcalendar.update_event", {"event_id": event_id, "summary": "x"})
    assert server.requests == []


# -- list_events ----------------------------------------------------------------------------


async def test_list_filters_orders_and_pages(calendar: GcalendarConnector, server: FakeServer) -> None:
    args = {
        "time_min": "2026-11-30T00:00:00Z",
        "single_events": True,
        "order_by": "startTime",
        "max_results": 1,
    }
    first = await calendar.call("gcalendar.list_events", args)
    assert [e["id"] for e in first["events"]] == [STANDUP_ID]
    assert server.requests[-1].query == {
        "maxResults": "1",
        "timeMin": "2026-11-30T00:00:00Z",
        "orderBy": "startTime",
        "singleEvents": "true",
    }
    second = await calendar.call("gcalendar.list_events", {**args, "page_token": first["next_page_token"]})
    assert [e["id"] for e in second["events"]] == [OFFSITE_ID]
    assert second["next_page_token"] is None
    found = await calendar.call("gcalendar.list_events", {"query": "daily"})
    assert [e["id"] for e in found["events"]] == [STANDUP_ID]
    assert found["events"][0]["location"] == "Room 1"
    assert found["events"][0]["etag"].startswith('"')


async def test_a_read_only_token_lists_but_cannot_write(
    fake: FakeCalendar, server: FakeServer
) -> None:
    calendar = connector_for(fake, server, READ_ONLY_TOKEN)
    assert len((await calendar.call("gcalendar.list_events", {}))["events"]) == 2
    with pytest.raises(ToolError) as caught:
        await calendar.call("gcalendar.create_event", {"summary": "x", "start": _at(9), "end": _at(10)})
    await calendar.aclose()
    assert (caught.value.status, caught.value.code) == (403, "insufficientPermissions")
    assert READ_ONLY_TOKEN not in str(caught.value)


async def test_a_usage_limit_is_a_rate_limit_not_a_refusal(
    calendar: GcalendarConnector, fake: FakeCalendar
) -> None:
    fake.exhaust_rate_limit()
    with pytest.raises(ToolError) as caught:
        await calendar.call("gcalendar.list_events", {})
    assert (caught.value.status, caught.value.code) == (403, "rate_limited")


# -- create_event ---------------------------------------------------------------------------


async def test_create_sends_only_what_was_given(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    made = await calendar.call(
        "gcalendar.create_event",
        {"summary": "Sync", "start": {"date": "2026-12-20"}, "end": {"date": "2026-12-21"}},
    )
    assert server.requests[-1].json == {
        "summary": "Sync",
        "start": {"date": "2026-12-20"},
        "end": {"date": "2026-12-21"},
    }
    event = fake.event("primary", made["id"])
    assert (event.origin, event.status) == ("api", "confirmed")
    assert made["etag"] == event.etag


@pytest.mark.parametrize(
    "when",
    [
        {"date": "2026-13-45"},
        {"date": "2026-02-29"},  # 2026 is no leap year
        {"date": "2026-04-31"},
        {"dateTime": "2026-02-30T10:00:00Z"},
        {"dateTime": "2026-12-01T24:00:00Z"},
        {"dateTime": "2026-12-01T10:60:00+01:00"},
        {"dateTime": "2026-12-01T10:00:60Z"},
        {"dateTime": "2026-12-01T10:00:00+24:00"},
        {"dateTime": "2026-00-01T10:00:00Z"},
    ],
)
async def test_a_day_or_moment_that_does_not_exist_is_refused_before_sending(
    calendar: GcalendarConnector, server: FakeServer, when: dict[str, str]
) -> None:
    event = {"summary": "Sync", "start": when, "end": when}
    with pytest.raises(InvalidArgumentsError, match=r"not a (day of the calendar|real moment)"):
        await calendar.call("gcalendar.create_event", event)
    with pytest.raises(InvalidArgumentsError, match=r"not a (day of the calendar|real moment)"):
        await calendar.call("gcalendar.update_event", {"event_id": STANDUP_ID, "start": when})
    if "dateTime" in when:
        with pytest.raises(InvalidArgumentsError, match="not a real moment"):
            await calendar.call("gcalendar.list_events", {"time_min": when["dateTime"]})
        with pytest.raises(InvalidArgumentsError, match="not a real moment"):
            await calendar.call("gcalendar.list_events", {"time_max": when["dateTime"]})
    assert server.requests == []


async def test_real_days_and_moments_pass(calendar: GcalendarConnector) -> None:
    leap = await calendar.call(
        "gcalendar.create_event", {"summary": "Leap", "start": {"date": "2028-02-29"}, "end": {"date": "2028-03-01"}}
    )
    assert leap["id"]
    late = {"summary": "Late", "start": {"dateTime": "2026-12-31T23:59:59.999-12:00"},
            "end": {"dateTime": "2027-01-01T12:00:00Z"}}
    made = await calendar.call("gcalendar.create_event", late)
    assert made["id"]
    listed = await calendar.call(
        "gcalendar.list_events", {"time_min": "2026-01-01T00:00:00Z", "time_max": "2027-01-01T00:00:00+14:00"}
    )
    assert listed["events"]


async def test_an_event_ending_before_it_starts_is_calendars_400(calendar: GcalendarConnector) -> None:
    with pytest.raises(ToolError) as caught:
        await calendar.call("gcalendar.create_event", {"summary": "x", "start": _at(10), "end": _at(9)})
    assert (caught.value.status, caught.value.code) == (400, "timeRangeEmpty")


async def test_a_lost_answer_to_a_create_is_uncertain(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    server.faults.add(Fault.drop_after_read(apply=True), method="POST", times=1)
    with pytest.raises(EffectUncertainError):
        await calendar.call("gcalendar.create_event", {"summary": "Maybe", "start": _at(9), "end": _at(10)})
    assert [e.fields["summary"] for e in fake.calendars[OWNER].events.values()][-1] == "Maybe"


# -- update_event ---------------------------------------------------------------------------


async def test_update_returns_exactly_the_fields_it_changed(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    before = fake.event("primary", STANDUP_ID).etag
    done = await calendar.call(
        "gcalendar.update_event",
        {
            "event_id": STANDUP_ID,
            "summary": "Standup",  # unchanged: not sent, not in previous
            "description": None,  # cleared
            "start": {"dateTime": "2026-12-01T09:05:00Z"},
        },
    )
    assert done["changed"] == ["description", "start"]
    assert done["previous"] == {"description": "Daily sync", "start": STANDUP_START}
    assert done["applied"] == {"description": None, "start": {"dateTime": "2026-12-01T09:05:00Z"}}
    patch = server.requests[-1]
    assert patch.headers["if-match"] == before  # the ETag it read
    assert patch.json == {
        "description": None,
        "start": {"date": None, "dateTime": "2026-12-01T09:05:00Z", "timeZone": None},
    }
    event = fake.event("primary", STANDUP_ID)
    assert "description" not in event.fields
    assert done["etag"] == event.etag != before


async def test_an_update_that_changes_nothing_writes_nothing(
    calendar: GcalendarConnector, server: FakeServer
) -> None:
    done = await calendar.call("gcalendar.update_event", {"event_id": STANDUP_ID, "location": "Room 1"})
    assert (done["changed"], done["previous"], done["applied"]) == ([], {}, {})
    assert _writes(server) == []


async def test_a_field_that_was_empty_comes_back_as_null(calendar: GcalendarConnector) -> None:
    done = await calendar.call("gcalendar.update_event", {"event_id": OFFSITE_ID, "location": "Lakeside"})
    assert done["previous"] == {"location": None}


class _EditedBeforeEachPatch(FakeCalendar):
    """A person edits the summary just before each write of the connector arrives."""

    def patch_event(self, request: FakeRequest) -> FakeResponse:
        self.edit_event("primary", STANDUP_ID, summary="Someone's title")
        return super().patch_event(request)


async def test_an_edit_between_the_read_and_the_write_is_refused_and_nothing_is_written() -> None:
    fake = _EditedBeforeEachPatch(token=TOKEN)
    seed_example(fake)
    with FakeServer(fake) as server:
        calendar = connector_for(fake, server)
        with pytest.raises(ToolError) as caught:
            await calendar.call(
                "gcalendar.update_event", {"event_id": STANDUP_ID, "summary": "Agent's title"}
            )
        await calendar.aclose()
    assert (caught.value.status, caught.value.code) == (412, "conditionNotMet")
    assert "nothing was written" in str(caught.value)
    assert fake.event("primary", STANDUP_ID).fields["summary"] == "Someone's title"


async def test_updating_a_deleted_event_is_refused(calendar: GcalendarConnector) -> None:
    with pytest.raises(ToolError) as caught:
        await calendar.call("gcalendar.update_event", {"event_id": CANCELLED_ID, "summary": "x"})
    assert caught.value.code == "deleted"


# -- restore_event --------------------------------------------------------------------------


async def _updated(calendar: GcalendarConnector, **fields: object) -> dict[str, object]:
    done = await calendar.call("gcalendar.update_event", {"event_id": STANDUP_ID, **fields})
    return {
        "event_id": STANDUP_ID,
        "previous": done["previous"],
        "expected": done["applied"],
        "etag": done["etag"],
    }


async def test_restore_puts_back_and_removes_what_was_empty(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    before = dict(fake.event("primary", OFFSITE_ID).fields)
    done = await calendar.call(
        "gcalendar.update_event", {"event_id": OFFSITE_ID, "location": "Lakeside", "summary": "Offsite!"}
    )
    restore = {"event_id": OFFSITE_ID, "previous": done["previous"], "expected": done["applied"],
               "etag": done["etag"]}
    restored = await calendar.call("gcalendar.restore_event", restore)
    assert sorted(restored["restored"]) == ["location", "summary"]
    assert server.requests[-1].json == {"summary": "Offsite", "location": None}
    assert server.requests[-1].headers["if-match"] == done["etag"]
    assert fake.event("primary", OFFSITE_ID).fields == before  # location removed again
    again = await calendar.call("gcalendar.restore_event", restore)
    assert (again["restored"], sorted(again["already"])) == ([], ["location", "summary"])


async def test_restore_refuses_to_overwrite_a_later_edit_naming_the_field(
    calendar: GcalendarConnector, fake: FakeCalendar
) -> None:
    restore = await _updated(calendar, summary="Agent's title", location="Room 9")
    fake.edit_event("primary", STANDUP_ID, location="Room 12")
    with pytest.raises(ToolError) as caught:
        await calendar.call("gcalendar.restore_event", restore)
    assert (caught.value.status, caught.value.code) == (412, "changed_since")
    assert "the event's location" in str(caught.value)
    assert "the event's summary" not in str(caught.value)  # that one is as the update left it
    assert "'Room 12'" in str(caught.value)
    event = fake.event("primary", STANDUP_ID)
    assert (event.fields["summary"], event.fields["location"]) == ("Agent's title", "Room 12")


async def test_restore_goes_ahead_when_only_other_fields_changed(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    restore = await _updated(calendar, summary="Agent's title")
    fake.edit_event("primary", STANDUP_ID, description="Someone's notes")
    done = await calendar.call("gcalendar.restore_event", restore)
    assert done["restored"] == ["summary"]
    event = fake.event("primary", STANDUP_ID)
    assert (event.fields["summary"], event.fields["description"]) == ("Standup", "Someone's notes")
    patches = [r for r in server.requests if r.method == "PATCH"]
    assert patches[-1].headers["if-match"] != restore["etag"]  # the ETag read after the 412


async def test_restore_of_an_event_deleted_since_is_refused(
    calendar: GcalendarConnector, fake: FakeCalendar
) -> None:
    restore = await _updated(calendar, summary="Agent's title")
    await calendar.call("gcalendar.delete_event", {"event_id": STANDUP_ID})
    with pytest.raises(ToolError) as caught:
        await calendar.call("gcalendar.restore_event", restore)
    assert caught.value.code == "deleted"
    assert fake.event("primary", STANDUP_ID).status == "cancelled"  # not brought back


async def test_restore_without_an_etag_compares_first(
    calendar: GcalendarConnector, fake: FakeCalendar, server: FakeServer
) -> None:
    restore = {**await _updated(calendar, summary="Agent's title"), "etag": None}
    server.clear_requests()
    await calendar.call("gcalendar.restore_event", restore)
    assert [r.method for r in server.requests] == ["GET", "PATCH"]
    assert fake.event("primary", STANDUP_ID).fields["summary"] == "Standup"


async def test_restore_refuses_previous_and_expected_that_disagree(calendar: GcalendarConnector) -> None:
    with pytest.raises(InvalidArgumentsError):
        await calendar.call(
            "gcalendar.restore_event",
            {"event_id": STANDUP_ID, "previous": {"summary": "a"}, "expected": {"location": "b"}},
        )


# -- delete_event ---------------------------------------------------------------------------


async def test_delete_counts_404_and_410_as_done(calendar: GcalendarConnector, fake: FakeCalendar) -> None:
    first = await calendar.call("gcalendar.delete_event", {"event_id": STANDUP_ID})
    assert first["deleted"] is True
    assert fake.event("primary", STANDUP_ID).status == "cancelled"
    again = await calendar.call("gcalendar.delete_event", {"event_id": STANDUP_ID})  # 410
    missing = await calendar.call("gcalendar.delete_event", {"event_id": "nosuchevent0000"})  # 404
    assert (again["deleted"], missing["deleted"]) == (False, False)


async def test_delete_of_another_calendar_needs_its_id(calendar: GcalendarConnector, fake: FakeCalendar) -> None:
    done = await calendar.call("gcalendar.delete_event", {"event_id": RETRO_ID})  # not on primary
    assert done["deleted"] is False
    assert fake.event(TEAM, RETRO_ID).status == "confirmed"
