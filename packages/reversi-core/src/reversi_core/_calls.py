"""What one call carries across the engine and the connectors: its context and a compensation.

:class:`CallContext` is what a tool learns about a call besides its arguments;
:class:`CompensationCall` is one compensation to run, the JSON object a compensator
process reads on stdin (:mod:`reversi_core.compensator`), and :data:`Compensator` is
what runs one. They know nothing of the connector protocol (no connector class, no
pydantic model). Public through :mod:`reversi_core.connector`, the place to import them
from.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ._frozen import quick_init
from .errors import InvalidArgumentsError

__all__ = ["CallContext", "CompensationCall", "Compensator"]


@quick_init
@dataclass(frozen=True)
class CallContext:
    """What a tool learns about the call besides its arguments.

    ``idempotency_key`` is stable for the step (and, for a compensation, for the run and
    step, across every retry of the rollback). ``compensation`` is true when the call is
    a rollback's compensation. ``replay`` is true when the call re-sends an uncertain
    step's forward call with the step's original key, to learn its outcome
    (:meth:`reversi_core.engine.Run.replay`): a tool then raises ``ToolError`` only when
    the answer shows that the call did not take effect, and ``EffectUncertainError`` when
    it does not settle the question. ``timeout`` is the caller's limit in seconds, if any.

    ``overwrite`` is true only for a compensation a person allowed to overwrite what
    changed since the call (``reversi rollback RUN --overwrite STEP``, recorded in the
    step's journal entry; docs/engine.md, RB-10). A restoring compensation normally
    refuses, with a ``ToolError`` naming what changed, when the thing it would restore no
    longer holds what the forward call produced; with ``overwrite`` it skips that
    precondition. Nothing an agent sends can set it: a forward call's context never has
    it, and ``reversi-connectors serve`` reads no such key from a request.
    """

    run_id: str | None = None
    step: int | None = None
    idempotency_key: str | None = None
    compensation: bool = False
    replay: bool = False
    timeout: float | None = None
    overwrite: bool = False


@dataclass(frozen=True)
class CompensationCall:
    """One compensation to run: the JSON object a compensator process reads on stdin.

    ``overwrite`` is true when a person allowed this step's compensation to overwrite a
    change made since the call (:attr:`CallContext.overwrite`). ``timeout`` is how long
    the call may take, in seconds (``None``: no limit given); it reaches the tool as
    :attr:`CallContext.timeout`, so that its requests give up within it.
    """

    tool: str
    args: dict[str, Any]
    idempotency_key: str
    run_id: str
    step: int
    overwrite: bool = False
    timeout: float | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"tool", "args", "idempotency_key", "run_id", "step", "overwrite"}``, and
        ``"timeout"`` (seconds) when there is one."""
        data: dict[str, Any] = {
            "tool": self.tool,
            "args": self.args,
            "idempotency_key": self.idempotency_key,
            "run_id": self.run_id,
            "step": self.step,
            "overwrite": self.overwrite,
        }
        if self.timeout is not None:
            data["timeout"] = self.timeout
        return data

    @classmethod
    def from_json(cls, data: Any) -> CompensationCall:
        """Parse the stdin object; raises :class:`InvalidArgumentsError` naming the bad field.

        ``overwrite`` may be missing (an engine older than it), which means false; when
        present it must be a boolean. ``timeout`` may be missing (no limit) or null; when
        present it is a positive number of seconds.
        """
        if not isinstance(data, dict):
            raise InvalidArgumentsError("compensation call must be a JSON object")
        problems = []
        for key, kind in (
            ("tool", str),
            ("args", dict),
            ("idempotency_key", str),
            ("run_id", str),
            ("step", int),
        ):
            if key not in data:
                problems.append(f"{key}: missing")
            elif not isinstance(data[key], kind) or (kind is int and isinstance(data[key], bool)):
                problems.append(f"{key}: expected {kind.__name__}")
        if not isinstance(data.get("overwrite", False), bool):
            problems.append("overwrite: expected bool")
        timeout = data.get("timeout")
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < float("inf")
        ):
            problems.append("timeout: expected a positive number of seconds")
        if problems:
            raise InvalidArgumentsError(
                "invalid compensation call: " + "; ".join(problems), problems=problems
            )
        return cls(
            tool=data["tool"],
            args=data["args"],
            idempotency_key=data["idempotency_key"],
            run_id=data["run_id"],
            step=data["step"],
            overwrite=data.get("overwrite", False),
            timeout=float(timeout) if timeout is not None else None,
        )


Compensator = Callable[[CompensationCall], Awaitable[dict[str, Any]]]
"""Runs one compensation; returns its JSON result or raises (any exception means it failed)."""
