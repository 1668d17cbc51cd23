"""The result models of the teams tools: what each tool returns, field by field.

They are the manifests' ``output_schema``: the registry checks every ``result.`` source of
an argument map against them, and :meth:`reversi_core.connector.Connector.call` checks
every result against them. All are closed. ``team_id``, ``channel_id`` and the other ids a
call was given come back as given. A field read from Graph's answer that the connector
does not need is null when the answer lacks it; the message ``id`` that the undo needs is
never null. Shapes follow Graph's channel and chatMessage resources
(https://learn.microsoft.com/en-us/graph/api/resources/channel,
https://learn.microsoft.com/en-us/graph/api/resources/chatmessage).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Channel", "DeleteMessageResult", "ListChannelsResult", "PostMessageResult"]

_TEAM = "The team's id, as given."
_CHANNEL = "The channel's id, as given."


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Channel(_Result):
    """One channel of a team, as teams.list_channels returns it."""

    id: str = Field(description="The channel's id (teams.post_message takes it).")
    display_name: str | None = Field(description="The channel's name as Teams shows it.")
    description: str | None = Field(description="The channel's description, or null.")
    membership_type: str | None = Field(
        description="'standard', 'private' or 'shared' (null when Graph's answer lacks it)."
    )
    web_url: str | None = Field(description="A link that opens the channel in Teams, or null.")


class ListChannelsResult(_Result):
    """Result of teams.list_channels."""

    team_id: str = Field(description=_TEAM)
    channels: list[Channel] = Field(description="Every channel of the team the token can see.")


class PostMessageResult(_Result):
    """Result of teams.post_message."""

    team_id: str = Field(description=_TEAM)
    channel_id: str = Field(description=_CHANNEL)
    id: str = Field(description="The new message's id (teams.delete_message takes it).")
    content_type: Literal["text", "html"] = Field(description="How the body was sent, as given.")
    web_url: str | None = Field(
        description="A link that opens the message in Teams; null if Graph's answer lacks it."
    )
    created_date_time: str | None = Field(
        description="When Teams recorded the message (ISO 8601, UTC); null if the answer lacks it."
    )
    subject_sha256: str = Field(
        description="The SHA-256 (hex) of the message's subject (JSON null when it has none) "
        "as Graph stored it: teams.delete_message, undoing the post, keeps a message whose "
        "subject no longer has it."
    )
    content_sha256: str = Field(
        description="The SHA-256 (hex) of the message's body as Graph stored it: "
        "teams.delete_message, undoing the post, keeps a message whose body no longer has it."
    )


class DeleteMessageResult(_Result):
    """Result of teams.delete_message."""

    team_id: str = Field(description=_TEAM)
    channel_id: str = Field(description=_CHANNEL)
    message_id: str = Field(description="The message, as given.")
    already_deleted: bool = Field(
        description="True when the connector's read of the message (before the soft-delete, or "
        "after a 404 answer to it) showed a deletedDateTime: it was soft-deleted already and "
        "this call changed nothing; false when this call soft-deleted a message the read "
        "showed standing."
    )
