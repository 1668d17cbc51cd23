"""A run's rollback: the saga of docs/engine.md, newest step first, in parallel where it may.

:func:`rollback` is what :meth:`reversi_core.engine.Run.rollback` runs. It takes the
run's rollback lock in the journal, decides for every step whether it is undone, left
alone, deferred or handed to a person, runs the compensations that apply (each with an
idempotency key derived only from the run and the step), journals every decision as it
is made, and returns a :class:`RollbackReport`.

With ``parallel=1`` it visits the steps one at a time, newest first. With more, the
compensations of steps that neither depend on each other nor touch overlapping
resources run at once, at most ``parallel`` together, in the order of
:mod:`reversi_core._schedule`; the outcome is the sequential one (docs/engine.md,
"Rollback in parallel", RB-11 to RB-14).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel

from ._schedule import Waves, waits_for
from ._tracing import span
from .connector import CompensationCall, Compensator
from .errors import ReversiError
from .journal import Journal, RollbackState, StepRecord, StepState
from .journal._owner import owner_alive
from .manifest import Effect
from .redact import scrub

__all__ = [
    "DEFAULT_PARALLEL",
    "MAX_PARALLEL",
    "OutstandingStep",
    "ProgressCallback",
    "RollbackReport",
    "StartCallback",
    "Verifier",
    "compensation_key",
    "rollback",
]

DEFAULT_PARALLEL = 16
"""How many compensations a rollback runs at once unless told otherwise."""

MAX_PARALLEL = 256
"""The most compensations a rollback runs at once: each may be a process of its own
(``--compensator-cmd``), and past a few dozen a backend's rate limits, not the
rollback, set the pace (docs/performance.md)."""


def check_parallel(parallel: object) -> int:
    """``parallel`` if it is a whole number from 1 to :data:`MAX_PARALLEL`; else
    :class:`ValueError` saying so."""
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise ValueError(f"parallel must be a whole number of at least 1, not {parallel!r}")
    if parallel > MAX_PARALLEL:
        raise ValueError(
            f"parallel must be at most {MAX_PARALLEL} (compensations at once), not {parallel}"
        )
    return parallel


Verifier = Callable[[StepRecord, dict[str, Any]], Awaitable[bool]]
"""Called after a compensation with the step and the compensation's result; ``False`` means not undone."""

ProgressCallback = Callable[[StepRecord, RollbackState | None, str | None], None]
"""Told each decision as it is journaled: ``(step as journaled now, state, reason)``."""

StartCallback = Callable[[StepRecord], None]
"""Told when a step's compensation starts (its ``compensation_started`` event is journaled)."""


def compensation_key(run_id: str, seq: int) -> str:
    """The idempotency key of a step's compensation: derived only from the run and the step."""
    return f"reversi-{run_id}-{seq}-undo"


@dataclass(frozen=True)
class OutstandingStep:
    """A step a rollback did not finish: its number, tool, state and why."""

    step: int
    tool: str
    state: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        """``{"step", "tool", "state", "reason"}``."""
        return {"step": self.step, "tool": self.tool, "state": self.state, "reason": self.reason}


