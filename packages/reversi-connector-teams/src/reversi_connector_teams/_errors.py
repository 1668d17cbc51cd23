"""Microsoft Graph's error answers as an error table: codes, messages and throttling.

Graph answers an error with ``{"error": {"code", "message", "innerError": {"date",
"request-id", "client-request-id"}}}`` (https://learn.microsoft.com/en-us/graph/errors);
``code`` is Graph's own (``BadRequest``, ``Unauthorized``, ``Forbidden``, ``NotFound``,
``InvalidAuthenticationToken``, ``TooManyRequests``...) and becomes the ``ToolError``'s
code as Graph spells it. Throttling is a 429 (and sometimes a 503) with ``Retry-After``
in seconds (https://learn.microsoft.com/en-us/graph/throttling): its code is
``rate_limited`` and the message says when to try again, so an agent never mistakes it
for a refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reversi_core.http import ErrorTable, RateLimit

__all__ = ["ERRORS", "error_code_and_message"]

RATE_LIMIT = RateLimit(
    statuses=frozenset({429}),
    maybe_statuses=frozenset({503}),
    codes=frozenset({"TooManyRequests", "activityLimitReached"}),
)
"""Any 429, a 503 that carries ``Retry-After``, and Graph's throttling codes on any status."""

ERRORS = ErrorTable(
    code_fields=("error.code",),
    message_fields=("error.message",),
    statuses={
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        405: "MethodNotAllowed",
        409: "Conflict",
        412: "PreconditionFailed",
        413: "RequestEntityTooLarge",
        422: "UnprocessableEntity",
        429: "TooManyRequests",
    },
    rate_limit=RATE_LIMIT,
)
"""Graph's error table: the body's ``error.code`` wins, then the status's code, ``server_error`` for 5xx."""


def error_code_and_message(
    status: int, headers: Mapping[str, str], body: Any
) -> tuple[str | None, str | None]:
    """``(code, message)`` for a Graph error answer with ``status``, ``headers`` and JSON ``body``.

    ``code`` is ``rate_limited`` for throttling (:data:`RATE_LIMIT`), else Graph's
    ``error.code``, else the code of the status (``NotFound`` for 404...), else
    ``server_error`` for a 5xx. ``message`` is Graph's ``error.message`` (with, for
    throttling, when to try again). ``headers`` must be case-insensitive or lower-cased.
    See https://learn.microsoft.com/en-us/graph/errors.
    """
    return ERRORS.classify(status, headers, body)
