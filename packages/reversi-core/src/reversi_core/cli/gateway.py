"""``reversi-gateway``: an MCP server that journals every call to an upstream MCP server.

::

    reversi-gateway --manifests DIR [--journal URL|DIR | --data DIR]
                    (--upstream-cmd CMD [--upstream-arg ARG]... | --upstream-url URL)
                    [--scope PERMISSION]... [--approve TOOL]... [--approval-timeout SECONDS]
                    [--durability process|power]
                    [--call-timeout SECONDS] [--start-timeout SECONDS] [--max-message-bytes N]
                    [--listen HOST:PORT [--allow-origin ORIGIN]... [--idle-timeout SECONDS]]

Without ``--listen`` it serves one client on stdin/stdout; with it, MCP over streamable
HTTP at ``http://HOST:PORT/mcp`` to clients that send the token of
``$REVERSI_GATEWAY_TOKEN``. Exit status: 0 when the client closed the session (stdio)
or the server was stopped (HTTP, SIGINT or SIGTERM); 2 for a bad command line, an
invalid manifest set, an unusable journal or an address that cannot be
bound (one line on stderr naming the problem, never a journal URL, which may carry a
password); 1 when the upstream server cannot be
started. See ``docs/gateway.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only what parsing the command line needs: the upstream is started before the slow
# imports (the MCP SDK, pydantic), so that both happen at once (docs/performance.md).
from .._childenv import child_environment
from ..errors import ConfigurationError, ManifestError
from ..journal import Durability, resolve_location
from ..mcp._listen import DEFAULT_IDLE_TIMEOUT, TOKEN_ENV, parse_listen, parse_origin, token_from
from ..redact import scrub_command
from ._common import CliError, Parser, check_journal_option, fail

if TYPE_CHECKING:
    from ..mcp.gateway import GatewayConfig

__all__ = ["build_parser", "main", "parse_config"]

PROG = "reversi-gateway"

DEFAULT_CALL_TIMEOUT = 120.0
"""Seconds to wait for the upstream's answer to one call (``--call-timeout``)."""

