"""The layout rules of design/architecture.md and design/conventions.md, checked on the tree.

- core never imports a connector; a connector never imports another connector;
- the engine, journal, registry and manifest modules import neither cli nor mcp;
- no wheel imports the test-time ``certification`` or ``shared`` folders;
- every package has its own pyproject (hatchling), version file, CHANGELOG, py.typed,
  src/ layout and tests, and a connector depends on reversi-core by a range, never ``==``.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(
    p.parent for p in ROOT.glob("packages/*/pyproject.toml") if not p.parent.name.startswith("_")
)


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def sources(package: Path) -> list[Path]:
    return sorted((package / "src").rglob("*.py"))


def top(name: str) -> str:
    return name.split(".", 1)[0]


def test_packages_are_found() -> None:
    names = {p.name for p in PACKAGES}
    assert {"reversi-core", "reversi-connector-fs"} <= names


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_package_shape(package: Path) -> None:
    meta = tomllib.loads((package / "pyproject.toml").read_text())
    assert meta["build-system"]["build-backend"] == "hatchling.build"
    module = package.name.replace("-", "_")
    src = package / "src" / module
    assert (src / "__about__.py").is_file()
    assert (src / "py.typed").is_file()
    assert (package / "CHANGELOG.md").is_file()
    assert any((package / "tests").glob("test_*.py"))
    assert meta["tool"]["hatch"]["version"]["path"] == f"src/{module}/__about__.py"
    if package.name != "reversi-core":
        deps = meta["project"]["dependencies"]
        core = [d for d in deps if d.startswith("reversi-core")]
        assert core, deps
        assert "==" not in core[0], core
        assert "<" in core[0], core
        token = package.name.removeprefix("reversi-connector-")
        assert meta["project"]["entry-points"]["reversi.connectors"][token].startswith(f"{module}:")


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_no_forbidden_imports(package: Path) -> None:
    own = package.name.replace("-", "_")
    for path in sources(package):
        for name in imported_modules(path):
            root = top(name)
            assert root not in ("certification", "shared"), f"{path} imports {name}"
            if root.startswith("reversi_connector_"):
                assert root == own, f"{path} imports another connector: {name}"


def test_engine_knows_no_transport_or_terminal() -> None:
    core = ROOT / "packages" / "reversi-core" / "src" / "reversi_core"
    inner = [
        core / "engine.py",
        core / "registry.py",
        core / "manifest.py",
        *sorted((core / "journal").glob("*.py")),
    ]
    for path in inner:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                mod = node.module
                assert not mod.startswith(("cli", "mcp", "reversi_core.cli", "reversi_core.mcp")), (
                    path,
                    mod,
                )
                assert top(mod) not in ("rich", "mcp"), (path, mod)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert top(alias.name) not in ("rich", "mcp"), (path, alias.name)
