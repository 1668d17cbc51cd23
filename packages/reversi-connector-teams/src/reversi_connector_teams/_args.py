"""The arguments of each teams tool, as pydantic models (each tool's ``input_schema``).

Every model refuses fields it does not declare. Team, channel and message ids are checked
against the shapes Microsoft Graph gives them before any request is made (a team id is a
GUID, a channel id such as ``19:...@thread.tacv2`` holds only letters, digits and
``: @ . _ - =``, a message id is a number), so no value can add a path segment, a query
or a fragment; each is percent-encoded once into the path
(https://learn.microsoft.com/en-us/graph/api/resources/channel,
https://learn.microsoft.com/en-us/graph/api/resources/chatmessage).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["MAX_BODY_BYTES", "DeleteMessageArgs", "ListChannelsArgs", "PostMessageArgs", "encode_body"]

MAX_BODY_BYTES = 28_000
"""Bytes the chatMessage teams.post_message sends may take (UTF-8 JSON, as sent): Teams
takes "approximately 28 KB per post" (https://learn.microsoft.com/en-us/microsoftteams/limits-specifications-teams)."""


def encode_body(body: Any) -> bytes:
    """The request body as teams.post_message sends it: compact JSON in UTF-8 (non-ASCII kept)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")

TeamId = Annotated[
    str,
    Field(
        pattern=r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$",
        description="The team's id: the GUID of its Microsoft 365 group, such as "
        "'fbe2bf47-16c8-47cf-b4a5-4b9b187c508b'.",
    ),
]
ChannelId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9:@._=-]+$",
        description="The channel's id, such as '19:561fbdbbfca848a484f0a6f00ce9dbbd@thread.tacv2' "
        "(teams.list_channels gives it).",
    ),
]
MessageId = Annotated[
    str,
    Field(
        pattern=r"^[0-9]{1,24}$",
        description="The message's id, a number written as text such as '1616990032035' (the "
        "'id' teams.post_message returned).",
    ),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListChannelsArgs(_Args):
    """Arguments of teams.list_channels."""

    team_id: TeamId


class PostMessageArgs(_Args):
    """Arguments of teams.post_message."""

    team_id: TeamId
    channel_id: ChannelId
    content: str = Field(
        min_length=1,
        max_length=MAX_BODY_BYTES,
        pattern=r"\S",
        description="The message's body: plain text, or HTML when content_type is 'html'. Not "
        "blank (Graph refuses a body of whitespace only); the message as sent may take at most "
        f"{MAX_BODY_BYTES:,} bytes of UTF-8 JSON (Teams' limit of about 28 KB).",
    )
    content_type: Literal["text", "html"] = Field(
        default="text",
        description="How Teams reads the content: 'text' (the default) or 'html' (Teams keeps "
        "a subset of HTML: paragraphs, bold, italics, lists, links, code).",
    )
    subject: str | None = Field(
        default=None,
        max_length=255,
        description="A subject line shown above the message (optional; plain text).",
    )
    importance: Literal["normal", "high", "urgent"] | None = Field(
        default=None,
        description="The message's importance; Teams marks 'high' and 'urgent' ones. Omitted: "
        "'normal'.",
    )

    def chat_message(self) -> dict[str, Any]:
        """The chatMessage Graph is sent: ``{"body": {"contentType", "content"}, "subject"?, "importance"?}``."""
        message: dict[str, Any] = {"body": {"contentType": self.content_type, "content": self.content}}
        if self.subject is not None:
            message["subject"] = self.subject
        if self.importance is not None:
            message["importance"] = self.importance
        return message

    @model_validator(mode="after")
    def _fits_graphs_limit(self) -> PostMessageArgs:
        size = len(encode_body(self.chat_message()))
        if size > MAX_BODY_BYTES:
            raise ValueError(
                f"the message would take {size:,} bytes as sent (UTF-8 JSON of its body, subject "
                f"and importance), over the {MAX_BODY_BYTES:,} allowed: Teams takes about 28 KB "
                "per post. Shorten it or split it into several messages"
            )
        return self


class DeleteMessageArgs(_Args):
    """Arguments of teams.delete_message; the digests come from teams.post_message.

    The message is read first (one soft-deleted already is done). Without digests it is
    then soft-deleted whatever it holds; with ``subject_sha256`` and ``content_sha256``
    (the undo of post_message), only while the fields given are still what the post left.
    """

    team_id: TeamId
    channel_id: ChannelId
    message_id: MessageId
    subject_sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="The digest of the message's subject as the post left it "
        "(teams.post_message's 'subject_sha256'): a message whose subject someone changed "
        "since is kept.",
    )
    content_sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="The digest of the message's body as the post left it "
        "(teams.post_message's 'content_sha256'): a message whose body someone edited "
        "since is kept.",
    )
