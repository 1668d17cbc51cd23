"""The second oracle's machinery: Graph's JSON Schemas (vendor/graph) against recorded exchanges.

``problems(exchange)`` checks one exchange the fake served: the answer against the
definition Graph's metadata gives its route and status (``ROUTES``; every error status
against ``odataError``), and the connector's request body against the definition of what
the route takes (a chatMessage for a post, nothing for softDelete). Each problem names the
route, the status and where in the body it is, so a drifted fake fails saying what drifted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from reversi_core.testing import Exchange

__all__ = ["ROUTES", "SCHEMAS", "Route", "problems", "route_of", "validator"]

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


@cache
def _definitions() -> dict[str, Any]:
    return dict(json.loads(SCHEMAS.read_text(encoding="utf-8"))["definitions"])


@cache
def validator(name: str) -> jsonschema.Draft7Validator:
    """A Draft 7 validator of Graph's definition ``name`` (``chatMessage``, ``odataError``...)."""
    schema = {"$ref": f"#/definitions/{name}", "definitions": _definitions()}
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


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
