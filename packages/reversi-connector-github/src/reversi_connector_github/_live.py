"""The github connector's live scenario (``nox -s live -- github``; docs/connectors/github.md).

In the repository named by ``REVERSI_LIVE_GITHUB_REPO`` (a throwaway one: the token needs
Issues and Contents, read and write, on it and nothing else), through the real engine:
open an issue, comment on it, label it ``reversi-live``, create a branch from
``REVERSI_LIVE_GITHUB_BRANCH``; check GitHub holds all four; roll the run back; then check
that the issue is closed as not planned and carries no label, and that the comment and
the branch are gone (deleting them again answers "already gone"). The issue and the
branch are named with the live run's suffix. What stays behind, as for any rollback
(docs/connectors/github.md, "What a rollback leaves"): the closed issue, and the
``reversi-live`` label defined in the repository (one for every run, not one per run).
"""

from __future__ import annotations

import re

from reversi_core.testing import LiveCheckFailed, LiveContext, LiveVariable

__all__ = [
    "LIVE_BRANCH_VARIABLE",
    "LIVE_LABEL",
    "LIVE_REPO_VARIABLE",
    "LIVE_SUMMARY",
    "LIVE_VARIABLES",
    "live_scenario",
]

LIVE_REPO_VARIABLE = "REVERSI_LIVE_GITHUB_REPO"
"""``owner/repo`` of the throwaway repository the live scenario works in."""

LIVE_BRANCH_VARIABLE = "REVERSI_LIVE_GITHUB_BRANCH"
"""The branch the scenario's branch is created from (default ``main``)."""

LIVE_LABEL = "reversi-live"
"""The label the scenario adds (GitHub defines it in the repository on first use)."""

_REPO = re.compile(r"^([A-Za-z0-9-]{1,39})/([A-Za-z0-9._-]{1,100})$")


async def live_scenario(live: LiveContext) -> None:
    """Issue, comment, label and branch, then their rollback, checked on GitHub (module docstring)."""
    found = _REPO.match(live.env[LIVE_REPO_VARIABLE])
    if found is None:
        raise LiveCheckFailed(
            f"expected {LIVE_REPO_VARIABLE} to be owner/repo, not {live.env[LIVE_REPO_VARIABLE]!r}"
        )
    at = {"owner": found[1], "repo": found[2]}
    branch = live.name("reversi-live", "/")

    run = live.start_run()
    _, issue = await run.call(
        "github.create_issue",
        {
            **at,
            "title": live.name("Reversi live check", " "),
            "body": "Opened by the Reversi github connector's live scenario (nox -s live -- "
            "github); the same scenario closes it again.",
        },
    )
    number = issue["number"]
    live.log(f"opened issue #{number}")
    _, comment = await run.call(
        "github.add_comment",
        {**at, "issue_number": number, "body": live.name("A comment of the live check", " ")},
    )
    _, labelled = await run.call(
        "github.add_labels", {**at, "issue_number": number, "labels": [LIVE_LABEL]}
    )
    live.check(labelled["added"] == [LIVE_LABEL], f"add_labels to report {LIVE_LABEL} added")
    _, made = await run.call(
        "github.create_branch",
        {**at, "branch": branch, "from_branch": live.env[LIVE_BRANCH_VARIABLE]},
    )
    live.check(len(made["sha"]) == 40, "the new branch to point at a commit")

    seen = await live.call("github.get_issue", {**at, "issue_number": number})
    live.check(seen["state"] == "open", f"issue #{number} to be open")
    live.check(seen["labels"] == [LIVE_LABEL], f"issue #{number} to carry {LIVE_LABEL}")
    live.check(seen["comments"] == 1, f"issue #{number} to have one comment")

    await live.rollback(run)

    after = await live.call("github.get_issue", {**at, "issue_number": number})
    live.check(after["state"] == "closed", f"issue #{number} to be closed after the rollback")
    live.check(
        after["state_reason"] == "not_planned", f"issue #{number} to be closed as not planned"
    )
    live.check(after["labels"] == [], f"issue #{number} to carry no label after the rollback")
    again = await live.call("github.delete_comment", {**at, "comment_id": comment["id"]})
    live.check(again["deleted"] is False, f"comment {comment['id']} to be gone already")
    gone = await live.call("github.delete_branch", {**at, "branch": branch})
    live.check(gone["deleted"] is False, f"branch {branch} to be gone already")


LIVE_SUMMARY = (
    "Opens an issue, comments on it, labels it and creates a branch in a throwaway repository, "
    "rolls the run back, and checks that the comment and the branch are gone and the issue is "
    "closed as not planned with no label."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(
        LIVE_REPO_VARIABLE,
        "owner/repo of a throwaway repository the token may write issues and branches to",
    ),
    LiveVariable(
        LIVE_BRANCH_VARIABLE,
        "the branch of that repository to create the scenario's branch from",
        default="main",
    ),
)
"""The variables the scenario reads besides the connector's own."""
