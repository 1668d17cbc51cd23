#!/usr/bin/env python3
"""Check that every package's version, changelog, reversi-core range, licence and URLs agree.

    python scripts/check_versions.py [--root DIR] [--dist DIR]

For every package under packages/ (the connector template included, because every new
connector is copied from it):

- the version is dynamic, read by hatchling from the ``__about__.py`` that
  ``[tool.hatch.version] path`` names, and is ``MAJOR.MINOR.PATCH`` (optionally
  ``aN``/``bN``/``rcN``);
- CHANGELOG.md's ``##`` headings are ``## Unreleased``, ``## X.Y.Z (unreleased)`` or
  ``## X.Y.Z (YYYY-MM-DD)``; an unreleased section comes only first; versions go down the
  file; the topmost versioned heading names the version in ``__about__.py``;
- a connector depends on ``reversi-core`` by a compatible range: a lower bound, an upper
  bound, no ``==``, and the range admits the workspace's reversi-core version;
- the licence: LICENSE at the repository's root is the Apache License 2.0 text, verbatim;
  every package says ``license = "Apache-2.0"`` and ``license-files = ["LICENSE"]`` and
  holds a copy of the root's LICENSE, byte for byte (a package builds from its own
  folder, so the file it ships must be there);
- ``[project.urls]`` has Documentation, Changelog and Source, pointing at the package's
  page in docs/, its CHANGELOG.md and its folder in the repository (:data:`REPOSITORY`).

``--dist DIR`` also checks the artifacts ``nox -s build`` wrote: exactly one wheel and
one sdist per package at its current version, nothing stale, wheel metadata that matches
the sources (name, version, reversi-core requirement, entry point), ``py.typed`` shipped,
and no test-time folder (tests, certification, shared) inside a wheel; and in the wheel
and in the sdist alike, the licence file (``.dist-info/licenses/LICENSE``, the sdist's
``LICENSE``) equal to the root's, and metadata saying ``License-Expression: Apache-2.0``,
``License-File: LICENSE`` and the sources' project URLs.

Prints one line per problem, naming the package, and exits 1; exits 0 with a summary
when everything agrees; exits 2 on bad usage. ``tests/test_versions.py`` runs the same
check in the test suite, so CI fails on a mismatch. Needs the ``packaging`` library
(installed with pip, nox and pytest).
"""

from __future__ import annotations

import argparse
import configparser
import datetime
import email.message
import email.parser
import hashlib
import itertools
import re
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
CORE = "reversi-core"
CONNECTOR_PREFIX = "reversi-connector-"

#: A release version: semantic versioning's MAJOR.MINOR.PATCH, no leading zeros, with an
#: optional pre-release spelled the PEP 440 way (1.2.0rc1, not 1.2.0-rc.1) so that the
#: version in __about__.py, the wheel's file name and the git tag all read the same.
VERSION_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:(a|b|rc)(0|[1-9]\d*))?$")
ABOUT_RE = re.compile(r"^__version__\s*=\s*(['\"])(?P<version>[^'\"]*)\1\s*$", re.MULTILINE)
HEADING_RE = re.compile(r"^## (?P<text>.*?)\s*$")
VERSIONED_RE = re.compile(r"^(?P<version>\S+) \((?P<when>unreleased|\d{4}-\d{2}-\d{2})\)$")
UNRELEASED = "Unreleased"
TEST_TIME = ("tests", "certification", "shared")

#: The project's licence, as every package's ``license`` says (an SPDX expression, PEP 639).
LICENSE_EXPRESSION = "Apache-2.0"
#: The licence file: at the repository's root, copied into every package folder, shipped
#: in every wheel (``.dist-info/licenses/LICENSE``) and sdist, named by ``License-File``.
LICENSE_FILE = "LICENSE"
#: sha256 of the Apache License 2.0 as the ASF publishes it
#: (https://www.apache.org/licenses/LICENSE-2.0.txt, 11358 bytes).
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
#: License-Expression and License-File came with core metadata 2.4.
LICENSE_METADATA_VERSION = Version("2.4")
#: Where the project lives; every package's [project.urls] point into it.
REPOSITORY = "https://github.com/reversi-dev/reversi"
URL_LABELS = ("Documentation", "Changelog", "Source")


