"""``reversi rollback``: running a rollback for a person, showing its progress, printing its plan.

:func:`run_rollback` runs :meth:`reversi_core.engine.Run.rollback` with Ctrl-C turned
into a cancellation between compensations, and shows what happens through a
:class:`RollbackDisplay`: one plain line per decision on stderr, and on a terminal (not
with ``--json``) a live line below them with the steps done, running, failed and
deferred and the time so far (rich's progress display:
https://rich.readthedocs.io/en/stable/progress.html). :func:`print_plan` prints a
:class:`~reversi_core.engine.RollbackPlan` for ``--dry-run``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pwd
import signal
import time
from functools import partial
from types import TracebackType

import anyio
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from ..compensator import CommandCompensator
from ..engine import DEFAULT_PARALLEL, RollbackPlan, RollbackReport, Run
from ..errors import RunStateError
from ..journal import RollbackState, StepRecord
from ._common import CliError
from ._render import data_flag, rollback_label

__all__ = ["RollbackDisplay", "allow_overwrites", "os_user", "print_plan", "run_rollback"]

_FAILED = (RollbackState.COMPENSATION_FAILED, RollbackState.VERIFICATION_FAILED)


def os_user() -> str:
    """Who runs this process, for the journal: the name of the real user id (or the id)."""
    uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def allow_overwrites(run: Run, steps: list[int], err: Console, usage_status: int) -> None:
    """Record the ``--overwrite`` decisions before the rollback starts (RB-10).

    Raises :class:`CliError` with ``usage_status`` for a step that has no compensation
    to run or was compensated already.
    """
    who = os_user()
    for seq in sorted(set(steps)):
        try:
            step = run.allow_overwrite(seq, by=who)
        except RunStateError as exc:
            raise CliError(str(exc), usage_status) from None
        err.print(
            f"  step {seq} {escape(step.tool)}: overwrite allowed by {escape(who)}; its "
            "compensation will not keep what changed since the call"
        )


class RollbackDisplay:
    """What a person sees of a running rollback (see the module docstring).

    ``total`` is the number of steps of the run; ``earlier`` the steps compensated by an
    earlier rollback (their line says ``already compensated``); ``live`` turns the live
    line on. Use as a context manager; :meth:`started` and :meth:`decided` are the
    rollback's ``started`` and ``progress`` callbacks.
    """

    def __init__(
        self, err: Console, run_id: str, total: int, *, live: bool, earlier: set[int]
    ) -> None:
        self.err = err
        self.run_id = run_id
        self.earlier = earlier
        self.running: set[int] = set()
        self.done = self.failed = self.deferred = 0
        self.began = time.monotonic()
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if live:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn(f"rolling back {escape(run_id)}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                console=err,
            )
            self._task = self._progress.add_task("rollback", total=total, counts=self.counts())

    def __enter__(self) -> RollbackDisplay:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._update()
            self._progress.stop()

    def counts(self) -> str:
        """``"3 running · 1 failed · 2 deferred"``."""
        return f"{len(self.running)} running · {self.failed} failed · {self.deferred} deferred"

    def started(self, step: StepRecord) -> None:
        """A compensation started."""
        self.running.add(step.seq)
        self._update()

    def decided(self, step: StepRecord, state: RollbackState | None, reason: str | None) -> None:
        """A step was decided (and journaled): print its line, count it."""
        self.running.discard(step.seq)
        self.done += 1
        self.failed += int(state in _FAILED)
        self.deferred += int(state is RollbackState.DEFERRED)
        line = Text.assemble(
            f"  step {step.seq} {step.tool}: ",
            rollback_label(state, earlier=step.seq in self.earlier),
        )
        if reason and state is not RollbackState.NOT_APPLICABLE:
            line.append(f" ({reason})")
        self.err.print(line)
        self._update()

    def _update(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=self.done, counts=self.counts())


async def _interruptible(
    run: Run,
    compensator: CommandCompensator,
    display: RollbackDisplay,
    timeout: float,
    parallel: int,
) -> RollbackReport:
    """Run the rollback; Ctrl-C stops it starting compensations, never cuts one short.

    SIGINT cancels an anyio scope instead of raising KeyboardInterrupt at a random
    point: the compensations in flight (shielded by the engine) finish and their
    outcomes are journaled, no other starts, then KeyboardInterrupt is raised.
    """
    loop = asyncio.get_running_loop()
    with anyio.CancelScope() as scope:
        loop.add_signal_handler(signal.SIGINT, scope.cancel)
        try:
            return await run.rollback(
                compensate=compensator,
                progress=display.decided,
                started=display.started,
                compensation_timeout=timeout,
                parallel=parallel,
            )
        finally:
            loop.remove_signal_handler(signal.SIGINT)
    raise KeyboardInterrupt


def run_rollback(
    run: Run, compensator: CommandCompensator, args: argparse.Namespace, err: Console
) -> RollbackReport:
    """Roll ``run`` back as ``reversi rollback`` was told (``--timeout``, ``--parallel``).

    The live line is shown when ``err`` is a terminal and ``--json`` was not given.
    Raises :class:`KeyboardInterrupt` after Ctrl-C and what :meth:`Run.rollback` raises.
    """
    steps = run.steps()
    earlier = {s.seq for s in steps if s.rollback_state is RollbackState.COMPENSATED}
    live = err.is_terminal and not args.json
    with RollbackDisplay(err, run.id, len(steps), live=live, earlier=earlier) as display:
        # the command is killed at --timeout; this outer bound also shields the
        # compensations in flight from Ctrl-C
        return anyio.run(
            partial(_interruptible, run, compensator, display, args.timeout + 5, args.parallel)
        )


def _touches(resources: list[str] | None) -> str:
    if resources is None:
        return "[dim]anything (declares no resources): runs alone[/]"
    return escape(", ".join(resources)) or "[dim]nothing[/]"


def _steps(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers))


def print_plan(out: Console, plan: RollbackPlan, args: argparse.Namespace) -> None:
    """Print a rollback plan for a person (``reversi rollback RUN --dry-run``)."""
    count = sum(len(w) for w in plan.waves)
    at_once = "one at a time" if plan.parallel == 1 else f"at most {plan.parallel} at once"
    out.print(
        f"[bold]rollback plan of {escape(plan.run_id)}[/] ({plan.status}): {count} "
        f"compensation(s) in {len(plan.waves)} wave(s), {at_once}. Nothing has run."
    )
    if plan.note:
        out.print(f"[bold yellow]Note: {escape(plan.note)}.[/]", soft_wrap=True)
    if plan.waves:
        table = Table()
        table.add_column("wave", justify="right", no_wrap=True)
        table.add_column("step", justify="right", no_wrap=True)
        table.add_column("tool", no_wrap=True)
        table.add_column("undone by", no_wrap=True)
        table.add_column("touches")
        table.add_column("after", no_wrap=True)
        for s in plan.of("compensate"):
            table.add_row(
                str(s.wave),
                str(s.step),
                escape(s.tool),
                escape(s.compensation or ""),
                _touches(s.resources),
                _steps(s.after),
            )
        out.print(table)
        out.print(
            "[dim]A step starts once the steps in its 'after' column have settled, "
            "without waiting for the rest of the wave before it.[/]"
        )
    sections = [
        ("deferred", "bold yellow", "Deferred (a later step that requires them would still stand)"),
        ("uncertain", "bold yellow", "Uncertain or pending (each says what it needs)"),
        ("unrecoverable", "bold red", "Unrecoverable (a person must undo these by hand)"),
        ("compensation_failed", "bold red", "No compensation can be computed"),
    ]
    for action, style, title in sections:
        steps = plan.of(action)
        if steps:
            out.print(f"\n[{style}]{title}:[/]")
            for s in steps:
                out.print(
                    f"  step {s.step} {escape(s.tool)}: {escape(s.reason or '')}", soft_wrap=True
                )
    done = [s.step for s in plan.of("already_compensated")]
    idle = [s.step for s in plan.of("not_applicable")]
    if done:
        out.print(f"\nAlready compensated: step(s) {_steps(done)}.")
    if idle:
        out.print(
            f"Nothing to undo (read-only, failed, rejected or not applied): step(s) {_steps(idle)}."
        )
    outstanding = len(plan.steps) - count - len(done) - len(idle)
    if plan.complete:
        out.print("\nIf every compensation succeeds, the rollback will be [bold green]complete[/].")
    else:
        out.print(
            f"\nEven if every compensation succeeds, {outstanding} step(s) will stay "
            "[bold red]outstanding[/]."
        )
    flag = f" --parallel {plan.parallel}" if plan.parallel != DEFAULT_PARALLEL else ""
    out.print(
        f"Run it: [bold]reversi rollback {escape(plan.run_id)} --compensator-cmd CMD"
        f"{escape(flag + data_flag(args))}[/]",
        soft_wrap=True,
    )
