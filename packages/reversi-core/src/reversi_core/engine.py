"""The engine: a run of journaled calls and its rollback (the saga of docs/engine.md).

A :class:`Run` belongs to one agent session. :meth:`Run.attempt` checks the tool, the
permission scope, the arguments and approval, journals the call, executes it and
journals its outcome, and returns a :class:`CallOutcome` whatever happened;
:meth:`Run.call` is the same and raises the error of a call that did not succeed.
:meth:`Run.rollback` undoes the run's steps newest first, honouring ``requires`` edges
and running the compensations of independent steps at once
(see :mod:`reversi_core._rollback`), and returns a :class:`RollbackReport`;
:meth:`Run.plan_rollback` works out what it would do without doing it.
:meth:`Run.resolve` records a person's decision about an uncertain step, and
:meth:`Run.replay` settles one by sending its call again with its own idempotency key
(see :mod:`reversi_core._replay`), and :meth:`Run.allow_overwrite` records a person's
decision that one step's compensation may overwrite a change made since the call (RB-10).

Every refusal is the engine's: an unknown tool, a tool withheld by whoever serves the
run (:attr:`Run.withheld`), a permission outside the scope, invalid arguments, a denied
approval, and a run that was rolled back. The requirement ids of docs/engine.md
(``CALL-1`` ...) name the rules each part of :meth:`Run.attempt` implements.

The calls are this module's (and :mod:`reversi_core._reads`'s, for a read's second
half); what is done about the steps afterwards, from resolution to rollback, is
:mod:`reversi_core._aftercare`'s.

The engine knows no transport and no terminal: the gateway and the command-line tools
sit on top of it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from ._aftercare import RunAftercare
from ._edges import EdgeIndex
from ._outcome import (
    REJECTED_ARGS_LIMIT,
    AnswerCallback,
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    CallOutcome,
    Executor,
    Withheld,
    kept_args,
    run_tool,
    unicode_problems,
)
from ._plan import PlannedStep, RollbackPlan
from ._reads import ReadCall
from ._replay import ReplayOutcome
from ._rollback import (
    DEFAULT_PARALLEL,
    MAX_PARALLEL,
    OutstandingStep,
    RollbackReport,
    Verifier,
    compensation_key,
)
from ._writes import WriteCall
from .errors import (
    ApprovalDenied,
    CallRejected,
    InvalidArgumentsError,
    JournalError,
    PermissionDenied,
    RunClosedError,
    RunStateError,
    ToolUnavailableError,
    UnknownToolError,
)
from .journal import (
    Journal,
    LostStep,
    RunRecord,
    RunStatus,
    StepRecord,
    StepState,
)
from .manifest import (
    Approval,
    Effect,
    Manifest,
)
from .redact import scrub
from .registry import Registry

__all__ = [
    "DEFAULT_PARALLEL",
    "MAX_PARALLEL",
    "REJECTED_ARGS_LIMIT",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "CallOutcome",
    "Executor",
    "OutstandingStep",
    "PlannedStep",
    "ReadCall",
    "ReplayOutcome",
    "RollbackPlan",
    "RollbackReport",
    "Run",
    "Verifier",
    "Withheld",
    "WriteCall",
    "compensation_key",
    "new_run_id",
]


def new_run_id() -> str:
    """A fresh run id: ``run_`` plus 16 hex digits."""
    return f"run_{uuid.uuid4().hex[:16]}"


class Run(RunAftercare):
    """One agent session's journaled calls (see the module docstring).

    Create with :meth:`start` or reopen with :meth:`open`. ``scope`` is the set of
    permissions the agent holds; ``None`` means :meth:`Registry.default_scope`.
    :meth:`call` (or :meth:`attempt`, which returns failures instead of raising them)
    makes one journaled call; :meth:`rollback` undoes the run; :meth:`resolve` records a
    person's finding about an uncertain step (those that act on the steps after the
    calls come from :class:`~reversi_core._aftercare.RunAftercare`).
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
        self.withheld: Mapping[str, Withheld] = {}
        """Tools that have a manifest but whose calls are refused anyway (a server in front of
        a changed connector sets it: drifted or unoffered tools); see :class:`Withheld`."""
        # What later `requires` may point at: loaded from the journal once, then kept up
        # to date by this Run's own calls (a run is served by one process).
        self._index: EdgeIndex | None = None
        # defer_read_records: (delay in seconds, on_lost), and the pending flush
        self._deferral: tuple[float, LostStep] | None = None
        self._flush_timer: asyncio.TimerHandle | None = None

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

    def defer_read_records(self, delay: float, on_lost: LostStep) -> None:
        """Journal read-only steps up to ``delay`` seconds after they answered, together.

        By default each read is journaled in a commit of its own right after its answer
        (CALL-4). After this call its record is queued in the journal
        (:meth:`~reversi_core.journal.Journal.defer_step`) and written with the others
        in one commit: at most ``delay`` seconds later (a timer of the running asyncio
        loop; without one, at once), before the journal's next write (a writing step's
        intent included), before it is read, when it is closed, and once a bounded
        number is queued. A killed process loses the records of the reads it answered
        in the last ``delay`` seconds at most, never a write's. ``on_lost`` is told
        about a record that could not be written, with the
        :class:`~reversi_core.errors.JournalError` saying why.
        """
        self._deferral = (delay, on_lost)

    def _defer(self, step: StepRecord) -> None:
        assert self._deferral is not None
        delay, on_lost = self._deferral
        self.journal.defer_step(step, on_lost)
        if self._flush_timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on asyncio: no timer to wait for
            self.journal.flush()
            return
        self._flush_timer = loop.call_later(delay, self._flush)

    def _flush(self) -> None:
        self._flush_timer = None
        self.journal.flush()

    # -- forward ---------------------------------------------------------------------

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        reason: str | None = None,
        execute: Executor | None = None,
        approver: Approver | None = None,
        timeout: float | None = None,
    ) -> CallOutcome:
        """Journal and execute one call; return its outcome, which unpacks as ``(step, result)``.

        The same as :meth:`attempt`, except that a call that did not succeed raises its
        error (whose ``step`` names the journal step, when one was written):
        :class:`UnknownToolError`, :class:`ToolUnavailableError`,
        :class:`PermissionDenied`, :class:`InvalidArgumentsError` or
        :class:`ApprovalDenied` (step ``rejected``, nothing executed);
        :class:`~reversi_core.errors.RunClosedError` if the run was rolled back;
        :class:`ToolError` (step ``failed``); :class:`EffectUncertainError` (step
        ``uncertain``); :class:`~reversi_core.errors.JournalError` when the journal failed.
        """
        outcome = await self.attempt(
            tool, args, reason=reason, execute=execute, approver=approver, timeout=timeout
        )
        if outcome.error is not None:
            raise outcome.error
        if outcome.journal_error is not None:
            raise outcome.journal_error
        return outcome

    async def attempt(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        reason: str | None = None,
        execute: Executor | None = None,
        approver: Approver | None = None,
        timeout: float | None = None,
        answer: AnswerCallback | None = None,
    ) -> CallOutcome:
        """Journal and execute one call; return its :class:`CallOutcome`, never raising it.

        ``args`` is the call's JSON object; ``reason`` the agent's stated reason,
        journaled. ``execute`` (default: the run's executor) runs the tool and
        ``approver`` (default: the run's) is asked about an ``approval: always`` tool,
        both for this call only. ``timeout`` (seconds) bounds the execution; running out
        on a writing tool makes the step uncertain.

        A writing tool's intent is committed before it runs and its outcome before this
        returns (CALL-3, CALL-5). A ``read_only`` tool is journaled in one commit after it
        answered, or queued to be (CALL-4, :meth:`defer_read_records`): ``answer``, when
        given, is handed its outcome first, so that a server can answer its client before
        that commit. For every other outcome,
        ``answer`` is handed it once it is journaled. Either way ``answer`` is called
        exactly once, with the outcome this method then returns (for a read, the
        returned one may carry a :attr:`CallOutcome.journal_error` that arose after).

        Only cancellation and bugs of the caller (no executor at all:
        :class:`RunStateError`) are raised.
        """
        execute = execute or self.executor
        if execute is None:
            raise RunStateError("no executor: pass execute= or create the run with executor=")
        manifest = self._refusal(tool, args, reason)
        if isinstance(manifest, CallOutcome):
            return _told(manifest, answer)
        approval: dict[str, Any] | None = None
        if manifest.approval is Approval.ALWAYS:
            try:
                self._ensure_open()
            except (RunClosedError, JournalError) as exc:
                return _told(CallOutcome(self.id, tool, None, None, error=exc), answer)
            decision = await self._ask_approval(tool, manifest, args, reason, approver)
            approval = decision.to_json()
            if not decision.approved:
                why = f"{tool} needs approval and {decision.by} denied it" + (
                    f": {decision.note}" if decision.note else ""
                )
                denied = self._reject(tool, manifest, args, reason, ApprovalDenied(why), approval)
                return _told(denied, answer)
        if manifest.effect is Effect.READ_ONLY:
            return await self._read(manifest, args, reason, approval, execute, timeout, answer)
        return await self._write(manifest, args, reason, approval, execute, timeout, answer)

    def _refusal(self, tool: str, args: Any, reason: str | None) -> CallOutcome | Manifest:
        """The rejected outcome of a call refused before approval (CALL-1), or the tool's
        manifest."""
        manifest = self.registry.lookup(tool)
        if manifest is None:
            return self._reject(
                tool, None, args, reason, UnknownToolError(f"unknown tool {tool!r}")
            )
        withheld = self.withheld.get(tool)
        if withheld is not None:
            error: CallRejected = ToolUnavailableError(withheld.reason, code=withheld.code)
            return self._reject(tool, manifest, args, reason, error)
        if manifest.permission not in self.scope:
            error = PermissionDenied(
                f"{tool} needs permission {manifest.permission!r}, which this run was not granted",
                permission=manifest.permission,
            )
            return self._reject(tool, manifest, args, reason, error)
        try:
            self.registry.validate_arguments(tool, args)
        except InvalidArgumentsError as exc:
            return self._reject(tool, manifest, args, reason, exc)
        problems: list[str] = []
        unicode_problems(args, "args", problems)
        if problems:
            error = InvalidArgumentsError(
                f"invalid arguments for {tool}: " + "; ".join(problems), problems=problems
            )
            return self._reject(tool, manifest, args, reason, error)
        return manifest

    async def _write(
        self,
        manifest: Manifest,
        args: dict[str, Any],
        reason: str | None,
        approval: dict[str, Any] | None,
        execute: Executor,
        timeout: float | None,
        answer: AnswerCallback | None,
    ) -> CallOutcome:
        """A call of a tool that may change something: intent, execution, outcome."""
        call = self._begin_write(manifest, args, reason, approval)
        if isinstance(call, CallOutcome):
            return _told(call, answer)
        try:
            state, result, error = await run_tool(
                manifest, args, call.context(timeout), execute, timeout
            )
        except BaseException as exc:  # cancelled: the outcome of a write is unknown
            call.abandon(exc)
            raise
        return call.settle(state, result, error, answer)

    def _begin_write(
        self,
        manifest: Manifest,
        args: dict[str, Any],
        reason: str | None,
        approval: dict[str, Any] | None,
    ) -> CallOutcome | WriteCall:
        """A write's intent committed (CALL-3), with its edges; or the outcome when the
        run takes no calls or the journal failed."""
        index = self._edge_index()
        try:
            step = self.journal.begin_step(
                self.id,
                manifest.name,
                manifest.effect.value,
                manifest.permission,
                args,
                reason,
                approval,
                index.edges(manifest, args) if manifest.requires else [],
            )
        except (RunClosedError, JournalError) as exc:
            return CallOutcome(self.id, manifest.name, None, None, error=exc)
        index.add(step.seq, manifest.name, args, None)
        return WriteCall(self, manifest, args, step)

    async def _read(
        self,
        manifest: Manifest,
        args: dict[str, Any],
        reason: str | None,
        approval: dict[str, Any] | None,
        execute: Executor,
        timeout: float | None,
        answer: AnswerCallback | None,
    ) -> CallOutcome:
        """A read-only call: executed, told, then journaled in one commit (CALL-4)."""
        call = self._begin_read(manifest, args, reason, approval)
        if isinstance(call, CallOutcome):
            return _told(call, answer)
        try:
            state, result, error = await run_tool(
                manifest, args, call.context(timeout), execute, timeout
            )
        except BaseException as exc:  # cancelled: a read changed nothing
            call.abandon(exc)
            raise
        return call.settle(state, result, error, answer)

    def begin_read(
        self, tool: str, args: dict[str, Any], *, reason: str | None = None
    ) -> CallOutcome | ReadCall:
        """The checks of :meth:`attempt` for a read-only tool that needs no approval, and
        its step reserved, for a caller that executes the tool itself (no task).

        Returns the outcome of a call that may not run (rejected and journaled, CALL-1;
        the run rolled back, CALL-10; the journal failed): answer it as it is. Otherwise
        a :class:`~reversi_core._reads.ReadCall`: run the tool with its
        :attr:`~reversi_core._reads.ReadCall.key` (CALL-5), then call its
        :meth:`~reversi_core._reads.ReadCall.succeeded` or
        :meth:`~reversi_core._reads.ReadCall.failed` with the caller's ``answer``, which
        is told before the step is journaled (CALL-4), or
        :meth:`~reversi_core._reads.ReadCall.abandon` when the call is cancelled. Raises
        :class:`RunStateError` when the tool writes or asks for approval (use
        :meth:`attempt`).
        """
        manifest = self._refusal(tool, args, reason)
        if isinstance(manifest, CallOutcome):
            return manifest
        if manifest.effect is not Effect.READ_ONLY or manifest.approval is Approval.ALWAYS:
            raise RunStateError(f"{tool} is not a read-only tool that needs no approval")
        return self._begin_read(manifest, args, reason, None)

    def begin_call(
        self, tool: str, args: dict[str, Any], *, reason: str | None = None
    ) -> CallOutcome | ReadCall | WriteCall:
        """The checks of :meth:`attempt` for a tool that needs no approval, and its step
        begun, for a caller that executes the tool itself (no task).

        Returns the outcome of a call that may not run (rejected and journaled, CALL-1;
        the run rolled back, CALL-10; the journal failed): answer it as it is. Otherwise,
        for a read-only tool, the :class:`~reversi_core._reads.ReadCall` of
        :meth:`begin_read`; for any other, a :class:`~reversi_core._writes.WriteCall`
        whose intent is committed (CALL-3). Both are used alike: run the tool with the
        call's ``key`` (CALL-5), then call its ``succeeded(result, answer)`` or
        ``failed(error, answer, timeout)``: a read tells ``answer`` and then journals
        its record (CALL-4), a write journals its outcome and then tells ``answer``
        (CALL-6, JNL-2); or ``abandon(exc)`` when the call was cancelled (a read
        ``failed``, a write ``uncertain``; nobody told). Raises
        :class:`RunStateError` for a tool that asks for approval (use :meth:`attempt`).
        """
        manifest = self._refusal(tool, args, reason)
        if isinstance(manifest, CallOutcome):
            return manifest
        if manifest.approval is Approval.ALWAYS:
            raise RunStateError(f"{tool} asks for approval: call it with attempt()")
        if manifest.effect is Effect.READ_ONLY:
            return self._begin_read(manifest, args, reason, None)
        return self._begin_write(manifest, args, reason, None)

    def _begin_read(
        self,
        manifest: Manifest,
        args: dict[str, Any],
        reason: str | None,
        approval: dict[str, Any] | None,
    ) -> CallOutcome | ReadCall:
        """A read's step reserved, with its edges; or the outcome when the run takes none."""
        index = self._edge_index()
        try:
            seq = self.journal.reserve_step(self.id)
        except (RunClosedError, JournalError) as exc:
            return CallOutcome(self.id, manifest.name, None, None, error=exc)
        requires = index.edges(manifest, args) if manifest.requires else []
        return ReadCall(self, manifest, args, reason, approval, seq, requires)

    def _keep_read(self, step: StepRecord) -> None:
        """Journal a finished read now, or queue it (:meth:`defer_read_records`)."""
        if self._deferral is None:
            self.journal.record_step(step)
        else:
            self._defer(step)

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
        manifest: Manifest | None,
        args: Any,
        reason: str | None,
        exc: CallRejected,
        approval: dict[str, Any] | None = None,
    ) -> CallOutcome:
        """Journal a refusal as a ``rejected`` step, unless the run takes no calls (CALL-1).

        Returns the rejected outcome, whose error carries the step number; or, for a run
        that was rolled back or a journal that failed, an outcome with no step.
        """
        try:
            self._ensure_open()
            seq = self.journal.record_rejected(
                self.id,
                tool,
                manifest.effect.value if manifest else "unknown",
                manifest.permission if manifest else "unknown",
                kept_args(args),
                reason,
                scrub(str(exc)),
                approval,
            )
        except (RunClosedError, JournalError) as closed:
            return CallOutcome(self.id, tool, None, None, error=closed)
        exc.step = seq
        return CallOutcome(self.id, tool, seq, StepState.REJECTED, error=exc)

    def _ensure_open(self) -> None:
        """Raise :class:`RunClosedError` if the run has been (or is being) rolled back."""
        status = self.journal.run_status(self.id)
        if status is not RunStatus.OPEN:
            raise RunClosedError(
                f"run {self.id} was rolled back ({status.value}); it takes no new calls. "
                "Start a new run."
            )

    async def _ask_approval(
        self,
        tool: str,
        manifest: Manifest,
        args: dict[str, Any],
        reason: str | None,
        approver: Approver | None,
    ) -> ApprovalDecision:
        approver = approver or self.approver
        if approver is None:
            return ApprovalDecision(
                False,
                by="no approver",
                note="this run has no approver; approve such calls through a client that can be asked",
            )
        answer = await approver(ApprovalRequest(self.id, tool, manifest, args, reason))
        if isinstance(answer, ApprovalDecision):
            return answer
        return ApprovalDecision(bool(answer))

    def _edge_index(self) -> EdgeIndex:
        """The run's requires index, built from the journal on first use (see ``_edges.py``)."""
        if self._index is None:
            index = EdgeIndex.for_manifests(self.registry)
            for earlier in self.journal.list_steps(self.id):
                if earlier.tool in index.watched and earlier.may_have_applied:
                    index.add(
                        earlier.seq,
                        earlier.tool,
                        earlier.args,
                        earlier.result,
                        settled=earlier.state is StepState.SUCCEEDED or earlier.result is not None,
                    )
            self._index = index
        return self._index


def _told(outcome: CallOutcome, answer: AnswerCallback | None) -> CallOutcome:
    """Hand ``outcome`` to ``answer`` (when given) and return it."""
    if answer is not None:
        answer(outcome)
    return outcome
