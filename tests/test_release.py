"""scripts/release.py on a temporary copy of the workspace: its edits, its tag, its refusals."""

from __future__ import annotations

import datetime
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ("release.py", "check_versions.py")
PACKAGES = ("reversi-core", "reversi-connector-fs", "_template")
HEADER = "# Changelog: {name}\n\nAll notable changes to this package.\n\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A copy of scripts/, the LICENSE and core, fs and the template (sources without caches)."""
    dest = tmp_path / "ws"
    dest.mkdir()
    shutil.copyfile(ROOT / "LICENSE", dest / "LICENSE")
    for script in SCRIPTS:
        (dest / "scripts").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / "scripts" / script, dest / "scripts" / script)
    for name in PACKAGES:
        shutil.copytree(
            ROOT / "packages" / name,
            dest / "packages" / name,
            ignore=shutil.ignore_patterns("__pycache__", ".*cache", "tests"),
        )
    return dest


def about(ws: Path, folder: str) -> Path:
    module = "reversi_connector___name__" if folder == "_template" else folder.replace("-", "_")
    return ws / "packages" / folder / "src" / module / "__about__.py"


def version(ws: Path, folder: str) -> str:
    found = re.search(r'__version__ = "([^"]+)"', about(ws, folder).read_text())
    assert found
    return found[1]


def set_version(ws: Path, folder: str, new: str) -> None:
    path = about(ws, folder)
    path.write_text(re.sub(r'__version__ = "[^"]+"', f'__version__ = "{new}"', path.read_text()))


def changelog(ws: Path, folder: str) -> Path:
    return ws / "packages" / folder / "CHANGELOG.md"


def write_changelog(ws: Path, folder: str, body: str) -> None:
    changelog(ws, folder).write_text(HEADER.format(name=folder) + body)


def snapshot(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


def release(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ws / "scripts" / "release.py"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def check(ws: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ws / "scripts" / "check_versions.py")],
        capture_output=True,
        text=True,
        check=False,
    )


def bump(text: str, part: str) -> str:
    major, minor, patch = (int(x) for x in re.findall(r"\d+", text)[:3])
    return {
        "major": f"{major + 1}.0.0",
        "minor": f"{major}.{minor + 1}.0",
        "patch": f"{major}.{minor}.{patch + 1}",
    }[part]


@pytest.fixture
def released_fs(ws: Path) -> tuple[Path, str]:
    """fs with one release behind it and an unreleased section on top."""
    current = version(ws, "reversi-connector-fs")
    write_changelog(
        ws,
        "reversi-connector-fs",
        f"## Unreleased\n\n- `fs.copy_file`.\n- Faster backups.\n\n"
        f"## {current} (2026-01-05)\n\n- First release.\n",
    )
    return ws, current


def test_a_release_bumps_the_version_dates_the_section_and_prints_the_tag(
    released_fs: tuple[Path, str],
) -> None:
    ws, current = released_fs
    new = bump(current, "minor")
    before = snapshot(ws)
    proc = release(ws, "reversi-connector-fs", new, "--date", "2026-12-01")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"reversi-connector-fs-v{new}\n"
    assert version(ws, "reversi-connector-fs") == new
    assert changelog(ws, "reversi-connector-fs").read_text() == HEADER.format(
        name="reversi-connector-fs"
    ) + (
        f"## {new} (2026-12-01)\n\n- `fs.copy_file`.\n- Faster backups.\n\n"
        f"## {current} (2026-01-05)\n\n- First release.\n"
    )
    after = snapshot(ws)
    changed = sorted(k for k in after if after[k] != before.get(k))
    assert changed == [
        "packages/reversi-connector-fs/CHANGELOG.md",
        "packages/reversi-connector-fs/src/reversi_connector_fs/__about__.py",
    ]
    assert f"reversi-connector-fs {current} -> {new}" in proc.stderr
    assert f"git tag reversi-connector-fs-v{new}" in proc.stderr
    assert "note:" not in proc.stderr
    consistent = check(ws)
    assert consistent.returncode == 0, consistent.stderr


@pytest.mark.parametrize("name", ["fs", "reversi-connector-fs"])
def test_a_package_is_named_by_distribution_or_short_name(
    released_fs: tuple[Path, str], name: str
) -> None:
    ws, current = released_fs
    new = bump(current, "patch")
    proc = release(ws, name, new, "--date", "2026-12-01")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"reversi-connector-fs-v{new}\n"


