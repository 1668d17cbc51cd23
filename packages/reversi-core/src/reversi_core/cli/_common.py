"""What the command-line tools share: argument parsing that never exits, one-line errors."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from typing import NoReturn

from ..journal import JOURNAL_ENV
from ..journal._open import holds_password
from ..redact import scrub

__all__ = [
    "CliError",
    "Parser",
    "at_least_one",
    "check_command",
    "check_journal_option",
    "error_line",
    "fail",
    "positive_seconds",
]


class CliError(Exception):
    """An error to report as one line on stderr with an exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors raise :class:`CliError` (status 2)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')", 2)


def check_journal_option(journal: str | None) -> None:
    """Refuse a ``--journal`` URL that holds a password (:class:`CliError`, status 2).

    A command line is visible to every user of the machine (``ps``, ``/proc/PID/cmdline``).
    The message says where the password goes instead and never repeats the URL.
    """
    if journal and holds_password(journal):
        raise CliError(
            "--journal: the URL holds a password, and a command line is visible to every "
            "user of this machine (ps); it was not used, nor is it repeated here. Give the "
            f"URL without the password and keep the password in a password file (~/.pgpass, "
            "or the file $PGPASSFILE names, mode 0600: "
            "https://www.postgresql.org/docs/current/libpq-pgpass.html), or give the whole "
            f"URL in ${JOURNAL_ENV} instead of --journal",
            2,
        )


def one_line(text: str) -> str:
    """``text`` scrubbed and folded onto one line."""
    return " ".join(scrub(text).split())


def error_line(prog: str, message: str) -> str:
    """``"<prog>: error: <message>"``, scrubbed, on one line."""
    return f"{prog}: error: {one_line(message)}"


def fail(prog: str, message: str, code: int) -> int:
    """Print :func:`error_line` on stderr and return ``code``."""
    print(error_line(prog, message), file=sys.stderr)
    return code


def reader_went_away() -> int:
    """Handle a closed stdout (``reversi runs | head``): no error line, exit status 1.

    Python's advice for SIGPIPE: point stdout at devnull so the interpreter's final flush
    does not raise again (https://docs.python.org/3/library/signal.html#note-on-sigpipe).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 1


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def check_command(cmd: str, flag: str = "--compensator-cmd", what: str = "compensator") -> None:
    """Refuse (:class:`CliError`, status 2) a command that cannot be split or found."""
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise CliError(f"{flag} cannot be split like a shell line: {exc}", 2) from None
    if not argv:
        raise CliError(f"{flag} is empty", 2)
    exe = argv[0]
    if os.sep in exe:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise CliError(f"{what} command {exe} is not an executable file", 2)
    elif shutil.which(exe) is None:
        raise CliError(f"{what} command {exe!r} is not on PATH", 2)
