"""What one call passes around in the engine, and the parts of a call that need no run.

Its outcome, approval, withheld tools (public through :mod:`reversi_core.engine`), and
the execution of a tool with the mapping of what it raised onto a step state, the
compensation computed from the argument map, what a rejected call keeps of its
arguments. See :meth:`reversi_core.engine.Run.attempt`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio

from ._frozen import quick_init
from ._resources import render_resources
from .connector import CallContext
from .errors import CallRejected, EffectUncertainError, JournalError, ReversiError, ToolError
from .journal import StepState
from .manifest import Manifest, MappingFailed, evaluate_argument_map
from .redact import scrub, scrub_json

__all__ = [
    "REJECTED_ARGS_LIMIT",
    "AnswerCallback",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "CallOutcome",
    "Executor",
    "Withheld",
    "compensation_for",
    "failure",
    "kept_args",
    "run_tool",
    "unicode_problems",
]

REJECTED_ARGS_LIMIT = 64 * 1024
"""Bytes of a rejected call's arguments (as compact JSON) kept in the journal.

Larger arguments are replaced by ``{"_omitted": <why>, "bytes": <size>, "sha256":
<digest of the JSON>}``: a refused 30 MB write adds a few hundred bytes to the journal,
not 30 MB. A call that runs keeps its arguments whole (its compensation needs them)."""

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


@dataclass(frozen=True)
class Withheld:
    """Why calls to a tool that has a manifest are refused: ``code`` and ``reason``.

    ``code`` becomes :attr:`~reversi_core.errors.ToolUnavailableError.code`
    (``"drifted"``, ``"not_offered"``); ``reason`` is the refusal's message.
    """

    code: str
    reason: str


@quick_init
@dataclass(frozen=True)
class CallOutcome:
    """What one call came to, as :meth:`Run.attempt` returns it.

    ``step`` is the journal step (``None`` when nothing could be journaled: the run was
    rolled back, or the journal failed before the call ran). ``state`` is the step's
    forward state (``rejected``, ``succeeded``, ``failed`` or ``uncertain``; ``None``
    with ``step`` ``None``). ``result`` is the tool's JSON result for ``succeeded``;
    ``error`` the error otherwise (a :class:`~reversi_core.errors.CallRejected`,
    :class:`~reversi_core.errors.ToolError`, :class:`~reversi_core.errors.EffectUncertainError`,
    :class:`~reversi_core.errors.RunClosedError` or
    :class:`~reversi_core.errors.JournalError`). ``journal_error`` is set when the
    call ran but its outcome could not be journaled. Unpacks as ``(step, result)``.
    """

    run_id: str
    tool: str
    step: int | None
    state: StepState | None
    result: dict[str, Any] | None = None
    error: ReversiError | None = None
    journal_error: JournalError | None = None

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return self.state is StepState.SUCCEEDED

    def unwrap(self) -> dict[str, Any]:
        """The result of a call that succeeded; raises :attr:`error` otherwise."""
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    def __iter__(self) -> Iterator[Any]:
        """``step, result = outcome``."""
        yield self.step
        yield self.result


AnswerCallback = Callable[[CallOutcome], None]
"""Handed a call's outcome as soon as the rules allow it to be told (see :meth:`Run.attempt`)."""


def kept_args(args: Any) -> dict[str, Any]:
    """What the journal keeps of a rejected call's arguments (see :data:`REJECTED_ARGS_LIMIT`)."""
    if not isinstance(args, dict):
        return {"_invalid": repr(args)[:1000]}
    try:
        text = json.dumps(args, separators=(",", ":"))
    except (TypeError, ValueError):
        return {"_invalid": repr(args)[:1000]}
    if len(text) <= REJECTED_ARGS_LIMIT:
        return args
    return {
        "_omitted": f"arguments of {len(text)} bytes; a rejected call keeps at most "
        f"{REJECTED_ARGS_LIMIT} bytes of them",
        "bytes": len(text),
        "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
    }


_SCALARS = (int, float, bool, type(None))


