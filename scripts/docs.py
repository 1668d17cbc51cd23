#!/usr/bin/env python3
"""Generate the parts of the documentation that the connectors' own declarations say.

    python scripts/docs.py            print which pages differ from their declarations
    python scripts/docs.py --write    rewrite them
    python scripts/docs.py --check    exit 1 (with a diff) when a page differs

For every package under ``packages/reversi-connector-*`` (read from the source tree: its
``pyproject.toml`` names the connector class and the certification fixture, no install
needed), the blocks of ``docs/connectors/NAME.md`` between ``<!-- generated:KIND -->``
and ``<!-- end generated:KIND -->`` are rendered from the connector: ``configuration``
(its settings, environment variables and command-line options), ``tools`` (each tool's
effect, permission, approval and compensation with its argument map) and ``edges`` (its
``requires`` declarations, and the resources each compensation touches). A connector
without a page gets a new one with those blocks and its tools' docstrings. The README's
list of connectors (the ``connectors`` block) is rendered from every connector's
distribution, summary and fixture. Prose outside the blocks is the author's and is kept
as it is. ``tests/test_docs.py`` runs ``--check``'s
comparison, so a page that drifted from its connector fails the test run.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "connectors"
README = ROOT / "README.md"
BLOCK = re.compile(
    r"(?P<open><!-- generated:(?P<kind>[a-z]+)[^>]*-->\n)(?P<body>.*?)(?P<close><!-- end generated:(?P=kind) -->)",
    re.DOTALL,
)


@dataclass(frozen=True)
class Package:
    """One connector package of the source tree, with its class loaded."""

    name: str
    distribution: str
    description: str
    folder: Path
    cls: Any
    fixture: Any

    @property
    def page(self) -> Path:
        return DOCS / f"{self.name}.md"


def _load(value: str) -> Any:
    module, _, attr = value.partition(":")
    return getattr(importlib.import_module(module), attr)


def packages(root: Path = ROOT) -> list[Package]:
    """Every connector package under ``root/packages``, its class and fixture imported from source."""
    found = []
    tomls = sorted(root.glob("packages/reversi-connector-*/pyproject.toml"))
    for src in [root / "packages" / "reversi-core" / "src", *(t.parent / "src" for t in tomls)]:
        if str(src) not in sys.path:
            sys.path.insert(0, str(src))
    for toml in tomls:
        meta = tomllib.loads(toml.read_text(encoding="utf-8"))["project"]
        points = meta.get("entry-points", {})
        ((name, value),) = points["reversi.connectors"].items()
        fixture_value = points.get("reversi.certification", {}).get(name)
        fixture = _load(fixture_value)() if fixture_value else None
        found.append(
            Package(name, meta["name"], meta.get("description", ""), toml.parent, _load(value), fixture)
        )
    return found


# -- rendering ---------------------------------------------------------------------------


def _code(value: Any) -> str:
    return f"`{value}`"


def configuration(pkg: Package) -> str:
    """The table of what the connector is configured with."""
    rows = ["| variable | option | required | meaning |", "|---|---|---|---|"]
    for setting in getattr(pkg.cls, "settings", ()):
        required = "yes" if setting.required and setting.default is None else "no"
        meaning = setting.help + (" (a secret: scrubbed, never shown)" if setting.secret else "")
        if setting.default is not None:
            meaning += f"; default `{setting.default}`"
        rows.append(f"| `{setting.env}` | `{setting.option}` | {required} | {meaning} |")
    base = getattr(pkg.cls, "base", None)
    if base is not None and base.default:
        rows.append(f"| | | | the API root defaults to `{base.default}{base.suffix}` |")
    for option in pkg.cls.cli_options:
        rows.append(f"| | `{option.option}` (`{option.flag} {option.metavar}`) | no | {option.help} |")
    if hasattr(pkg.cls, "default_timeouts"):
        t = pkg.cls.default_timeouts
        rows.append(
            f"| | `timeouts` | no | `reversi_core.http.Timeouts` in seconds; default connect "
            f"{t.connect:g}, read {t.read:g}, total {t.total:g}, each capped at the call's own limit |"
        )
        rows.append("| | `transport` | no | an `httpx` transport, for tests |")
    if len(rows) == 2:
        return "The connector takes no configuration."
    return "\n".join(rows)


def _map(argument_map: Mapping[str, Any]) -> str:
    parts = []
    for arg, source in argument_map.items():
        shown = source if isinstance(source, str) else f"const {source.const!r}"
        parts.append(f"{arg}: {shown}")
    return "{" + ", ".join(parts) + "}"


def tools(pkg: Package) -> str:
    """The table of tools with their effect, permission, approval and undo."""
    rows = [
        "| tool | effect | permission | approval | undone by |",
        "|---|---|---|---|---|",
    ]
    for m in pkg.cls.manifests():
        if m.compensation is not None:
            undo = f"`{m.compensation.tool}` with `{_map(m.compensation.argument_map)}`"
        elif m.effect.value == "idempotent":
            undo = "(idempotent; runs as a compensation)"
        elif m.effect.value == "irreversible":
            undo = "nothing: listed as unrecoverable"
        else:
            undo = ""
        rows.append(
            f"| `{m.name}` | {m.effect.value} | `{m.permission}` | {m.approval.value} | {undo} |"
        )
    return "\n".join(rows)


def edges(pkg: Package) -> str:
    """The ``requires`` declarations, one line each, then what each compensation touches."""
    lines = []
    for m in pkg.cls.manifests():
        for requirement in m.requires:
            conditions = ", ".join(
                f"{c.this} {'=' if c.relation == 'equals' else c.relation.replace('_', ' ')} "
                f"{c.earlier}"
                for c in requirement.match
            )
            lines.append(f"- `{m.name}` depends on an earlier `{requirement.tool}` where {conditions}.")
    if not lines:
        lines.append("No tool declares a dependency on an earlier step.")
    touches = []
    for m in pkg.cls.manifests():
        if m.compensation is None:
            continue
        if m.compensation.resources:
            names = ", ".join(f"`{r}`" for r in m.compensation.resources)
            touches.append(f"- `{m.name}` is undone touching {names}.")
        else:
            touches.append(
                f"- `{m.name}` declares no resources: its compensation runs alone, after every "
                "later step and before every earlier one."
            )
    if touches:
        lines += [
            "",
            "What each compensation touches (a rollback undoes steps whose names overlap newest "
            "first, and the others at once; docs/engine.md, \"Rollback in parallel\"):",
            "",
            *touches,
        ]
    return "\n".join(lines)


GENERATORS = {"configuration": configuration, "tools": tools, "edges": edges}


def block(kind: str, body: str) -> str:
    return (
        f"<!-- generated:{kind} (scripts/docs.py: edit the connector, not this block) -->\n"
        f"{body}\n<!-- end generated:{kind} -->"
    )


def new_page(pkg: Package) -> str:
    """A first page for a connector that has none: its declarations, ready for prose."""
    doc = (pkg.cls.__doc__ or "").strip().split("\n\n")[0]
    lines = [
        f"# The `{pkg.name}` connector",
        "",
        " ".join(doc.split()) or pkg.description,
        f"The distribution is `{pkg.distribution}`, the class "
        f"`{pkg.cls.__module__.split('.')[0]}.{pkg.cls.__name__}` (entry point `{pkg.name}` in the "
        "`reversi.connectors` group).",
        "",
        "## Configuration",
        "",
        block("configuration", configuration(pkg)),
        "",
        "## Tools",
        "",
        block("tools", tools(pkg)),
        "",
    ]
    for name, spec in sorted(pkg.cls.tool_specs().items()):
        lines += [f"### `{name}`", "", spec.doc.strip() or spec.description, ""]
    lines += ["## Ordering a rollback", "", block("edges", edges(pkg)), ""]
    residue = getattr(pkg.fixture, "residue", {}) or {}
    lines += ["## What a rollback leaves behind", ""]
    lines += [f"- `{tool}`: {r.reason}" for tool, r in sorted(residue.items())] or [
        "Nothing: the certification suite finds the backend exactly as it was."
    ]
    return "\n".join(lines) + "\n"


def render_page(pkg: Package, current: str | None) -> str:
    """The page with every generated block rendered (a new page when ``current`` is None)."""
    if current is None:
        return new_page(pkg)

    def fill(match: re.Match[str]) -> str:
        kind = match["kind"]
        if kind not in GENERATORS:
            raise SystemExit(f"{pkg.page}: unknown generated block {kind!r}")
        return block(kind, GENERATORS[kind](pkg))

    return BLOCK.sub(fill, current)


def connector_list(pkgs: Iterable[Package]) -> str:
    """The README's list of connectors."""
    lines = []
    for pkg in pkgs:
        summary = pkg.description.rstrip(".")
        where = getattr(pkg.fixture, "backend_summary", "") if pkg.fixture is not None else ""
        certified = f" Certified on {where}." if where else ""
        lines.append(
            f"- [`{pkg.name}`](docs/connectors/{pkg.name}.md) (`{pkg.distribution}`): {summary}.{certified}"
        )
    return "\n".join(lines)


