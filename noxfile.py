"""Workspace sessions. Packages are discovered from packages/*/pyproject.toml.

Adding a connector never edits this file: `scripts/new_connector.py NAME` creates
packages/reversi-connector-NAME/ and every session below picks it up.

    nox -s tests          every package's tests, the demo test and the certification suite
                          (over every core: pytest-xdist; -- -n 0 for one process)
    nox -s certify        the certification matrix for every connector in packages/
    nox -s certify -- github          ... for one connector (only it and core installed)
    nox -s certify -- --write         ... and regenerate docs/certification.md first
    nox -s docs           regenerate the docs the connectors' declarations say (pages, README
                          list, docs/certification.md); nox -s docs -- NAME: NAME's lines only
    nox -s demo           the README's demo: an agent's run and its rollback
    nox -s lint           ruff and mypy (strict, every package)
    nox -s "package(name='fs')"   one package's own tests in its own environment
    nox -s build          one wheel and one sdist per package into dist/, checked
    nox -s install_only   per connector: a fresh venv with only it (and core) from dist/,
                          then manifests, serve, compensate there (docs/releasing.md)
    nox -s live -- NAME   NAME's live scenario against the real vendor, recorded with vcrpy
                          into its tests/cassettes (needs its credentials; not run by default
                          nor by .ci/run; docs/development.md)
"""

from __future__ import annotations

import os
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
# The maintained MCP Inspector (tests/test_inspector_cli.py, its --cli mode), the MCP
# conformance suite (tests/test_conformance.py) and the Node both need (22; the machine may
# have an older one): npm installs Node itself as a package. The Inspector is pinned to 2.x:
# an npm running on an older Node would otherwise pick the last release that allowed it.
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector@2.12"
CONFORMANCE_PACKAGES = ["node@22", "@modelcontextprotocol/conformance@0.1.16"]
PYPROJECT = nox.project.load_toml(str(ROOT / "pyproject.toml"))


def npm_test_tools(names: list[str] | None = None) -> list[str]:
    """The npm packages the chosen packages' tests need (default: every package's).

    A package declares them in its own pyproject.toml, as npm install arguments::

        [tool.reversi]
        npm-test-tools = ["azurite@3.35"]

    They are installed into .ci/node, whose node_modules/.bin the tests find in
    ``REVERSI_NODE_BIN``.
    """
    tools: list[str] = []
    for name in names or list(PACKAGES):
        meta = tomllib.loads((PACKAGES[name] / "pyproject.toml").read_text())
        for tool in meta.get("tool", {}).get("reversi", {}).get("npm-test-tools", []):
            if tool not in tools:
                tools.append(tool)
    return tools


def install_npm_test_tools(
    session: nox.Session, extra: list[str], names: list[str] | None = None
) -> None:
    """npm install ``extra`` and the packages' declared test tools into .ci/node; export its bin."""
    wanted = [*extra, *npm_test_tools(names)]
    if not wanted:
        return
    session.run(
        "npm",
        "install",
        "--silent",
        "--no-audit",
        "--no-fund",
        "--prefix",
        str(NODE_DIR),
        *wanted,
        external=True,
    )
    session.env["REVERSI_NODE_BIN"] = str(NODE_DIR / "node_modules" / ".bin")


