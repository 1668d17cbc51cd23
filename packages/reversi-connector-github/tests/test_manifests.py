"""The github manifests: the spec's table of effects, permissions and undo tools, and the inputs."""

from __future__ import annotations

from typing import Any

import pytest

from reversi_connector_github import GithubConnector
from reversi_core.errors import InvalidArgumentsError
from reversi_core.manifest import Effect, evaluate_argument_map

MANIFESTS = {m.name: m for m in GithubConnector.manifests()}

TABLE = {
    # tool: (effect, permission, compensation)
    "github.get_issue": (Effect.READ_ONLY, "github:issues:read", None),
    "github.create_issue": (Effect.REVERSIBLE, "github:issues:write", "github.close_issue"),
    "github.add_comment": (Effect.REVERSIBLE, "github:issues:write", "github.delete_comment"),
    "github.add_labels": (Effect.REVERSIBLE, "github:issues:write", "github.remove_labels"),
    "github.create_branch": (Effect.REVERSIBLE, "github:branch:write", "github.delete_branch"),
    "github.close_issue": (Effect.IDEMPOTENT, "github:issues:write", None),
    "github.delete_comment": (Effect.IDEMPOTENT, "github:issues:write", None),
    "github.remove_labels": (Effect.IDEMPOTENT, "github:issues:write", None),
    "github.delete_branch": (Effect.IDEMPOTENT, "github:branch:delete", None),
}


def at(**more: Any) -> dict[str, Any]:
    return {"owner": "octo", "repo": "hello", **more}


def test_the_tools_match_the_spec_table() -> None:
    assert sorted(MANIFESTS) == sorted(TABLE)
    for name, (effect, permission, undo) in TABLE.items():
        manifest = MANIFESTS[name]
        assert manifest.effect is effect, name
        assert manifest.permission == permission, name
        assert (manifest.compensation.tool if manifest.compensation else None) == undo, name
        assert manifest.approval.value == "never", name
        assert manifest.description, name


def test_the_variables_are_the_specs() -> None:
    # registry, entry point and closed schemas: the shared contract (test_contract.py)
    assert GithubConnector.credential_env == "GITHUB_TOKEN"
    assert GithubConnector.env_vars == ("GITHUB_TOKEN", "GITHUB_BASE_URL")


@pytest.mark.parametrize(
    ("tool", "args", "result", "expected"),
    [
        (
            "github.create_issue",
            at(title="t"),
            {"number": 7},
            at(issue_number=7),
        ),
        (
            "github.add_comment",
            at(issue_number=3, body="b"),
            {"id": 99, "body_sha256": "c" * 64},
            at(comment_id=99, body_sha256="c" * 64),
        ),
        (
            "github.add_labels",
            at(issue_number=3, labels=["a", "b"]),
            {"added": ["b"]},
            at(issue_number=3, labels=["b"]),
        ),
        (
            "github.create_branch",
            at(branch="x", sha="a" * 40),
            {"sha": "a" * 40},
            at(branch="x", sha="a" * 40),
        ),
    ],
)
def test_each_compensation_gets_exactly_the_arguments_it_takes(
    tool: str, args: dict[str, Any], result: dict[str, Any], expected: dict[str, Any]
) -> None:
    compensation = MANIFESTS[tool].compensation
    assert compensation is not None
    mapped = evaluate_argument_map(compensation, args, result)
    assert mapped == expected
    undo = GithubConnector.tool_specs()[compensation.tool].input
    assert undo.model_validate(mapped)  # every mapped argument is one the undo accepts


def test_comments_and_labels_require_the_issue_the_run_created() -> None:
    for name in ("github.add_comment", "github.add_labels"):
        (requirement,) = MANIFESTS[name].requires
        assert requirement.tool == "github.create_issue"
        pairs = {(m.this, m.earlier, m.relation) for m in requirement.match}
        assert pairs == {
            ("args.owner", "args.owner", "equals"),
            ("args.repo", "args.repo", "equals"),
            ("args.issue_number", "result.number", "equals"),
        }
    others = [n for n, m in MANIFESTS.items() if m.requires]
    assert sorted(others) == ["github.add_comment", "github.add_labels"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "args", "problem"),
    [
        ("github.get_issue", at(issue_number=0), "issue_number"),
        ("github.get_issue", {"owner": "octo/../x", "repo": "hello", "issue_number": 1}, "owner"),
        ("github.get_issue", {"owner": "octo", "repo": "a/b", "issue_number": 1}, "repo"),
        ("github.create_issue", at(title=""), "title"),
        ("github.create_issue", at(title="t", extra=1), "extra"),
        ("github.add_labels", at(issue_number=1, labels=[]), "labels"),
        ("github.create_branch", at(branch="x"), "exactly one"),
        ("github.create_branch", at(branch="x", sha="a" * 40, from_branch="main"), "exactly one"),
        ("github.create_branch", at(branch="x", sha="abc"), "sha"),
        ("github.create_branch", at(branch="refs/heads/x", sha="a" * 40), "refs/"),
        ("github.create_branch", at(branch="a..b", sha="a" * 40), ".."),
        ("github.create_branch", at(branch="a b", sha="a" * 40), "spaces"),
        ("github.create_branch", at(branch="x.lock", sha="a" * 40), ".lock"),
        ("github.create_branch", at(branch="a/.hidden", sha="a" * 40), "start with '.'"),
        ("github.delete_branch", at(branch="-x"), "'-'"),
        ("github.delete_comment", at(comment_id=-1), "comment_id"),
    ],
)
async def test_bad_arguments_are_refused_before_any_request(
    tool: str, args: dict[str, Any], problem: str
) -> None:
    # a base URL nothing listens on: any request would fail with a connect error instead
    github = GithubConnector("ghp_unused_token_123", base_url="http://127.0.0.1:9")
    with pytest.raises(InvalidArgumentsError, match=problem.replace(".", r"\.")):
        await github.call(tool, args)
    await github.aclose()


def test_branch_names_with_slashes_are_accepted() -> None:
    spec = GithubConnector.tool_specs()["github.create_branch"].input
    args = spec.model_validate(at(branch="agent/fix-42", from_branch="release/1.x"))
    assert args.model_dump()["branch"] == "agent/fix-42"
