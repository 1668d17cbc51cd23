"""GitLab's error answers as an error table: two body shapes, message codes, rate limits.

GitLab's REST API answers an error in one of two shapes
(https://docs.gitlab.com/api/rest/troubleshooting/):

- ``{"message": ...}``: a sentence (``"404 Project Not Found"``, ``"Branch already
  exists"``), or, for a validation error, an object of fields and their problems
  (``{"message": {"title": ["can't be blank"]}}``);
- ``{"error": ...}``: a parameter error of the API layer (``{"error": "title is
  missing"}``), or an OAuth refusal with a code and a description (``{"error":
  "insufficient_scope", "error_description": "The request requires higher privileges
  than provided by the access token.", "scope": "api"}``).

:class:`GitlabErrors` reads both: a code from the OAuth ``error`` or from the message's
known beginnings (``404 Project Not Found`` is ``project_not_found``), else from the
status. A refusal to delete a protected branch is ``protected_branch`` and says that it
takes the Maintainer role
(https://docs.gitlab.com/user/project/repository/branches/protected/). A rate limit is
HTTP 429 with ``Retry-After`` and ``RateLimit-Reset``
(https://docs.gitlab.com/security/rate_limits/), code ``rate_limited``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reversi_core.http import ErrorTable, RateLimit

__all__ = ["ERRORS", "PROTECTED_BRANCH_ROLE", "GitlabErrors"]

PROTECTED_BRANCH_ROLE = (
    "deleting a protected branch takes the Maintainer role (or Owner) in the project; a "
    "Developer's token cannot"
)
"""What the connector adds to GitLab's refusal to delete a protected branch."""

_OAUTH_CODE = re.compile(r"^[a-z][a-z_]*$")


def _problems(value: Mapping[str, Any]) -> str:
    """``{"title": ["can't be blank"]}`` as ``title: can't be blank``."""
    phrases = []
    for name, problems in list(value.items())[:5]:
        said = problems if isinstance(problems, list) else [problems]
        phrases.append(f"{name}: {', '.join(str(p) for p in said)}")
    return "; ".join(phrases)


def normal_body(body: Any) -> dict[str, Any]:
    """Either GitLab error shape as ``{"code", "message", "invalid"}`` (parts may be ``None``).

    ``invalid`` is true for a validation error (``message`` an object of fields).
    """
    if not isinstance(body, dict):
        return {"code": None, "message": None, "invalid": False}
    message, error = body.get("message"), body.get("error")
    code = None
    invalid = isinstance(message, dict)
    text: str | None
    if isinstance(message, dict):
        text = _problems(message)
    elif isinstance(message, list):
        text = "; ".join(str(m) for m in message[:5])
    elif isinstance(message, str):
        text = message
    else:
        text = None
    if isinstance(error, str):
        if _OAUTH_CODE.match(error):
            code = error
            described = body.get("error_description")
            text = text or (described if isinstance(described, str) else error)
        else:
            text = text or error
    return {"code": code, "message": text, "invalid": invalid}


def _protected(body: Any) -> str:
    message = normal_body(body)["message"] or ""
    return (
        PROTECTED_BRANCH_ROLE
        if message.lower().startswith("you are not allowed to delete protected")
        else ""
    )


@dataclass(frozen=True)
class GitlabErrors(ErrorTable):
    """An :class:`~reversi_core.http.ErrorTable` that first reads GitLab's two body shapes."""

    def classify(
        self, status: int, headers: Mapping[str, str], body: Any
    ) -> tuple[str | None, str | None]:
        """``(code, message)`` of a GitLab error answer (see the module docstring)."""
        normal = normal_body(body)
        code, message = super().classify(
            status, headers, {"code": normal["code"], "message": normal["message"]}
        )
        extra = _protected(body)
        if extra:
            message = f"{message}: {extra}" if message else extra
        if normal["invalid"] and code == self.statuses.get(status):
            code = "validation_failed"
        return code, message


ERRORS = GitlabErrors(
    code_fields=("code",),
    message_fields=("message",),
    messages=(
        ("404 project not found", "project_not_found"),
        ("404 issue not found", "issue_not_found"),
        ("404 branch not found", "branch_not_found"),
        ("no such branch", "branch_not_found"),  # a delete that raced another (404)
        ("404 note not found", "note_not_found"),
        ("404", "not_found"),
        ("401", "unauthorized"),
        ("403", "forbidden"),
        ("branch already exists", "branch_exists"),
        ("invalid reference name", "invalid_reference"),
        ("branch name is invalid", "invalid_branch_name"),
        ("you are not allowed to delete protected", "protected_branch"),
        ("the default branch of a project cannot be deleted", "default_branch"),
        ("you are not allowed to push", "push_denied"),
        ("you are not allowed to create protected", "protected_branch"),
    ),
    statuses={
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        405: "not_allowed",
        409: "conflict",
        412: "precondition_failed",
        422: "unprocessable",
        429: "rate_limited",
    },
    rate_limit=RateLimit(reset_header="ratelimit-reset"),
)
"""GitLab's error table: the OAuth code, then known message beginnings, then the status's code."""
