"""scripts/new_connector.py makes a package that builds, is certified and documented, alone."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "new_connector.py"
REPOSITORY = "https://github.com/reversi-dev/reversi"


def load_check_versions() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_versions", ROOT / "scripts" / "check_versions.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("kind", [[], ["--http"]], ids=["plain", "http"])
def test_creates_a_package_with_every_placeholder_filled(tmp_path: Path, kind: list[str]) -> None:
    proc = run_script("widget", "--dest", str(tmp_path), *kind)
    assert proc.returncode == 0, proc.stderr
    pkg = tmp_path / "reversi-connector-widget"
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "reversi-connector-widget"
    assert meta["project"]["entry-points"]["reversi.connectors"] == {
        "widget": "reversi_connector_widget:WidgetConnector"
    }
    assert meta["project"]["entry-points"]["reversi.certification"] == {
        "widget": "reversi_connector_widget.testing:certification_fixture"
    }
    assert any(d.startswith("reversi-core>=") and "<" in d for d in meta["project"]["dependencies"])
    for rel in (
        "CHANGELOG.md",
        "src/reversi_connector_widget/__about__.py",
        "src/reversi_connector_widget/py.typed",
        "tests/test_widget_connector.py",
        "tests/test_contract.py",
    ):
        assert (pkg / rel).is_file(), rel
    assert not (pkg / "http").exists()  # the variant overlays the package, it is not copied
    leftovers = [
        p
        for p in pkg.rglob("*")
        if "__connector__" in str(p)
        or (p.is_file() and p.name != "LICENSE" and re.search(r"__(connector|Connector|CONNECTOR)__", p.read_text()))
    ]
    assert leftovers == []
    connector = (pkg / "src" / "reversi_connector_widget" / "connector.py").read_text()
    assert ("HttpConnector" in connector) == bool(kind)
    if kind:
        assert 'Setting("WIDGET_TOKEN", "token"' in connector


def copy_checkout(target: Path) -> None:
    """The files of this checkout (tracked and new, not ignored) in ``target``, as a fresh clone."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target / rel)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=target, check=True, capture_output=True)


def overlay_venv(venv: Path) -> str:
    """A venv whose site-packages lie over this test run's, so that what is installed into it
    (the new connector) is seen with everything this run has, and this run's stays untouched.
    Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    ours = subprocess.run([sys.executable, "-c", purelib], capture_output=True, text=True, check=True)
    theirs = subprocess.run([python, "-c", purelib], capture_output=True, text=True, check=True)
    # a .pth line that starts with "import" is run: addsitedir also reads that folder's .pth files
    line = f"import site; site.addsitedir({ours.stdout.strip()!r})\n"
    (Path(theirs.stdout.strip()) / "zz_reversi_test_overlay.pth").write_text(line)
    return python


@pytest.mark.slow
def test_a_new_http_connector_is_certified_and_documented_with_no_other_file_edited(
    tmp_path: Path,
) -> None:
    """new_connector.py widget --http in a fresh copy: the package, its page, its README line
    and its certification row, and nothing else; then the suite certifies it (all thirteen
    checks pass), the docs drift test holds and its own tests pass."""
    repo = tmp_path / "repo"
    copy_checkout(repo)
    python = overlay_venv(tmp_path / "venv")
    made = subprocess.run(
        [python, str(repo / "scripts" / "new_connector.py"), "widget", "--http"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    changed = sorted(line[3:] for line in status)
    new_package = [c for c in changed if c.startswith("packages/reversi-connector-widget/")]
    assert new_package, changed
    assert sorted(set(changed) - set(new_package)) == [
        "README.md",
        "docs/certification.md",
        "docs/connectors/widget.md",
    ]
    for generated in ("README.md", "docs/certification.md"):
        diff = subprocess.run(
            ["git", "diff", "-U0", "--", generated], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.splitlines()
        body = [ln for ln in diff if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        assert body, generated
        assert all(ln.startswith("+") and "widget" in ln for ln in body), (generated, body)
    page = (repo / "docs" / "connectors" / "widget.md").read_text()
    assert "| `widget.create_note` | reversible | `widget:notes:write` | never |" in page
    rows = [ln for ln in (repo / "docs" / "certification.md").read_text().splitlines() if ln.startswith("| widget |")]
    assert len(rows) == 1
    assert "fail" not in rows[0]
    assert rows[0].count("| pass") == 12  # the template declares no requires: dependency block is n/a

    def pytest_in_copy(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        )

    certified = pytest_in_copy("certification", "--connector", "widget")
    assert certified.returncode == 0, certified.stdout[-3000:] + certified.stderr[-2000:]
    assert " passed" in certified.stdout
    for suite in ("tests/test_docs.py", "packages/reversi-connector-widget/tests"):
        proc = pytest_in_copy(suite)
        assert proc.returncode == 0, suite + proc.stdout[-3000:] + proc.stderr[-2000:]
    # `nox -s lint` runs `ruff check .` with the repository's configuration: the new package
    # passes it as generated (the template itself is excluded from ruff, so only this shows it)
    linted = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "packages/reversi-connector-widget"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert linted.returncode == 0, linted.stdout[-3000:] + linted.stderr[-2000:]


def test_the_new_package_ships_the_licence_and_names_its_urls(tmp_path: Path) -> None:
    """With no file edited after the script: LICENSE in the folder, in the wheel and in the
    sdist (and their metadata), and project URLs for this connector's docs, changelog, folder."""
    assert run_script("widget", "--dest", str(tmp_path)).returncode == 0
    pkg = tmp_path / "reversi-connector-widget"
    licence = (ROOT / "LICENSE").read_bytes()
    assert (pkg / "LICENSE").read_bytes() == licence
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0"
    assert meta["urls"] == {
        "Documentation": f"{REPOSITORY}/blob/main/docs/connectors/widget.md",
        "Changelog": f"{REPOSITORY}/blob/main/packages/reversi-connector-widget/CHANGELOG.md",
        "Source": f"{REPOSITORY}/tree/main/packages/reversi-connector-widget",
    }
    cv = load_check_versions()
    package = cv.load_package(pkg)
    version = package.version()
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-t", "sdist", "-d", str(dist)],
        cwd=pkg,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    stem = f"reversi_connector_widget-{version}"
    wheel_path, sdist_path = dist / f"{stem}-py3-none-any.whl", dist / f"{stem}.tar.gz"
    with zipfile.ZipFile(wheel_path) as wheel:
        assert wheel.read(f"{stem}.dist-info/licenses/LICENSE") == licence
    with tarfile.open(sdist_path) as sdist:
        shipped = sdist.extractfile(f"{stem}/LICENSE")
        assert shipped is not None
        assert shipped.read() == licence
    assert cv.license_problems(package, licence) == []
    assert cv.url_problems(package) == []
    assert cv.wheel_problems(package, version, wheel_path, licence) == []
    assert cv.sdist_problems(package, version, sdist_path, licence) == []


def test_refuses_bad_names_and_existing_folders(tmp_path: Path) -> None:
    for bad in ("GitHub", "my-conn", "core", "1abc", "a"):
        proc = run_script(bad, "--dest", str(tmp_path))
        assert proc.returncode == 2
        assert "not a connector token" in proc.stderr
    assert run_script("widget", "--dest", str(tmp_path)).returncode == 0
    again = run_script("widget", "--dest", str(tmp_path))
    assert again.returncode == 2
    assert "already exists" in again.stderr
