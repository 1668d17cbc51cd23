"""The jira connector's live scenario (``nox -s live -- jira``; docs/connectors/jira.md).

In the project whose key is ``REVERSI_LIVE_JIRA_PROJECT`` (a throwaway one: the account
holds these project permissions there: Create issues, Browse projects, Transition issues,
Add comments, Delete own comments and Delete issues), through the real engine: create an issue, comment on it, run
the transition ``REVERSI_LIVE_JIRA_TRANSITION`` (default "In Progress", which must have a
way back to the new issue's status), check Jira holds all three; roll the run back; then
check that the issue is gone (deleting it again answers 404). The summary carries the live
run's suffix. What stays behind: the issue key's number, used; nothing else (the deleted
issue takes its comment and history with it).
"""

from __future__ import annotations

from reversi_core.testing import LiveContext, LiveVariable

__all__ = [
    "LIVE_PROJECT_VARIABLE",
    "LIVE_SUMMARY",
    "LIVE_TRANSITION_VARIABLE",
    "LIVE_VARIABLES",
    "live_scenario",
]

LIVE_PROJECT_VARIABLE = "REVERSI_LIVE_JIRA_PROJECT"
"""The key of the throwaway project the live scenario works in."""

LIVE_TRANSITION_VARIABLE = "REVERSI_LIVE_JIRA_TRANSITION"
"""The transition the scenario runs on its new issue (an id, a name or a status name)."""


async def live_scenario(live: LiveContext) -> None:
    """An issue, a comment and a transition, then their rollback, checked in Jira (module docstring)."""
    run = live.start_run()
    _, issue = await run.call(
        "jira.create_issue",
        {
            "project": live.env[LIVE_PROJECT_VARIABLE],
            "summary": live.name("Reversi live check", " "),
            "description": "Made by the Reversi jira connector's live scenario.\n\nThe same "
            "scenario deletes it again.",
        },
    )
    key = issue["key"]
    live.log(f"created {key}")
    await run.call(
        "jira.add_comment", {"issue": key, "body": live.name("A comment of the live check", " ")}
    )
    _, moved = await run.call(
        "jira.transition_issue", {"issue": key, "transition": live.env[LIVE_TRANSITION_VARIABLE]}
    )
    seen = await live.call("jira.get_issue", {"issue": key})
    live.check(seen["status_id"] == moved["status_id"], f"{key} to be in {moved['status']!r}")
    live.check(
        seen["description"] is not None and "\n\n" in seen["description"],
        f"{key}'s paragraphs to be kept",
    )

    await live.rollback(run)

    gone = await live.call("jira.delete_issue", {"issue": issue["id"]})
    live.check(gone["deleted"] is False, f"{key} to be deleted already after the rollback")


LIVE_SUMMARY = (
    "Creates an issue in a throwaway project, comments on it and transitions it, rolls the run "
    "back (the transition walked back, the comment and the issue deleted), and checks that the "
    "issue is gone."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(
        LIVE_PROJECT_VARIABLE,
        "the key of a throwaway Jira project the account may create and delete issues in",
    ),
    LiveVariable(
        LIVE_TRANSITION_VARIABLE,
        "a transition from a new issue's status that the workflow can walk back",
        default="In Progress",
    ),
)
"""The variables the scenario reads besides the connector's own."""
