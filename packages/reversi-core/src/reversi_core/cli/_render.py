"""How ``reversi`` draws runs, steps and rollback reports for people (rich), and JSON."""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..engine import ReplayOutcome, RollbackReport
from ..journal import RollbackState, RunRecord, RunStatus, StepRecord, StepState
from ..journal._owner import owner_alive
from ..manifest import Effect

__all__ = [
    "ROLLBACK_STYLE",
    "STATE_STYLE",
    "STATUS_STYLE",
    "data_flag",
    "print_json",
    "print_replay",
    "print_report",
    "print_run",
    "print_undo",
    "resolve_hint",
    "rollback_label",
    "rollback_text",
    "state_text",
    "step_details",
    "unresolved",
    "when",
]

STATUS_STYLE = {
    RunStatus.OPEN: "cyan",
    RunStatus.ROLLING_BACK: "magenta",
    RunStatus.ROLLED_BACK: "green",
    RunStatus.ROLLBACK_INCOMPLETE: "bold red",
}

ROLLBACK_STYLE = {
    RollbackState.COMPENSATED: "green",
    RollbackState.NOT_APPLICABLE: "dim",
    RollbackState.COMPENSATION_FAILED: "bold red",
    RollbackState.VERIFICATION_FAILED: "bold red",
    RollbackState.DEFERRED: "yellow",
    RollbackState.UNRECOVERABLE: "bold red",
}

STATE_STYLE = {
    StepState.SUCCEEDED: "green",
    StepState.FAILED: "red",
    StepState.REJECTED: "dim",
    StepState.PENDING: "magenta",
    StepState.UNCERTAIN: "bold yellow",
}


def when(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts).astimezone().isoformat(sep=" ", timespec="seconds")


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def data_flag(args: argparse.Namespace) -> str:
    """The option naming the journal in a command a hint shows: `` --data DIR``, `` --journal
    DIR``, `` --journal URL`` for a URL (never printed: it may carry a password), or
    nothing when the journal came from the environment."""
    journal = getattr(args, "journal", None)
    if journal:
        return " --journal URL" if "://" in journal else f" --journal {shlex.quote(journal)}"
    return f" --data {shlex.quote(args.data)}" if args.data else ""


def state_text(step: StepRecord) -> Text:
    if step.state is StepState.UNCERTAIN:
        if step.resolution:
            return Text(f"uncertain → {step.resolution.replace('_', ' ')}", style="yellow")
        return Text("⚠ UNCERTAIN", style=STATE_STYLE[step.state])
    if step.state is StepState.PENDING and step.owner and not owner_alive(step.owner):
        # read-only commands recover nothing: say what the next command that writes will do
        return Text("pending (process gone)", style="yellow")
    return Text(step.state.value, style=STATE_STYLE.get(step.state, ""))


def rollback_text(step: StepRecord) -> Text:
    if step.rollback_state is None:
        return Text("")
    return Text(step.rollback_state.value, style=ROLLBACK_STYLE.get(step.rollback_state, ""))


def rollback_label(state: RollbackState | None, *, earlier: bool = False) -> Text:
    """A rollback state for the report: ``outstanding`` for none, and ``already
    compensated`` for a step compensated by an earlier rollback (``earlier``)."""
    if state is None:
        return Text("outstanding", style="bold yellow")
    if state is RollbackState.COMPENSATED and earlier:
        return Text("already compensated", style="dim green")
    return Text(state.value, style=ROLLBACK_STYLE.get(state, ""))


def unresolved(steps: Sequence[StepRecord]) -> list[StepRecord]:
    """Uncertain steps a person should resolve: a read-only one changed nothing either way."""
    return [
        s
        for s in steps
        if s.state is StepState.UNCERTAIN
        and s.resolution is None
        and s.effect != Effect.READ_ONLY.value
    ]


def resolve_hint(
    console: Console, run_id: str, steps: Sequence[StepRecord], args: argparse.Namespace
) -> None:
    if not steps:
        return
    console.print(
        f"\n[bold yellow]⚠ {len(steps)} uncertain step(s):[/] the call may or may not have taken "
        "effect. Check the backend, then record what you found:"
    )
    for s in steps:
        cmd = f"reversi resolve {run_id} {s.seq} --applied|--not-applied{data_flag(args)}"
        console.print(f"  step {s.seq} {escape(s.tool)}:  [bold]{escape(cmd)}[/]", soft_wrap=True)
    console.print("A rollback leaves uncertain steps alone until they are resolved.")


def step_details(step: StepRecord) -> str:
    parts = []
    if step.error:
        parts.append(f"[red]error:[/] {escape(step.error)}")
    if step.compensation_error:
        parts.append(f"[red]no compensation:[/] {escape(step.compensation_error)}")
    if step.rollback_reason:
        parts.append(f"[yellow]rollback:[/] {escape(step.rollback_reason)}")
    if step.resolution and step.resolved_by:
        how = step.resolution.replace("_", " ")
        parts.append(f"[yellow]resolved {how}:[/] by {escape(step.resolved_by)}")
    if step.overwrite:
        by = step.overwrite.get("by", "?")
        at = step.overwrite.get("at")
        parts.append(
            f"[magenta]overwrite allowed:[/] by {escape(str(by))}"
            + (f" at {when(at)}" if isinstance(at, int | float) else "")
        )
    if step.reason:
        parts.append(f"[dim]agent: {escape(step.reason)}[/]")
    return "\n".join(parts)


