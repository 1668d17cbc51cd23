"""``reversi``: inspect journaled runs, roll them back, resolve uncertain steps.

Argument parsing and output only: the work is done by :class:`reversi_core.engine.Run`
on the journal :func:`reversi_core.journal.open_journal` opens (a data directory's SQLite
journal, or a PostgreSQL one named by a URL that is never printed). Human output is drawn with rich;
``--json`` output is printed plainly (never wrapped or truncated). Errors are one line
on stderr. Exit statuses are listed in :data:`EPILOG` and in ``docs/cli.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .._replay import check_replayable
from ..compensator import DEFAULT_COMPENSATION_TIMEOUT, CommandCompensator, CommandReplayer
from ..connector import load_connector_class
from ..engine import DEFAULT_PARALLEL, MAX_PARALLEL, ReplayOutcome, Run
from ..errors import (
    ConfigurationError,
    JournalError,
    RollbackInProgressError,
    RunStateError,
)
from ..journal import (
    DATA_ENV,
    JOURNAL_ENV,
    Journal,
    RunRecord,
    StepRecord,
    StepState,
    describe_location,
    open_journal,
    resolve_location,
)
from ..manifest import Effect, Manifest
from ..redact import scrub
from ..registry import Registry
from ._common import CliError, Parser, check_journal_option, fail, reader_went_away
from ._render import (
    STATUS_STYLE,
    print_json,
    print_report,
    resolve_hint,
    rollback_text,
    state_text,
    step_details,
    unresolved,
    when,
)
from ._rollback import allow_overwrites, os_user, print_plan, run_rollback

__all__ = [
    "EXIT_BUSY",
    "EXIT_INCOMPLETE",
    "EXIT_INTERNAL",
    "EXIT_JOURNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "main",
    "os_user",
]

PROG = "reversi"

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_USAGE = 2
EXIT_JOURNAL = 3
EXIT_BUSY = 4
EXIT_INTERNAL = 5

EPILOG = """\
exit status (docs/cli.md):
  0  success; for rollback, the rollback is complete (with --dry-run: it would
     be, if every compensation succeeded)
  1  rollback is incomplete: some steps are outstanding (listed in the report);
     deal with them and run it again (with --dry-run: some would stay
     outstanding). resolve --replay: the replay did not settle the step; it
     stays uncertain
  2  usage or bad input: bad arguments, unknown run or step, malformed
     --result-json, a step that is not uncertain, a compensator or replay
     command that cannot be found, no manifest for a step being resolved, a
     step that cannot be replayed (its tool does not declare replay, its window
     has passed, it was resolved already, or its run's rollback has started),
     --overwrite of a step with no compensation to run, or with --dry-run, a
     journal location that is not taken (--journal and --data together, a
     libpq key=value string, a URL of an unknown scheme, a URL that is malformed
     or holds a password on the command line)
  3  journal error: the data directory or journal is missing or unreadable,
     the PostgreSQL journal cannot be reached, refuses the role or holds no
     journal, or it was written by a newer reversi-core (its schema version is
     higher than this one knows)
  4  another process is rolling back the same run right now; this one refused
     to start (try again when it ends)
  5  internal error: a bug in Reversi; please report it
130  interrupted (Ctrl-C); the journal keeps whatever was done, and running the
     rollback again continues

The journal is --journal URL|DIR (a postgresql:// URL, or a data directory), else
--data DIR, else $REVERSI_JOURNAL, else $REVERSI_DATA, else ./reversi-data. --journal
and --data together are refused, and so are both variables set when neither option is
given. A journal URL is never printed: it may carry a password.
"""

DEFAULT_REPLAY_CMD = "reversi-connectors replay"
"""The command ``reversi resolve --replay`` sends a step's call through, unless told otherwise."""

# -- parsing ------------------------------------------------------------------------------


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _parallel(text: str) -> int:
    value = _at_least_one(text)
    if value > MAX_PARALLEL:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_PARALLEL} compensations run at once (each may be a process of "
            f"its own): {text!r}"
        )
    return value


def build_parser() -> Parser:
    """The argument parser of ``reversi``."""
    fmt = argparse.RawDescriptionHelpFormatter
    common = Parser(add_help=False)
    common.add_argument(
        "--journal",
        metavar="URL|DIR",
        help="the journal: a postgresql:// URL or a data directory "
        "(default: $REVERSI_JOURNAL, else the data directory); a URL holding a password "
        "is refused here (use a password file, or $REVERSI_JOURNAL)",
    )
    common.add_argument(
        "--data",
        metavar="DIR",
        help="data directory holding the SQLite journal "
        "(default: $REVERSI_DATA, else ./reversi-data); not with --journal",
    )
    parser = Parser(
        prog=PROG,
        description="Inspect the journaled runs of AI agents, roll them back, "
        "resolve uncertain steps.",
        epilog=EPILOG,
        formatter_class=fmt,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    runs = sub.add_parser(
        "runs",
        parents=[common],
        help="list runs",
        epilog=EPILOG,
        formatter_class=fmt,
        description="List the journaled runs, oldest first.",
    )
    runs.add_argument("--json", action="store_true", help="print JSON instead of a table")

    show = sub.add_parser(
        "show",
        parents=[common],
        help="show a run and its steps",
        epilog=EPILOG,
        formatter_class=fmt,
        description="Show a run and every step, with uncertain steps marked.",
    )
    show.add_argument("run", metavar="RUN", help="run id")
    show.add_argument("--json", action="store_true", help="print JSON instead of tables")

    rollback = sub.add_parser(
        "rollback",
        parents=[common],
        help="roll a run back",
        epilog=EPILOG,
        formatter_class=fmt,
        description="Undo a run newest step first. Each compensation is one invocation of the "
        "compensator command, which reads the call as JSON on stdin. Running the same rollback "
        "again retries only what is outstanding.",
    )
    rollback.add_argument("run", metavar="RUN", help="run id")
    rollback.add_argument(
        "--compensator-cmd",
        metavar="CMD",
        help="command run once per compensation (split like a shell line, run without a shell), "
        'e.g. "reversi-connectors compensate --root ."; required unless --dry-run',
    )
    rollback.add_argument(
        "--parallel",
        metavar="N",
        type=_parallel,
        default=DEFAULT_PARALLEL,
        help="run up to N compensations at once, for steps that neither require one another "
        "nor touch overlapping resources; 1 undoes one step at a time, newest first "
        f"(default: {DEFAULT_PARALLEL}, at most {MAX_PARALLEL})",
    )
    rollback.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (which compensations run in which wave, what is deferred, "
        "unrecoverable or uncertain) without running anything or writing to the journal",
    )
    rollback.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=DEFAULT_COMPENSATION_TIMEOUT,
        help=f"time limit of one compensation (default: {DEFAULT_COMPENSATION_TIMEOUT:g})",
    )
    rollback.add_argument(
        "--overwrite",
        metavar="STEP",
        type=int,
        action="append",
        default=[],
        help="let this step's compensation overwrite what someone changed since the call "
        "(repeatable). A compensation refuses to put back a prior state over a later change; "
        "this records, in the step's journal entry, that you (the OS user) decided the change "
        "should go, and the decision holds for every later rollback of the run",
    )
    rollback.add_argument(
        "--json", action="store_true", help="print the report (or with --dry-run the plan) as JSON"
    )

    resolve = sub.add_parser(
        "resolve",
        parents=[common],
        help="record whether an uncertain step took effect",
        epilog=EPILOG,
        formatter_class=fmt,
        description="Record a person's finding about an uncertain step: it was applied (a "
        "rollback will undo it) or not applied (a rollback will leave it alone). Or, with "
        "--replay, learn it: send the step's call again with its original idempotency key, "
        "for tools whose vendor honours keys, and record what the vendor answers.",
    )
    resolve.add_argument("run", metavar="RUN", help="run id")
    resolve.add_argument("step", metavar="STEP", type=int, help="step number")
    which = resolve.add_mutually_exclusive_group(required=True)
    which.add_argument("--applied", action="store_true", help="the call did take effect")
    which.add_argument("--not-applied", action="store_true", help="the call did not take effect")
    which.add_argument(
        "--replay",
        action="store_true",
        help="send the call again with the step's own idempotency key (only for tools whose "
        "manifest declares replay, within its window, for a step not resolved yet, in a run "
        "whose rollback has not started) and record the vendor's answer",
    )
    resolve.add_argument(
        "--replay-cmd",
        metavar="CMD",
        default=DEFAULT_REPLAY_CMD,
        help="with --replay: the command that sends the call, reading it as JSON on stdin "
        f'(split like a shell line, run without a shell; default: "{DEFAULT_REPLAY_CMD}")',
    )
    resolve.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=DEFAULT_COMPENSATION_TIMEOUT,
        help=f"with --replay: time limit of the replay (default: {DEFAULT_COMPENSATION_TIMEOUT:g})",
    )
    resolve.add_argument(
        "--result-json",
        metavar="JSON",
        help="with --applied: the JSON object the call returned, when the compensation's "
        "arguments come from the result",
    )
    resolve.add_argument(
        "--manifests",
        metavar="DIR",
        help="directory of manifest files (JSON or YAML) to find the tool's compensation in, "
        "for tools whose connector is not installed here",
    )
    resolve.add_argument("--json", action="store_true", help="print the resolved step as JSON")
    return parser


