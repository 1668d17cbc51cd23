"""S3's error answers: an XML ``<Error>`` body, its ``Code`` turned into the connector's code.

S3 answers an error with ``<Error><Code>NoSuchKey</Code><Message>...</Message></Error>``
(https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html); a HEAD request's
error has no body, so its status alone says what happened.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reversi_core.http import ErrorCodeHook, ErrorTable, RateLimit

if TYPE_CHECKING:
    import httpx

__all__ = ["CODES", "ERRORS", "S3ErrorTable", "local_name", "parse_xml"]

CODES: Mapping[str, str] = {
    "NoSuchKey": "not_found",
    "NoSuchBucket": "no_such_bucket",
    "PreconditionFailed": "precondition_failed",
    "ConditionalRequestConflict": "conflict",
    "AccessDenied": "forbidden",
    "InvalidAccessKeyId": "unauthorized",
    "SignatureDoesNotMatch": "unauthorized",
    "ExpiredToken": "unauthorized",
    "InvalidToken": "unauthorized",
    "EntityTooLarge": "too_large",
    "SlowDown": "rate_limited",
}
"""S3 error codes the connector names in its own words; any other keeps S3's spelling."""


def local_name(tag: str) -> str:
    """An XML tag without its namespace (``{http://s3.amazonaws.com/doc/2006-03-01/}Key`` → ``Key``)."""
    return tag.rsplit("}", 1)[-1]


def parse_xml(data: bytes) -> ET.Element | None:
    """The root element of an XML answer, or ``None`` when it is not XML."""
    if not data.strip():
        return None
    try:
        return ET.fromstring(data)  # noqa: S314 - see the import
    except ET.ParseError:
        return None


def _error_fields(data: bytes) -> dict[str, Any] | None:
    root = parse_xml(data)
    if root is None or local_name(root.tag) != "Error":
        return None
    fields = {local_name(child.tag): (child.text or "") for child in root}
    code = fields.get("Code")
    if code:
        fields["Code"] = CODES.get(code, code)
    return fields


class S3ErrorTable(ErrorTable):
    """An :class:`~reversi_core.http.ErrorTable` that reads S3's XML error bodies."""

    def hook(self) -> ErrorCodeHook:
        def classify_response(response: httpx.Response) -> tuple[str | None, str | None]:
            return self.classify(
                response.status_code, response.headers, _error_fields(response.content)
            )

        return classify_response


ERRORS = S3ErrorTable(
    code_fields=("Code",),
    message_fields=("Message",),
    statuses={
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        409: "conflict",
        412: "precondition_failed",
        416: "invalid_range",
    },
    rate_limit=RateLimit(
        statuses=frozenset({429}), codes=frozenset({"rate_limited"}), retry_after=False
    ),
)
"""The table every aws request's error goes through."""
