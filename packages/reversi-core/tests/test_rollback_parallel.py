"""A rollback in parallel (docs/engine.md, "Rollback in parallel"): RB-11 to RB-14.

Most tests play runs against the stack backend of ``_stackconnector.py``, whose
compensations fail when they come in the wrong order on one resource, or overlap.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from _stackconnector import StackBackend, StackConnector
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reversi_core import (
    CompensationCall,
    Journal,
    JournalError,
    Run,
    SQLiteJournal,
    StepRecord,
    StepState,
    compensator_for,
    executor_for,
    registry_for,
)
from reversi_core.journal import RollbackState

SCOPE = ["stk:write", "stk:read"]


@dataclass(frozen=True)
class Op:
    """One call of a generated run: ``tool`` on ``res`` pushing token ``t<index>``."""

    tool: str  # "push", "push_any" or "peek"
    res: str
    after: int | None = None  # the index of an earlier op whose token this one depends on
    forward: str | None = None  # None, "fail", "uncertain" or "lost" (see StackBackend)
    fail_pop: bool = False
    resolve: str | None = None  # for an uncertain step: None, "applied" or "not_applied"


async def play(journal: SQLiteJournal, backend: StackBackend, ops: list[Op]) -> Run:
    """Make the calls of ``ops`` in a new run, and resolve the uncertain ones as told."""
    stk = StackConnector(backend)
    run = Run.start(
        journal,
        registry_for([StackConnector]),
        scope=SCOPE,
        executor=executor_for([stk]),
    )
    for i, op in enumerate(ops):
        token = f"t{i}"
        if op.forward:
            backend.forward[token] = op.forward
        if op.fail_pop:
            backend.fail_pops.add(token)
        if op.tool == "peek":
            outcome = await run.attempt("stk.peek", {"res": op.res})
        else:
            args: dict[str, Any] = {"res": op.res, "token": token}
            if op.after is not None:
                args["after"] = f"t{op.after}"
            outcome = await run.attempt(f"stk.{op.tool}", args)
        if outcome.state is StepState.UNCERTAIN and op.resolve and outcome.step is not None:
            run.resolve(outcome.step, applied=op.resolve == "applied")
    return run


Outcome = tuple[
    dict[str, list[str]], list[tuple[int, str, str | None, str | None]], bool, list[str]
]
"""The stacks, every step's ``(seq, state, rollback state, reason)``, whether the rollback
was complete, and the overlapping pops the backend saw."""


def outcome_of(run: Run, backend: StackBackend, complete: bool) -> Outcome:
    steps = [
        (
            s.seq,
            s.state.value,
            s.rollback_state.value if s.rollback_state else None,
            (s.rollback_reason or "").replace(run.id, "RUN"),  # both ways in one journal
        )
        for s in run.steps()
    ]
    return backend.state(), steps, complete, list(backend.violations)


async def play_and_roll_back(journal: SQLiteJournal, ops: list[Op], parallel: int) -> list[Outcome]:
    """Play ``ops``, roll back with ``parallel``, then once more after the faults are gone."""
    backend = StackBackend()
    run = await play(journal, backend, ops)
    compensate = compensator_for([StackConnector(backend)])
    first = await run.rollback(compensate=compensate, parallel=parallel)
    outcomes = [outcome_of(run, backend, first.complete)]
    backend.fail_pops.clear()
    for step in run.steps():
        if step.state is StepState.UNCERTAIN and step.resolution is None:
            run.resolve(step.seq, applied=True)
    second = await run.rollback(compensate=compensate, parallel=parallel)
    outcomes.append(outcome_of(run, backend, second.complete))
    return outcomes


def both_ways(
    journal: SQLiteJournal, ops: list[Op], parallel: int = 4
) -> tuple[list[Outcome], list[Outcome]]:
    """The outcomes of the sequential rollback and of one with ``parallel``, each in a run of its own."""
    sequential = anyio.run(play_and_roll_back, journal, ops, 1)
    concurrent = anyio.run(play_and_roll_back, journal, ops, parallel)
    return sequential, concurrent


@pytest.fixture(scope="module")
def shared() -> Iterator[SQLiteJournal]:
    """One journal for every example of a property test (opening one takes longer than a run)."""
    with tempfile.TemporaryDirectory() as tmp, SQLiteJournal.open(Path(tmp) / "data") as journal:
        yield journal


@st.composite
def runs(draw: st.DrawFn) -> list[Op]:
    """Runs of up to 24 calls on a few resources, with edges, failures and uncertain steps."""
    count = draw(st.integers(min_value=1, max_value=24))
    ops: list[Op] = []
    for i in range(count):
        tool = draw(st.sampled_from(["push"] * 6 + ["push_any", "peek"]))
        res = draw(st.sampled_from(["a", "b", "c", "d", "a/x"]))
        # each draw shrinks towards the plain case: no edge, no fault
        edge = i > 0 and draw(st.integers(0, 3)) == 3
        after = draw(st.integers(min_value=0, max_value=i - 1)) if edge else None
        forward = draw(st.sampled_from([None] * 8 + ["fail", "uncertain", "lost"]))
        ops.append(
            Op(
                tool=tool,
                res=res,
                after=after,
                forward=forward,
                fail_pop=draw(st.integers(0, 7)) == 7,
                resolve=draw(st.sampled_from([None, "applied", "not_applied"])),
            )
        )
    return ops


@pytest.mark.req("RB-13")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=runs(), parallel=st.sampled_from([2, 3, 8]))
def test_a_parallel_rollback_ends_as_the_sequential_one(
    shared: SQLiteJournal, ops: list[Op], parallel: int
) -> None:
    """Same stacks, same step states and reasons, after the first attempt and after a retry."""
    sequential, concurrent = both_ways(shared, ops, parallel)
    assert concurrent == sequential
    assert concurrent[-1][3] == []  # no two pops of one stack ever overlapped


WRONG_ORDER = [Op("push", "a"), Op("push", "b"), Op("push", "a"), Op("push", "a")]


@pytest.mark.req("RB-13")
def test_the_backend_catches_a_scheduler_that_ignores_resources(
    journal: SQLiteJournal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The oracle of the property test is sharp: a scheduler that forgets resources fails it."""
    sequential, concurrent = both_ways(journal, WRONG_ORDER)
    assert concurrent == sequential
    assert sequential[0][0] == {}  # undone completely
    assert sequential[0][2]

    def requires_only(candidates: Any, dependents: Any) -> dict[int, list[int]]:
        member = {s.seq for s in candidates}
        return {s.seq: [d for d in dependents.get(s.seq, ()) if d in member] for s in candidates}

    monkeypatch.setattr("reversi_core._rollback.waits_for", requires_only)
    sequential, broken = both_ways(journal, WRONG_ORDER)
    assert broken != sequential
    assert broken[0][0] != {}  # a pop came out of order and failed: a token is left