# -- shared helpers -------------------------------------------------------------------------


def _location(args: argparse.Namespace) -> str:
    """The journal's location from ``--journal``, ``--data`` and the environment."""
    if not args.data:  # with both, that is said first; else a URL refused for its form may hold one
        check_journal_option(args.journal)
    try:
        return resolve_location(args.journal, args.data)
    except ConfigurationError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def _open_journal(args: argparse.Namespace, *, read_only: bool = False) -> Journal:
    """The journal, never created; ``read_only`` (``runs``, ``show``, ``rollback --dry-run``)
    migrates, recovers and writes nothing. Raises :class:`CliError` (status 3)."""
    location = _location(args)
    try:
        return open_journal(location, create=False, read_only=read_only)
    except JournalError as exc:
        message = str(exc)
        named = args.journal or args.data or os.environ.get(JOURNAL_ENV) or os.environ.get(DATA_ENV)
        if not named:
            message += (
                " (the default data directory; pass --data DIR or --journal URL, or set "
                f"{DATA_ENV} or {JOURNAL_ENV})"
            )
        raise CliError(message, EXIT_JOURNAL) from None


def _get_run(journal: Journal, run_id: str) -> RunRecord:
    try:
        return journal.get_run(run_id)
    except JournalError:
        raise CliError(
            f"no run {run_id!r} in the journal of {journal.location} (see 'reversi runs')",
            EXIT_USAGE,
        ) from None


