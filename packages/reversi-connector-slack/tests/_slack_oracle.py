"""Slack's own Web API description as an oracle: requests the connector sends, answers the fake gives.

The description is Slack's OpenAPI 2 file (``vendor/slack/``, MIT, see its README). Two
vendor habits and one difference of regular expressions are handled here, and nothing else
is changed:

- ``"items": [A, B]`` means "one of A or B" in Slack's file; a JSON Schema validator
  reads a list there as tuple validation, so each such list becomes ``anyOf``
  (:func:`fix_items`), as the workspace's vendor-api README describes.
- Each method's error body lists the codes it may carry (``error.enum``, closed with
  ``additionalProperties: false``). The file dates from 2020 and Slack's method pages
  list more today. :data:`AMENDMENTS` adds, per method, only the codes the fake answers
  with that the file lacks, each with the method page that lists it; a code the fake
  invents is still caught.
- The file's patterns (``defs_ts``: ``^\\d{10}\\.\\d{6}$``) are JSON Schema's, ECMA-262,
  where ``\\d`` is ``[0-9]``; Python's ``re``, which ``jsonschema`` uses, would also match
  other scripts' digits, so ``\\d`` is read as ``[0-9]`` (:func:`ascii_patterns`).

A request is checked against its method's parameters (``formData`` for a POST, ``query``
for a GET): no parameter the method does not declare, every required one present, each
value readable as its declared type (form and query values are text: a ``number`` must
parse as one, a ``boolean`` be ``true``/``false``/``1``/``0``), a declared content type,
and the token in ``Authorization: Bearer`` (the file's ``slackAuth`` OAuth scheme), never
in the query or the body.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

__all__ = [
    "AMENDMENTS",
    "SPEC_FILE",
    "ascii_patterns",
    "fix_items",
    "request_problems",
    "response_problems",
    "spec",
]

SPEC_FILE = (
    Path(__file__).resolve().parent / "vendor" / "slack" / "slack-web-openapi-v2-trimmed.json"
)

_METHODS_DOCS = "https://docs.slack.dev/reference/methods"

AMENDMENTS: Mapping[str, Mapping[str, str]] = {
    method: {
        "missing_scope": f"{_METHODS_DOCS}/{method} (Errors: the token lacks a scope; with "
        "'needed' and 'provided')",
        "ratelimited": "https://docs.slack.dev/apis/web-api/rate-limits (HTTP 429)",
        **extra,
    }
    for method, extra in {
        "conversations.list": {"invalid_cursor": f"{_METHODS_DOCS}/conversations.list (Errors)"},
        "chat.postMessage": {},
        "chat.delete": {},
        "reactions.add": {"channel_not_found": f"{_METHODS_DOCS}/reactions.add (Errors)"},
        "reactions.remove": {"channel_not_found": f"{_METHODS_DOCS}/reactions.remove (Errors)"},
    }.items()
}
"""Error codes Slack's current method pages list and the 2020 file lacks: ``{method: {code: page}}``."""

_INTEGER = re.compile(r"^-?[0-9]+\Z")
_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?\Z")
_BOOLEAN = re.compile(r"^(true|false|1|0)\Z")


def fix_items(node: Any) -> Any:
    """Slack's ``"items": [A, B]`` ("one of A or B") as ``anyOf``, everywhere in ``node``."""
    if isinstance(node, dict):
        node = {k: fix_items(v) for k, v in node.items()}
        if isinstance(node.get("items"), list):
            alternatives = node.pop("items")
            if node.get("type") == "array":
                node["items"] = {"anyOf": alternatives}
            else:
                node = {"allOf": [node], "anyOf": alternatives} if node else {"anyOf": alternatives}
        return node
    return [fix_items(v) for v in node] if isinstance(node, list) else node


def ascii_patterns(node: Any) -> Any:
    """Every ``pattern`` in ``node`` with ``\\d`` as ``[0-9]``, the meaning JSON Schema gives it.

    JSON Schema patterns are ECMA-262 regular expressions, where ``\\d`` is ``[0-9]``;
    ``jsonschema`` runs them with Python's ``re``, whose ``\\d`` also matches other scripts'
    digits (``defs_ts`` would take ``１７１２…``).
    """
    if isinstance(node, dict):
        return {
            k: v.replace("\\d", "[0-9]") if k == "pattern" and isinstance(v, str) else ascii_patterns(v)
            for k, v in node.items()
        }
    return [ascii_patterns(v) for v in node] if isinstance(node, list) else node


