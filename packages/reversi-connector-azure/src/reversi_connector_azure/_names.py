"""Container and blob names: what Blob Storage can hold, how a name is spelled in a URL.

A blob name is sent exactly as given: every character but the unreserved ones and ``/``
is percent-encoded once. Names the service would change rather than store as given are
refused: a path segment that ends with a dot (``.``, ``..``, ``a./b``; the service
resolves ``.`` and ``..`` segments and drops trailing dots), a name ending with ``/``, a
backslash (read as ``/``), and control characters
(https://learn.microsoft.com/en-us/rest/api/storageservices/naming-and-referencing-containers--blobs--and-metadata).
No local path is ever built from a name.
"""

from __future__ import annotations

import re
import urllib.parse
import uuid

__all__ = [
    "BACKUP_PREFIX",
    "MAX_NAME_CHARS",
    "backup_name",
    "blob_path",
    "check_account",
    "check_backup_name",
    "check_blob",
    "check_container",
]

BACKUP_PREFIX = ".reversi-backups/"
"""Where the connector keeps the copies it restores from; hidden from and protected against the tools."""

MAX_NAME_CHARS = 1024
"""The longest blob name, in characters."""

_ACCOUNT = re.compile(r"^[a-z0-9]{3,24}$")
_CONTAINER = re.compile(r"^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
_BACKUP = re.compile(
    r"^\.reversi-backups/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ufffe\uffff]")


def check_account(name: str) -> str:
    """``name`` if it is a storage account name (3-24 lower-case letters and digits)."""
    name = name.strip()
    if not _ACCOUNT.fullmatch(name):
        raise ValueError("a storage account name is 3-24 lower-case letters and digits")
    return name


def check_container(name: str) -> str:
    """``name`` if it is a container name: 3-63 lower-case letters, digits and single hyphens,
    starting and ending with a letter or digit."""
    if not _CONTAINER.fullmatch(name):
        raise ValueError(
            "a container name is 3-63 lower-case letters, digits and single '-', starting and ending "
            "with a letter or digit"
        )
    return name


def _check_any_blob(name: str) -> str:
    if not name or len(name) > MAX_NAME_CHARS:
        raise ValueError(
            f"a blob name is 1 to {MAX_NAME_CHARS} characters, this one is {len(name)}"
        )
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the name is not valid Unicode text (a lone surrogate)") from None
    if _CONTROL.search(name):
        raise ValueError("the name holds a control character, which Blob Storage does not store")
    if "\\" in name:
        raise ValueError("the name holds a backslash, which Blob Storage reads as '/'")
    if name.endswith("/"):
        raise ValueError(
            "a blob name may not end with '/' (Blob Storage would not store it as given)"
        )
    if any(segment.endswith(".") for segment in name.split("/")):
        raise ValueError(
            "a path segment of the name ends with '.' ('.', '..', 'a./b'), which Blob Storage resolves "
            "or drops instead of storing it as given"
        )
    return name


def check_blob(name: str) -> str:
    """``name`` if the tools may read or write it, else ``ValueError`` saying why (see the module docstring).

    Also refused: names under ``.reversi-backups/`` (the connector's backups). Allowed as
    they are: spaces, ``+``, ``%``, ``?``, ``#``, ``a//b``, a leading ``/``, non-ASCII.
    """
    _check_any_blob(name)
    if name.startswith(BACKUP_PREFIX):
        raise ValueError(
            f"names under {BACKUP_PREFIX} are the connector's backups; the tools do not touch them"
        )
    return name


def check_backup_name(name: str) -> str:
    """``name`` if it is a backup name this connector makes (``.reversi-backups/<uuid4>``)."""
    if not _BACKUP.fullmatch(name):
        raise ValueError(
            f"a backup blob is {BACKUP_PREFIX}<uuid>, as put_blob or delete_blob returned it"
        )
    return name


def backup_name() -> str:
    """A fresh backup name, ``.reversi-backups/<uuid4>``."""
    return f"{BACKUP_PREFIX}{uuid.uuid4()}"


def blob_path(container: str, name: str) -> str:
    """``/container/<name, percent-encoded, '/' kept>``; a leading ``/`` of the name is sent as ``%2F``."""
    quoted = urllib.parse.quote(name, safe="/~")
    if quoted.startswith("/"):
        quoted = "%2F" + quoted[1:]
    return f"/{container}/{quoted}"
