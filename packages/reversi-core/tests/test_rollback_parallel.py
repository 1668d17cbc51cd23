"""A rollback in parallel (docs/engine.md, "Rollback in parallel"): RB-11 to RB-14.

Most tests play runs against the stack backend of ``_stackconnector.py``, whose
compensations fail when they come in the wrong order on one resource, or overlap.
"""

from __future__ import annotations

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
    Run,
    SQLiteJournal,
    StepState,
    compensator_for,
    executor_for,
    registry_for,
)

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
