"""The gitlab connector under the real engine and SQLite journal: rollbacks, edges and races."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reversi_connector_gitlab import GitlabConnector
from reversi_connector_gitlab.testing import (
    PROJECT,
    PROJECT_ID,
    RESTORES_NOTHING,
    FakeGitLab,
    concurrent_change,
)
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.journal import RollbackState
from reversi_core.manifest import Effect
from reversi_core.testing import FakeServer, Fault

pytestmark = pytest.mark.anyio


def at(**more: Any) -> dict[str, Any]:
    return {"project": PROJECT, **more}


def start(gitlab: GitlabConnector, journal: SQLiteJournal) -> Run:
    return Run.start(journal, registry_for([gitlab]), executor=executor_for([gitlab]))


async def test_a_run_is_rolled_back_notes_before_their_issue_and_branches_before_their_base(
    gitlab: GitlabConnector, fake: FakeGitLab, server: FakeServer, tmp_path: Path
) -> None:
    before = fake.snapshot()
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = start(gitlab, journal)
        await run.call("gitlab.get_issue", at(issue_iid=1))
        issue_step, issue = await run.call(
            "gitlab.create_issue", at(title="Flaky test", labels=["bug"])
        )
        note_step, note = await run.call(
            "gitlab.add_note", at(issue_iid=issue["iid"], body="Mine.")
        )
        old_note_step, _ = await run.call("gitlab.add_note", at(issue_iid=1, body="Linked."))
        base_step, base = await run.call(
            "gitlab.create_branch", at(branch="agent/base", ref="main")
        )
        child_step, child = await run.call(
            "gitlab.create_branch", at(branch="agent/child", ref="agent/base")
        )
        other_step, _ = await run.call(
            "gitlab.create_branch", {"project": PROJECT_ID, "branch": "x", "ref": "agent/base"}
        )
        requires = {s.seq: s.requires for s in run.steps()}
        assert requires[note_step] == [issue_step]
        assert requires[old_note_step] == []  # issue #1 was not created by the run
        assert requires[child_step] == [base_step]
        assert requires[other_step] == []  # project given as 42, not as its path: compared as given
        server.clear_requests()

        report = await run.rollback(compensate=compensator_for([gitlab]))
        assert report.complete, report.to_json()
        order = [f"{r.method} {r.target}" for r in server.requests]
        note_deleted = order.index(
            f"DELETE /api/v4/projects/acme%2Fbackend/issues/{issue['iid']}/notes/{note['id']}"
        )
        closed = order.index(f"PUT /api/v4/projects/acme%2Fbackend/issues/{issue['iid']}")
        child_deleted = order.index(
            "DELETE /api/v4/projects/acme%2Fbackend/repository/branches/agent%2Fchild"
        )
        base_deleted = order.index(
            "DELETE /api/v4/projects/acme%2Fbackend/repository/branches/agent%2Fbase"
        )
        assert note_deleted < closed
        assert child_deleted < base_deleted
        assert child["sha"] == base["sha"]
        # a note lies under its issue's name; a branch waits for the branch made from it
        # (requires); everything else is undone at once
        touched = {s.seq: (s.compensation or {}).get("resources") for s in run.steps()}
        assert touched[note_step] == [
            f"gitlab:{PROJECT}/issues/{issue['iid']}/notes/{note['id']}"
        ]
        assert touched[other_step] == [f"gitlab:{PROJECT_ID}/branches/x"]  # as given
        assert report.waves == [
            [other_step, child_step, old_note_step, note_step],
            [base_step, issue_step],
        ]

        after = fake.snapshot()["projects"][PROJECT]
        was = before["projects"][PROJECT]
        assert after["branches"] == was["branches"]
        assert after["issues"]["1"] == was["issues"]["1"]
        # the residue: the new issue stays, closed, with GitLab's system note and its label
        new = after["issues"][str(issue["iid"])]
        assert (new["state"], [n["body"] for n in new["notes"]]) == ("closed", ["closed"])


async def test_a_child_branch_that_cannot_be_deleted_keeps_its_base(
    gitlab: GitlabConnector, fake: FakeGitLab, server: FakeServer, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = start(gitlab, journal)
        base_step, _ = await run.call("gitlab.create_branch", at(branch="agent/base", ref="main"))
        child_step, _ = await run.call(
            "gitlab.create_branch", at(branch="agent/child", ref="agent/base")
        )
        server.faults.add(
            Fault.status(500), method="GET", times=1
        )  # the child's read before deleting
        first = await run.rollback(compensate=compensator_for([gitlab]))
        by_seq = {s.seq: s for s in first.steps}
        assert by_seq[child_step].rollback_state is RollbackState.COMPENSATION_FAILED
        assert by_seq[base_step].rollback_state is RollbackState.DEFERRED
        assert {"agent/base", "agent/child"} <= set(fake.project(PROJECT).branches)
        second = await run.rollback(compensate=compensator_for([gitlab]))
        assert second.complete
        assert {"agent/base", "agent/child"}.isdisjoint(fake.project(PROJECT).branches)


async def test_a_note_on_an_issue_the_token_lost_is_not_reported_compensated(
    gitlab: GitlabConnector, fake: FakeGitLab, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = start(gitlab, journal)
        issue_step, issue = await run.call("gitlab.create_issue", at(title="Flaky test"))
        note_step, note = await run.call(
            "gitlab.add_note", at(issue_iid=issue["iid"], body="Mine.")
        )
        issues = fake.project(PROJECT).issues
        with fake.lock:  # the issue is hidden from the token (made confidential, say)
            hidden = issues.pop(issue["iid"])
        first = await run.rollback(compensate=compensator_for([gitlab]))
        by_seq = {s.seq: s for s in first.steps}
        assert by_seq[note_step].rollback_state is RollbackState.COMPENSATION_FAILED
        assert by_seq[issue_step].rollback_state is RollbackState.DEFERRED
        assert hidden.note(note["id"]) is not None
        with fake.lock:
            issues[issue["iid"]] = hidden
        second = await run.rollback(compensate=compensator_for([gitlab]))
        assert second.complete, second.to_json()
        assert hidden.note(note["id"]) is None
        assert hidden.state == "closed"


@pytest.mark.parametrize(
    ("tool", "args", "what"),
    [
        ("gitlab.add_note", at(issue_iid=1, body="Looking into it."), "the note's body"),
        ("gitlab.create_branch", at(branch="agent/race", ref="dev"), "the branch's head"),
    ],
)
async def test_an_undo_never_overwrites_a_later_change_and_completes_once_it_is_reverted(
    gitlab: GitlabConnector,
    fake: FakeGitLab,
    server: FakeServer,
    tmp_path: Path,
    tool: str,
    args: dict[str, Any],
    what: str,
) -> None:
    """The race the concurrent-change check runs, through the fixture's own declaration."""
    before = fake.snapshot()
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = start(gitlab, journal)
        step, result = await run.call(tool, args)
        change = concurrent_change(server, tool, args, result)
        changed = fake.snapshot()
        first = await run.rollback(compensate=compensator_for([gitlab]))
        assert not first.complete
        undone = next(s for s in first.steps if s.seq == step)
        assert undone.rollback_state is RollbackState.COMPENSATION_FAILED
        assert what in (undone.rollback_reason or "")
        assert fake.snapshot() == changed  # the other person's change is still there
        change.revert()
        second = await run.rollback(compensate=compensator_for([gitlab]))
        assert second.complete, second.to_json()
        assert fake.snapshot() == before


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("gitlab.add_note", at(issue_iid=1, body="Looking into it.")),
        ("gitlab.create_branch", at(branch="agent/insist", ref="dev")),
    ],
)
async def test_a_person_may_let_the_rollback_overwrite_the_later_change(
    gitlab: GitlabConnector,
    fake: FakeGitLab,
    server: FakeServer,
    tmp_path: Path,
    tool: str,
    args: dict[str, Any],
) -> None:
    """RB-10: after the refusal, ``allow_overwrite`` for that one step makes the undo delete."""
    before = fake.snapshot()
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = start(gitlab, journal)
        step, result = await run.call(tool, args)
        assert concurrent_change(server, tool, args, result) is not None
        first = await run.rollback(compensate=compensator_for([gitlab]))
        assert not first.complete
        assert "--overwrite STEP" in (
            next(s for s in first.steps if s.seq == step).rollback_reason or ""
        )
        sent = len(server.requests)
        run.allow_overwrite(step, by="a maintainer")
        second = await run.rollback(compensate=compensator_for([gitlab]))
        assert second.complete, second.to_json()
        assert [r.method for r in server.requests[sent:]] == ["DELETE"]  # no read first
    assert fake.snapshot() == before  # the edited note, or the pushed-to branch, is gone


async def test_every_undoable_tool_is_raced_or_restores_nothing(
    fake: FakeGitLab, server: FakeServer
) -> None:
    """Each reversible tool has a concurrent change, or a reason in RESTORES_NOTHING; not both."""
    manifests = GitlabConnector.manifests()
    undoable = {m.name for m in manifests if m.effect in (Effect.REVERSIBLE, Effect.COMPENSABLE)}
    assert undoable == {"gitlab.create_issue", "gitlab.add_note", "gitlab.create_branch"}
    assert set(RESTORES_NOTHING) == {"gitlab.create_issue"}
    assert concurrent_change(server, "gitlab.create_issue", at(title="x"), {"iid": 3}) is None
