"""``reversi-gateway``: an MCP server that journals every call to an upstream MCP server.

::

    reversi-gateway --manifests DIR --data DIR --upstream-cmd CMD [--upstream-arg ARG]...
                    [--scope PERMISSION]... [--approve TOOL]... [--durability process|power]
                    [--call-timeout SECONDS]

Exit status: 0 when the client closed the session; 2 for a bad command line, an invalid
manifest set or an unusable data directory (one line on stderr naming the problem); 1
when the upstream server cannot be started. See ``docs/gateway.md``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from ..errors import ConfigurationError, ManifestError
from ..journal import Durability, resolve_data_dir
from ..manifest import Approval
from ..mcp.gateway import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    GatewayConfig,
    load_manifest_dir,
    serve_gateway,
)
from ._common import CliError, Parser, fail

__all__ = ["build_parser", "main", "parse_config"]

PROG = "reversi-gateway"


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
        "--data",
        metavar="DIR",
        default=None,
        help="data directory holding the journal (default: $REVERSI_DATA or ./reversi-data)",
    )
    parser.add_argument(
        "--upstream-cmd",
        required=True,
        metavar="CMD",
        help="the upstream MCP server's executable (spoken to over stdio)",
    )
    parser.add_argument(
        "--upstream-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one argument of the upstream command (repeat; values may start with '-')",
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


def parse_config(argv: Sequence[str]) -> GatewayConfig:
    """Parse and check the command line; raises :class:`CliError` (status 2)."""
    args = build_parser().parse_args(_join_values(list(argv), ("--upstream-arg",)))
    if args.call_timeout <= 0:
        raise CliError("--call-timeout must be a positive number of seconds", 2)
    if args.start_timeout <= 0:
        raise CliError("--start-timeout must be a positive number of seconds", 2)
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
        data_dir=Path(resolve_data_dir(args.data)),
        upstream_command=args.upstream_cmd,
        upstream_args=tuple(args.upstream_arg),
        scope=scope,
        durability=Durability(args.durability),
        call_timeout=args.call_timeout,
        start_timeout=args.start_timeout,
        pre_approved=frozenset(args.approve),
        upstream_env=dict(os.environ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``reversi-gateway``; returns the exit status."""
    try:
        config = parse_config(sys.argv[1:] if argv is None else argv)
    except CliError as exc:
        return fail(PROG, str(exc), exc.code)
    try:
        return anyio.run(serve_gateway, config)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
