"""Stripe's OpenAPI description (API 2023-08-16) as a second oracle, through openapi-core.

``check(method, path, query, headers, body, status, answer)`` validates one exchange:
the request the connector sent (path, query, the credential's presence, the form body)
and the answer the backend gave (status and JSON body against the operation's response,
an error against ``components.schemas.error``). It returns the problems found, each
naming the route.

Two habits of Stripe's description are relaxed in memory, as ``tests/vendor/stripe``'s
README and the shared vendor-api README explain: ``nullable: true`` beside ``anyOf`` or
``enum`` (a strict OpenAPI 3.0 validator would refuse ``null`` there, even in Stripe's
own fixtures), and form bodies and query parameters with ``style: deepObject``
(openapi-core cannot read them; the query's ``expand`` list is read as ``style: form``,
the connector sends none). For the second, the form body is read back into nested values
(``metadata[k]=v``), its text cast to the types the schema names, and validated as the
same schema under an ``application/json`` media type added beside the form one.
"""

from __future__ import annotations

import copy
import json
import re
import urllib.parse
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse

from reversi_connector_stripe._wire import decode_form
from reversi_core.testing import FakeServer

SPEC_FILE = Path(__file__).resolve().parent / "vendor" / "stripe" / "openapi-trimmed.json"
HOST = "https://api.stripe.com"

__all__ = ["check", "server_problems", "spec"]


def _relax_nullable(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _relax_nullable(v) for k, v in node.items()}
        if node.get("nullable") is True and "type" not in node:  # nullable beside anyOf
            node.pop("nullable")
            return {"anyOf": [node, {"type": "object", "nullable": True, "enum": [None]}]}
        if node.get("nullable") is True and "enum" in node and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
        return node
    return [_relax_nullable(v) for v in node] if isinstance(node, list) else node


@cache
def spec() -> dict[str, Any]:
    """The description, relaxed, with a JSON twin of every form request body."""
    document = _relax_nullable(json.loads(SPEC_FILE.read_text(encoding="utf-8")))
    for item in document["paths"].values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and parameter.get("style") == "deepObject":
                    parameter["style"] = "form"  # expand[]: openapi-core reads no deepObject list
            content = operation.get("requestBody", {}).get("content", {})
            form = content.get("application/x-www-form-urlencoded")
            if form is not None:
                content["application/json"] = {"schema": copy.deepcopy(form["schema"])}
    return document


@cache
def _openapi() -> OpenAPI:
    return OpenAPI.from_dict(spec())


def _resolve(schema: Any) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        node: Any = spec()
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _cast(value: Any, schema: Any) -> Any:
    """Form text cast to the type ``schema`` names (integers, booleans), nested values too."""
    schema = _resolve(schema)
    if not isinstance(schema, dict):
        return value
    for branch in schema.get("anyOf", []):
        kind = _resolve(branch).get("type")
        if (isinstance(value, dict) and kind == "object") or (isinstance(value, list) and kind == "array"):
            return _cast(value, branch)
        if isinstance(value, str) and kind in ("integer", "boolean", "number"):
            cast = _cast(value, branch)
            if cast is not value:
                return cast
    kind = schema.get("type")
    if kind == "integer" and isinstance(value, str) and re.fullmatch(r"-?\d+", value):
        return int(value)
    if kind == "number" and isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value):
        return float(value)
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        return {k: _cast(v, props.get(k, extra if isinstance(extra, dict) else {})) for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        return [_cast(v, schema.get("items", {})) for v in value]
    return value


def _operation(method: str, path: str) -> tuple[str, dict[str, Any], dict[str, str]] | None:
    for template, item in spec()["paths"].items():
        pattern = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$"
        found = re.match(pattern, path)
        if found and method.lower() in item:
            params = {k: urllib.parse.unquote(v) for k, v in found.groupdict().items()}
            return template, item[method.lower()], params
    return None


def check(
    method: str,
    path: str,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    body: bytes,
    status: int | None,
    answer: bytes | None,
) -> list[str]:
    """The problems of one exchange against Stripe's description (empty: it fits)."""
    found = _operation(method, path)
    where = f"{method} {path}"
    if found is None:
        return [f"{where}: no operation of Stripe's description serves it"]
    template, operation, path_params = found
    problems: list[str] = []
    data = b""
    if body:
        schema = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
        try:
            data = json.dumps(_cast(decode_form(body), schema)).encode()
        except ValueError as exc:
            return [f"{where}: the form body cannot be read: {exc}"]
    request = MockRequest(
        HOST,
        method,
        path,
        path_pattern=template,
        args=dict(query),
        view_args=path_params,
        headers={k.lower(): v for k, v in headers.items()},
        data=data or None,
        content_type="application/json" if data else "application/x-www-form-urlencoded",
    )
    try:
        _openapi().validate_request(request)
    except Exception as exc:  # openapi-core raises its own tree; the message says what
        problems.append(f"{where}: request: {_explain(exc)}")
    if status is not None and answer is not None:
        response = MockResponse(answer, status_code=status, content_type="application/json")
        try:
            _openapi().validate_response(request, response)
        except Exception as exc:
            problems.append(f"{where}: answer {status}: {_explain(exc)}")
    return problems


def server_problems(server: FakeServer) -> tuple[int, list[str]]:
    """How many of ``server``'s exchanges were checked, and the problems of those that do not fit.

    An exchange whose answer an injected fault gave (or that got none) is skipped: that
    answer is the test's, not the fake's.
    """
    problems: list[str] = []
    checked = 0
    for exchange in server.exchanges:
        request, response = exchange.request, exchange.response
        if request.fault is not None or response is None:
            continue
        _, payload = response.encode()
        problems += check(
            request.method, request.path, request.query, request.headers, request.body,
            response.status, payload,
        )
        checked += 1
    return checked, problems


def _explain(exc: BaseException) -> str:
    parts = [f"{type(exc).__name__}: {exc}"]
    for inner in getattr(exc, "schema_errors", None) or []:
        location = "/".join(map(str, getattr(inner, "path", [])))
        parts.append(f"{location}: {getattr(inner, 'message', inner)}")
    cause = exc.__cause__
    if cause is not None:
        for inner in getattr(cause, "schema_errors", None) or []:
            location = "/".join(map(str, getattr(inner, "path", [])))
            parts.append(f"{location}: {getattr(inner, 'message', inner)}")
    return "; ".join(parts)[:1500]
