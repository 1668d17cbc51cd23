"""GitHub's error answers as an error table: codes, messages and rate limits.

GitHub answers an error with a JSON body ``{"message", "documentation_url", "status",
"errors": [...]}``; for a 422 the ``errors`` items say which ``resource`` and ``field``
failed and why (``code``: ``missing``, ``missing_field``, ``invalid``,
``already_exists``, ``unprocessable``, ``custom``). See
https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api.

Rate limits are told apart from permission refusals: GitHub answers an exhausted
primary rate limit with 403 (or 429) and ``x-ratelimit-remaining: 0``, and a secondary
rate limit with 403 or 429, usually with ``retry-after`` and a message naming the
secondary rate limit
(https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit).
Both become the code ``rate_limited``; every other 403 is ``forbidden``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reversi_core.http import ErrorTable, RateLimit

if TYPE_CHECKING:
    import httpx

__all__ = ["ERRORS", "error_code_and_message", "github_error_code", "is_rate_limited"]


def _details(body: Any) -> str:
    """The ``errors`` items of a 422 body, as ``resource.field: code`` phrases."""
    errors = body.get("errors") if isinstance(body, dict) else None
    if not isinstance(errors, list):
        return ""
    phrases = []
    for item in errors[:5]:
        if isinstance(item, str):
            phrases.append(item)
        elif isinstance(item, dict):
            where = ".".join(
                str(item[k]) for k in ("resource", "field") if isinstance(item.get(k), str)
            )
            what = item.get("message") or item.get("code")
            phrases.append(f"{where}: {what}" if where and what else str(what or where))
    return "; ".join(p for p in phrases if p)


RATE_LIMIT = RateLimit(
    statuses=frozenset({429}),
    maybe_statuses=frozenset({403}),
    exhausted_header="x-ratelimit-remaining",
    message_contains="rate limit",
    reset_header="x-ratelimit-reset",
    resource_header="x-ratelimit-resource",
    default_resource="core",
)
"""Any 429; a 403 with ``x-ratelimit-remaining: 0``, a ``retry-after`` or a message about a rate limit."""

ERRORS = ErrorTable(
    code_fields=(),  # GitHub's bodies carry no code of their own: the message says it
    message_fields=("message",),
    messages=(
        ("bad credentials", "bad_credentials"),
        ("requires authentication", "requires_authentication"),
        ("resource not accessible", "resource_not_accessible"),
        ("reference already exists", "reference_exists"),
        ("reference does not exist", "reference_not_found"),
        ("object does not exist", "object_not_found"),
        ("issues are disabled", "issues_disabled"),
        ("label does not exist", "label_not_found"),
        ("validation failed", "validation_failed"),
        ("not found", "not_found"),
    ),
    statuses={
        301: "moved",
        304: "not_modified",
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        409: "conflict",
        410: "gone",
        422: "validation_failed",
        429: "rate_limited",
    },
    details=_details,
    rate_limit=RATE_LIMIT,
)
"""GitHub's error table: known message prefixes win, then the status's code, ``server_error`` for 5xx."""


def is_rate_limited(status: int, headers: Mapping[str, str], message: str | None) -> bool:
    """True when a GitHub answer is a rate limit rather than a refusal (see :data:`RATE_LIMIT`).

    ``headers`` must be case-insensitive (``httpx.Headers``) or lower-cased.
    """
    return RATE_LIMIT.applies(status, headers, None, message)


def error_code_and_message(
    status: int, headers: Mapping[str, str], body: Any
) -> tuple[str | None, str | None]:
    """``(code, message)`` for a GitHub error answer with ``status``, ``headers`` and JSON ``body``.

    ``code`` is ``rate_limited`` for a rate limit, else the code of a known GitHub
    message (``bad_credentials``, ``reference_not_found``, ``reference_exists``,
    ``object_not_found``, ``issues_disabled``, ``resource_not_accessible``,
    ``validation_failed``, ``not_found``...), else one derived from the status
    (``unauthorized``, ``forbidden``, ``conflict``, ``gone``, ``server_error`` for 5xx),
    else ``None``. ``message`` is GitHub's ``message`` with the 422 ``errors`` details
    appended, and for a rate limit when to try again.
    """
    return ERRORS.classify(status, headers, body)


def github_error_code(response: httpx.Response) -> tuple[str | None, str | None]:
    """GitHub's :data:`reversi_core.http.ErrorCodeHook`: see :func:`error_code_and_message`."""
    return ERRORS.hook()(response)
