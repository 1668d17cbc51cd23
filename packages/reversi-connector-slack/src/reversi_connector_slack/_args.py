"""The arguments of each slack tool, as pydantic models (each tool's ``input_schema``).

Every model refuses fields it does not declare. Identifiers are checked in Slack's own
formats before any request is made (the patterns are those of Slack's Web API
description, ``defs_channel`` and ``defs_ts``): a channel is an ID such as
``C0123ABCDE`` (``C`` public, ``G`` private or group, ``D`` direct message), never a
``#name``; a message timestamp is ``1234567890.123456`` (ten digits, a dot, six digits).
A malformed ``thread_ts`` is refused, so a reply can never be posted at the top of the
channel by mistake. See https://docs.slack.dev/reference/objects/conversation-object and
https://docs.slack.dev/reference/methods/chat.postMessage (``thread_ts``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "CHANNEL_PATTERN",
    "EMOJI_PATTERN",
    "MAX_TEXT",
    "TS_PATTERN",
    "AddReactionArgs",
    "DeleteMessageArgs",
    "ListChannelsArgs",
    "PostMessageArgs",
    "RemoveReactionArgs",
]

CHANNEL_PATTERN = r"^[CGD][A-Z0-9]{8,20}$"
"""A conversation ID: ``C``, ``G`` or ``D`` and 8 to 20 capitals or digits (Slack's ``defs_channel``)."""

TS_PATTERN = r"^[0-9]{10}\.[0-9]{6}$"
"""A message timestamp, ``0123456789.012345`` (Slack's ``defs_ts``, ``^\\d{10}\\.\\d{6}$``).

ASCII digits only: the description's ``\\d`` is JSON Schema's (ECMA-262, ``[0-9]``), while
pydantic-core's ``\\d`` would also take other scripts' digits (``１７１２…``)."""

EMOJI_PATTERN = r"^[a-z0-9_+'-]{1,100}(::skin-tone-[2-6])?$"
"""A reaction name without colons, optionally with a skin tone (``thumbsup::skin-tone-3``)."""

MAX_TEXT = 40_000
"""Characters of message text Slack keeps; it cuts longer text, so the connector refuses it
(https://docs.slack.dev/reference/methods/chat.postMessage, "Truncating content")."""

_CONVERSATION_TYPES = ("public_channel", "private_channel", "mpim", "im")

Channel = Annotated[
    str,
    Field(
        pattern=CHANNEL_PATTERN,
        description="The conversation's ID, such as 'C0123ABCDE' (slack.list_channels lists "
        "them); a '#name' is refused.",
    ),
]
Ts = Annotated[
    str,
    Field(
        pattern=TS_PATTERN,
        description="A message's timestamp ('ts'), such as '1712345678.000200', as "
        "slack.post_message returned it.",
    ),
]
Emoji = Annotated[
    str,
    Field(
        pattern=EMOJI_PATTERN,
        description="The reaction's emoji name without colons, such as 'eyes' or "
        "'thumbsup::skin-tone-2'.",
    ),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListChannelsArgs(_Args):
    """Arguments of slack.list_channels."""

    types: list[str] = Field(
        default_factory=lambda: ["public_channel"],
        min_length=1,
        max_length=4,
        description="Which conversations to list: any of 'public_channel' (the default), "
        "'private_channel', 'mpim', 'im'. Private ones need the token's groups:read scope.",
    )
    exclude_archived: bool = Field(default=True, description="Leave archived channels out.")
    limit: int = Field(
        default=200, ge=1, le=1000, description="At most this many conversations (one page)."
    )
    cursor: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9+/=_-]{1,512}$",
        description="The 'next_cursor' of an earlier call, to read the next page.",
    )

    @model_validator(mode="after")
    def _known_types(self) -> ListChannelsArgs:
        unknown = sorted(set(self.types) - set(_CONVERSATION_TYPES))
        if unknown:
            raise ValueError(
                f"unknown conversation types {unknown}: use {list(_CONVERSATION_TYPES)}"
            )
        return self


class PostMessageArgs(_Args):
    """Arguments of slack.post_message."""

    channel: Channel
    text: str = Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="The message, in Slack's mrkdwn (https://docs.slack.dev/messaging/"
        "formatting-message-text).",
    )
    thread_ts: Ts | None = Field(
        default=None,
        description="Reply in the thread of this message (the parent's 'ts', not a reply's); "
        "a value not in Slack's timestamp format is refused.",
    )
    reply_broadcast: bool = Field(
        default=False,
        description="With thread_ts: also show the reply in the channel.",
    )

    @model_validator(mode="after")
    def _broadcast_needs_thread(self) -> PostMessageArgs:
        if self.reply_broadcast and self.thread_ts is None:
            raise ValueError("reply_broadcast needs thread_ts")
        if not self.text.strip():
            raise ValueError("text is blank")
        return self


class DeleteMessageArgs(_Args):
    """Arguments of slack.delete_message."""

    channel: Channel
    ts: Ts


class AddReactionArgs(_Args):
    """Arguments of slack.add_reaction."""

    channel: Channel
    timestamp: Ts
    name: Emoji


class RemoveReactionArgs(_Args):
    """Arguments of slack.remove_reaction."""

    channel: Channel
    timestamp: Ts
    name: Emoji
    added_by_call: bool = Field(
        default=True,
        description="False when this undoes a slack.add_reaction that found the bot's reaction "
        "already there (its result's 'added'): then nothing is removed, and the reaction "
        "that was there before stays.",
    )
