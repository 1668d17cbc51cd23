"""Every rule of the engine contract has a test, and every test's rule exists.

The rules are the requirement ids of docs/engine.md ("Requirement ids": ``**CALL-1**``
...). A test enforcing one carries ``@pytest.mark.req("CALL-1")`` (several ids allowed,
on a function or as a module's ``pytestmark``). The tags are read from the source of
every test module with :mod:`ast`, so a tag counts wherever the test lives.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_DIRS = [ROOT / "tests", ROOT / "certification", *sorted(ROOT.glob("packages/*/tests"))]
ID = re.compile(r"[A-Z]+-\d+")


def rules() -> set[str]:
    text = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    section = text.split("## Requirement ids", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- \*\*([A-Z]+-\d+)\*\*", section, flags=re.MULTILINE))


def _req_ids(node: ast.expr) -> list[str]:
    """The ids of a ``pytest.mark.req(...)`` call, or nothing."""
    if not isinstance(node, ast.Call):
        return []
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "req"):
        return []
    return [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]


def tags() -> dict[str, list[str]]:
    """``{id: ["path::test", ...]}`` for every tag in every test module."""
    found: dict[str, list[str]] = {}
    for folder in TEST_DIRS:
        for path in sorted(folder.rglob("test_*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            where = str(path.relative_to(ROOT))
            for node in ast.walk(tree):
                marks: list[ast.expr] = []
                name = where
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    marks = list(node.decorator_list)
                    name = f"{where}::{node.name}"
                elif isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
                ):
                    value = node.value
                    marks = list(value.elts) if isinstance(value, ast.List | ast.Tuple) else [value]
                for mark in marks:
                    for rid in _req_ids(mark):
                        found.setdefault(rid, []).append(name)
    return found


def test_the_engine_contract_has_rules() -> None:
    found = rules()
    assert {"CALL-1", "CALL-4", "RB-1", "JNL-1"} <= found
    assert all(ID.fullmatch(r) for r in found)


def test_every_rule_has_a_test() -> None:
    missing = sorted(rules() - set(tags()))
    assert not missing, f"rules of docs/engine.md that no test is tagged with: {missing}"


def test_every_tag_names_a_rule() -> None:
    unknown = {rid: where for rid, where in tags().items() if rid not in rules()}
    assert not unknown, f"tests tagged with ids docs/engine.md does not define: {unknown}"