# -- the rules one at a time ---------------------------------------------------------------


def stack_run(journal: SQLiteJournal, backend: StackBackend) -> Run:
    return Run.start(
        journal,
        registry_for([StackConnector]),
        scope=SCOPE,
        executor=executor_for([StackConnector(backend)]),
    )


class Slow:
    """A compensator that takes ``delay`` seconds per call and records what overlapped."""

    def __init__(self, backend: StackBackend, delay: float = 0.02) -> None:
        self.inner = compensator_for([StackConnector(backend)])
        self.delay = delay
        self.running: set[int] = set()
        self.most = 0
        self.started: list[int] = []
        self.finished: list[int] = []

    async def __call__(self, call: CompensationCall) -> dict[str, Any]:
        self.started.append(call.step)
        self.running.add(call.step)
        self.most = max(self.most, len(self.running))
        try:
            await anyio.sleep(self.delay)
            return await self.inner(call)
        finally:
            self.running.discard(call.step)
            self.finished.append(call.step)


async def independent_run(journal: SQLiteJournal, backend: StackBackend, count: int) -> Run:
    run = stack_run(journal, backend)
    for i in range(count):
        await run.call("stk.push", {"res": f"r{i}", "token": f"t{i}"})
    return run


@pytest.mark.anyio
@pytest.mark.req("RB-11")
@pytest.mark.parametrize("parallel", [1, 3, 8])
async def test_independent_compensations_run_at_once_up_to_the_limit(
    journal: SQLiteJournal, parallel: int
) -> None:
    backend = StackBackend()
    run = await independent_run(journal, backend, 12)
    slow = Slow(backend)
    report = await run.rollback(compensate=slow, parallel=parallel)
    assert report.complete
    assert backend.state() == {}
    assert slow.most == parallel
    assert sorted(report.compensated_now) == list(range(1, 13))
    if parallel == 1:  # one at a time, newest first, each its own wave
        assert slow.started == list(range(12, 0, -1))
        assert report.waves == [[s] for s in range(12, 0, -1)]
    else:  # nothing to wait for: one wave, started newest first
        assert slow.started == list(range(12, 0, -1))
        assert report.waves == [list(range(12, 0, -1))]