def test_a_dry_run_prints_the_tag_and_changes_nothing(released_fs: tuple[Path, str]) -> None:
    ws, current = released_fs
    before = snapshot(ws)
    new = bump(current, "major")
    proc = release(ws, "fs", new, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"reversi-connector-fs-v{new}\n"
    assert "would update" in proc.stderr
    assert snapshot(ws) == before


def test_the_first_release_dates_the_versioned_unreleased_heading(ws: Path) -> None:
    """'## X (unreleased)' with X the current version: releasing X is allowed (never released)."""
    current = version(ws, "reversi-core")
    write_changelog(ws, "reversi-core", f"## {current} (unreleased)\n\n- Everything.\n")
    proc = release(ws, "core", current, "--date", "2026-12-02")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"reversi-core-v{current}\n"
    text = changelog(ws, "reversi-core").read_text()
    assert f"## {current} (2026-12-02)\n\n- Everything.\n" in text
    assert "unreleased" not in text
    # released now: the same version again is refused
    write_changelog(ws, "reversi-core", f"## Unreleased\n\n- More.\n\n## {current} (2026-12-02)\n")
    again = release(ws, "core", current)
    assert again.returncode == 2
    assert f"is not above its last release {current} (2026-12-02)" in again.stderr


def test_a_planned_version_in_the_heading_is_replaced_by_the_released_one(ws: Path) -> None:
    current = version(ws, "reversi-connector-fs")
    planned, chosen = bump(current, "minor"), bump(current, "major")
    set_version(ws, "reversi-connector-fs", planned)
    write_changelog(
        ws,
        "reversi-connector-fs",
        f"## {planned} (unreleased)\n\n- Breaking.\n\n## {current} (2026-01-05)\n\n- First.\n",
    )
    proc = release(ws, "fs", chosen, "--date", "2026-12-03")
    assert proc.returncode == 0, proc.stderr
    text = changelog(ws, "reversi-connector-fs").read_text()
    assert f"## {chosen} (2026-12-03)\n\n- Breaking.\n" in text
    assert planned not in text
    assert version(ws, "reversi-connector-fs") == chosen


def test_a_final_release_follows_its_release_candidate(released_fs: tuple[Path, str]) -> None:
    ws, current = released_fs
    new = bump(current, "minor")
    rc = release(ws, "fs", f"{new}rc1", "--date", "2026-12-01")
    assert rc.returncode == 0, rc.stderr
    assert rc.stdout == f"reversi-connector-fs-v{new}rc1\n"
    text = changelog(ws, "reversi-connector-fs").read_text()
    changelog(ws, "reversi-connector-fs").write_text(
        text.replace(f"## {new}rc1", f"## Unreleased\n\n- Fixed the rc.\n\n## {new}rc1")
    )
    final = release(ws, "fs", new, "--date", "2026-12-08")
    assert final.returncode == 0, final.stderr
    assert final.stdout == f"reversi-connector-fs-v{new}\n"
    assert check(ws).returncode == 0


def test_today_is_the_default_date(released_fs: tuple[Path, str]) -> None:
    ws, current = released_fs
    before = datetime.date.today()
    proc = release(ws, "fs", bump(current, "patch"))
    after = datetime.date.today()
    assert proc.returncode == 0, proc.stderr
    text = changelog(ws, "reversi-connector-fs").read_text()
    assert f"({before.isoformat()})" in text or f"({after.isoformat()})" in text


def test_a_core_minor_release_names_the_ranges_that_no_longer_admit_it(ws: Path) -> None:
    current = version(ws, "reversi-core")
    write_changelog(
        ws, "reversi-core", f"## Unreleased\n\n- New API.\n\n## {current} (2026-01-05)\n"
    )
    new = bump(current, "minor")
    proc = release(ws, "core", new, "--date", "2026-12-04")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"reversi-core-v{new}\n"
    note = proc.stderr[proc.stderr.index("note:") :]
    assert f"do not admit {new}" in note
    fs_range = re.search(
        r'"(reversi-core[^"]*)"', (ws / "packages/reversi-connector-fs/pyproject.toml").read_text()
    )
    assert fs_range
    assert f"reversi-connector-fs: {fs_range[1]}" in note
    assert "packages/_template: reversi-core" in note
    # and the consistency check now fails, naming them
    failed = check(ws)
    assert failed.returncode == 1
    assert (
        f"reversi-connector-fs: {fs_range[1]} does not admit the workspace's reversi-core {new}"
        in failed.stderr
    )


def test_a_core_patch_release_inside_the_ranges_names_none(ws: Path) -> None:
    current = version(ws, "reversi-core")
    write_changelog(ws, "reversi-core", f"## Unreleased\n\n- A fix.\n\n## {current} (2026-01-05)\n")
    proc = release(ws, "reversi-core", bump(current, "patch"), "--date", "2026-12-04")
    assert proc.returncode == 0, proc.stderr
    assert "note:" not in proc.stderr
    assert check(ws).returncode == 0


def test_a_generated_connector_is_released_under_its_own_tag(ws: Path) -> None:
    made = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "new_connector.py"),
            "widget",
            "--dest",
            str(ws / "packages"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    assert check(ws).returncode == 0
    current = version(ws, "reversi-connector-widget")
    proc = release(ws, "widget", current, "--date", "2026-12-05")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"reversi-connector-widget-v{current}\n"
    assert f"## {current} (2026-12-05)" in changelog(ws, "reversi-connector-widget").read_text()


# -- refusals: exit 2, one line, nothing touched -------------------------------------------


def refused(ws: Path, *args: str) -> str:
    before = snapshot(ws)
    proc = release(ws, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("release.py: error: ")
    assert snapshot(ws) == before
    return lines[0]


def test_an_unknown_package_is_refused(released_fs: tuple[Path, str]) -> None:
    ws, _ = released_fs
    line = refused(ws, "reversi-connector-postgress", "1.0.0")
    assert "unknown package 'reversi-connector-postgress'" in line
    assert "reversi-connector-fs" in line
    assert "reversi-core" in line
    assert "unknown package '_template'" in refused(ws, "_template", "1.0.0")


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("1.2", "expected MAJOR.MINOR.PATCH"),
        ("1.2.3.4", "expected MAJOR.MINOR.PATCH"),
        ("01.2.0", "without leading zeros"),
        ("v1.2.0", "write 1.2.0 (the tag gets its 'v' by itself)"),
        ("1.2.0-rc.1", "the PEP 440 way, such as 1.2.0rc1"),
        ("1.2.0+local", "no build metadata"),
        ("1.2.0.dev1", "expected MAJOR.MINOR.PATCH"),
        ("", "expected MAJOR.MINOR.PATCH"),
    ],
)
def test_a_malformed_version_is_refused(released_fs: tuple[Path, str], bad: str, says: str) -> None:
    ws, _ = released_fs
    line = refused(ws, "fs", bad)
    assert f"{bad!r} is not a release version" in line
    assert says in line


