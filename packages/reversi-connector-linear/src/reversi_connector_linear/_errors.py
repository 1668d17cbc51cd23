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
which Linear gives under a general code, is ``entity_not_found``; a 200 answer whose
error names no code is ``graphql_error``. An answer with ``errors`` beside data for its
operation is not a refusal (:func:`refused`): the operation ran, in part.
"""

from __future__ import annotations

from typing import Any

from reversi_core.http import ErrorTable, RateLimit, body_value

__all__ = ["ENTITY_NOT_FOUND", "ERRORS", "GRAPHQL_ERROR", "has_errors", "refused"]

ENTITY_NOT_FOUND = "entity_not_found"
"""The code of Linear's "Entity not found" answers (the thing is gone, or out of reach)."""
GRAPHQL_ERROR = "graphql_error"
"""The code of a GraphQL error in an HTTP 200 answer that names no ``extensions.code``."""


def has_errors(body: Any) -> bool:
    """True when a JSON answer carries GraphQL ``errors`` (whatever its HTTP status)."""
    return isinstance(body, dict) and bool(body.get("errors"))


def refused(body: Any) -> bool:
    """True when a 2xx answer carries GraphQL ``errors`` and no data for its operation.

    Such an answer says Linear did not do it. An answer with ``errors`` beside a non-null
    root field is a partial success (https://spec.graphql.org/October2021/#sec-Errors:
    a field that failed is null, the others answered): a mutation in it ran, so it is not
    a refusal; the connector decides what it means (:meth:`LinearConnector.graphql`).
    """
    if not has_errors(body):
        return False
    data = body.get("data")
    return not (isinstance(data, dict) and any(v is not None for v in data.values()))


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
    refused_when=refused,
    refused_code=GRAPHQL_ERROR,
)
"""Linear's error table: GraphQL errors in 200 and 400 answers alike."""
