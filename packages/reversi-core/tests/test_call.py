"""A call (docs/engine.md, "A call"): each rule as its own test."""

from __future__ import annotations

import json
import shlex
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from _memconnector import MemConnector, raw_executor
from _stores import stored_bytes
from pydantic import BaseModel, ConfigDict

from reversi_core import (
    REJECTED_ARGS_LIMIT,
    ApprovalDecision,
    ApprovalDenied,
    ApprovalRequest,
    CallContext,
    CallOutcome,
    Connector,
    EffectUncertainError,
    InvalidArgumentsError,
    JournalError,
    PermissionDenied,
    Registry,
    Run,
    RunClosedError,
    RunStateError,
    StepState,
    ToolError,
    ToolUnavailableError,
    UnknownToolError,
    Withheld,
    compensator_for,
    register_secret,
    tool,
)
from reversi_core._outcome import compensation_for
from reversi_core._writes import RESULT_HINT_CHARS, result_flag
from reversi_core.engine import WriteCall
from reversi_core.journal import RollbackState, StepRecord, open_journal
from reversi_core.manifest import Effect

pytestmark = pytest.mark.anyio

MakeRun = Callable[..., Run]


# -- rule 1: refused before execution -------------------------------------------------


@pytest.mark.req("CALL-1")
async def test_unknown_tool_is_rejected_journaled_and_not_executed(make_run: MakeRun) -> None:
    executed: list[str] = []

    async def execute(tool: str, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        executed.append(tool)
        return {}

    run = make_run(executor=execute)
    with pytest.raises(UnknownToolError, match=r"mem\.nope"):
        await run.call("mem.nope", {"x": 1}, reason="trying")
    assert executed == []
    [step] = run.steps()
    assert step.state is StepState.REJECTED
    assert step.tool == "mem.nope"
    assert step.args == {"x": 1}
    assert step.reason == "trying"
    assert "unknown tool" in (step.error or "")


@pytest.mark.req("CALL-1")
async def test_attempt_returns_a_rejection_with_its_step_instead_of_raising(
    make_run: MakeRun,
) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    outcome = await run.attempt("mem.nope", {})
    assert (outcome.step, outcome.state) == (2, StepState.REJECTED)
    assert isinstance(outcome.error, UnknownToolError)
    assert outcome.error.step == 2  # the rejection carries its step number
    with pytest.raises(UnknownToolError) as info:
        await run.call("mem.nope", {})
    assert info.value.step == 3


@pytest.mark.req("CALL-1")
async def test_a_withheld_tool_is_refused_by_the_engine_and_journaled(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    run.withheld = {"mem.put": Withheld("drifted", "mem.put is refused: its schema drifted")}
    outcome = await run.attempt("mem.put", {"key": "a", "value": "1"}, reason="try")
    assert isinstance(outcome.error, ToolUnavailableError)
    assert outcome.error.code == "drifted"
    assert mem.calls == []
    [step] = run.steps()
    assert (step.seq, step.state, step.reason) == (outcome.step, StepState.REJECTED, "try")
    assert "schema drifted" in (step.error or "")


@pytest.mark.req("CALL-10")
async def test_after_a_rollback_every_refusal_says_the_run_was_rolled_back(
    make_run: MakeRun, mem: MemConnector
) -> None:
    # The bug of issue 10: a withheld (drifted) tool used to be journaled as a new
    # rejected step in the rolled-back run, where any other tool was refused as closed.
    run = make_run(scope=["mem:read"])
    run.withheld = {"mem.put": Withheld("drifted", "mem.put drifted")}
    report = await run.rollback(compensate=compensator_for([mem]))
    assert report.complete
    for name, args in (
        ("mem.put", {"key": "a", "value": "1"}),  # withheld
        ("mem.publish", {"message": "hi"}),  # outside the scope
        ("mem.nope", {}),  # unknown
        ("mem.put", {"key": 3}),  # invalid arguments
        ("mem.get", {"key": "a"}),  # allowed
    ):
        outcome = await run.attempt(name, args)
        assert isinstance(outcome.error, RunClosedError), name
        assert "rolled back" in str(outcome.error)
        assert outcome.step is None
    assert run.steps() == []


@pytest.mark.req("CALL-9")
async def test_a_huge_rejected_call_keeps_a_bounded_record(make_run: MakeRun) -> None:
    run = make_run(scope=["mem:read"])
    big = "x" * (30 * 1024 * 1024)
    with pytest.raises(PermissionDenied):
        await run.call("mem.put", {"key": "a", "value": big})
    [step] = run.steps()
    assert step.args["bytes"] > 30 * 1024 * 1024
    assert "at most" in step.args["_omitted"]
    assert len(json.dumps(step.args)) < 1000
    small = await run.attempt("mem.put", {"key": "b", "value": "y" * 100})
    assert small.step is not None
    assert run.journal.get_step(run.id, small.step).args == {"key": "b", "value": "y" * 100}
    assert REJECTED_ARGS_LIMIT == 64 * 1024


@pytest.mark.req("CALL-1")
async def test_a_lone_surrogate_in_arguments_is_rejected_naming_the_field(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    with pytest.raises(InvalidArgumentsError) as info:
        await run.call("mem.put", {"key": "caf\udce9", "value": "1"})
    assert info.value.problems == [
        "args.key: holds a lone surrogate (U+DCE9) at character 3, which is not Unicode text"
    ]
    assert mem.calls == []
    [step] = run.steps()
    assert step.state is StepState.REJECTED
    assert step.args["key"] == "caf\udce9"  # kept as it came


@pytest.mark.req("CALL-1")
async def test_permission_outside_scope_is_rejected_naming_the_permission(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run(scope=["mem:read"])
    with pytest.raises(PermissionDenied, match="mem:write") as info:
        await run.call("mem.put", {"key": "a", "value": "1"})
    assert info.value.permission == "mem:write"
    assert mem.calls == []
    assert mem.data == {}
    [step] = run.steps()
    assert step.state is StepState.REJECTED
    assert step.permission == "mem:write"
    assert "mem:write" in (step.error or "")


@pytest.mark.req("CALL-1")
async def test_invalid_arguments_are_rejected_field_by_field(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    with pytest.raises(InvalidArgumentsError) as info:
        await run.call("mem.put", {"key": 3, "value": ["x"]})
    problems = info.value.problems
    assert len(problems) == 2
    assert problems[0].startswith("args.key: ")
    assert "3 is not of type 'string'" in problems[0]
    assert problems[1].startswith("args.value: ")
    with pytest.raises(InvalidArgumentsError) as missing:
        await run.call("mem.put", {"value": "x"})
    assert missing.value.problems == ["args: 'key' is a required property"]
    assert mem.calls == []
    steps = run.steps()
    assert [s.state for s in steps] == [StepState.REJECTED, StepState.REJECTED]
    assert "args.key" in (steps[0].error or "")
    assert steps[0].args == {"key": 3, "value": ["x"]}


# -- rule 2: approval -------------------------------------------------------------------


@pytest.mark.req("CALL-2")
async def test_approval_always_without_approver_is_rejected(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    with pytest.raises(ApprovalDenied, match="approval"):
        await run.call("mem.guarded_put", {"key": "a", "value": "1"})
    assert mem.calls == []
    [step] = run.steps()
    assert step.state is StepState.REJECTED
    assert step.approval is not None
    assert step.approval["approved"] is False
    assert step.approval["by"] == "no approver"


@pytest.mark.req("CALL-2")
async def test_approver_denial_is_rejected_with_the_decision_journaled(
    make_run: MakeRun, mem: MemConnector
) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(False, by="alice", note="not today")

    run = make_run(approver=approver)
    with pytest.raises(ApprovalDenied, match="alice denied it: not today"):
        await run.call("mem.guarded_put", {"key": "a", "value": "1"}, reason="because")
    assert mem.calls == []
    assert len(asked) == 1
    assert asked[0].tool == "mem.guarded_put"
    assert asked[0].args == {"key": "a", "value": "1"}
    assert asked[0].reason == "because"
    assert asked[0].run_id == run.id
    [step] = run.steps()
    assert step.state is StepState.REJECTED
    assert step.approval == {"approved": False, "by": "alice", "note": "not today"}


@pytest.mark.req("CALL-2")
async def test_approver_approval_runs_the_call_with_the_decision_journaled(
    make_run: MakeRun, mem: MemConnector
) -> None:
    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(True, by="bob", note="fine")

    run = make_run(approver=approver)
    seq, result = await run.call("mem.guarded_put", {"key": "a", "value": "1"})
    assert result == {"previous": None, "existed": False}
    assert mem.data == {"a": "1"}
    step = run.journal.get_step(run.id, seq)
    assert step.state is StepState.SUCCEEDED
    assert step.approval == {"approved": True, "by": "bob", "note": "fine"}


@pytest.mark.req("CALL-2")
async def test_approver_answering_a_bool_is_accepted(make_run: MakeRun, mem: MemConnector) -> None:
    async def approver(request: ApprovalRequest) -> bool:
        return True

    run = make_run(approver=approver)
    seq, _ = await run.call("mem.guarded_put", {"key": "a", "value": "1"})
    assert run.journal.get_step(run.id, seq).approval == {
        "approved": True,
        "by": "approver",
        "note": None,
    }


@pytest.mark.req("CALL-2")
async def test_approval_never_does_not_ask_the_approver(make_run: MakeRun) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    run = make_run(approver=approver)
    await run.call("mem.put", {"key": "a", "value": "1"})
    assert asked == []
    assert run.steps()[0].approval is None


# -- rules 3-5: intent, execution, outcome ------------------------------------------------


@pytest.mark.req("CALL-3")
async def test_pending_is_durable_before_execution(
    make_run: MakeRun, mem: MemConnector, location: str
) -> None:
    seen: list[tuple[StepState, str, str | None]] = []

    def look(args: dict[str, Any], ctx: CallContext) -> None:
        other = open_journal(location, create=False)  # a second connection
        try:
            assert ctx.run_id is not None
            assert ctx.step is not None
            step = other.get_step(ctx.run_id, ctx.step)
            seen.append((step.state, step.tool, step.owner))
        finally:
            other.close()

    mem.hooks["mem.put"] = look
    run = make_run()
    seq, _ = await run.call("mem.put", {"key": "a", "value": "1"})
    assert len(seen) == 1
    state, tool, owner = seen[0]
    assert state is StepState.PENDING
    assert tool == "mem.put"
    assert owner is not None
    assert run.journal.get_step(run.id, seq).state is StepState.SUCCEEDED


@pytest.mark.req("CALL-4")
async def test_a_read_is_told_first_and_journaled_after_in_one_commit(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.data["a"] = "x"
    run = make_run()
    during: list[int] = []
    mem.hooks["mem.get"] = lambda data, ctx: during.append(len(run.steps()))
    told: list[tuple[CallOutcome, int]] = []

    def answer(outcome: CallOutcome) -> None:
        told.append((outcome, len(run.steps())))

    outcome = await run.attempt("mem.get", {"key": "a"}, answer=answer)
    assert during == [0]  # no intent was committed before the read ran
    assert told == [(outcome, 0)]  # told before anything was journaled
    assert outcome.ok
    assert outcome.result == {"value": "x", "exists": True}
    step = run.journal.get_step(run.id, outcome.step or 0)
    assert step.state is StepState.SUCCEEDED  # journaled before attempt() returned
    assert step.result == outcome.result
    assert step.owner is None  # never pending: written finished, in one commit
    assert [e["kind"] for e in run.journal.list_events(run.id)] == []


@pytest.mark.req("CALL-4")
async def test_a_read_in_flight_keeps_its_step_number_beside_other_calls(
    make_run: MakeRun, mem: MemConnector
) -> None:
    import anyio

    run = make_run()
    started, release = anyio.Event(), anyio.Event()

    async def hold(data: dict[str, Any], ctx: CallContext) -> None:
        started.set()
        await release.wait()

    mem.hooks["mem.get"] = hold
    outcomes: list[CallOutcome] = []

    async def read() -> None:
        outcomes.append(await run.attempt("mem.get", {"key": "a"}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await started.wait()  # the read holds step 1, not yet journaled
        rejected = await run.attempt("mem.nope", {})
        mem.hooks.pop("mem.get")
        wrote = await run.attempt("mem.put", {"key": "b", "value": "1"})
        release.set()
    [done] = outcomes
    assert (done.step, rejected.step, wrote.step) == (1, 2, 3)
    assert done.journal_error is None
    states = [(s.seq, s.tool, s.state) for s in run.steps()]
    assert states == [
        (1, "mem.get", StepState.SUCCEEDED),
        (2, "mem.nope", StepState.REJECTED),
        (3, "mem.put", StepState.SUCCEEDED),
    ]


@pytest.mark.req("CALL-3", "CALL-4", "CALL-6", "JNL-2")
async def test_a_write_is_told_only_once_its_outcome_is_journaled(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    told: list[StepState] = []

    def answer(outcome: CallOutcome) -> None:
        assert outcome.step is not None
        told.append(run.journal.get_step(run.id, outcome.step).state)

    await run.attempt("mem.put", {"key": "a", "value": "1"}, answer=answer)
    mem.fault("mem.get", "tool_error", message="backend said no")
    failed = await run.attempt("mem.get", {"key": "a"}, answer=lambda o: told.append(o.state))
    assert told == [StepState.SUCCEEDED, StepState.FAILED]
    assert isinstance(failed.error, ToolError)
    assert failed.error.step == failed.step == 2
    assert [s.state for s in run.steps()] == [StepState.SUCCEEDED, StepState.FAILED]


@pytest.mark.req("CALL-3", "CALL-6", "JNL-2")
async def test_begin_call_commits_a_writes_intent_first_and_its_outcome_before_the_answer(
    make_run: MakeRun, mem: MemConnector
) -> None:
    """The gateway's way (no task): the intent is committed by ``begin_call``; the
    outcome, with its compensation, before ``answer`` hears it."""
    run = make_run()
    call = run.begin_call("mem.put", {"key": "a", "value": "1"}, reason="set")
    assert isinstance(call, WriteCall)
    assert call.key == f"reversi-{run.id}-{call.seq}"
    assert run.journal.get_step(run.id, call.seq).state is StepState.PENDING
    seen: list[StepRecord] = []
    outcome = call.succeeded(
        {"previous": None, "existed": False},
        lambda o: seen.append(run.journal.get_step(run.id, o.step or 0)),
    )
    assert outcome.state is StepState.SUCCEEDED
    [step] = seen
    assert step.state is StepState.SUCCEEDED
    assert step.compensation is not None
    with pytest.raises(RunStateError, match="settled already"):
        call.failed(ToolError("again"))


@pytest.mark.req("CALL-6")
@pytest.mark.parametrize("told", [False, True], ids=["no-answer", "answered"])
async def test_a_write_whose_outcome_cannot_be_journaled(
    make_run: MakeRun, mem: MemConnector, monkeypatch: pytest.MonkeyPatch, told: bool
) -> None:
    """Its effect happened: the outcome is ``uncertain``, says how to resolve the step
    and is what ``answer`` hears; the step stays ``pending`` (found uncertain when the
    journal is next opened), never ``failed``."""
    run = make_run()
    journal = run.journal

    def fail(*args: Any, **kwargs: Any) -> None:
        raise JournalError("disk full (injected by the test)")

    monkeypatch.setattr(journal, "finish_step", fail)
    answers: list[CallOutcome] = []
    outcome = await run.attempt(
        "mem.put", {"key": "a", "value": "1"}, answer=answers.append if told else None
    )
    assert [c.tool for c in mem.calls] == ["mem.put"]  # it ran
    assert isinstance(outcome.journal_error, JournalError)
    assert outcome.state is StepState.UNCERTAIN
    assert isinstance(outcome.error, EffectUncertainError)
    assert outcome.error.step == outcome.step == 1
    assert f"reversi resolve {run.id} 1 --applied" in str(outcome.error)
    # mem.put's compensation reads result.previous and result.existed: the hint gives them
    hint = str(outcome.error).split("adding --result-json ", 1)[1]
    given = json.loads(shlex.split(hint)[0])
    assert given == {"existed": False, "previous": None}
    manifest = run.registry.lookup("mem.put")
    assert manifest is not None
    planned = compensation_for(manifest, {"key": "a", "value": "1"}, given)
    assert planned == ({"tool": "mem.restore", "args": {"key": "a", **given}}, None)
    assert answers == ([outcome] if told else [])
    with pytest.raises(EffectUncertainError, match="could not be journaled"):
        await run.call("mem.put", {"key": "b", "value": "2"})
    monkeypatch.undo()
    assert journal.get_step(run.id, 1).state is StepState.PENDING


@pytest.mark.req("CALL-4")
async def test_a_failing_answer_still_journals_the_read(make_run: MakeRun) -> None:
    run = make_run()

    def broken(outcome: CallOutcome) -> None:
        raise RuntimeError("the client went away")

    with pytest.raises(RuntimeError, match="went away"):
        await run.attempt("mem.get", {"key": "a"}, answer=broken)
    [step] = run.steps()
    assert step.state is StepState.SUCCEEDED
    assert step.result == {"value": None, "exists": False}


# -- a read served without a task: Run.begin_read --------------------------------------


@pytest.mark.req("CALL-4", "CALL-5")
async def test_begin_read_tells_the_answer_first_and_journals_the_read_after(
    make_run: MakeRun,
) -> None:
    run = make_run()
    read = run.begin_read("mem.get", {"key": "a"}, reason="look")
    assert not isinstance(read, CallOutcome)
    assert (read.seq, read.key) == (1, f"reversi-{run.id}-1")
    assert run.steps() == []  # nothing is journaled before the read answered
    told: list[tuple[CallOutcome, int]] = []
    outcome = read.succeeded(
        {"value": "x", "exists": True}, lambda o: told.append((o, len(run.steps())))
    )
    assert told == [(outcome, 0)]  # told before its one commit
    assert (outcome.step, outcome.state, outcome.result) == (
        1,
        StepState.SUCCEEDED,
        {"value": "x", "exists": True},
    )
    [step] = run.steps()
    assert (step.state, step.idempotency_key, step.reason) == (
        StepState.SUCCEEDED,
        read.key,
        "look",
    )
    assert step.result == {"value": "x", "exists": True}
    with pytest.raises(RunStateError, match="settled already"):
        read.succeeded({"value": "y", "exists": True})
    assert len(run.steps()) == 1


@pytest.mark.req("CALL-4", "CALL-6")
async def test_begin_read_maps_a_failure_as_attempt_does(make_run: MakeRun) -> None:
    run = make_run()
    failed = run.begin_read("mem.get", {"key": "a"})
    timed_out = run.begin_read("mem.get", {"key": "b"})
    broken = run.begin_read("mem.get", {"key": "c"})
    assert not isinstance(failed, CallOutcome)
    assert not isinstance(timed_out, CallOutcome)
    assert not isinstance(broken, CallOutcome)
    one = failed.failed(ToolError("backend said no", code="nope"))
    two = timed_out.failed(TimeoutError(), timeout=0.5)
    three = broken.failed(KeyError("bug"))
    assert isinstance(one.error, ToolError)
    assert one.error.code == "nope"
    assert isinstance(two.error, ToolError)
    assert two.error.code == "timeout"
    assert "did not finish within 0.5 s" in str(two.error)
    assert isinstance(three.error, ToolError)
    assert three.error.code == "unexpected"
    assert [o.error.step for o in (one, two, three) if o.error] == [1, 2, 3]
    assert [s.state for s in run.steps()] == [StepState.FAILED] * 3  # a read is never uncertain


@pytest.mark.req("CALL-4")
async def test_a_cancelled_read_from_begin_read_is_journaled_failed(make_run: MakeRun) -> None:
    import asyncio

    run = make_run()
    read = run.begin_read("mem.get", {"key": "a"})
    assert not isinstance(read, CallOutcome)
    read.abandon(asyncio.CancelledError("the client cancelled the call"))
    [step] = run.steps()
    assert step.state is StepState.FAILED
    assert step.error == "unexpected error: CancelledError: the client cancelled the call"


@pytest.mark.req("CALL-1", "CALL-10")
async def test_begin_read_refuses_as_attempt_does(make_run: MakeRun, mem: MemConnector) -> None:
    run = make_run()
    invalid = run.begin_read("mem.get", {"key": 3})
    assert isinstance(invalid, CallOutcome)
    assert isinstance(invalid.error, InvalidArgumentsError)
    assert invalid.step == 1
    with pytest.raises(RunStateError, match="not a read-only tool"):
        run.begin_read("mem.put", {"key": "a", "value": "1"})
    report = await run.rollback(compensate=compensator_for([mem]))
    assert report.complete
    closed = run.begin_read("mem.get", {"key": "a"})
    assert isinstance(closed, CallOutcome)
    assert isinstance(closed.error, RunClosedError)
    assert closed.step is None
    assert [s.state for s in run.steps()] == [StepState.REJECTED]


@pytest.mark.req("CALL-6")
async def test_succeeded_with_compensation_computed_at_call_time(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.data["a"] = "old"
    run = make_run()
    seq, result = await run.call("mem.put", {"key": "a", "value": "new"})
    assert result == {"previous": "old", "existed": True}
    step = run.journal.get_step(run.id, seq)
    assert step.state is StepState.SUCCEEDED
    assert step.result == result
    assert step.finished_at is not None
    assert step.rollback_state is None
    assert step.compensation == {
        "tool": "mem.restore",
        "args": {"key": "a", "previous": "old", "existed": True},
    }
    assert step.compensation_error is None
    # compensable: the prior state travels in the result
    seq2, _ = await run.call("mem.bump", {"name": "n", "by": 5})
    assert run.journal.get_step(run.id, seq2).compensation == {
        "tool": "mem.set_counter",
        "args": {"name": "n", "value": 0},
    }


@pytest.mark.req("CALL-6")
async def test_tool_error_makes_the_step_failed(make_run: MakeRun, mem: MemConnector) -> None:
    mem.fault("mem.put", "tool_error", message="HTTP 409 conflict")
    run = make_run()
    with pytest.raises(ToolError, match="HTTP 409 conflict"):
        await run.call("mem.put", {"key": "a", "value": "1"})
    [step] = run.steps()
    assert step.state is StepState.FAILED
    assert step.error == "HTTP 409 conflict"
    assert step.compensation is None
    assert step.result is None


@pytest.mark.req("CALL-6")
async def test_effect_uncertain_error_makes_the_step_uncertain(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.fault("mem.put", "uncertain", message="connection reset after sending")
    run = make_run()
    with pytest.raises(EffectUncertainError, match="connection reset"):
        await run.call("mem.put", {"key": "a", "value": "1"})
    [step] = run.steps()
    assert step.state is StepState.UNCERTAIN
    assert step.error == "connection reset after sending"
    assert step.compensation is None


@pytest.mark.req("CALL-6")
async def test_unexpected_exception_from_a_writing_tool_makes_the_step_uncertain(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.fault("mem.put", "unexpected", message="boom")
    run = make_run(executor=raw_executor(mem))  # the RuntimeError reaches the engine as is
    with pytest.raises(EffectUncertainError, match="RuntimeError: boom"):
        await run.call("mem.put", {"key": "a", "value": "1"})
    [step] = run.steps()
    assert step.state is StepState.UNCERTAIN
    assert "unexpected error, outcome unknown: RuntimeError: boom" in (step.error or "")


@pytest.mark.req("CALL-6")
async def test_unexpected_exception_through_the_connector_is_uncertain_too(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.fault("mem.put", "unexpected", message="boom")
    run = make_run()  # Connector.call maps the RuntimeError itself
    with pytest.raises(EffectUncertainError, match="outcome unknown"):
        await run.call("mem.put", {"key": "a", "value": "1"})
    assert run.steps()[0].state is StepState.UNCERTAIN


@pytest.mark.req("CALL-6")
async def test_unexpected_exception_from_a_read_only_tool_makes_the_step_failed(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.fault("mem.get", "unexpected", message="bad read")
    run = make_run(executor=raw_executor(mem))
    with pytest.raises(ToolError, match="RuntimeError: bad read") as info:
        await run.call("mem.get", {"key": "a"})
    assert info.value.code == "unexpected"
    [step] = run.steps()
    assert step.state is StepState.FAILED
    assert "bad read" in (step.error or "")


@pytest.mark.req("CALL-6")
async def test_timeout_on_a_write_makes_the_step_uncertain(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.fault("mem.put", "hang")
    run = make_run()
    with pytest.raises(EffectUncertainError, match=r"did not finish within 0\.05 s"):
        await run.call("mem.put", {"key": "a", "value": "1"}, timeout=0.05)
    [step] = run.steps()
    assert step.state is StepState.UNCERTAIN
    assert "may or may not have taken effect" in (step.error or "")


@pytest.mark.req("CALL-6")
async def test_timeout_on_a_read_makes_the_step_failed(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.fault("mem.get", "hang")
    run = make_run()
    with pytest.raises(ToolError, match=r"did not finish within 0\.05 s") as info:
        await run.call("mem.get", {"key": "a"}, timeout=0.05)
    assert info.value.code == "timeout"
    [step] = run.steps()
    assert step.state is StepState.FAILED


@pytest.mark.req("CALL-7")
async def test_result_mapping_failure_is_recorded_at_call_time_and_reported_by_rollback(
    make_run: MakeRun, mem: MemConnector
) -> None:
    # An executor that checks no result (an MCP upstream that is not a Reversi server):
    # the put happens but its result lacks "previous"
    mem.fault("mem.put", "bad_result")
    run = make_run(executor=raw_executor(mem))
    seq, result = await run.call("mem.put", {"key": "a", "value": "1"})
    assert result == {}
    step = run.journal.get_step(run.id, seq)
    assert step.state is StepState.SUCCEEDED
    assert step.compensation is None
    assert step.compensation_error is not None
    assert "result.previous" in step.compensation_error
    report = await run.rollback(compensate=compensator_for([mem]))
    assert mem.calls_of("mem.restore") == []  # never called with missing arguments
    assert not report.complete
    [out] = report.outstanding
    assert out.step == seq
    assert out.state == RollbackState.COMPENSATION_FAILED.value
    assert out.reason == step.compensation_error
    assert run.journal.get_step(run.id, seq).rollback_state is RollbackState.COMPENSATION_FAILED


async def test_a_write_whose_result_its_model_refuses_is_uncertain_naming_the_fields(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.fault("mem.put", "bad_result")  # the put happens, but the result lacks its fields
    run = make_run()
    with pytest.raises(EffectUncertainError) as info:
        await run.call("mem.put", {"key": "a", "value": "1"})
    message = str(info.value)
    assert "result.previous: Field required" in message
    assert "result.existed: Field required" in message
    assert "PutResult" in message
    assert mem.data == {"a": "1"}  # the write did happen: that is why it is not a failure
    [step] = run.steps()
    assert step.state is StepState.UNCERTAIN


async def test_a_read_whose_result_its_model_refuses_is_a_tool_error(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.fault("mem.get", "bad_result")
    run = make_run()
    with pytest.raises(ToolError) as info:
        await run.call("mem.get", {"key": "a"})
    assert info.value.code == "bad_result"
    assert "result.value: Field required" in str(info.value)
    [step] = run.steps()
    assert step.state is StepState.FAILED


class NoArgs(BaseModel):
    pass


class Count(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int


class Echo(Connector):
    """Returns whatever ``reply`` holds, from a read and from a write."""

    name = "echo"
    reply: Any = None

    @tool(effect=Effect.READ_ONLY, permission="echo:read", input=NoArgs, output=Count)
    async def read(self, args: NoArgs, ctx: CallContext) -> Any:
        return self.reply

    @tool(effect=Effect.IDEMPOTENT, permission="echo:write", input=NoArgs, output=Count)
    async def write(self, args: NoArgs, ctx: CallContext) -> Any:
        return self.reply


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        ({"n": "3"}, "result.n: Input should be a valid integer"),  # strict: no conversion
        ({"n": True}, "result.n: Input should be a valid integer"),
        ({"n": 3, "extra": 1}, "result.extra: Extra inputs are not permitted"),
        ({}, "result.n: Field required"),
        (["n", 3], "returned a list, not a JSON object"),
    ],
)
async def test_a_result_is_checked_strictly_against_the_output_model(
    reply: Any, words: str
) -> None:
    echo = Echo()
    echo.reply = reply
    with pytest.raises(ToolError) as read:
        await echo.call("echo.read", {})
    assert read.value.code == "bad_result"
    assert words in str(read.value)
    with pytest.raises(EffectUncertainError, match="cannot be undone automatically") as write:
        await echo.call("echo.write", {})
    assert words in str(write.value)
    echo.reply = {"n": 3}
    assert await echo.call("echo.read", {}) == {"n": 3}


async def test_a_refused_result_names_the_field_but_not_its_value() -> None:
    echo = Echo()
    echo.reply = {"n": "sk-live-not-a-number", "token": "sk-live-extra"}
    with pytest.raises(ToolError) as info:
        await echo.call("echo.read", {})
    assert "result.n" in str(info.value)
    assert "result.token" in str(info.value)
    assert "sk-live" not in str(info.value)


@pytest.mark.req("DEP-1")
async def test_requires_edges_are_recorded_only_to_matching_earlier_steps(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    d1, _ = await run.call("mem.mkdir", {"path": "docs"})
    d2, _ = await run.call("mem.mkdir", {"path": "src"})
    mem.fault("mem.mkdir", "tool_error", times=1)
    with pytest.raises(ToolError):
        await run.call("mem.mkdir", {"path": "docs/api"})  # failed: never a dependency
    inner, _ = await run.call("mem.put", {"key": "docs/api/index", "value": "x"})
    outside, _ = await run.call("mem.put", {"key": "other", "value": "y"})
    prefix, _ = await run.call("mem.put", {"key": "docsx/a", "value": "z"})
    by_seq = {s.seq: s for s in run.steps()}
    assert by_seq[inner].requires == [d1]
    assert by_seq[outside].requires == []
    assert by_seq[prefix].requires == []
    assert by_seq[d2].requires == []


@pytest.mark.req("CALL-5")
async def test_idempotency_key_in_context_is_the_journaled_key(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    s1, _ = await run.call("mem.put", {"key": "a", "value": "1"})
    s2, _ = await run.call("mem.put", {"key": "a", "value": "1"})
    ctxs = [c.ctx for c in mem.calls_of("mem.put")]
    steps = {s.seq: s for s in run.steps()}
    assert [c.idempotency_key for c in ctxs] == [
        steps[s1].idempotency_key,
        steps[s2].idempotency_key,
    ]
    assert ctxs[0].idempotency_key != ctxs[1].idempotency_key
    assert [(c.run_id, c.step, c.compensation) for c in ctxs] == [
        (run.id, s1, False),
        (run.id, s2, False),
    ]


@pytest.mark.req("CALL-8")
async def test_failure_messages_are_journaled_scrubbed(
    make_run: MakeRun, mem: MemConnector, location: str
) -> None:
    secret = f"ghp_{uuid.uuid4().hex}"
    register_secret(secret)
    run = make_run()
    mem.fault("mem.put", "tool_error", times=1, message=f"HTTP 401: token {secret} rejected")
    with pytest.raises(ToolError) as failed:
        await run.call("mem.put", {"key": "a", "value": "1"})
    assert secret in str(failed.value)  # the caller's own exception is the tool's
    mem.fault("mem.put", "uncertain", times=1, message=f"lost connection using {secret}")
    with pytest.raises(EffectUncertainError):
        await run.call("mem.put", {"key": "b", "value": "2"})
    steps = run.steps()
    assert [s.error for s in steps] == [
        "HTTP 401: token [REDACTED] rejected",
        "lost connection using [REDACTED]",
    ]
    raw = stored_bytes(location)
    assert b"HTTP 401: token [REDACTED] rejected" in raw
    assert secret.encode() not in raw


def test_the_result_hint_names_fields_it_cannot_spell_out(registry: Registry) -> None:
    """A result field too long for a message, or missing, is named instead of given; a
    compensation that reads no result needs no hint."""
    manifest = registry.lookup("mem.put")
    assert manifest is not None
    long = {"previous": "x" * RESULT_HINT_CHARS, "existed": True}
    assert result_flag(manifest, long) == (
        ", adding --result-json with a JSON object of the result's existed, previous "
        "(what its compensation needs of it)"
    )
    assert "with a JSON object of the result's existed, previous" in result_flag(
        manifest, {"existed": True}
    )
    quoted = result_flag(manifest, {"previous": "it's", "existed": True, "other": 1})
    assert json.loads(shlex.split(quoted.split("--result-json ", 1)[1])[0]) == {
        "existed": True,
        "previous": "it's",
    }
    for odd in (None, "existed previous", ["existed", "previous"]):  # not a JSON object
        assert "of the result's existed, previous" in result_flag(manifest, odd)
    without = [m for m in registry if m.compensation is not None]
    without = [
        m
        for m in without
        if not any("result." in str(v) for v in m.compensation.argument_map.values())
        and not m.compensation.resources
    ]
    assert without, "the test registry has a compensation that reads only the arguments"
    assert result_flag(without[0], {"anything": 1}) == ""


def test_the_result_hint_reads_nested_sources_and_resource_templates() -> None:
    """A nested source (``result.meta.id``) needs the result's top-level ``meta``; a
    resource template's ``{result.key|lower}`` needs ``key``; ``args.`` sources need
    nothing of the result."""
    path_schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    write = {
        "name": "t.write",
        "effect": "reversible",
        "permission": "t:write",
        "input_schema": path_schema,
        "output_schema": {
            "type": "object",
            "properties": {
                "meta": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}},
                    "required": ["id"],
                },
                "key": {"type": "string"},
                "size": {"type": "integer"},
            },
            "required": ["meta", "key"],
        },
        "compensation": {
            "tool": "t.undo",
            "argument_map": {"path": "args.path", "id": "result.meta.id"},
            "resources": ["thing:{result.key|lower}", "file:{args.path}"],
        },
    }
    undo = {
        "name": "t.undo",
        "effect": "idempotent",
        "permission": "t:undo",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "id": {"type": "string"}},
            "required": ["path", "id"],
        },
    }
    manifest = Registry.from_manifests([write, undo]).lookup("t.write")
    assert manifest is not None
    hint = result_flag(manifest, {"meta": {"id": "m-1"}, "key": "K", "size": 3})
    assert json.loads(shlex.split(hint.split("--result-json ", 1)[1])[0]) == {
        "key": "K",
        "meta": {"id": "m-1"},
    }
    assert "of the result's key, meta " in result_flag(manifest, {"size": 3})
