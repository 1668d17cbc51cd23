"""A writing call between its committed intent and its outcome: :class:`WriteCall`.

A call of a tool that may change something is journaled ``pending``, durably, before it
runs (CALL-3): :meth:`Run._begin_write <reversi_core.engine.Run>` commits that intent
and hands back this object, with the step's number and idempotency key (CALL-5). What
the call came to is told here: :meth:`WriteCall.settle` (or
:meth:`~WriteCall.succeeded`, :meth:`~WriteCall.failed`) computes the compensation from
the argument map and journals the outcome (CALL-6, CALL-7); :meth:`~WriteCall.abandon`
journals a call cut short (cancelled) as ``uncertain`` and tells nobody.

The outcome is committed before anyone is told it (JNL-2): what a client hears is what a
rollback will find, and a commit that fails makes the call ``uncertain``, saying how to
resolve the step (the tool did run).

:meth:`Run.attempt <reversi_core.engine.Run.attempt>` awaits the tool between the two
halves; :meth:`Run.begin_call <reversi_core.engine.Run.begin_call>` hands them to a
caller that executes the tool itself, without a task (the gateway, from its event
loop's callbacks).
"""

from __future__ import annotations

import contextlib
import shlex
from typing import TYPE_CHECKING, Any

from ._json import dumps_text
from ._outcome import AnswerCallback, CallOutcome, compensation_for
from ._reads import BegunCall
from ._resources import template_sources
from .errors import EffectUncertainError, JournalError, ReversiError
from .journal import StepRecord, StepState
from .manifest import Manifest, _parsed_source
from .redact import scrub

if TYPE_CHECKING:
    from .engine import Run

__all__ = ["WriteCall", "result_flag"]

RESULT_HINT_CHARS = 1000
"""The longest ``--result-json`` value an error message spells out in full."""


def result_flag(manifest: Manifest, result: object) -> str:
    """What to add to a ``reversi resolve --applied`` command for the result, or ``""``.

    When the compensation's argument map or its resource templates read the call's
    result (``result.<field>``), a step resolved as applied needs those fields to plan
    its compensation, and a lost outcome's result is only in this process: the fields
    named (their top-level values, from the already scrubbed ``result``) are spelled out
    as a shell-quoted JSON object of at most :data:`RESULT_HINT_CHARS` characters, else
    named. ``result`` is what the executor returned (anything; only a JSON object has
    fields). Returns e.g. ``", adding --result-json '{"backup":".reversi/b/1"}' (what its
    compensation needs of the result)"``.
    """
    compensation = manifest.compensation
    if compensation is None:
        return ""
    sources = [s for s in compensation.argument_map.values() if isinstance(s, str)]
    for template in compensation.resources or []:
        sources.extend(template_sources(template))
    parsed = [_parsed_source(s) for s in sources]
    fields = sorted({path[0] for root, path in parsed if root == "result"})
    if not fields:
        return ""
    given = result if isinstance(result, dict) else {}  # an executor may return anything
    known = {f: given[f] for f in fields if f in given}
    text = dumps_text(known)
    if len(known) == len(fields) and len(text) <= RESULT_HINT_CHARS:
        return f", adding --result-json {shlex.quote(text)} (what its compensation needs of the result)"
    return (
        ", adding --result-json with a JSON object of the result's "
        f"{', '.join(fields)} (what its compensation needs of it)"
    )


class WriteCall(BegunCall):
    """One call of a writing tool whose intent is committed (CALL-3).

    ``seq`` is its step, ``key`` its idempotency key (``reversi-<run>-<step>``, CALL-5).
    Exactly one of :meth:`settle`, :meth:`succeeded`, :meth:`failed` or :meth:`abandon`
    may be called, once; a second raises :class:`~reversi_core.errors.RunStateError`.
    """

    __slots__ = ()

    def __init__(self, run: Run, manifest: Manifest, args: dict[str, Any], step: StepRecord):
        self.run = run
        self.manifest = manifest
        self.args = args
        self.seq = step.seq
        self.key = step.idempotency_key
        self._done = False

    def settle(
        self,
        state: StepState,
        result: dict[str, Any] | None,
        error: ReversiError | None,
        answer: AnswerCallback | None,
    ) -> CallOutcome:
        """Journal the outcome (``result`` already scrubbed), with the compensation
        computed from the argument map (CALL-6, CALL-7), then hand it to ``answer`` (when
        given) and return it.

        An outcome that cannot be journaled is ``uncertain``: its
        :class:`~reversi_core.errors.EffectUncertainError` says that the tool ran and how
        to resolve the step (which stays ``pending``, found uncertain once this process
        stops), and :attr:`~reversi_core.engine.CallOutcome.journal_error` holds the
        journal's error.
        """
        self._finish()
        run, seq, tool = self.run, self.seq, self.manifest.name
        compensation = comp_error = None
        if result is not None:
            compensation, comp_error = compensation_for(self.manifest, self.args, result)
        try:
            self._journal(state, result, error, compensation, comp_error)
        except JournalError as exc:
            lost = EffectUncertainError(
                f"{tool} was carried out, but its outcome could not be journaled: {exc}. "
                f"Step {seq} stays pending and is found uncertain once this process stops; "
                f"then resolve it with 'reversi resolve {run.id} {seq} --applied'"
                f"{result_flag(self.manifest, result)}."
                if state is StepState.SUCCEEDED
                else f"{tool} ran, and its outcome could not be journaled: {exc}"
            )
            lost.step = seq
            outcome = CallOutcome(
                run.id, tool, seq, StepState.UNCERTAIN, error=lost, journal_error=exc
            )
        else:
            if error is not None:
                error.step = seq
            outcome = CallOutcome(run.id, tool, seq, state, result=result, error=error)
        if answer is not None:
            answer(outcome)
        return outcome

    def abandon(self, exc: BaseException) -> None:
        """The call was cut short by ``exc`` (cancelled): its effect is unknown, so the step
        is journaled ``uncertain``; nobody is told. If even that commit fails, the step
        stays ``pending`` and is found uncertain when the journal is next opened."""
        self._finish()
        text = scrub(f"{type(exc).__name__}: {exc}")
        with contextlib.suppress(JournalError):
            self.run._finish(self.seq, StepState.UNCERTAIN, error=f"unexpected error: {text}")

    def _journal(
        self,
        state: StepState,
        result: dict[str, Any] | None,
        error: ReversiError | None,
        compensation: dict[str, Any] | None,
        comp_error: str | None,
    ) -> None:
        run = self.run
        run._finish(
            self.seq,
            state,
            result=result,
            error=scrub(str(error)) if error is not None else None,
            compensation=compensation,
            compensation_error=comp_error,
        )
        if result is not None or state is StepState.SUCCEEDED:
            run._edge_index().add(self.seq, self.manifest.name, self.args, result, settled=True)
