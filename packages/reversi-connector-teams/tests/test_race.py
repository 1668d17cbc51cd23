"""The concurrent-change rule (RB-10): the undo of a post never deletes a later edit.

teams.post_message returns a digest of the subject and one of the body Graph stored; its
undo, teams.delete_message with those digests, reads the message first and keeps one its
sender edited since (``changed_since``, naming the field). Each test edits the message in the fake itself, as the
sender would in Teams, then undoes the post with the arguments the manifest's map
computes, directly or through a real engine; ``ctx.overwrite`` (a person's decision)
skips the comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _teams_support import connector_for

from reversi_connector_teams import TeamsConnector
from reversi_connector_teams.connector import field_digest
from reversi_connector_teams.testing import (
    EXAMPLES,
    RELEASES,
    TEAM_ID,
    FakeGraph,
    concurrent_change,
)
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import ToolError
from reversi_core.journal import RollbackState
from reversi_core.manifest import evaluate_argument_map
from reversi_core.testing import FakeServer

pytestmark = pytest.mark.anyio

UNDO = CallContext(compensation=True)
OVERWRITE = CallContext(compensation=True, overwrite=True)
MANIFEST = next(m for m in TeamsConnector.manifests() if m.name == "teams.post_message")
POST = {"team_id": TEAM_ID, "channel_id": RELEASES, "content": "Deploying at 5", "subject": "Deploy"}


async def _post(teams: TeamsConnector, args: dict[str, Any] = POST) -> tuple[dict[str, Any], dict[str, Any]]:
    """The post's result and its undo's arguments, as the engine computes them."""
    result = await teams.call("teams.post_message", args)
    assert MANIFEST.compensation is not None
    return result, evaluate_argument_map(MANIFEST.compensation, args, result)


def _sent(server: FakeServer, since: int) -> list[str]:
    return [f"{r.method} {r.path.rsplit('/', 1)[-1]}" for r in server.requests[since:]]


async def test_the_post_returns_the_digest_of_what_graph_stored(
    teams: TeamsConnector, fake: FakeGraph
) -> None:
    html = EXAMPLES["teams.post_message"][1]
    assert isinstance(html, dict)
    posted, undo = await _post(teams, dict(html))
    stored = fake.message(TEAM_ID, RELEASES, posted["id"])
    assert posted["subject_sha256"] == field_digest(stored.subject)
    assert posted["content_sha256"] == field_digest(stored.content)
    assert field_digest(None) != field_digest("")  # no subject is not an empty one
    assert undo["subject_sha256"] == posted["subject_sha256"]
    assert undo["content_sha256"] == posted["content_sha256"]


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ({"content": "Deploying at 6"}, "its body is not what the post left"),
        ({"subject": "Deploy moved"}, "its subject is not what the post left"),
        ({"subject": ""}, "its subject is not what the post left"),
        ({"content": "Deploying at 6", "subject": "Moved"}, "its subject and body are not what the post left"),
    ],
    ids=["body", "subject", "subject-emptied", "both"],
)
async def test_a_message_its_sender_edited_is_not_deleted_until_the_edit_is_taken_back(
    teams: TeamsConnector, fake: FakeGraph, server: FakeServer, edit: dict[str, str], named: str
) -> None:
    posted, undo = await _post(teams)
    fake.edit_message(TEAM_ID, RELEASES, posted["id"], **edit)
    before = len(server.requests)
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.delete_message", undo, UNDO)
    assert (caught.value.code, caught.value.status) == ("changed_since", None)
    message = str(caught.value)
    assert "someone edited the message since teams.post_message posted it" in message
    assert named in message
    assert "Graph says it was last edited at " in message
    assert "--overwrite STEP" in message
    assert _sent(server, before) == [f"GET {posted['id']}"]  # read, nothing deleted
    assert fake.message(TEAM_ID, RELEASES, posted["id"]).deleted is None

    fake.edit_message(TEAM_ID, RELEASES, posted["id"], content=POST["content"], subject=POST["subject"])
    done = await teams.call("teams.delete_message", undo, UNDO)
    assert done["already_deleted"] is False
    assert fake.message(TEAM_ID, RELEASES, posted["id"]).deleted is not None


async def test_overwrite_soft_deletes_the_edited_message_without_comparing_it(
    teams: TeamsConnector, fake: FakeGraph, server: FakeServer
) -> None:
    posted, undo = await _post(teams)
    fake.edit_message(TEAM_ID, RELEASES, posted["id"], content="Deploying at 6")
    before = len(server.requests)
    assert (await teams.call("teams.delete_message", undo, OVERWRITE))["already_deleted"] is False
    assert _sent(server, before) == [f"GET {posted['id']}", "POST softDelete"]
    assert fake.message(TEAM_ID, RELEASES, posted["id"]).deleted is not None
    again = await teams.call("teams.delete_message", undo, OVERWRITE)
    assert again["already_deleted"] is True  # the read still tells a deleted message apart


async def test_a_message_someone_soft_deleted_already_is_done_after_the_read(
    teams: TeamsConnector, fake: FakeGraph, server: FakeServer
) -> None:
    posted, undo = await _post(teams)
    fake.edit_message(TEAM_ID, RELEASES, posted["id"], content="edited, then deleted")
    fake.message(TEAM_ID, RELEASES, posted["id"]).deleted = "2026-12-01T09:00:00.000Z"
    before = len(server.requests)
    assert (await teams.call("teams.delete_message", undo, UNDO))["already_deleted"] is True
    assert _sent(server, before) == [f"GET {posted['id']}"]


async def test_without_the_digest_delete_message_soft_deletes_whatever_the_message_holds(
    teams: TeamsConnector, fake: FakeGraph, server: FakeServer
) -> None:
    posted, undo = await _post(teams)
    fake.edit_message(TEAM_ID, RELEASES, posted["id"], content="edited")
    before = len(server.requests)
    del undo["content_sha256"], undo["subject_sha256"]
    assert (await teams.call("teams.delete_message", undo))["already_deleted"] is False
    assert _sent(server, before) == [f"GET {posted['id']}", "POST softDelete"]


async def test_through_the_engine_the_edited_post_is_compensation_failed_until_reverted(
    tmp_path: Path, fake: FakeGraph, server: FakeServer
) -> None:
    teams = connector_for(fake, server)
    with SQLiteJournal.open(tmp_path) as journal:
        run = Run.start(journal, registry_for([teams]), executor=executor_for([teams]))
        seq, posted = await run.call("teams.post_message", POST)
        change = concurrent_change(server, "teams.post_message", POST, posted)
        assert change is not None
        edited = fake.snapshot()
        report = await run.rollback(compensate=compensator_for([teams]))
        [step] = [s for s in report.steps if s.seq == seq]
        assert step.rollback_state is RollbackState.COMPENSATION_FAILED
        assert change.what in (step.rollback_reason or "")
        assert fake.snapshot() == edited
        change.revert()
        assert (await run.rollback(compensate=compensator_for([teams]))).complete
        message = fake.message(TEAM_ID, RELEASES, posted["id"])
        assert (message.deleted is not None, message.edited is not None) == (True, True)
    await teams.aclose()


async def test_through_the_engine_a_person_may_let_the_undo_delete_the_edit(
    tmp_path: Path, fake: FakeGraph, server: FakeServer
) -> None:
    teams = connector_for(fake, server)
    with SQLiteJournal.open(tmp_path) as journal:
        run = Run.start(journal, registry_for([teams]), executor=executor_for([teams]))
        seq, posted = await run.call("teams.post_message", POST)
        fake.edit_message(TEAM_ID, RELEASES, posted["id"], content="Deploying at 6")
        assert not (await run.rollback(compensate=compensator_for([teams]))).complete
        run.allow_overwrite(seq, by="the sender")
        assert (await run.rollback(compensate=compensator_for([teams]))).complete
        assert fake.message(TEAM_ID, RELEASES, posted["id"]).deleted is not None
    await teams.aclose()
