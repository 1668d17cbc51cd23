"""scripts/new_connector.py makes a package that builds, is declared and passes its tests."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "new_connector.py"


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


def test_refuses_bad_names_and_existing_folders(tmp_path: Path) -> None:
    for bad in ("GitHub", "my-conn", "core", "1abc", "a"):
        proc = run_script(bad, "--dest", str(tmp_path))
        assert proc.returncode == 2
        assert "not a connector token" in proc.stderr
    assert run_script("widget", "--dest", str(tmp_path)).returncode == 0
    again = run_script("widget", "--dest", str(tmp_path))
    assert again.returncode == 2
    assert "already exists" in again.stderr
