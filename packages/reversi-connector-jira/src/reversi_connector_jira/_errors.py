"""Jira's error answers as an error table.

Jira Cloud answers an error with an ``ErrorCollection``: ``{"errorMessages": [...],
"errors": {field: message}, "status"?}``, and no code of its own
(https://developer.atlassian.com/cloud/jira/platform/rest/v3/intro/#status-codes). The
code therefore comes from the status (``bad_request``, ``unauthorized``, ``forbidden``,
``not_found``, ``conflict``...), and the message is the first of ``errorMessages`` with
the field errors after it. A 429 is a rate limit, with ``Retry-After``
(https://developer.atlassian.com/cloud/jira/platform/rate-limiting/).
"""

from __future__ import annotations

from typing import Any

from reversi_core.http import ErrorTable

__all__ = ["ERRORS"]


def _field_errors(body: Any) -> str:
    """The ``errors`` map of an ErrorCollection, as ``field: message`` phrases."""
    errors = body.get("errors") if isinstance(body, dict) else None
    if not isinstance(errors, dict):
        return ""
    return "; ".join(f"{k}: {v}" for k, v in sorted(errors.items()) if isinstance(v, str))


ERRORS = ErrorTable(
    code_fields=(),  # Jira's bodies carry no code: the status says it
    message_fields=("errorMessages.0", "message"),
    statuses={
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        405: "method_not_allowed",
        409: "conflict",
        413: "too_large",
        422: "unprocessable",
        429: "rate_limited",
    },
    details=_field_errors,
)
"""Jira's error table: the status's code, ``server_error`` for 5xx, rate limits on 429."""