@pytest.mark.anyio
@pytest.mark.req("RB-11")
async def test_a_parallel_limit_below_one_is_refused_before_anything_happens(
    journal: SQLiteJournal,
) -> None:
    backend = StackBackend()
    run = await independent_run(journal, backend, 1)
    for bad in (0, -2, True):
        with pytest.raises(ValueError, match="parallel must be a whole number of at least 1"):
            await run.rollback(compensate=Slow(backend), parallel=bad)
    assert run.record.status.value == "open"


@pytest.mark.anyio
@pytest.mark.req("RB-12")
async def test_steps_on_one_resource_are_undone_newest_first_while_others_overlap(
    journal: SQLiteJournal,
) -> None:
    backend = StackBackend()
    run = stack_run(journal, backend)
    for i, res in enumerate(["a", "b", "a", "c", "a", "b"]):
        await run.call("stk.push", {"res": res, "token": f"t{i + 1}"})
    slow = Slow(backend)
    report = await run.rollback(compensate=slow, parallel=8)
    assert report.complete
    assert backend.state() == {}
    assert backend.violations == []
    on_a = [s for s in slow.started if s in (1, 3, 5)]
    assert on_a == [5, 3, 1]
    for later, earlier in [(5, 3), (3, 1), (6, 2)]:  # each started after the later one ended
        assert slow.finished.index(later) < slow.started.index(earlier)
    assert slow.most == 3  # a, b and c at once
    assert report.waves == [[6, 5, 4], [3, 2], [1]]


@pytest.mark.anyio
@pytest.mark.req("RB-12")
async def test_a_step_required_by_a_later_one_waits_for_it_and_is_deferred_if_it_stands(
    journal: SQLiteJournal,
) -> None:
    backend = StackBackend()
    run = stack_run(journal, backend)
    await run.call("stk.push", {"res": "a", "token": "t1"})
    await run.call("stk.push", {"res": "b", "token": "t2", "after": "t1"})  # requires step 1
    await run.call("stk.push", {"res": "c", "token": "t3"})
    assert journal.get_step(run.id, 2).requires == [1]
    backend.fail_pops.add("t2")
    slow = Slow(backend)
    report = await run.rollback(compensate=slow, parallel=8)
    states = {s.seq: s.rollback_state for s in report.steps}
    assert states == {
        3: RollbackState.COMPENSATED,
        2: RollbackState.COMPENSATION_FAILED,
        1: RollbackState.DEFERRED,
    }
    assert sorted(slow.started) == [2, 3]
    backend.fail_pops.clear()
    again = await run.rollback(compensate=slow, parallel=8)
    assert again.complete
    assert slow.finished.index(2) < slow.started.index(1)
    assert again.waves == [[2], [1]]


