"""scripts/check_versions.py: versions, changelogs and reversi-core ranges agree.

The first test is the CI gate: it fails, naming the package and the mismatch, when the
workspace disagrees with itself. The others break a temporary copy of the workspace one
way at a time and show that each way is caught and named.
"""

from __future__ import annotations

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


# -- a temporary workspace ------------------------------------------------------------


def copy_workspace(
    dest: Path, names: tuple[str, ...] = ("reversi-core", "reversi-connector-fs")
) -> Path:
    """The files the check reads, for core, fs and the template, under ``dest``."""
    for name in (*names, "_template"):
        src = ROOT / "packages" / name
        package = cv.load_package(src)
        for rel in ("pyproject.toml", "CHANGELOG.md", package.about.relative_to(src)):
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


# -- built artifacts ------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of core and fs with real wheels (pip wheel, through hatchling) and sdists."""
    base = tmp_path_factory.mktemp("built")
    ws = base / "ws"
    for name in ("reversi-core", "reversi-connector-fs"):
        shutil.copytree(
            ROOT / "packages" / name,
            ws / "packages" / name,
            ignore=shutil.ignore_patterns("__pycache__", ".*cache"),
        )
    shutil.copytree(ROOT / "packages" / "_template", ws / "packages" / "_template")
    dist = base / "dist"
    for name in ("reversi-core", "reversi-connector-fs"):
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), "."],
            cwd=ws / "packages" / name,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        write_sdist(ws / "packages" / name, dist)
    return ws, dist


def write_sdist(folder: Path, dist: Path) -> Path:
    """An sdist laid out as hatch's (name-version/ at the top, with PKG-INFO)."""
    package = cv.load_package(folder)
    base = f"{cv.artifact_stem(package.dist)}-{package.version()}"
    target = dist / f"{base}.tar.gz"
    with tarfile.open(target, "w:gz") as archive:
        for rel in ("pyproject.toml", "CHANGELOG.md", "README.md", "src"):
            archive.add(folder / rel, arcname=f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = f"Metadata-Version: 2.4\nName: {package.dist}\n".encode()
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return target


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


@pytest.mark.slow
def test_freshly_built_artifacts_pass(built: tuple[Path, Path]) -> None:
    ws, dist = built
    assert cv.dist_problems(dist, ws) == []
    proc = run_check(ws, "--dist", str(dist))
    assert proc.returncode == 0, proc.stderr
    assert "and their wheels and sdists" in proc.stdout


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
    with tarfile.open(sdist) as archive:
        members = [(m, archive.extractfile(m)) for m in archive.getmembers()]
        kept = [
            (m, f.read() if f else None) for m, f in members if m.name != f"{base}/CHANGELOG.md"
        ]
    with tarfile.open(sdist, "w:gz") as archive:
        for member, data in kept:
            archive.addfile(member, io.BytesIO(data) if data is not None else None)
    assert cv.dist_problems(dist, ws) == [f"reversi-core: {sdist.name} lacks CHANGELOG.md"]
