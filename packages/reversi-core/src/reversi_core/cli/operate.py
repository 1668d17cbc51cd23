"""``reversi prune``, ``reversi verify`` and ``reversi export``: operating a journal for months.

Argument parsing and output only: retention is :mod:`reversi_core.retention`, the chain's
check is the journal's ``verify_run`` (``journal/_chain.py``), the export
:mod:`reversi_core.audit`. :func:`add_commands` adds the three to ``reversi``'s parser;
:func:`commands` gives ``reversi``'s ``main`` their handlers. docs/operate.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from .._childenv import child_environment
from ..audit import export_records, register_environment_secrets
from ..redact import scrub, scrub_command
from ..retention import PRUNE_STATES, PrunePlan, parse_duration, plan_prune, prune
from ._common import CliError, check_command
from ._journal import EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE, _get_run, _open_journal
from ._render import print_json

__all__ = ["BACKUPS_TIMEOUT", "add_commands", "commands"]

BACKUPS_TIMEOUT = 300.0
"""Seconds ``--backups-cmd`` may take."""


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_commands(sub: Any, common: argparse.ArgumentParser, epilog: str) -> None:
    """Add ``prune``, ``verify`` and ``export`` to ``reversi``'s sub-parsers."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "prune",
        parents=[common],
        help="remove old runs that are rolled back or closed, and the backups none needs",
        epilog=epilog,
        formatter_class=fmt,
        description="Remove from the journal the runs rolled back completely (rolled_back) or "
        "whose rollback ended with nothing outstanding left (closed), whose last activity is "
        "older than --older-than. Never an open run, a run being rolled back, or a run with a "
        "step pending, uncertain or not yet compensated. With --backups-cmd, then has the "
        "connectors remove their own backups that no step left in the journal names.",
    )
    p.add_argument(
        "--older-than",
        metavar="DURATION",
        type=_duration,
        required=True,
        help="the age a run's last activity must exceed: one number and one unit s, m, h, d or w "
        "(45s, 90m, 12h, 30d, 2w)",
    )
    p.add_argument(
        "--state",
        action="append",
        choices=PRUNE_STATES,
        help="a run state that may go (repeatable; default: both)",
    )
    p.add_argument(
        "--backups-cmd",
        metavar="CMD",
        help="command that removes the connectors' unneeded backups, read as JSON on stdin, "
        'e.g. "reversi-connectors prune-backups --root ." (split like a shell line, run '
        "without a shell)",
    )
    p.add_argument("--dry-run", action="store_true", help="list what would go; change nothing")
    p.add_argument(
        "--force",
        action="store_true",
        help="also remove a run whose hash chain does not verify (kept otherwise, with a "
        "warning and exit status 1)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    v = sub.add_parser(
        "verify",
        parents=[common],
        help="check runs against their hash chain (exit 1 when one was tampered with)",
        epilog=epilog,
        formatter_class=fmt,
        description="Recompute each run's hash chain and compare the latest record of each "
        "step with the step as the journal holds it; report the first record that does not "
        "match. Runs written before the chain existed are reported as not chained.",
    )
    which = v.add_mutually_exclusive_group(required=True)
    which.add_argument("run", metavar="RUN", nargs="?", help="run id")
    which.add_argument("--all", action="store_true", help="every run of the journal")
    v.add_argument("--json", action="store_true", help="print JSON instead of lines")

    e = sub.add_parser(
        "export",
        parents=[common],
        help="write a run as JSON Lines for an audit (credentials scrubbed)",
        epilog=epilog,
        formatter_class=fmt,
        description="Write one JSON object per line: the run (with its chain's check and head "
        "hash), each state change of each step (its chain record), each step, each event. "
        "Credentials are scrubbed: the environment's and any value under a key naming one.",
    )
    e.add_argument("run", metavar="RUN", help="run id")
    e.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")


def commands(args: argparse.Namespace, out: Console, err: Console) -> dict[str, Callable[[], int]]:
    """The handlers of the three commands, for ``reversi``'s ``main``."""
    return {
        "prune": lambda: _cmd_prune(args, out, err),
        "verify": lambda: _cmd_verify(args, out),
        "export": lambda: _cmd_export(args),
    }


# -- prune ---------------------------------------------------------------------------------


