"""``reversi-connectors``: serve a connector over MCP, print manifests, run a compensation
or replay an uncertain call, print the certification checklist.

Credentials come from the environment only; a flag that looks like one (``--token``,
``--api-key``, ``--password``, ``--secret``...) is refused with the name of the variable
to set. Exit statuses are listed in :data:`EPILOG` and in ``docs/cli.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
from collections.abc import Sequence
from functools import partial
from typing import Any

import anyio
import yaml

from ..compensator import EXIT_NOT_APPLIED
from ..connector import (
    CliOption,
    CompensationCall,
    Connector,
    available_connectors,
    compensator_for,
    enabled_from_env,
    load_connector_class,
    replayer_for,
)
from ..errors import (
    CallRejected,
    ConfigurationError,
    InvalidArgumentsError,
    ReversiError,
    ToolError,
)
from ._common import CliError, Parser, fail, one_line, reader_went_away

__all__ = [
    "EXIT_FAILED",
    "EXIT_NOT_APPLIED",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "main",
    "manifest_objects",
]

PROG = "reversi-connectors"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

EPILOG = """\
exit status:
  0  success (compensate: the undo succeeded; replay: the call took effect;
     its JSON result is on stdout)
  1  compensate: the compensation ran and failed, or its outcome is unknown;
     the reason is the last line of stderr
     certify: a connector has no certification fixture (it would fail every check)
     replay: the outcome of the replayed call is still unknown
  2  usage or bad input: unknown connector, a credential passed as a flag,
     malformed JSON on stdin, a connector that cannot be configured;
     replay: a call that cannot be replayed (its vendor does not honour keys,
     or the key is not the step's own)
  3  replay: the vendor's answer shows the call did not take effect
130  interrupted (Ctrl-C)

Credentials are read from the environment only, never from flags.
"""

_SECRET_FLAG = re.compile(r"token|api[-_]?key|password|passwd|secret|credential", re.IGNORECASE)
_VALUE_OPTIONS = {"--format", "--max-message-bytes"}


def _declared_options(argv: Sequence[str]) -> tuple[list[CliOption], list[CliOption]]:
    """The connector options ``serve`` and ``compensate`` take, from the connectors' declarations.

    ``serve NAME`` takes the options of NAME alone (only it is imported, so serving one
    connector stays quick to start); ``compensate`` those of every installed connector.
    A connector that cannot be loaded adds none (its error comes when it is used).
    """
    words = [w for w in argv if not w.startswith("-")]
    command = words[0] if words else None
    names: list[str] = []
    if command == "serve":
        installed = available_connectors()
        # the first word after serve that names a connector (options may come before it)
        names = [w for w in words[1:] if w in installed][:1]
    elif command in ("compensate", "replay"):
        names = sorted(available_connectors())
    found: dict[str, CliOption] = {}
    for name in names:
        try:
            declared = load_connector_class(name).cli_options
        except Exception:  # noqa: S112 - reported when the connector is used
            continue
        for option in declared:
            found.setdefault(option.flag, option)
    chosen = list(found.values())
    return (chosen, []) if command == "serve" else ([], chosen)


def build_parser(argv: Sequence[str] = ()) -> Parser:
    """The argument parser of ``reversi-connectors``.

    ``argv`` decides which connectors' own options (:class:`~reversi_core.connector.CliOption`)
    ``serve`` and ``compensate`` accept: see :func:`_declared_options`.
    """
    serve_options, compensate_options = _declared_options(argv)
    parser = Parser(
        prog=PROG,
        description="Serve Reversi connectors over MCP, print their manifests, run compensations.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="serve one connector's tools over MCP on stdio",
        description="Serve one connector's tools as an MCP server on stdin/stdout.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("name", metavar="NAME", help="connector name (see 'manifests all')")
    _add_connector_options(serve, serve_options)
    serve.add_argument(
        "--max-message-bytes",
        type=int,
        default=16 * 1024 * 1024,
        metavar="N",
        help="longest JSON-RPC message (one line) accepted, in bytes (default 16 MiB); "
        "a longer one is refused",
    )

    manifests = sub.add_parser(
        "manifests",
        help="print manifests as JSON or YAML",
        description="Print the manifests of one connector or of all installed "
        "connectors. Needs no credentials.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    manifests.add_argument("name", metavar="NAME|all", help="connector name, or 'all'")
    manifests.add_argument(
        "--format", choices=("json", "yaml"), default="json", help="output format (default: json)"
    )

    compensate = sub.add_parser(
        "compensate",
        help="run one compensation call read from stdin",
        description="Read one JSON object {tool, args, idempotency_key, run_id, step} on stdin, "
        "run the compensation with the connector that owns the tool, print its JSON result "
        "and exit 0; on failure exit non-zero with the reason as the last line of stderr. "
        "Every installed connector whose credential variable is set is enabled; connectors "
        "without credentials (fs) always are.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_connector_options(compensate, compensate_options)

    replay = sub.add_parser(
        "replay",
        help="replay an uncertain step's call read from stdin, with its original key",
        description="Read one JSON object {tool, args, idempotency_key, run_id, step} on stdin: "
        "an uncertain step's forward call with the step's own idempotency key. Send it again, "
        "only if the tool's manifest declares that its vendor honours the key (replay) and the "
        "key is the step's own, and print its JSON result (exit 0: the call took effect). Exit "
        f"{EXIT_NOT_APPLIED} when the vendor's answer shows it did not take effect, 1 when the "
        "outcome is still unknown; the reason is the last line of stderr. "
        "'reversi resolve RUN STEP --replay' runs this.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_connector_options(replay, compensate_options)

    certify = sub.add_parser(
        "certify",
        help="print the thirteen certification checks and where the suite enforces them",
        description="Print the thirteen certification checks, what each verifies and where the "
        "certification suite enforces it: the check's function and its pytest test id. For "
        "one connector, also the checks its fixture declares not applicable, with the "
        "reasons. Runs nothing. The suite is not in the installed wheels: it is the "
        "certification/ folder of a checkout of the Reversi source repository, where "
        "'nox -s certify -- NAME' runs it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    certify.add_argument("name", metavar="NAME|all", help="connector name, or 'all'")
    return parser


def _add_connector_options(parser: Parser, options: Sequence[CliOption]) -> None:
    group = parser.add_argument_group(
        "connector options", "declared by the connectors (serve NAME --help shows NAME's)"
    )
    for option in options:
        group.add_argument(
            option.flag, dest=option.option, metavar=option.metavar, help=option.help
        )
    parser.set_defaults(connector_options=[o.option for o in options])


def _options(args: Any) -> dict[str, Any]:
    """The connector options given on the command line, as ``from_env`` keywords."""
    names = getattr(args, "connector_options", [])
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


# -- refusing credentials on the command line -----------------------------------------


def _positionals(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        if token.startswith("-"):
            skip = token in _VALUE_OPTIONS or (token.startswith("--") and "=" not in token)
            continue
        out.append(token)
    return out


def _credential_hint(argv: Sequence[str]) -> str:
    """Which environment variable(s) to set instead of a credential flag."""
    words = _positionals(argv)
    name = words[1] if len(words) > 1 and words[0] in ("serve", "manifests") else None
    if name is not None and name != "all":
        try:
            cls = load_connector_class(name)
        except Exception:  # unknown or broken: fall through to the generic hint
            cls = None
        if cls is not None:
            if cls.credential_env is None and not cls.env_vars:
                return f"the {name} connector takes no credentials"
            main_var = cls.credential_env or cls.env_vars[0]
            hint = f"set {main_var} in the environment instead"
            if len(cls.env_vars) > 1:
                hint += f" ({name} reads {', '.join(cls.env_vars)})"
            return hint
    known = []
    for token in sorted(available_connectors()):
        try:
            env = load_connector_class(token).credential_env
        except Exception:  # noqa: S112 - a broken connector simply adds no hint
            continue
        if env:
            known.append(env)
    if known:
        return (
            "set the connector's credential variable in the environment instead "
            f"(installed connectors read {', '.join(known)})"
        )
    return "set the connector's credential variable in the environment instead"


def _refuse_credential_flags(argv: Sequence[str]) -> None:
    for word in argv:
        if word == "--":
            break
        if not word.startswith("-"):
            continue
        flag = word.split("=", 1)[0]
        if _SECRET_FLAG.search(flag.lstrip("-")):
            raise CliError(
                f"{flag} is not accepted: credentials are read from the environment only; "
                + _credential_hint(argv),
                EXIT_USAGE,
            )


# -- commands ---------------------------------------------------------------------------


def _load(name: str) -> type[Connector]:
    try:
        return load_connector_class(name)
    except ConfigurationError as exc:  # ConnectorNotFoundError lists the installed ones
        raise CliError(str(exc), EXIT_USAGE) from None
    except Exception as exc:
        raise CliError(
            f"cannot load connector {name!r}: {type(exc).__name__}: {exc}", EXIT_USAGE
        ) from None


def manifest_objects(classes: Sequence[type[Connector]]) -> list[dict[str, Any]]:
    """The printed form of every manifest of ``classes`` (each tool declares its output schema)."""
    return [manifest.to_json() for cls in classes for manifest in cls.manifests()]


def _cmd_manifests(args: Any) -> int:
    names = sorted(available_connectors()) if args.name == "all" else [args.name]
    if not names:
        raise CliError(
            "no connectors are installed (entry-point group reversi.connectors)", EXIT_USAGE
        )
    objects = manifest_objects([_load(n) for n in names])
    if args.format == "yaml":
        sys.stdout.write(yaml.safe_dump(objects, sort_keys=False, allow_unicode=True))
    else:
        print(json.dumps(objects, indent=2, ensure_ascii=False))
    return EXIT_OK


def _cmd_serve(args: Any) -> int:
    from ..mcp.serve import serve_stdio

    cls = _load(args.name)
    try:
        connector = cls.from_env(os.environ, **_options(args))
    except ConfigurationError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if args.max_message_bytes < 1024:
        raise CliError("--max-message-bytes must be at least 1024", EXIT_USAGE)
    if sys.stdin.isatty() and sys.stderr.isatty():  # a person typing, not a client's pipe
        print(
            f"{PROG}: serving the {args.name} connector over MCP on stdin/stdout: this is meant "
            "for an MCP client (or reversi-gateway) to start, not to type into. "
            "Stop it with Ctrl-D (end of input) or Ctrl-C.",
            file=sys.stderr,
            flush=True,
        )
    anyio.run(partial(serve_stdio, connector, max_message_bytes=args.max_message_bytes))
    return EXIT_OK


def _read_call() -> CompensationCall:
    """The call object on stdin; :class:`CliError` (status 2) when it is malformed."""
    raw = sys.stdin.read()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"stdin is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            'expected one object {"tool", "args", "idempotency_key", "run_id", "step", '
            '"overwrite"}',
            EXIT_USAGE,
        ) from None
    try:
        return CompensationCall.from_json(data)
    except InvalidArgumentsError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def _enabled(args: Any) -> list[Connector]:
    try:
        return enabled_from_env(**_options(args))
    except ConfigurationError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


async def _closing(connectors: list[Connector], coro: Any) -> dict[str, Any]:
    try:
        result: dict[str, Any] = await coro
        return result
    finally:
        for connector in connectors:
            await connector.aclose()


def _cmd_compensate(args: Any) -> int:
    call = _read_call()
    connectors = _enabled(args)

    async def run() -> dict[str, Any]:
        return await _closing(connectors, compensator_for(connectors)(call))

    try:
        result = anyio.run(run)
    except ReversiError as exc:
        # the protocol: exit non-zero, the reason alone on the last line of stderr
        print(one_line(str(exc)) or type(exc).__name__, file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(result))
    return EXIT_OK


def _cmd_replay(args: Any) -> int:
    call = _read_call()
    connectors = _enabled(args)

    async def run() -> dict[str, Any]:
        return await _closing(connectors, replayer_for(connectors)(call))

    try:
        result = anyio.run(run)
    except CallRejected as exc:  # not replayable, not the step's key: nothing was sent
        raise CliError(str(exc), EXIT_USAGE) from None
    except ToolError as exc:  # in a replay, a refusal that shows the call did not take effect
        print(one_line(str(exc)) or type(exc).__name__, file=sys.stderr)
        return EXIT_NOT_APPLIED
    except ReversiError as exc:
        print(one_line(str(exc)) or type(exc).__name__, file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(result))
    return EXIT_OK


_WIDTH = 96


def _checklist(connector: str) -> list[str]:
    # the certification model lives with the fake-server kit, imported only by this command
    from ..testing import CHECK_INFO, CHECKS

    lines = []
    for number, check in enumerate(CHECKS, 1):
        info = CHECK_INFO[check]
        function, test = info.enforced_in(connector)
        lines += [
            f"{number:2}. {info.title} ({check})",
            textwrap.fill(
                info.verifies,
                width=_WIDTH,
                initial_indent="    verifies: ",
                subsequent_indent=" " * 14,
            ),
            f"    check:    {function}",
            f"    test:     {test}",
        ]
    return lines


def _declarations(name: str, cls: type[Connector]) -> tuple[list[str], bool]:
    """Lines about one connector's fixture, and whether it has one."""
    from ..testing import CHECK_INFO, CHECKS, FIXTURE_GROUP, fixture_entry_point, load_fixture

    module = fixture_entry_point(cls) or f"(no {FIXTURE_GROUP} entry point)"
    try:
        fixture = load_fixture(cls)
    except ConfigurationError as exc:
        return [f"{name}: {exc}; every check would fail"], False
    except Exception as exc:  # a broken testing module: report it, never a traceback
        return [f"{name}: cannot load {module}: {type(exc).__name__}: {exc}"], False
    lines = [f"{name}: fixture {module}()"]
    if not fixture.not_applicable:
        lines.append("  every check applies (none declared not applicable)")
    for check in CHECKS:
        reason = fixture.reason(check)
        if reason is not None:
            lines.append(
                textwrap.fill(
                    f"n/a {CHECK_INFO[check].title}: {reason}",
                    width=_WIDTH,
                    initial_indent="  ",
                    subsequent_indent="    ",
                )
            )
    for tool, why in sorted(fixture.restores_nothing.items()):
        lines.append(
            textwrap.fill(
                f"n/a {CHECK_INFO['concurrent_change'].title} for {tool}: {why}",
                width=_WIDTH,
                initial_indent="  ",
                subsequent_indent="    ",
            )
        )
    return lines, True


def _cmd_certify(args: Any) -> int:
    names = sorted(available_connectors()) if args.name == "all" else [args.name]
    classes = [(n, _load(n)) for n in names]
    target = args.name if args.name != "all" else "<connector>"
    lines = [
        "The thirteen certification checks, written once in the certification suite and run",
        "for every installed connector (file::function, then the pytest test id):",
        "",
        *_checklist(target),
        "",
    ]
    complete = True
    for name, cls in classes:
        found, ok = _declarations(name, cls)
        lines += found
        complete = complete and ok
    if not classes:
        lines.append("no connectors are installed (entry-point group reversi.connectors)")
    lines += [
        "",
        "The suite is not part of the installed wheels. In a checkout of the Reversi source",
        "repository, where the files above are: nox -s certify -- NAME (or: python -m pytest",
        "certification --connector=NAME); the latest results are in docs/certification.md there.",
    ]
    print("\n".join(lines))
    return EXIT_OK if complete else EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``reversi-connectors``; return the exit status (see :data:`EPILOG`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    try:
        _refuse_credential_flags(argv)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        if args.command == "manifests":
            return _cmd_manifests(args)
        if args.command == "serve":
            return _cmd_serve(args)
        if args.command == "certify":
            return _cmd_certify(args)
        if args.command == "replay":
            return _cmd_replay(args)
        return _cmd_compensate(args)
    except CliError as exc:
        return fail(PROG, str(exc), exc.code)
    except BrokenPipeError:
        return reader_went_away()
    except KeyboardInterrupt:
        return fail(PROG, "interrupted", 130)
    except Exception as exc:  # a bug: still one line, never a traceback with a secret in it
        return fail(PROG, f"unexpected {type(exc).__name__}: {exc}", EXIT_FAILED)


if __name__ == "__main__":
    sys.exit(main())
