"""The gitlab connector's live scenario (``nox -s live -- gitlab``; docs/connectors/gitlab.md).

In the project named by ``REVERSI_LIVE_GITLAB_PROJECT`` (a throwaway one: the token needs
the ``api`` scope and its user the Developer role there), through the real engine: open an
issue, comment on it, create a branch from ``REVERSI_LIVE_GITLAB_REF`` and a second branch
from the first; check GitLab holds them; roll the run back; then check that the issue is
closed and the note and both branches are gone (deleting them again answers 404). The
issue and the branches are named with the live run's suffix. What stays behind, as for
any rollback (docs/connectors/gitlab.md, "What a rollback leaves behind"): the closed
issue with its "closed" system note.
"""

from __future__ import annotations

from reversi_core.testing import LiveCheckFailed, LiveContext, LiveVariable

from ._args import check_project

__all__ = [
    "LIVE_PROJECT_VARIABLE",
    "LIVE_REF_VARIABLE",
    "LIVE_SUMMARY",
    "LIVE_VARIABLES",
    "live_scenario",
]

LIVE_PROJECT_VARIABLE = "REVERSI_LIVE_GITLAB_PROJECT"
"""The numeric ID or full path of the throwaway project the live scenario works in."""

LIVE_REF_VARIABLE = "REVERSI_LIVE_GITLAB_REF"
"""The branch the scenario's first branch is created from (default ``main``)."""


async def live_scenario(live: LiveContext) -> None:
    """Issue, note and two branches, then their rollback, checked on GitLab (module docstring)."""
    project = live.env[LIVE_PROJECT_VARIABLE]
    try:
        check_project(project)
    except ValueError as exc:
        raise LiveCheckFailed(f"{LIVE_PROJECT_VARIABLE}: {exc}") from None
    at = {"project": project}
    base, child = live.name("reversi-live", "/"), live.name("reversi-live-child", "/")

    run = live.start_run()
    _, issue = await run.call(
        "gitlab.create_issue",
        {
            **at,
            "title": live.name("Reversi live check", " "),
            "description": "Opened by the Reversi gitlab connector's live scenario (nox -s live -- "
            "gitlab); the same scenario closes it again.",
        },
    )
    iid = issue["iid"]
    live.log(f"opened issue #{iid}")
    _, note = await run.call(
        "gitlab.add_note",
        {**at, "issue_iid": iid, "body": live.name("A note of the live check", " ")},
    )
    _, made = await run.call(
        "gitlab.create_branch", {**at, "branch": base, "ref": live.env[LIVE_REF_VARIABLE]}
    )
    _, second = await run.call("gitlab.create_branch", {**at, "branch": child, "ref": base})
    live.check(second["sha"] == made["sha"], "the second branch to start where the first points")

    seen = await live.call("gitlab.get_issue", {**at, "issue_iid": iid})
    live.check(seen["state"] == "opened", f"issue #{iid} to be open")
    live.check(seen["user_notes_count"] == 1, f"issue #{iid} to have one comment")

    await live.rollback(run)

    after = await live.call("gitlab.get_issue", {**at, "issue_iid": iid})
    live.check(after["state"] == "closed", f"issue #{iid} to be closed after the rollback")
    gone = await live.call("gitlab.delete_note", {**at, "issue_iid": iid, "note_id": note["id"]})
    live.check(gone["deleted"] is False, f"note {note['id']} to be gone already")
    for branch in (child, base):
        deleted = await live.call("gitlab.delete_branch", {**at, "branch": branch})
        live.check(deleted["deleted"] is False, f"branch {branch} to be gone already")


LIVE_SUMMARY = (
    "Opens an issue in a throwaway project, comments on it, creates a branch and a branch from "
    "that one, rolls the run back, and checks that the note and both branches are gone and the "
    "issue is closed."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(
        LIVE_PROJECT_VARIABLE, "the ID or full path of a throwaway project (group/project)"
    ),
    LiveVariable(
        LIVE_REF_VARIABLE,
        "the branch of that project to create the scenario's branches from",
        default="main",
    ),
)
"""The variables the scenario reads besides the connector's own."""