def install_workspace(session: nox.Session, names: list[str] | None = None) -> None:
    """Install core first (with its ``postgresql`` extra), then the chosen packages
    (default: all), editable."""
    chosen = names or list(PACKAGES)
    ordered = ["core", *[n for n in chosen if n != "core"]]
    args: list[str] = []
    for name in ordered:
        # core with its postgresql extra (psycopg): its journal tests run on PostgreSQL too
        args += ["-e", f"{PACKAGES[name]}[postgresql]" if name == "core" else str(PACKAGES[name])]
    session.install(*args)


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """Run every package's tests, the scripts' tests and the certification suite."""
    install_workspace(session)
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    install_browser(session)
    # A real outside MCP client for tests/test_inspector_cli.py, the conformance suite for
    # tests/test_conformance.py, and the npm tools the packages' tests declare (their
    # [tool.reversi] npm-test-tools), from the npm registry.
    install_npm_test_tools(session, [INSPECTOR_PACKAGE, *CONFORMANCE_PACKAGES])
    session.env["REVERSI_INSPECTOR"] = str(NODE_DIR / "node_modules" / ".bin" / "mcp-inspector")
    # One worker per core (pytest-xdist), each test file whole on one worker (--dist
    # loadfile): a module's fixtures, a started emulator and the certification matrix's
    # shared outcomes stay in one process. `nox -s tests -- -n 0 ...` runs in one process.
    session.run("python", "-m", "pytest", "-n", "auto", "--dist", "loadfile", *session.posargs)


BROWSER = ("/usr/bin/chromium", "/usr/bin/chromedriver")


def install_browser(session: nox.Session) -> None:
    """Debian's chromium and chromium-driver for the console's browser tests, when missing.

    Idempotent and quiet; the tests fail (never skip) without them, saying what to install.
    """
    if all(os.access(p, os.X_OK) for p in BROWSER):
        return
    if os.geteuid() != 0:
        session.warn("chromium/chromium-driver missing and not root: the browser tests will fail")
        return
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-qq", external=True, env=env, silent=True)
    session.run(
        "apt-get",
        "install",
        "-y",
        "-qq",
        "chromium",
        "chromium-driver",
        external=True,
        env=env,
        silent=True,
    )


@nox.session(python="3.11")
@nox.parametrize("name", list(PACKAGES))
def package(session: nox.Session, name: str) -> None:
    """Run one package's own tests with only that package (and core) installed."""
    install_workspace(session, [name])
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    install_npm_test_tools(session, [], [name])
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
def docs(session: nox.Session) -> None:
    """Regenerate what the connectors' declarations say: their pages, the README's list of
    connectors (scripts/docs.py) and docs/certification.md (certification/report.py).

    Positional arguments name connectors whose certification lines alone are rewritten
    (``nox -s docs -- widget``, as scripts/new_connector.py does); without them the whole
    matrix runs.
    """
    install_workspace(session)
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    session.run("python", "scripts/docs.py", "--write")
    chosen = [f"--connector={n}" for n in session.posargs]
    session.run("python", "certification/report.py", "--write", *chosen)


@nox.session(python="3.11")
def demo(session: nox.Session) -> None:
    """The README's demo: an agent's scripted run on a temporary tree, then its rollback."""
    install_workspace(session, ["fs"])
    session.run("python", "scripts/demo.py", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff over the workspace; mypy, strict, on every package's source."""
    install_workspace(session)
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    sources = sorted(
        str(p.relative_to(ROOT)) for f in PACKAGES.values() for p in (f / "src").glob("reversi_*")
    )
    # every package's src/ on mypy's path, found the way the packages are (no list to keep)
    mypy_path = ":".join(str((f / "src").relative_to(ROOT)) for f in PACKAGES.values())
    session.run("mypy", *sources, env={"MYPYPATH": mypy_path})


@nox.session(python="3.11", default=False)
def live(session: nox.Session) -> None:
    """One connector's live scenario against its real vendor, recorded (scripts/live.py).

    ``nox -s live -- github`` needs github's variables in the environment (GITHUB_TOKEN,
    REVERSI_LIVE_GITHUB_REPO); without them it names them and fails. Options after the
    name go to scripts/live.py: ``--no-record``, ``--test-backend`` (against the fake),
    ``--cassettes DIR``, ``--data DIR``. Only the connector and core are installed, with
    vcrpy. Never part of the README's test command: it is for maintainers who hold
    credentials for a throwaway account.
    """
    names = [a for a in session.posargs if not a.startswith("-")]
    options = [a for a in session.posargs if a.startswith("-")]
    connectors = ", ".join(n for n in PACKAGES if n != "core")
    if len(names) != 1 or names[0] not in PACKAGES or names[0] == "core":
        session.error(f"name one connector: nox -s live -- NAME (have: {connectors})")
    install_workspace(session, names)
    session.install(*nox.project.dependency_groups(PYPROJECT, "live"))
    session.run("python", "scripts/live.py", names[0], *options)


# -- wheels and clean installs (docs/releasing.md) ---------------------------------------

DIST = ROOT / "dist"
CONNECTORS = [name for name in PACKAGES if name != "core"]


def built_wheel(folder: Path) -> tuple[str, str, Path]:
    """``(distribution, version, wheel path in dist/)`` of the package in ``folder``."""
    import re

    meta = tomllib.loads((folder / "pyproject.toml").read_text())
    dist = meta["project"]["name"]
    about = (folder / meta["tool"]["hatch"]["version"]["path"]).read_text()
    found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", about, re.MULTILINE)
    version = found[1] if found else "?"
    return dist, version, DIST / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"


def third_party_requirements(wheel: Path) -> list[str]:
    """The wheel's Requires-Dist lines that are not reversi-* distributions."""
    import email.parser
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(name).decode())
    return [r for r in metadata.get_all("Requires-Dist") or [] if not r.startswith("reversi")]


