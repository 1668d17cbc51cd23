"""The layout rules of design/architecture.md and design/conventions.md, checked on the tree.

- every package has its own pyproject (hatchling), version file, CHANGELOG, py.typed,
  src/ layout and tests, and a connector depends on reversi-core by a range, never ``==``;
- the import rules, checked on the import graph of every package's ``src/`` (see
  :func:`import_violations`): core never imports a connector; a connector never imports
  another; no wheel imports the test-time ``certification`` or ``shared`` folders; and
  nothing reachable from core's engine, journal, registry or manifest modules is in
  ``cli`` or ``mcp`` or imports ``rich`` or the MCP SDK. Each rule has a test that feeds
  the checker a small tree breaking it, so that a rule cannot stop working unnoticed.
"""

from __future__ import annotations

import ast
import tomllib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(
    p.parent for p in ROOT.glob("packages/*/pyproject.toml") if not p.parent.name.startswith("_")
)


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


# -- the import rules ----------------------------------------------------------------------
#
# Written over globs, not today's file list: a module split into a package (engine/,
# mcp/gateway/...) or a new connector is checked the day it appears.

CORE = "reversi_core"
CONNECTOR_PREFIX = "reversi_connector_"
INNER = ("engine", "journal", "registry", "manifest")
"""Core's modules (or packages) that know no transport and no terminal."""
OUTER = ("cli", "mcp")
"""Core's packages for the terminal and for MCP."""
TERMINAL_OR_TRANSPORT = ("rich", "mcp", "mcp_types")
"""Libraries that nothing reachable from the inner modules may import (mcp_types is the SDK's)."""
TEST_ONLY = ("certification", "shared")


@dataclass(frozen=True)
class Arrow:
    """One import: ``source`` imports ``target`` (a dotted name, relative imports resolved)."""

    source: str
    target: str
    where: str  # "path:line"
    text: str  # the statement as written