@dataclass(frozen=True)
class Heading:
    """One ``##`` heading of a changelog: ``version`` None for ``## Unreleased``,
    ``released`` None while unreleased; ``line`` is its 0-based line index."""

    line: int
    text: str
    version: str | None
    released: datetime.date | None

    @property
    def unreleased(self) -> bool:
        return self.released is None


@dataclass(frozen=True)
class Package:
    """One package folder under packages/ and where its version lives."""

    folder: Path
    dist: str
    short: str
    about: Path
    core_requirements: tuple[str, ...]
    dynamic_version: bool
    entry_points: dict[str, dict[str, str]]  # {group: {name: "module:attr"}}, scripts too
    license: object  # [project] license, as written
    license_files: object  # [project] license-files, as written
    urls: dict[str, str]  # [project.urls]

    @property
    def is_core(self) -> bool:
        return self.dist == CORE

    @property
    def is_template(self) -> bool:
        return self.folder.name.startswith("_")

    @property
    def label(self) -> str:
        return f"packages/{self.folder.name}" if self.is_template else self.dist

    @property
    def changelog(self) -> Path:
        return self.folder / "CHANGELOG.md"

    @property
    def module(self) -> str:
        return self.dist.replace("-", "_")

    @property
    def where(self) -> str:
        """The package's folder in the repository, as a generated package will name it."""
        return f"packages/{self.dist if self.is_template else self.folder.name}"

    def expected_urls(self) -> dict[str, str]:
        """The [project.urls] the package must declare: its documentation page (core: the
        docs/ folder; a connector: docs/connectors/NAME.md), its changelog and its folder."""
        documentation = (
            f"{REPOSITORY}/tree/main/docs"
            if self.is_core
            else f"{REPOSITORY}/blob/main/docs/connectors/{self.short}.md"
        )
        return {
            "Documentation": documentation,
            "Changelog": f"{REPOSITORY}/blob/main/{self.where}/CHANGELOG.md",
            "Source": f"{REPOSITORY}/tree/main/{self.where}",
        }

    @property
    def core_requirement(self) -> str | None:
        """The one ``reversi-core`` requirement string, or None when there is not exactly one."""
        return self.core_requirements[0] if len(self.core_requirements) == 1 else None

    def version(self) -> str:
        """The version in ``__about__.py``; raises ``ValueError`` when there is not exactly one."""
        found = ABOUT_RE.findall(self.about.read_text(encoding="utf-8"))
        if len(found) != 1:
            raise ValueError(f"{self.about} must assign __version__ exactly once")
        return str(found[0][1])


def short_name(dist: str) -> str:
    """``reversi-connector-postgres`` -> ``postgres``; ``reversi-core`` -> ``core``."""
    return dist.removeprefix(CONNECTOR_PREFIX).removeprefix("reversi-")


def load_package(folder: Path) -> Package:
    """Read one package's pyproject.toml."""
    meta = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    project = meta["project"]
    dist = project["name"]
    about = meta.get("tool", {}).get("hatch", {}).get("version", {}).get("path")
    core = [d for d in project.get("dependencies", []) if _requirement_name(d) == CORE]
    return Package(
        folder=folder,
        dist=dist,
        short=short_name(dist),
        about=folder / (about or "<no [tool.hatch.version] path>"),
        core_requirements=tuple(core),
        dynamic_version="version" in project.get("dynamic", []) and "version" not in project,
        entry_points={
            group: dict(points)
            for group, points in {
                "console_scripts": project.get("scripts", {}),
                **project.get("entry-points", {}),
            }.items()
            if points
        },
        license=project.get("license"),
        license_files=project.get("license-files"),
        urls=dict(project.get("urls", {})),
    )


def _requirement_name(text: str) -> str | None:
    try:
        return Requirement(text).name.lower().replace("_", "-")
    except InvalidRequirement:
        return None