@cache
def spec() -> dict[str, Any]:
    """Slack's description, list-valued ``items`` made ``anyOf``, ``\\d`` read as ``[0-9]``."""
    loaded = json.loads(SPEC_FILE.read_text(encoding="utf-8"))
    return fix_items(ascii_patterns(loaded))  # type: ignore[no-any-return]


def _operation(method: str) -> dict[str, Any]:
    """The operation of a Web API method (each is declared under one HTTP verb)."""
    item = spec()["paths"][f"/{method}"]
    ((verb, operation),) = item.items()
    return {"verb": verb, **operation}


def _validate(schema: dict[str, Any], value: Any, where: str) -> list[str]:
    validator = jsonschema.Draft4Validator({**schema, "definitions": spec()["definitions"]})
    return [
        f"{where}: {'/'.join(str(p) for p in error.absolute_path) or '(top)'}: {error.message}"
        for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    ]


def response_problems(method: str, status: int, body: Any) -> list[str]:
    """What is wrong with an answer of ``method`` according to Slack's description (``[]``: nothing).

    ``{"ok": true}`` answers are checked against the method's ``200`` schema, ``{"ok":
    false}`` ones against its ``default`` (error) schema with :data:`AMENDMENTS`. Slack
    answers both with HTTP 200, and a rate limit with HTTP 429.
    """
    where = f"{method} -> {status}"
    if not isinstance(body, dict) or not isinstance(body.get("ok"), bool):
        return [f"{where}: the answer is not a JSON object with a boolean 'ok': {body!r}"]
    operation = _operation(method)
    if body["ok"]:
        problems = [] if status == 200 else [f"{where}: a success must be HTTP 200"]
        return problems + _validate(operation["responses"]["200"]["schema"], body, where)
    schema = copy.deepcopy(operation["responses"]["default"]["schema"])
    amended = AMENDMENTS.get(method, {})
    schema["properties"]["error"]["enum"] = [*schema["properties"]["error"]["enum"], *amended]
    if body.get("error") == "missing_scope":
        for name in ("needed", "provided"):
            schema["properties"].setdefault(name, {"type": "string"})
    expected = 429 if body.get("error") == "ratelimited" else 200
    problems = (
        [] if status == expected else [f"{where}: {body.get('error')!r} must be HTTP {expected}"]
    )
    return problems + _validate(schema, body, where)


def _form_problem(kind: str, value: str) -> bool:
    pattern = {"boolean": _BOOLEAN, "integer": _INTEGER, "number": _NUMBER}.get(kind)
    return pattern is not None and not pattern.match(value)


def request_problems(
    method: str,
    http_method: str,
    headers: Mapping[str, str],
    query: Mapping[str, str],
    form: Mapping[str, str],
    content_type: str | None,
    token: str,
) -> list[str]:
    """What is wrong with a request to ``method`` according to Slack's description (``[]``: nothing).

    ``headers`` must be case-insensitive or lower-cased; ``form`` is the parsed body.
    """
    operation = _operation(method)
    where = f"{http_method} {method}"
    problems: list[str] = []
    if http_method.lower() != operation["verb"]:
        problems.append(f"{where}: the description declares {operation['verb'].upper()}")
    if headers.get("authorization") != f"Bearer {token}":
        problems.append(f"{where}: the token must travel as 'Authorization: Bearer'")
    location = "query" if operation["verb"] == "get" else "formData"
    sent = dict(query) if location == "query" else dict(form)
    if location == "formData":
        if query:
            problems.append(
                f"{where}: a POST carries its arguments in the body, not {sorted(query)}"
            )
        kind = (content_type or "").split(";")[0].strip().lower()
        if kind not in operation.get("consumes", []):
            problems.append(
                f"{where}: content type {kind!r} is not one of {operation.get('consumes')}"
            )
    declared = {
        p["name"]: p
        for p in operation.get("parameters", [])
        if p["in"] == location and p["name"] != "token"
    }
    if "token" in sent:
        problems.append(f"{where}: the token must not be sent as a parameter")
    for name in sorted(set(sent) - set(declared) - {"token"}):
        problems.append(f"{where}: {name!r} is not a parameter of {method}")
    for name, parameter in declared.items():
        if parameter.get("required") and name not in sent:
            problems.append(f"{where}: the required {name!r} is missing")
        if name in sent and _form_problem(parameter.get("type", "string"), str(sent[name])):
            problems.append(f"{where}: {name}={sent[name]!r} is not a {parameter['type']}")
    return problems