def render_readme(pkgs: list[Package], current: str) -> str:
    def fill(match: re.Match[str]) -> str:
        if match["kind"] != "connectors":
            raise SystemExit(f"README.md: unknown generated block {match['kind']!r}")
        return block("connectors", connector_list(pkgs))

    return BLOCK.sub(fill, current)


def expected(root: Path = ROOT) -> dict[Path, str]:
    """``{path: the text it should have}`` for every generated page and the README."""
    pkgs = packages(root)
    out: dict[Path, str] = {}
    for pkg in pkgs:
        current = pkg.page.read_text(encoding="utf-8") if pkg.page.exists() else None
        out[pkg.page] = render_page(pkg, current)
    out[README] = render_readme(pkgs, README.read_text(encoding="utf-8"))
    return out


def differences(root: Path = ROOT) -> dict[Path, str]:
    """``{path: unified diff}`` for every generated file that differs from its declarations."""
    found = {}
    for path, text in expected(root).items():
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            rel = str(path.relative_to(ROOT))
            found[path] = "".join(
                difflib.unified_diff(current.splitlines(True), text.splitlines(True), rel, "generated")
            )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the pages that differ")
    mode.add_argument("--check", action="store_true", help="exit 1 when a page differs")
    args = parser.parse_args(argv)
    changed = differences()
    if args.write:
        for path, text in expected().items():
            if path in changed:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                print(f"wrote {path.relative_to(ROOT)}")
        return 0
    for diff in changed.values():
        sys.stdout.write(diff)
    if changed:
        print(f"\n{len(changed)} generated page(s) differ: run python scripts/docs.py --write")
        return 1 if args.check else 0
    print("every generated page matches its connector")
    return 0


if __name__ == "__main__":
    sys.exit(main())
