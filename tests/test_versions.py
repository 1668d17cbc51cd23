"""scripts/check_versions.py: versions, changelogs, reversi-core ranges, licences and URLs agree.

The first test is the CI gate: it fails, naming the package and the mismatch, when the
workspace disagrees with itself. The others break a temporary copy of the workspace one
way at a time and show that each way is caught and named.
"""

from __future__ import annotations

import email.parser
import hashlib
import importlib.util
import io
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_versions.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_versions", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


cv = load_script()


def test_the_workspace_agrees() -> None:
    """Every package: __about__.py = top CHANGELOG heading; connectors admit core's version."""
    problems = cv.problems(ROOT)
    assert problems == [], "\n".join(problems)
    packages = cv.discover(ROOT)
    assert {"core", "fs"} <= set(packages)
    assert all(p.core_requirement for p in packages.values() if not p.is_core)


def test_the_licence_is_apache_2_verbatim_and_every_package_holds_it() -> None:
    """The root's LICENSE is the ASF's text; each package folder (the template too) a copy."""
    licence = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(licence).hexdigest() == cv.APACHE_2_SHA256
    assert licence.lstrip().startswith(b"Apache License\n                           Version 2.0")
    assert b"END OF TERMS AND CONDITIONS" in licence
    folders = sorted(p.parent for p in ROOT.glob("packages/*/pyproject.toml"))
    assert ROOT / "packages" / "_template" in folders
    for folder in folders:
        assert (folder / "LICENSE").read_bytes() == licence, folder.name


# -- a temporary workspace ------------------------------------------------------------


