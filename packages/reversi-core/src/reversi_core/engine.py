"""The engine: a run of journaled calls and its rollback (the saga of docs/engine.md).

A :class:`Run` belongs to one agent session. :meth:`Run.call` checks the tool, the
permission scope, the arguments and approval, makes the intent durable, executes, and
makes the outcome durable. :meth:`Run.rollback` undoes the run's steps newest first,
honouring ``requires`` edges, and returns a :class:`RollbackReport`.
:meth:`Run.resolve` records a person's decision about an uncertain step.

The engine knows no transport and no terminal: the gateway and the command-line tools
sit on top of it.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel

from ._edges import EdgeIndex
from .connector import CallContext, CompensationCall, Compensator
from .errors import (
    ApprovalDenied,
    CallRejected,
    EffectUncertainError,
    InvalidArgumentsError,
    JournalError,
    PermissionDenied,
    ReversiError,
    RunClosedError,
    RunStateError,
    ToolError,
    UnknownToolError,
)
from .journal import Journal, RollbackState, RunRecord, RunStatus, StepRecord, StepState
from .manifest import (
    Approval,
    Effect,
    Manifest,
    MappingFailed,
    evaluate_argument_map,
)
from .redact import scrub, scrub_json
from .registry import Registry

__all__ = [
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "Executor",
    "OutstandingStep",
    "RollbackReport",
    "Run",
    "Verifier",
    "compensation_key",
    "new_run_id",
]

Executor = Callable[[str, dict[str, Any], CallContext], Awaitable[dict[str, Any]]]
"""Runs a tool: ``(tool, args, ctx) -> JSON result``; raises ToolError / EffectUncertainError."""


@dataclass(frozen=True)
class ApprovalRequest:
    """What an approver is asked: the tool, its manifest, the arguments and the agent's reason."""

    run_id: str
    tool: str
    manifest: Manifest
    args: dict[str, Any]
    reason: str | None


@dataclass(frozen=True)
class ApprovalDecision:
    """An approver's answer, journaled with the step. ``by`` names who answered."""

    approved: bool
    by: str = "approver"
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"approved", "by", "note"}``."""
        return {"approved": self.approved, "by": self.by, "note": self.note}


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision | bool]]
"""Asked before each call of an ``approval: always`` tool; ``True``/``False`` or a decision."""

Verifier = Callable[[StepRecord, dict[str, Any]], Awaitable[bool]]
"""Called after a compensation with the step and the compensation's result; ``False`` means not undone."""


def new_run_id() -> str:
    """A fresh run id: ``run_`` plus 16 hex digits."""
    return f"run_{uuid.uuid4().hex[:16]}"


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


ProgressCallback = Callable[[StepRecord, RollbackState | None, str | None], None]