@dataclass
class ImportGraph:
    """Every module under ``packages/*/src/`` and its imports."""

    modules: dict[str, Path] = field(default_factory=dict)
    arrows: dict[str, list[Arrow]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def edges(self, module: str) -> Iterator[tuple[str, Arrow | None]]:
        """The workspace modules that importing ``module`` runs, with the import that does.

        Its parent packages first (Python runs ``a/__init__.py`` before ``a.b``), then
        each module an import names and that module's parent packages.
        """
        yield from ((parent, None) for parent in self.parents(module))
        for arrow in self.arrows.get(module, []):
            for name in [*self.parents(arrow.target), arrow.target]:
                if name in self.modules and name != module:
                    yield name, arrow

    def parents(self, module: str) -> list[str]:
        parts = module.split(".")
        return [p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in self.modules]


def module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def scan(root: Path) -> ImportGraph:
    """The import graph of every ``packages/*/src/**/*.py`` under ``root`` (the template too).

    Every import statement counts, wherever it is (inside a function, under
    ``TYPE_CHECKING`` or ``try``): each is an arrow in the design. ``from X import a``
    is an arrow to ``X`` and, when ``X.a`` is a module of the workspace, to ``X.a``. A
    relative import is resolved against the importing module's package; one that climbs
    above its top-level package is reported as a problem. Dynamic imports
    (``importlib.import_module``, entry points) are not seen.
    """
    graph = ImportGraph()
    for src in sorted(root.glob("packages/*/src")):
        for path in sorted(src.rglob("*.py")):
            graph.modules[module_name(src, path)] = path
    for name, path in graph.modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        arrows: list[Arrow] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                text = ast.unparse(node)
                arrows += [Arrow(name, alias.name, where, text) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                text = ast.unparse(node)
                base = node.module or ""
                if node.level:
                    up = package.split(".") if package else []
                    if node.level - 1 >= len(up):
                        graph.problems.append(
                            f"{where}: `{text}` climbs above the top-level package {up[0] if up else name!r}"
                            " (a relative import may not reach another package)"
                        )
                        continue
                    anchor = ".".join(up[: len(up) - (node.level - 1)])
                    base = f"{anchor}.{base}" if base else anchor
                arrows.append(Arrow(name, base, where, text))
                for alias in node.names:
                    if f"{base}.{alias.name}" in graph.modules:
                        arrows.append(Arrow(name, f"{base}.{alias.name}", where, text))
        graph.arrows[name] = arrows
    return graph


def _inside(module: str, package: str, subpackages: tuple[str, ...]) -> bool:
    """``module`` is ``package.<one of subpackages>`` or inside one."""
    parts = module.split(".")
    return len(parts) > 1 and parts[0] == package and parts[1] in subpackages


def import_violations(root: Path) -> list[str]:
    """Every breach of the import rules under ``root`` (see the module docstring), one line each."""
    graph = scan(root)
    out = list(graph.problems)
    for module, arrows in sorted(graph.arrows.items()):
        own = module.split(".")[0]
        for arrow in arrows:
            target = arrow.target.split(".")[0]
            said = f"{arrow.where}: `{arrow.text}`"
            if target in TEST_ONLY:
                out.append(f"{said}: {module} imports the test-time {target}/ folder")
            if own == CORE and target.startswith(CONNECTOR_PREFIX):
                out.append(f"{said}: core imports a connector ({target})")
            connectors = own.startswith(CONNECTOR_PREFIX) and target.startswith(CONNECTOR_PREFIX)
            if connectors and target != own:
                out.append(f"{said}: {own} imports another connector ({target})")
    # nothing reachable from an inner module is in cli/ or mcp/, or imports rich or the SDK:
    # each import that crosses the line is reported once, from the inner module nearest it
    crossings: dict[tuple[str, str], tuple[tuple[int, int], str]] = {}
    for start in sorted(m for m in graph.modules if _inside(m, CORE, INNER)):
        came_from: dict[str, tuple[str, Arrow | None]] = {}
        depth = {start: 0}
        queue = deque([start])
        while queue:
            module = queue.popleft()
            for arrow in graph.arrows.get(module, []):
                library = arrow.target.split(".")[0]
                if library in TERMINAL_OR_TRANSPORT:
                    chain = _chain(start, module, came_from)
                    line = f"{arrow.where}: `{arrow.text}`: {start} reaches {library} ({chain})"
                    _keep(crossings, (arrow.where, library), (depth[module] + 1, 0), line)
            for nxt, arrow in graph.edges(module):
                if nxt in depth:
                    continue
                depth[nxt] = depth[module] + 1
                came_from[nxt] = (module, arrow)
                if _inside(nxt, CORE, OUTER):  # reported here, not followed further
                    line = f"{_chain(start, nxt, came_from)}: {start} reaches {nxt}"
                    # one line per statement, naming the deepest module it reaches
                    rank = (depth[nxt], -len(nxt))
                    _keep(crossings, (arrow.where if arrow else module, "outer"), rank, line)
                else:
                    queue.append(nxt)
    return out + [line for _, line in sorted(crossings.values(), key=lambda v: v[1])]


def _keep(
    found: dict[tuple[str, str], tuple[tuple[int, int], str]],
    key: tuple[str, str],
    rank: tuple[int, int],
    line: str,
) -> None:
    """Record ``line`` for ``key`` unless a better one (lower ``rank``: a shorter chain) is there."""
    if key not in found or rank < found[key][0]:
        found[key] = (rank, line)


def _chain(start: str, end: str, came_from: dict[str, tuple[str, Arrow | None]]) -> str:
    """``start -> ... -> end``, with the statement of the last import (or its package)."""
    names = [end]
    while names[-1] != start:
        names.append(came_from[names[-1]][0])
    path = " -> ".join(reversed(names))
    if end == start:
        return path
    arrow = came_from[end][1]
    how = (
        f"{arrow.where} `{arrow.text}`" if arrow else f"{end} is the package of {came_from[end][0]}"
    )
    return f"{path} [{how}]"


def test_the_tree_keeps_the_import_rules() -> None:
    assert import_violations(ROOT) == []


def test_the_checker_sees_every_package_and_resolves_relative_imports() -> None:
    graph = scan(ROOT)
    tops = {name.split(".")[0] for name in graph.modules}
    assert {CORE, "reversi_connector_fs", "reversi_connector_github"} <= tops
    assert {m.split(".")[1] for m in graph.modules if _inside(m, CORE, (*INNER, *OUTER))} == {
        *INNER,
        *OUTER,
    }
    # journal/sqlite.py says `from ..errors import ...`: resolved to the module
    assert "reversi_core.errors" in {a.target for a in graph.arrows["reversi_core.journal.sqlite"]}


# -- each rule, on a small tree that breaks it -----------------------------------------------

CORE_SRC = "reversi-core/reversi_core"
A_SRC = "reversi-connector-a/reversi_connector_a"

CLEAN: dict[str, str] = {
    f"{CORE_SRC}/__init__.py": "from .engine import Run\n",
    f"{CORE_SRC}/engine.py": "from .errors import E\nfrom . import registry\n",
    f"{CORE_SRC}/errors.py": "",
    f"{CORE_SRC}/helper.py": "import json\n",
    f"{CORE_SRC}/registry.py": "import jsonschema\nfrom .manifest import M\n",
    f"{CORE_SRC}/manifest.py": "from pydantic import BaseModel\n",
    f"{CORE_SRC}/journal/__init__.py": "from .sqlite import J\n",
    f"{CORE_SRC}/journal/sqlite.py": "from ..errors import E\n",
    f"{CORE_SRC}/cli/__init__.py": "",
    f"{CORE_SRC}/cli/main.py": "import rich\nfrom ..engine import Run\nfrom ..mcp import serve\n",
    f"{CORE_SRC}/mcp/__init__.py": "",
    f"{CORE_SRC}/mcp/serve.py": "import mcp_types\nfrom mcp.server import Server\nfrom .. import engine\n",
    f"{A_SRC}/__init__.py": "from reversi_core import engine\nfrom .tools import T\n",
    f"{A_SRC}/tools.py": "from reversi_core.errors import E\nfrom . import __about__\n",
    f"{A_SRC}/__about__.py": "",
    "reversi-connector-b/reversi_connector_b/__init__.py": "import reversi_core.connector\n",
}
"""A tree that keeps every rule (cli and mcp may use the engine, rich and the SDK)."""


def tree(tmp_path: Path, changes: dict[str, str | None]) -> Path:
    """CLEAN with ``changes`` (``None`` deletes a file), written as ``packages/<dist>/src/...``."""
    for short, text in {**CLEAN, **changes}.items():
        if text is None:
            continue
        dist, rest = short.split("/", 1)
        path = tmp_path / "packages" / dist / "src" / rest
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_clean_tree_keeps_the_rules(tmp_path: Path) -> None:
    assert import_violations(tree(tmp_path, {})) == []


BREACHES = {
    "relative-from-dot": (
        {f"{CORE_SRC}/engine.py": "from . import cli\n"},
        "reversi_core.engine reaches reversi_core.cli",
    ),
    "relative-two-dots": (
        {f"{CORE_SRC}/journal/sqlite.py": "from ..mcp import serve\n"},
        "reversi_core.journal.sqlite reaches reversi_core.mcp.serve",
    ),
    "absolute-submodule": (
        {f"{CORE_SRC}/registry.py": "import reversi_core.mcp.serve\n"},
        "reversi_core.registry reaches reversi_core.mcp.serve",
    ),
    "absolute-package": (
        {f"{CORE_SRC}/manifest.py": "import reversi_core.cli\n"},
        "reversi_core.manifest reaches reversi_core.cli",
    ),
    "from-core-import-package": (
        {f"{CORE_SRC}/engine.py": "from reversi_core import mcp\n"},
        "reversi_core.engine reaches reversi_core.mcp",
    ),
    "lazy-import-in-a-function": (
        {f"{CORE_SRC}/registry.py": "def main():\n    from .cli import main\n"},
        "reversi_core.registry reaches reversi_core.cli.main",
    ),
    "transitive": (
        {
            f"{CORE_SRC}/engine.py": "from . import helper\n",
            f"{CORE_SRC}/helper.py": "from .mcp.serve import x\n",
        },
        "reversi_core.engine -> reversi_core.helper -> reversi_core.mcp.serve",
    ),
    "transitive-library": (
        {
            f"{CORE_SRC}/engine.py": "from .helper import h\n",
            f"{CORE_SRC}/helper.py": "import rich.console\n",
        },
        "reversi_core.engine reaches rich (reversi_core.engine -> reversi_core.helper",
    ),
    "direct-sdk": (
        {f"{CORE_SRC}/journal/__init__.py": "import mcp_types\n"},
        "reversi_core.journal reaches mcp_types",
    ),
    "through-the-parent-package": (
        {f"{CORE_SRC}/__init__.py": "from .mcp import serve\n"},
        "reversi_core.engine -> reversi_core -> reversi_core.mcp",
    ),
    "engine-split-into-a-package": (
        {
            f"{CORE_SRC}/engine.py": None,
            f"{CORE_SRC}/engine/__init__.py": "from ._run import Run\n",
            f"{CORE_SRC}/engine/_run.py": "from ..mcp import serve\n",
        },
        "reversi_core.engine._run reaches reversi_core.mcp.serve",
    ),
    "relative-beyond-the-top": (
        {f"{CORE_SRC}/mcp/serve.py": "from ... import reversi_connector_a\n"},
        "climbs above the top-level package 'reversi_core'",
    ),
    "core-imports-a-connector": (
        {f"{CORE_SRC}/helper.py": "import reversi_connector_a.tools\n"},
        "core imports a connector (reversi_connector_a)",
    ),
    "core-imports-an-uninstalled-connector": (
        {f"{CORE_SRC}/cli/main.py": "from reversi_connector_slack import SlackConnector\n"},
        "core imports a connector (reversi_connector_slack)",
    ),
    "connector-imports-another": (
        {f"{A_SRC}/tools.py": "from reversi_connector_b import B\n"},
        "reversi_connector_a imports another connector (reversi_connector_b)",
    ),
    "wheel-imports-the-suite": (
        {
            "reversi-connector-b/reversi_connector_b/__init__.py": "from certification import runner\n"
        },
        "reversi_connector_b imports the test-time certification/ folder",
    ),
}


@pytest.mark.parametrize(("changes", "words"), BREACHES.values(), ids=BREACHES.keys())
def test_each_rule_catches_its_breach(
    tmp_path: Path, changes: dict[str, str | None], words: str
) -> None:
    found = import_violations(tree(tmp_path, changes))
    assert len(found) == 1, found  # one line per breaching statement
    assert words in found[0], found
