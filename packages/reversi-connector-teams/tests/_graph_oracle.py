"""The second oracle's machinery: Graph's JSON Schemas (vendor/graph) against recorded exchanges.

``problems(exchange)`` checks one exchange the fake served: the answer against the
definition Graph's metadata gives its route and status (``ROUTES``; every error status
against ``odataError``), and the connector's request body against the definition of what
the route takes (a chatMessage for a post, nothing for softDelete). Each problem names the
route, the status and where in the body it is, so a drifted fake fails saying what drifted.

Formats are checked by the oracle's own ``FORMATS`` (one check per format the schemas
name), never by jsonschema's default checker, whose ``date-time`` check runs only when an
optional package happens to be installed. Where Graph's answers differ from Graph's own
metadata, ``DIFFERENCES`` says so and the oracle checks what Graph really sends
(docs/connectors/teams.md, "The second oracle").
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime as dt
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from reversi_core.testing import Exchange

__all__ = ["DIFFERENCES", "FORMATS", "ROUTES", "SCHEMAS", "Difference", "Route", "problems", "route_of", "validator"]

SCHEMAS = Path(__file__).resolve().parent / "vendor" / "graph" / "teams-schemas.json"
"""Graph's Teams definitions (JSON Schema draft-07), derived from its CSDL metadata."""


@dataclass(frozen=True)
class Route:
    """A Graph route the fake serves: what it answers on success, and what it takes."""

    method: str
    template: str
    ok: int
    answer: str | None
    """The definition of the success answer (``None``: no content)."""
    takes: str | None
    """The definition of the request body (``None``: no body)."""

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile("/v1.0" + re.sub(r"\{[\w-]+\}", "[^/?]+", self.template) + r"(\?.*)?")

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


ROUTES = (
    Route("GET", "/teams/{team-id}/channels", 200, "channelCollectionResponse", None),
    Route("POST", "/teams/{team-id}/channels/{channel-id}/messages", 201, "chatMessage", "chatMessage"),
    Route("GET", "/teams/{team-id}/channels/{channel-id}/messages/{message-id}", 200, "chatMessage", None),
    Route("POST", "/teams/{team-id}/channels/{channel-id}/messages/{message-id}/softDelete", 204, None, None),
)


# -- formats: the oracle's own checks, whatever else is installed ------------------------

_DATE_TIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[Tt](?P<time>\d{2}:\d{2}:\d{2})(?P<fraction>\.\d+)?(?P<offset>[Zz]|[+-]\d{2}:\d{2})?"
)


def _date_time(value: str, *, offset_required: bool) -> bool:
    """Whether ``value`` is an RFC 3339 date-time naming a real moment (31 February is not)."""
    match = _DATE_TIME.fullmatch(value)
    if match is None or (offset_required and match["offset"] is None):
        return False
    offset = (match["offset"] or "").upper().replace("Z", "+00:00")
    try:
        dt.datetime.fromisoformat(f"{match['date']}T{match['time']}{offset}")
    except ValueError:
        return False
    return True


FORMATS = jsonschema.FormatChecker(formats=())
"""The formats the oracle checks, each by its own rule (https://json-schema.org/draft-07/json-schema-validation#rfc.section.7.3).

``date-time`` is RFC 3339's ``date-time`` (https://www.rfc-editor.org/rfc/rfc3339#section-5.6),
offset required; ``graph-answer-date-time`` is the same with the offset optional (see
``DIFFERENCES``); ``int32`` and ``int64`` are OData's signed integers; ``base64url`` is
RFC 4648 section 5 (padding optional). A value of another JSON type than the format's is
left to the schema's ``type``, as JSON Schema says.
"""


@FORMATS.checks("date-time")
def _rfc3339_date_time(value: object) -> bool:
    return not isinstance(value, str) or _date_time(value, offset_required=True)


@FORMATS.checks("graph-answer-date-time")
def _graph_answer_date_time(value: object) -> bool:
    return not isinstance(value, str) or _date_time(value, offset_required=False)


@FORMATS.checks("int32")
def _int32(value: object) -> bool:
    return not isinstance(value, int) or -(2**31) <= value < 2**31


@FORMATS.checks("int64")
def _int64(value: object) -> bool:
    return not isinstance(value, int) or -(2**63) <= value < 2**63


@FORMATS.checks("base64url")
def _base64url(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", value) is None:
        return False
    try:
        base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return False
    return True


# -- where Graph's answers differ from Graph's metadata -----------------------------------


@dataclass(frozen=True)
class Difference:
    """A property whose value in Graph's real answers departs from what the metadata says."""

    definition: str
    property: str
    format: str
    """The format checked instead of the metadata's."""
    why: str


DIFFERENCES = (
    Difference(
        "innerError",
        "date",
        "graph-answer-date-time",
        "Graph's error bodies give innerError.date in UTC without an offset, as "
        '"2021-07-02T01:40:19" (https://microsoftgraph.github.io/msgraph-sdk-design/content/ErrorContent.html, '
        "https://learn.microsoft.com/graph/errors), where the metadata says Edm.DateTimeOffset.",
    ),
)
"""Each difference the oracle allows, the only place it departs from the schemas' text."""


@cache
def _definitions() -> dict[str, Any]:
    definitions = copy.deepcopy(json.loads(SCHEMAS.read_text(encoding="utf-8"))["definitions"])
    for difference in DIFFERENCES:
        definitions[difference.definition]["properties"][difference.property]["format"] = difference.format
    return dict(definitions)


@cache
def validator(name: str) -> jsonschema.Draft7Validator:
    """A Draft 7 validator of Graph's definition ``name`` (``chatMessage``, ``odataError``...).

    Formats are checked by ``FORMATS``, with ``DIFFERENCES`` applied.
    """
    schema = {"$ref": f"#/definitions/{name}", "definitions": _definitions()}
    return jsonschema.Draft7Validator(schema, format_checker=FORMATS)


def route_of(exchange: Exchange) -> Route | None:
    """The route of ``ROUTES`` the exchange's request went to, if any."""
    request = exchange.request
    for route in ROUTES:
        if route.method == request.method and route.pattern.fullmatch(request.target):
            return route
    return None


def _departures(name: str, body: Any) -> list[str]:
    found = sorted(validator(name).iter_errors(body), key=lambda e: e.json_path)
    return [f"{e.json_path}: {e.message}" for e in found]


def problems(exchange: Exchange) -> list[str]:
    """Where the exchange departs from Graph's description (empty: it fits)."""
    request, response = exchange.request, exchange.response
    route = route_of(exchange)
    if route is None:
        return [f"{request.method} {request.path}: no route of the oracle"]
    found: list[str] = []
    if route.takes is None:
        if request.body:
            found.append(f"{route}: the request carries a body, but the route takes none")
    else:
        found += [f"{route} request body ({route.takes}): {p}" for p in _departures(route.takes, request.json)]
    if response is None or request.fault is not None:
        return found  # a fault's answer is not the fake's
    where = f"{route} -> {response.status}"
    answer = response.json if response.json is not None else (json.loads(response.body) if response.body else None)
    if response.status >= 400:
        found += [f"{where} (odataError): {p}" for p in _departures("odataError", answer)]
    elif response.status != route.ok:
        found.append(f"{where}: the documented success status is {route.ok}")
    elif route.answer is None:
        if answer is not None:
            found.append(f"{where}: a {route.ok} with a body")
    else:
        found += [f"{where} ({route.answer}): {p}" for p in _departures(route.answer, answer)]
    return found
