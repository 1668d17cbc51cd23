"""What every ``reversi`` command shares: its exit statuses, and opening the journal.

:func:`_open_journal` opens the journal named by ``--journal``, ``--data`` or the
environment (never created), and turns its failure into a :class:`CliError` with
status 3; :func:`_get_run` and :func:`_get_step` turn an unknown run or step into status 2.
"""

from __future__ import annotations

import argparse
import os

from ..errors import ConfigurationError, JournalError
from ..journal import (
    DATA_ENV,
    JOURNAL_ENV,
    Journal,
    RunRecord,
    StepRecord,
    open_journal,
    resolve_location,
)
from ._common import CliError, check_journal_option

__all__ = [
    "EXIT_BUSY",
    "EXIT_INCOMPLETE",
    "EXIT_INTERNAL",
    "EXIT_JOURNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "_get_run",
    "_get_step",
    "_location",
    "_open_journal",
]

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_USAGE = 2
EXIT_JOURNAL = 3
EXIT_BUSY = 4
EXIT_INTERNAL = 5


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
