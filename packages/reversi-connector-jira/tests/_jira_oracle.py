"""The second oracle: Jira Cloud's OpenAPI description, read with openapi-core.

:func:`problems` validates one exchange the fake server recorded: the request the
connector sent (method, path, query, headers, JSON body) and the answer the fake gave
(status, body) against ``vendor/jira/openapi-v3-trimmed.json``. Three vendor quirks are
handled, as vendor-api/README.md describes them: Jira writes timestamps as
``2021-01-17T12:34:00.000+0000``, which a strict RFC 3339 ``date-time`` refuses, so a
lenient checker is given; POST transitions declares its 204 with an (empty-schema)
JSON body, so an empty 204 is validated as ``{}``; most 4xx responses declare no
schema, so every error body is also validated against
``components.schemas.ErrorCollection`` directly (it has ``additionalProperties: false``).
A 429 answer is not checked: the description declares it for no operation, while
Atlassian's rate-limiting page documents it for all.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse

SPEC_FILE = Path(__file__).resolve().parent / "vendor" / "jira" / "openapi-v3-trimmed.json"
HOST = "https://your-domain.atlassian.net"
RATE_LIMITED = 429
"""A status no operation of the description declares, though Jira answers it to every one
(https://developer.atlassian.com/cloud/jira/platform/rate-limiting/): its answer is not
checked against the description."""
_JIRA_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})\Z", re.ASCII
)
"""Jira's timestamps (``2021-01-17T12:34:00.000+0000``), in ASCII digits: ``re.ASCII``, since
Python's ``\\d`` would take any script's digits."""


@functools.cache
def spec() -> dict[str, Any]:
    return json.loads(SPEC_FILE.read_text(encoding="utf-8"))


@functools.cache
def openapi() -> OpenAPI:
    config = Config(extra_format_validators={"date-time": lambda v: bool(_JIRA_DATE_TIME.match(v))})
    return OpenAPI.from_dict(spec(), config=config)


@functools.cache
def _error_collection() -> jsonschema.Draft4Validator:
    components = spec()["components"]
    return jsonschema.Draft4Validator(
        {"$ref": "#/components/schemas/ErrorCollection", "components": components}
    )


def problems(
    method: str, target: str, headers: dict[str, str], body: bytes, status: int | None, answer: Any
) -> list[str]:
    """Where one exchange departs from the description (``status`` ``None``: no answer to check)."""
    path, _, query = target.partition("?")
    args: dict[str, Any] = {}
    for pair in filter(None, query.split("&")):
        key, _, value = pair.partition("=")
        args[key] = value
    request = MockRequest(
        HOST,
        method.lower(),
        path,
        args=args,
        headers=headers,
        data=body or None,
        content_type="application/json" if body else None,
    )
    found = []
    try:
        openapi().validate_request(request)
    except Exception as exc:  # openapi-core raises a tree of its own errors
        found.append(f"{method} {path} request: {_explain(exc)}")
    if status is None or status == RATE_LIMITED:
        return found
    data = (
        b"{}"
        if status == 204 and method == "POST" and path.endswith("/transitions")
        else (json.dumps(answer).encode() if answer is not None else b"")
    )
    response = MockResponse(
        data, status_code=status, content_type="application/json" if data else None
    )
    try:
        openapi().validate_response(request, response)
    except Exception as exc:
        found.append(f"{method} {path} answer {status}: {_explain(exc)}")
    if (status >= 400 and status != 404) or (status == 404 and answer is not None):
        for error in _error_collection().iter_errors(answer):
            found.append(
                f"{method} {path} answer {status} is not an ErrorCollection: {error.message}"
            )
    return found


def _explain(exc: BaseException) -> str:
    causes = [str(exc)]
    inner = getattr(exc, "schema_errors", None) or []
    causes += [getattr(e, "message", str(e)) for e in inner]
    cause = exc.__cause__
    while cause is not None:
        causes.append(str(cause))
        causes += [
            getattr(e, "message", str(e)) for e in getattr(cause, "schema_errors", None) or []
        ]
        cause = cause.__cause__
    return "; ".join(dict.fromkeys(c for c in causes if c))
