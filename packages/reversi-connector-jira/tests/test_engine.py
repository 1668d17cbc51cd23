"""The jira connector through the engine: the concurrent-change race, and the edges of a run's own issue."""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector_jira import JiraConnector
from reversi_connector_jira.testing import FakeJira, concurrent_change
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.engine import StepRecord
from reversi_core.errors import InvalidArgumentsError
from reversi_core.journal import RollbackState, StepState
from reversi_core.testing import FakeServer

pytestmark = pytest.mark.anyio


def _run(jira: JiraConnector, tmp_path: Path) -> tuple[Run, SQLiteJournal]:
    journal = SQLiteJournal.open(tmp_path / "data")
    return Run.start(journal, registry_for([jira]), executor=executor_for([jira])), journal


async def test_a_status_changed_after_the_transition_is_not_overwritten_until_reverted(
    jira: JiraConnector, fake: FakeJira, server: FakeServer, tmp_path: Path
) -> None:
    run, journal = _run(jira, tmp_path)
    args = {"issue": "PROJ-1", "transition": "Start Progress"}
    seq, moved = await run.call("jira.transition_issue", args)
    change = concurrent_change(server, "jira.transition_issue", args, moved)
    assert change is not None
    assert fake.find_issue("PROJ-1")["status"] == "10001"  # type: ignore[index]  # someone moved it on
    first = await run.rollback(compensate=compensator_for([jira]))
    step = next(s for s in first.steps if s.seq == seq)
    assert not first.complete
    assert step.rollback_state is RollbackState.COMPENSATION_FAILED
    assert change.what in (step.rollback_reason or "")
    assert "'In Review'" in (step.rollback_reason or "")
    assert "--overwrite STEP" in (step.rollback_reason or "")
    assert fake.find_issue("PROJ-1")["status"] == "10001"  # type: ignore[index]  # their change stands
    change.revert()
    second = await run.rollback(compensate=compensator_for([jira]))
    assert second.complete
    assert fake.find_issue("PROJ-1")["status"] == "10000"  # type: ignore[index]
    journal.close()


@pytest.mark.parametrize(
    ("tool", "args", "words"),
    [
        ("jira.add_comment", {"issue": "PROJ-1", "body": "On it."}, "the comment's body changed"),
        ("jira.create_issue", {"project": "PROJ", "summary": "Seen"}, "1 comment someone added"),
    ],
)
async def test_a_delete_keeps_what_someone_did_since_until_it_is_undone(
    jira: JiraConnector,
    fake: FakeJira,
    server: FakeServer,
    tmp_path: Path,
    tool: str,
    args: dict[str, str],
    words: str,
) -> None:
    """The certification race for the two deletes, through a real engine and journal."""
    before = fake.snapshot()["comments"]
    run, journal = _run(jira, tmp_path)
    seq, made = await run.call(tool, args)
    change = concurrent_change(server, tool, args, made)
    assert change is not None
    changed = fake.snapshot()
    first = await run.rollback(compensate=compensator_for([jira]))
    step = next(s for s in first.steps if s.seq == seq)
    assert step.rollback_state is RollbackState.COMPENSATION_FAILED
    assert change.what in (step.rollback_reason or "")
    assert words in (step.rollback_reason or "")
    assert fake.snapshot() == changed  # nothing of theirs was deleted
    change.revert()
    second = await run.rollback(compensate=compensator_for([jira]))
    assert second.complete, second.to_json()
    assert fake.snapshot()["comments"] == before
    if tool == "jira.create_issue":
        assert fake.find_issue(str(made["key"])) is None  # deleted once the comment was taken back
    journal.close()


async def test_a_person_may_let_the_restore_move_the_issue_back_from_where_someone_put_it(
    jira: JiraConnector, fake: FakeJira, server: FakeServer, tmp_path: Path
) -> None:
    """RB-10: after the refusal, ``allow_overwrite`` for that one step moves the issue back."""
    run, journal = _run(jira, tmp_path)
    seq, _ = await run.call(
        "jira.transition_issue", {"issue": "PROJ-1", "transition": "Start Progress"}
    )
    fake.set_status("PROJ-1", "10002")  # someone resolved it since (Done leads back to To Do)
    first = await run.rollback(compensate=compensator_for([jira]))
    step = next(s for s in first.steps if s.seq == seq)
    assert step.rollback_state is RollbackState.COMPENSATION_FAILED
    assert "'Done'" in (step.rollback_reason or "")
    assert fake.find_issue("PROJ-1")["status"] == "10002"  # type: ignore[index]
    run.allow_overwrite(seq, by="a maintainer")
    second = await run.rollback(compensate=compensator_for([jira]))
    assert second.complete, second.to_json()
    assert fake.find_issue("PROJ-1")["status"] == "10000"  # type: ignore[index]  # through Reopen
    journal.close()


