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
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .._replay import check_replayable
from ..audit import register_environment_secrets
from ..compensator import DEFAULT_COMPENSATION_TIMEOUT, CommandCompensator, CommandReplayer
from ..engine import DEFAULT_PARALLEL, MAX_PARALLEL, ReplayOutcome, Run
from ..errors import (
    ConfigurationError,
    JournalError,
    RollbackInProgressError,
    RunStateError,
)
from ..journal import (
    StepState,
    describe_location,
)
from ..manifest import Effect, Manifest
from ..redact import scrub
from ..registry import Registry
from . import operate
from ._common import (
    CliError,
    Parser,
    at_least_one,
    check_command,
    fail,
    positive_seconds,
    reader_went_away,
)
from ._journal import (
    EXIT_BUSY,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_JOURNAL,
    EXIT_OK,
    EXIT_USAGE,
    _get_run,
    _get_step,
    _location,
    _open_journal,
)
from ._manifests import manifest_for
from ._render import (
    STATUS_STYLE,
    print_json,
    print_replay,
    print_report,
    print_run,
    print_undo,
    when,
)
from ._rollback import allow_overwrites, os_user, print_plan, run_rollback
from .console import add_parser as add_console
from .console import run_console

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


EPILOG = """\
exit status (docs/cli.md):
  0  success; for rollback, the rollback is complete (with --dry-run: it would
     be, if every compensation succeeded)
  1  rollback is incomplete: some steps are outstanding (listed in the report);
     deal with them and run it again (with --dry-run: some would stay
     outstanding). resolve --replay: the replay did not settle the step; it
     stays uncertain. verify: a run does not match its hash chain (the first
     mismatch is named). prune: the --backups-cmd failed (the runs it listed
     were removed), or a run that would go was kept because its hash chain
     does not verify (without --force, or with it for a run whose rows cannot
     be read back)
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


def _parallel(text: str) -> int:
    value = at_least_one(text)
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
        type=positive_seconds,
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
        type=positive_seconds,
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
    operate.add_commands(sub, common, EPILOG)
    add_console(sub, common, EPILOG)
    return parser


# -- shared helpers -------------------------------------------------------------------------


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
    print_run(out, run, steps, args)
    return EXIT_OK


def _cmd_rollback(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.dry_run:
        return _cmd_plan(args, out)
    if not args.compensator_cmd:
        raise CliError(
            "the following arguments are required: --compensator-cmd (unless --dry-run) "
            "(see 'reversi rollback --help')",
            EXIT_USAGE,
        )
    check_command(args.compensator_cmd)
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
        manifest = manifest_for(step.tool, args.manifests)
        manifests = {step.tool: manifest} if manifest is not None else {}
        if manifest is not None and manifest.compensation is not None:
            comp = manifest_for(manifest.compensation.tool, args.manifests)
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
        print_replay(out, args, outcome)
    return EXIT_OK if outcome.applied is not None else EXIT_INCOMPLETE


async def _replayed(run: Run, args: argparse.Namespace, replayer: CommandReplayer) -> ReplayOutcome:
    """Check that the step may be replayed, then that the command exists, then replay."""
    check_replayable(
        run.registry, run.journal.get_step(run.id, args.step), run.journal.get_run(run.id)
    )
    check_command(args.replay_cmd, "--replay-cmd", "replay")
    # the command is killed at --timeout; this outer bound is the engine's
    return await run.replay(args.step, execute=replayer, timeout=args.timeout + 5)


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
            manifest = manifest_for(step.tool, args.manifests)
            if manifest is None:
                raise CliError(
                    f"no manifest for {step.tool} is known here, so its compensation cannot be "
                    "computed: install its connector or pass --manifests DIR",
                    EXIT_USAGE,
                )
            manifests[step.tool] = manifest
        run = Run.open(journal, Registry(manifests), args.run)
        try:
            resolved = run.resolve(args.step, applied=applied, result=result, decided_by=os_user())
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
        print_undo(out, resolved)
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
        # a compensator or a replay gets this environment: what it echoes of a credential
        # in it (a token in its stderr) is scrubbed from the journal and the output
        register_environment_secrets()
        commands: dict[str, Callable[[], int]] = {
            "runs": lambda: _cmd_runs(args, out),
            "show": lambda: _cmd_show(args, out),
            "rollback": lambda: _cmd_rollback(args, out, err),
            "resolve": lambda: _cmd_resolve(args, out),
            **operate.commands(args, out, err),
            "console": lambda: run_console(args, lambda: _open_journal(args), _location(args), out),
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
