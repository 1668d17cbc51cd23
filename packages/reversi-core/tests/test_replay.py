"""Replaying an uncertain step (docs/engine.md RES-2, RES-3), on a small keyed connector.

``ledger.add`` stands for a vendor that honours idempotency keys: it remembers the
answer it gave each key and gives it again, so a repeat never adds twice.
``ledger.push`` is the same write from a vendor that does not (no ``replay`` declared).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

from reversi_core import (
    CallContext,
    CommandReplayer,
    Compensation,
    CompensationCall,
    Connector,
    EffectUncertainError,
    InvalidArgumentsError,
    ManifestError,
    Registry,
    Replay,
    ReplayRefusedError,
    Run,
    RunStateError,
    ToolError,
    compensator_for,
    executor_for,
    registry_for,
    replayer_for,
    tool,
)
from reversi_core.cli.reversi import main
from reversi_core.journal import JOURNAL_ENV, Journal, RunStatus, StepState
from reversi_core.manifest import Effect

pytestmark = pytest.mark.anyio

WINDOW = 3600.0


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amount: int


class Added(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    amount: int


class Removed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int


class Ledger(Connector):
    """A ledger whose ``add`` answers a repeated key with its first answer."""

    name = "ledger"

    def __init__(self) -> None:
        self.entries: dict[int, int] = {}
        self.answers: dict[str, dict[str, Any]] = {}
        self.contexts: list[CallContext] = []
        self.fail_next: Exception | None = None
        self.lose_next = False

    @tool(
        effect=Effect.REVERSIBLE,
        permission="ledger:write",
        input=Entry,
        output=Added,
        compensation=Compensation(tool="ledger.remove", argument_map={"id": "result.id"}),
        replay=Replay(window=WINDOW),
    )
    async def add(self, args: Entry, ctx: CallContext) -> dict[str, Any]:
        """Add an entry (a repeated key gets the first answer)."""
        self.contexts.append(ctx)
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        key = ctx.idempotency_key or ""
        if key not in self.answers:
            entry = len(self.entries) + 1
            self.entries[entry] = args.amount
            self.answers[key] = {"id": entry, "amount": args.amount}
        if self.lose_next:
            self.lose_next = False
            raise EffectUncertainError("the answer was lost")
        return dict(self.answers[key])

    @tool(
        effect=Effect.REVERSIBLE,
        permission="ledger:write",
        input=Entry,
        output=Added,
        compensation=Compensation(tool="ledger.remove", argument_map={"id": "result.id"}),
    )
    async def push(self, args: Entry, ctx: CallContext) -> dict[str, Any]:
        """Add an entry; the vendor keeps no record of keys."""
        raise EffectUncertainError("the answer was lost")

    @tool(effect=Effect.IDEMPOTENT, permission="ledger:undo", input=Removed, output=Removed)
    async def remove(self, args: Removed, ctx: CallContext) -> dict[str, Any]:
        """Remove an entry."""
        self.entries.pop(args.id, None)
        return {"id": args.id}


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def run(journal: Journal, ledger: Ledger) -> Run:
    return Run.start(journal, registry_for([ledger]), executor=executor_for([ledger]))


async def uncertain_add(run: Run, ledger: Ledger, amount: int = 5) -> int:
    ledger.lose_next = True
    outcome = await run.attempt("ledger.add", {"amount": amount})
    assert outcome.state is StepState.UNCERTAIN
    assert outcome.step is not None
    return outcome.step


@pytest.mark.req("RES-2")
def test_the_registry_refuses_a_read_only_tool_that_declares_replay() -> None:
    manifest = {
        "name": "x.read",
        "effect": "read_only",
        "permission": "x:read",
        "replay": {"window": 60},
    }
    with pytest.raises(ManifestError, match="a read is never uncertain"):
        Registry.from_manifests([manifest])
    with pytest.raises(ManifestError, match="greater than 0"):
        Registry.from_manifests([{**manifest, "effect": "idempotent", "replay": {"window": 0}}])
    assert Registry.from_manifests([{**manifest, "effect": "idempotent"}]).get(
        "x.read"
    ).replay == Replay(window=60)


@pytest.mark.req("RES-3")
async def test_a_replay_sends_the_journaled_call_with_the_steps_own_key(
    run: Run, ledger: Ledger
) -> None:
    seq = await uncertain_add(run, ledger, 7)
    outcome = await run.replay(seq)
    assert outcome.applied is True
    assert ledger.entries == {1: 7}  # added once, by the first call
    first, again = ledger.contexts
    assert again.idempotency_key == first.idempotency_key == f"reversi-{run.id}-{seq}"
    assert again.replay
    assert not first.replay
    assert not again.compensation
    step = outcome.step
    assert step.state is StepState.UNCERTAIN
    assert step.resolution == "applied"
    assert step.result == {"id": 1, "amount": 7}
    assert step.compensation == {"tool": "ledger.remove", "args": {"id": 1}}
    events = [e for e in run.journal.list_events(run.id) if e["kind"] == "replayed"]
    assert [e["detail"] for e in events] == [{"outcome": "applied"}]


@pytest.mark.req("RES-3")
async def test_a_refusal_resolves_not_applied_anything_else_leaves_it_uncertain(
    run: Run, ledger: Ledger
) -> None:
    seq = await uncertain_add(run, ledger)
    for error in (
        EffectUncertainError("lost again"),
        InvalidArgumentsError("refused before sending"),
    ):
        ledger.fail_next = error
        outcome = await run.replay(seq)
        assert outcome.applied is None
        assert outcome.step.resolution is None
        assert str(error) in (outcome.reason or "")
    ledger.fail_next = ToolError(
        "ledger: HTTP 400 (no_such_account)", status=400, code="no_such_account"
    )
    outcome = await run.replay(seq)
    assert outcome.applied is False
    assert outcome.step.resolution == "not_applied"
    assert "no_such_account" in (outcome.reason or "")
    details = [
        e["detail"]["outcome"] for e in run.journal.list_events(run.id) if e["kind"] == "replayed"
    ]
    assert details == ["uncertain", "uncertain", "not_applied"]


@pytest.mark.req("RES-2")
async def test_a_replay_is_refused_without_replay_declared_or_past_the_window(
    run: Run, ledger: Ledger
) -> None:
    pushed = await run.attempt("ledger.push", {"amount": 1})
    assert pushed.step is not None
    with pytest.raises(ReplayRefusedError, match=r"ledger\.push cannot be replayed"):
        await run.replay(pushed.step)
    seq = await uncertain_add(run, ledger)
    started = run.journal.get_step(run.id, seq).started_at
    with pytest.raises(ReplayRefusedError, match=r"within 1\.0 hours"):
        await run.replay(seq, now=started + WINDOW)
    assert len(ledger.contexts) == 1  # nothing was sent
    done = await run.attempt("ledger.add", {"amount": 2})
    assert done.step is not None
    with pytest.raises(RunStateError, match="not uncertain"):
        await run.replay(done.step)
    unknown = Run.open(run.journal, Registry({}), run.id, executor=run.executor)
    with pytest.raises(ReplayRefusedError, match="no manifest"):
        await unknown.replay(seq)


async def unsent_add(run: Run, ledger: Ledger, amount: int = 5) -> int:
    """An uncertain add whose request never reached the ledger."""
    ledger.fail_next = EffectUncertainError("the request was lost on the way")
    outcome = await run.attempt("ledger.add", {"amount": amount})
    assert outcome.state is StepState.UNCERTAIN
    assert outcome.step is not None
    assert ledger.entries == {}
    return outcome.step


@pytest.mark.req("RES-2")
async def test_a_step_that_has_a_resolution_is_not_replayed(run: Run, ledger: Ledger) -> None:
    not_applied = await unsent_add(run, ledger)
    run.resolve(not_applied, applied=False)
    with pytest.raises(
        ReplayRefusedError, match=r"already resolved as not applied \('reversi show run_"
    ):
        await run.replay(not_applied)
    applied = await unsent_add(run, ledger)
    run.resolve(applied, applied=True, result={"id": 9, "amount": 5})
    with pytest.raises(ReplayRefusedError, match="already resolved as applied"):
        await run.replay(applied)
    assert len(ledger.contexts) == 2  # the two first calls: no replay was sent
    assert ledger.entries == {}
    # a replay's own resolution counts too: a second replay sends nothing
    seq = await uncertain_add(run, ledger, 7)
    assert (await run.replay(seq)).applied is True
    sent = len(ledger.contexts)
    with pytest.raises(ReplayRefusedError, match="already resolved as applied"):
        await run.replay(seq)
    assert len(ledger.contexts) == sent
    # the way out the refusal names: a person may still change the decision
    assert (
        run.resolve(not_applied, applied=True, result={"id": 3, "amount": 5}).resolution
        == "applied"
    )


@pytest.mark.req("RES-2")
async def test_no_replay_once_the_runs_rollback_has_started(run: Run, ledger: Ledger) -> None:
    resolved = await unsent_add(run, ledger)
    run.resolve(resolved, applied=False)
    open_question = await unsent_add(run, ledger)
    report = await run.rollback(compensate=compensator_for([ledger]))
    assert not report.complete  # the unresolved step is outstanding
    assert run.journal.run_status(run.id) is RunStatus.ROLLBACK_INCOMPLETE
    with pytest.raises(ReplayRefusedError, match="already resolved as not applied"):
        await run.replay(resolved)
    with pytest.raises(
        ReplayRefusedError, match=r"the rollback of run run_\w+ has started at .* UTC"
    ):
        await run.replay(open_question)
    assert (
        len(ledger.contexts) == 2
    )  # nothing was sent: the add never happens in a run being undone
    assert ledger.entries == {}
    assert run.journal.get_step(run.id, open_question).resolution is None
    # the way out: a person finds out and resolves it; the next rollback treats it accordingly
    run.resolve(open_question, applied=False)
    assert (await run.rollback(compensate=compensator_for([ledger]))).complete


@pytest.mark.req("RES-2")
async def test_a_rollback_that_starts_as_the_replay_begins_wins(
    run: Run, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    seq = await unsent_add(run, ledger)
    journal = run.journal
    begin = journal.begin_replay

    def rollback_first(run_id: str, step: int) -> bool:
        journal.start_rollback(run_id)  # another process, between the check and the send
        return begin(run_id, step)

    monkeypatch.setattr(journal, "begin_replay", rollback_first)
    with pytest.raises(ReplayRefusedError, match="has started"):
        await run.replay(seq)
    assert len(ledger.contexts) == 1
    assert ledger.entries == {}
    assert "replay_started" not in [e["kind"] for e in journal.list_events(run.id)]


@pytest.mark.req("RES-2")
async def test_the_journal_records_a_replay_only_of_an_unresolved_step_of_an_open_run(
    run: Run, ledger: Ledger
) -> None:
    seq = await unsent_add(run, ledger)
    other = await unsent_add(run, ledger)
    done = await run.attempt("ledger.add", {"amount": 2})
    assert done.step is not None
    journal = run.journal
    assert not journal.begin_replay(run.id, done.step)  # succeeded, not uncertain
    assert not journal.begin_replay(run.id, 99)
    assert journal.begin_replay(run.id, seq)
    assert [e["step"] for e in journal.list_events(run.id) if e["kind"] == "replay_started"] == [
        seq
    ]
    run.resolve(seq, applied=False)
    assert not journal.begin_replay(run.id, seq)
    journal.start_rollback(run.id)
    assert not journal.begin_replay(run.id, other)


@pytest.mark.req("RES-2")
def test_the_cli_refuses_a_replay_of_a_resolved_step_or_in_a_rolled_back_run(
    run: Run,
    ledger: Ledger,
    location: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "ledger.json").write_text(
        json.dumps([m.model_dump(mode="json") for m in Ledger.manifests()])
    )
    resolved = anyio.run(unsent_add, run, ledger)
    open_question = anyio.run(unsent_add, run, ledger)
    sent = _script(tmp_path, "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('sent')")
    marker = tmp_path / "sent"
    # the journal from the environment: a URL holding a password is refused on a command line
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv(JOURNAL_ENV, location)
    common = ["--manifests", str(manifests), "--replay-cmd", f"{sent[0]} {sent[1]} {marker}"]
    assert main(["resolve", run.id, str(resolved), "--not-applied"]) == 0
    capsys.readouterr()
    assert main(["resolve", run.id, str(resolved), "--replay", *common]) == 2
    err = capsys.readouterr().err
    assert "already resolved as not applied" in err
    assert f"reversi show {run.id}" in err
    anyio.run(lambda: run.rollback(compensate=compensator_for([ledger])))
    assert main(["resolve", run.id, str(open_question), "--replay", *common]) == 2
    err = capsys.readouterr().err
    assert f"the rollback of run {run.id} has started" in err
    assert "resolve the step with --applied or --not-applied" in " ".join(err.split())
    assert not marker.exists()  # the replay command never ran
    assert len(ledger.contexts) == 2


@pytest.mark.req("RES-3")
async def test_the_in_process_replayer_takes_only_a_replayable_tool_with_the_steps_key(
    ledger: Ledger,
) -> None:
    replay = replayer_for([ledger])
    with pytest.raises(InvalidArgumentsError, match="step's own idempotency key"):
        await replay(
            CompensationCall("ledger.add", {"amount": 1}, "reversi-run_1-2-undo", "run_1", 2)
        )
    with pytest.raises(InvalidArgumentsError, match="cannot be replayed"):
        await replay(CompensationCall("ledger.push", {"amount": 1}, "reversi-run_1-2", "run_1", 2))
    with pytest.raises(InvalidArgumentsError, match="compensation only"):
        await replay(
            CompensationCall(
                "ledger.add", {"amount": 1}, "reversi-run_1-2", "run_1", 2, overwrite=True
            )
        )
    assert ledger.contexts == []
    result = await replay(
        CompensationCall("ledger.add", {"amount": 1}, "reversi-run_1-2", "run_1", 2)
    )
    assert result == {"id": 1, "amount": 1}
    assert ledger.contexts[0].replay
    assert not ledger.contexts[0].overwrite


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "replayer.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


@pytest.mark.req("RES-3")
async def test_the_replay_command_maps_exit_statuses_to_outcomes(tmp_path: Path) -> None:
    ctx = CallContext(run_id="run_1", step=2, idempotency_key="reversi-run_1-2", replay=True)
    echo = _script(
        tmp_path,
        """
        import json, sys
        call = json.load(sys.stdin)
        print(json.dumps({"seen": call}))
        """,
    )
    seen = await CommandReplayer(echo)("ledger.add", {"amount": 3}, ctx)
    assert seen == {
        "seen": {
            "tool": "ledger.add",
            "args": {"amount": 3},
            "idempotency_key": "reversi-run_1-2",
            "run_id": "run_1",
            "step": 2,
            "overwrite": False,
            "timeout": 96.0,
        }
    }
    for status, raised in ((3, ToolError), (1, EffectUncertainError), (2, EffectUncertainError)):
        cmd = _script(
            tmp_path, f"import sys; sys.stderr.write('why {status}\\n'); sys.exit({status})"
        )
        with pytest.raises(raised, match=f"why {status}"):
            await CommandReplayer(cmd)("ledger.add", {}, ctx)
    silent = _script(tmp_path, "print('not json')")
    with pytest.raises(EffectUncertainError, match="no JSON object"):
        await CommandReplayer(silent)("ledger.add", {}, ctx)
    with pytest.raises(EffectUncertainError, match="nothing was sent"):
        await CommandReplayer(echo)("ledger.add", {}, CallContext(replay=True))
    slow = _script(tmp_path, "import time; time.sleep(30)")
    with pytest.raises(EffectUncertainError, match="did not finish"):
        await CommandReplayer(slow, timeout=0.5)("ledger.add", {}, ctx)
