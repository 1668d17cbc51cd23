"""The generated parts of the docs match the connectors' declarations (scripts/docs.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reversi_docs_script", ROOT / "scripts" / "docs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


docs = load_docs()


def test_every_generated_page_matches_its_connector() -> None:
    changed = docs.differences()
    assert changed == {}, "".join(changed.values()) + "\nrun: python scripts/docs.py --write"


def test_every_connector_has_a_page_and_a_line_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for pkg in docs.packages():
        assert pkg.page.is_file(), pkg.page
        assert f"[`{pkg.name}`](docs/connectors/{pkg.name}.md)" in readme


def test_the_tools_block_follows_the_manifests(monkeypatch: pytest.MonkeyPatch) -> None:
    (github,) = [p for p in docs.packages() if p.name == "github"]
    table = docs.tools(github)
    assert (
        "| `github.add_comment` | reversible | `github:issues:write` | never | `github.delete_comment` "
        "with `{owner: args.owner, repo: args.repo, comment_id: result.id, "
        "body_sha256: result.body_sha256}` |"
    ) in table
    page = github.page.read_text(encoding="utf-8")
    original = github.cls.manifests

    def renamed() -> list[object]:
        return [m.model_copy(update={"permission": "github:changed"}) for m in original()]

    monkeypatch.setattr(github.cls, "manifests", renamed)
    assert docs.render_page(github, page) != page  # a changed declaration makes the page stale
    assert "`github:changed`" in docs.render_page(github, page)


def test_prose_outside_the_blocks_is_kept() -> None:
    (fs,) = [p for p in docs.packages() if p.name == "fs"]
    page = fs.page.read_text(encoding="utf-8")
    edited = page.replace("## Path rules", "## Path rules\n\nA sentence the author added.")
    assert "A sentence the author added." in docs.render_page(fs, edited)


def test_a_connector_without_a_page_gets_one_with_every_block() -> None:
    (github,) = [p for p in docs.packages() if p.name == "github"]
    page = docs.render_page(github, None)
    for kind in ("configuration", "tools", "edges"):
        assert f"<!-- generated:{kind}" in page
        assert f"<!-- end generated:{kind} -->" in page
    assert "### `github.delete_branch`" in page
    assert "https://docs.github.com/en/rest/git/refs#delete-a-reference" in page
    assert docs.render_page(github, page) == page  # rendering it again changes nothing