@pytest.mark.anyio
@pytest.mark.req("RB-14")
@pytest.mark.parametrize("timeout", [5, None], ids=["timeout", "no-timeout"])
async def test_an_interrupted_parallel_rollback_starts_nothing_more_and_journals_what_ran(
    journal: SQLiteJournal, timeout: float | None
) -> None:
    backend = StackBackend()
    run = await independent_run(journal, backend, 12)
    slow = Slow(backend, delay=0.2)
    began: list[int] = []
    with anyio.CancelScope() as scope:

        def started(step: StepRecord) -> None:
            began.append(step.seq)
            if len(began) == 3:  # Ctrl-C while three compensations are running
                scope.cancel()

        await run.rollback(
            compensate=slow, started=started, parallel=3, compensation_timeout=timeout
        )
    assert scope.cancelled_caught
    assert began == slow.started == [12, 11, 10]
    assert sorted(slow.finished) == [10, 11, 12]  # each finished, none was cut short
    states = {s.seq: s.rollback_state for s in run.steps()}
    assert {s for s, state in states.items() if state is RollbackState.COMPENSATED} == {10, 11, 12}
    assert all(states[s] is None for s in range(1, 10))
    assert run.record.status.value == "rollback_incomplete"
    again = await run.rollback(compensate=slow, parallel=3)
    assert again.complete
    assert sorted(slow.started) == list(range(1, 13))  # none of the first three twice
    assert backend.state() == {}


