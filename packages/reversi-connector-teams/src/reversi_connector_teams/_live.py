"""The teams connector's live scenario (``nox -s live -- teams``; docs/connectors/teams.md).

In the channel ``REVERSI_LIVE_TEAMS_CHANNEL`` of the team ``REVERSI_LIVE_TEAMS_TEAM`` (a
throwaway team: the token is a delegated one with ``Channel.ReadBasic.All``,
``ChannelMessage.Send`` and ``ChannelMessage.ReadWrite``), through the real engine: check
the channel is listed, post an HTML message named with the run's suffix, roll the run
back, then check that soft-deleting the message again succeeds and says it was soft-deleted
already (Graph's ``deletedDateTime`` on the read before it). What stays behind, as for
any rollback: the "message deleted" placeholder in the channel.
"""

from __future__ import annotations

from reversi_core.testing import LiveContext, LiveVariable

__all__ = ["LIVE_CHANNEL_VARIABLE", "LIVE_SUMMARY", "LIVE_TEAM_VARIABLE", "LIVE_VARIABLES", "live_scenario"]

LIVE_TEAM_VARIABLE = "REVERSI_LIVE_TEAMS_TEAM"
"""The id (a GUID) of the throwaway team the scenario posts in."""

LIVE_CHANNEL_VARIABLE = "REVERSI_LIVE_TEAMS_CHANNEL"
"""The id of the channel of that team the scenario posts in (``19:...@thread.tacv2``)."""


async def live_scenario(live: LiveContext) -> None:
    """List, post, roll back, soft-delete again: checked on Graph (module docstring)."""
    at = {"team_id": live.env[LIVE_TEAM_VARIABLE], "channel_id": live.env[LIVE_CHANNEL_VARIABLE]}
    listed = await live.call("teams.list_channels", {"team_id": at["team_id"]})
    live.check(
        at["channel_id"] in [c["id"] for c in listed["channels"]],
        f"channel {at['channel_id']} to be among the team's channels",
    )
    run = live.start_run()
    text = live.name("Reversi live check", " ")
    _, posted = await run.call(
        "teams.post_message",
        {**at, "content": f"<p>{text}: <b>posted</b> and then soft-deleted</p>", "content_type": "html"},
    )
    live.check(bool(posted["id"]), "the post to return the message's id")
    live.log(f"posted message {posted['id']}")
    await live.rollback(run)
    again = await live.call("teams.delete_message", {**at, "message_id": posted["id"]})
    live.check(again["message_id"] == posted["id"], "a second soft-delete of the message to succeed")
    live.check(again["already_deleted"] is True, "the second soft-delete to find the message soft-deleted")


LIVE_SUMMARY = (
    "Lists a throwaway team's channels, posts an HTML message to one of them, rolls the run "
    "back (soft-deleting the message) and checks that soft-deleting it again succeeds, "
    "finding it soft-deleted already."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(LIVE_TEAM_VARIABLE, "the id (a GUID) of a throwaway team the token's user belongs to"),
    LiveVariable(LIVE_CHANNEL_VARIABLE, "the id of a channel of that team (19:...@thread.tacv2)"),
)
"""The variables the scenario reads besides the connector's own."""