class Run:
    """One agent session's journaled calls (see the module docstring).

    Create with :meth:`start` or reopen with :meth:`open`. ``scope`` is the set of
    permissions the agent holds; ``None`` means :meth:`Registry.default_scope`.
    """

    def __init__(
        self,
        journal: Journal,
        registry: Registry,
        record: RunRecord,
        *,
        executor: Executor | None = None,
        approver: Approver | None = None,
    ) -> None:
        self.journal = journal
        self.registry = registry
        self.id = record.id
        self.scope = frozenset(record.scope)
        self.executor = executor
        self.approver = approver
        # What later `requires` may point at: loaded from the journal once, then kept up
        # to date by this Run's own calls (a run is served by one process).
        self._index: EdgeIndex | None = None

    @classmethod
    def start(
        cls,
        journal: Journal,
        registry: Registry,
        *,
        scope: Iterable[str] | None = None,
        executor: Executor | None = None,
        approver: Approver | None = None,
        label: str | None = None,
        run_id: str | None = None,
    ) -> Run:
        """Journal a new open run and return it."""
        granted = sorted(registry.default_scope() if scope is None else set(scope))
        record = journal.create_run(run_id or new_run_id(), granted, label)
        return cls(journal, registry, record, executor=executor, approver=approver)

    @classmethod
    def open(
        cls,
        journal: Journal,
        registry: Registry,
        run_id: str,
        *,
        executor: Executor | None = None,
        approver: Approver | None = None,
    ) -> Run:
        """Reopen a journaled run (to roll it back or resolve a step)."""
        return cls(journal, registry, journal.get_run(run_id), executor=executor, approver=approver)

    @property
    def record(self) -> RunRecord:
        """The run as journaled now."""
        return self.journal.get_run(self.id)

    def steps(self) -> list[StepRecord]:
        """The run's steps as journaled now, oldest first."""
        return self.journal.list_steps(self.id)

    # -- forward ---------------------------------------------------------------------

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        reason: str | None = None,
        execute: Executor | None = None,
        timeout: float | None = None,
        on_read: Callable[[int, dict[str, Any]], None] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """Journal and execute one call; return ``(step, result)``.

        ``execute`` (default: the run's executor) runs the tool; ``timeout`` (seconds)
        bounds it, and running out on a writing tool makes the step uncertain.

        ``on_read(step, result)``, when given, is called for a ``read_only`` tool that
        succeeded, with the result as it will be journaled, *before* the outcome is
        written, so that a server can answer its client without waiting for that write
        (the gateway does). The intent is still journaled before the tool runs. Should
        the process die in between, the step is found ``pending`` and becomes
        ``uncertain`` on reopen, which a rollback treats like any read: nothing to undo.
        A writing tool's result is never handed out before its outcome is durable.

        Raises :class:`UnknownToolError`, :class:`PermissionDenied`,
        :class:`InvalidArgumentsError` or :class:`ApprovalDenied` (step ``rejected``,
        nothing executed); :class:`~reversi_core.errors.RunClosedError` if the run was
        rolled back; :class:`ToolError` (step ``failed``); :class:`EffectUncertainError`
        (step ``uncertain``).
        """
        execute = execute or self.executor
        if execute is None:
            raise RunStateError("no executor: pass execute= or create the run with executor=")
        # A rolled-back run takes no call: begin_step refuses it atomically on the normal
        # path, and _ensure_open is asked before anything else would be journaled in it
        # (a rejection) or before an approver would be asked about it.
        try:
            manifest = self.registry.get(tool)
        except UnknownToolError as exc:
            self._reject(tool, "unknown", "unknown", args, reason, exc, None)
            raise
        if manifest.permission not in self.scope:
            exc2 = PermissionDenied(
                f"{tool} needs permission {manifest.permission!r}, which this run was not granted",
                permission=manifest.permission,
            )
            self._reject(tool, manifest.effect.value, manifest.permission, args, reason, exc2, None)
            raise exc2
        try:
            self.registry.validate_arguments(tool, args)
        except InvalidArgumentsError as exc:
            safe_args = args if isinstance(args, dict) else {"_invalid": repr(args)}
            self._reject(
                tool, manifest.effect.value, manifest.permission, safe_args, reason, exc, None
            )
            raise
        approval: dict[str, Any] | None = None
        if manifest.approval is Approval.ALWAYS:
            self._ensure_open()
            decision = await self._ask_approval(tool, manifest, args, reason)
            approval = decision.to_json()
            if not decision.approved:
                why = f"{tool} needs approval and {decision.by} denied it" + (
                    f": {decision.note}" if decision.note else ""
                )
                exc3 = ApprovalDenied(why)
                self._reject(
                    tool, manifest.effect.value, manifest.permission, args, reason, exc3, approval
                )
                raise exc3
        index = self._edge_index()
        step = self.journal.begin_step(
            self.id,
            tool,
            manifest.effect.value,
            manifest.permission,
            args,
            reason,
            approval,
            index.edges(manifest, args) if manifest.requires else [],
        )
        seq = step.seq
        index.add(seq, tool, args, None)
        ctx = CallContext(
            run_id=self.id, step=seq, idempotency_key=step.idempotency_key, timeout=timeout
        )
        try:
            if timeout is not None:
                with anyio.fail_after(timeout):
                    result = await execute(tool, args, ctx)
            else:
                result = await execute(tool, args, ctx)
        except (ToolError, CallRejected) as exc:
            # CallRejected here is the tool's own refusal (say, its argument check): nothing ran
            self._finish(seq, StepState.FAILED, error=scrub(str(exc)))
            raise
        except TimeoutError:
            msg = f"{tool} did not finish within {timeout} s"
            if manifest.writes:
                self._finish(
                    seq, StepState.UNCERTAIN, error=msg + "; it may or may not have taken effect"
                )
                raise EffectUncertainError(msg + "; outcome unknown") from None
            self._finish(seq, StepState.FAILED, error=msg)
            raise ToolError(msg, code="timeout") from None
        except EffectUncertainError as exc:
            self._finish(seq, StepState.UNCERTAIN, error=scrub(str(exc)))
            raise
        except BaseException as exc:
            # Cancellation, a bug, anything unforeseen: for a write the outcome is unknown.
            text = scrub(f"{type(exc).__name__}: {exc}")
            state = StepState.UNCERTAIN if manifest.writes else StepState.FAILED
            # If even this write fails, the step stays pending and becomes uncertain when
            # the journal is next opened: nothing is lost.
            with contextlib.suppress(JournalError):
                self._finish(seq, state, error=f"unexpected error: {text}")
            if isinstance(exc, Exception):
                if manifest.writes:
                    raise EffectUncertainError(
                        f"{tool}: unexpected error, outcome unknown: {text}"
                    ) from None
                raise ToolError(f"{tool}: unexpected error: {text}", code="unexpected") from None
            raise
        result = scrub_json(result)
        compensation, comp_error = self._compensation_for(manifest, args, result)
        try:
            if on_read is not None and manifest.effect is Effect.READ_ONLY:
                on_read(seq, result)
        finally:  # the outcome is journaled even if the callback fails
            self._finish(
                seq,
                StepState.SUCCEEDED,
                result=result,
                compensation=compensation,
                compensation_error=comp_error,
            )
        index.add(seq, tool, args, result)
        return seq, result

    def _finish(
        self,
        seq: int,
        state: StepState,
        *,
        result: dict[str, Any] | None = None,
        error: str | None = None,
        compensation: dict[str, Any] | None = None,
        compensation_error: str | None = None,
    ) -> None:
        """Journal a step's outcome durably; a failed step can no longer be depended on."""
        if state is StepState.FAILED and self._index is not None:
            self._index.mark_not_applied(seq)
        self.journal.finish_step(
            self.id,
            seq,
            state,
            result=result,
            error=error,
            compensation=compensation,
            compensation_error=compensation_error,
        )

    def _reject(
        self,
        tool: str,
        effect: str,
        permission: str,
        args: Any,
        reason: str | None,
        exc: Exception,
        approval: dict[str, Any] | None,
    ) -> None:
        self._ensure_open()
        self.journal.record_rejected(
            self.id,
            tool,
            effect,
            permission,
            args if isinstance(args, dict) else {"_invalid": repr(args)},
            reason,
            scrub(str(exc)),
            approval,
        )

    def _ensure_open(self) -> None:
        """Raise :class:`RunClosedError` if the run has been (or is being) rolled back."""
        status = self.journal.run_status(self.id)
        if status is not RunStatus.OPEN:
            raise RunClosedError(
                f"run {self.id} was rolled back ({status.value}); it takes no new calls. "
                "Start a new run."
            )

    async def _ask_approval(
        self, tool: str, manifest: Manifest, args: dict[str, Any], reason: str | None
    ) -> ApprovalDecision:
        if self.approver is None:
            return ApprovalDecision(
                False,
                by="no approver",
                note="this run has no approver; approve such calls through a client that can be asked",
            )
        answer = await self.approver(ApprovalRequest(self.id, tool, manifest, args, reason))
        if isinstance(answer, ApprovalDecision):
            return answer
        return ApprovalDecision(bool(answer))

    def _edge_index(self) -> EdgeIndex:
        """The run's requires index, built from the journal on first use (see ``_edges.py``)."""
        if self._index is None:
            index = EdgeIndex.for_manifests(self.registry)
            for earlier in self.journal.list_steps(self.id):
                if earlier.tool in index.watched and earlier.may_have_applied:
                    index.add(earlier.seq, earlier.tool, earlier.args, earlier.result)
            self._index = index
        return self._index

    @staticmethod
    def _compensation_for(
        manifest: Manifest, args: dict[str, Any], result: dict[str, Any] | None
    ) -> tuple[dict[str, Any] | None, str | None]:
        if manifest.compensation is None:
            return None, None
        try:
            comp_args = evaluate_argument_map(manifest.compensation, args, result)
        except MappingFailed as exc:
            return None, str(exc)
        return {"tool": manifest.compensation.tool, "args": comp_args}, None

    # -- resolution ------------------------------------------------------------------

    def resolve(
        self, step: int, *, applied: bool, result: dict[str, Any] | None = None
    ) -> StepRecord:
        """Record that an uncertain step was (``applied=True``) or was not applied.

        ``result`` (optional, for an applied step) supplies what the call would have
        returned, so that compensation arguments mapped from ``result.`` can be computed.
        Raises :class:`RunStateError` if the step is not uncertain, or was already compensated.
        """
        record = self.journal.get_step(self.id, step)
        if record.state is not StepState.UNCERTAIN:
            raise RunStateError(
                f"step {step} of run {self.id} is {record.state.value}, not uncertain; "
                "only uncertain steps are resolved"
            )
        if record.rollback_state is RollbackState.COMPENSATED:
            # resolving would clear the rollback state and make the next rollback undo it again
            raise RunStateError(
                f"step {step} of run {self.id} was already compensated; "
                "there is nothing left to resolve"
            )
        compensation: dict[str, Any] | None = None
        comp_error: str | None = None
        if applied:
            manifest = self.registry.get(record.tool) if record.tool in self.registry else None
            if manifest is not None and manifest.compensation is not None:
                compensation, comp_error = self._compensation_for(manifest, record.args, result)
                if comp_error is not None and result is None:
                    comp_error += (
                        "; the step was uncertain, so there is no result: resolve it again with "
                        "the result the call returned, or undo it by hand"
                    )
        if compensation is not None and compensation["tool"] in self.registry:
            # refuse now what the compensation would refuse at rollback time
            self.registry.validate_arguments(compensation["tool"], compensation["args"])
        self.journal.resolve_step(self.id, step, applied, result, compensation, comp_error)
        return self.journal.get_step(self.id, step)

    # -- rollback --------------------------------------------------------------------

    async def rollback(
        self,
        *,
        compensate: Compensator,
        verify: Verifier | None = None,
        progress: ProgressCallback | None = None,
        compensation_timeout: float | None = None,
    ) -> RollbackReport:
        """Undo the run newest first; return the report (see :class:`RollbackReport`).

        ``compensate`` runs one compensation; ``verify`` (optional) confirms it;
        ``progress`` is told each decision as it is journaled; ``compensation_timeout``
        (seconds) bounds each compensation, and running out counts as a failure.

        The run takes no new calls from the moment this starts. Raises
        :class:`~reversi_core.errors.RollbackInProgressError` when another live process
        is rolling back the same run.
        """
        self.journal.start_rollback(self.id)
        complete = False
        report = RollbackReport(run_id=self.id, complete=False)
        try:
            steps = self.journal.list_steps(self.id)
            by_seq = {s.seq: s for s in steps}
            dependents: dict[int, list[int]] = {}
            for s in steps:
                for r in s.requires:
                    dependents.setdefault(r, []).append(s.seq)
            for step in sorted(steps, key=lambda s: s.seq, reverse=True):
                state, reason = await self._undo_one(
                    step, by_seq, dependents, compensate, verify, compensation_timeout, report
                )
                by_seq[step.seq] = self.journal.get_step(self.id, step.seq)
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
            self.journal.finish_rollback(self.id, complete)
        return report

    def _stands(self, s: StepRecord) -> bool:
        return s.may_have_applied and s.rollback_state not in (
            RollbackState.COMPENSATED,
            RollbackState.NOT_APPLICABLE,
        )

    async def _undo_one(
        self,
        step: StepRecord,
        by_seq: dict[int, StepRecord],
        dependents: dict[int, list[int]],
        compensate: Compensator,
        verify: Verifier | None,
        timeout: float | None,
        report: RollbackReport,
    ) -> tuple[RollbackState | None, str | None]:
        def record(
            state: RollbackState | None, reason: str | None
        ) -> tuple[RollbackState | None, str | None]:
            if step.rollback_state != state or step.rollback_reason != reason:
                self.journal.set_rollback_state(self.id, step.seq, state, reason)
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
                    f"'reversi resolve {self.id} {step.seq} --applied|--not-applied', then roll back again",
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
        standing = [d for d in dependents.get(step.seq, []) if self._stands(by_seq[d])]
        if standing:
            return record(
                RollbackState.DEFERRED,
                "required by step(s) "
                + ", ".join(map(str, sorted(standing)))
                + " that still stand",
            )
        call = CompensationCall(
            tool=step.compensation["tool"],
            args=step.compensation["args"],
            idempotency_key=compensation_key(self.id, step.seq),
            run_id=self.id,
            step=step.seq,
        )
        self.journal.add_event(
            self.id,
            step.seq,
            "compensation_started",
            {"tool": call.tool, "idempotency_key": call.idempotency_key},
        )
        try:
            if timeout is not None:
                # Shielded: an interrupted rollback lets the compensation in flight finish
                # (within its time limit) and journals its outcome before stopping, so a
                # compensation that ran is never forgotten.
                with anyio.fail_after(timeout, shield=True):
                    result = await compensate(call)
            else:
                result = await compensate(call)
        except TimeoutError:
            return record(
                RollbackState.COMPENSATION_FAILED, f"{call.tool} did not finish within {timeout} s"
            )
        except Exception as exc:
            text = str(exc) if isinstance(exc, ReversiError) else f"{type(exc).__name__}: {exc}"
            return record(RollbackState.COMPENSATION_FAILED, scrub(f"{call.tool} failed: {text}"))
        if verify is not None:
            try:
                ok = await verify(step, result if isinstance(result, dict) else {})
            except Exception as exc:
                return record(
                    RollbackState.VERIFICATION_FAILED,
                    scrub(f"verify raised {type(exc).__name__}: {exc}"),
                )
            if not ok:
                return record(
                    RollbackState.VERIFICATION_FAILED,
                    f"{call.tool} ran but verification says the step is not undone",
                )
        report.compensated_now.append(step.seq)
        return record(RollbackState.COMPENSATED, None)
