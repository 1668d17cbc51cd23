"""The input models of the aws tools (closed: an unknown field is refused)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ._keys import check_backup_key, check_bucket, check_key

__all__ = [
    "MAX_OBJECT_BYTES",
    "DeleteObjectArgs",
    "GetObjectArgs",
    "ListObjectsArgs",
    "PutObjectArgs",
    "RestoreObjectArgs",
]

MAX_OBJECT_BYTES = 5 * 1024 * 1024
"""The largest object get_object reads and put_object writes: 5 MiB."""

Bucket = Annotated[
    str,
    AfterValidator(check_bucket),
    Field(
        min_length=3,
        max_length=63,
        description="The bucket's name (3-63 lower-case letters, digits, '.' and '-').",
    ),
]
Key = Annotated[
    str,
    AfterValidator(check_key),
    Field(
        min_length=1,
        description="The object's key, exactly as stored (1-1024 bytes of UTF-8; spaces, '+', "
        "'%', '?', '#', '//', '.' and '..' segments and non-ASCII are kept as they are; no "
        "control characters; not under .reversi-backups/).",
    ),
]
Encoding = Annotated[
    Literal["text", "base64"],
    Field(description="'text' for UTF-8 text, 'base64' for any bytes, base64-encoded."),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetObjectArgs(_Args):
    """Input of ``aws.get_object``."""

    bucket: Bucket
    key: Key
    encoding: Encoding = "text"


class ListObjectsArgs(_Args):
    """Input of ``aws.list_objects``."""

    bucket: Bucket
    prefix: str = Field("", max_length=1024, description="Only keys that start with this.")
    delimiter: str | None = Field(
        None,
        min_length=1,
        max_length=16,
        description="Group keys that share the part up to this (usually '/') into common_prefixes.",
    )
    max_keys: int = Field(1000, ge=1, le=1000, description="At most this many entries (1-1000).")
    continuation_token: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="next_continuation_token of the previous page, to read the next one.",
    )


class PutObjectArgs(_Args):
    """Input of ``aws.put_object``."""

    bucket: Bucket
    key: Key
    content: str = Field(
        max_length=8 * 1024 * 1024,
        description="The object's content: text, or base64 with encoding 'base64' (at most 5 MiB decoded).",
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


class DeleteObjectArgs(_Args):
    """Input of ``aws.delete_object``."""

    bucket: Bucket
    key: Key


class RestoreObjectArgs(_Args):
    """Input of ``aws.restore_object`` (the compensation of put_object and delete_object)."""

    bucket: Bucket
    key: Key
    backup_key: Annotated[str, AfterValidator(check_backup_key)] | None = Field(
        description="The backup to copy back (.reversi-backups/<uuid>), or null when the key "
        "did not exist before the call: then the key is deleted."
    )
    expected_etag: str | None = Field(
        max_length=1024,
        description="The ETag the call being undone left at the key, or null when it left no "
        "object there; the restore refuses to touch a key that changed since.",
    )
