#!/usr/bin/env python3
"""Create a connector package from packages/_template.

    python scripts/new_connector.py NAME [--dest DIR]

NAME is one lowercase token (``gcalendar``): it becomes the folder suffix, the
distribution suffix, the import suffix, the entry-point name and the tool prefix. The
new package lands in packages/reversi-connector-NAME (or DIR) and is picked up by every
nox session without editing anything else. Exit 2 on a bad name or an existing folder.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "packages" / "_template"
NAME_RE = re.compile(r"^[a-z][a-z0-9]{1,30}$")
RESERVED = {"core", "template", "all"}
#: Copied byte for byte, never rendered: the licence text is the repository's LICENSE.
VERBATIM = {"py.typed", "LICENSE"}


def render(text: str, name: str) -> str:
    """Fill the template's placeholders: ``__name__`` (the token) and ``__Class__`` (its class prefix)."""
    return text.replace("__Class__", name.capitalize()).replace("__name__", name)


def create(name: str, dest: Path) -> Path:
    """Copy the template to ``dest / reversi-connector-NAME`` with placeholders filled; return the folder."""
    target = dest / f"reversi-connector-{name}"
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    for src in sorted(TEMPLATE.rglob("*")):
        if "__pycache__" in src.parts or src.suffix == ".pyc":
            continue
        rel = Path(render(str(src.relative_to(TEMPLATE)), name))
        out = target / rel
        if src.is_dir():
            out.mkdir(parents=True, exist_ok=True)
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.name in VERBATIM:
            shutil.copyfile(src, out)
        else:
            out.write_text(render(src.read_text(encoding="utf-8"), name), encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "name", help="the connector token: lowercase letters and digits, such as gcalendar"
    )
    parser.add_argument(
        "--dest", type=Path, default=ROOT / "packages", help="folder to create the package in"
    )
    args = parser.parse_args(argv)
    if not NAME_RE.match(args.name) or args.name in RESERVED:
        print(
            f"new_connector: error: {args.name!r} is not a connector token "
            "(2-31 lowercase letters and digits, starting with a letter; not core/template/all)",
            file=sys.stderr,
        )
        return 2
    try:
        target = create(args.name, args.dest)
    except FileExistsError as exc:
        print(f"new_connector: error: {exc}", file=sys.stderr)
        return 2
    print(f"created {target}")
    print(f"next: pip install -e {target}  (nox sessions pick it up on their own)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
