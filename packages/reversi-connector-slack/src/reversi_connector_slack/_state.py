"""The state FakeSlack keeps: conversations, their members, messages and reactions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FakeChannel", "FakeMessage"]


@dataclass
class FakeMessage:
    """A message: who posted it (a user ID; ``bot_id`` for the bot's), its thread and reactions.

    ``reactions`` maps an emoji name to the IDs of the users who reacted with it, in order.
    """

    ts: str
    text: str
    user: str
    bot_id: str | None = None
    thread_ts: str | None = None
    reactions: dict[str, list[str]] = field(default_factory=dict)

    def snapshot(self) -> dict[str, Any]:
        """This message as plain data (see ``FakeSlack.snapshot``)."""
        return {
            "text": self.text,
            "user": self.user,
            "thread_ts": self.thread_ts,
            "reactions": {name: list(users) for name, users in sorted(self.reactions.items())},
        }


@dataclass
class FakeChannel:
    """A channel: its ID, name, flags, members (user IDs) and messages by ``ts``."""

    id: str
    name: str
    created: int
    creator: str
    is_private: bool = False
    is_archived: bool = False
    is_general: bool = False
    members: set[str] = field(default_factory=set)
    messages: dict[str, FakeMessage] = field(default_factory=dict)
    topic: str = ""
    purpose: str = ""

    def snapshot(self) -> dict[str, Any]:
        """This channel as plain data (see ``FakeSlack.snapshot``)."""
        return {
            "name": self.name,
            "is_private": self.is_private,
            "is_archived": self.is_archived,
            "members": sorted(self.members),
            "messages": {ts: m.snapshot() for ts, m in sorted(self.messages.items())},
        }