def discover(root: Path = ROOT, *, template: bool = False) -> dict[str, Package]:
    """``{short name: Package}`` for packages/*/pyproject.toml; the template only if asked."""
    found: dict[str, Package] = {}
    for pyproject in sorted(root.glob("packages/*/pyproject.toml")):
        if pyproject.parent.name.startswith("_") and not template:
            continue
        package = load_package(pyproject.parent)
        key = "_template" if package.is_template else package.short
        found[key] = package
    return found


def parse_changelog(text: str) -> tuple[list[Heading], list[str]]:
    """The ``##`` headings of a changelog, and one message per heading it cannot read."""
    headings: list[Heading] = []
    bad: list[str] = []
    for number, line in enumerate(text.splitlines()):
        match = HEADING_RE.match(line)
        if not match:
            continue
        heading = match["text"]
        if heading == UNRELEASED:
            headings.append(Heading(number, heading, None, None))
            continue
        versioned = VERSIONED_RE.match(heading)
        if not versioned:
            bad.append(
                f"line {number + 1}: '## {heading}' is not '## {UNRELEASED}', "
                "'## X.Y.Z (unreleased)' or '## X.Y.Z (YYYY-MM-DD)'"
            )
            continue
        version, when = versioned["version"], versioned["when"]
        if not VERSION_RE.match(version):
            bad.append(f"line {number + 1}: {version!r} is not a MAJOR.MINOR.PATCH version")
            continue
        released = None
        if when != "unreleased":
            try:
                released = datetime.date.fromisoformat(when)
            except ValueError:
                bad.append(f"line {number + 1}: {when!r} is not a date")
                continue
        headings.append(Heading(number, heading, version, released))
    return headings, bad


def top_version(headings: list[Heading]) -> Heading | None:
    """The topmost heading that names a version (a leading ``## Unreleased`` is skipped)."""
    return next((h for h in headings if h.version is not None), None)


def last_release(headings: list[Heading]) -> Heading | None:
    """The topmost dated heading: the package's latest release."""
    return next((h for h in headings if not h.unreleased), None)


def changelog_problems(package: Package, version: str | None) -> list[str]:
    """Disagreements between one package's CHANGELOG.md and its ``__about__.py`` version."""
    where = f"{package.label}: CHANGELOG.md"
    if not package.changelog.is_file():
        return [f"{where} is missing"]
    headings, bad = parse_changelog(package.changelog.read_text(encoding="utf-8"))
    problems = [f"{where} {b}" for b in bad]
    if not headings:
        return [*problems, f"{where} has no '## VERSION (...)' heading"]
    for later in headings[1:]:
        if later.unreleased:
            problems.append(
                f"{where} line {later.line + 1}: '## {later.text}' is below a heading; "
                "only the top section may be unreleased"
            )
    versioned = [(h, Version(h.version)) for h in headings if h.version is not None]
    for (upper, high), (lower, low) in itertools.pairwise(versioned):
        if high <= low:
            problems.append(
                f"{where} versions must go down the file: {upper.version} (line "
                f"{upper.line + 1}) is above {lower.version} (line {lower.line + 1})"
            )
    top = top_version(headings)
    if top is None:
        problems.append(f"{where} names no version (only '## {UNRELEASED}')")
    elif version is not None and top.version != version:
        problems.append(
            f"{package.label}: version mismatch: {package.about.name} says {version} but the "
            f"top CHANGELOG.md heading is '## {top.text}' ({top.version})"
        )
    return problems


def core_range_problems(package: Package, core_version: str | None) -> list[str]:
    """Whether a connector's reversi-core requirement is a compatible range admitting core."""
    if not package.core_requirements:
        return [f"{package.label}: does not depend on {CORE} (add '{CORE}>=A,<B')"]
    requirement = package.core_requirement
    if requirement is None:
        return [f"{package.label}: lists {CORE} more than once: {package.core_requirements}"]
    spec = Requirement(requirement).specifier
    operators = {s.operator for s in spec}
    problems = []
    if operators & {"==", "==="}:
        problems.append(
            f"{package.label}: pins {CORE} exactly ({requirement}); use a compatible range "
            f"such as {CORE}>=A,<B"
        )
    else:
        if not operators & {"<", "<=", "~="}:
            problems.append(
                f"{package.label}: {requirement} has no upper bound; a major or minor release "
                "of core could break it (use '<B')"
            )
        if not operators & {">=", ">", "~="}:
            problems.append(f"{package.label}: {requirement} has no lower bound (use '>=A')")
    if core_version is not None and not spec.contains(core_version, prereleases=True):
        problems.append(
            f"{package.label}: {requirement} does not admit the workspace's {CORE} "
            f"{core_version}; widen the range once the connector is tested against it"
        )
    return problems


