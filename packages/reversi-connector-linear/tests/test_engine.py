"""The linear connector through the engine: a comment on an issue the run created is undone first."""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector_linear import LinearConnector
from reversi_connector_linear.testing import TEAM_ID, FakeLinear
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.engine import StepRecord
from reversi_core.errors import InvalidArgumentsError
from reversi_core.journal import RollbackState, StepState
from reversi_core.testing import FakeServer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("by", ["id", "identifier"])
async def test_a_comment_on_an_issue_the_run_created_is_undone_before_the_issue(
    linear: LinearConnector, fake: FakeLinear, tmp_path: Path, by: str
) -> None:
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([linear]), executor=executor_for([linear]))
    before = fake.snapshot()
    issue_step, made = await run.call("linear.create_issue", {"team_id": TEAM_ID, "title": "New"})
    comment_step, comment = await run.call(
        "linear.add_comment", {"issue_id": made[by], "body": "On it."}
    )
    assert journal.get_step(run.id, comment_step).requires == [issue_step]

    async def comment_stands(step: StepRecord, result: dict[str, object]) -> bool:
        return step.seq != comment_step

    first = await run.rollback(compensate=compensator_for([linear]), verify=comment_stands)
    states = {s.seq: s.rollback_state for s in first.steps}
    assert states == {
        comment_step: RollbackState.VERIFICATION_FAILED,
        issue_step: RollbackState.DEFERRED,
    }
    assert fake.find_issue(made["id"])["archivedAt"] is None  # type: ignore[index]
    second = await run.rollback(compensate=compensator_for([linear]))
    assert second.complete
    assert [s.compensation["resources"] for s in run.steps() if s.compensation] == [
        [f"linear:issues/{made['id']}"],
        [f"linear:comments/{comment['id']}"],
    ]
    assert second.waves == [[comment_step], [issue_step]]  # the issue waits for what requires it
    assert comment["id"] not in fake.comments
    archived = fake.find_issue(made["id"])
    assert archived is not None
    assert archived["archivedAt"] is not None
    assert set(fake.snapshot()["comments"]) == set(before["comments"])
    journal.close()


async def test_an_issue_named_in_another_case_is_refused_since_it_would_not_be_linked(
    linear: LinearConnector, server: FakeServer, tmp_path: Path
) -> None:
    """Edges compare the arguments as given; 'eng-2' would not match the created 'ENG-2'."""
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([linear]), executor=executor_for([linear]))
    issue_step, made = await run.call("linear.create_issue", {"team_id": TEAM_ID, "title": "New"})
    server.clear_requests()
    for spelled in (made["identifier"].lower(), made["identifier"].title()):
        outcome = await run.attempt("linear.add_comment", {"issue_id": spelled, "body": "On it."})
        assert outcome.state is StepState.REJECTED, spelled
        assert isinstance(outcome.error, InvalidArgumentsError)
    assert server.requests == []
    comment_step, _ = await run.call(
        "linear.add_comment", {"issue_id": made["identifier"], "body": "On it."}
    )
    assert journal.get_step(run.id, comment_step).requires == [issue_step]
    journal.close()
