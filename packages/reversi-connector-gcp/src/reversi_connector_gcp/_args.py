"""The input models of the gcp tools (closed: an unknown field is refused)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ._names import check_backup_name, check_bucket, check_name

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
    Field(min_length=3, max_length=222, description="The bucket's name."),
]
Key = Annotated[
    str,
    AfterValidator(check_name),
    Field(
        min_length=1,
        description="The object's name, exactly as stored (1-1024 bytes of UTF-8; spaces, '+', '%', "
        "'?', '#', '//', '.' and '..' segments and non-ASCII are kept as they are; not '.' or '..', "
        "no control characters, not under .reversi-backups/).",
    ),
]
Encoding = Annotated[
    Literal["text", "base64"],
    Field(description="'text' for UTF-8 text, 'base64' for any bytes, base64-encoded."),
]
Generation = Annotated[
    str, Field(pattern=r"^[1-9][0-9]{0,19}$", description="An object generation.")
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetObjectArgs(_Args):
    """Input of ``gcp.get_object``."""

    bucket: Bucket
    key: Key
    encoding: Encoding = "text"


class ListObjectsArgs(_Args):
    """Input of ``gcp.list_objects``."""

    bucket: Bucket
    prefix: str = Field("", max_length=1024, description="Only names that start with this.")
    delimiter: str | None = Field(
        None,
        min_length=1,
        max_length=16,
        description="Group names that share the part up to this (usually '/') into common_prefixes.",
    )
    max_keys: int = Field(1000, ge=1, le=1000, description="At most this many entries (1-1000).")
    continuation_token: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="next_continuation_token of the previous page.",
    )


class PutObjectArgs(_Args):
    """Input of ``gcp.put_object``."""

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
    """Input of ``gcp.delete_object``."""

    bucket: Bucket
    key: Key


class RestoreObjectArgs(_Args):
    """Input of ``gcp.restore_object`` (the compensation of put_object and delete_object)."""

    bucket: Bucket
    key: Key
    backup_key: Annotated[str, AfterValidator(check_backup_name)] | None = Field(
        description="The backup to copy back (.reversi-backups/<uuid>), or null when the object did "
        "not exist before the call: then it is deleted."
    )
    expected_generation: Generation | None = Field(
        description="The generation the call being undone left at the name, or null when it left no "
        "object there; the restore refuses to touch an object that changed since."
    )
    expected_crc32c: str | None = Field(
        max_length=16,
        description="The CRC32C of what that call wrote (null: it wrote nothing). An object of another "
        "generation but the same content (a later step's undo rewrote it) counts as unchanged.",
    )
    expected_md5: str | None = Field(
        max_length=32, description="The MD5 of what that call wrote, if Cloud Storage gave one."
    )
