"""A person's decisions about one step of a run, journaled for the rollbacks to come.

:func:`resolve_step` records what an uncertain call turned out to have done
(:meth:`reversi_core.engine.Run.resolve`, RES-1); :func:`allow_overwrite` that a step's
compensation may overwrite a change made since the call
(:meth:`reversi_core.engine.Run.allow_overwrite`, RB-10). The rules are documented on
those methods.
"""

from __future__ import annotations

import time
from typing import Any

from ._outcome import compensation_for
from .errors import RunStateError
from .journal import Journal, RollbackState, StepRecord, StepState
from .registry import Registry

__all__ = ["allow_overwrite", "check_resolvable", "resolve_step"]


def check_resolvable(record: StepRecord) -> None:
    """Raise :class:`RunStateError` unless ``record`` is an uncertain step not compensated yet.

    What a resolution needs, whether a person gives it (:func:`resolve_step`) or a replay
    learns it (:func:`reversi_core._replay.check_replayable`).
    """
    if record.state is not StepState.UNCERTAIN:
        raise RunStateError(
            f"step {record.seq} of run {record.run_id} is {record.state.value}, not uncertain; "
            "only uncertain steps are resolved"
        )
    if record.rollback_state is RollbackState.COMPENSATED:
        # resolving would clear the rollback state and make the next rollback undo it again
        raise RunStateError(
            f"step {record.seq} of run {record.run_id} was already compensated; "
            "there is nothing left to resolve"
        )


def resolve_step(
    journal: Journal,
    registry: Registry,
    run_id: str,
    step: int,
    applied: bool,
    result: dict[str, Any] | None,
    decided_by: str | None = None,
) -> StepRecord:
    """See :meth:`reversi_core.engine.Run.resolve`."""
    record = journal.get_step(run_id, step)
    check_resolvable(record)
    compensation: dict[str, Any] | None = None
    comp_error: str | None = None
    if applied:
        manifest = registry.get(record.tool) if record.tool in registry else None
        if manifest is not None and manifest.compensation is not None:
            compensation, comp_error = compensation_for(manifest, record.args, result)
            if comp_error is not None and result is None:
                comp_error += (
                    "; the step was uncertain, so there is no result: resolve it again with "
                    "the result the call returned, or undo it by hand"
                )
    if compensation is not None and compensation["tool"] in registry:
        # refuse now what the compensation would refuse at rollback time
        registry.validate_arguments(compensation["tool"], compensation["args"])
    by = decided_by.strip() if decided_by else None
    journal.resolve_step(run_id, step, applied, result, compensation, comp_error, by or None)
    return journal.get_step(run_id, step)


def allow_overwrite(journal: Journal, run_id: str, step: int, by: str) -> StepRecord:
    """See :meth:`reversi_core.engine.Run.allow_overwrite`."""
    record = journal.get_step(run_id, step)
    if not record.may_have_applied or record.compensation is None:
        raise RunStateError(
            f"step {step} of run {run_id} ({record.tool}, {record.state.value}) has no "
            "compensation to run, so there is nothing it could overwrite"
        )
    if record.rollback_state is RollbackState.COMPENSATED:
        raise RunStateError(
            f"step {step} of run {run_id} was already compensated; there is nothing left "
            "to overwrite"
        )
    if not by.strip():
        raise RunStateError("say who allows the overwrite (by=...)")
    journal.allow_overwrite(run_id, step, {"by": by, "at": time.time()})
    return journal.get_step(run_id, step)