@pytest.mark.parametrize("part", ["same", "lower"])
def test_a_version_not_above_the_last_release_is_refused(
    released_fs: tuple[Path, str], part: str
) -> None:
    ws, current = released_fs
    if part == "same":
        target = current
    else:
        set_version(ws, "reversi-connector-fs", bump(current, "major"))
        write_changelog(
            ws,
            "reversi-connector-fs",
            f"## Unreleased\n\n- Next.\n\n## {bump(current, 'major')} (2026-02-01)\n\n- Big.\n",
        )
        target = bump(current, "minor")
    line = refused(ws, "fs", target)
    assert f"reversi-connector-fs {target} is not above its last release" in line


def test_a_version_below_the_current_one_is_refused(ws: Path) -> None:
    current = version(ws, "reversi-connector-fs")
    planned = bump(current, "major")
    set_version(ws, "reversi-connector-fs", planned)
    write_changelog(ws, "reversi-connector-fs", f"## {planned} (unreleased)\n\n- Next.\n")
    line = refused(ws, "fs", bump(current, "patch"))
    assert f"is below its current version {planned}" in line


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("## {v} (2026-01-05)\n\n- First.\n", "'## {v} (2026-01-05)' is already released"),
        ("## Unreleased\n\n## {v} (2026-01-05)\n\n- First.\n", "'## Unreleased' is empty"),
        ("## Unreleased\n   \n", "'## Unreleased' is empty"),
        ("Nothing here yet.\n", "no sections"),
    ],
)
def test_a_release_without_a_changelog_entry_is_refused(ws: Path, body: str, says: str) -> None:
    current = version(ws, "reversi-connector-fs")
    write_changelog(ws, "reversi-connector-fs", body.format(v=current))
    line = refused(ws, "fs", bump(current, "minor"))
    assert "no changelog entry for this release" in line
    assert says.format(v=current) in line
    assert (
        "add '## Unreleased' with the changes at the top of reversi-connector-fs/CHANGELOG.md"
        in line
    )


def test_a_missing_changelog_is_refused(ws: Path) -> None:
    changelog(ws, "reversi-connector-fs").unlink()
    line = refused(ws, "fs", bump(version(ws, "reversi-connector-fs"), "minor"))
    assert "reversi-connector-fs has no changelog" in line
