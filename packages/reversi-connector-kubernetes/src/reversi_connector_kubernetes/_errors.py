"""The API server's error answers as an error table: a ``Status`` object's reason becomes the code.

The Kubernetes API server answers a refused request with a ``Status`` object
(https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/)::

    {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
     "message": "configmaps \\"settings\\" already exists", "reason": "AlreadyExists",
     "details": {"name": "settings", "kind": "configmaps"}, "code": 409}

The ``reason`` (https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1#StatusReason)
becomes the ``ToolError`` code in snake case (``AlreadyExists`` → ``already_exists``,
``NotFound`` → ``not_found``, ``Conflict`` → ``conflict``, ``Invalid`` → ``invalid``,
``Expired`` → ``expired``); a body without one gets the code of its status. The API
server's own ``Timeout`` reason (504) becomes ``server_timeout``, so that it is not
mistaken for the client's ``timeout``. A 429 (API Priority and Fairness,
https://kubernetes.io/docs/concepts/cluster-administration/flow-control/) is
``rate_limited``, with its ``Retry-After``. For ``Invalid``, the ``details.causes``
(field and message) are added to the message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reversi_core.http import ErrorTable

__all__ = ["ERRORS", "StatusErrors", "reason_code"]

_RENAMED = {"Timeout": "server_timeout", "TooManyRequests": "rate_limited"}


def reason_code(reason: str) -> str:
    """A ``Status`` reason in snake case (``AlreadyExists`` → ``already_exists``)."""
    if reason in _RENAMED:
        return _RENAMED[reason]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", reason.strip())
    return "_".join(words.lower().split())


def _causes(body: Any) -> str:
    """The ``details.causes`` of an ``Invalid`` answer, as ``field: message`` phrases."""
    details = body.get("details") if isinstance(body, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(causes, list):
        return ""
    phrases = []
    for cause in causes[:5]:
        if isinstance(cause, dict):
            where, what = cause.get("field"), cause.get("message") or cause.get("reason")
            phrases.append(f"{where}: {what}" if where and what else str(what or where or ""))
    return "; ".join(p for p in phrases if p)


@dataclass(frozen=True)
class StatusErrors(ErrorTable):
    """An :class:`~reversi_core.http.ErrorTable` whose vendor codes are ``Status`` reasons."""

    def classify(
        self, status: int, headers: Mapping[str, str], body: Any
    ) -> tuple[str | None, str | None]:
        code, message = super().classify(status, headers, body)
        reason = body.get("reason") if isinstance(body, dict) else None
        if isinstance(reason, str) and reason.strip() and code == reason:
            code = reason_code(reason)
        return code, message


ERRORS = StatusErrors(
    code_fields=("reason",),
    message_fields=("message",),
    statuses={
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        405: "method_not_allowed",
        406: "not_acceptable",
        409: "conflict",
        410: "expired",
        413: "request_entity_too_large",
        415: "unsupported_media_type",
        422: "invalid",
        429: "rate_limited",
        500: "internal_error",
        503: "service_unavailable",
        504: "server_timeout",
    },
    details=_causes,
)
"""The API server's error table: the ``Status`` reason, else the status's code."""
