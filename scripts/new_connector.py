#!/usr/bin/env python3
"""Create a connector package from packages/_template, then document and certify it.

    python scripts/new_connector.py NAME [--http] [--dest DIR] [--no-generate]

NAME is one lowercase token (``gcalendar``): it becomes the folder suffix, the
distribution suffix, the import suffix, the entry-point name and the tool prefix.
``--http`` makes a connector on the HTTP kit (``reversi_core.http.HttpConnector``, with
a fake of its API on the kit's ``VendorFake``); without it the example keeps its notes
in memory (for a backend that is not an HTTP API).

The package lands in packages/reversi-connector-NAME (or DIR). Unless ``--no-generate``
(or ``--dest``) is given, the script then writes what is generated from the new
connector's declarations: its page ``docs/connectors/NAME.md`` and its line in the
README (``scripts/docs.py --write``), its row of ``docs/certification.md`` (its
thirteen checks run: ``certification/report.py --write --connector NAME``) and, for an
HTTP connector, the first cassette of its live scenario, recorded against its fake
(``scripts/live.py NAME --test-backend``, into the package's ``tests/cassettes/``). It
does that in this Python when ``reversi_core`` is importable here (installing the new
package into it, editable), else through ``python3 -m nox -s docs -- NAME`` and ``-s
live -- NAME --test-backend``. No other file is edited. Exit 2 on a bad name or an
existing folder, 1 when generating failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "packages" / "_template"
VARIANTS = ("http",)
"""Folders of the template that overlay it for a variant (``--http``), not copied otherwise."""
NAME_RE = re.compile(r"^[a-z][a-z0-9]{1,30}$")
RESERVED = {"core", "template", "all"}


def render(text: str, name: str) -> str:
    """Fill the placeholders: ``__connector__`` (the token), ``__Connector__`` (its class
    prefix) and ``__CONNECTOR__`` (its environment variables' prefix).

    None of them can be a Python name the template's code uses (unlike ``__name__``).
    """
    return (
        text.replace("__Connector__", name.capitalize())
        .replace("__CONNECTOR__", name.upper())
        .replace("__connector__", name)
    )


def _copy_tree(source: Path, target: Path, name: str, skip: tuple[str, ...] = ()) -> None:
    for src in sorted(source.rglob("*")):
        rel_parts = src.relative_to(source).parts
        if rel_parts[0] in skip or "__pycache__" in src.parts or src.suffix == ".pyc":
            continue
        out = target / render(str(src.relative_to(source)), name)
        if src.is_dir():
            out.mkdir(parents=True, exist_ok=True)
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.name in ("py.typed", "LICENSE"):
            shutil.copyfile(src, out)  # byte for byte: the licence must match the root's
        else:
            out.write_text(render(src.read_text(encoding="utf-8"), name), encoding="utf-8")


def create(name: str, dest: Path, *, http: bool = False) -> Path:
    """Copy the template to ``dest / reversi-connector-NAME`` with placeholders filled; return the folder."""
    target = dest / f"reversi-connector-{name}"
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    _copy_tree(TEMPLATE, target, name, skip=VARIANTS)
    if http:
        _copy_tree(TEMPLATE / "http", target, name)
    return target


def generate(name: str, target: Path, *, http: bool = False) -> int:
    """Write the new connector's docs page, README line and certification row, and for an
    HTTP connector the cassette of its live scenario recorded against its fake; 0 when done."""
    here = importlib.util.find_spec("reversi_core") is not None
    record = ["--test-backend"]
    if not here:
        print("reversi_core is not importable here: generating through nox -s docs (and live)")
        nox = [sys.executable, "-m", "nox"]
        status = subprocess.call([*nox, "-s", "docs", "--", name], cwd=ROOT)
        if status == 0 and http:
            status = subprocess.call([*nox, "-s", "live", "--", name, *record], cwd=ROOT)
        return status
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if all(importlib.util.find_spec(m) is not None for m in ("hatchling", "editables")):
        install += ["--no-build-isolation", "--no-deps"]
    steps = [
        [*install, "-e", str(target)],
        [sys.executable, str(ROOT / "scripts" / "docs.py"), "--write"],
        [sys.executable, str(ROOT / "certification" / "report.py"), "--write", "--connector", name],
    ]
    if http:
        steps.append([sys.executable, str(ROOT / "scripts" / "live.py"), name, *record])
    for step in steps:
        status = subprocess.call(step, cwd=ROOT)
        if status != 0:
            print(f"new_connector: error: {' '.join(step[1:4])}... exited {status}", file=sys.stderr)
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "name", help="the connector token: lowercase letters and digits, such as gcalendar"
    )
    parser.add_argument("--http", action="store_true", help="a connector on the HTTP kit")
    parser.add_argument("--dest", type=Path, help="folder to create the package in (no generating)")
    parser.add_argument(
        "--no-generate", action="store_true", help="only create the package; write no docs"
    )
    args = parser.parse_args(argv)
    if not NAME_RE.match(args.name) or args.name in RESERVED:
        print(
            f"new_connector: error: {args.name!r} is not a connector token "
            "(2-31 lowercase letters and digits, starting with a letter; not core/template/all)",
            file=sys.stderr,
        )
        return 2
    dest = args.dest if args.dest is not None else ROOT / "packages"
    try:
        target = create(args.name, dest, http=args.http)
    except FileExistsError as exc:
        print(f"new_connector: error: {exc}", file=sys.stderr)
        return 2
    print(f"created {target}")
    if args.dest is not None or args.no_generate:
        print("next: python scripts/docs.py --write && python certification/report.py --write")
        if args.http:
            print(f"and: python scripts/live.py {args.name} --test-backend (its first cassette)")
        return 0
    status = generate(args.name, target, http=args.http)
    if status == 0:
        print(f"documented in docs/connectors/{args.name}.md and certified in docs/certification.md")
    return status


if __name__ == "__main__":
    sys.exit(main())
