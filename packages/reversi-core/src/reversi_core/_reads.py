"""A read-only call between its checks and its answer: :class:`ReadCall` (CALL-4).

A read changes nothing, so it is journaled once, finished, after it answered. Its
first half runs before the tool does: the run's checks (CALL-1, CALL-10), its step
number, its idempotency key and its ``requires`` edges (:meth:`Run._begin_read
<reversi_core.engine.Run>`). What it came to is told here: :meth:`ReadCall.settle` (or
:meth:`~ReadCall.succeeded`, :meth:`~ReadCall.failed`) hands the outcome to the caller's
``answer`` first and then journals the step; :meth:`~ReadCall.abandon` journals a read
cut short (cancelled) and tells nobody.

:meth:`Run.attempt <reversi_core.engine.Run.attempt>` awaits the tool between the two
halves. :meth:`Run.begin_read <reversi_core.engine.Run.begin_read>` hands the first
half to a caller that executes the tool itself, without a task: the gateway forwards
a read to its upstream and settles it from the event loop's callback that read the
answer (docs/performance.md).
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from ._outcome import AnswerCallback, CallOutcome, failure
from .connector import CallContext
from .errors import JournalError, ReversiError, RunStateError
from .journal import StepRecord, StepState, step_idempotency_key
from .manifest import Manifest
from .redact import scrub, scrub_json

if TYPE_CHECKING:
    from .engine import Run

__all__ = ["BegunCall", "ReadCall"]


class BegunCall:
    """The half of a call both kinds share once its step is begun (:class:`ReadCall`,
    :class:`~reversi_core._writes.WriteCall`): the tool, its context, and the mapping of
    what the tool returned or raised onto :meth:`settle`, which each kind defines.

    ``seq`` is its step, ``key`` its idempotency key (``reversi-<run>-<step>``, CALL-5).
    Exactly one of :meth:`settle`, :meth:`succeeded`, :meth:`failed` or ``abandon``
    may be called, once; a second raises :class:`~reversi_core.errors.RunStateError`.
    """

    __slots__ = ("_done", "args", "key", "manifest", "run", "seq")

    run: Run
    manifest: Manifest
    args: dict[str, Any]
    seq: int
    key: str
    _done: bool

    @property
    def tool(self) -> str:
        """The tool's name."""
        return self.manifest.name

    def context(self, timeout: float | None) -> CallContext:
        """The context the tool runs with (CALL-5); ``timeout`` in seconds, if any."""
        return CallContext(
            run_id=self.run.id, step=self.seq, idempotency_key=self.key, timeout=timeout
        )

    def succeeded(
        self, result: dict[str, Any], answer: AnswerCallback | None = None
    ) -> CallOutcome:
        """The tool returned ``result``: the step ``succeeded`` (see :meth:`settle`)."""
        return self.settle(StepState.SUCCEEDED, scrub_json(result), None, answer)

    def failed(
        self,
        error: Exception,
        answer: AnswerCallback | None = None,
        timeout: float | None = None,
    ) -> CallOutcome:
        """The tool raised ``error``, mapped as :func:`~reversi_core._outcome.failure`
        maps it (``timeout``: the limit that ran out, for a :class:`TimeoutError`: a
        read ``failed``, a write ``uncertain``); see :meth:`settle`."""
        state, result, mapped = failure(self.manifest, error, timeout)
        return self.settle(state, result, mapped, answer)

    def settle(
        self,
        state: StepState,
        result: dict[str, Any] | None,
        error: ReversiError | None,
        answer: AnswerCallback | None,
    ) -> CallOutcome:
        """Journal and tell the outcome, in the order the call's kind requires."""
        raise NotImplementedError

    def _finish(self) -> None:
        """Claim the one settlement (raises :class:`RunStateError` on a second)."""
        if self._done:
            raise RunStateError(f"step {self.seq} of run {self.run.id} was settled already")
        self._done = True


class ReadCall(BegunCall):
    """One read-only call whose checks passed and whose step number is reserved.

    ``seq`` is its step, ``key`` its idempotency key (``reversi-<run>-<step>``, CALL-5).
    Exactly one of :meth:`settle`, :meth:`succeeded`, :meth:`failed` or :meth:`abandon`
    may be called, once; a second raises :class:`~reversi_core.errors.RunStateError`.
    :meth:`settle` tells ``answer`` first and then journals the step (CALL-4).
    """

    __slots__ = ("_started", "approval", "reason", "requires")

    def __init__(
        self,
        run: Run,
        manifest: Manifest,
        args: dict[str, Any],
        reason: str | None,
        approval: dict[str, Any] | None,
        seq: int,
        requires: list[int],
    ) -> None:
        self.run = run
        self.manifest = manifest
        self.args = args
        self.reason = reason
        self.approval = approval
        self.seq = seq
        self.key = step_idempotency_key(run.id, seq)
        self.requires = requires
        self._started = time.time()
        self._done = False

    def settle(
        self,
        state: StepState,
        result: dict[str, Any] | None,
        error: ReversiError | None,
        answer: AnswerCallback | None,
    ) -> CallOutcome:
        """Hand the outcome to ``answer``, then journal the step, finished (CALL-4).

        Returns the outcome; for a record that could not be journaled, with its
        :attr:`~reversi_core.engine.CallOutcome.journal_error` (the answer was told
        first, without it).
        """
        self._finish()
        run, seq = self.run, self.seq
        if error is not None:
            error.step = seq
        outcome = CallOutcome(run.id, self.manifest.name, seq, state, result=result, error=error)
        try:
            if answer is not None:
                answer(outcome)
        finally:  # journaled even if telling failed
            try:
                self._record(state, result, scrub(str(error)) if error is not None else None)
            except JournalError as exc:
                outcome = CallOutcome(
                    outcome.run_id,
                    outcome.tool,
                    seq,
                    state,
                    result=result,
                    error=error,
                    journal_error=exc,
                )
        index = run._index
        if state is StepState.SUCCEEDED and index is not None and self.tool in index.watched:
            index.add(seq, self.tool, self.args, result)
        return outcome

    def abandon(self, exc: BaseException) -> None:
        """The call was cut short by ``exc`` (cancelled): journal it ``failed``, tell nobody.

        A read changed nothing, so it is never uncertain. A journal that fails here
        loses the record, as a killed process would (CALL-4).
        """
        self._finish()
        with contextlib.suppress(JournalError):
            self._record(
                StepState.FAILED, None, scrub(f"unexpected error: {type(exc).__name__}: {exc}")
            )

    def _record(self, state: StepState, result: dict[str, Any] | None, error: str | None) -> None:
        manifest = self.manifest
        # positional: the keywords of 15 fields cost more than building the record
        step = StepRecord(
            self.run.id,
            self.seq,
            manifest.name,
            manifest.effect.value,
            manifest.permission,
            self.args,
            self.reason,
            state,
            self.key,
            self._started,
            time.time(),
            result,
            error,
            None,  # compensation: a read has none
            None,  # compensation_error
            self.approval,
            None,  # resolution
            None,  # rollback_state
            None,  # rollback_reason
            self.requires,
        )
        self.run._keep_read(step)
