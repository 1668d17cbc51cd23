"""A rollback (docs/engine.md, "A rollback"): each rule as its own test."""

from __future__ import annotations

import json
import time
import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from _memconnector import MemConnector, raw_compensator
from _stores import stored_bytes

from reversi_core import (
    ApprovalRequest,
    CompensationCall,
    EffectUncertainError,
    JournalError,
    PermissionDenied,
    Registry,
    RollbackInProgressError,
    Run,
    RunClosedError,
    RunStateError,
    RunStatus,
    StepRecord,
    StepState,
    ToolError,
    UnknownToolError,
    compensation_key,
    compensator_for,
    register_secret,
)
from reversi_core.journal import Journal, RollbackState, open_journal

pytestmark = pytest.mark.anyio

MakeRun = Callable[..., Run]


def states(run: Run) -> dict[int, RollbackState | None]:
    return {s.seq: s.rollback_state for s in run.steps()}


@pytest.mark.req("RB-1")
async def test_steps_are_undone_newest_first(make_run: MakeRun, mem: MemConnector) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    await run.call("mem.put", {"key": "a", "value": "2"})
    await run.call("mem.bump", {"name": "n", "by": 3})
    await run.call("mem.put", {"key": "b", "value": "3"})
    assert mem.data == {"a": "2", "b": "3"}
    report = await run.rollback(compensate=compensator_for([mem]))
    order = [c.ctx.step for c in mem.calls if c.ctx.compensation]
    assert order == [4, 3, 2, 1]
    assert [c.tool for c in mem.calls if c.ctx.compensation] == [
        "mem.restore",
        "mem.set_counter",
        "mem.restore",
        "mem.restore",
    ]
    assert report.compensated_now == [4, 3, 2, 1]
    assert [s.seq for s in report.steps] == [4, 3, 2, 1]
    assert mem.data == {}
    assert mem.counters == {"n": 0}
    assert report.complete


