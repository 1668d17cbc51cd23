"""The second oracle's machinery: the Calendar v3 discovery document of google-api-python-client.

The document is the one the client library ships and builds its ``calendar`` service from
(``googleapiclient/discovery_cache/documents/calendar.v3.json``; the library is pinned in
the root pyproject's test group). ``problems(exchange)`` checks one exchange the fake
served against it: the request names a method of the ``events`` resource (HTTP method and
path template), its query parameters are that method's (or the document's global ones)
with values of their type and enum, the required ones are there, and its body fits the
method's request schema (with the fields the method requires; a patch may send null to
clear a field); a success answer fits the method's response schema, a method without one
answers no body. The document's schemas are turned into JSON Schema with every object
closed (a property the document does not declare is refused), ``int64`` strings of digits
and RFC 3339 date-times checked by pattern.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import googleapiclient
import jsonschema

from reversi_core.testing import Exchange

__all__ = ["DOCUMENT", "METHODS", "Method", "document", "method_of", "problems", "validator"]

DOCUMENT = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents" / "calendar.v3.json"
"""The Calendar v3 discovery document as google-api-python-client ships it."""

METHODS = ("list", "insert", "get", "patch", "delete")
"""The events methods the connector uses."""

_RFC3339 = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
_FORMATS = {"int64": r"^-?\d+$", "uint64": r"^\d+$", "date-time": _RFC3339, "date": r"^\d{4}-\d{2}-\d{2}$"}


@cache
def document() -> dict[str, Any]:
    """The parsed discovery document."""
    return dict(json.loads(DOCUMENT.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class Method:
    """One method of the ``events`` resource, as the document describes it."""

    name: str
    spec: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.spec["id"])

    @property
    def http_method(self) -> str:
        return str(self.spec["httpMethod"])

    @property
    def pattern(self) -> re.Pattern[str]:
        path = "/" + document()["servicePath"] + self.spec["path"]
        return re.compile(re.sub(r"\\\{\w+\\\}", "[^/?]+", re.escape(path)))

    def __str__(self) -> str:
        return f"{self.id} ({self.http_method} {self.spec['path']})"


def _methods() -> list[Method]:
    events = document()["resources"]["events"]["methods"]
    return [Method(name, events[name]) for name in METHODS]


def _convert(node: dict[str, Any]) -> dict[str, Any]:
    """A discovery schema node as JSON Schema (draft-07), every object closed."""
    if "$ref" in node:
        return {"$ref": f"#/definitions/{node['$ref']}"}
    kind = node.get("type")
    if kind == "object":
        out: dict[str, Any] = {
            "type": "object",
            "properties": {k: _convert(v) for k, v in node.get("properties", {}).items()},
        }
        extra = node.get("additionalProperties")
        out["additionalProperties"] = _convert(extra) if isinstance(extra, dict) else False
        return out
    if kind == "array":
        return {"type": "array", "items": _convert(node.get("items", {}))}
    if kind == "string":
        out = {"type": "string"}
        if node.get("format") in _FORMATS:
            out["pattern"] = _FORMATS[node["format"]]
        if "enum" in node:
            out["enum"] = node["enum"]
        return out
    if kind in ("integer", "number", "boolean"):
        return {"type": kind}
    return {}  # "any"


@cache
def _definitions() -> dict[str, Any]:
    return {name: _convert(schema) for name, schema in document()["schemas"].items()}


@cache
def validator(name: str, method_id: str | None = None) -> jsonschema.Draft7Validator:
    """A validator of the document's schema ``name``; with ``method_id``, requiring its fields.

    A property is required for a method when the document's ``annotations.required`` lists
    the method (``start`` and ``end`` for ``calendar.events.insert``).
    """
    definitions = _definitions()
    top = dict(definitions[name])
    if method_id is not None:
        fields = document()["schemas"][name].get("properties", {})
        required = [k for k, v in fields.items() if method_id in v.get("annotations", {}).get("required", [])]
        if required:
            top["required"] = required
    return jsonschema.Draft7Validator({**top, "definitions": definitions})


def method_of(method: str, target: str) -> Method | None:
    """The events method a request (``method``, raw ``target``) is a call of, if any."""
    path = target.split("?", 1)[0]
    for candidate in _methods():
        if candidate.http_method == method and candidate.pattern.fullmatch(path):
            return candidate
    return None


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def _departures(check: jsonschema.Draft7Validator, body: Any) -> list[str]:
    found = sorted(check.iter_errors(body), key=lambda e: e.json_path)
    return [f"{e.json_path}: {e.message}" for e in found]


def _parameter_problems(method: Method, query: dict[str, str]) -> list[str]:
    declared = {**document()["parameters"], **method.spec.get("parameters", {})}
    found = []
    for name, spec in method.spec.get("parameters", {}).items():
        if spec.get("required") and spec.get("location") == "query" and name not in query:
            found.append(f"{method}: the required query parameter {name} is missing")
    for name, value in sorted(query.items()):
        spec = declared.get(name)
        if spec is None or spec.get("location") == "path":
            found.append(f"{method}: the query parameter {name} is not the method's")
            continue
        kind = spec.get("type")
        if kind == "integer":
            ok = value.lstrip("-").isdigit()
            low, high = spec.get("minimum"), spec.get("maximum")
            ok = ok and (low is None or int(value) >= int(low)) and (high is None or int(value) <= int(high))
        elif kind == "boolean":
            ok = value in ("true", "false")
        elif spec.get("format") == "date-time":
            ok = re.fullmatch(_RFC3339, value) is not None
        else:
            ok = True
        if "enum" in spec:
            ok = ok and value in spec["enum"]
        if not ok:
            found.append(f"{method}: the query parameter {name}={value!r} is not a valid {kind}")
    return found


def problems(exchange: Exchange) -> list[str]:
    """Where an exchange departs from the discovery document (empty: it fits)."""
    request, response = exchange.request, exchange.response
    method = method_of(request.method, request.target)
    if method is None:
        return [f"{request.method} {request.path}: no events method of the document"]
    found = _parameter_problems(method, dict(request.query))
    schema = method.spec.get("request", {}).get("$ref")
    if schema is None:
        if request.body:
            found.append(f"{method}: a request body, but the method takes none")
    else:
        body = _without_nulls(request.json) if method.name == "patch" else request.json
        required_by = None if method.name == "patch" else method.id
        found += [f"{method} request ({schema}): {p}" for p in _departures(validator(schema, required_by), body)]
    if response is None or request.fault is not None or response.status >= 300:
        return found  # a fault's answer is not the fake's; errors: see the library's checks
    answer = response.json if response.json is not None else (json.loads(response.body) if response.body else None)
    returned = method.spec.get("response", {}).get("$ref")
    where = f"{method} -> {response.status}"
    if returned is None:
        if answer is not None:
            found.append(f"{where}: an answer body, but the method returns none")
    else:
        found += [f"{where} ({returned}): {p}" for p in _departures(validator(returned), answer)]
    return found