def unicode_problems(value: Any, where: str, out: list[str]) -> None:
    """Note every string in ``value`` that holds a lone surrogate (not Unicode text).

    The path of a value (``args.path``) is spelled out only for one that is not an ASCII
    string (``str.isascii``, one pass in C) or a number: most arguments cost a loop.
    """
    if isinstance(value, str):
        if not value.isascii():
            _surrogates(value, where, out)
        return
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        kind = type(item)
        if kind is str:
            if not item.isascii():
                _surrogates(item, f"{where}.{key}", out)
        elif kind not in _SCALARS:
            unicode_problems(item, f"{where}.{key}", out)


def _surrogates(value: str, where: str, out: list[str]) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        out.append(
            f"{where}: holds a lone surrogate (U+{ord(value[exc.start]):04X}) at "
            f"character {exc.start}, which is not Unicode text"
        )


async def run_tool(
    manifest: Manifest,
    args: dict[str, Any],
    ctx: CallContext,
    execute: Executor,
    timeout: float | None,
) -> tuple[StepState, dict[str, Any] | None, ReversiError | None]:
    """Execute the tool (CALL-5): ``(state, result, error)``.

    A definite failure is ``failed``; a lost answer, a timeout or any unexpected
    exception from a writing tool is ``uncertain`` (:func:`failure`). Cancellation
    propagates.
    """
    try:
        if timeout is not None:
            with anyio.fail_after(timeout):
                result = await execute(manifest.name, args, ctx)
        else:
            result = await execute(manifest.name, args, ctx)
    except Exception as exc:
        return failure(manifest, exc, timeout)
    return StepState.SUCCEEDED, scrub_json(result), None


def failure(
    manifest: Manifest, exc: Exception, timeout: float | None
) -> tuple[StepState, None, ReversiError]:
    """What an exception raised by the tool's execution means: ``(state, None, error)``.

    :class:`ToolError` (and a :class:`CallRejected`: the tool's own refusal, nothing
    ran) is ``failed``; :class:`EffectUncertainError` is ``uncertain``; a
    :class:`TimeoutError` (``timeout`` seconds ran out) and anything unforeseen are
    ``uncertain`` for a writing tool and ``failed`` for a read-only one.
    """
    tool = manifest.name
    if isinstance(exc, ToolError | CallRejected):
        return StepState.FAILED, None, exc
    if isinstance(exc, TimeoutError):
        msg = f"{tool} did not finish within {timeout} s"
        if manifest.writes:
            return (
                StepState.UNCERTAIN,
                None,
                EffectUncertainError(msg + "; it may or may not have taken effect"),
            )
        return StepState.FAILED, None, ToolError(msg, code="timeout")
    if isinstance(exc, EffectUncertainError):
        return StepState.UNCERTAIN, None, exc
    # A bug, anything unforeseen: for a write the outcome is unknown.
    text = scrub(f"{type(exc).__name__}: {exc}")
    if manifest.writes:
        return (
            StepState.UNCERTAIN,
            None,
            EffectUncertainError(f"{tool}: unexpected error, outcome unknown: {text}"),
        )
    return StepState.FAILED, None, ToolError(f"{tool}: unexpected error: {text}", code="unexpected")


def compensation_for(
    manifest: Manifest, args: dict[str, Any], result: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, str | None]:
    """The compensation call ``{"tool", "args"}`` a step's argument map gives, or why none.

    When the compensation declares resource templates and they can be rendered, the
    call also carries ``"resources"``: the sorted names it touches
    (:mod:`reversi_core._resources`); without that key a rollback treats the step as
    touching anything.
    """
    if manifest.compensation is None:
        return None, None
    try:
        comp_args = evaluate_argument_map(manifest.compensation, args, result)
    except MappingFailed as exc:
        return None, str(exc)
    call: dict[str, Any] = {"tool": manifest.compensation.tool, "args": comp_args}
    if manifest.compensation.resources:
        names = render_resources(manifest.compensation.resources, args, result)
        if names is not None:
            call["resources"] = names
    return call, None