def _run_backups_cmd(cmd: str, plan: PrunePlan, dry_run: bool) -> dict[str, list[str]]:
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise CliError(
            f"--backups-cmd cannot be split like a shell line: {exc}", EXIT_USAGE
        ) from None
    if not argv:
        raise CliError("--backups-cmd is empty", EXIT_USAGE)
    request = {"needed": sorted(plan.needed), "before": plan.before, "dry_run": dry_run}
    try:
        done = subprocess.run(
            argv,
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=BACKUPS_TIMEOUT,
            check=False,
            env=child_environment(),  # never the journal's URL (its password) or the token
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CliError(
            f"--backups-cmd {scrub_command(argv)} failed: {scrub(str(exc))}", EXIT_INCOMPLETE
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise CliError(
            f"--backups-cmd {scrub_command(argv)} exited {done.returncode}: {scrub(last)}",
            EXIT_INCOMPLETE,
        )
    try:
        answer = json.loads(done.stdout)
        removed: dict[str, list[str]] = answer["connectors"]
    except (ValueError, KeyError, TypeError):
        raise CliError(
            f"--backups-cmd {scrub_command(argv)} printed no prune answer", EXIT_INCOMPLETE
        ) from None
    return removed


def _cmd_prune(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.backups_cmd is not None:  # before anything goes: a program that is not there
        check_command(args.backups_cmd, "--backups-cmd", "backups")
    with _open_journal(args, read_only=args.dry_run) as journal:
        plan = plan_prune(
            journal, args.older_than, args.state or PRUNE_STATES, time.time(), force=args.force
        )
        removed = [r.id for r, _ in plan.remove] if args.dry_run else prune(journal, plan)
    backups: dict[str, list[str]] | None = None
    failed: CliError | None = None
    if args.backups_cmd is not None:
        try:
            backups = _run_backups_cmd(args.backups_cmd, plan, args.dry_run)
        except CliError as exc:  # the runs are gone already: say which, then fail
            failed = exc
    _print_prune(args, out, plan, removed, backups)
    going = {r.id for r, _ in plan.remove}
    for run, what in plan.unverified:  # on stderr, with --json too
        done = "removed anyway (--force)" if run.id in going else "kept it"
        err.print(f"warning: {escape(what)}; prune {done}")
    if failed is not None:
        raise failed
    kept_tampered = any(run.id not in going for run, _ in plan.unverified)
    return EXIT_INCOMPLETE if kept_tampered else EXIT_OK


def _print_prune(
    args: argparse.Namespace,
    out: Console,
    plan: PrunePlan,
    removed: list[str],
    backups: dict[str, list[str]] | None,
) -> None:
    if args.json:
        done = "would_remove" if args.dry_run else "removed"
        print_json({"dry_run": args.dry_run, **plan.to_json(), done: removed, "backups": backups})
        return
    verb = "would remove" if args.dry_run else "removed"
    for run, state in plan.remove:
        if run.id in removed:
            out.print(f"{verb} run {escape(run.id)} ({state}, {run.step_count} steps)")
    for run, why in plan.kept:
        if why != "it is younger than the cut-off":
            out.print(f"kept run {escape(run.id)}: {escape(why)}")
    for name, gone in (backups or {}).items():
        out.print(
            f"{verb} {len(gone)} backups of {escape(name)}"
            + "".join(f"\n  {escape(g)}" for g in gone)
        )
    out.print(f"{verb} {len(removed)} of {len(plan.remove) + len(plan.kept)} runs")


# -- verify --------------------------------------------------------------------------------


def _cmd_verify(args: argparse.Namespace, out: Console) -> int:
    with _open_journal(args, read_only=True) as journal:
        ids = [r.id for r in journal.list_runs()] if args.all else [_get_run(journal, args.run).id]
        results = [journal.verify_run(run_id) for run_id in ids]
    if args.json:
        print_json([r.to_json() for r in results])
    else:
        for r in results:
            out.print(escape(r.describe()), style=None if r.ok else "bold red")
        if args.all:
            bad = sum(not r.ok for r in results)
            out.print(f"{len(results)} runs, {bad} tampered")
    return EXIT_OK if all(r.ok for r in results) else EXIT_INCOMPLETE


# -- export --------------------------------------------------------------------------------


def _cmd_export(args: argparse.Namespace) -> int:
    register_environment_secrets()
    with _open_journal(args, read_only=True) as journal:
        _get_run(journal, args.run)
        lines = [
            json.dumps(record, ensure_ascii=False) for record in export_records(journal, args.run)
        ]
    text = "".join(line + "\n" for line in lines)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror}", EXIT_USAGE) from None
    else:
        sys.stdout.write(text)
    return EXIT_OK
