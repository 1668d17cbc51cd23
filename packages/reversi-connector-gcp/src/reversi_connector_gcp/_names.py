"""Object and bucket names: what Cloud Storage can hold, and the connector's backups.

An object name is sent exactly as given: it is one path segment of the JSON API's URL,
every character but the unreserved ones percent-encoded (``/`` too), so ``a//b``,
``a/./b`` and ``../x`` name exactly those objects
(https://cloud.google.com/storage/docs/request-endpoints#encoding). No local path is
ever built from a name.
"""

from __future__ import annotations

import re
import uuid

__all__ = [
    "BACKUP_PREFIX",
    "MAX_NAME_BYTES",
    "backup_name",
    "check_backup_name",
    "check_bucket",
    "check_name",
]

BACKUP_PREFIX = ".reversi-backups/"
"""Where the connector keeps the copies it restores from; hidden from and protected against the tools."""

MAX_NAME_BYTES = 1024
"""The longest object name, in bytes of UTF-8 (https://cloud.google.com/storage/docs/objects#naming)."""

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_BACKUP = re.compile(
    r"^\.reversi-backups/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x84\x86-\x9f]")


def check_bucket(name: str) -> str:
    """``name`` if it is a valid bucket name, else ``ValueError`` saying why.

    Lower-case letters, digits, ``-``, ``_`` and ``.``, starting and ending with a letter
    or digit, 3-63 characters (222 with dots, each part at most 63), not starting with
    ``goog`` nor containing ``google``
    (https://cloud.google.com/storage/docs/buckets#naming).
    """
    parts = name.split(".")
    if (
        not _BUCKET.fullmatch(name)
        or any(not p or len(p) > 63 for p in parts)
        or ("." not in name and len(name) > 63)
    ):
        raise ValueError(
            "a bucket name is 3-63 lower-case letters, digits, '-', '_' and '.' (222 with dots), "
            "starting and ending with a letter or digit"
        )
    if name.startswith("goog") or "google" in name:
        raise ValueError("a bucket name may not start with 'goog' or contain 'google'")
    return name


def _check_any_name(name: str) -> str:
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("the name is not valid Unicode text (a lone surrogate)") from None
    if size == 0 or size > MAX_NAME_BYTES:
        raise ValueError(
            f"an object name is 1 to {MAX_NAME_BYTES} bytes of UTF-8, this one is {size}"
        )
    if _CONTROL.search(name):
        raise ValueError(
            "the name holds a control character (Cloud Storage refuses carriage returns and line "
            "feeds, and the XML API cannot carry the others)"
        )
    if name in (".", ".."):
        raise ValueError("Cloud Storage refuses the object names '.' and '..'")
    if name.startswith(".well-known/acme-challenge/"):
        raise ValueError("Cloud Storage refuses names under .well-known/acme-challenge/")
    return name


def check_name(name: str) -> str:
    """``name`` if the tools may read or write it, else ``ValueError`` saying why.

    Refused, as Cloud Storage refuses them (https://cloud.google.com/storage/docs/objects#naming):
    an empty name, one over 1024 bytes of UTF-8, ``.`` and ``..``, names under
    ``.well-known/acme-challenge/``, control characters; and any name under
    ``.reversi-backups/`` (the connector's backups). Spaces, ``+``, ``%``, ``?``, ``#``,
    ``a//b``, ``a/./b``, ``../x``, a leading ``/`` and non-ASCII are kept as they are.
    """
    _check_any_name(name)
    if name.startswith(BACKUP_PREFIX):
        raise ValueError(
            f"names under {BACKUP_PREFIX} are the connector's backups; the tools do not touch them"
        )
    return name


def check_backup_name(name: str) -> str:
    """``name`` if it is a backup name this connector makes (``.reversi-backups/<uuid4>``)."""
    if not _BACKUP.fullmatch(name):
        raise ValueError(
            f"a backup key is {BACKUP_PREFIX}<uuid>, as put_object or delete_object returned it"
        )
    return name


def backup_name() -> str:
    """A fresh backup name, ``.reversi-backups/<uuid4>``."""
    return f"{BACKUP_PREFIX}{uuid.uuid4()}"
