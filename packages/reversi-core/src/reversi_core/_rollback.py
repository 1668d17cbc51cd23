"""A run's rollback: the saga of docs/engine.md, newest step first.

:func:`rollback` is what :meth:`reversi_core.engine.Run.rollback` runs. It takes the
run's rollback lock in the journal, visits every step newest first, decides for each
whether it is undone, left alone, deferred or handed to a person, runs the
compensations that apply (each with an idempotency key derived only from the run and
the step), journals every decision as it is made, and returns a
:class:`RollbackReport`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel

from .connector import CompensationCall, Compensator
from .errors import ReversiError
from .journal import Journal, RollbackState, StepRecord, StepState
from .manifest import Effect
from .redact import scrub

__all__ = [
    "OutstandingStep",
    "ProgressCallback",
    "RollbackReport",
    "Verifier",
    "compensation_key",
    "rollback",
]

Verifier = Callable[[StepRecord, dict[str, Any]], Awaitable[bool]]
"""Called after a compensation with the step and the compensation's result; ``False`` means not undone."""

ProgressCallback = Callable[[StepRecord, RollbackState | None, str | None], None]
"""Told each decision as it is journaled: ``(step as journaled now, state, reason)``."""


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
    ``compensated_now`` the steps whose compensation ran in this attempt.
    """

    run_id: str
    complete: bool
    steps: list[StepRecord] = field(default_factory=list)
    outstanding: list[OutstandingStep] = field(default_factory=list)
    unrecoverable: list[OutstandingStep] = field(default_factory=list)
    compensated_now: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON form: ``{"run_id", "complete", "status", "steps": [...], "outstanding": [...], ...}``."""
        return {
            "run_id": self.run_id,
            "complete": self.complete,
            "status": "complete" if self.complete else "incomplete",
            "compensated_now": self.compensated_now,
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
    compensation_timeout: float | None = None,
) -> RollbackReport:
    """Undo the run ``run_id`` newest first; see :meth:`reversi_core.engine.Run.rollback`."""
    journal.start_rollback(run_id)
    complete = False
    report = RollbackReport(run_id=run_id, complete=False)
    saga = _Saga(journal, run_id, compensate, verify, compensation_timeout, report)
    try:
        steps = journal.list_steps(run_id)
        by_seq = {s.seq: s for s in steps}
        dependents: dict[int, list[int]] = {}
        for s in steps:
            for r in s.requires:
                dependents.setdefault(r, []).append(s.seq)
        for step in sorted(steps, key=lambda s: s.seq, reverse=True):
            state, reason = await saga.undo_one(step, by_seq, dependents)
            by_seq[step.seq] = journal.get_step(run_id, step.seq)
            if progress is not None:
                progress(by_seq[step.seq], state, reason)
            # a cancellation (Ctrl-C in the CLI) stops the rollback here, between
            # compensations, never inside one
            await anyio.lowlevel.checkpoint()
        final = [by_seq[s] for s in sorted(by_seq, reverse=True)]
        report.steps = final
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


@dataclass
class _Saga:
    journal: Journal
    run_id: str
    compensate: Compensator
    verify: Verifier | None
    timeout: float | None
    report: RollbackReport

    async def undo_one(
        self,
        step: StepRecord,
        by_seq: dict[int, StepRecord],
        dependents: dict[int, list[int]],
    ) -> tuple[RollbackState | None, str | None]:
        """Decide one step, journal the decision, run its compensation when it applies."""

        def record(
            state: RollbackState | None, reason: str | None
        ) -> tuple[RollbackState | None, str | None]:
            if step.rollback_state != state or step.rollback_reason != reason:
                self.journal.set_rollback_state(self.run_id, step.seq, state, reason)
            return state, reason

        if step.rollback_state in (RollbackState.COMPENSATED, RollbackState.NOT_APPLICABLE):
            return step.rollback_state, step.rollback_reason  # done in an earlier attempt
        if step.state in (StepState.REJECTED, StepState.FAILED):
            return record(
                RollbackState.NOT_APPLICABLE, f"step {step.state.value}: nothing was changed"
            )
        if step.effect == Effect.READ_ONLY.value:
            return record(RollbackState.NOT_APPLICABLE, "read-only: nothing to undo")
        if step.state in (StepState.UNCERTAIN, StepState.PENDING):
            if step.resolution == "not_applied":
                return record(RollbackState.NOT_APPLICABLE, "resolved as not applied")
            if step.resolution is None:
                why = (
                    "still running in another process"
                    if step.state is StepState.PENDING
                    else "outcome uncertain"
                )
                return record(
                    None,
                    f"{why}: {step.error or 'unknown'}; resolve it with "
                    f"'reversi resolve {self.run_id} {step.seq} --applied|--not-applied', "
                    "then roll back again",
                )
        # The step (may have) applied. Can it be undone?
        if step.compensation is None:
            if step.compensation_error:
                return record(RollbackState.COMPENSATION_FAILED, step.compensation_error)
            if step.effect == Effect.IRREVERSIBLE.value:
                return record(
                    RollbackState.UNRECOVERABLE, "irreversible: a person must undo it by hand"
                )
            return record(
                RollbackState.UNRECOVERABLE,
                f"{step.effect} call made by the agent has no compensation: a person must undo it by hand",
            )
        standing = [d for d in dependents.get(step.seq, []) if _stands(by_seq[d])]
        if standing:
            return record(
                RollbackState.DEFERRED,
                "required by step(s) "
                + ", ".join(map(str, sorted(standing)))
                + " that still stand",
            )
        return record(*await self._compensate(step))

    async def _compensate(self, step: StepRecord) -> tuple[RollbackState, str | None]:
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
                **({"overwrite": step.overwrite} if call.overwrite else {}),
            },
        )
        timeout = self.timeout
        try:
            if timeout is not None:
                # Shielded: an interrupted rollback lets the compensation in flight finish
                # (within its time limit) and journals its outcome before stopping, so a
                # compensation that ran is never forgotten.
                with anyio.fail_after(timeout, shield=True):
                    result = await self.compensate(call)
            else:
                result = await self.compensate(call)
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
