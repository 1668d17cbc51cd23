"""Linear's error answers as an error table.

Linear answers GraphQL errors in the standard shape, ``{"data": null, "errors":
[{"message", "path", "extensions": {"code", "type", "userPresentableMessage", ...}}]}``,
with HTTP 200 (an error while executing the operation) or HTTP 400 (a request Linear
refuses as a whole: authentication, validation, rate limits); both are failures
(https://linear.app/developers/graphql#errors). The code is ``extensions.code``
(``AUTHENTICATION_ERROR``, ``FORBIDDEN``, ``INVALID_INPUT``,
``GRAPHQL_VALIDATION_FAILED``...), kept as Linear spells it, with two exceptions: a rate
limit (``RATELIMITED``, https://linear.app/developers/rate-limiting) is
``rate_limited``, as for every connector, and a message starting "Entity not found",
which Linear gives under a general code, is ``entity_not_found``.
"""

from __future__ import annotations

from typing import Any

from reversi_core.http import ErrorTable, RateLimit, body_value

__all__ = ["ENTITY_NOT_FOUND", "ERRORS", "has_errors"]

ENTITY_NOT_FOUND = "entity_not_found"
"""The code of Linear's "Entity not found" answers (the thing is gone, or out of reach)."""


def has_errors(body: Any) -> bool:
    """True when a JSON answer carries GraphQL ``errors`` (whatever its HTTP status)."""
    return isinstance(body, dict) and bool(body.get("errors"))


def _presentable(body: Any) -> str:
    """Linear's message for people, when it says more than the message itself."""
    shown = body_value(body, "errors.0.extensions.userPresentableMessage")
    message = body_value(body, "errors.0.message")
    return shown if isinstance(shown, str) and shown and shown != message else ""


ERRORS = ErrorTable(
    code_fields=("errors.0.extensions.code", "code"),
    message_fields=("errors.0.message", "message"),
    messages=(("entity not found", ENTITY_NOT_FOUND),),
    statuses={400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found"},
    details=_presentable,
    rate_limit=RateLimit(codes=frozenset({"RATELIMITED"})),
    refusal=has_errors,
)
"""Linear's error table: GraphQL errors in 200 and 400 answers alike."""