@pytest.mark.req("RB-1")
async def test_read_only_failed_and_rejected_steps_are_not_applicable(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    await run.call("mem.get", {"key": "a"})
    mem.fault("mem.put", "tool_error", times=1)
    with pytest.raises(ToolError):
        await run.call("mem.put", {"key": "a", "value": "1"})
    with pytest.raises(UnknownToolError):
        await run.call("mem.nope", {})
    report = await run.rollback(compensate=compensator_for([mem]))
    assert [c for c in mem.calls if c.ctx.compensation] == []
    assert report.complete
    by_seq = {s.seq: s for s in report.steps}
    assert [by_seq[i].state for i in (1, 2, 3)] == [
        StepState.SUCCEEDED,
        StepState.FAILED,
        StepState.REJECTED,
    ]
    assert all(s.rollback_state is RollbackState.NOT_APPLICABLE for s in report.steps)
    assert "read-only" in (by_seq[1].rollback_reason or "")
    assert "failed" in (by_seq[2].rollback_reason or "")
    assert "rejected" in (by_seq[3].rollback_reason or "")


@pytest.mark.req("RB-2")
async def test_succeeded_irreversible_step_is_unrecoverable_and_listed(
    make_run: MakeRun, mem: MemConnector
) -> None:
    async def yes(request: ApprovalRequest) -> bool:
        return True

    run = make_run(scope=["mem:write", "mem:publish"], approver=yes)
    await run.call("mem.put", {"key": "a", "value": "1"})
    seq, _ = await run.call("mem.publish", {"message": "hello world"})
    report = await run.rollback(compensate=compensator_for([mem]))
    assert not report.complete
    assert [u.step for u in report.unrecoverable] == [seq]
    assert report.unrecoverable[0].state == "unrecoverable"
    assert "irreversible" in report.unrecoverable[0].reason
    assert [o.step for o in report.outstanding] == [seq]
    assert states(run) == {1: RollbackState.COMPENSATED, seq: RollbackState.UNRECOVERABLE}
    assert report.to_json()["status"] == "incomplete"
    assert run.record.status is RunStatus.ROLLBACK_INCOMPLETE


@pytest.mark.req("RB-2")
async def test_idempotent_tool_called_by_the_agent_is_unrecoverable(
    make_run: MakeRun, mem: MemConnector
) -> None:
    mem.data["a"] = "precious"
    run = make_run(scope=["mem:delete"])
    seq, _ = await run.call("mem.delete", {"key": "a"})
    report = await run.rollback(compensate=compensator_for([mem]))
    assert [u.step for u in report.unrecoverable] == [seq]
    assert "idempotent" in report.unrecoverable[0].reason
    assert not report.complete
    assert [c for c in mem.calls if c.ctx.compensation] == []


@pytest.mark.req("RB-3")
async def test_unresolved_uncertain_step_is_reported_not_compensated(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    mem.fault("mem.put", "uncertain", message="socket closed mid-request")
    with pytest.raises(EffectUncertainError):
        await run.call("mem.put", {"key": "a", "value": "1"})
    report = await run.rollback(compensate=compensator_for([mem]))
    assert mem.calls_of("mem.restore") == []
    assert not report.complete
    [out] = report.outstanding
    assert (out.step, out.state) == (1, "uncertain")
    assert "socket closed mid-request" in out.reason
    assert f"reversi resolve {run.id} 1" in out.reason
    assert run.journal.get_step(run.id, 1).rollback_state is None
    assert report.unrecoverable == []


@pytest.mark.req("RB-3", "RES-1")
async def test_resolved_applied_step_is_compensated_on_the_next_rollback(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    mem.fault("mem.put", "uncertain", times=1)
    with pytest.raises(EffectUncertainError):
        await run.call("mem.put", {"key": "a", "value": "1"})
    first = await run.rollback(compensate=compensator_for([mem]))
    assert not first.complete
    mem.data["a"] = "1"  # a person looked: the write did happen
    step = run.resolve(1, applied=True, result={"previous": None, "existed": False})
    assert step.resolution == "applied"
    assert step.compensation == {
        "tool": "mem.restore",
        "args": {"key": "a", "previous": None, "existed": False},
    }
    second = await run.rollback(compensate=compensator_for([mem]))
    assert second.complete
    assert second.compensated_now == [1]
    assert mem.data == {}
    assert [e["kind"] for e in run.journal.list_events(run.id)].count("resolved") == 1


@pytest.mark.req("RES-1")
async def test_a_resolution_records_who_decided_and_a_new_one_replaces_it(
    make_run: MakeRun, mem: MemConnector
) -> None:
    """On both stores: the name is in the step and in its ``resolved`` event, in one write."""
    run = make_run()
    mem.fault("mem.put", "uncertain", times=2)
    for key in ("a", "b"):
        with pytest.raises(EffectUncertainError):
            await run.call("mem.put", {"key": key, "value": "1"})
    register_secret("ann-secret-who")
    assert run.resolve(1, applied=False, decided_by="ann").resolved_by == "ann"
    again = run.resolve(1, applied=True, decided_by="bob ann-secret-who ")
    assert (again.resolution, again.resolved_by) == ("applied", "bob [REDACTED]")
    assert run.resolve(2, applied=False, decided_by="  ").resolved_by is None  # blank: no name
    assert run.resolve(2, applied=False).resolved_by is None
    resolved = [
        (e["step"], e["detail"]) for e in run.journal.list_events(run.id) if e["kind"] == "resolved"
    ]
    assert resolved == [
        (1, {"applied": False, "by": "ann"}),
        (1, {"applied": True, "by": "bob [REDACTED]"}),
        (2, {"applied": False, "by": None}),
        (2, {"applied": False, "by": None}),
    ]
    stored = run.journal.get_step(run.id, 1)
    assert stored.resolved_by == "bob [REDACTED]"
    assert stored.to_json()["resolved_by"] == "bob [REDACTED]"


@pytest.mark.req("RES-1")
async def test_resolved_applied_without_result_reports_why(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    mem.fault("mem.put", "uncertain", times=1)
    with pytest.raises(EffectUncertainError):
        await run.call("mem.put", {"key": "a", "value": "1"})
    step = run.resolve(1, applied=True)
    assert step.compensation is None
    assert "resolve it again with the result" in (step.compensation_error or "")
    report = await run.rollback(compensate=compensator_for([mem]))
    assert mem.calls_of("mem.restore") == []
    assert report.outstanding[0].state == "compensation_failed"


@pytest.mark.req("RB-3")
async def test_resolved_not_applied_step_is_not_applicable(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    mem.fault("mem.put", "uncertain", times=1)
    with pytest.raises(EffectUncertainError):
        await run.call("mem.put", {"key": "a", "value": "1"})
    run.resolve(1, applied=False)
    report = await run.rollback(compensate=compensator_for([mem]))
    assert report.complete
    assert states(run) == {1: RollbackState.NOT_APPLICABLE}
    assert "not applied" in (report.steps[0].rollback_reason or "")
    assert mem.calls_of("mem.restore") == []


@pytest.mark.req("RES-1")
async def test_resolving_an_already_compensated_step_raises(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    mem.fault("mem.put", "uncertain", times=1)
    with pytest.raises(EffectUncertainError):
        await run.call("mem.put", {"key": "a", "value": "1"})
    run.resolve(1, applied=True, result={"previous": None, "existed": False})
    assert (await run.rollback(compensate=compensator_for([mem]))).complete
    with pytest.raises(RunStateError, match="already compensated"):
        run.resolve(1, applied=True, result={"previous": None, "existed": False})
    again = await run.rollback(compensate=compensator_for([mem]))
    assert again.complete
    assert len(mem.calls_of("mem.restore")) == 1  # never undone twice


@pytest.mark.req("RES-1")
async def test_resolving_a_step_that_is_not_uncertain_raises(make_run: MakeRun) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    with pytest.raises(RunStateError, match="succeeded, not uncertain"):
        run.resolve(1, applied=False)
    assert run.journal.get_step(run.id, 1).resolution is None


@pytest.mark.req("RB-4")
async def test_required_step_is_deferred_while_its_dependent_stands_then_completes(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    await run.call("mem.mkdir", {"path": "d"})  # 1
    await run.call("mem.put", {"key": "d/x", "value": "1"})  # 2 requires 1
    await run.call("mem.put", {"key": "other", "value": "2"})  # 3
    assert run.journal.get_step(run.id, 2).requires == [1]
    mem.fault("mem.restore", "tool_error", when={"key": "d/x"}, message="backend down")
    first = await run.rollback(compensate=compensator_for([mem]))
    assert not first.complete
    assert states(run) == {
        3: RollbackState.COMPENSATED,
        2: RollbackState.COMPENSATION_FAILED,
        1: RollbackState.DEFERRED,
    }
    deferred = next(o for o in first.outstanding if o.step == 1)
    assert "required by step(s) 2" in deferred.reason
    assert mem.calls_of("mem.rmdir") == []  # never attempted while d/x may still exist
    assert len(mem.calls_of("mem.restore")) == 2

    mem.clear_faults()
    second = await run.rollback(compensate=compensator_for([mem]))
    assert second.complete
    assert second.compensated_now == [2, 1]
    restores = [c.args["key"] for c in mem.calls_of("mem.restore")]
    assert restores.count("other") == 1  # the compensation that succeeded is not re-run
    assert restores.count("d/x") == 2
    assert len(mem.calls_of("mem.rmdir")) == 1
    assert mem.data == {}
    assert mem.dirs == set()
    assert run.record.status is RunStatus.ROLLED_BACK


@pytest.mark.req("RB-4")
async def test_required_step_is_deferred_while_its_dependent_is_uncertain(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    await run.call("mem.mkdir", {"path": "d"})
    mem.fault("mem.put", "uncertain", times=1)
    with pytest.raises(EffectUncertainError):
        await run.call("mem.put", {"key": "d/x", "value": "1"})
    report = await run.rollback(compensate=compensator_for([mem]))
    assert states(run)[1] is RollbackState.DEFERRED
    assert mem.calls_of("mem.rmdir") == []
    assert {o.step for o in report.outstanding} == {1, 2}


@pytest.mark.req("RB-5")
async def test_compensation_key_is_the_same_on_every_attempt_and_depends_on_run_and_step(
    make_run: MakeRun, mem: MemConnector, journal: Journal, registry: Registry, location: str
) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    await run.call("mem.put", {"key": "b", "value": "2"})
    mem.fault("mem.restore", "tool_error", times=2)
    first = await run.rollback(compensate=compensator_for([mem]))
    assert not first.complete
    # a second attempt from another journal handle and another Run object
    other = open_journal(location, create=False)
    try:
        again = Run.open(other, registry, run.id)
        second = await again.rollback(compensate=compensator_for([mem]))
    finally:
        other.close()
    assert second.complete
    keys: dict[int, list[str | None]] = {}
    for c in mem.calls_of("mem.restore"):
        assert c.ctx.step is not None
        keys.setdefault(c.ctx.step, []).append(c.ctx.idempotency_key)
    assert keys == {
        2: [compensation_key(run.id, 2)] * 2,
        1: [compensation_key(run.id, 1)] * 2,
    }
    assert compensation_key(run.id, 1) != compensation_key(run.id, 2)
    assert compensation_key(run.id, 1) != compensation_key("run_other", 1)
    assert compensation_key(run.id, 1) != journal.get_step(run.id, 1).idempotency_key


@pytest.mark.req("RB-6")
async def test_compensation_error_is_kept_scrubbed(
    make_run: MakeRun, mem: MemConnector, journal: Journal, location: str
) -> None:
    secret = f"sk/{uuid.uuid4().hex}+Z"
    quoted = urllib.parse.quote(secret, safe="")
    register_secret(secret)
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    mem.fault("mem.restore", "unexpected", message=f"auth failed for {secret} (url ?t={quoted})")
    report = await run.rollback(
        compensate=raw_compensator(mem)
    )  # the raw RuntimeError reaches the engine
    [out] = report.outstanding
    assert out.state == "compensation_failed"
    assert "auth failed for [REDACTED] (url ?t=[REDACTED])" in out.reason
    assert "RuntimeError" in out.reason
    texts = [
        json.dumps(report.to_json()),
        json.dumps([s.to_json() for s in journal.list_steps(run.id)]),
        json.dumps(journal.list_events(run.id)),
    ]
    for text in texts:
        assert secret not in text
        assert quoted not in text
    assert "[REDACTED]" in texts[1]
    raw = stored_bytes(location)
    assert b"auth failed for [REDACTED]" in raw  # the reason is there, scrubbed
    assert secret.encode() not in raw
    assert quoted.encode() not in raw


@pytest.mark.req("RB-6")
async def test_verify_returning_false_is_verification_failed_not_compensated(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    checked: list[tuple[int, dict[str, Any]]] = []

    async def verify(step: StepRecord, result: dict[str, Any]) -> bool:
        checked.append((step.seq, result))
        return False

    report = await run.rollback(compensate=compensator_for([mem]), verify=verify)
    assert checked == [(1, {"key": "a"})]
    assert report.compensated_now == []
    assert not report.complete
    assert report.outstanding[0].state == "verification_failed"
    assert states(run) == {1: RollbackState.VERIFICATION_FAILED}

    async def ok(step: StepRecord, result: dict[str, Any]) -> bool:
        return True

    again = await run.rollback(compensate=compensator_for([mem]), verify=ok)
    assert again.complete
    assert states(run) == {1: RollbackState.COMPENSATED}


@pytest.mark.req("RB-6")
async def test_verify_raising_is_verification_failed(make_run: MakeRun, mem: MemConnector) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})

    async def broken(step: StepRecord, result: dict[str, Any]) -> bool:
        raise RuntimeError("cannot reach the backend to check")

    report = await run.rollback(compensate=compensator_for([mem]), verify=broken)
    [out] = report.outstanding
    assert out.state == "verification_failed"
    assert "RuntimeError: cannot reach the backend to check" in out.reason


@pytest.mark.req("RB-7")
async def test_rollback_is_complete_only_when_every_step_is_compensated_or_not_applicable(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    await run.call("mem.get", {"key": "a"})
    await run.call("mem.put", {"key": "a", "value": "1"})
    with pytest.raises(PermissionDenied):
        await run.call("mem.delete", {"key": "a"})
    report = await run.rollback(compensate=compensator_for([mem]))
    assert report.complete
    assert report.outstanding == []
    assert report.to_json()["status"] == "complete"
    assert {s.rollback_state for s in report.steps} == {
        RollbackState.COMPENSATED,
        RollbackState.NOT_APPLICABLE,
    }
    assert run.record.status is RunStatus.ROLLED_BACK

    run2 = make_run()
    await run2.call("mem.put", {"key": "b", "value": "1"})
    await run2.call("mem.put", {"key": "c", "value": "1"})
    mem.fault("mem.restore", "tool_error", when={"key": "b"})
    report2 = await run2.rollback(compensate=compensator_for([mem]))
    assert not report2.complete
    assert [o.step for o in report2.outstanding] == [1]
    assert run2.record.status is RunStatus.ROLLBACK_INCOMPLETE


@pytest.mark.req("RB-8")
async def test_compensations_run_outside_the_agent_scope(
    make_run: MakeRun, mem: MemConnector, registry: Registry
) -> None:
    assert "mem:restore" not in registry.default_scope()
    run = make_run(scope=["mem:write"])
    await run.call("mem.put", {"key": "a", "value": "1"})
    with pytest.raises(PermissionDenied, match="mem:restore"):
        await run.call("mem.restore", {"key": "a", "existed": False})  # the agent itself cannot
    report = await run.rollback(compensate=compensator_for([mem]))
    assert report.complete
    assert mem.data == {}
    assert run.scope == frozenset({"mem:write"})


@pytest.mark.req("RB-8")
async def test_compensations_never_ask_the_approver(make_run: MakeRun, mem: MemConnector) -> None:
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> bool:
        asked.append(request.tool)
        return True

    run = make_run(approver=approver)
    await run.call("mem.guarded_put", {"key": "a", "value": "1"})
    assert asked == ["mem.guarded_put"]
    report = await run.rollback(compensate=compensator_for([mem]))
    assert report.complete
    assert asked == ["mem.guarded_put"]
    assert len(mem.calls_of("mem.restore")) == 1


@pytest.mark.req("CALL-10")
async def test_rolled_back_run_takes_no_new_calls(make_run: MakeRun, mem: MemConnector) -> None:
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> bool:
        asked.append(request.tool)
        return True

    run = make_run(approver=approver)
    await run.call("mem.put", {"key": "a", "value": "1"})
    await run.rollback(compensate=compensator_for([mem]))
    before = len(mem.calls)
    with pytest.raises(RunClosedError, match="rolled back"):
        await run.call("mem.put", {"key": "b", "value": "2"})
    with pytest.raises(RunClosedError, match="rolled back"):
        await run.call("mem.guarded_put", {"key": "b", "value": "2"})
    with pytest.raises(RunClosedError, match="rolled back"):
        await run.call("mem.nope", {})
    assert asked == []  # nobody is asked to approve a call on a closed run
    assert len(mem.calls) == before
    assert [s.seq for s in run.steps()] == [1]


@pytest.mark.req("CALL-10")
async def test_incompletely_rolled_back_run_takes_no_new_calls(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    mem.fault("mem.restore", "tool_error")
    report = await run.rollback(compensate=compensator_for([mem]))
    assert not report.complete
    with pytest.raises(RunClosedError):
        await run.call("mem.put", {"key": "b", "value": "2"})
    assert len(run.steps()) == 1


@pytest.mark.req("RB-9")
async def test_second_rollback_in_the_same_process_refuses_while_the_first_runs(
    make_run: MakeRun, mem: MemConnector, registry: Registry, location: str
) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    await run.call("mem.put", {"key": "b", "value": "2"})
    started = anyio.Event()
    release = anyio.Event()
    inner = compensator_for([mem])

    async def slow(call: CompensationCall) -> dict[str, Any]:
        started.set()
        await release.wait()
        return await inner(call)

    outcome: dict[str, Any] = {}

    async def first() -> None:
        outcome["first"] = await run.rollback(compensate=slow)

    other = open_journal(location, create=False)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await started.wait()
            for journal in (run.journal, other):
                with pytest.raises(RollbackInProgressError, match="being rolled back"):
                    await Run.open(journal, registry, run.id).rollback(compensate=inner)
            release.set()
    finally:
        other.close()
    assert outcome["first"].complete
    assert len(mem.calls_of("mem.restore")) == 2


@pytest.mark.req("RB-7")
async def test_interrupted_rollback_resumes_without_rerunning_done_compensations(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    for key in ("a", "b", "c"):
        await run.call("mem.put", {"key": key, "value": "1"})
    mem.fault("mem.restore", "interrupt", when={"key": "b"}, times=1)  # Ctrl-C during the 2nd
    with pytest.raises(KeyboardInterrupt):
        await run.rollback(compensate=compensator_for([mem]))
    assert states(run) == {3: RollbackState.COMPENSATED, 2: None, 1: None}
    assert run.record.status is RunStatus.ROLLBACK_INCOMPLETE  # the lock was released
    report = await run.rollback(compensate=compensator_for([mem]))
    assert report.complete
    assert report.compensated_now == [2, 1]
    assert [c.args["key"] for c in mem.calls_of("mem.restore")] == ["c", "b", "b", "a"]
    assert mem.data == {}


@pytest.mark.req("RB-7")
async def test_cancelled_rollback_resumes_without_rerunning_done_compensations(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    for key in ("a", "b", "c"):
        await run.call("mem.put", {"key": key, "value": "1"})
    inner = compensator_for([mem])
    with anyio.CancelScope() as scope:

        async def cancel_on_second(call: CompensationCall) -> dict[str, Any]:
            if call.step == 2:
                scope.cancel()
                await anyio.sleep(0.2)  # shielded, without a timeout too: not cut short
            return await inner(call)

        await run.rollback(compensate=cancel_on_second)
    assert scope.cancelled_caught
    # the compensation running when the cancellation came finished and was journaled;
    # the rollback stopped before the next one
    assert states(run) == {3: RollbackState.COMPENSATED, 2: RollbackState.COMPENSATED, 1: None}
    assert run.record.status is RunStatus.ROLLBACK_INCOMPLETE
    report = await run.rollback(compensate=inner)
    assert report.complete
    assert [c.args["key"] for c in mem.calls_of("mem.restore")] == ["c", "b", "a"]


@pytest.mark.parametrize("parallel", [1, 8])
async def test_progress_callback_sees_each_decision(
    make_run: MakeRun, mem: MemConnector, parallel: int
) -> None:
    run = make_run()
    await run.call("mem.get", {"key": "a"})
    await run.call("mem.put", {"key": "a", "value": "1"})
    seen: list[tuple[int, RollbackState | None]] = []
    began: list[int] = []
    await run.rollback(
        compensate=compensator_for([mem]),
        progress=lambda step, state, reason: seen.append((step.seq, state)),
        started=lambda step: began.append(step.seq),
        parallel=parallel,
    )
    expected = [(2, RollbackState.COMPENSATED), (1, RollbackState.NOT_APPLICABLE)]
    if parallel == 1:  # one at a time: newest first
        assert seen == expected
    else:  # the read is decided at once, before any compensation runs
        assert seen == expected[::-1]
    assert began == [2]


@pytest.mark.req("RB-6")
async def test_compensation_timeout_counts_as_failure(make_run: MakeRun, mem: MemConnector) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    mem.fault("mem.restore", "hang", times=1)
    report = await run.rollback(compensate=compensator_for([mem]), compensation_timeout=0.05)
    assert report.outstanding[0].state == "compensation_failed"
    assert "did not finish within 0.05 s" in report.outstanding[0].reason
    again = await run.rollback(compensate=compensator_for([mem]), compensation_timeout=5)
    assert again.complete


# -- RB-10: a compensation overwrites a later change only when a person said so -------


@pytest.mark.req("RB-10")
async def test_no_compensation_is_told_to_overwrite_unless_a_person_allowed_it(
    make_run: MakeRun, mem: MemConnector, journal: Journal
) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    await run.call("mem.put", {"key": "b", "value": "2"})
    assert all(not c.ctx.overwrite for c in mem.calls)  # a forward call never carries it
    before = time.time()
    step = run.allow_overwrite(1, by="alice")
    assert step.overwrite is not None
    assert step.overwrite["by"] == "alice"
    assert before <= step.overwrite["at"] <= time.time()
    assert journal.get_step(run.id, 1).overwrite == step.overwrite
    assert journal.get_step(run.id, 2).overwrite is None
    [event] = [e for e in journal.list_events(run.id) if e["kind"] == "overwrite_allowed"]
    assert event["step"] == 1
    assert event["detail"] == step.overwrite
    report = await run.rollback(compensate=compensator_for([mem]))
    assert report.complete
    told = {c.ctx.step: c.ctx.overwrite for c in mem.calls_of("mem.restore")}
    assert told == {2: False, 1: True}
    started = [e for e in journal.list_events(run.id) if e["kind"] == "compensation_started"]
    assert {e["step"]: e["detail"].get("overwrite") for e in started} == {
        2: None,
        1: step.overwrite,
    }


@pytest.mark.req("RB-10")
async def test_the_decision_is_in_the_compensation_call_and_holds_for_later_rollbacks(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    await run.call("mem.put", {"key": "a", "value": "1"})
    run.allow_overwrite(1, by="alice")
    mem.fault("mem.restore", "tool_error", times=1)
    sent: list[CompensationCall] = []
    compensate = compensator_for([mem])

    async def keep(call: CompensationCall) -> dict[str, Any]:
        sent.append(call)
        return await compensate(call)

    first = await run.rollback(compensate=keep)
    assert not first.complete
    second = await run.rollback(compensate=keep)
    assert second.complete
    assert [c.overwrite for c in sent] == [True, True]
    assert all(c.to_json()["overwrite"] is True for c in sent)


@pytest.mark.req("RB-10")
async def test_only_a_step_with_a_compensation_still_to_run_takes_the_decision(
    make_run: MakeRun, mem: MemConnector
) -> None:
    run = make_run()
    await run.call("mem.get", {"key": "a"})
    mem.fault("mem.put", "tool_error", times=1)
    with pytest.raises(ToolError):
        await run.call("mem.put", {"key": "a", "value": "x"})
    await run.call("mem.put", {"key": "b", "value": "1"})
    for seq, words in ((1, "has no compensation to run"), (2, "has no compensation to run")):
        with pytest.raises(RunStateError, match=words):
            run.allow_overwrite(seq, by="alice")
    with pytest.raises(RunStateError, match="say who"):
        run.allow_overwrite(3, by=" ")
    assert (await run.rollback(compensate=compensator_for([mem]))).complete
    with pytest.raises(RunStateError, match="already compensated"):
        run.allow_overwrite(3, by="alice")
    with pytest.raises(JournalError, match="has no step 9"):
        run.allow_overwrite(9, by="alice")
    assert all(s.overwrite is None for s in run.steps())
