"""The second oracle: the Calendar v3 discovery document and the client library built from it.

Two checks beside the fake. First, every exchange the connector has with FakeCalendar
(the certification fixture's examples and failures, a read-only token, a usage limit) is
checked against the discovery document shipped in google-api-python-client
(``_discovery_oracle``): the request is one of the events methods with its parameters and
body, the answer fits the method's response schema. Second, the client library itself,
built from that document (``build_from_document``) and pointed at the fake, drives every
operation the connector uses (list, insert, get, patch and delete with If-Match) and the
refusals the connector relies on (404, 410, 412, 403): the library must accept each answer,
the answers must fit the document's schemas, and the library must read the same reason
from each error as the connector does. Fakes changed on purpose fail
(docs/connectors/gcalendar.md, "The second oracle").
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import anyio
import google.oauth2.credentials
import google_auth_httplib2
import httplib2
import pytest
from _discovery_oracle import METHODS, document, method_of, problems, validator
from _gcal_support import READ_ONLY_TOKEN, TOKEN, connector_for
from googleapiclient.discovery import build_from_document
from googleapiclient.errors import HttpError

from reversi_connector_gcalendar.testing import (
    EXAMPLES,
    FAILURES,
    STANDUP_ID,
    TEAM,
    FakeCalendar,
    FakeEvent,
    seed_example,
)
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.testing import (
    Example,
    ExampleCalls,
    Exchange,
    FakeRequest,
    FakeResponse,
    FakeServer,
)

Call = tuple[str, Example]


async def _run(
    calls: Sequence[Call], *, fake_class: type[FakeCalendar] = FakeCalendar, token: str = TOKEN,
    exhausted: bool = False,
) -> list[Exchange]:
    """Make ``calls`` through the connector on a freshly seeded fake; return its exchanges."""
    fake = fake_class(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(fake)
    if exhausted:
        fake.exhaust_rate_limit()
    with FakeServer(fake) as server:
        calendar = connector_for(fake, server, token)
        ctx = ExampleCalls(server, calendar)
        try:
            for tool, example in calls:
                # a refusal is an answer to check like any other
                with contextlib.suppress(ToolError, EffectUncertainError):
                    await ctx.call(tool, await ctx.prepare(example))
        finally:
            await calendar.aclose()
        return server.exchanges


async def _drive() -> list[Exchange]:
    made: list[Exchange] = []
    for tool, examples in sorted(EXAMPLES.items()):
        made += await _run([(tool, example) for example in examples])
    for tool, failures in sorted(FAILURES.items()):
        made += await _run([(tool, failure.args) for failure in failures])
    main = [(tool, examples[0]) for tool, examples in sorted(EXAMPLES.items())]
    made += await _run(main, token=READ_ONLY_TOKEN)
    made += await _run(main, exhausted=True)
    return made


@pytest.fixture(scope="module")
def exchanges() -> list[Exchange]:
    return anyio.run(_drive)


def test_every_request_and_answer_of_the_connector_fits_the_discovery_document(
    exchanges: list[Exchange],
) -> None:
    found = Counter(p for exchange in exchanges for p in problems(exchange))
    assert not found, "the connector or FakeCalendar departs from the document:\n" + "\n".join(
        f"{problem} [x{count}]" for problem, count in sorted(found.items())
    )


def test_every_method_was_checked_on_success_and_on_refusal(exchanges: list[Exchange]) -> None:
    seen: dict[str, set[int]] = {}
    for exchange in exchanges:
        method = method_of(exchange.request.method, exchange.request.target)
        assert method is not None
        if exchange.response is not None and exchange.request.fault is None:
            seen.setdefault(method.name, set()).add(exchange.response.status)
    assert set(seen) == set(METHODS)
    for name, statuses in seen.items():
        assert any(s < 300 for s in statuses), f"{name}: no success answer was checked"
        assert any(s >= 400 for s in statuses), f"{name}: no refusal was checked"
    assert {400, 403, 404, 410, 412} <= {s for statuses in seen.values() for s in statuses}


def test_the_converted_schemas_refuse_what_the_document_does_not_allow() -> None:
    event = validator("Event")
    assert list(event.iter_errors({"summary": "x", "start": {"date": "2026-12-01"}})) == []
    for wrong in (
        {"title": "x"},  # not a property of Event
        {"start": "2026-12-01"},  # EventDateTime is an object
        {"sequence": "1"},  # an int32
        {"updated": "yesterday"},  # a date-time
        {"start": {"date": "2026-12-01", "hour": 9}},
    ):
        assert list(event.iter_errors(wrong)), wrong
    insert = validator("Event", "calendar.events.insert")
    assert sorted(e.message for e in insert.iter_errors({"summary": "x"})) == [
        "'end' is a required property",
        "'start' is a required property",
    ]


# -- the client library, built from the same document, against the fake -------------------


@contextlib.contextmanager
def _library(fake: FakeCalendar, token: str = TOKEN) -> Iterator[tuple[Any, FakeServer]]:
    """google-api-python-client's calendar service, built from the shipped document, on ``fake``."""
    with FakeServer(fake) as server:
        http = google_auth_httplib2.AuthorizedHttp(
            google.oauth2.credentials.Credentials(token), http=httplib2.Http(timeout=5)
        )
        service = build_from_document(
            document(), http=http, client_options={"api_endpoint": server.url + "/calendar/v3/"}
        )
        try:
            yield service, server
        finally:
            service.close()


