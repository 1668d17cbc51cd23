"""Jira's error answers as an error table.

Jira Cloud answers an error with an ``ErrorCollection``: ``{"errorMessages": [...],
"errors": {field: message}, "status"?}``, and no code of its own
(https://developer.atlassian.com/cloud/jira/platform/rest/v3/intro/#status-codes). The
code therefore comes from the status (``bad_request``, ``unauthorized``, ``forbidden``,
``not_found``, ``conflict``...), and the message is the first of ``errorMessages`` with
the field errors after it. A 429 is a rate limit, with ``Retry-After``
(https://developer.atlassian.com/cloud/jira/platform/rate-limiting/).

One 400 gets a code of its own: ``has_subtasks``, when Jira's message says the issue has
subtasks. Deleting such an issue without ``deleteSubtasks`` is refused with ``"The issue
'PROJ-2' has subtasks.  You must specify the 'deleteSubtasks' parameter to delete this
issue and all its subtasks."`` (the message Atlassian's own REST tests expect, in
jira-rest-java-client's ``AsynchronousIssueRestClientTest``); any other 400 keeps
``bad_request`` and Jira's message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reversi_core.http import ErrorTable

__all__ = ["ERRORS", "HAS_SUBTASKS", "JiraErrors"]

HAS_SUBTASKS = "has_subtasks"
"""The code of Jira's refusal to delete an issue that has subtasks."""


def _field_errors(body: Any) -> str:
    """The ``errors`` map of an ErrorCollection, as ``field: message`` phrases."""
    errors = body.get("errors") if isinstance(body, dict) else None
    if not isinstance(errors, dict):
        return ""
    return "; ".join(f"{k}: {v}" for k, v in sorted(errors.items()) if isinstance(v, str))


def _says_subtasks(body: Any) -> bool:
    """Whether an ErrorCollection's messages say the issue has subtasks."""
    messages = body.get("errorMessages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return False
    return any(
        isinstance(m, str) and ("has subtasks" in m.lower() or "deletesubtasks" in m.lower())
        for m in messages
    )


@dataclass(frozen=True)
class JiraErrors(ErrorTable):
    """An :class:`~reversi_core.http.ErrorTable` that tells Jira's subtasks refusal apart."""

    def classify(
        self, status: int, headers: Mapping[str, str], body: Any
    ) -> tuple[str | None, str | None]:
        """``(code, message)``: the table's, with ``has_subtasks`` for that 400 (module docstring)."""
        code, message = super().classify(status, headers, body)
        if status == 400 and _says_subtasks(body):
            code = HAS_SUBTASKS
        return code, message


ERRORS = JiraErrors(
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
