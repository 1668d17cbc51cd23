"""A rollback plan: what a rollback of a run would do, worked out without doing any of it.

:func:`plan_rollback` is what :meth:`reversi_core.engine.Run.plan_rollback` and
``reversi rollback RUN --dry-run`` run. It reads the run's steps and decides each as
:mod:`reversi_core._rollback` would, assuming that every compensation it runs succeeds:
which compensations run in which wave (:mod:`reversi_core._schedule`), and what is
deferred, unrecoverable, uncertain, cannot be compensated, not applicable or done
already. It takes no lock, runs nothing and writes nothing to the journal (RB-15); when
every compensation then succeeds, the rollback's :attr:`RollbackReport.waves
<reversi_core._rollback.RollbackReport.waves>` are the plan's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ._resources import journaled_resources
from ._rollback import (
    DEFAULT_PARALLEL,
    Decision,
    check_parallel,
    deferral,
    settled_without_compensation,
)
from ._schedule import Waves, waits_for
from .journal import Journal, RollbackState, RunRecord, RunStatus, StepRecord
from .journal._owner import owner_alive

__all__ = ["ACTIONS", "PlannedStep", "RollbackPlan", "plan_rollback"]

ACTIONS = (
    "compensate",
    "deferred",
    "uncertain",
    "unrecoverable",
    "compensation_failed",
    "not_applicable",
    "already_compensated",
)
"""What a plan says of a step: its compensation runs (in a wave), or why it does not."""

_ACTION_OF = {
    None: "uncertain",
    RollbackState.COMPENSATED: "already_compensated",
    RollbackState.NOT_APPLICABLE: "not_applicable",
    RollbackState.UNRECOVERABLE: "unrecoverable",
    RollbackState.COMPENSATION_FAILED: "compensation_failed",
}


@dataclass(frozen=True)
class PlannedStep:
    """One step of a plan.

    ``action`` is one of :data:`ACTIONS`; ``reason`` says why a step is not compensated
    (the reason the rollback would journal); ``wave`` (from 1) is set for ``compensate``.
    ``compensation`` names the compensating tool, ``resources`` the names it touches
    (``None``: unknown, so it runs alone), and ``after`` the later steps it waits for.
    """

    step: int
    tool: str
    action: str
    reason: str | None = None
    wave: int | None = None
    compensation: str | None = None
    resources: list[str] | None = None
    after: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"step", "tool", "action", "reason", "wave", "compensation", "resources", "after"}``."""
        return {
            "step": self.step,
            "tool": self.tool,
            "action": self.action,
            "reason": self.reason,
            "wave": self.wave,
            "compensation": self.compensation,
            "resources": self.resources,
            "after": self.after,
        }


@dataclass
class RollbackPlan:
    """What a rollback of ``run_id`` with ``parallel`` slots would do (module docstring).

    ``steps`` holds every step newest first; ``waves`` the steps whose compensation
    would run, by wave, newest first within each; ``complete`` whether the rollback
    would be complete if every compensation succeeded. ``status`` is the run's status
    now; ``note`` says, for a run being rolled back, whether another process is at it
    right now (the plan may then be out of date already, and a rollback started now is
    refused until it ends) or left it unfinished (the next rollback takes it over).
    """

    run_id: str
    status: str
    parallel: int
    steps: list[PlannedStep] = field(default_factory=list)
    waves: list[list[int]] = field(default_factory=list)
    note: str | None = None

    @property
    def complete(self) -> bool:
        """True when no step would be left outstanding."""
        return all(
            s.action in ("compensate", "not_applicable", "already_compensated") for s in self.steps
        )

    def of(self, action: str) -> list[PlannedStep]:
        """The steps with ``action``, newest first."""
        return [s for s in self.steps if s.action == action]

    def to_json(self) -> dict[str, Any]:
        """``{"run_id", "status", "note", "parallel", "complete", "waves", "steps": [...]}``."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "note": self.note,
            "parallel": self.parallel,
            "complete": self.complete,
            "waves": self.waves,
            "steps": [s.to_json() for s in self.steps],
        }


def _planned(step: StepRecord, decision: Decision, action: str | None = None) -> PlannedStep:
    state, reason = decision
    return PlannedStep(
        step=step.seq,
        tool=step.tool,
        action=action or _ACTION_OF.get(state, str(state)),
        reason=reason,
        compensation=step.compensation["tool"] if step.compensation else None,
        resources=journaled_resources(step.compensation),
    )


def rolling_back_note(run: RunRecord) -> str | None:
    """What a plan says of a run whose status is ``rolling_back``: another process is
    rolling it back now, or one left that rollback unfinished (:func:`owner_alive`)."""
    if run.status is not RunStatus.ROLLING_BACK:
        return None
    if run.rollback_owner and owner_alive(run.rollback_owner):
        return (
            "another process is rolling this run back right now: this plan may be out of "
            "date already, and a rollback started now is refused (status 4) until it ends"
        )
    return (
        "a rollback of this run was left unfinished by a process that is gone: the next "
        "rollback takes it over and continues"
    )


def plan_rollback(
    journal: Journal, run_id: str, *, parallel: int = DEFAULT_PARALLEL
) -> RollbackPlan:
    """The plan of a rollback of ``run_id`` with at most ``parallel`` compensations at once.

    Reads the journal only. Raises :class:`ValueError` for ``parallel`` below 1 and
    :class:`~reversi_core.errors.JournalError` for an unknown run.
    """
    check_parallel(parallel)
    run = journal.get_run(run_id)
    steps = sorted(journal.list_steps(run_id), key=lambda s: s.seq, reverse=True)
    dependents: dict[int, list[int]] = {}
    for s in steps:
        for r in s.requires:
            dependents.setdefault(r, []).append(s.seq)
    stands: dict[int, bool] = {}
    planned: dict[int, PlannedStep] = {}
    candidates = []
    for step in steps:
        decision = settled_without_compensation(step, run_id)
        if decision is None:
            candidates.append(step)
            continue
        planned[step.seq] = _planned(step, decision)
        stands[step.seq] = step.may_have_applied and decision[0] not in (
            RollbackState.COMPENSATED,
            RollbackState.NOT_APPLICABLE,
        )
    order = waits_for(candidates, dependents) if parallel > 1 else {}
    waves = Waves(order)
    previous: list[int] = []
    for step in candidates:  # newest first: every step a candidate waits for comes before it
        standing = [d for d in dependents.get(step.seq, []) if stands.get(d, False)]
        if standing:
            waves.settle(step.seq, ran=False)
            planned[step.seq] = _planned(step, deferral(standing), "deferred")
            stands[step.seq] = True
            continue
        stands[step.seq] = False
        if parallel > 1:
            wave = waves.settle(step.seq, ran=True)
            after = list(order[step.seq])
        else:  # one at a time, newest first: each after the one before
            waves.waves.append([step.seq])
            wave, after, previous = len(waves.waves), previous, [step.seq]
        entry = _planned(step, (None, None), "compensate")
        planned[step.seq] = replace(entry, wave=wave, after=after)
    return RollbackPlan(
        run_id=run_id,
        status=run.status.value,
        parallel=parallel,
        steps=[planned[s.seq] for s in steps],
        waves=[sorted(w, reverse=True) for w in waves.waves],
        note=rolling_back_note(run),
    )
