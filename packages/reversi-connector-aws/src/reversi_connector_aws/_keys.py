"""Object keys and bucket names: what S3 can hold, how a key is spelled in a request.

A key is used exactly as given: every character but the unreserved ones
(``A-Z a-z 0-9 - _ . ~``) and ``/`` is percent-encoded once, and the segments ``.`` and
``..``, which an HTTP client would fold away, are sent as ``%2E`` and ``%2E%2E``; S3
decodes the path and stores the key byte for byte
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html). No local path
is ever built from a key.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
import uuid

__all__ = [
    "BACKUP_PREFIX",
    "MAX_KEY_BYTES",
    "backup_key",
    "check_backup_key",
    "check_bucket",
    "check_key",
    "copy_source",
    "key_path",
]

BACKUP_PREFIX = ".reversi-backups/"
"""Where the connector keeps the copies it restores from; hidden from and protected against the tools."""

MAX_KEY_BYTES = 1024
"""S3's longest key, in bytes of UTF-8 (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html)."""

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_BACKUP = re.compile(
    r"^\.reversi-backups/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_bucket(name: str) -> str:
    """``name`` if it is a valid general purpose bucket name, else ``ValueError`` saying why.

    3-63 characters of lower-case letters, digits, ``.`` and ``-``, starting and ending
    with a letter or digit, no ``..``, not shaped like an IP address
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
    """
    if not _BUCKET.fullmatch(name) or ".." in name or ".-" in name or "-." in name:
        raise ValueError(
            "a bucket name is 3-63 lower-case letters, digits, '.' and '-', starting and "
            "ending with a letter or digit"
        )
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return name
    raise ValueError("a bucket name may not be an IP address")


def _check_any_key(key: str) -> str:
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("the key is not valid Unicode text (a lone surrogate)") from None
    if size == 0 or size > MAX_KEY_BYTES:
        raise ValueError(f"a key is 1 to {MAX_KEY_BYTES} bytes of UTF-8, this one is {size}")
    if _CONTROL.search(key):
        raise ValueError(
            "the key holds a control character, which S3's XML answers cannot carry; "
            "refused rather than stored under a name no listing can show"
        )
    return key


def check_key(key: str) -> str:
    """``key`` if the tools may read or write it, else ``ValueError`` saying why.

    Refused: an empty key, one over 1024 bytes of UTF-8, one with a control character
    (U+0000-U+001F, U+007F: XML 1.0, in which S3 answers listings and errors, cannot
    carry them), and any key under ``.reversi-backups/`` (the connector's backups).
    Everything else is allowed as it is: spaces, ``+``, ``%``, ``?``, ``#``, ``a//b``,
    ``a/./b``, ``../x``, a leading ``/``, non-ASCII.
    """
    _check_any_key(key)
    if key.startswith(BACKUP_PREFIX):
        raise ValueError(
            f"keys under {BACKUP_PREFIX} are the connector's backups; the tools do not touch them"
        )
    return key


def check_backup_key(key: str) -> str:
    """``key`` if it is a backup key this connector makes (``.reversi-backups/<uuid4>``)."""
    if not _BACKUP.fullmatch(key):
        raise ValueError(
            f"a backup key is {BACKUP_PREFIX}<uuid>, as put_object or delete_object returned it"
        )
    return key


def backup_key() -> str:
    """A fresh backup key, ``.reversi-backups/<uuid4>``."""
    return f"{BACKUP_PREFIX}{uuid.uuid4()}"


def key_path(key: str) -> str:
    """``key`` as a URL path after the bucket (leading ``/`` included), each character exact.

    ``a b/./c`` becomes ``/a%20b/%2E/c``; a key that starts with ``/`` becomes
    ``/%2F...`` so that the path never starts with ``//``.
    """
    quoted = urllib.parse.quote(key, safe="/~")
    segments = ["%2E" * len(s) if s in (".", "..") else s for s in quoted.split("/")]
    spelled = "/".join(segments)
    if spelled.startswith("/"):
        spelled = "%2F" + spelled[1:]
    return "/" + spelled


def copy_source(bucket: str, key: str) -> str:
    """The ``x-amz-copy-source`` value naming ``key`` in ``bucket``: ``/bucket/<key, URL-encoded>``.

    https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html#API_CopyObject_RequestSyntax
    """
    return f"/{bucket}{key_path(key)}"