def admits(requirement: str | None, version: str) -> bool:
    """Whether a ``reversi-core...`` requirement string admits ``version``."""
    if requirement is None:
        return False
    return Requirement(requirement).specifier.contains(version, prereleases=True)


def root_license(root: Path) -> tuple[bytes | None, list[str]]:
    """The root's LICENSE (None when missing), and what is wrong with it."""
    path = root / LICENSE_FILE
    if not path.is_file():
        return None, [f"{LICENSE_FILE} is missing at the repository's root ({root})"]
    text = path.read_bytes()
    if hashlib.sha256(text).hexdigest() != APACHE_2_SHA256:
        return text, [
            f"{LICENSE_FILE} at the repository's root is not the Apache License 2.0 text, "
            "verbatim (https://www.apache.org/licenses/LICENSE-2.0.txt, sha256 "
            f"{APACHE_2_SHA256[:16]}...)"
        ]
    return text, []


def license_problems(package: Package, license_text: bytes | None) -> list[str]:
    """Whether a package declares the project's licence and holds the root's LICENSE."""
    problems = []
    if package.license != LICENSE_EXPRESSION:
        problems.append(
            f'{package.label}: pyproject.toml must say license = "{LICENSE_EXPRESSION}", '
            f"not {package.license!r}"
        )
    if package.license_files != [LICENSE_FILE]:
        problems.append(
            f'{package.label}: pyproject.toml must say license-files = ["{LICENSE_FILE}"], '
            f"not {package.license_files!r}"
        )
    copy = package.folder / LICENSE_FILE
    fix = f"cp {LICENSE_FILE} packages/{package.folder.name}/"
    if not copy.is_file():
        problems.append(
            f"{package.label}: no {LICENSE_FILE} in packages/{package.folder.name}/, so its "
            f"wheel and sdist would ship none (run: {fix})"
        )
    elif license_text is not None and copy.read_bytes() != license_text:
        problems.append(
            f"{package.label}: packages/{package.folder.name}/{LICENSE_FILE} differs from the "
            f"repository's {LICENSE_FILE} (run: {fix})"
        )
    return problems


def url_problems(package: Package) -> list[str]:
    """Whether [project.urls] names the package's documentation, changelog and source."""
    problems = []
    for label, url in package.expected_urls().items():
        have = package.urls.get(label)
        if have is None:
            problems.append(f'{package.label}: [project.urls] lacks {label} = "{url}"')
        elif have != url:
            problems.append(f"{package.label}: [project.urls] {label} is {have}, expected {url}")
    return problems


def package_problems(
    package: Package, core_version: str | None, license_text: bytes | None = None
) -> list[str]:
    """Every disagreement within one package, and between it and reversi-core.

    ``license_text`` is the root's LICENSE, which the package's copy must equal.
    """
    problems = []
    if not package.dynamic_version:
        problems.append(
            f'{package.label}: pyproject.toml must declare dynamic = ["version"] and '
            "[tool.hatch.version] path, so the version lives only in __about__.py"
        )
    version: str | None = None
    if not package.about.is_file():
        problems.append(f"{package.label}: no version file {package.about}")
    else:
        try:
            version = package.version()
        except ValueError as exc:
            problems.append(f"{package.label}: {exc}")
        else:
            if not VERSION_RE.match(version):
                problems.append(
                    f"{package.label}: {package.about.name} version {version!r} is not "
                    "MAJOR.MINOR.PATCH (optionally aN, bN or rcN)"
                )
    problems += changelog_problems(package, version)
    if not package.is_core:
        problems += core_range_problems(package, core_version)
    problems += license_problems(package, license_text)
    problems += url_problems(package)
    return problems


