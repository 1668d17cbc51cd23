"""How a GitHub error answer becomes a short error code and a readable message.

GitHub answers an error with a JSON body ``{"message", "documentation_url", "status",
"errors": [...]}``; for a 422 the ``errors`` items say which ``resource`` and ``field``
failed and why (``code``: ``missing``, ``missing_field``, ``invalid``,
``already_exists``, ``unprocessable``, ``custom``). See
https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api.

Rate limits are told apart from permission refusals here: GitHub answers an exhausted
primary rate limit with 403 (or 429) and ``x-ratelimit-remaining: 0``, and a secondary
rate limit with 403 or 429, usually with ``retry-after`` and a message naming the
secondary rate limit
(https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit).
Both become the code ``rate_limited``; every other 403 is ``forbidden``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = ["error_code_and_message", "github_error_code", "is_rate_limited"]

_KNOWN_MESSAGES: tuple[tuple[str, str], ...] = (
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
)
"""Message prefixes (lower case) GitHub uses, and the code each becomes."""

_BY_STATUS: Mapping[int, str] = {
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
}
"""The code of a status whose message is not one of :data:`_KNOWN_MESSAGES`."""


def is_rate_limited(status: int, headers: Mapping[str, str], message: str | None) -> bool:
    """True when a GitHub answer is a rate limit rather than a refusal.

    Any 429; a 403 whose ``x-ratelimit-remaining`` is ``0`` (primary limit); a 403 with a
    ``retry-after`` header or a message about a rate limit (secondary limit).
    ``headers`` must be case-insensitive (``httpx.Headers``) or lower-cased.
    """
    if status == 429:
        return True
    if status != 403:
        return False
    if headers.get("x-ratelimit-remaining") == "0" or headers.get("retry-after") is not None:
        return True
    return message is not None and "rate limit" in message.lower()


def _details(body: Mapping[str, Any]) -> str:
    """The ``errors`` items of a 422 body, as ``resource.field: code`` phrases."""
    errors = body.get("errors")
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


def _when(headers: Mapping[str, str]) -> str:
    """When a rate limit allows calls again, from ``retry-after`` or ``x-ratelimit-reset``."""
    retry_after = headers.get("retry-after")
    if retry_after and retry_after.isdigit():
        return f"retry after {int(retry_after)} s"
    reset = headers.get("x-ratelimit-reset")
    if reset and reset.isdigit():
        at = dt.datetime.fromtimestamp(int(reset), tz=dt.UTC)
        resource = headers.get("x-ratelimit-resource") or "core"
        return f"the {resource} limit resets at {at:%Y-%m-%dT%H:%M:%SZ}"
    return "wait at least a minute before retrying"


def error_code_and_message(
    status: int, headers: Mapping[str, str], body: Any
) -> tuple[str | None, str | None]:
    """``(code, message)`` for a GitHub error answer with ``status``, ``headers`` and JSON ``body``.

    ``code`` is ``rate_limited`` for a rate limit (see :func:`is_rate_limited`), else the
    code of a known GitHub message (``bad_credentials``, ``reference_not_found``,
    ``reference_exists``, ``object_not_found``, ``issues_disabled``,
    ``resource_not_accessible``, ``validation_failed``, ``not_found``...), else one
    derived from the status (``unauthorized``, ``forbidden``, ``conflict``, ``gone``,
    ``server_error`` for 5xx), else ``None``. ``message`` is GitHub's ``message`` with the
    422 ``errors`` details appended, and for a rate limit when to try again.
    """
    raw = body.get("message") if isinstance(body, dict) else None
    message = raw if isinstance(raw, str) and raw.strip() else None
    details = _details(body) if isinstance(body, dict) else ""
    text = message
    if details:
        text = f"{message}: {details}" if message else details
    if is_rate_limited(status, headers, message):
        return "rate_limited", f"{text or 'rate limit exceeded'} ({_when(headers)})"
    code = None
    if message is not None:
        lowered = message.lower()
        code = next((c for prefix, c in _KNOWN_MESSAGES if lowered.startswith(prefix)), None)
    if code is None:
        code = _BY_STATUS.get(status) or ("server_error" if status >= 500 else None)
    return code, text


def github_error_code(response: httpx.Response) -> tuple[str | None, str | None]:
    """The :data:`reversi_core.http.ErrorCodeHook` for GitHub: see :func:`error_code_and_message`.

    A body that is not JSON (a proxy's HTML page) gives the status-derived code and no
    message, so the HTTP layer falls back to the reason phrase.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    return error_code_and_message(response.status_code, response.headers, body)
