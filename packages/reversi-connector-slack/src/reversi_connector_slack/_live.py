"""The slack connector's live scenario (``nox -s live -- slack``; docs/connectors/slack.md).

In the channel named by ``REVERSI_LIVE_SLACK_CHANNEL`` (the ID of a throwaway channel the
bot is a member of: the token needs ``chat:write`` and ``reactions:write``), through the
real engine: post a message, reply in its thread, react to it with ``eyes``; check that
the reaction is there (reacting again answers ``already_reacted``); roll the run back;
then check that the reply and the message are gone (deleting them again answers
``message_not_found``) and so is the reaction. The texts carry the live run's suffix.
What stays behind, as for any rollback: the notifications the posts sent.
"""

from __future__ import annotations

import re

from reversi_core.testing import LiveCheckFailed, LiveContext, LiveVariable

from ._args import CHANNEL_PATTERN

__all__ = ["LIVE_CHANNEL_VARIABLE", "LIVE_EMOJI", "LIVE_SUMMARY", "LIVE_VARIABLES", "live_scenario"]

LIVE_CHANNEL_VARIABLE = "REVERSI_LIVE_SLACK_CHANNEL"
"""The ID of the throwaway channel the live scenario posts in."""

LIVE_EMOJI = "eyes"
"""The reaction the scenario adds."""


async def live_scenario(live: LiveContext) -> None:
    """Message, reply and reaction, then their rollback, checked on Slack (module docstring)."""
    channel = live.env[LIVE_CHANNEL_VARIABLE]
    if not re.match(CHANNEL_PATTERN, channel):
        raise LiveCheckFailed(
            f"expected {LIVE_CHANNEL_VARIABLE} to be a channel ID such as C0123ABCDE"
        )

    run = live.start_run()
    _, posted = await run.call(
        "slack.post_message",
        {"channel": channel, "text": live.name("Reversi live check (rolled back at once)", ": ")},
    )
    live.log(f"posted {posted['ts']}")
    _, reply = await run.call(
        "slack.post_message",
        {
            "channel": channel,
            "text": live.name("A reply of the live check", ": "),
            "thread_ts": posted["ts"],
        },
    )
    live.check(reply["thread_ts"] == posted["ts"], "the reply to be in the message's thread")
    at = {"channel": channel, "timestamp": posted["ts"], "name": LIVE_EMOJI}
    _, reacted = await run.call("slack.add_reaction", at)
    live.check(reacted["added"] is True, f"the bot's {LIVE_EMOJI} to be added")
    again = await live.call("slack.add_reaction", at)
    live.check(
        again["added"] is False, f"reacting again to answer already_reacted ({LIVE_EMOJI} is there)"
    )

    await live.rollback(run)

    for ts in (reply["ts"], posted["ts"]):
        gone = await live.call("slack.delete_message", {"channel": channel, "ts": ts})
        live.check(gone["deleted"] is False, f"message {ts} to be gone after the rollback")
    removed = await live.call("slack.remove_reaction", at)
    live.check(
        removed["removed"] is False, f"the {LIVE_EMOJI} reaction to be gone with its message"
    )


LIVE_SUMMARY = (
    "Posts a message in a throwaway channel, replies in its thread and reacts to it, rolls the "
    "run back, and checks that the reply, the message and the reaction are gone."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(
        LIVE_CHANNEL_VARIABLE,
        "the ID (C0123ABCDE) of a throwaway channel the bot is a member of",
    ),
)
"""The variables the scenario reads besides the connector's own."""