def problems(root: Path = ROOT) -> list[str]:
    """Every version, changelog, reversi-core-range, licence and URL disagreement."""
    packages = discover(root, template=True)
    core = packages.get("core")
    if core is None:
        return [f"no packages/*/pyproject.toml declares {CORE} under {root}"]
    try:
        core_version: str | None = core.version()
    except (OSError, ValueError):
        core_version = None  # reported by package_problems(core)
    license_text, out = root_license(root)
    for package in packages.values():
        out += package_problems(package, core_version, license_text)
    return out


# -- built artifacts ------------------------------------------------------------------


def artifact_stem(dist: str) -> str:
    """The distribution name as wheel and sdist file names spell it."""
    return re.sub(r"[-_.]+", "_", dist).lower()


def project_urls(metadata: email.message.Message) -> dict[str, str]:
    """``{label: url}`` from a core metadata file's ``Project-URL: Label, url`` lines."""
    urls = {}
    for line in metadata.get_all("Project-URL") or []:
        label, _, url = str(line).partition(",")
        urls[label.strip()] = url.strip()
    return urls


def metadata_problems(label: str, package: Package, metadata: email.message.Message) -> list[str]:
    """Whether a wheel's METADATA or an sdist's PKG-INFO declares the project's licence,
    names the file it ships, and carries the sources' project URLs."""
    problems = []
    declared = metadata.get("Metadata-Version", "")
    try:
        too_old = Version(declared) < LICENSE_METADATA_VERSION
    except ValueError:
        too_old = True
    if too_old:
        problems.append(
            f"{label} has Metadata-Version {declared or '(none)'}; License-Expression and "
            f"License-File need {LICENSE_METADATA_VERSION} (hatchling>=1.27)"
        )
    expressions = metadata.get_all("License-Expression") or []
    if expressions != [LICENSE_EXPRESSION]:
        problems.append(
            f"{label} says License-Expression {expressions}, the sources {LICENSE_EXPRESSION}"
        )
    files = metadata.get_all("License-File") or []
    if files != [LICENSE_FILE]:
        problems.append(f"{label} names License-File {files}, expected ['{LICENSE_FILE}']")
    urls = project_urls(metadata)
    for name in sorted(urls.keys() | package.urls.keys()):
        have, want = urls.get(name), package.urls.get(name)
        if have is None:
            problems.append(f"{label} lacks Project-URL {name}, {want}")
        elif have != want:
            problems.append(f"{label} has Project-URL {name}, {have}; the sources {want}")
    return problems


def license_file_problems(
    label: str, shipped: bytes | None, where: str, license_text: bytes
) -> list[str]:
    """Whether an artifact holds the licence file at ``where``, equal to the root's."""
    if shipped is None:
        return [f"{label} does not ship the licence file {where}"]
    if shipped != license_text:
        return [f"{label} ships a {where} that differs from the repository's {LICENSE_FILE}"]
    return []


def wheel_problems(package: Package, version: str, wheel: Path, license_text: bytes) -> list[str]:
    """Disagreements between one wheel and its package's sources; ``license_text`` is the root's
    LICENSE, which the wheel's ``.dist-info/licenses/LICENSE`` must equal."""
    label = f"{package.label}: {wheel.name}"
    problems = []
    info = f"{artifact_stem(package.dist)}-{version}.dist-info"
    shipped_license = f"{info}/licenses/{LICENSE_FILE}"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        try:
            metadata = email.parser.Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        except KeyError:
            return [f"{label} has no {info}/METADATA"]
        entry_points = configparser.ConfigParser(interpolation=None)
        entry_points.optionxform = str  # keep the names' case
        if f"{info}/entry_points.txt" in names:
            entry_points.read_string(archive.read(f"{info}/entry_points.txt").decode())
        shipped = archive.read(shipped_license) if shipped_license in names else None
    if metadata["Name"] != package.dist or metadata["Version"] != version:
        problems.append(
            f"{label} says {metadata['Name']} {metadata['Version']}, "
            f"the sources {package.dist} {version}"
        )
    tops = {n.split("/", 1)[0] for n in names}
    if tops != {package.module, info}:
        problems.append(f"{label} holds {sorted(tops - {info})}, expected only {package.module}/")
    for folder in TEST_TIME:
        if any(f"/{folder}/" in f"/{n}" for n in names):
            problems.append(f"{label} ships the test-time folder {folder}/")
    for group, points in package.entry_points.items():
        for point, target in points.items():
            if entry_points.get(group, point, fallback=None) != target:
                problems.append(f"{label} lacks entry point [{group}] {point} = {target}")
    if f"{package.module}/py.typed" not in names:
        problems.append(f"{label} does not ship {package.module}/py.typed")
    required = [r for r in metadata.get_all("Requires-Dist") or [] if _requirement_name(r) == CORE]
    if not package.is_core:
        wanted = Requirement(package.core_requirement or CORE)
        if [Requirement(r) for r in required] != [wanted]:
            problems.append(f"{label} requires {required}, the sources {package.core_requirement}")
    problems += license_file_problems(label, shipped, shipped_license, license_text)
    problems += metadata_problems(label, package, metadata)
    return problems


