"""A vendor's error table: how an error answer becomes a short code and a readable message.

An HTTP connector states, as data, what its vendor's error answers look like
(:class:`ErrorTable`): which JSON fields carry the vendor's code and message, which
message texts mean which code, the code of each status when the body names none, and
when an answer is a rate limit rather than a refusal (:class:`RateLimit`). The HTTP
layer turns every answer that is neither 2xx nor an accepted status into a
:class:`~reversi_core.errors.ToolError` whose ``code`` comes from the table.

Some vendors refuse a call inside a successful HTTP answer: Slack answers HTTP 200 with
``{"ok": false, "error": "channel_not_found"}``
(https://docs.slack.dev/apis/web-api/), a GraphQL server answers 200 with an
``errors`` list. Such a table sets ``refused_when``, a test on a 2xx answer's JSON body;
:meth:`ErrorTable.refusal` then classifies that answer as it classifies an error answer
(the same fields, prefixes and rate-limit rules), and
:meth:`reversi_core.http.HttpConnector.request` raises the
:class:`~reversi_core.errors.ToolError` instead of returning the answer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = [
    "RATE_LIMITED",
    "ErrorCodeHook",
    "ErrorTable",
    "RateLimit",
    "body_value",
    "default_error_code",
]

RATE_LIMITED = "rate_limited"
"""The code of every rate-limit answer, whatever the vendor calls it."""

ErrorCodeHook = Callable[["httpx.Response"], tuple[str | None, str | None]]
"""A vendor hook: given an error response (body already read), return ``(code, message)``."""

_COMMON_CODES = ("code", "error_code", "error", "type")
_COMMON_MESSAGES = ("message", "error_description", "detail", "title")


def body_value(body: Any, path: str) -> Any:
    """The value at a dotted ``path`` in a JSON body (``"error.code"``, ``"errors.0.message"``).

    Returns ``None`` when any part is missing; list items are addressed by index.
    """
    value = body
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _first(body: Any, paths: Iterable[str]) -> str | None:
    for path in paths:
        found = _text(body_value(body, path))
        if found is not None:
            return found
    return None


def _common_code_and_message(body: Any) -> tuple[str | None, str | None]:
    """The common vendor shapes: top level, ``{"error": {...}}``, ``{"errors": [{...}]}``."""
    if not isinstance(body, dict):
        return None, None
    code = _first(body, _COMMON_CODES)
    message = _first(body, _COMMON_MESSAGES)
    for nested in ("error", "errors.0"):
        inner = body_value(body, nested)
        if isinstance(inner, dict):
            inner_code, inner_message = _common_code_and_message(inner)
            code = code or inner_code
            message = message or inner_message
    return code, message


def _json_body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def default_error_code(response: httpx.Response) -> tuple[str | None, str | None]:
    """Guess ``(code, message)`` from a JSON error body in the common vendor shapes.

    Looks at ``{"code"|"error_code"|"error"|"type": str, "message"|"error_description"|
    "detail"|"title": str}``, at ``{"error": {"code", "message"}}`` and at
    ``{"errors": [{"code", "message"}]}``. Either part is ``None`` when absent; a
    non-JSON body gives ``(None, None)``.
    """
    return _common_code_and_message(_json_body(response))


@dataclass(frozen=True)
class RateLimit:
    """When an error answer means "slow down" rather than "no"; its code is ``rate_limited``.

    ``statuses`` are always a rate limit (429). ``maybe_statuses`` are one when a signal
    says so (GitHub answers an exhausted limit with 403): ``exhausted_header`` reads
    ``"0"``, a ``Retry-After`` header is present (with ``retry_after``), the vendor's
    message contains ``message_contains`` (lower case), or the vendor's code is one of
    ``codes``. ``codes`` also mark a rate limit on any status (Slack's ``ratelimited``).
    ``reset_header`` (epoch seconds) and ``resource_header`` (which limit:
    ``default_resource`` when absent) let the message say when calls are allowed again.
    """

    statuses: frozenset[int] = frozenset({429})
    maybe_statuses: frozenset[int] = frozenset()
    exhausted_header: str | None = None
    retry_after: bool = True
    message_contains: str | None = None
    codes: frozenset[str] = frozenset()
    reset_header: str | None = None
    resource_header: str | None = None
    default_resource: str | None = None

    def applies(
        self, status: int, headers: Mapping[str, str], code: str | None, message: str | None
    ) -> bool:
        """True when the answer is a rate limit (``headers`` case-insensitive or lower-cased)."""
        if status in self.statuses or (code is not None and code in self.codes):
            return True
        if status not in self.maybe_statuses:
            return False
        if self.exhausted_header and headers.get(self.exhausted_header) == "0":
            return True
        if self.retry_after and headers.get("retry-after") is not None:
            return True
        words = self.message_contains
        return bool(words and message and words in message.lower())

    def when(self, headers: Mapping[str, str]) -> str:
        """When calls are allowed again, in words, from ``Retry-After`` or the reset header."""
        retry_after = headers.get("retry-after")
        if retry_after and retry_after.isdigit():
            return f"retry after {int(retry_after)} s"
        reset = headers.get(self.reset_header) if self.reset_header else None
        if reset and reset.isdigit():
            at = dt.datetime.fromtimestamp(int(reset), tz=dt.UTC)
            named = headers.get(self.resource_header) if self.resource_header else None
            resource = named or self.default_resource
            what = f"the {resource} limit" if resource else "the limit"
            return f"{what} resets at {at:%Y-%m-%dT%H:%M:%SZ}"
        return "wait at least a minute before retrying"


@dataclass(frozen=True)
class ErrorTable:
    """A vendor's error answers, as data (see the module docstring).

    ``code_fields`` and ``message_fields`` are dotted paths into the JSON error body,
    tried in order (``None``: the common shapes of :func:`default_error_code`).
    ``messages`` maps a lower-case prefix of the vendor's message to a code, and wins
    over the body's own code. ``statuses`` gives the code of a status whose body names
    none; a 5xx without one is ``server_error``. ``details`` adds words from the body to
    the message (GitHub's list of 422 field errors). ``rate_limit`` says when an answer
    is a rate limit: its code is then ``rate_limited`` and the message says when to try
    again (``None``: never).

    ``refused_when`` is for a vendor that refuses inside a 2xx answer: given the answer's
    parsed JSON body (``None`` when it has none), it returns true when the vendor did not
    do what was asked (Slack: ``lambda body: isinstance(body, dict) and body.get("ok") is
    False``). It must say true only for a refusal: a flagged answer is a definite failure,
    never an uncertain one, so a partial success (a GraphQL answer with both ``data`` and
    ``errors``) must be told apart by the test or by the connector. ``refused_code`` is the
    code of a flagged answer whose body names none. See :meth:`refusal`.
    """

    statuses: Mapping[int, str] = field(default_factory=dict)
    code_fields: tuple[str, ...] | None = None
    message_fields: tuple[str, ...] | None = None
    messages: tuple[tuple[str, str], ...] = ()
    details: Callable[[Any], str] | None = None
    rate_limit: RateLimit | None = field(default_factory=RateLimit)
    server_error: str = "server_error"
    refused_when: Callable[[Any], bool] | None = None
    refused_code: str = "refused"

    def classify(
        self, status: int, headers: Mapping[str, str], body: Any
    ) -> tuple[str | None, str | None]:
        """``(code, message)`` for an error answer with ``status``, ``headers`` and JSON ``body``.

        ``headers`` must be case-insensitive (``httpx.Headers``) or lower-cased.
        """
        if self.code_fields is None and self.message_fields is None:
            code, message = _common_code_and_message(body)
        else:
            code = _first(body, self.code_fields) if self.code_fields is not None else None
            message = _first(body, self.message_fields or ())
            if self.code_fields is None or self.message_fields is None:
                common_code, common_message = _common_code_and_message(body)
                code = code if self.code_fields is not None else common_code
                message = message if self.message_fields is not None else common_message
        extra = self.details(body) if self.details is not None and body is not None else ""
        text = f"{message}: {extra}" if message and extra else (message or extra or None)
        limit = self.rate_limit
        if limit is not None and limit.applies(status, headers, code, message):
            return RATE_LIMITED, f"{text or 'rate limit exceeded'} ({limit.when(headers)})"
        if message is not None:
            lowered = message.lower()
            known = next((c for prefix, c in self.messages if lowered.startswith(prefix)), None)
            code = known or code
        if code is None:
            code = self.statuses.get(status) or (self.server_error if status >= 500 else None)
        return code, text

    def refusal(
        self, status: int, headers: Mapping[str, str], body: Any
    ) -> tuple[str, str | None] | None:
        """``(code, message)`` when a 2xx answer is a refusal (``refused_when``), else ``None``.

        The answer is classified as :meth:`classify` classifies an error answer: a rate
        limit is ``rate_limited`` (``RateLimit.codes`` holds the vendor's own codes, such as
        Slack's ``ratelimited``); a refusal whose body names no code gets
        :attr:`refused_code`. ``None`` for a status outside 200-299 and for a table without
        ``refused_when``. ``headers`` must be case-insensitive (``httpx.Headers``) or
        lower-cased.
        """
        if self.refused_when is None or not 200 <= status < 300 or not self.refused_when(body):
            return None
        code, message = self.classify(status, headers, body)
        return code or self.refused_code, message

    def hook(self) -> ErrorCodeHook:
        """This table as the :data:`ErrorCodeHook` of an :class:`~reversi_core.http.HttpClient`."""

        def classify_response(response: httpx.Response) -> tuple[str | None, str | None]:
            return self.classify(response.status_code, response.headers, _json_body(response))

        return classify_response