async def test_a_comment_transition_and_subtask_on_the_runs_issue_are_undone_before_it_is_deleted(
    jira: JiraConnector, fake: FakeJira, tmp_path: Path
) -> None:
    run, journal = _run(jira, tmp_path)
    before = fake.snapshot()
    issue_seq, made = await run.call("jira.create_issue", {"project": "PROJ", "summary": "New"})
    calls = [
        ("jira.add_comment", {"issue": made["key"], "body": "On it."}),
        ("jira.transition_issue", {"issue": made["id"], "transition": "Start Progress"}),
        (
            "jira.create_issue",
            {"project": "PROJ", "summary": "Part", "issue_type": "Sub-task", "parent": made["key"]},
        ),
    ]
    later = []
    for tool, args in calls:
        seq, _ = await run.call(tool, args)
        later.append(seq)
        assert journal.get_step(run.id, seq).requires == [issue_seq]
    subtask_seq = later[-1]

    async def subtask_stands(step: StepRecord, result: dict[str, object]) -> bool:
        return step.seq != subtask_seq

    first = await run.rollback(compensate=compensator_for([jira]), verify=subtask_stands)
    states = {s.seq: s.rollback_state for s in first.steps}
    assert states[issue_seq] is RollbackState.DEFERRED
    assert fake.find_issue(made["id"]) is not None
    second = await run.rollback(compensate=compensator_for([jira]))
    assert second.complete
    assert fake.find_issue(made["id"]) is None
    after = fake.snapshot()
    assert after["issues"] == before["issues"]
    assert after["comments"] == before["comments"]
    journal.close()


async def test_a_key_in_lower_case_is_refused_since_it_would_not_be_linked(
    jira: JiraConnector, server: FakeServer, tmp_path: Path
) -> None:
    """Edges compare the arguments as given; 'proj-5' would not match the created 'PROJ-5'."""
    run, journal = _run(jira, tmp_path)
    issue_seq, made = await run.call("jira.create_issue", {"project": "PROJ", "summary": "New"})
    lower = made["key"].lower()
    server.clear_requests()
    for tool, args in [
        ("jira.add_comment", {"issue": lower, "body": "On it."}),
        ("jira.transition_issue", {"issue": lower, "transition": "Start Progress"}),
        ("jira.create_issue", {"project": "PROJ", "summary": "Part", "parent": lower}),
        ("jira.get_issue", {"issue": lower}),
    ]:
        outcome = await run.attempt(tool, args)
        assert outcome.state is StepState.REJECTED, tool
        assert isinstance(outcome.error, InvalidArgumentsError)
    assert server.requests == []
    seq, _ = await run.call("jira.add_comment", {"issue": made["key"], "body": "On it."})
    assert journal.get_step(run.id, seq).requires == [issue_seq]
    journal.close()


async def test_two_transitions_of_one_issue_by_key_and_by_id_are_undone_newest_first(
    jira: JiraConnector, fake: FakeJira, tmp_path: Path
) -> None:
    """The key and the id are two spellings of one issue: every compensation is on
    ``jira:api``, so the rollback, parallel by default, undoes Jira's steps one at a time."""
    issue = fake.find_issue("PROJ-1")
    assert issue is not None
    run, journal = _run(jira, tmp_path)
    first, _ = await run.call(
        "jira.transition_issue", {"issue": "PROJ-1", "transition": "Start Progress"}
    )
    second, _ = await run.call(
        "jira.transition_issue", {"issue": issue["id"], "transition": "Review"}
    )
    note, _ = await run.call("jira.add_comment", {"issue": "PROJ-2", "body": "Also this."})
    assert {tuple(s.compensation["resources"]) for s in run.steps() if s.compensation} == {
        ("jira:api",)
    }
    report = await run.rollback(compensate=compensator_for([jira]))
    assert report.complete, report.to_json()
    assert report.waves == [[note], [second], [first]]
    assert fake.find_issue("PROJ-1")["status"] == "10000"  # type: ignore[index]  # To Do again
    journal.close()
