"""A rollback never overwrites a change a person made on GitHub after the call (RB-10).

Each forward tool runs against the fake, then a maintainer changes what it made directly
in the fake's state (as they would on github.com), then the compensation runs with the
arguments the manifest's map computes, as the engine does. delete_comment and
delete_branch read first and refuse (``changed_since``) when the comment was edited or
the branch moved; close_issue leaves an issue someone closed as they closed it;
remove_labels skips a label someone took off. ``ctx.overwrite`` (a person's decision)
skips the read.
"""

from __future__ import annotations

from typing import Any

import pytest

from reversi_connector_github import GithubConnector
from reversi_connector_github.testing import SHA_DEV, SHA_FEATURE, FakeGitHub
from reversi_core.connector import CallContext
from reversi_core.errors import ToolError
from reversi_core.manifest import evaluate_argument_map
from reversi_core.testing import FakeServer

pytestmark = pytest.mark.anyio

UNDO = CallContext(compensation=True)
OVERWRITE = CallContext(compensation=True, overwrite=True)
MANIFESTS = {m.name: m for m in GithubConnector.manifests()}


def at(**more: Any) -> dict[str, Any]:
    return {"owner": "octo", "repo": "hello", **more}


async def forward(github: GithubConnector, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = await github.call(tool, args)
    compensation = MANIFESTS[tool].compensation
    assert compensation is not None
    return compensation.tool, evaluate_argument_map(compensation, args, result)


def sent(server: FakeServer, since: int) -> list[str]:
    return [f"{r.method} {r.path}" for r in server.requests[since:]]


async def test_a_comment_someone_edited_is_not_deleted(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    undo, args = await forward(github, "github.add_comment", at(issue_number=1, body="On it."))
    comment = fake.repo("octo", "hello").comment(args["comment_id"])
    assert comment is not None
    comment.body = "On it. (Edited: a maintainer added the repro steps.)"
    before = len(server.requests)
    with pytest.raises(ToolError) as caught:
        await github.call(undo, args, UNDO)
    assert caught.value.code == "changed_since"
    assert "the comment's body changed since the call" in str(caught.value)
    assert "--overwrite STEP" in str(caught.value)
    assert sent(server, before) == [f"GET /repos/octo/hello/issues/comments/{args['comment_id']}"]
    assert fake.repo("octo", "hello").comment(args["comment_id"]) is comment
    comment.body = "On it."
    assert (await github.call(undo, args, UNDO))["deleted"] is True
    assert fake.repo("octo", "hello").comment(args["comment_id"]) is None


async def test_overwrite_deletes_the_edited_comment_without_reading_it(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    undo, args = await forward(github, "github.add_comment", at(issue_number=1, body="On it."))
    comment = fake.repo("octo", "hello").comment(args["comment_id"])
    assert comment is not None
    comment.body = "edited"
    before = len(server.requests)
    assert (await github.call(undo, args, OVERWRITE))["deleted"] is True
    assert [r.method for r in server.requests[before:]] == ["DELETE"]


async def test_a_comment_someone_deleted_is_already_undone(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    undo, args = await forward(github, "github.add_comment", at(issue_number=1, body="On it."))
    issue = fake.repo("octo", "hello").issues[1]
    issue.comments = [c for c in issue.comments if c.id != args["comment_id"]]
    before = len(server.requests)
    assert (await github.call(undo, args, UNDO))["deleted"] is False
    assert [r.method for r in server.requests[before:]] == ["GET"]  # nothing to delete


async def test_a_branch_someone_pushed_to_is_not_deleted(
    github: GithubConnector, fake: FakeGitHub
) -> None:
    undo, args = await forward(github, "github.create_branch", at(branch="agent/fix", sha=SHA_FEATURE))
    repo = fake.repo("octo", "hello")
    repo.branches["agent/fix"] = SHA_DEV  # a push (or a force-push) since
    with pytest.raises(ToolError) as caught:
        await github.call(undo, args, UNDO)
    assert caught.value.code == "changed_since"
    message = str(caught.value)
    assert f"now points at commit {SHA_DEV[:12]}, not at {SHA_FEATURE[:12]}" in message
    assert repo.branches["agent/fix"] == SHA_DEV
    assert (await github.call(undo, args, OVERWRITE))["deleted"] is True
    assert "agent/fix" not in repo.branches


async def test_a_branch_someone_deleted_is_already_undone(
    github: GithubConnector, fake: FakeGitHub
) -> None:
    undo, args = await forward(github, "github.create_branch", at(branch="agent/fix", sha=SHA_FEATURE))
    del fake.repo("octo", "hello").branches["agent/fix"]
    assert (await github.call(undo, args, UNDO))["deleted"] is False


async def test_an_issue_someone_closed_keeps_their_reason(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    undo, args = await forward(github, "github.create_issue", at(title="Found by the agent"))
    issue = fake.repo("octo", "hello").issues[args["issue_number"]]
    issue.state, issue.state_reason = "closed", "completed"  # a maintainer fixed it
    before = len(server.requests)
    closed = await github.call(undo, args, UNDO)
    assert (closed["state"], closed["state_reason"]) == ("closed", "completed")
    assert [r.method for r in server.requests[before:]] == ["GET"]
    assert (issue.state, issue.state_reason) == ("closed", "completed")


async def test_an_open_issue_is_closed_as_not_planned(
    github: GithubConnector, fake: FakeGitHub
) -> None:
    undo, args = await forward(github, "github.create_issue", at(title="Found by the agent"))
    issue = fake.repo("octo", "hello").issues[args["issue_number"]]
    issue.title = "Renamed by a maintainer"
    closed = await github.call(undo, args, UNDO)
    assert (closed["state"], closed["state_reason"]) == ("closed", "not_planned")
    assert issue.title == "Renamed by a maintainer"  # closing keeps every other edit


async def test_a_label_someone_took_off_is_not_put_back(
    github: GithubConnector, fake: FakeGitHub
) -> None:
    undo, args = await forward(
        github, "github.add_labels", at(issue_number=1, labels=["documentation", "enhancement"])
    )
    issue = fake.repo("octo", "hello").issues[1]
    issue.labels.remove("documentation")
    issue.labels.append("good first issue")
    removed = await github.call(undo, args, UNDO)
    assert (removed["removed"], removed["absent"]) == (["enhancement"], ["documentation"])
    assert issue.labels == ["bug", "good first issue"]


async def test_through_the_engine_the_edited_comment_is_compensation_failed(
    github: GithubConnector, fake: FakeGitHub, tmp_path: Any
) -> None:
    from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
    from reversi_core.journal import RollbackState

    with SQLiteJournal.open(tmp_path) as journal:
        run = Run.start(journal, registry_for([github]), executor=executor_for([github]))
        seq, made = await run.call("github.add_comment", at(issue_number=1, body="On it."))
        comment = fake.repo("octo", "hello").comment(made["id"])
        assert comment is not None
        comment.body = "edited"
        report = await run.rollback(compensate=compensator_for([github]))
        [step] = [s for s in report.steps if s.seq == seq]
        assert step.rollback_state is RollbackState.COMPENSATION_FAILED
        assert "the comment's body changed since the call" in (step.rollback_reason or "")
        run.allow_overwrite(seq, by="a maintainer")
        assert (await run.rollback(compensate=compensator_for([github]))).complete
        assert fake.repo("octo", "hello").comment(made["id"]) is None
