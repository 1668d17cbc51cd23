"""The result models of the azure tools (each tool's output_schema)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DeleteBlobResult",
    "GetBlobResult",
    "ListBlobsResult",
    "ListedBlob",
    "PutBlobResult",
    "RestoreBlobResult",
]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetBlobResult(_Result):
    """What ``azure.get_blob`` returns."""

    container: str = Field(description="The container.")
    blob: str = Field(description="The blob's name.")
    content: str = Field(description="The content: text, or base64 with encoding 'base64'.")
    encoding: Literal["text", "base64"] = Field(description="How content is spelled.")
    size: int = Field(description="The blob's size in bytes.")
    etag: str = Field(description="The ETag read.")
    content_type: str | None = Field(description="The stored Content-Type.")
    last_modified: str | None = Field(description="When the blob was last written (HTTP date).")


class ListedBlob(_Result):
    """One blob of a listing."""

    blob: str = Field(description="The blob's name.")
    size: int = Field(description="Its size in bytes.")
    etag: str | None = Field(description="Its ETag.")
    last_modified: str | None = Field(description="When it was last written (HTTP date).")


class ListBlobsResult(_Result):
    """What ``azure.list_blobs`` returns (the connector's backups are never listed)."""

    container: str = Field(description="The container.")
    prefix: str = Field(description="The prefix asked for.")
    blobs: list[ListedBlob] = Field(description="The blobs of this page, in name order.")
    common_prefixes: list[str] = Field(
        description="Name groups up to the delimiter, if one was given."
    )
    truncated: bool = Field(description="True when more entries follow.")
    next_marker: str | None = Field(description="Pass it as marker to read the next page.")


class PutBlobResult(_Result):
    """What ``azure.put_blob`` returns; restore_blob undoes it from these fields."""

    container: str = Field(description="The container.")
    blob: str = Field(description="The blob written.")
    existed: bool = Field(description="True when the call replaced a blob.")
    backup_blob: str | None = Field(
        description="Where the replaced blob was copied first; null when there was none."
    )
    etag: str = Field(description="The ETag this write produced.")
    content_md5: str = Field(description="The Content-MD5 of what it wrote (base64).")
    size: int = Field(description="Bytes written.")


class DeleteBlobResult(_Result):
    """What ``azure.delete_blob`` returns; restore_blob undoes it from these fields."""

    container: str = Field(description="The container.")
    blob: str = Field(description="The blob's name.")
    existed: bool = Field(description="False when there was nothing to delete.")
    deleted: bool = Field(description="True when this call deleted a blob.")
    backup_blob: str | None = Field(
        description="Where the blob was copied before it was deleted; null when there was none."
    )
    etag: None = Field(description="Always null: the call leaves no blob.")
    content_md5: None = Field(description="Always null: nothing was written.")


class RestoreBlobResult(_Result):
    """What ``azure.restore_blob`` returns."""

    container: str = Field(description="The container.")
    blob: str = Field(description="The blob's name.")
    action: Literal["copied_back", "deleted", "none"] = Field(
        description="What was done: the backup copied back, the blob deleted, or nothing (already as before)."
    )
    etag: str | None = Field(description="The blob's ETag afterwards; null when there is none.")
