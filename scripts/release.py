#!/usr/bin/env python3
"""Release one package: bump its version, date its changelog section, print its tag.

    python scripts/release.py PACKAGE VERSION [--date YYYY-MM-DD] [--dry-run]

PACKAGE is a distribution name (``reversi-connector-postgres``), a short name
(``postgres``, ``core``) or a folder name under packages/. VERSION is
``MAJOR.MINOR.PATCH``, optionally with a PEP 440 pre-release (``1.2.0rc1``).

The script sets ``__version__`` in the package's ``__about__.py`` and turns the
changelog's top section, ``## Unreleased`` or ``## X.Y.Z (unreleased)``, into
``## VERSION (YYYY-MM-DD)`` (today unless ``--date``). It prints the tag name alone on
stdout (``reversi-connector-postgres-v1.2.0``) and what it changed on stderr; it does not
commit or tag. Releasing reversi-core also names every connector (and the connector
template) whose ``reversi-core>=A,<B`` range does not admit the new version:
``scripts/check_versions.py`` fails until those ranges are widened.

It refuses, with one line on stderr and exit status 2, leaving every file untouched:
an unknown package, a malformed version, a version not above the package's last release
(or below its current version), and a release without a changelog entry (no unreleased
section at the top, or an empty one). See docs/releasing.md.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from check_versions import (
    ABOUT_RE,
    ROOT,
    UNRELEASED,
    VERSION_RE,
    Package,
    admits,
    discover,
    last_release,
    parse_changelog,
)
from packaging.version import Version

PROG = "release.py"


class Refusal(Exception):
    """A release that must not happen; the message is the one line printed."""


def find_package(root: Path, name: str) -> Package:
    """The package called ``name`` (distribution, short or folder name)."""
    packages = discover(root)
    for package in packages.values():
        if name in (package.dist, package.short, package.folder.name):
            return package
    known = ", ".join(p.dist for p in packages.values())
    raise Refusal(f"unknown package {name!r} (packages: {known})")


def check_version_text(version: str) -> None:
    """Refuse anything but MAJOR.MINOR.PATCH[aN|bN|rcN]."""
    if VERSION_RE.match(version):
        return
    hint = ""
    if version.startswith("v") and VERSION_RE.match(version[1:]):
        hint = f"; write {version[1:]} (the tag gets its 'v' by itself)"
    elif "-" in version or "+" in version:
        hint = "; spell a pre-release the PEP 440 way, such as 1.2.0rc1, and no build metadata"
    raise Refusal(
        f"{version!r} is not a release version: expected MAJOR.MINOR.PATCH "
        f"(optionally aN, bN or rcN) without leading zeros{hint}"
    )


def changelog_section(package: Package) -> tuple[list[str], int]:
    """The changelog's lines and the index of its top (unreleased) heading, or refuse."""
    where = f"{package.folder.name}/CHANGELOG.md"
    if not package.changelog.is_file():
        raise Refusal(f"{package.dist} has no changelog ({where}); add one with the changes")
    text = package.changelog.read_text(encoding="utf-8")
    headings, bad = parse_changelog(text)
    if bad:
        raise Refusal(f"{where}: {bad[0]}")
    how = f"add '## {UNRELEASED}' with the changes at the top of {where}"
    if not headings or not headings[0].unreleased:
        top = f"'## {headings[0].text}' is already released" if headings else "no sections"
        raise Refusal(f"no changelog entry for this release ({top}): {how}")
    lines = text.splitlines(keepends=True)
    start = headings[0].line
    end = headings[1].line if len(headings) > 1 else len(lines)
    if not any(line.strip() for line in lines[start + 1 : end]):
        raise Refusal(
            f"no changelog entry for this release ('## {headings[0].text}' is empty): {how}"
        )
    return lines, start


def check_increasing(package: Package, current: str, new: str) -> None:
    """Refuse a version that is not above the last release, or that is below the current one."""
    text = package.changelog.read_text(encoding="utf-8") if package.changelog.is_file() else ""
    released = last_release(parse_changelog(text)[0])
    if released is not None and released.version is not None:
        last, when = released.version, released.released
        if Version(new) <= Version(last):
            raise Refusal(
                f"{package.dist} {new} is not above its last release {last} ({when}); "
                "choose a higher version"
            )
    if VERSION_RE.match(current) and Version(new) < Version(current):
        raise Refusal(f"{package.dist} {new} is below its current version {current}")


def stale_core_ranges(root: Path, new: str) -> list[Package]:
    """Connectors (and the template) whose reversi-core requirement does not admit ``new``."""
    return [
        p
        for p in discover(root, template=True).values()
        if not p.is_core and not admits(p.core_requirement, new)
    ]


def release(root: Path, name: str, new: str, date: datetime.date, dry_run: bool) -> str:
    """Bump one package; return the tag name. Raises :class:`Refusal`."""
    package = find_package(root, name)
    check_version_text(new)
    try:
        current = package.version()
    except (OSError, ValueError) as exc:
        raise Refusal(f"{package.dist}: cannot read its version: {exc}") from None
    check_increasing(package, current, new)
    lines, top = changelog_section(package)

    old_heading = lines[top].rstrip("\n")
    lines[top] = f"## {new} ({date.isoformat()})\n"
    about_text = package.about.read_text(encoding="utf-8")
    about_text = ABOUT_RE.sub(lambda m: f"__version__ = {m[1]}{new}{m[1]}", about_text, count=1)
    if not dry_run:
        package.about.write_text(about_text, encoding="utf-8")
        package.changelog.write_text("".join(lines), encoding="utf-8")

    verb = "would update" if dry_run else "updated"
    rel = (
        package.folder.relative_to(root) if package.folder.is_relative_to(root) else package.folder
    )
    say(f"{package.dist} {current} -> {new}")
    say(f"  {verb} {rel / package.about.relative_to(package.folder)}: __version__ = {new!r}")
    say(f"  {verb} {rel / 'CHANGELOG.md'}: '{old_heading}' -> '## {new} ({date.isoformat()})'")
    if package.is_core:
        stale = stale_core_ranges(root, new)
        if stale:
            say(
                f"  note: these reversi-core ranges do not admit {new}; widen them (and "
                "release those connectors) or scripts/check_versions.py fails:"
            )
            for connector in stale:
                say(f"    {connector.label}: {connector.core_requirement}")
    tag = f"{package.dist}-v{new}"
    say(f"  next: commit, then: git tag {tag}")
    return tag


def say(line: str) -> None:
    print(line, file=sys.stderr)


def parse_date(text: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("package", metavar="PACKAGE", help="reversi-connector-NAME, NAME or core")
    parser.add_argument("version", metavar="VERSION", help="the new version, such as 1.2.0")
    parser.add_argument(
        "--date", type=parse_date, default=None, help="release date (default: today)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the tag, change nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help="the workspace (default: here)")
    args = parser.parse_args(argv)
    try:
        tag = release(
            args.root.resolve(),
            args.package,
            args.version,
            args.date or datetime.date.today(),
            args.dry_run,
        )
    except Refusal as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    print(tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
