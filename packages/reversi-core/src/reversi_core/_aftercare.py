"""What a run does about its steps after the calls: the mixin :class:`RunAftercare` of
:class:`~reversi_core.engine.Run`.

:meth:`~RunAftercare.resolve` records a person's finding about an uncertain step,
:meth:`~RunAftercare.replay` settles one by sending its call again with its own
idempotency key (:mod:`reversi_core._replay`), :meth:`~RunAftercare.allow_overwrite`
records that one step's compensation may overwrite a later change (RB-10),
:meth:`~RunAftercare.rollback` undoes the run (:mod:`reversi_core._rollback`) and
:meth:`~RunAftercare.plan_rollback` works out what it would do (:mod:`reversi_core._plan`).
The calls themselves are :mod:`reversi_core.engine`'s; both halves share only the run's
journal, registry, id and executor.
"""

from __future__ import annotations

from typing import Any

from ._decisions import allow_overwrite, resolve_step
from ._outcome import Executor
from ._plan import RollbackPlan, plan_rollback
from ._replay import ReplayOutcome, replay_step
from ._rollback import (
    DEFAULT_PARALLEL,
    ProgressCallback,
    RollbackReport,
    StartCallback,
    Verifier,
)
from ._rollback import rollback as _rollback
from .connector import Compensator
from .errors import RunStateError
from .journal import Journal, StepRecord
from .registry import Registry

__all__ = ["RunAftercare"]


class RunAftercare:
    """Resolution, replay, overwrite decisions and rollback of one run (see the module
    docstring); :class:`~reversi_core.engine.Run` sets the attributes below."""

    journal: Journal
    registry: Registry
    id: str
    executor: Executor | None

    # -- resolution ------------------------------------------------------------------

    def resolve(
        self,
        step: int,
        *,
        applied: bool,
        result: dict[str, Any] | None = None,
        decided_by: str | None = None,
    ) -> StepRecord:
        """Record that an uncertain step was (``applied=True``) or was not applied.

        ``result`` (optional, for an applied step) supplies what the call would have
        returned, so that compensation arguments mapped from ``result.`` can be computed.
        ``decided_by`` names who found it out (journaled in ``StepRecord.resolved_by`` and
        the ``resolved`` event; blank or ``None``: no name). Returns the step as journaled.
        Raises :class:`RunStateError` if the step is not uncertain, or was already compensated.
        """
        args = (self.journal, self.registry, self.id, step, applied, result, decided_by)
        return resolve_step(*args)

    def allow_overwrite(self, step: int, *, by: str) -> StepRecord:
        """Record that step ``step``'s compensation may overwrite a change made since the call.

        A restoring compensation refuses to put back a prior state over a change someone
        made after the call (RB-10); a person who decides that change should go after all
        says so here, for this one step. ``by`` names who decided (``reversi rollback
        --overwrite`` gives the OS user). The decision is journaled in the step's record
        (``{"by", "at"}``, UNIX seconds) and kept: every later rollback of the run calls
        that step's compensation with ``CallContext.overwrite`` true until it succeeds.
        Returns the step as journaled now. Raises :class:`RunStateError` when the step has
        no compensation to run (it failed, was rejected or resolved as not applied, is
        read-only, or has none) or was compensated already, and
        :class:`~reversi_core.errors.JournalError` when the run has no such step.
        """
        return allow_overwrite(self.journal, self.id, step, by)

    async def replay(
        self,
        step: int,
        *,
        execute: Executor | None = None,
        timeout: float | None = None,
        now: float | None = None,
    ) -> ReplayOutcome:
        """Send an uncertain step's call again, with its original key, and resolve it by the answer.

        Only for a tool whose manifest declares :class:`~reversi_core.manifest.Replay`, within
        its ``window`` seconds of the step's start (``now``: UNIX seconds, default the clock).
        ``execute`` (default: the run's executor) gets a context with the step's key and
        ``replay=True``; ``timeout`` (seconds) bounds it. A result resolves the step applied
        with that result, a ``ToolError`` not applied, anything else leaves it uncertain;
        returns the :class:`ReplayOutcome` (rules and errors: :mod:`reversi_core._replay`).
        Raises :class:`~reversi_core.errors.ReplayRefusedError`, nothing sent, when the tool
        may not be replayed, the step already has a resolution (a person's or an earlier
        replay's), or the run's rollback has started (a replay may carry the call out for the
        first time: a new call, which such a run no longer takes); :class:`RunStateError` as
        :meth:`resolve` does.
        """
        execute = execute or self.executor
        if execute is None:
            raise RunStateError("no executor: pass execute= or open the run with executor=")
        return await replay_step(
            self.journal,
            self.registry,
            self.journal.get_step(self.id, step),
            execute=execute,
            resolve=self.resolve,
            timeout=timeout,
            now=now,
        )

    # -- rollback --------------------------------------------------------------------

    async def rollback(
        self,
        *,
        compensate: Compensator,
        verify: Verifier | None = None,
        progress: ProgressCallback | None = None,
        started: StartCallback | None = None,
        compensation_timeout: float | None = None,
        parallel: int = DEFAULT_PARALLEL,
    ) -> RollbackReport:
        """Undo the run newest first; return the report (see :class:`RollbackReport`).

        ``compensate`` runs one compensation; ``verify`` (optional) confirms it;
        ``progress`` is told each decision as it is journaled, ``started`` each
        compensation as it starts; ``compensation_timeout`` (seconds) bounds each
        compensation, and running out counts as a failure. A compensation that started
        is shielded from a cancellation (Ctrl-C) and from a journal failure, with or
        without a timeout: it finishes (within the timeout, if any) and its outcome is
        journaled before the rollback stops. ``parallel`` (default
        :data:`DEFAULT_PARALLEL`) compensations run at once, for steps that neither
        require one another nor touch overlapping resources; ``1`` visits the steps one
        at a time, newest first (docs/engine.md, "Rollback in parallel"). A step whose
        journal record holds an overwrite decision (:meth:`allow_overwrite`) gets a
        :class:`~reversi_core.connector.CompensationCall` with ``overwrite`` true; every
        other step's compensation keeps its precondition.

        The run takes no new calls from the moment this starts. Raises
        :class:`~reversi_core.errors.RollbackInProgressError` when another live process
        is rolling back the same run, and :class:`ValueError` for ``parallel`` below 1 or
        above :data:`~reversi_core._rollback.MAX_PARALLEL` (256).
        """
        return await _rollback(
            self.journal,
            self.id,
            compensate=compensate,
            verify=verify,
            progress=progress,
            started=started,
            compensation_timeout=compensation_timeout,
            parallel=parallel,
        )

    def plan_rollback(self, *, parallel: int = DEFAULT_PARALLEL) -> RollbackPlan:
        """What :meth:`rollback` with ``parallel`` would do, if every compensation succeeded.

        Reads the journal only: no lock, no compensation, nothing written (RB-15). See
        :class:`RollbackPlan`; raises :class:`ValueError` for ``parallel`` below 1 or above
        :data:`~reversi_core._rollback.MAX_PARALLEL`.
        """
        return plan_rollback(self.journal, self.id, parallel=parallel)
