"""The result models of the slack tools: what each tool returns, field by field.

They are the manifests' ``output_schema``: the registry checks every ``result.`` source
of an argument map or a ``requires`` declaration against them. All are closed. The
identifiers a call was given come back as given; the fields a compensation or an edge
reads (``channel``, ``ts``, ``added``) are never null. The shapes follow Slack's answers
(https://docs.slack.dev/reference/methods/chat.postMessage,
https://docs.slack.dev/reference/methods/conversations.list).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AddReactionResult",
    "Channel",
    "DeleteMessageResult",
    "ListChannelsResult",
    "PostMessageResult",
    "RemoveReactionResult",
]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Channel(_Result):
    """One conversation of slack.list_channels."""

    id: str = Field(description="The conversation's ID (the 'channel' the other tools take).")
    name: str | None = Field(description="Its name without '#'; null for a direct message.")
    is_private: bool = Field(description="Whether it is a private channel.")
    is_archived: bool = Field(description="Whether it is archived (nothing can be posted there).")
    is_member: bool | None = Field(
        description="Whether the bot is in it (it can post only where it is); null if Slack's "
        "answer does not say."
    )


class ListChannelsResult(_Result):
    """Result of slack.list_channels."""

    channels: list[Channel] = Field(description="One page of conversations.")
    next_cursor: str | None = Field(
        description="Give it as 'cursor' to read the next page; null on the last page."
    )


class PostMessageResult(_Result):
    """Result of slack.post_message."""

    channel: str = Field(description="The conversation's ID, as Slack answered it.")
    ts: str = Field(description="The new message's timestamp (slack.delete_message takes it).")
    thread_ts: str | None = Field(description="The thread it replies in, as given, or null.")
    text: str | None = Field(description="The text as Slack stored it (null if not in the answer).")


class DeleteMessageResult(_Result):
    """Result of slack.delete_message."""

    channel: str = Field(description="The conversation, as given.")
    ts: str = Field(description="The message, as given.")
    deleted: bool = Field(description="False when it was gone already (message_not_found).")


class AddReactionResult(_Result):
    """Result of slack.add_reaction."""

    channel: str = Field(description="The conversation, as given.")
    timestamp: str = Field(description="The message, as given.")
    name: str = Field(description="The emoji, as given.")
    added: bool = Field(
        description="False when the bot had already reacted so (already_reacted): the call "
        "changed nothing, and its undo leaves that reaction in place."
    )


class RemoveReactionResult(_Result):
    """Result of slack.remove_reaction."""

    channel: str = Field(description="The conversation, as given.")
    timestamp: str = Field(description="The message, as given.")
    name: str = Field(description="The emoji, as given.")
    removed: bool = Field(
        description="False when there was nothing to remove: the bot had not reacted so "
        "(no_reaction), the message is gone (message_not_found), or added_by_call was false."
    )
