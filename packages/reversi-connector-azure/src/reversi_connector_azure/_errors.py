"""Blob Storage's error answers: ``x-ms-error-code`` (or the XML ``<Error><Code>``) turned into the connector's code.

https://learn.microsoft.com/en-us/rest/api/storageservices/blob-service-error-codes; every
error answer carries ``x-ms-error-code``, a HEAD answer's too (it has no body).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reversi_core.http import ErrorCodeHook, ErrorTable, RateLimit

if TYPE_CHECKING:
    import httpx

__all__ = ["CODES", "ERRORS", "BlobErrorTable", "parse_xml"]

CODES: Mapping[str, str] = {
    "BlobNotFound": "not_found",
    "ContainerNotFound": "no_such_container",
    "ConditionNotMet": "precondition_failed",
    "SourceConditionNotMet": "precondition_failed",
    "BlobAlreadyExists": "already_exists",
    "AuthenticationFailed": "unauthorized",
    "InvalidAuthenticationInfo": "unauthorized",
    "AuthorizationFailure": "forbidden",
    "AuthorizationPermissionMismatch": "forbidden",
    "InvalidBlobType": "not_block_blob",
    "ServerBusy": "rate_limited",
}
"""Blob Storage error codes the connector names in its own words; any other keeps Azure's spelling."""


def parse_xml(data: bytes) -> ET.Element | None:
    """The root element of an XML answer, or ``None`` when it is not XML."""
    if not data.strip():
        return None
    try:
        return ET.fromstring(data.lstrip(b"\xef\xbb\xbf"))  # noqa: S314 - see the import
    except ET.ParseError:
        return None


def _fields(response: httpx.Response) -> dict[str, Any] | None:
    root = parse_xml(response.content)
    fields: dict[str, Any] = {}
    if root is not None and root.tag == "Error":
        fields = {child.tag: (child.text or "") for child in root}
    code = response.headers.get("x-ms-error-code") or fields.get("Code")
    if code:
        fields["Code"] = CODES.get(code, code)
    return fields or None


class BlobErrorTable(ErrorTable):
    """An :class:`~reversi_core.http.ErrorTable` that reads Blob Storage's error header and XML body."""

    def hook(self) -> ErrorCodeHook:
        def classify_response(response: httpx.Response) -> tuple[str | None, str | None]:
            return self.classify(response.status_code, response.headers, _fields(response))

        return classify_response


ERRORS = BlobErrorTable(
    code_fields=("Code",),
    message_fields=("Message",),
    statuses={
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        409: "conflict",
        412: "precondition_failed",
    },
    rate_limit=RateLimit(
        statuses=frozenset({429}), codes=frozenset({"rate_limited"}), retry_after=False
    ),
)
"""The table every azure request's error goes through."""
