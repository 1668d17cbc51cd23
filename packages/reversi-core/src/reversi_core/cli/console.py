"""``reversi console``: serve the web console over a journal (docs/console.md).

::

    reversi console [--data DIR | --journal URL] [--host 127.0.0.1] [--port N]
                    [--compensator-cmd CMD] [--timeout SECONDS] [--parallel N]
                    [--manifests DIR] [--allow-remote]

Prints ``http://HOST:PORT/?token=T`` on stdout and serves until Ctrl-C. The token is
``$REVERSI_CONSOLE_TOKEN`` or a new random one; the journal URL is never printed. A host
that is not a loopback address is refused unless ``--allow-remote`` is given (the
token is still required, and the traffic is plain HTTP).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import secrets
import signal
import socket
from types import FrameType
from typing import Any

from rich.console import Console

from ..compensator import DEFAULT_COMPENSATION_TIMEOUT, CommandCompensator
from ..engine import DEFAULT_PARALLEL
from ..errors import ConfigurationError
from ..redact import register_secret
from ._common import CliError, at_least_one, check_command, positive_seconds
from ._rollback import os_user

__all__ = ["TOKEN_ENV", "add_parser", "run_console"]

TOKEN_ENV = "REVERSI_CONSOLE_TOKEN"  # noqa: S105 - the variable's name, not a token
DEFAULT_PORT = 8770


def add_parser(sub: Any, common: argparse.ArgumentParser, epilog: str) -> None:
    """Add ``console`` to ``reversi``'s subcommands."""
    console = sub.add_parser(
        "console",
        parents=[common],
        help="serve the web console (runs, timelines, rollbacks, approvals)",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Serve a local web page over the journal: the runs, a run's timeline "
        "and rollback plan, rollbacks and resolutions started from the page, and the queue of "
        "calls waiting for approval (reversi-gateway --approval-timeout). The page needs the "
        f"token printed at start (or ${TOKEN_ENV}).",
    )
    console.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    console.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port (default: {DEFAULT_PORT}; 0: any free one)",
    )
    console.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host that is not a loopback address (the token is still required; "
        "the traffic is not encrypted)",
    )
    console.add_argument(
        "--compensator-cmd",
        metavar="CMD",
        help="command run once per compensation of a rollback started from the page, as for "
        "'reversi rollback' (without it the page cannot roll back)",
    )
    console.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=positive_seconds,
        default=DEFAULT_COMPENSATION_TIMEOUT,
        help=f"time limit of one compensation (default: {DEFAULT_COMPENSATION_TIMEOUT:g})",
    )
    console.add_argument(
        "--parallel",
        metavar="N",
        type=at_least_one,
        default=DEFAULT_PARALLEL,
        help=f"compensations at once, as for 'reversi rollback' (default: {DEFAULT_PARALLEL})",
    )
    console.add_argument(
        "--manifests",
        metavar="DIR",
        help="manifest files to compute a compensation from when a step is resolved as applied",
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_console(args: argparse.Namespace, journal_opener: Any, location: str, out: Console) -> int:
    """Serve the console until interrupted; return the exit status (0).

    Raises :class:`CliError` (status 2) for a host that is not loopback without
    ``--allow-remote``, a bad port, compensator command or ``$REVERSI_CONSOLE_TOKEN``
    (never shown), or an address it cannot listen on; the journal's own errors
    (:class:`~reversi_core.errors.JournalError`) as opening it raises them.
    """
    if not _loopback(args.host) and not args.allow_remote:
        raise CliError(
            f"--host {args.host} is not a loopback address: anyone who can reach it could try "
            "the console; pass --allow-remote to serve it there anyway (the token is still "
            "required, and the traffic is plain HTTP)",
            2,
        )
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port {args.port}: not a port number", 2)
    compensator = None
    if args.compensator_cmd:
        check_command(args.compensator_cmd)
        try:
            compensator = CommandCompensator(args.compensator_cmd, timeout=args.timeout)
        except ConfigurationError as exc:
            raise CliError(str(exc), 2) from None
    token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
    if len(token) < 16:
        raise CliError(f"${TOKEN_ENV} is too short: give at least 16 characters", 2)
    register_secret(token)
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    with sock:  # closed however this ends: a failed bind, a journal that cannot be opened
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((args.host.strip("[]"), args.port))
        except OSError as exc:
            raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}", 2) from None
        sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
        _serve(args, sock, journal_opener, location, token, compensator)
    return 0


def _serve(
    args: argparse.Namespace,
    sock: socket.socket,
    journal_opener: Any,
    location: str,
    token: str,
    compensator: CommandCompensator | None,
) -> None:
    """Open the journal, print the address and serve on ``sock`` until interrupted.

    Raises :class:`KeyboardInterrupt` when SIGINT stopped the server (status 130).
    """
    import uvicorn

    from ..console import ConsoleConfig, create_app

    port = sock.getsockname()[1]
    hosts = (
        {args.host.strip("[]"), "127.0.0.1", "localhost", "::1"} if _loopback(args.host) else None
    )
    with journal_opener() as journal:
        app = create_app(
            ConsoleConfig(
                journal=journal,
                location=location,
                token=token,
                cookie=f"reversi_console_{port}",
                hosts=frozenset(hosts) if hosts else None,
                compensator=compensator,
                timeout=args.timeout,
                parallel=args.parallel,
                manifests=args.manifests,
                user=os_user(),
            )
        )
        shown = f"[{args.host}]" if ":" in args.host else args.host
        print(f"reversi console: http://{shown}:{port}/?token={token}", flush=True)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        server = _server_class()(config)
        try:
            server.run(sockets=[sock])
        except (KeyboardInterrupt, asyncio.CancelledError):
            # uvicorn re-raises the signal it stopped on once it has shut down; what that
            # raises depends on the handler in place then (asyncio's runner cancels its task)
            if server.stopped_by is None:
                raise
        if server.stopped_by == signal.SIGINT:
            # Ctrl-C always ends with status 130, whichever handler saw the signal
            raise KeyboardInterrupt


def _server_class() -> type:
    """uvicorn's Server, remembering the signal that stopped it (``stopped_by``)."""
    import uvicorn

    class Server(uvicorn.Server):
        stopped_by: int | None = None

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self.stopped_by is None:
                self.stopped_by = sig
            super().handle_exit(sig, frame)

    return Server