DEFAULT_START_TIMEOUT = 30.0
"""Seconds the upstream may take to start (``--start-timeout``)."""

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Longest JSON-RPC line accepted from the client (``--max-message-bytes``)."""


def build_parser() -> Parser:
    """The argument parser of ``reversi-gateway``."""
    parser = Parser(
        prog=PROG,
        description=(
            "Serve MCP on stdin/stdout in front of an upstream MCP server, journaling every "
            "tool call in a Reversi run so that it can be rolled back."
        ),
    )
    parser.add_argument(
        "--manifests",
        required=True,
        metavar="DIR",
        help="directory of *.json/*.yaml/*.yml manifest lists "
        "(as printed by 'reversi-connectors manifests NAME')",
    )
    parser.add_argument(
        "--journal",
        metavar="URL|DIR",
        default=None,
        help="the journal: a postgresql:// URL (a database shared by many gateways) or a "
        "data directory (default: $REVERSI_JOURNAL, else --data); a URL holding a password "
        "is refused here (use a password file, or $REVERSI_JOURNAL)",
    )
    parser.add_argument(
        "--data",
        metavar="DIR",
        default=None,
        help="data directory holding the SQLite journal (default: $REVERSI_DATA or "
        "./reversi-data); not with --journal",
    )
    upstream = parser.add_mutually_exclusive_group(required=True)
    upstream.add_argument(
        "--upstream-cmd",
        metavar="CMD",
        help="the upstream MCP server's executable (spoken to over stdio)",
    )
    upstream.add_argument(
        "--upstream-url",
        metavar="URL",
        help="the upstream MCP server's streamable HTTP endpoint (https://, or http:// to "
        "this machine); credentials from $REVERSI_UPSTREAM_TOKEN (a bearer token) and "
        "$REVERSI_UPSTREAM_HEADERS (a JSON object of headers), a CA bundle from "
        "$REVERSI_UPSTREAM_CA_FILE",
    )
    parser.add_argument(
        "--upstream-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one argument of the upstream command (repeat; values may start with '-')",
    )
    parser.add_argument(
        "--tool-namespace",
        metavar="NAME",
        default=None,
        help="for an upstream that is not a Reversi connector, whose tool names have no "
        "'connector.' prefix: its tool T is the manifests' NAME.T (and is still called T)",
    )
    parser.add_argument(
        "--scope",
        action="append",
        default=None,
        metavar="PERMISSION",
        help="grant exactly these permissions (repeat); default: every permission "
        "except those only destructive idempotent and irreversible tools need",
    )
    parser.add_argument(
        "--approve",
        action="append",
        default=[],
        metavar="TOOL",
        help="approve every call of TOOL (an 'approval: always' tool) in advance, "
        "instead of asking the client",
    )
    parser.add_argument(
        "--approval-timeout",
        type=_approval_seconds,
        default=None,
        metavar="SECONDS",
        help="when the client cannot be asked (no MCP elicitation), a call that needs "
        "approval waits up to SECONDS for a person's decision on 'reversi console' "
        "(default: it is refused at once)",
    )
    parser.add_argument(
        "--durability",
        choices=[d.value for d in Durability],
        default=Durability.PROCESS.value,
        help="process (default): survives a killed gateway; "
        "power: also a power cut (an fsync per commit)",
    )
    parser.add_argument(
        "--call-timeout",
        type=float,
        default=DEFAULT_CALL_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for the upstream's answer to one call "
        f"(default {DEFAULT_CALL_TIMEOUT:g}); a write that runs out is "
        f"uncertain",
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=DEFAULT_START_TIMEOUT,
        metavar="SECONDS",
        help=f"how long the upstream may take to start (default {DEFAULT_START_TIMEOUT:g})",
    )
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        metavar="N",
        help=f"longest JSON-RPC message (one line) accepted from the client, in bytes "
        f"(default {DEFAULT_MAX_MESSAGE_BYTES}: 16 MiB); a longer one is refused",
    )
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default=None,
        help="serve MCP over streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        "(HOST defaults to 127.0.0.1; PORT 0 picks a free one); clients send the token "
        f"of ${TOKEN_ENV} as 'Authorization: Bearer <token>'",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="with --listen: a web origin (https://app.example.com) allowed besides the "
        "gateway's own loopback ones (repeat); other Origin and Host headers are refused",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"with --listen: an HTTP session, or the run of stateless clients, ends after "
        f"this long without a request (default {DEFAULT_IDLE_TIMEOUT:g})",
    )
    return parser


def _join_values(argv: Sequence[str], options: Sequence[str]) -> list[str]:
    """Turn ``--opt VALUE`` into ``--opt=VALUE`` so that VALUE may begin with ``-``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in options and i + 1 < len(argv):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line (nothing read yet); raises :class:`CliError` (status 2)."""
    args = build_parser().parse_args(_join_values(list(argv), ("--upstream-arg",)))
    if args.call_timeout <= 0:
        raise CliError("--call-timeout must be a positive number of seconds", 2)
    if args.start_timeout <= 0:
        raise CliError("--start-timeout must be a positive number of seconds", 2)
    if args.max_message_bytes < 1024:
        raise CliError("--max-message-bytes must be at least 1024", 2)
    if not args.data:  # with both, that is said first; else a URL refused for its form may hold one
        check_journal_option(args.journal)
    try:
        # libpq's reading is checked when the journal opens (status 2 too): psycopg is a
        # slow import, and the upstream starts before any (docs/performance.md)
        args.location = resolve_location(args.journal, args.data, check_libpq=False)
    except ConfigurationError as exc:
        raise CliError(str(exc), 2) from None
    if args.tool_namespace is not None and not re.fullmatch(r"[a-z][a-z0-9]*", args.tool_namespace):
        raise CliError(
            f"--tool-namespace {args.tool_namespace}: a namespace is a connector token, "
            "lowercase letters and digits starting with a letter",
            2,
        )
    if args.upstream_url is not None:
        if args.upstream_arg:
            raise CliError("--upstream-arg goes with --upstream-cmd, not --upstream-url", 2)
        from ..mcp._upstream_http import check_url, upstream_credentials

        try:
            check_url(args.upstream_url)
            args.upstream_headers, args.upstream_ca_file = upstream_credentials(os.environ)
        except ValueError as exc:
            raise CliError(str(exc), 2) from None
    if args.listen is None:
        if args.allow_origin:
            raise CliError("--allow-origin needs --listen (it is about HTTP clients)", 2)
    else:
        try:
            args.listen_at = parse_listen(args.listen)
            args.allow_origin = [parse_origin(o) for o in args.allow_origin]
            args.token = token_from(os.environ)
        except ValueError as exc:
            raise CliError(str(exc), 2) from None
        if args.idle_timeout <= 0:
            raise CliError("--idle-timeout must be a positive number of seconds", 2)
    # checked before the upstream is started (the manifests themselves are read after, while
    # it starts): a mistyped directory is said at once, with no server started for nothing
    manifests = Path(args.manifests)
    if not manifests.is_dir():
        what = "is not a directory" if manifests.exists() else "does not exist"
        raise CliError(f"--manifests {args.manifests}: {what}", 2)
    return args


def make_config(args: argparse.Namespace) -> GatewayConfig:
    """Read the manifests and check the rest; raises :class:`CliError` (status 2)."""
    from ..manifest import Approval
    from ..mcp.gateway import GatewayConfig, load_manifest_dir

    try:
        registry = load_manifest_dir(args.manifests)
    except ManifestError as exc:
        raise CliError(f"invalid manifests in {args.manifests}: {exc}", 2) from None
    except ConfigurationError as exc:
        raise CliError(str(exc), 2) from None
    scope: frozenset[str] | None = None
    if args.scope is not None:
        known = {m.permission for m in registry}
        unknown = sorted(set(args.scope) - known)
        if unknown:
            raise CliError(
                f"--scope {unknown[0]}: no manifest needs this permission "
                f"(known: {', '.join(sorted(known))})",
                2,
            )
        scope = frozenset(args.scope)
    for tool in args.approve:
        if tool not in registry:
            raise CliError(f"--approve {tool}: no manifest declares this tool", 2)
        if registry.get(tool).approval is not Approval.ALWAYS:
            raise CliError(f"--approve {tool}: this tool does not ask for approval", 2)
    return GatewayConfig(
        registry=registry,
        journal=args.location,
        upstream_command=args.upstream_cmd or "",
        upstream_args=tuple(args.upstream_arg),
        upstream_url=args.upstream_url,
        upstream_headers=getattr(args, "upstream_headers", {}),
        upstream_ca_file=getattr(args, "upstream_ca_file", None),
        tool_namespace=args.tool_namespace,
        scope=scope,
        durability=Durability(args.durability),
        call_timeout=args.call_timeout,
        start_timeout=args.start_timeout,
        pre_approved=frozenset(args.approve),
        upstream_env=upstream_environment(),
        max_message_bytes=args.max_message_bytes,
        approval_timeout=args.approval_timeout,
    )


def _approval_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 86400 seconds: {text!r}")
    return value


def parse_config(argv: Sequence[str]) -> GatewayConfig:
    """:func:`parse_args` then :func:`make_config`."""
    return make_config(parse_args(argv))


def upstream_environment() -> dict[str, str]:
    """The upstream's environment: this process's, without ``$REVERSI_JOURNAL`` and the
    clients' token (``$REVERSI_GATEWAY_TOKEN``): :func:`~reversi_core._childenv.child_environment`.

    The upstream needs its own credentials from the environment, never the journal's
    URL, which may carry the journal's password, nor the token clients present.
    """
    return child_environment()


def _start_upstream(args: argparse.Namespace) -> subprocess.Popen[bytes]:
    # The same start as reversi_core.mcp.gateway.spawn_upstream, done here before that
    # module (and the MCP SDK, ~0.5 s of imports) is loaded, so that both start at once.
    return subprocess.Popen(
        [args.upstream_cmd, *args.upstream_arg],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=upstream_environment(),
        start_new_session=True,
    )


def _kill(process: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _loop_options() -> dict[str, Any]:
    """anyio's asyncio options: uvloop's event loop where it is installed.

    The gateway serves a read-only call from the loop's callbacks (docs/performance.md),
    so the loop's own work is a fifth of a relayed read's instructions on the standard
    loop, most of which uvloop does in C. It is a dependency where it is built (not on
    Windows); the standard loop serves the same calls without it.
    """
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``reversi-gateway``; returns the exit status."""
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except CliError as exc:
        return fail(PROG, str(exc), exc.code)
    try:
        process = _start_upstream(args) if args.upstream_cmd is not None else None
    except OSError as exc:
        command = scrub_command([args.upstream_cmd, *args.upstream_arg])
        return fail(
            PROG, f"the upstream server ({command}) could not be started: {exc.strerror or exc}", 1
        )
    try:
        config = make_config(args)
    except CliError as exc:
        if process is not None:
            _kill(process)
        return fail(PROG, str(exc), exc.code)
    import anyio

    try:
        if args.listen is not None:
            from ..mcp._listen import Listen
            from ..mcp.http_gateway import serve_gateway_http

            host, port = args.listen_at
            listen = Listen(host, port, tuple(args.allow_origin), args.idle_timeout)
            return anyio.run(serve_gateway_http, config, listen, args.token, process)
        from ..mcp.gateway import serve_gateway

        return anyio.run(serve_gateway, config, process, backend_options=_loop_options())
    except KeyboardInterrupt:
        if process is not None:
            _kill(process)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
