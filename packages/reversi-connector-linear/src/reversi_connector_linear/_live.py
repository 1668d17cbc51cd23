"""The linear connector's live scenario (``nox -s live -- linear``; docs/connectors/linear.md).

In the team whose id is ``REVERSI_LIVE_LINEAR_TEAM`` (a throwaway one: the key needs
write access to it), through the real engine: create an issue, comment on it, check that
Linear holds both; roll the run back; then check that the issue is archived and the
comment gone (deleting it again answers "Entity not found"). The issue's title carries the
live run's suffix. What stays behind, as for any rollback (docs/connectors/linear.md): the
archived issue, and the notifications its creation sent.
"""

from __future__ import annotations

from reversi_core.testing import LiveContext, LiveVariable

__all__ = ["LIVE_SUMMARY", "LIVE_TEAM_VARIABLE", "LIVE_VARIABLES", "live_scenario"]

LIVE_TEAM_VARIABLE = "REVERSI_LIVE_LINEAR_TEAM"
"""The id (a UUID) of the throwaway team the live scenario works in."""


async def live_scenario(live: LiveContext) -> None:
    """An issue and a comment on it, then their rollback, checked in Linear (module docstring)."""
    run = live.start_run()
    _, issue = await run.call(
        "linear.create_issue",
        {
            "team_id": live.env[LIVE_TEAM_VARIABLE],
            "title": live.name("Reversi live check", " "),
            "description": "Made by the Reversi linear connector's live scenario (nox -s live -- "
            "linear); the same scenario archives it again.",
        },
    )
    live.log(f"created {issue['identifier']}")
    _, comment = await run.call(
        "linear.add_comment",
        {"issue_id": issue["id"], "body": live.name("A comment of the live check", " ")},
    )
    seen = await live.call("linear.get_issue", {"id": issue["id"]})
    live.check(seen["archived_at"] is None, f"{issue['identifier']} not to be archived yet")

    await live.rollback(run)

    after = await live.call("linear.get_issue", {"id": issue["id"]})
    live.check(
        after["archived_at"] is not None, f"{issue['identifier']} to be archived after the rollback"
    )
    again = await live.call("linear.delete_comment", {"id": comment["id"]})
    live.check(again["deleted"] is False, f"comment {comment['id']} to be gone already")


LIVE_SUMMARY = (
    "Creates an issue in a throwaway team and comments on it, rolls the run back, and checks "
    "that the comment is gone and the issue archived."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(
        LIVE_TEAM_VARIABLE, "the id (a UUID) of a throwaway Linear team the key may write to"
    ),
)
"""The variables the scenario reads besides the connector's own."""
