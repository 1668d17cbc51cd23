"""The github connector under the real engine and SQLite journal, and through the console scripts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from reversi_connector_github import GithubConnector
from reversi_connector_github.testing import SHA_DEV, FakeGitHub
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.journal import RollbackState
from reversi_core.testing import FakeServer, Fault


def at(**more: Any) -> dict[str, Any]:
    return {"owner": "octo", "repo": "hello", **more}


def script(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"console script {name} is not installed (pip install -e packages/reversi-core)"
    return path


async def agent_run(github: GithubConnector, journal: SQLiteJournal) -> tuple[Run, dict[str, int]]:
    """An agent's run touching every forward tool; returns the run and its step numbers."""
    run = Run.start(journal, registry_for([github]), executor=executor_for([github]))
    steps: dict[str, int] = {}
    steps["read"], _ = await run.call("github.get_issue", at(issue_number=1))
    steps["issue"], made = await run.call(
        "github.create_issue", at(title="Flaky test", labels=["bug"])
    )
    number = made["number"]
    steps["comment"], _ = await run.call(
        "github.add_comment", at(issue_number=number, body="I will look.")
    )
    steps["labels_new"], labelled = await run.call(
        "github.add_labels", at(issue_number=number, labels=["bug", "enhancement"])
    )
    assert labelled["added"] == ["enhancement"]
    steps["labels_old"], _ = await run.call(
        "github.add_labels", at(issue_number=1, labels=["documentation", "needs-triage"])
    )
    steps["seed_comment"], _ = await run.call(
        "github.add_comment", at(issue_number=1, body="Linked to the new issue.")
    )
    steps["branch"], branch = await run.call(
        "github.create_branch", at(branch="agent/flaky", from_branch="dev")
    )
    assert branch["sha"] == SHA_DEV
    return run, steps


@pytest.mark.anyio
async def test_a_run_is_journaled_and_rolled_back(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer, tmp_path: Path
) -> None:
    before = fake.snapshot()
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run, steps = await agent_run(github, journal)
        requires = {s.seq: s.requires for s in run.steps()}
        assert requires[steps["comment"]] == [steps["issue"]]
        assert requires[steps["labels_new"]] == [steps["issue"]]
        assert requires[steps["labels_old"]] == []  # issue #1 was not created by the run
        assert requires[steps["seed_comment"]] == []
        server.clear_requests()

        report = await run.rollback(compensate=compensator_for([github]))
        assert report.complete, report.to_json()
        undone = sorted(report.compensated_now)
        assert undone == sorted(v for k, v in steps.items() if k != "read")
        # every undo is on github:api (GitHub asks for requests one at a time): newest first
        assert {tuple(s.compensation["resources"]) for s in run.steps() if s.compensation} == {
            ("github:api",)
        }
        assert report.waves == [[seq] for seq in sorted(undone, reverse=True)]

        # the comment on the new issue was deleted before the issue was closed
        order = [f"{r.method} {r.path}" for r in server.requests]
        new = fake.repo("octo", "hello").issues[3]
        comment_delete = next(
            i for i, x in enumerate(order) if x.startswith("DELETE") and "comments" in x
        )
        close = order.index("PATCH /repos/octo/hello/issues/3")
        assert comment_delete < close

        after = fake.snapshot()
        repo_before, repo_after = before["repos"]["octo/hello"], after["repos"]["octo/hello"]
        # everything the seed had is back exactly: labels on #1, its one comment, the branches
        assert repo_after["issues"]["1"] == repo_before["issues"]["1"]
        assert repo_after["issues"]["2"] == repo_before["issues"]["2"]
        assert repo_after["branches"] == repo_before["branches"]
        # the documented residue: the new issue stays, closed as not planned, with the
        # label it was created with; the label GitHub had to define stays defined
        assert (new.state, new.state_reason, new.labels, new.comments) == (
            "closed",
            "not_planned",
            ["bug"],
            [],
        )
        assert repo_after["labels"]["needs-triage"]["auto_created"] is True
        assert {k: v for k, v in repo_after["labels"].items() if not v["auto_created"]} == (
            repo_before["labels"]
        )

        again = await run.rollback(compensate=compensator_for([github]))
        assert again.complete
        assert again.compensated_now == []
        assert fake.snapshot() == after


@pytest.mark.anyio
async def test_a_failed_undo_is_reported_and_a_later_rollback_finishes(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([github]), executor=executor_for([github]))
        made, result = await run.call("github.create_issue", at(title="x"))
        comment, _ = await run.call(
            "github.add_comment", at(issue_number=result["number"], body="y")
        )
        server.faults.add(Fault.status(500), method="DELETE", times=None)
        first = await run.rollback(compensate=compensator_for([github]))
        states = {s.seq: s.rollback_state for s in first.steps}
        assert not first.complete
        assert states[comment] is RollbackState.COMPENSATION_FAILED
        assert states[made] is RollbackState.DEFERRED  # the issue waits for its comment
        assert fake.repo("octo", "hello").issues[3].state == "open"
        server.faults.clear()
        second = await run.rollback(compensate=compensator_for([github]))
        assert second.complete
        assert fake.repo("octo", "hello").issues[3].state == "closed"


@pytest.mark.slow
def test_a_run_is_rolled_back_by_the_console_scripts(
    fake: FakeGitHub, server: FakeServer, token: str, tmp_path: Path
) -> None:
    """``reversi rollback`` runs ``reversi-connectors compensate``, which reads GITHUB_* only."""
    data = tmp_path / "data"
    github = GithubConnector(token, base_url=server.url)

    async def agent() -> str:
        with SQLiteJournal.open(data) as journal:
            run, _ = await agent_run(github, journal)
            await github.aclose()
            return run.id

    run_id = anyio.run(agent)
    env = {**os.environ, "GITHUB_TOKEN": token, "GITHUB_BASE_URL": server.url}
    compensator = f"{script('reversi-connectors')} compensate --root {tmp_path}"
    argv = [script("reversi"), "rollback", run_id, "--data", str(data), "--json"]
    proc = subprocess.run(
        [*argv, "--compensator-cmd", compensator],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["complete"] is True
    assert len(report["compensated_now"]) == 6
    assert token not in proc.stdout + proc.stderr
    repo = fake.repo("octo", "hello")
    assert repo.issues[1].labels == ["bug"]
    assert len(repo.issues[1].comments) == 1
    assert repo.issues[3].state == "closed"
    assert "agent/flaky" not in repo.branches


def test_compensate_without_github_token_fails_rather_than_skipping(tmp_path: Path) -> None:
    payload = {
        "tool": "github.close_issue",
        "args": at(issue_number=1),
        "idempotency_key": "k",
        "run_id": "run_x",
        "step": 1,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    proc = subprocess.run(
        [script("reversi-connectors"), "compensate", "--root", str(tmp_path)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert proc.returncode != 0
    assert "github.close_issue: GITHUB_TOKEN is not set" in proc.stderr
