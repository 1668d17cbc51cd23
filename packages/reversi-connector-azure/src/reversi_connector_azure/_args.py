"""The input models of the azure tools (closed: an unknown field is refused)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ._names import check_backup_name, check_blob, check_container

__all__ = [
    "MAX_BLOB_BYTES",
    "DeleteBlobArgs",
    "GetBlobArgs",
    "ListBlobsArgs",
    "PutBlobArgs",
    "RestoreBlobArgs",
]

MAX_BLOB_BYTES = 5 * 1024 * 1024
"""The largest blob get_blob reads and put_blob writes: 5 MiB."""

Container = Annotated[
    str,
    AfterValidator(check_container),
    Field(min_length=3, max_length=63, description="The container's name."),
]
Blob = Annotated[
    str,
    AfterValidator(check_blob),
    Field(
        min_length=1,
        max_length=1024,
        description="The blob's name, exactly as stored (spaces, '+', '%', '?', '#', '//' and "
        "non-ASCII are kept as they are; no segment ending with '.', no trailing '/', no "
        "backslash or control characters; not under .reversi-backups/).",
    ),
]
Encoding = Annotated[
    Literal["text", "base64"],
    Field(description="'text' for UTF-8 text, 'base64' for any bytes, base64-encoded."),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetBlobArgs(_Args):
    """Input of ``azure.get_blob``."""

    container: Container
    blob: Blob
    encoding: Encoding = "text"


class ListBlobsArgs(_Args):
    """Input of ``azure.list_blobs``."""

    container: Container
    prefix: str = Field("", max_length=1024, description="Only names that start with this.")
    delimiter: str | None = Field(
        None,
        min_length=1,
        max_length=16,
        description="Group names up to this (usually '/') into common_prefixes.",
    )
    max_results: int = Field(1000, ge=1, le=5000, description="At most this many entries (1-5000).")
    marker: str | None = Field(
        None, min_length=1, max_length=4096, description="next_marker of the previous page."
    )


class PutBlobArgs(_Args):
    """Input of ``azure.put_blob``."""

    container: Container
    blob: Blob
    content: str = Field(
        max_length=8 * 1024 * 1024,
        description="The blob's content: text, or base64 with encoding 'base64' (at most 5 MiB decoded).",
    )
    encoding: Encoding = "text"
    content_type: str | None = Field(
        None,
        min_length=1,
        max_length=255,
        pattern=r"^[\x21-\x7e][\x20-\x7e]*$",
        description="The Content-Type to store (default: text/plain; charset=utf-8 for text, "
        "application/octet-stream for base64).",
    )


class DeleteBlobArgs(_Args):
    """Input of ``azure.delete_blob``."""

    container: Container
    blob: Blob


class RestoreBlobArgs(_Args):
    """Input of ``azure.restore_blob`` (the compensation of put_blob and delete_blob)."""

    container: Container
    blob: Blob
    backup_blob: Annotated[str, AfterValidator(check_backup_name)] | None = Field(
        description="The backup to copy back (.reversi-backups/<uuid>), or null when the blob did "
        "not exist before the call: then it is deleted."
    )
    expected_etag: str | None = Field(
        max_length=256,
        description="The ETag the call being undone left on the blob, or null when it left none.",
    )
    expected_md5: str | None = Field(
        max_length=64,
        description="The Content-MD5 of what that call wrote: a blob rewritten since with that very "
        "content (a later step's undo) counts as unchanged.",
    )