@pytest.mark.anyio
async def test_a_journal_failure_in_a_parallel_rollback_is_raised_as_itself(
    journal: SQLiteJournal, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = StackBackend()
    run = await independent_run(journal, backend, 6)
    real = journal.set_rollback_state

    def failing(run_id: str, seq: int, state: Any, reason: Any) -> None:
        if seq == 4:
            raise JournalError("disk full")
        real(run_id, seq, state, reason)

    monkeypatch.setattr(journal, "set_rollback_state", failing)
    with pytest.raises(JournalError, match="disk full"):
        await run.rollback(compensate=Slow(backend), parallel=2)
    monkeypatch.undo()
    assert run.record.status.value == "rollback_incomplete"  # the lock was released
    again = await run.rollback(compensate=Slow(backend), parallel=2)
    assert again.complete


class Uneven(Slow):
    """:class:`Slow`, with the delay of each step's compensation its own."""

    def __init__(self, backend: StackBackend, delays: dict[int, float]) -> None:
        super().__init__(backend)
        self.delays = delays

    async def __call__(self, call: CompensationCall) -> dict[str, Any]:
        self.delay = self.delays.get(call.step, 0.02)
        return await super().__call__(call)


@pytest.mark.anyio
@pytest.mark.req("RB-14")
@pytest.mark.parametrize("timeout", [5, None], ids=["timeout", "no-timeout"])
async def test_a_journal_failure_lets_the_running_compensations_finish_and_journals_them(
    journal: SQLiteJournal, monkeypatch: pytest.MonkeyPatch, timeout: float | None
) -> None:
    """Without a compensation_timeout (the library's default) as with one: the failure
    stops the dispatcher, and the compensations in flight are not cut short."""
    backend = StackBackend()
    run = await independent_run(journal, backend, 6)
    real = journal.set_rollback_state

    def failing(run_id: str, seq: int, state: Any, reason: Any) -> None:
        if seq == 6:
            raise JournalError("disk full")
        real(run_id, seq, state, reason)

    monkeypatch.setattr(journal, "set_rollback_state", failing)
    slow = Uneven(backend, {6: 0.01, 5: 0.3, 4: 0.3})  # 6 fails to journal while 5 and 4 run
    with pytest.raises(JournalError, match="disk full"):
        await run.rollback(compensate=slow, parallel=3, compensation_timeout=timeout)
    assert slow.started == [6, 5, 4]  # none started after the failure
    states = {s.seq: s.rollback_state for s in run.steps()}
    assert states[5] is states[4] is RollbackState.COMPENSATED  # finished, and journaled
    assert all(states[s] is None for s in (1, 2, 3, 6))
    assert set(backend.state()) == {"r0", "r1", "r2"}  # 6, 5 and 4 were undone


# -- the plan (RB-15) -------------------------------------------------------------------------


def rows(data_dir: Path) -> list[str]:
    """Every row of the journal's database, read through a connection of the test's own."""
    connection = sqlite3.connect(f"file:{data_dir / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def journaled(journal: Journal, data_dir: Path, run_id: str) -> object:
    """All the journal holds: every row of a SQLite file, else every run, step and event."""
    if isinstance(journal, SQLiteJournal):
        return rows(data_dir)
    return (journal.list_runs(), journal.list_steps(run_id), journal.list_events(run_id))


async def mixed_run(journal: SQLiteJournal, backend: StackBackend) -> Run:
    """Chains on one resource, independent steps, an edge, an unknown one, and every kind
    of step that no compensation undoes."""
    run = stack_run(journal, backend)
    backend.forward.update({"u": "uncertain", "f": "fail"})
    calls: list[tuple[str, dict[str, Any]]] = [
        ("stk.push", {"res": "a", "token": "t1"}),  # 1
        ("stk.push", {"res": "b", "token": "t2"}),  # 2
        ("stk.push", {"res": "a", "token": "t3"}),  # 3
        ("stk.peek", {"res": "a"}),  # 4 read-only
        ("stk.push", {"res": "c", "token": "u"}),  # 5 uncertain, unresolved
        ("stk.push", {"res": "d", "token": "t6", "after": "t2"}),  # 6 requires 2
        ("stk.push_any", {"res": "e", "token": "t7"}),  # 7 unknown resources
        ("stk.push", {"res": "c", "token": "t8", "after": "u"}),  # 8 requires 5
        ("stk.push", {"res": "f", "token": "f"}),  # 9 failed
        ("stk.push", {"res": "a/x", "token": "t10"}),  # 10 under a
        ("stk.push", {"res": "g", "token": "t11"}),  # 11
    ]
    for tool, args in calls:
        await run.attempt(tool, args)
    return run


@pytest.mark.anyio
@pytest.mark.req("RB-15")
async def test_a_plan_runs_nothing_and_journals_nothing(
    journal: SQLiteJournal, data_dir: Path
) -> None:
    backend = StackBackend()
    run = await mixed_run(journal, backend)
    before, stacks = journaled(journal, data_dir, run.id), backend.state()
    plan = run.plan_rollback(parallel=4)
    assert journaled(journal, data_dir, run.id) == before
    assert backend.state() == stacks
    assert run.record.status.value == "open"  # no lock taken, the run still takes calls
    assert (await run.attempt("stk.peek", {"res": "a"})).state is StepState.SUCCEEDED
    assert plan.run_id == run.id
    assert plan.status == "open"


@pytest.mark.anyio
@pytest.mark.req("RB-15")
@pytest.mark.parametrize("parallel", [1, 4])
async def test_a_plan_is_what_the_rollback_then_does(journal: SQLiteJournal, parallel: int) -> None:
    backend = StackBackend()
    run = await mixed_run(journal, backend)
    plan = run.plan_rollback(parallel=parallel)
    actions = {p.step: p.action for p in plan.steps}
    assert actions == {
        11: "compensate",
        10: "compensate",
        9: "not_applicable",
        8: "compensate",
        7: "compensate",
        6: "compensate",
        5: "uncertain",
        4: "not_applicable",
        3: "compensate",
        2: "compensate",
        1: "compensate",
    }
    if parallel == 1:
        assert plan.waves == [[s] for s in (11, 10, 8, 7, 6, 3, 2, 1)]
    else:
        # 7 (unknown) waits for 11, 10 and 8, and everything older waits for 7 (so 3
        # follows 10, on a/x under a, through it); 1 waits for 3, 2 for 6, which requires it
        assert plan.waves == [[11, 10, 8], [7], [6, 3], [2, 1]]
        by_step = {p.step: p for p in plan.steps}
        assert by_step[7].resources is None
        assert by_step[7].after == [11, 10, 8]
        assert by_step[3].after == [7]
        assert by_step[1].after == [7, 3]
        assert by_step[10].resources == ["stk:a/x"]
        assert by_step[2].after == [7, 6]
    report = await run.rollback(
        compensate=compensator_for([StackConnector(backend)]), parallel=parallel
    )
    assert report.waves == plan.waves
    journaled = {s.seq: s for s in report.steps}
    for planned in plan.steps:
        step = journaled[planned.step]
        if planned.action == "compensate":
            assert step.rollback_state is RollbackState.COMPENSATED
        elif planned.action == "uncertain":
            assert step.rollback_state is None
            assert planned.reason == step.rollback_reason
        else:
            assert step.rollback_state is not None
            assert step.rollback_state.value == planned.action
            assert planned.reason == step.rollback_reason
    assert plan.complete is report.complete is False  # step 5 is left uncertain


@pytest.mark.anyio
@pytest.mark.req("RB-15")
async def test_a_plan_after_a_partial_rollback_shows_what_is_left(journal: SQLiteJournal) -> None:
    backend = StackBackend()
    run = stack_run(journal, backend)
    await run.call("stk.push", {"res": "a", "token": "t1"})
    await run.call("stk.push", {"res": "b", "token": "t2", "after": "t1"})
    await run.call("stk.push", {"res": "c", "token": "t3"})
    backend.fail_pops.add("t2")
    await run.rollback(compensate=compensator_for([StackConnector(backend)]))
    plan = run.plan_rollback()
    assert [(p.step, p.action) for p in plan.steps] == [
        (3, "already_compensated"),
        (2, "compensate"),  # failed before: tried again
        (1, "compensate"),
    ]
    assert plan.waves == [[2], [1]]
    assert plan.to_json()["steps"][1] == {
        "step": 2,
        "tool": "stk.push",
        "action": "compensate",
        "reason": None,
        "wave": 1,
        "compensation": "stk.pop",
        "resources": ["stk:b"],
        "after": [],
    }


@pytest.mark.req("RB-15")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=runs(), parallel=st.sampled_from([1, 3, 8]))
def test_when_every_compensation_succeeds_the_rollback_runs_the_planned_waves(
    shared: SQLiteJournal, ops: list[Op], parallel: int
) -> None:
    # every compensation can succeed: no pop fails, and every uncertain step is resolved
    # applied (left alone, it stands: a pushed token would bury older ones, and what it
    # requires would be deferred, leaving its token on the stack too)
    ops = [
        Op(o.tool, o.res, o.after, o.forward, False, "applied" if o.forward else o.resolve)
        for o in ops
    ]

    async def plan_then_roll_back() -> None:
        backend = StackBackend()
        run = await play(shared, backend, ops)
        plan = run.plan_rollback(parallel=parallel)
        report = await run.rollback(
            compensate=compensator_for([StackConnector(backend)]), parallel=parallel
        )
        assert report.waves == plan.waves
        assert report.complete is plan.complete
        journaled = {s.seq: s for s in report.steps}
        for planned in plan.steps:
            state = journaled[planned.step].rollback_state
            if planned.action in ("compensate", "already_compensated"):
                assert state is RollbackState.COMPENSATED
            elif planned.action == "uncertain":
                assert state is None
            else:
                assert state is not None
                assert state.value == planned.action

    anyio.run(plan_then_roll_back)


def test_the_benchmarks_readme_states_the_default_parallelism() -> None:
    import re
    from pathlib import Path

    from reversi_core.engine import DEFAULT_PARALLEL

    readme = Path(__file__).resolve().parents[3] / "benchmarks" / "README.md"
    text = " ".join(readme.read_text().split())
    stated = re.search(r"the default of `Run\.rollback` \((?:`DEFAULT_PARALLEL`, )?(\d+)\)", text)
    assert stated is not None, "benchmarks/README.md no longer states the default"
    assert int(stated.group(1)) == DEFAULT_PARALLEL