def _reason(exc: HttpError) -> str:
    details = exc.error_details
    return str(details[0]["reason"]) if isinstance(details, list) and details else ""


def _library_drive(fake_class: type[FakeCalendar] = FakeCalendar) -> tuple[dict[str, Any], list[Exchange]]:
    """Every operation the connector uses, through the library; what it read and the exchanges."""
    fake = fake_class(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(fake)
    seen: dict[str, Any] = {}
    with _library(fake) as (service, server):
        events = service.events()
        seen["list"] = events.list(calendarId=TEAM, maxResults=1, q="retro").execute()
        seen["insert"] = events.insert(
            calendarId="primary",
            sendUpdates="none",
            body={"summary": "Lib", "start": {"date": "2026-12-20"}, "end": {"date": "2026-12-21"}},
        ).execute()
        made = seen["insert"]["id"]
        seen["get"] = events.get(calendarId="primary", eventId=made).execute()
        patch = events.patch(
            calendarId="primary", eventId=made, sendUpdates="none", body={"summary": "Lib 2", "location": None}
        )
        patch.headers["If-Match"] = seen["get"]["etag"]
        seen["patch"] = patch.execute()
        stale = events.patch(calendarId="primary", eventId=made, sendUpdates="none", body={"summary": "x"})
        stale.headers["If-Match"] = seen["get"]["etag"]
        stale_delete = events.delete(calendarId="primary", eventId=made, sendUpdates="none")
        stale_delete.headers["If-Match"] = seen["get"]["etag"]  # as create_event's undo sends it
        try:
            stale_delete.execute()
        except HttpError as exc:
            seen["stale_delete"] = (exc.status_code, _reason(exc))
        seen["delete"] = events.delete(calendarId="primary", eventId=made, sendUpdates="none").execute()
        refusals = {
            "stale": stale,
            "again": events.delete(calendarId="primary", eventId=made, sendUpdates="none"),
            "missing": events.get(calendarId="primary", eventId="nosuchevent0000"),
        }
        for name, request in refusals.items():
            try:
                request.execute()
            except HttpError as exc:
                seen[name] = (exc.status_code, _reason(exc))
    with _library(fake, READ_ONLY_TOKEN) as (service, server_ro):
        try:
            service.events().delete(calendarId="primary", eventId=STANDUP_ID).execute()
        except HttpError as exc:
            seen["read_only"] = (exc.status_code, _reason(exc))
    return seen, server.exchanges + server_ro.exchanges


def _library_problems(fake_class: type[FakeCalendar] = FakeCalendar) -> list[str]:
    """What goes wrong when the library drives ``fake_class`` (empty: it accepts everything)."""
    try:
        seen, exchanges = _library_drive(fake_class)
    except (HttpError, ValueError, KeyError, TypeError) as exc:
        return [f"the library's drive broke off: {type(exc).__name__}: {exc}"]
    expected = {
        "stale": (412, "conditionNotMet"),
        "stale_delete": (412, "conditionNotMet"),
        "again": (410, "deleted"),
        "missing": (404, "notFound"),
        "read_only": (403, "insufficientPermissions"),
    }
    found = [
        f"{name}: the library read {seen.get(name)}, not {wanted}"
        for name, wanted in expected.items()
        if seen.get(name) != wanted
    ]
    if seen["delete"] != "":
        found.append(f"delete: the library read {seen['delete']!r} from a 204")
    if seen["patch"].get("summary") != "Lib 2" or seen["patch"].get("etag") == seen["get"].get("etag"):
        found.append("patch: the library did not read the patched event with a new ETag")
    found += [p for e in exchanges for p in problems(e)]
    used = {m.name for e in exchanges if (m := method_of(e.request.method, e.request.target))}
    if used != set(METHODS):
        found.append(f"the drive used {sorted(used)}, not every method the connector uses")
    return found


def test_the_client_library_drives_every_operation_against_the_fake() -> None:
    assert _library_problems() == []
    seen, _ = _library_drive()
    assert seen["list"]["kind"] == "calendar#events"
    assert [e["summary"] for e in seen["list"]["items"]] == ["Retro"]
    assert seen["insert"]["start"] == {"date": "2026-12-20"}


@pytest.mark.anyio
async def test_the_connector_reads_the_same_reasons_the_library_reads() -> None:
    fake = FakeCalendar(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(fake)
    with FakeServer(fake) as server:
        calendar = connector_for(fake, server)
        codes = {}
        for name, tool, args in (
            ("missing", "gcalendar.update_event", {"event_id": "nosuchevent0000", "summary": "x"}),
            ("invalid", "gcalendar.list_events", {"order_by": "startTime"}),
        ):
            with pytest.raises(ToolError) as caught:
                await calendar.call(tool, args)
            codes[name] = (caught.value.status, caught.value.code)
        await calendar.aclose()
    with _library(FakeCalendar(token=TOKEN)) as (service, _):
        library = {}
        for name, request in (
            ("missing", service.events().get(calendarId="primary", eventId="nosuchevent0000")),
            ("invalid", service.events().list(calendarId="primary", orderBy="startTime")),
        ):
            with pytest.raises(HttpError) as caught_lib:
                request.execute()
            library[name] = (caught_lib.value.status_code, _reason(caught_lib.value))
    assert codes == library == {"missing": (404, "notFound"), "invalid": (400, "invalid")}


def test_the_connector_and_the_library_address_the_same_event() -> None:
    connector_paths = [
        e.request.path
        for e in anyio.run(lambda: _run([("gcalendar.list_events", {"calendar_id": TEAM})]))
    ]
    fake = FakeCalendar(token=TOKEN)
    seed_example(fake)
    with _library(fake) as (service, server):
        service.events().list(calendarId=TEAM).execute()
        library_paths = [r.path for r in server.requests]
    assert connector_paths == library_paths == [f"/calendar/v3/calendars/{TEAM}/events"]


# -- a fake that drifted from Calendar fails the oracle -----------------------------------


def _drifted(http_method: str, change: Callable[[Any], Any], status: int = 200) -> type[FakeCalendar]:
    class Drifted(FakeCalendar):
        def dispatch(self, request: FakeRequest) -> FakeResponse:
            response = super().dispatch(request)
            if request.method == http_method and response.status == status:
                body = change(copy.deepcopy(response.json))
                if isinstance(body, bytes):
                    return dataclasses.replace(response, json=None, body=body, status=200)
                return dataclasses.replace(response, json=body)
            return response

    return Drifted


def _start_as_text(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "start": event["start"].get("dateTime") or event["start"].get("date")}


def _title(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "title": event.get("summary")}


def _sequence_as_text(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "sequence": str(event["sequence"])}


def _events_elsewhere(page: dict[str, Any]) -> dict[str, Any]:
    page["events"] = page.pop("items")
    return page


_UPDATE = ("gcalendar.update_event", {"event_id": STANDUP_ID, "summary": "x"})

DRIFTS = [
    pytest.param("PATCH", _start_as_text, _UPDATE, "(Event): $.start: '2026-12-01T09:00:00Z' is not of type 'object'",
                 id="start-as-text"),
    pytest.param("GET", _title, _UPDATE, "(Event): $: Additional properties are not allowed ('title' was unexpected)",
                 id="invented-title"),
    pytest.param("PATCH", _sequence_as_text, _UPDATE, "(Event): $.sequence: '1' is not of type 'integer'",
                 id="sequence-as-text"),
    pytest.param("GET", _events_elsewhere, ("gcalendar.list_events", {}),
                 "(Events): $: Additional properties are not allowed ('events' was unexpected)",
                 id="list-without-items"),
]


@pytest.mark.parametrize(("method", "change", "call", "expected"), DRIFTS)
def test_a_fake_that_drifted_fails_the_document(
    method: str, change: Callable[[Any], Any], call: Call, expected: str
) -> None:
    faithful = anyio.run(lambda: _run([call]))
    drifted = anyio.run(lambda: _run([call], fake_class=_drifted(method, change)))
    assert [p for e in faithful for p in problems(e)] == []
    found = [p for e in drifted for p in problems(e)]
    assert any(expected in p for p in found), found


class _ReasonlessErrors(FakeCalendar):
    """Errors as ``{"error": {"code", "message"}}``, without Calendar's ``errors`` list."""

    def error(self, status: int, message: str, *, code: str | None = None, **extra: Any) -> FakeResponse:
        return FakeResponse(status, json={"error": {"code": status, "message": message}})


class _PatchAsPut(FakeCalendar):
    """Serves an update where the document has a patch: a PATCH finds no route."""

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        if request.method == "PATCH":
            return self.not_found(request)
        return super().dispatch(request)


class _DeleteIgnoresIfMatch(FakeCalendar):
    """Deletes whatever ETag the request holds (the precondition create_event's undo relies on)."""

    def _precondition(self, request: FakeRequest, event: FakeEvent) -> FakeResponse | None:
        return None if request.method == "DELETE" else super()._precondition(request, event)


def test_a_fake_that_drifted_fails_the_library() -> None:
    reasonless = _library_problems(_ReasonlessErrors)
    assert any(p.startswith("missing: the library read (404, ") for p in reasonless), reasonless
    broke_off = _library_problems(_PatchAsPut)
    assert len(broke_off) == 1
    assert broke_off[0].startswith("the library's drive broke off: HttpError: <HttpError 404"), broke_off
    careless = _library_problems(_DeleteIgnoresIfMatch)  # the stale delete went through,
    assert len(careless) == 1  # so the library's own delete after it finds the event gone
    assert careless[0].startswith("the library's drive broke off: HttpError: <HttpError 410"), careless
