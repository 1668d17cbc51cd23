"""The result models of the gcp tools (each tool's output_schema)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DeleteObjectResult",
    "GetObjectResult",
    "ListObjectsResult",
    "ListedObject",
    "PutObjectResult",
    "RestoreObjectResult",
]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetObjectResult(_Result):
    """What ``gcp.get_object`` returns."""

    bucket: str = Field(description="The bucket.")
    key: str = Field(description="The object's name.")
    content: str = Field(description="The content: text, or base64 with encoding 'base64'.")
    encoding: Literal["text", "base64"] = Field(description="How content is spelled.")
    size: int = Field(description="The object's size in bytes.")
    generation: str = Field(description="The generation read (the object's version).")
    content_type: str | None = Field(description="The stored Content-Type.")
    updated: str | None = Field(description="When the object was last written (RFC 3339).")


class ListedObject(_Result):
    """One object of a listing."""

    key: str = Field(description="The object's name.")
    size: int = Field(description="Its size in bytes.")
    generation: str | None = Field(description="Its generation.")
    updated: str | None = Field(description="When it was last written (RFC 3339).")


class ListObjectsResult(_Result):
    """What ``gcp.list_objects`` returns (the connector's backups are never listed)."""

    bucket: str = Field(description="The bucket.")
    prefix: str = Field(description="The prefix asked for.")
    objects: list[ListedObject] = Field(description="The objects of this page, in name order.")
    common_prefixes: list[str] = Field(
        description="Name groups up to the delimiter, if one was given."
    )
    truncated: bool = Field(description="True when more entries follow.")
    next_continuation_token: str | None = Field(description="Pass it to read the next page.")


class PutObjectResult(_Result):
    """What ``gcp.put_object`` returns; restore_object undoes it from these fields."""

    bucket: str = Field(description="The bucket.")
    key: str = Field(description="The object written.")
    existed: bool = Field(description="True when the call replaced an object.")
    backup_key: str | None = Field(
        description="Where the replaced object was copied first; null when there was none."
    )
    generation: str = Field(description="The generation this write produced.")
    crc32c: str = Field(
        description="The CRC32C of what it wrote (base64, as Cloud Storage spells it)."
    )
    md5: str | None = Field(
        description="The MD5 of what it wrote (base64), when Cloud Storage gives one."
    )
    size: int = Field(description="Bytes written.")


class DeleteObjectResult(_Result):
    """What ``gcp.delete_object`` returns; restore_object undoes it from these fields."""

    bucket: str = Field(description="The bucket.")
    key: str = Field(description="The object's name.")
    existed: bool = Field(description="False when there was nothing to delete.")
    deleted: bool = Field(description="True when this call deleted an object.")
    backup_key: str | None = Field(
        description="Where the object was copied before it was deleted; null when there was none."
    )
    generation: None = Field(description="Always null: the call leaves no object at the name.")
    crc32c: None = Field(description="Always null: nothing was written.")
    md5: None = Field(description="Always null: nothing was written.")


class RestoreObjectResult(_Result):
    """What ``gcp.restore_object`` returns."""

    bucket: str = Field(description="The bucket.")
    key: str = Field(description="The object's name.")
    action: Literal["copied_back", "deleted", "none"] = Field(
        description="What was done: the backup copied back, the object deleted, or nothing (already as before)."
    )
    generation: str | None = Field(
        description="The object's generation afterwards; null when there is none."
    )
