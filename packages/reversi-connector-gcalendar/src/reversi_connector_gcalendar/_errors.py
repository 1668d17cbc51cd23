"""Google Calendar's error answers as an error table: codes, messages and rate limits.

Calendar answers an error with ``{"error": {"code": <status>, "message", "errors":
[{"domain", "reason", "message"}], "status"?}}``; the first item's ``reason``
(``notFound``, ``deleted``, ``conditionNotMet``, ``required``, ``timeRangeEmpty``,
``insufficientPermissions``, ``authError``...) becomes the ``ToolError``'s code
(https://developers.google.com/calendar/api/guides/errors). A usage limit is a 403 or a
429 with the reason ``rateLimitExceeded``, ``userRateLimitExceeded`` or ``quotaExceeded``:
its code is ``rate_limited``, never ``forbidden``, since the same call works later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reversi_core.http import ErrorTable, RateLimit

__all__ = ["CHANGED_SINCE", "ERRORS", "error_code_and_message"]

CHANGED_SINCE = "changed_since"
"""The code of an undo refused because someone changed the event since the forward call
(the code fs, postgres and github give such a refusal too)."""

RATE_LIMIT = RateLimit(
    statuses=frozenset({429}),
    codes=frozenset({"rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded"}),
)
"""Any 429, and Calendar's usage-limit reasons on any status (a 403 with them, usually)."""

ERRORS = ErrorTable(
    code_fields=("error.errors.0.reason", "error.status"),
    message_fields=("error.message", "error.errors.0.message"),
    statuses={
        400: "badRequest",
        401: "authError",
        403: "forbidden",
        404: "notFound",
        409: "duplicate",
        410: "deleted",
        412: "conditionNotMet",
        422: "invalid",
        429: "rateLimitExceeded",
    },
    rate_limit=RATE_LIMIT,
    server_error="backendError",
)
"""Calendar's error table: the first error's ``reason`` wins, then the status's code (``backendError`` for 5xx)."""


def error_code_and_message(
    status: int, headers: Mapping[str, str], body: Any
) -> tuple[str | None, str | None]:
    """``(code, message)`` for a Calendar error answer with ``status``, ``headers`` and JSON ``body``.

    ``code`` is ``rate_limited`` for a usage limit, else the first ``errors[].reason``,
    else ``error.status``, else the status's reason (``notFound`` for 404...), else
    ``backendError`` for a 5xx. ``headers`` must be case-insensitive or lower-cased. See
    https://developers.google.com/calendar/api/guides/errors.
    """
    return ERRORS.classify(status, headers, body)
