"""Rollbacks the console runs: started by a POST, watched by the page polling their progress.

One :class:`ConsoleRollbacks` per console: it runs :meth:`reversi_core.engine.Run.rollback`
as ``reversi rollback`` does (the same compensator: the ``--compensator-cmd`` command, or
an in-process one), in a task of the console's event loop, and keeps each run's
:class:`Progress` for ``GET /api/runs/RUN/rollback``. A rollback can be started again
once it ended, until it is complete; the journal refuses one that another process runs.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..connector import Compensator
from ..engine import DEFAULT_PARALLEL, Run
from ..errors import RollbackInProgressError
from ..journal import Journal, RollbackState, StepRecord
from ..redact import scrub
from ..registry import Registry

__all__ = ["ConsoleRollbacks", "Progress"]


@dataclass
class Progress:
    """One rollback the console started: what ran, what was decided, how it ended."""

    run_id: str
    total: int
    started_at: float = field(default_factory=time.time)
    running: set[int] = field(default_factory=set)
    decided: list[dict[str, Any]] = field(default_factory=list)
    finished_at: float | None = None
    complete: bool | None = None
    outstanding: int | None = None
    error: str | None = None

    @property
    def active(self) -> bool:
        """True until the rollback ended (complete, incomplete or failed)."""
        return self.finished_at is None

    def to_json(self) -> dict[str, Any]:
        """``{"run_id", "active", "total", "done", "running", "decided": [...], "complete", ...}``."""
        return {
            "run_id": self.run_id,
            "active": self.active,
            "total": self.total,
            "done": len(self.decided),
            "running": sorted(self.running),
            "decided": self.decided[-50:],
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "complete": self.complete,
            "outstanding": self.outstanding,
            "error": self.error,
        }


class ConsoleRollbacks:
    """The rollbacks of one console (see the module docstring).

    ``compensator`` runs one compensation (``None``: the console cannot roll back);
    ``timeout`` bounds one compensation, in seconds; ``parallel`` as ``--parallel``.
    """

    def __init__(
        self,
        journal: Journal,
        compensator: Compensator | None,
        *,
        timeout: float,
        parallel: int = DEFAULT_PARALLEL,
    ) -> None:
        self.journal = journal
        self.compensator = compensator
        self.timeout = timeout
        self.parallel = parallel
        self._progress: dict[str, Progress] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._scopes: dict[str, anyio.CancelScope] = {}

    def get(self, run_id: str) -> Progress | None:
        """The rollback of ``run_id`` this console started last, if any."""
        return self._progress.get(run_id)

    def start(self, run_id: str) -> Progress:
        """Start rolling ``run_id`` back in the background; return its progress.

        Raises :class:`RollbackInProgressError` when this console rolls it back already
        and :class:`RuntimeError` when it has no compensator.
        """
        if self.compensator is None:
            raise RuntimeError(
                "this console has no compensator: restart it with --compensator-cmd CMD"
            )
        current = self._progress.get(run_id)
        if current is not None and current.active:
            raise RollbackInProgressError(f"run {run_id} is being rolled back by this console")
        steps = self.journal.list_steps(run_id)
        progress = Progress(run_id, len(steps))
        self._progress[run_id] = progress
        self._scopes[run_id] = anyio.CancelScope()  # before the task runs: stop() sees it
        task = asyncio.get_running_loop().create_task(self._roll_back(progress, self.compensator))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return progress

    async def _roll_back(self, progress: Progress, compensator: Compensator) -> None:
        def started(step: StepRecord) -> None:
            progress.running.add(step.seq)

        def decided(step: StepRecord, state: RollbackState | None, reason: str | None) -> None:
            progress.running.discard(step.seq)
            progress.decided.append(
                {
                    "step": step.seq,
                    "tool": step.tool,
                    "state": state.value if state else "outstanding",
                    "reason": scrub(reason) if reason else None,
                }
            )

        scope = self._scopes[progress.run_id]
        try:
            # stop() cancels this scope, as SIGINT does ``reversi rollback``'s: the
            # compensations in flight (shielded by the engine, each bounded by its
            # timeout) finish and are journaled, no other starts
            with scope:
                run = Run.open(self.journal, Registry({}), progress.run_id)
                report = await run.rollback(
                    compensate=compensator,
                    progress=decided,
                    started=started,
                    compensation_timeout=self.timeout,
                    parallel=self.parallel,
                )
                progress.complete = report.complete
                progress.outstanding = len(report.outstanding)
            if scope.cancelled_caught:
                progress.error = "stopped: the console was interrupted; roll back again to go on"
        except Exception as exc:
            progress.error = scrub(f"{type(exc).__name__}: {exc}")
        finally:
            self._scopes.pop(progress.run_id, None)
            progress.running.clear()
            progress.finished_at = time.time()

    async def wait(self) -> None:
        """Wait for every rollback this console runs to end on its own."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def stop(self) -> None:
        """Stop every rollback this console runs (on shutdown: SIGINT, SIGTERM), as
        Ctrl-C stops ``reversi rollback``: no compensation starts any more, those running
        finish (each bounded by ``timeout`` seconds) and their outcomes are journaled,
        then this returns. The run stays ``rollback_incomplete``; rolling back again
        retries what is outstanding."""
        tasks = list(self._tasks)
        for scope in list(self._scopes.values()):
            scope.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