def _get_step(journal: Journal, run_id: str, seq: int) -> StepRecord:
    try:
        return journal.get_step(run_id, seq)
    except JournalError:
        raise CliError(
            f"run {run_id} has no step {seq} (see 'reversi show {run_id}')", EXIT_USAGE
        ) from None


# -- commands ---------------------------------------------------------------------------------


def _cmd_runs(args: argparse.Namespace, out: Console) -> int:
    with _open_journal(args, read_only=True) as journal:
        runs = journal.list_runs()
    if args.json:
        print_json([r.to_json() for r in runs])
        return EXIT_OK
    if not runs:
        out.print(f"no runs in {escape(describe_location(_location(args)))}")
        return EXIT_OK
    where = describe_location(_location(args))
    table = Table(title=f"runs in {escape(where)}", title_justify="left")
    table.add_column("run", no_wrap=True)
    table.add_column("started", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("steps", justify="right")
    table.add_column("label")
    for r in runs:
        table.add_row(
            r.id,
            when(r.started_at),
            Text(r.status.value, style=STATUS_STYLE.get(r.status, "")),
            str(r.step_count),
            escape(r.label or ""),
        )
    out.print(table)
    return EXIT_OK


def _cmd_show(args: argparse.Namespace, out: Console) -> int:
    with _open_journal(args, read_only=True) as journal:
        run = _get_run(journal, args.run)
        steps = journal.list_steps(args.run)
    if args.json:
        print_json({"run": run.to_json(), "steps": [s.to_json() for s in steps]})
        return EXIT_OK
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
        return EXIT_OK
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
    return EXIT_OK


def _check_command(cmd: str, flag: str = "--compensator-cmd", what: str = "compensator") -> None:
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise CliError(f"{flag} cannot be split like a shell line: {exc}", EXIT_USAGE) from None
    if not argv:
        raise CliError(f"{flag} is empty", EXIT_USAGE)
    exe = argv[0]
    if os.sep in exe:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise CliError(f"{what} command {exe} is not an executable file", EXIT_USAGE)
    elif shutil.which(exe) is None:
        raise CliError(f"{what} command {exe!r} is not on PATH", EXIT_USAGE)


def _cmd_rollback(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.dry_run:
        return _cmd_plan(args, out)
    if not args.compensator_cmd:
        raise CliError(
            "the following arguments are required: --compensator-cmd (unless --dry-run) "
            "(see 'reversi rollback --help')",
            EXIT_USAGE,
        )
    _check_command(args.compensator_cmd)
    try:
        compensator = CommandCompensator(args.compensator_cmd, timeout=args.timeout)
    except ConfigurationError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    with _open_journal(args) as journal:
        _get_run(journal, args.run)
        # The journal holds every compensation call already computed, so the rollback
        # needs no manifests: an empty registry is enough.
        run = Run.open(journal, Registry({}), args.run)
        for seq in args.overwrite:
            _get_step(journal, run.id, seq)
        allow_overwrites(run, args.overwrite, err, EXIT_USAGE)
        try:
            report = run_rollback(run, compensator, args, err)
        except RollbackInProgressError as exc:
            raise CliError(str(exc), EXIT_BUSY) from None
        except JournalError as exc:
            raise CliError(
                f"{exc}; the rollback stopped: what it did is journaled, and no compensation "
                "that succeeded runs twice; run the same 'reversi rollback' command again to "
                "continue",
                EXIT_JOURNAL,
            ) from None
    if args.json:
        print_json(report.to_json())
    else:
        print_report(out, report, args)
    return EXIT_OK if report.complete else EXIT_INCOMPLETE


def _cmd_plan(args: argparse.Namespace, out: Console) -> int:
    """``reversi rollback RUN --dry-run``: the plan, with nothing run or journaled."""
    if args.overwrite:
        raise CliError(
            "--overwrite records a decision in the journal and --dry-run writes nothing: "
            "look at the plan first, then roll back with --overwrite",
            EXIT_USAGE,
        )
    with _open_journal(args, read_only=True) as journal:
        _get_run(journal, args.run)
        plan = Run.open(journal, Registry({}), args.run).plan_rollback(parallel=args.parallel)
    if args.json:
        print_json(plan.to_json())
    else:
        print_plan(out, plan, args)
    return EXIT_OK if plan.complete else EXIT_INCOMPLETE


def _load_manifest_files(directory: str, tool: str) -> Manifest | None:
    path = Path(directory)
    if not path.is_dir():
        raise CliError(f"--manifests {directory} is not a directory", EXIT_USAGE)
    for file in sorted(path.iterdir()):
        if file.suffix not in (".json", ".yaml", ".yml"):
            continue
        try:
            text = file.read_text()
            data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise CliError(f"cannot read manifests from {file}: {exc}", EXIT_USAGE) from None
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict) and item.get("name") == tool:
                try:
                    return Manifest.model_validate(item)
                except Exception as exc:
                    raise CliError(
                        f"invalid manifest for {tool} in {file}: {exc}", EXIT_USAGE
                    ) from None
    return None


def _manifest_for(tool: str, manifests_dir: str | None) -> Manifest | None:
    if manifests_dir:
        found = _load_manifest_files(manifests_dir, tool)
        if found is not None:
            return found
    try:
        cls = load_connector_class(tool.split(".", 1)[0])
    except Exception:
        return None
    return next((m for m in cls.manifests() if m.name == tool), None)


def _parse_result(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"--result-json is not valid JSON ({exc.msg} at column {exc.colno})", EXIT_USAGE
        ) from None
    if not isinstance(value, dict):
        raise CliError("--result-json must be a JSON object", EXIT_USAGE)
    return value


def _cmd_replay(args: argparse.Namespace, out: Console) -> int:
    """``reversi resolve RUN STEP --replay``: send the call again, record the vendor's answer."""
    with _open_journal(args) as journal:
        _get_run(journal, args.run)
        step = _get_step(journal, args.run, args.step)
        manifest = _manifest_for(step.tool, args.manifests)
        manifests = {step.tool: manifest} if manifest is not None else {}
        if manifest is not None and manifest.compensation is not None:
            comp = _manifest_for(manifest.compensation.tool, args.manifests)
            if comp is not None:
                manifests[comp.name] = comp
        run = Run.open(journal, Registry(manifests), args.run)
        try:
            # refused (nothing sent) before the command is even looked for
            replayer = CommandReplayer(args.replay_cmd, timeout=args.timeout)
            outcome = anyio.run(partial(_replayed, run, args, replayer))
        except ConfigurationError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        except RunStateError as exc:  # ReplayRefusedError among them
            raise CliError(str(exc), EXIT_USAGE) from None
    if args.json:
        print_json(outcome.to_json())
    else:
        _print_replay(out, args, outcome)
    return EXIT_OK if outcome.applied is not None else EXIT_INCOMPLETE


async def _replayed(run: Run, args: argparse.Namespace, replayer: CommandReplayer) -> ReplayOutcome:
    """Check that the step may be replayed, then that the command exists, then replay."""
    check_replayable(
        run.registry, run.journal.get_step(run.id, args.step), run.journal.get_run(run.id)
    )
    _check_command(args.replay_cmd, "--replay-cmd", "replay")
    # the command is killed at --timeout; this outer bound is the engine's
    return await run.replay(args.step, execute=replayer, timeout=args.timeout + 5)


def _print_replay(out: Console, args: argparse.Namespace, outcome: ReplayOutcome) -> None:
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
    _print_undo(out, step)


def _print_undo(out: Console, resolved: StepRecord) -> None:
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


def _cmd_resolve(args: argparse.Namespace, out: Console) -> int:
    if args.replay:
        if args.result_json is not None:
            raise CliError(
                "--result-json goes with --applied only: a replay records the result the "
                "vendor answers",
                EXIT_USAGE,
            )
        return _cmd_replay(args, out)
    applied = bool(args.applied)
    if not applied and args.result_json is not None:
        raise CliError("--result-json goes with --applied only", EXIT_USAGE)
    result = _parse_result(args.result_json)
    with _open_journal(args) as journal:
        _get_run(journal, args.run)
        step = _get_step(journal, args.run, args.step)
        manifests: dict[str, Manifest] = {}
        needs_map = step.effect in (Effect.REVERSIBLE.value, Effect.COMPENSABLE.value)
        if applied and step.state is StepState.UNCERTAIN and needs_map:
            manifest = _manifest_for(step.tool, args.manifests)
            if manifest is None:
                raise CliError(
                    f"no manifest for {step.tool} is known here, so its compensation cannot be "
                    "computed: install its connector or pass --manifests DIR",
                    EXIT_USAGE,
                )
            manifests[step.tool] = manifest
        run = Run.open(journal, Registry(manifests), args.run)
        try:
            resolved = run.resolve(args.step, applied=applied, result=result)
        except RunStateError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
    if args.json:
        print_json(resolved.to_json())
        return EXIT_OK
    how = "applied" if applied else "not applied"
    out.print(
        f"step {resolved.seq} ({escape(resolved.tool)}) of run {escape(args.run)} "
        f"resolved as {how}."
    )
    if not applied:
        out.print("A rollback will leave it alone.")
    else:
        _print_undo(out, resolved)
    return EXIT_OK


# -- entry point ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``reversi``; return the exit status (see :data:`EPILOG`)."""
    parser = build_parser()
    out = Console(highlight=False)
    if not out.is_terminal and not os.environ.get("COLUMNS"):
        out = Console(highlight=False, width=120)  # a pipe or a file: no terminal to fit
    err = Console(stderr=True, highlight=False)
    try:
        try:
            args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        commands: dict[str, Callable[[], int]] = {
            "runs": lambda: _cmd_runs(args, out),
            "show": lambda: _cmd_show(args, out),
            "rollback": lambda: _cmd_rollback(args, out, err),
            "resolve": lambda: _cmd_resolve(args, out),
        }
        return commands[args.command]()
    except CliError as exc:
        return fail(PROG, str(exc), exc.code)
    except JournalError as exc:
        return fail(PROG, str(exc), EXIT_JOURNAL)
    except BrokenPipeError:
        return reader_went_away()
    except KeyboardInterrupt:
        return fail(PROG, "interrupted", 130)
    except Exception as exc:
        return fail(
            PROG,
            scrub(f"internal error, please report it: {type(exc).__name__}: {exc}"),
            EXIT_INTERNAL,
        )


if __name__ == "__main__":
    sys.exit(main())
