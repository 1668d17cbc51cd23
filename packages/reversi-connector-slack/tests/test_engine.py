"""The slack connector under the real engine and SQLite journal: rollbacks, their order, their edges."""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector_slack import SlackConnector
from reversi_connector_slack.testing import (
    ALICE,
    BOT_MESSAGE_TS,
    BOT_USER,
    GENERAL,
    HUMAN_MESSAGE_TS,
    RESTORES_NOTHING,
    FakeSlack,
)
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.journal import RollbackState
from reversi_core.manifest import Effect
from reversi_core.testing import FakeServer, Fault

pytestmark = pytest.mark.anyio


async def test_a_run_is_rolled_back_replies_and_reactions_before_their_message(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer, tmp_path: Path
) -> None:
    before = fake.snapshot()
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([slack]), executor=executor_for([slack]))
        await run.call("slack.list_channels", {})
        post, posted = await run.call(
            "slack.post_message", {"channel": GENERAL, "text": "Release 2.1"}
        )
        reply, replied = await run.call(
            "slack.post_message",
            {"channel": GENERAL, "text": "Notes inside.", "thread_ts": posted["ts"]},
        )
        react, _ = await run.call(
            "slack.add_reaction", {"channel": GENERAL, "timestamp": posted["ts"], "name": "tada"}
        )
        again, kept = await run.call(
            "slack.add_reaction",
            {"channel": GENERAL, "timestamp": BOT_MESSAGE_TS, "name": "white_check_mark"},
        )
        other, _ = await run.call(
            "slack.add_reaction",
            {"channel": GENERAL, "timestamp": HUMAN_MESSAGE_TS, "name": "eyes"},
        )
        assert kept["added"] is False
        requires = {s.seq: s.requires for s in run.steps()}
        assert requires[reply] == [post]
        assert requires[react] == [post]
        assert requires[again] == requires[other] == []  # messages the run did not post
        server.clear_requests()

        report = await run.rollback(compensate=compensator_for([slack]))
        assert report.complete, report.to_json()
        assert sorted(report.compensated_now) == sorted([post, reply, react, again, other])
        calls = [(r.path.rsplit("/", 1)[-1], r.form) for r in server.requests]
        parent_deleted = calls.index(("chat.delete", {"channel": GENERAL, "ts": posted["ts"]}))
        reply_deleted = calls.index(("chat.delete", {"channel": GENERAL, "ts": replied["ts"]}))
        reaction_removed = calls.index(
            ("reactions.remove", {"channel": GENERAL, "timestamp": posted["ts"], "name": "tada"})
        )
        assert reply_deleted < parent_deleted
        assert reaction_removed < parent_deleted
        # a reaction lies under its message's name; the reply, a message of its own, waits
        # for nothing but its parent waits for it (requires): the rest undo at once
        touched = {s.seq: (s.compensation or {}).get("resources") for s in run.steps()}
        assert touched[post] == [f"slack:{GENERAL}/{posted['ts']}"]
        assert touched[react] == [f"slack:{GENERAL}/{posted['ts']}/reactions/tada"]
        assert report.waves == [[other, again, react, reply], [post]]
        # the reaction that was there before the run was not touched: no request names it
        assert not any(c[1].get("name") == "white_check_mark" for c in calls)
        assert fake.snapshot() == before
        assert fake.message(GENERAL, BOT_MESSAGE_TS).reactions == {"white_check_mark": [BOT_USER]}
        assert fake.message(GENERAL, HUMAN_MESSAGE_TS).reactions == {"eyes": [ALICE]}


async def test_a_reply_that_cannot_be_deleted_keeps_its_parent_until_it_is(
    slack: SlackConnector, fake: FakeSlack, server: FakeServer, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([slack]), executor=executor_for([slack]))
        post, posted = await run.call("slack.post_message", {"channel": GENERAL, "text": "Parent"})
        reply, replied = await run.call(
            "slack.post_message", {"channel": GENERAL, "text": "Child", "thread_ts": posted["ts"]}
        )
        server.faults.add(
            Fault.status(200, json={"ok": False, "error": "cant_delete_message"}),
            method="POST",
            times=1,
        )
        first = await run.rollback(compensate=compensator_for([slack]))
        assert not first.complete
        by_seq = {s.seq: s for s in first.steps}
        assert by_seq[reply].rollback_state is RollbackState.COMPENSATION_FAILED
        assert by_seq[post].rollback_state is RollbackState.DEFERRED
        assert "cant_delete_message" in (by_seq[reply].rollback_reason or "")
        assert {posted["ts"], replied["ts"]} <= set(fake.channels[GENERAL].messages)

        second = await run.rollback(compensate=compensator_for([slack]))
        assert second.complete, second.to_json()
        assert {posted["ts"], replied["ts"]}.isdisjoint(fake.channels[GENERAL].messages)


def test_no_undo_restores_an_earlier_state() -> None:
    """The concurrent-change declaration: every undoable tool is in RESTORES_NOTHING, with a reason."""
    undoable = {
        m.name
        for m in SlackConnector.manifests()
        if m.effect in (Effect.REVERSIBLE, Effect.COMPENSABLE)
    }
    assert set(RESTORES_NOTHING) == undoable == {"slack.post_message", "slack.add_reaction"}
    assert all(len(reason.split()) >= 12 for reason in RESTORES_NOTHING.values())