def print_report(out: Console, report: RollbackReport, args: argparse.Namespace) -> None:
    table = Table(title=f"rollback of {escape(report.run_id)}", title_justify="left")
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("tool", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("rollback", no_wrap=True)
    table.add_column("reason")
    now = set(report.compensated_now)
    for s in report.steps:
        rollback = rollback_label(s.rollback_state, earlier=s.seq not in now)
        table.add_row(
            str(s.seq), escape(s.tool), state_text(s), rollback, escape(s.rollback_reason or "")
        )
    out.print(table)
    if report.unrecoverable:
        out.print("\n[bold red]Unrecoverable[/] (a person must undo these by hand):")
        for o in report.unrecoverable:
            out.print(f"  step {o.step} {escape(o.tool)}: {escape(o.reason)}")
    uncertain = unresolved(report.steps)
    skip = {o.step for o in report.unrecoverable} | {s.seq for s in uncertain}
    others = [o for o in report.outstanding if o.step not in skip]
    if others:
        out.print("\n[bold yellow]Outstanding:[/]")
        for o in others:
            out.print(f"  step {o.step} {escape(o.tool)} ({o.state}): {escape(o.reason)}")
    refused = [
        o.step
        for o in others
        if o.state == RollbackState.COMPENSATION_FAILED.value
        and not next((s.overwrite for s in report.steps if s.seq == o.step), None)
    ]
    if refused:
        flags = " ".join(f"--overwrite {n}" for n in refused)
        out.print(
            "A compensation that refused because its target changed since the call keeps "
            "that change. If the change should go after all, run the same command again with "
            f"[bold]{escape(flags)}[/] (for the steps concerned).",
            soft_wrap=True,
        )
    resolve_hint(out, report.run_id, uncertain, args)
    if report.complete:
        out.print(
            f"\n[bold green]rollback complete[/]: {len(report.compensated_now)} compensation(s) "
            "ran now; every step is undone or had nothing to undo."
        )
    else:
        out.print(
            f"\n[bold red]rollback incomplete[/]: {len(report.outstanding)} step(s) outstanding. "
            "Deal with them and run the same command again; compensations that already "
            "succeeded are not repeated."
        )


def print_replay(out: Console, args: argparse.Namespace, outcome: ReplayOutcome) -> None:
    """What ``reversi resolve --replay`` found, for a person."""
    step = outcome.step
    head = f"step {step.seq} ({escape(step.tool)}) of run {escape(args.run)} was replayed"
    if outcome.applied is None:
        out.print(f"{head}; its outcome is still unknown, so it stays uncertain:")
        out.print(escape(outcome.reason or ""), soft_wrap=True)
        out.print("Try the replay again later, or resolve it with --applied or --not-applied.")
        return
    if outcome.applied is False:
        out.print(f"{head}: it did not take effect, and is resolved as not applied.")
        out.print(escape(outcome.reason or ""), soft_wrap=True)
        out.print("A rollback will leave it alone.")
        return
    out.print(f"{head}: it took effect, and is resolved as applied.")
    out.print(escape(json.dumps(step.result, ensure_ascii=False)), soft_wrap=True)
    print_undo(out, step)


def print_undo(out: Console, resolved: StepRecord) -> None:
    """How a rollback will undo a resolved step."""
    if resolved.compensation:
        call = json.dumps(resolved.compensation["args"], ensure_ascii=False)
        out.print(
            f"A rollback will undo it with {escape(resolved.compensation['tool'])} {escape(call)}.",
            soft_wrap=True,
        )
    elif resolved.compensation_error:
        out.print(
            "[bold red]Its compensation cannot be computed:[/] "
            + escape(resolved.compensation_error)
        )
    else:
        out.print(
            "It has no compensation: a rollback will list it as unrecoverable, "
            "for a person to undo."
        )


def print_run(
    out: Console, run: RunRecord, steps: Sequence[StepRecord], args: argparse.Namespace
) -> None:
    """A run and its steps for a person (``reversi show``)."""
    out.print(f"[bold]run {escape(run.id)}[/]" + (f"  ({escape(run.label)})" if run.label else ""))
    out.print(f"  status:   [{STATUS_STYLE.get(run.status, '')}]{run.status.value}[/]")
    out.print(f"  started:  {when(run.started_at)}")
    if run.rollback_started_at:
        out.print(
            f"  rollback: started {when(run.rollback_started_at)}"
            + (
                f", last finished {when(run.rollback_finished_at)}"
                if run.rollback_finished_at
                else ""
            )
        )
    out.print(f"  scope:    {escape(', '.join(run.scope)) or '(none)'}")
    out.print(f"  steps:    {len(steps)}")
    if not steps:
        return
    rolled = any(s.rollback_state or s.rollback_reason for s in steps)
    needs = any(s.requires for s in steps)
    table = Table()
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("tool / effect", no_wrap=True)
    table.add_column("state", no_wrap=True)
    if rolled:
        table.add_column("rollback", no_wrap=True)
    table.add_column("reason / error", min_width=30, ratio=1)
    if needs:
        table.add_column("requires", no_wrap=True)
    for s in steps:
        row: list[Any] = [str(s.seq), f"{escape(s.tool)}\n[dim]{s.effect}[/]", state_text(s)]
        if rolled:
            row.append(rollback_text(s))
        row.append(step_details(s))
        if needs:
            row.append(", ".join(map(str, s.requires)))
        table.add_row(*row)
    out.print(table)
    resolve_hint(out, run.id, unresolved(steps), args)
