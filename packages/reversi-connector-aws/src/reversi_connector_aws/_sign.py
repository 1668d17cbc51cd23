"""Signature Version 4 for S3, by botocore's own signer, as an ``httpx.Auth``.

https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-authenticating-requests.html; the
signing itself is botocore's ``S3SigV4Auth`` (the one the AWS SDK for Python uses for
S3: the path is signed as sent, never normalised, and the payload's SHA-256 is signed).
"""

from __future__ import annotations

from collections.abc import Generator

import httpx
from botocore.auth import S3SigV4Auth  # type: ignore[import-untyped]
from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
from botocore.credentials import Credentials  # type: ignore[import-untyped]

__all__ = ["SIGNED_HEADERS", "S3Signer"]

SIGNED_HEADERS = frozenset(
    {"host", "content-type", "content-md5", "if-match", "if-none-match", "range"}
)
"""Headers signed besides every ``x-amz-*`` one: a proxy cannot drop a precondition unnoticed."""


class S3Signer(httpx.Auth):
    """Signs each request with ``S3SigV4Auth`` for ``region`` (service ``s3``).

    ``access_key``, ``secret_key`` and the optional ``session_token`` are the
    credentials; the session token travels in ``X-Amz-Security-Token``, the secret key
    never travels at all.
    """

    requires_request_body = True

    def __init__(
        self, access_key: str, secret_key: str, session_token: str | None, region: str
    ) -> None:
        self._credentials = Credentials(access_key, secret_key, session_token)
        self._region = region

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        headers = {
            name: value
            for name, value in request.headers.items()
            if name.lower() in SIGNED_HEADERS or name.lower().startswith("x-amz-")
        }
        aws = AWSRequest(
            method=request.method, url=str(request.url), data=request.content, headers=headers
        )
        S3SigV4Auth(self._credentials, "s3", self._region).add_auth(aws)
        for name, value in aws.headers.items():
            request.headers[name] = value
        yield request
