"""Stripe's error answers as an error table.

Stripe answers an error with ``{"error": {"type", "code"?, "message", "param"?,
"decline_code"?, ...}}`` (https://docs.stripe.com/api/errors): ``type`` is one of
``api_error``, ``card_error``, ``idempotency_error`` and ``invalid_request_error``;
``code`` (https://docs.stripe.com/error-codes), when present, says more
(``resource_missing``, ``amount_too_small``, ``charge_already_refunded``,
``payment_intent_unexpected_state``, ``parameter_missing``). A refusal's
``ToolError.code`` is Stripe's ``code`` when the body has one, else its ``type``; the
message carries Stripe's message and, after it, the parameter it names. A 429 is
``rate_limited`` (https://docs.stripe.com/rate-limits).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reversi_core.http import ErrorTable, RateLimit

__all__ = ["ERRORS", "IDEMPOTENCY_ERROR"]

IDEMPOTENCY_ERROR = "idempotency_error"
"""Stripe's error type for a key first used with other parameters or on another endpoint."""


def _param(body: Any) -> str:
    """``param: <name>`` when Stripe's error names the parameter it is about."""
    error = body.get("error") if isinstance(body, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    return f"param {param}" if isinstance(param, str) and param else ""


class _StripeErrors(ErrorTable):
    """Stripe's ``code`` when the body has one; else its ``type`` when that says more than
    ``invalid_request_error`` (``idempotency_error``, ``card_error``, ``api_error``); else
    the status's code."""

    def classify(self, status: int, headers: Mapping[str, str], body: Any) -> tuple[str | None, str | None]:
        code, message = super().classify(status, headers, body)
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and not error.get("code"):
            kind = error.get("type")
            if isinstance(kind, str) and kind in _TELLING_TYPES:
                code = kind
        return code, message


_TELLING_TYPES = frozenset({"idempotency_error", "card_error", "api_error"})

ERRORS = _StripeErrors(
    code_fields=("error.code",),
    message_fields=("error.message",),
    statuses={
        400: "invalid_request_error",
        401: "authentication_error",
        402: "request_failed",
        403: "permission_error",
        404: "resource_missing",
        409: "conflict",
    },
    details=_param,
    rate_limit=RateLimit(statuses=frozenset({429}), codes=frozenset({"rate_limit"})),
)
"""Stripe's error table: its ``code`` (else its ``type``) and message; 429 is ``rate_limited``."""
