"""scripts/new_connector.py makes a package that builds, is declared and passes its tests."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from types import ModuleType

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


def test_creates_a_working_package(tmp_path: Path) -> None:
    proc = run_script("widget", "--dest", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    pkg = tmp_path / "reversi-connector-widget"
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "reversi-connector-widget"
    assert meta["project"]["entry-points"]["reversi.connectors"] == {
        "widget": "reversi_connector_widget:WidgetConnector"
    }
    assert any(d.startswith("reversi-core>=") and "<" in d for d in meta["project"]["dependencies"])
    for rel in (
        "CHANGELOG.md",
        "LICENSE",
        "src/reversi_connector_widget/__about__.py",
        "src/reversi_connector_widget/py.typed",
        "tests/test_widget_connector.py",
    ):
        assert (pkg / rel).is_file(), rel
    leftovers = [
        p
        for p in pkg.rglob("*")
        if "__name__" in str(p) or (p.is_file() and "__Class__" in p.read_text())
    ]
    assert leftovers == []
    env = dict(os.environ, PYTHONPATH=str(pkg / "src"))
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(pkg / "tests")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout
    assert "failed" not in tests.stdout


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
