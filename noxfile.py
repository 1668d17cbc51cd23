"""Workspace sessions. Packages are discovered from packages/*/pyproject.toml.

Adding a connector never edits this file: `scripts/new_connector.py NAME` creates
packages/reversi-connector-NAME/ and every session below picks it up.

    nox -s tests          every package's tests, the demo test and the certification suite
    nox -s certify        the certification matrix for every connector in packages/
    nox -s certify -- github          ... for one connector (only it and core installed)
    nox -s certify -- --write         ... and regenerate docs/certification.md first
    nox -s demo           the README's demo: an agent's run and its rollback
    nox -s lint           ruff and mypy (strict on reversi-core)
    nox -s "package(name='fs')"   one package's own tests in its own environment
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True


def discover_packages() -> dict[str, Path]:
    """``{short name: package dir}`` for every packages/*/pyproject.toml except templates."""
    found: dict[str, Path] = {}
    for pyproject in sorted(ROOT.glob("packages/*/pyproject.toml")):
        folder = pyproject.parent
        if folder.name.startswith("_"):
            continue
        dist = tomllib.loads(pyproject.read_text())["project"]["name"]
        short = dist.removeprefix("reversi-connector-").removeprefix("reversi-")
        found[short] = folder
    return found


PACKAGES = discover_packages()
NODE_DIR = ROOT / ".ci" / "node"
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector-cli@1"
PYPROJECT = nox.project.load_toml(str(ROOT / "pyproject.toml"))


def install_workspace(session: nox.Session, names: list[str] | None = None) -> None:
    """Install core first, then the chosen packages (default: all), editable."""
    chosen = names or list(PACKAGES)
    ordered = ["core", *[n for n in chosen if n != "core"]]
    args: list[str] = []
    for name in ordered:
        args += ["-e", str(PACKAGES[name])]
    session.install(*args)


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """Run every package's tests, the scripts' tests and the certification suite."""
    install_workspace(session)
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    # A real outside MCP client for tests/test_inspector_cli.py, from the npm registry.
    session.run(
        "npm",
        "install",
        "--silent",
        "--no-audit",
        "--no-fund",
        "--prefix",
        str(NODE_DIR),
        INSPECTOR_PACKAGE,
        external=True,
    )
    session.env["REVERSI_INSPECTOR_CLI"] = str(
        NODE_DIR / "node_modules" / ".bin" / "mcp-inspector-cli"
    )
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(python="3.11")
@nox.parametrize("name", list(PACKAGES))
def package(session: nox.Session, name: str) -> None:
    """Run one package's own tests with only that package (and core) installed."""
    install_workspace(session, [name])
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    session.run("python", "-m", "pytest", str(PACKAGES[name] / "tests"), *session.posargs)


@nox.session(python="3.11")
def certify(session: nox.Session) -> None:
    """The certification matrix (certification/) for every connector, or for those named.

    Positional arguments name connectors (``nox -s certify -- github``); ``--write``
    regenerates docs/certification.md first (whole matrix only); other options go to pytest.
    The results table of the run is printed at the end.
    """
    names = [a for a in session.posargs if not a.startswith("-")]
    options = [a for a in session.posargs if a.startswith("-") and a != "--write"]
    write = "--write" in session.posargs
    unknown = [n for n in names if n not in PACKAGES or n == "core"]
    if unknown:
        connectors = ", ".join(n for n in PACKAGES if n != "core")
        session.error(f"not a connector in packages/: {', '.join(unknown)} (have: {connectors})")
    if write and names:
        session.error("--write regenerates the whole table; run it without connector names")
    install_workspace(session, names or None)
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    chosen = [f"--connector={n}" for n in names]
    if write:
        session.run("python", "certification/report.py", "--write")
    session.run("python", "-m", "pytest", "certification", *chosen, *options)
    session.run("python", "certification/report.py", "--from-results", "--summary", *chosen)


@nox.session(python="3.11")
def demo(session: nox.Session) -> None:
    """The README's demo: an agent's scripted run on a temporary tree, then its rollback."""
    install_workspace(session, ["fs"])
    session.run("python", "scripts/demo.py", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff over the workspace; mypy, strict on reversi-core."""
    install_workspace(session)
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    session.run("mypy", "packages/reversi-core/src/reversi_core")