def _sdist_member(archive: tarfile.TarFile, name: str) -> bytes | None:
    """The bytes of one regular file in an sdist, or None when it is not there."""
    try:
        member = archive.getmember(name)
    except KeyError:
        return None
    handle = archive.extractfile(member) if member.isfile() else None
    return handle.read() if handle is not None else None


def sdist_problems(package: Package, version: str, sdist: Path, license_text: bytes) -> list[str]:
    """Disagreements between one sdist and its package's sources (files, PKG-INFO, licence)."""
    label = f"{package.label}: {sdist.name}"
    base = f"{artifact_stem(package.dist)}-{version}"
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
        pkg_info = _sdist_member(archive, f"{base}/PKG-INFO")
        shipped = _sdist_member(archive, f"{base}/{LICENSE_FILE}")
    missing = [
        f for f in ("pyproject.toml", "PKG-INFO", "CHANGELOG.md") if f"{base}/{f}" not in names
    ]
    about = f"{base}/{package.about.relative_to(package.folder).as_posix()}"
    if about not in names:
        missing.append(about.removeprefix(f"{base}/"))
    problems = [f"{label} lacks {', '.join(missing)}"] if missing else []
    problems += license_file_problems(label, shipped, f"{base}/{LICENSE_FILE}", license_text)
    if pkg_info is not None:
        metadata = email.parser.Parser().parsestr(pkg_info.decode())
        problems += metadata_problems(label, package, metadata)
    return problems


def dist_problems(dist: Path, root: Path = ROOT) -> list[str]:
    """Disagreements between the built artifacts in ``dist`` and the sources."""
    found, out = root_license(root)
    license_text = found if found is not None else b""  # missing: reported; nothing can match
    expected: set[str] = set()
    for package in discover(root).values():
        try:
            version = package.version()
        except (OSError, ValueError) as exc:
            out.append(f"{package.label}: {exc}")
            continue
        stem = artifact_stem(package.dist)
        wheel = dist / f"{stem}-{version}-py3-none-any.whl"
        sdist = dist / f"{stem}-{version}.tar.gz"
        expected |= {wheel.name, sdist.name}
        for path, check in ((wheel, wheel_problems), (sdist, sdist_problems)):
            if not path.is_file():
                out.append(f"{package.label}: {path.name} is not in {dist} (run 'nox -s build')")
            else:
                out += check(package, version, path, license_text)
    stale = sorted(
        p.name for p in dist.glob("reversi[-_]*") if p.name not in expected and p.is_file()
    )
    if stale:
        out.append(f"{dist}: stale artifacts not built from the current sources: {stale}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="the workspace (default: here)")
    parser.add_argument("--dist", type=Path, help="also check the wheels and sdists in DIR")
    args = parser.parse_args(argv)
    found = problems(args.root)
    if args.dist is not None and not found:
        found = dist_problems(args.dist, args.root)
    if found:
        for line in found:
            print(f"check_versions: {line}", file=sys.stderr)
        return 1
    packages = discover(args.root)
    summary = ", ".join(f"{p.dist} {p.version()}" for p in packages.values())
    checked = " and their wheels and sdists" if args.dist is not None else ""
    print(f"versions, changelogs, reversi-core ranges, licences and URLs agree{checked}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