def copy_workspace(
    dest: Path, names: tuple[str, ...] = ("reversi-core", "reversi-connector-fs")
) -> Path:
    """The files the check reads, for core, fs and the template, under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "LICENSE", dest / "LICENSE")
    for name in (*names, "_template"):
        src = ROOT / "packages" / name
        package = cv.load_package(src)
        for rel in ("pyproject.toml", "CHANGELOG.md", "LICENSE", package.about.relative_to(src)):
            target = dest / "packages" / name / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / rel, target)
    return dest


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return copy_workspace(tmp_path / "ws")


def version_of(ws: Path, short: str) -> str:
    return str(cv.discover(ws)[short].version())


def set_version(ws: Path, short: str, version: str) -> None:
    about = cv.discover(ws)[short].about
    about.write_text(
        re.sub(r'__version__ = "[^"]*"', f'__version__ = "{version}"', about.read_text())
    )


def set_changelog(ws: Path, folder: str, *sections: str) -> None:
    body = "".join(f"## {s}\n\n- A change.\n\n" for s in sections)
    (ws / "packages" / folder / "CHANGELOG.md").write_text(f"# Changelog: {folder}\n\n{body}")


def set_core_requirement(ws: Path, folder: str, requirement: str | None) -> None:
    pyproject = ws / "packages" / folder / "pyproject.toml"
    text = pyproject.read_text()
    old = re.search(r'"reversi-core[^"]*",?\s*', text)
    assert old, text
    new = f'"{requirement}", ' if requirement else ""
    pyproject.write_text(text.replace(old[0], new, 1))


def next_minor(version: str) -> str:
    major, minor, _ = (int(x) for x in re.findall(r"\d+", version)[:3])
    return f"{major}.{minor + 1}.0"


def run_check(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(ws), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_consistent_copy_passes_and_says_so(ws: Path) -> None:
    proc = run_check(ws)
    assert proc.returncode == 0, proc.stderr
    assert "agree" in proc.stdout
    assert f"reversi-connector-fs {version_of(ws, 'fs')}" in proc.stdout
    assert proc.stderr == ""


def test_a_version_bumped_without_its_changelog_is_named(ws: Path) -> None:
    old = version_of(ws, "fs")
    set_changelog(ws, "reversi-connector-fs", f"{old} (2026-01-05)")
    set_version(ws, "fs", next_minor(old))
    proc = run_check(ws)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert lines == [
        f"check_versions: reversi-connector-fs: version mismatch: __about__.py says "
        f"{next_minor(old)} but the top CHANGELOG.md heading is '## {old} (2026-01-05)' ({old})"
    ]


def test_a_changelog_ahead_of_the_version_file_is_named(ws: Path) -> None:
    old = version_of(ws, "core")
    set_changelog(ws, "reversi-core", f"{next_minor(old)} (unreleased)", f"{old} (2026-01-05)")
    problems = cv.problems(ws)
    assert len(problems) == 1
    assert problems[0].startswith("reversi-core: version mismatch:")
    assert f"says {old}" in problems[0]
    assert f"({next_minor(old)})" in problems[0]


def test_a_leading_unreleased_section_is_skipped(ws: Path) -> None:
    old = version_of(ws, "fs")
    set_changelog(ws, "reversi-connector-fs", "Unreleased", f"{old} (2026-01-05)")
    assert cv.problems(ws) == []


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (
            "reversi-core==0.1.0",
            "reversi-connector-fs: pins reversi-core exactly (reversi-core==0.1.0)",
        ),
        ("reversi-core>=0.1", "reversi-connector-fs: reversi-core>=0.1 has no upper bound"),
        ("reversi-core<9", "reversi-connector-fs: reversi-core<9 has no lower bound"),
        (None, "reversi-connector-fs: does not depend on reversi-core"),
    ],
)
def test_a_range_that_is_not_compatible_is_named(
    ws: Path, requirement: str | None, expected: str
) -> None:
    set_core_requirement(ws, "reversi-connector-fs", requirement)
    problems = cv.problems(ws)
    assert any(p.startswith(expected) for p in problems), problems
    assert all(p.startswith("reversi-connector-fs: ") for p in problems), problems


def test_a_compatible_release_operator_is_a_range(ws: Path) -> None:
    core = version_of(ws, "core")
    major, minor = core.split(".")[:2]
    set_core_requirement(ws, "reversi-connector-fs", f"reversi-core~={major}.{minor}.0")
    assert cv.problems(ws) == []


def test_a_core_release_outside_the_connectors_ranges_names_each(ws: Path) -> None:
    old = version_of(ws, "core")
    new = next_minor(old)
    set_version(ws, "core", new)
    set_changelog(ws, "reversi-core", f"{new} (2026-02-01)", f"{old} (2026-01-05)")
    problems = cv.problems(ws)
    fs_range = cv.discover(ws)["fs"].core_requirement
    assert sorted(problems) == sorted(
        [
            f"packages/_template: {cv.load_package(ws / 'packages' / '_template').core_requirement} "
            f"does not admit the workspace's reversi-core {new}; widen the range once the "
            "connector is tested against it",
            f"reversi-connector-fs: {fs_range} does not admit the workspace's reversi-core {new}; "
            "widen the range once the connector is tested against it",
        ]
    )
    proc = run_check(ws)
    assert proc.returncode == 1
    assert len(proc.stderr.splitlines()) == 2


@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        (["0.1.0 (2026-01-05)", "Unreleased"], "only the top section may be unreleased"),
        (["0.1.0 (2026-01-05)", "0.2.0 (2026-01-01)"], "versions must go down the file"),
        (["0.1.0 (2026-01-05)", "0.1.0 (2026-01-01)"], "versions must go down the file"),
        (["v0.1.0 - 2026-01-05"], "is not '## Unreleased'"),
        (["0.1 (2026-01-05)"], "is not a MAJOR.MINOR.PATCH version"),
        (["0.1.0 (2026-02-30)"], "is not a date"),
        ([], "has no '## VERSION (...)' heading"),
    ],
)
def test_a_malformed_changelog_is_named(ws: Path, sections: list[str], expected: str) -> None:
    set_version(ws, "fs", "0.1.0")
    set_changelog(ws, "reversi-connector-fs", *sections)
    problems = cv.problems(ws)
    assert any(expected in p for p in problems), problems
    assert all(p.startswith("reversi-connector-fs: ") for p in problems), problems


def test_a_static_version_in_pyproject_is_refused(ws: Path) -> None:
    pyproject = ws / "packages" / "reversi-connector-fs" / "pyproject.toml"
    text = pyproject.read_text().replace('dynamic = ["version"]', 'version = "0.1.0"')
    pyproject.write_text(text)
    problems = cv.problems(ws)
    assert any("must declare dynamic" in p for p in problems), problems


def test_a_malformed_version_file_is_named(ws: Path) -> None:
    set_version(ws, "fs", "1.0")
    problems = cv.problems(ws)
    assert any("__about__.py version '1.0' is not MAJOR.MINOR.PATCH" in p for p in problems)


# -- the licence and the project URLs in the sources ------------------------------------


def edit_pyproject(ws: Path, folder: str, old: str, new: str) -> None:
    pyproject = ws / "packages" / folder / "pyproject.toml"
    text = pyproject.read_text()
    assert old in text, text
    pyproject.write_text(text.replace(old, new, 1))


def test_a_package_without_its_licence_copy_is_named(ws: Path) -> None:
    (ws / "packages" / "reversi-connector-fs" / "LICENSE").unlink()
    assert cv.problems(ws) == [
        "reversi-connector-fs: no LICENSE in packages/reversi-connector-fs/, so its wheel and "
        "sdist would ship none (run: cp LICENSE packages/reversi-connector-fs/)"
    ]
    proc = run_check(ws)
    assert proc.returncode == 1
    assert "no LICENSE in packages/reversi-connector-fs/" in proc.stderr


def test_a_licence_copy_that_drifted_from_the_root_is_named(ws: Path) -> None:
    copy = ws / "packages" / "_template" / "LICENSE"
    copy.write_bytes(copy.read_bytes().replace(b"Version 2.0", b"Version 2.1", 1))
    assert cv.problems(ws) == [
        "packages/_template: packages/_template/LICENSE differs from the repository's LICENSE "
        "(run: cp LICENSE packages/_template/)"
    ]


def test_a_root_licence_that_is_not_the_apache_text_is_named(ws: Path) -> None:
    """Even with every copy equal to it: the files must hold the terms the metadata claims."""
    other = b"MIT License\n\nPermission is hereby granted, free of charge, ...\n"
    for path in [ws / "LICENSE", *ws.glob("packages/*/LICENSE")]:
        path.write_bytes(other)
    problems = cv.problems(ws)
    assert len(problems) == 1, problems
    assert problems[0].startswith(
        "LICENSE at the repository's root is not the Apache License 2.0 text, verbatim"
    )


def test_a_missing_root_licence_is_named(ws: Path) -> None:
    (ws / "LICENSE").unlink()
    assert cv.problems(ws) == [f"LICENSE is missing at the repository's root ({ws})"]
    assert run_check(ws).returncode == 1


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            'license = "Apache-2.0"',
            'license = "MIT"',
            "reversi-connector-fs: pyproject.toml must say license = \"Apache-2.0\", not 'MIT'",
        ),
        (
            'license = "Apache-2.0"',
            'license = { text = "Apache-2.0" }',
            'reversi-connector-fs: pyproject.toml must say license = "Apache-2.0", '
            "not {'text': 'Apache-2.0'}",
        ),
        (
            'license-files = ["LICENSE"]\n',
            "",
            'reversi-connector-fs: pyproject.toml must say license-files = ["LICENSE"], not None',
        ),
        (
            'license-files = ["LICENSE"]',
            'license-files = ["LICEN[CS]E*"]',
            'reversi-connector-fs: pyproject.toml must say license-files = ["LICENSE"], '
            "not ['LICEN[CS]E*']",
        ),
    ],
)
def test_a_licence_declared_otherwise_is_named(ws: Path, old: str, new: str, expected: str) -> None:
    edit_pyproject(ws, "reversi-connector-fs", old, new)
    assert cv.problems(ws) == [expected]


def test_every_package_declares_its_three_project_urls() -> None:
    """In the real workspace, spelled out: the scheme the check holds them to."""
    base = "https://github.com/reversi-dev/reversi"
    for package in cv.discover(ROOT, template=True).values():
        folder = "reversi-connector-__name__" if package.is_template else package.folder.name
        documentation = (
            f"{base}/tree/main/docs"
            if package.is_core
            else f"{base}/blob/main/docs/connectors/{package.short}.md"
        )
        assert package.urls == {
            "Documentation": documentation,
            "Changelog": f"{base}/blob/main/packages/{folder}/CHANGELOG.md",
            "Source": f"{base}/tree/main/packages/{folder}",
        }, package.label
        if not package.is_template:
            assert (ROOT / "packages" / folder / "CHANGELOG.md").is_file()
            assert package.dist == folder


def test_a_missing_or_misplaced_project_url_is_named(ws: Path) -> None:
    fs = cv.discover(ws)["fs"]
    changelog = fs.urls["Changelog"]
    edit_pyproject(ws, "reversi-connector-fs", f'Changelog = "{changelog}"\n', "")
    source = fs.urls["Source"]  # copied from core's pyproject by mistake
    wrong = source.replace("reversi-connector-fs", "reversi-core")
    edit_pyproject(ws, "reversi-connector-fs", source, wrong)
    assert cv.problems(ws) == [
        f'reversi-connector-fs: [project.urls] lacks Changelog = "{changelog}"',
        f"reversi-connector-fs: [project.urls] Source is {wrong}, expected {source}",
    ]


def test_a_template_without_project_urls_is_named(ws: Path) -> None:
    pyproject = ws / "packages" / "_template" / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(re.sub(r"\[project\.urls\]\n(.+\n)+\n", "", text))
    problems = cv.problems(ws)
    assert [p.split(" = ")[0] for p in problems] == [
        f"packages/_template: [project.urls] lacks {label}" for label in cv.URL_LABELS
    ]
    assert problems[0].endswith('/blob/main/docs/connectors/__name__.md"')


# -- built artifacts ------------------------------------------------------------------


def copy_package(name: str, dest: Path) -> Path:
    """One package folder of the repository, without caches, under ``dest / packages``."""
    return Path(
        shutil.copytree(
            ROOT / "packages" / name,
            dest / "packages" / name,
            ignore=shutil.ignore_patterns("__pycache__", ".*cache"),
        )
    )


def hatchling_build(folder: Path, dist: Path) -> None:
    """A wheel and an sdist of the package in ``folder``, built by hatchling as ``nox -s
    build`` builds them (from the package's own folder), into ``dist``."""
    proc = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-t", "sdist", "-d", str(dist)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of core and fs (and the template) with real wheels and sdists from hatchling."""
    base = tmp_path_factory.mktemp("built")
    ws = base / "ws"
    for name in ("reversi-core", "reversi-connector-fs", "_template"):
        copy_package(name, ws)
    shutil.copyfile(ROOT / "LICENSE", ws / "LICENSE")
    dist = base / "dist"
    for name in ("reversi-core", "reversi-connector-fs"):
        hatchling_build(ws / "packages" / name, dist)
    return ws, dist


def copy_dist(built: tuple[Path, Path], dest: Path) -> tuple[Path, Path]:
    ws, dist = built
    shutil.copytree(dist, dest)
    return ws, dest


def rewrite_wheel(wheel: Path, change: dict[str, bytes | None]) -> None:
    """Replace, add (bytes) or drop (None) members of a wheel."""
    with zipfile.ZipFile(wheel) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    for name, data in change.items():
        if data is None:
            members.pop(name)
        else:
            members[name] = data
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def rewrite_sdist(sdist: Path, change: dict[str, bytes | None]) -> None:
    """Replace (bytes) or drop (None) members of an sdist; other members stay as they were."""
    with tarfile.open(sdist) as archive:
        members = []
        for member in archive.getmembers():
            handle = archive.extractfile(member)
            members.append((member, handle.read() if handle is not None else None))
    with tarfile.open(sdist, "w:gz") as archive:
        for member, data in members:
            if member.name in change:
                data = change[member.name]
                if data is None:
                    continue
                member.size = len(data)
            archive.addfile(member, io.BytesIO(data) if data is not None else None)


def read_metadata(text: bytes) -> email.message.Message:
    return email.parser.Parser().parsestr(text.decode())


@pytest.mark.slow
def test_freshly_built_artifacts_pass(built: tuple[Path, Path]) -> None:
    ws, dist = built
    assert cv.dist_problems(dist, ws) == []
    proc = run_check(ws, "--dist", str(dist))
    assert proc.returncode == 0, proc.stderr
    assert "and their wheels and sdists" in proc.stdout


@pytest.mark.slow
def test_hatchling_ships_the_licence_in_the_wheel_and_the_sdist(built: tuple[Path, Path]) -> None:
    """What the check passes, read directly: the file, and the metadata naming it."""
    ws, dist = built
    licence = (ROOT / "LICENSE").read_bytes()
    for package in cv.discover(ws).values():
        stem = f"{cv.artifact_stem(package.dist)}-{package.version()}"
        with zipfile.ZipFile(dist / f"{stem}-py3-none-any.whl") as wheel:
            assert wheel.read(f"{stem}.dist-info/licenses/LICENSE") == licence
            metadata = read_metadata(wheel.read(f"{stem}.dist-info/METADATA"))
        with tarfile.open(dist / f"{stem}.tar.gz") as sdist:
            shipped = sdist.extractfile(f"{stem}/LICENSE")
            assert shipped is not None
            assert shipped.read() == licence
            info = sdist.extractfile(f"{stem}/PKG-INFO")
            assert info is not None
            pkg_info = read_metadata(info.read())
        for meta in (metadata, pkg_info):
            assert meta.get_all("License-Expression") == ["Apache-2.0"]
            assert meta.get_all("License-File") == ["LICENSE"]
            assert sorted(meta.get_all("Project-URL") or []) == sorted(
                f"{label}, {url}" for label, url in package.urls.items()
            )


@pytest.mark.slow
def test_pip_install_of_an_sdist_installs_the_licence(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """A user who installs from the sdist gets the licence too: the sdist holds what the
    wheel built from it needs."""
    ws, dist = built
    fs = cv.discover(ws)["fs"]
    stem = f"{cv.artifact_stem(fs.dist)}-{fs.version()}"
    target = tmp_path / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(dist / f"{stem}.tar.gz"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    info = target / f"{stem}.dist-info"
    assert (info / "licenses" / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    metadata = read_metadata((info / "METADATA").read_bytes())
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["License-Expression"] == "Apache-2.0"


@pytest.mark.slow
def test_a_package_built_without_its_licence_is_rejected(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """The deliberately broken distribution: fs built from a folder that lost its LICENSE.
    hatchling builds it without complaint; the check refuses both artifacts."""
    ws, good = built
    broken = copy_package("reversi-connector-fs", tmp_path / "broken")
    (broken / "LICENSE").unlink()
    dist = tmp_path / "dist"
    hatchling_build(broken, dist)
    for core in good.glob("reversi_core-*"):
        shutil.copyfile(core, dist / core.name)
    fs = cv.discover(ws)["fs"]
    stem = f"{cv.artifact_stem(fs.dist)}-{fs.version()}"
    wheel, sdist = f"{stem}-py3-none-any.whl", f"{stem}.tar.gz"
    assert cv.dist_problems(dist, ws) == [
        f"reversi-connector-fs: {wheel} does not ship the licence file "
        f"{stem}.dist-info/licenses/LICENSE",
        f"reversi-connector-fs: {wheel} names License-File [], expected ['LICENSE']",
        f"reversi-connector-fs: {sdist} does not ship the licence file {stem}/LICENSE",
        f"reversi-connector-fs: {sdist} names License-File [], expected ['LICENSE']",
    ]
    proc = run_check(ws, "--dist", str(dist))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 4


@pytest.mark.slow
def test_a_wheel_whose_licence_disagrees_is_named(built: tuple[Path, Path], tmp_path: Path) -> None:
    ws, dist = copy_dist(built, tmp_path / "dist")
    core = cv.discover(ws)["core"]
    stem = f"reversi_core-{core.version()}"
    wheel = dist / f"{stem}-py3-none-any.whl"
    info = f"{stem}.dist-info"
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"{info}/METADATA").decode()
        licence = archive.read(f"{info}/licenses/LICENSE")
    version_line = next(ln for ln in metadata.splitlines() if ln.startswith("Metadata-Version:"))
    docs = core.urls["Documentation"]
    metadata = (
        metadata.replace(version_line, "Metadata-Version: 2.3")
        .replace("License-Expression: Apache-2.0", "License-Expression: MIT")
        .replace("License-File: LICENSE", "License-File: COPYING")
        .replace(f"Project-URL: Documentation, {docs}\n", "")
    )
    rewrite_wheel(
        wheel,
        {
            f"{info}/METADATA": metadata.encode(),
            f"{info}/licenses/LICENSE": licence.replace(b"Apache", b"Apathy"),
        },
    )
    label = f"reversi-core: {wheel.name}"
    assert cv.dist_problems(dist, ws) == [
        f"{label} ships a {info}/licenses/LICENSE that differs from the repository's LICENSE",
        f"{label} has Metadata-Version 2.3; License-Expression and License-File need 2.4 "
        "(hatchling>=1.27)",
        f"{label} says License-Expression ['MIT'], the sources Apache-2.0",
        f"{label} names License-File ['COPYING'], expected ['LICENSE']",
        f"{label} lacks Project-URL Documentation, {docs}",
    ]


@pytest.mark.slow
def test_an_sdist_whose_licence_disagrees_is_named(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, dist = copy_dist(built, tmp_path / "dist")
    fs = cv.discover(ws)["fs"]
    base = f"reversi_connector_fs-{fs.version()}"
    sdist = dist / f"{base}.tar.gz"
    with tarfile.open(sdist) as archive:
        handle = archive.extractfile(f"{base}/PKG-INFO")
        assert handle is not None
        pkg_info = handle.read().decode()
    source = fs.urls["Source"]
    elsewhere = "https://example.org/fs"
    rewrite_sdist(
        sdist,
        {
            f"{base}/LICENSE": None,
            f"{base}/PKG-INFO": pkg_info.replace("License-Expression: Apache-2.0\n", "")
            .replace(source, elsewhere)
            .encode(),
        },
    )
    label = f"reversi-connector-fs: {sdist.name}"
    assert cv.dist_problems(dist, ws) == [
        f"{label} does not ship the licence file {base}/LICENSE",
        f"{label} says License-Expression [], the sources Apache-2.0",
        f"{label} has Project-URL Source, {elsewhere}; the sources {source}",
    ]


@pytest.mark.slow
def test_stale_and_missing_artifacts_are_named(built: tuple[Path, Path], tmp_path: Path) -> None:
    ws, dist = copy_dist(built, tmp_path / "dist")
    wheel = next(dist.glob("reversi_connector_fs-*.whl"))
    stale = dist / "reversi_connector_fs-0.0.1-py3-none-any.whl"
    wheel.rename(stale)
    problems = cv.dist_problems(dist, ws)
    assert problems == [
        f"reversi-connector-fs: {wheel.name} is not in {dist} (run 'nox -s build')",
        f"{dist}: stale artifacts not built from the current sources: [{stale.name!r}]",
    ]


@pytest.mark.slow
def test_a_wheel_that_differs_from_its_sources_is_named(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, dist = copy_dist(built, tmp_path / "dist")
    wheel = next(dist.glob("reversi_connector_fs-*.whl"))
    version = cv.discover(ws)["fs"].version()
    info = f"reversi_connector_fs-{version}.dist-info"
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"{info}/METADATA").decode()
    rewrite_wheel(
        wheel,
        {
            f"{info}/METADATA": metadata.replace(f"Version: {version}", "Version: 9.9.9").encode(),
            "reversi_connector_fs/py.typed": None,
            "tests/test_leak.py": b"",
            f"{info}/entry_points.txt": b"[console_scripts]\n",
        },
    )
    problems = cv.dist_problems(dist, ws)
    label = f"reversi-connector-fs: {wheel.name}"
    assert (
        f"{label} says reversi-connector-fs 9.9.9, the sources reversi-connector-fs {version}"
        in problems
    )
    assert (
        f"{label} holds ['reversi_connector_fs', 'tests'], expected only reversi_connector_fs/"
        in problems
    )
    assert f"{label} ships the test-time folder tests/" in problems
    assert f"{label} does not ship reversi_connector_fs/py.typed" in problems
    assert (
        f"{label} lacks entry point [reversi.connectors] fs = reversi_connector_fs:FsConnector"
        in problems
    )


@pytest.mark.slow
def test_a_wheel_without_a_console_script_is_named(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, dist = copy_dist(built, tmp_path / "dist")
    version = cv.discover(ws)["core"].version()
    wheel = dist / f"reversi_core-{version}-py3-none-any.whl"
    info = f"reversi_core-{version}.dist-info"
    with zipfile.ZipFile(wheel) as archive:
        points = archive.read(f"{info}/entry_points.txt").decode()
    assert "reversi-gateway = reversi_core.cli.gateway:main" in points
    kept = "".join(ln for ln in points.splitlines(keepends=True) if "reversi-gateway" not in ln)
    rewrite_wheel(wheel, {f"{info}/entry_points.txt": kept.encode()})
    assert cv.dist_problems(dist, ws) == [
        f"reversi-core: {wheel.name} lacks entry point [console_scripts] "
        "reversi-gateway = reversi_core.cli.gateway:main"
    ]


@pytest.mark.slow
def test_a_wheel_with_another_core_range_is_named(built: tuple[Path, Path], tmp_path: Path) -> None:
    ws, dist = copy_dist(built, tmp_path / "dist")
    fs = cv.discover(ws)["fs"]
    wheel = dist / f"reversi_connector_fs-{fs.version()}-py3-none-any.whl"
    info = f"reversi_connector_fs-{fs.version()}.dist-info"
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"{info}/METADATA").decode()
    line = next(ln for ln in metadata.splitlines() if ln.startswith("Requires-Dist: reversi-core"))
    rewrite_wheel(
        wheel,
        {f"{info}/METADATA": metadata.replace(line, "Requires-Dist: reversi-core>=0").encode()},
    )
    problems = cv.dist_problems(dist, ws)
    assert problems == [
        f"reversi-connector-fs: {wheel.name} requires ['reversi-core>=0'], the sources {fs.core_requirement}"
    ]


@pytest.mark.slow
def test_an_sdist_without_its_changelog_is_named(built: tuple[Path, Path], tmp_path: Path) -> None:
    ws, dist = copy_dist(built, tmp_path / "dist")
    core = cv.discover(ws)["core"]
    sdist = dist / f"reversi_core-{core.version()}.tar.gz"
    base = f"reversi_core-{core.version()}"
    rewrite_sdist(sdist, {f"{base}/CHANGELOG.md": None})
    assert cv.dist_problems(dist, ws) == [f"reversi-core: {sdist.name} lacks CHANGELOG.md"]
