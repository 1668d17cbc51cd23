"""The result models of the aws tools (each tool's output_schema)."""

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
    """What ``aws.get_object`` returns."""

    bucket: str = Field(description="The bucket.")
    key: str = Field(description="The key.")
    content: str = Field(description="The content: text, or base64 with encoding 'base64'.")
    encoding: Literal["text", "base64"] = Field(description="How content is spelled.")
    size: int = Field(description="The object's size in bytes.")
    etag: str = Field(description="The object's ETag (its version, as S3 names it).")
    content_type: str | None = Field(description="The stored Content-Type.")
    last_modified: str | None = Field(description="When the object was last written (HTTP date).")


class ListedObject(_Result):
    """One object of a listing."""

    key: str = Field(description="The key.")
    size: int = Field(description="Its size in bytes.")
    etag: str | None = Field(description="Its ETag.")
    last_modified: str | None = Field(description="When it was last written (ISO 8601).")


class ListObjectsResult(_Result):
    """What ``aws.list_objects`` returns (the connector's backups are never listed)."""

    bucket: str = Field(description="The bucket.")
    prefix: str = Field(description="The prefix asked for.")
    objects: list[ListedObject] = Field(description="The objects of this page, in key order.")
    common_prefixes: list[str] = Field(
        description="Key groups up to the delimiter, if one was given."
    )
    truncated: bool = Field(description="True when more entries follow.")
    next_continuation_token: str | None = Field(description="Pass it to read the next page.")


class PutObjectResult(_Result):
    """What ``aws.put_object`` returns; restore_object undoes it from these fields."""

    bucket: str = Field(description="The bucket.")
    key: str = Field(description="The key written.")
    existed: bool = Field(description="True when the call replaced an object.")
    backup_key: str | None = Field(
        description="Where the replaced object was copied first; null when there was none."
    )
    etag: str = Field(description="The ETag of the object this call wrote.")
    size: int = Field(description="Bytes written.")


class DeleteObjectResult(_Result):
    """What ``aws.delete_object`` returns; restore_object undoes it from these fields."""

    bucket: str = Field(description="The bucket.")
    key: str = Field(description="The key.")
    existed: bool = Field(description="False when there was nothing to delete.")
    deleted: bool = Field(description="True when this call deleted an object.")
    backup_key: str | None = Field(
        description="Where the object was copied before it was deleted; null when there was none."
    )
    etag: None = Field(description="Always null: the call leaves no object at the key.")


class RestoreObjectResult(_Result):
    """What ``aws.restore_object`` returns."""

    bucket: str = Field(description="The bucket.")
    key: str = Field(description="The key.")
    action: Literal["copied_back", "deleted", "none"] = Field(
        description="What was done: the backup copied back, the key deleted, or nothing (already as before)."
    )
    etag: str | None = Field(description="The key's ETag afterwards; null when it holds no object.")