@nox.session(python="3.11")
def build(session: nox.Session) -> None:
    """One wheel and one sdist per package into dist/ with hatch, then check them.

    Old reversi artifacts in dist/ are removed first; scripts/check_versions.py --dist
    then checks that each artifact matches its sources (version, metadata, contents).
    """
    session.install("hatch>=1.12", "packaging>=24")
    DIST.mkdir(exist_ok=True)
    for old in sorted(DIST.glob("reversi[-_]*")):
        old.unlink()
    for folder in PACKAGES.values():
        with session.chdir(folder):
            session.run("hatch", "build", "-t", "wheel", "-t", "sdist", str(DIST))
    session.run("python", "scripts/check_versions.py", "--dist", str(DIST))


@nox.session(python="3.11", requires=["build"])
@nox.parametrize("connector", CONNECTORS)
def install_only(session: nox.Session, connector: str) -> None:
    """A fresh venv with only reversi-connector-NAME (and reversi-core) from dist/; prove it works.

    Third-party requirements come from PyPI; every reversi-* distribution comes from the
    wheels just built (pip --no-index). scripts/clean_install_check.py then runs inside
    that venv: manifests, a real MCP handshake with serve, compensate, and no other
    connector importable. A test backend for a connector with credentials is given as
    REVERSI_TEST_<VARIABLE> (REVERSI_TEST_POSTGRES_URL); without it, the probe proves the
    connector fails cleanly.
    """
    import shutil

    dist, version, wheel = built_wheel(PACKAGES[connector])
    _, _, core_wheel = built_wheel(PACKAGES["core"])
    missing = [w.name for w in (wheel, core_wheel) if not w.is_file()]
    if missing:
        session.error(f"not built: {', '.join(missing)} (run: nox -s build)")
    venv = Path(session.create_tmp()).resolve() / f"clean-{connector}"
    shutil.rmtree(venv, ignore_errors=True)
    session.run("python", "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "--disable-pip-version-check", "install", "--quiet"]
    requirements = sorted({*third_party_requirements(wheel), *third_party_requirements(core_wheel)})
    session.run(*pip, *requirements, external=True)
    session.run(*pip, "--no-index", "--find-links", str(DIST), f"{dist}=={version}", external=True)
    session.run(python, "-m", "pip", "check", external=True)
    others = ",".join(n for n in CONNECTORS if n != connector)
    with session.chdir(venv):  # nothing of the source tree on the path
        session.run(
            python,
            str(ROOT / "scripts" / "clean_install_check.py"),
            connector,
            f"--others={others}",
            f"--wheels={DIST}",
            external=True,
            env={"PYTHONPATH": None, "PYTHONHOME": None},
        )
