"""``--help`` and the docs say the same thing: subcommands, options and exit statuses.

docs/cli.md documents ``reversi`` and ``reversi-connectors``, docs/gateway.md
``reversi-gateway``; each is checked both ways against the argument parsers, so that a
new option, subcommand or exit status cannot be added to one side only.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from reversi_core.cli import connectors, gateway, reversi

ROOT = Path(__file__).resolve().parent.parent
CLI_MD = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
GATEWAY_MD = (ROOT / "docs" / "gateway.md").read_text(encoding="utf-8")

PARSERS = {"reversi": reversi, "reversi-connectors": connectors}


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def long_options(parser: argparse.ArgumentParser) -> set[str]:
    return {
        flag
        for action in parser._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    }


def sections(prog: str) -> dict[str, str]:
    """``{subcommand: its section of docs/cli.md}`` from the ``### `prog SUB ...``` headings."""
    found: dict[str, str] = {}
    parts = re.split(r"^### ", CLI_MD, flags=re.MULTILINE)
    for part in parts[1:]:
        heading = part.splitlines()[0]
        match = re.match(rf"`{re.escape(prog)} ([a-z][a-z-]*)\b", heading)
        if match:
            found[match.group(1)] = part
    return found


def exit_statuses(text: str) -> set[int]:
    return {int(m) for m in re.findall(r"^\s*(\d+)\s{2}", text, flags=re.MULTILINE)}


def documented_statuses(prog: str) -> set[int]:
    table = CLI_MD.split(f"### Exit status of `{prog}`", 1)[1].split("\n#", 1)[0]
    return {int(m) for m in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_every_subcommand_is_documented_and_every_documented_one_exists(prog: str) -> None:
    parser = PARSERS[prog].build_parser()
    assert set(subcommands(parser)) == set(sections(prog))


CONNECTOR_ARGV = {
    "serve": ["serve", "fs"],
    "compensate": ["compensate"],
    "replay": ["replay"],
    "prune-backups": ["prune-backups"],
}
"""How each subcommand is built for the check: ``serve``, ``compensate`` and ``replay`` take
the options their connectors declare (``--root`` and ``--backup-dir`` are fs's), so the parser
is built as for fs, the connector docs/cli.md's headings name."""


def parsed(prog: str, name: str) -> argparse.ArgumentParser:
    """Subcommand ``name`` of ``prog``'s parser, with its connectors' options where it has them."""
    module = PARSERS[prog]
    if prog == "reversi-connectors" and name in CONNECTOR_ARGV:
        return subcommands(connectors.build_parser(CONNECTOR_ARGV[name]))[name]
    return subcommands(module.build_parser())[name]


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_every_option_is_documented_in_its_subcommand_and_back(prog: str) -> None:
    docs = sections(prog)
    for name in subcommands(PARSERS[prog].build_parser()):
        sub = parsed(prog, name)
        heading = docs[name].splitlines()[0]
        options = long_options(sub)
        in_heading = set(re.findall(r"--[a-z][a-z-]*", heading))
        assert in_heading <= options, (name, in_heading - options)
        # the shared --journal and --data are documented once, for every subcommand of reversi
        shared = {"--data", "--journal"}
        missing = {o for o in options - in_heading if o not in docs[name] and o not in shared}
        assert not missing, (name, missing)


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_exit_statuses_of_help_and_docs_agree(prog: str) -> None:
    assert exit_statuses(PARSERS[prog].EPILOG) == documented_statuses(prog)


def test_gateway_options_table_matches_its_parser() -> None:
    table = GATEWAY_MD.split("## Command line", 1)[1]
    documented = set(re.findall(r"^\| `(--[a-z-]+)", table, flags=re.MULTILINE))
    documented |= set(re.findall(r"`, `(--[a-z-]+)", table))
    assert documented == long_options(gateway.build_parser())