@dataclass
class RollbackReport:
    """The outcome of a rollback.

    ``complete`` is true only when every step is ``compensated`` or ``not_applicable``.
    ``steps`` holds every step newest first as journaled after this attempt;
    ``outstanding`` the ones still to deal with and why; ``unrecoverable`` those a
    person must handle (irreversible, or idempotent calls the agent made itself);
    ``compensated_now`` the steps whose compensation ran and succeeded in this attempt,
    in the order they finished; ``waves`` the steps whose compensation started in this
    attempt, by wave (:mod:`reversi_core._schedule`), newest first within each.
    """

    run_id: str
    complete: bool
    steps: list[StepRecord] = field(default_factory=list)
    outstanding: list[OutstandingStep] = field(default_factory=list)
    unrecoverable: list[OutstandingStep] = field(default_factory=list)
    compensated_now: list[int] = field(default_factory=list)
    waves: list[list[int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON form: ``{"run_id", "complete", "status", "steps": [...], "outstanding": [...], ...}``."""
        return {
            "run_id": self.run_id,
            "complete": self.complete,
            "status": "complete" if self.complete else "incomplete",
            "compensated_now": self.compensated_now,
            "waves": self.waves,
            "outstanding": [o.to_json() for o in self.outstanding],
            "unrecoverable": [o.to_json() for o in self.unrecoverable],
            "steps": [
                {
                    "step": s.seq,
                    "tool": s.tool,
                    "state": s.state.value,
                    "resolution": s.resolution,
                    "rollback_state": s.rollback_state.value if s.rollback_state else None,
                    "reason": s.rollback_reason,
                }
                for s in self.steps
            ],
        }


async def rollback(
    journal: Journal,
    run_id: str,
    *,
    compensate: Compensator,
    verify: Verifier | None = None,
    progress: ProgressCallback | None = None,
    started: StartCallback | None = None,
    compensation_timeout: float | None = None,
    parallel: int = DEFAULT_PARALLEL,
) -> RollbackReport:
    """Undo the run ``run_id``; see :meth:`reversi_core.engine.Run.rollback`."""
    check_parallel(parallel)
    journal.start_rollback(run_id)
    complete = False
    report = RollbackReport(run_id=run_id, complete=False)
    saga = _Saga(
        journal, run_id, compensate, verify, compensation_timeout, report, progress, started
    )
    try:
        steps = journal.list_steps(run_id)
        saga.by_seq = {s.seq: s for s in steps}
        for s in steps:
            for r in s.requires:
                saga.dependents.setdefault(r, []).append(s.seq)
        newest_first = sorted(steps, key=lambda s: s.seq, reverse=True)
        if parallel == 1:
            await saga.one_at_a_time(newest_first)
        else:
            await saga.concurrently(newest_first, parallel)
        by_seq = saga.by_seq
        final = [by_seq[s] for s in sorted(by_seq, reverse=True)]
        report.steps = final
        report.waves = [sorted(w, reverse=True) for w in saga.waves.waves]
        for s in final:
            if s.rollback_state in (RollbackState.COMPENSATED, RollbackState.NOT_APPLICABLE):
                continue
            entry = OutstandingStep(
                s.seq,
                s.tool,
                s.rollback_state.value if s.rollback_state else s.state.value,
                s.rollback_reason or s.error or "outstanding",
            )
            report.outstanding.append(entry)
            if s.rollback_state is RollbackState.UNRECOVERABLE:
                report.unrecoverable.append(entry)
        complete = not report.outstanding
        report.complete = complete
    finally:
        journal.finish_rollback(run_id, complete)
    return report


def _stands(s: StepRecord) -> bool:
    return s.may_have_applied and s.rollback_state not in (
        RollbackState.COMPENSATED,
        RollbackState.NOT_APPLICABLE,
    )


Decision = tuple[RollbackState | None, str | None]


def settled_without_compensation(step: StepRecord, run_id: str) -> Decision | None:
    """The decision for a step whose compensation cannot run, or ``None`` for a candidate.

    A candidate is a step whose compensation runs unless a later step that requires it
    still stands (then it is deferred). Every other step is decided here, from its own
    record alone: done in an earlier attempt, not applicable, uncertain (``None`` state,
    with how to resolve it), compensation failed (none could be computed) or
    unrecoverable.
    """
    if step.rollback_state in (RollbackState.COMPENSATED, RollbackState.NOT_APPLICABLE):
        return step.rollback_state, step.rollback_reason  # done in an earlier attempt
    if step.state in (StepState.REJECTED, StepState.FAILED):
        return RollbackState.NOT_APPLICABLE, f"step {step.state.value}: nothing was changed"
    if step.effect == Effect.READ_ONLY.value:
        return RollbackState.NOT_APPLICABLE, "read-only: nothing to undo"
    if step.state in (StepState.UNCERTAIN, StepState.PENDING):
        if step.resolution == "not_applied":
            return RollbackState.NOT_APPLICABLE, "resolved as not applied"
        if step.resolution is None:
            if step.state is StepState.PENDING:
                return None, pending_reason(step, run_id)
            return (
                None,
                f"outcome uncertain: {step.error or 'unknown'}; resolve it with "
                f"'reversi resolve {run_id} {step.seq} --applied|--not-applied', "
                "then roll back again",
            )
    # The step (may have) applied. Can it be undone?
    if step.compensation is None:
        if step.compensation_error:
            return RollbackState.COMPENSATION_FAILED, step.compensation_error
        if step.effect == Effect.IRREVERSIBLE.value:
            return RollbackState.UNRECOVERABLE, "irreversible: a person must undo it by hand"
        return (
            RollbackState.UNRECOVERABLE,
            f"{step.effect} call made by the agent has no compensation: a person must undo it by hand",
        )
    return None


def pending_reason(step: StepRecord, run_id: str) -> str:
    """Why a pending step (its call started, no outcome journaled) is not undone, as
    ``reversi show`` tells it (:func:`~reversi_core.journal._owner.owner_alive`).

    Its process gone, the step is made uncertain by the next process that opens the
    journal to write it (a rollback, ``reversi resolve``, a gateway), after which a
    resolution is taken. Its process alive, the call may still be running: a resolution
    would be refused, so none is suggested.
    """
    if not owner_alive(step.owner):
        return (
            "pending (process gone): the process that made the call stopped before its "
            "outcome was journaled; it is made uncertain when a process that writes the "
            "journal opens it (a rollback without --dry-run, a gateway, or "
            f"'reversi resolve {run_id} {step.seq} --applied|--not-applied', which then "
            "records whether it took effect)"
        )
    return (
        "still running in another process: the call has no outcome journaled yet; roll "
        "back again once it has finished (or its process has stopped)"
    )


def deferral(standing: list[int]) -> Decision:
    """The decision for a candidate that later, still standing steps require."""
    return (
        RollbackState.DEFERRED,
        "required by step(s) " + ", ".join(map(str, sorted(standing))) + " that still stand",
    )


@dataclass
class _Saga:
    journal: Journal
    run_id: str
    compensate: Compensator
    verify: Verifier | None
    timeout: float | None
    report: RollbackReport
    progress: ProgressCallback | None = None
    started: StartCallback | None = None
    by_seq: dict[int, StepRecord] = field(default_factory=dict)
    dependents: dict[int, list[int]] = field(default_factory=dict)
    waves: Waves = field(default_factory=lambda: Waves({}))

    def standing(self, step: StepRecord) -> list[int]:
        """The later steps requiring ``step`` that still stand, as decided so far."""
        return [d for d in self.dependents.get(step.seq, []) if _stands(self.by_seq[d])]

    def record(self, step: StepRecord, decision: Decision) -> None:
        """Journal a decision (when it changes the step), then tell ``progress``.

        Called from the event loop's thread only, one call at a time (the journal API is
        synchronous), so concurrent compensations never write the journal at once.
        """
        state, reason = decision
        if step.rollback_state != state or step.rollback_reason != reason:
            self.journal.set_rollback_state(self.run_id, step.seq, state, reason)
        now = self.journal.get_step(self.run_id, step.seq)
        self.by_seq[step.seq] = now
        if self.progress is not None:
            self.progress(now, state, reason)

    async def one_at_a_time(self, newest_first: list[StepRecord]) -> None:
        """The sequential rollback (``parallel=1``): every step in turn, newest first."""
        for step in newest_first:
            decision = settled_without_compensation(step, self.run_id)
            if decision is None:
                standing = self.standing(step)
                if standing:
                    decision = deferral(standing)
                else:
                    self.waves.waves.append([step.seq])
                    decision = await self._compensate(step, len(self.waves.waves))
            self.record(step, decision)
            # a cancellation (Ctrl-C in the CLI) stops the rollback here, between
            # compensations, never inside one
            await anyio.lowlevel.checkpoint()

    async def concurrently(self, newest_first: list[StepRecord], parallel: int) -> None:
        """The parallel rollback: each candidate as soon as what it waits for has settled.

        Steps decided from their own record are journaled first, newest first. Then a
        dispatcher keeps up to ``parallel`` compensations running: whenever a candidate's
        later steps (:func:`~reversi_core._schedule.waits_for`) have all settled, it is
        decided (deferred, or its compensation started as a task of its own), newest
        first among those ready. Only the compensations running are tasks, so a run of
        any length costs ``parallel`` tasks. A cancellation (Ctrl-C) stops the
        dispatcher, so no compensation starts after it; those running finish (shielded,
        within ``compensation_timeout`` when there is one) and are journaled. An error
        (the journal failing) stops the dispatcher the same way and is raised as itself.
        """
        candidates: dict[int, StepRecord] = {}
        for step in newest_first:
            decision = settled_without_compensation(step, self.run_id)
            if decision is None:
                candidates[step.seq] = step
            else:
                self.record(step, decision)
        order = waits_for(list(candidates.values()), self.dependents)
        self.waves = Waves(order)
        waiting = {seq: len(later) for seq, later in order.items()}
        released: dict[int, list[int]] = {}  # a step -> the earlier ones that wait for it
        for seq, later in order.items():
            for newer in later:
                released.setdefault(newer, []).append(seq)
        ready = [-seq for seq, count in waiting.items() if count == 0]  # a heap, newest first
        heapq.heapify(ready)
        finished_send, finished = anyio.create_memory_object_stream[int](math.inf)
        errors: list[BaseException] = []

        def settle(seq: int) -> None:
            for earlier in released.get(seq, ()):
                waiting[earlier] -= 1
                if waiting[earlier] == 0:
                    heapq.heappush(ready, -earlier)

        async def compensate(step: StepRecord, wave: int, scope: anyio.CancelScope) -> None:
            try:
                self.record(step, await self._compensate(step, wave))
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                errors.append(exc)
                scope.cancel()
            finally:
                finished_send.send_nowait(step.seq)

        with finished_send, finished:
            async with anyio.create_task_group() as group:
                running = 0
                while ready or running:
                    while ready and running < parallel and not errors:
                        step = candidates[-heapq.heappop(ready)]
                        standing = self.standing(step)
                        if standing:
                            self.waves.settle(step.seq, ran=False)
                            try:
                                self.record(step, deferral(standing))
                            except Exception as exc:
                                errors.append(exc)
                                group.cancel_scope.cancel()
                                break
                            settle(step.seq)
                            continue
                        wave = self.waves.settle(step.seq, ran=True)
                        assert wave is not None
                        running += 1
                        group.start_soon(compensate, step, wave, group.cancel_scope)
                    if not running:
                        break
                    settle(await finished.receive())
                    running -= 1
        if errors:
            raise errors[0]

    def _span_attributes(self, step: StepRecord, call: CompensationCall) -> dict[str, Any]:
        return {
            "reversi.run": self.run_id,
            "reversi.step": step.seq,
            "reversi.tool": call.tool,
            "reversi.effect": step.effect,
        }

    async def _compensate(self, step: StepRecord, wave: int) -> Decision:
        assert step.compensation is not None
        call = CompensationCall(
            tool=step.compensation["tool"],
            args=step.compensation["args"],
            idempotency_key=compensation_key(self.run_id, step.seq),
            run_id=self.run_id,
            step=step.seq,
            overwrite=step.overwrite is not None,
            timeout=self.timeout,
        )
        self.journal.add_event(
            self.run_id,
            step.seq,
            "compensation_started",
            {
                "tool": call.tool,
                "idempotency_key": call.idempotency_key,
                "wave": wave,
                **({"overwrite": step.overwrite} if call.overwrite else {}),
            },
        )
        if self.started is not None:
            self.started(step)
        timeout = self.timeout
        try:
            # Shielded, with a time limit or without one (None): an interrupted rollback,
            # or one whose journal failed, lets the compensation in flight finish and
            # journals its outcome before stopping, so a compensation that ran is never
            # forgotten nor cut short half way.
            with (
                span("reversi.compensate", self._span_attributes(step, call)) as traced,
                anyio.fail_after(timeout, shield=True),
            ):
                try:
                    result = await self.compensate(call)
                except BaseException:  # raised, or cancelled by the time limit
                    if traced is not None:
                        traced.set_attribute("reversi.outcome", "failed")
                    raise
                if traced is not None:
                    traced.set_attribute("reversi.outcome", "ran")
        except TimeoutError:
            return (
                RollbackState.COMPENSATION_FAILED,
                f"{call.tool} did not finish within {timeout} s",
            )
        except Exception as exc:
            text = str(exc) if isinstance(exc, ReversiError) else f"{type(exc).__name__}: {exc}"
            return RollbackState.COMPENSATION_FAILED, scrub(f"{call.tool} failed: {text}")
        if self.verify is not None:
            try:
                ok = await self.verify(step, result if isinstance(result, dict) else {})
            except Exception as exc:
                return (
                    RollbackState.VERIFICATION_FAILED,
                    scrub(f"verify raised {type(exc).__name__}: {exc}"),
                )
            if not ok:
                return (
                    RollbackState.VERIFICATION_FAILED,
                    f"{call.tool} ran but verification says the step is not undone",
                )
        self.report.compensated_now.append(step.seq)
        return RollbackState.COMPENSATED, None
