"""Resource templates (docs/engine.md, "Rollback in parallel"): checked at load, rendered and
journaled with the compensation (DEP-2), and the order they give a rollback (RB-12)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from _stackconnector import StackBackend, StackConnector

from reversi_core import (
    Compensation,
    EffectUncertainError,
    ManifestError,
    Registry,
    Run,
    SQLiteJournal,
    StepRecord,
    StepState,
    executor_for,
    registry_for,
)
from reversi_core._resources import (
    MAX_RESOURCES,
    conflicts,
    journaled_resources,
    overlap,
    render_resources,
    template_sources,
)
from reversi_core._schedule import waits_for

pytestmark = pytest.mark.anyio


PATH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path"],
}


def manifests(*templates: str) -> list[dict[str, Any]]:
    """A write whose compensation declares ``templates``, and its undo."""
    write: dict[str, Any] = {
        "name": "t.write",
        "effect": "reversible",
        "permission": "t:write",
        "input_schema": copy.deepcopy(PATH_SCHEMA),
        "output_schema": {
            "type": "object",
            "properties": {"size": {"type": "integer"}},
            "required": ["size"],
        },
        "compensation": {
            "tool": "t.undo",
            "argument_map": {"path": "args.path"},
            "resources": list(templates),
        },
    }
    undo = {
        "name": "t.undo",
        "effect": "idempotent",
        "permission": "t:undo",
        "input_schema": copy.deepcopy(PATH_SCHEMA),
    }
    return [write, undo]


def refused(items: list[dict[str, Any]]) -> str:
    """The problem a registry of ``items`` is refused for, checked to name ``t.write``."""
    with pytest.raises(ManifestError) as info:
        Registry.from_manifests(items)
    assert info.value.tool == "t.write"
    return info.value.problem


# -- templates -----------------------------------------------------------------------------


def test_template_sources_are_its_placeholders_in_order() -> None:
    assert template_sources("s3:{args.bucket}/{args.key}") == ["args.bucket", "args.key"]
    assert template_sources("gh:{args.repo}#{result.number}") == ["args.repo", "result.number"]
    assert template_sources("queue:jobs") == []
    assert template_sources("gh:{args.owner|lower}/{args.repo|lower}") == [
        "args.owner",
        "args.repo",
    ]


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("fs:{path}", "must name 'args.<path>' or 'result.<path>'"),
        ("fs:{args.}", "must name"),
        ("fs:{}", "must name"),
        ("fs:{args.path", "opens or closes no placeholder"),
        ("fs:args.path}", "opens or closes no placeholder"),
        ("fs:{{args.path}}", "opens or closes no placeholder"),
        ("fs:{args.path|upper}", "optionally followed by '|lower'"),
        ("", "non-empty string"),
    ],
)
def test_a_malformed_template_is_refused_naming_it(template: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Compensation(tool="t.undo", resources=[template])


def test_an_empty_list_of_resources_is_refused() -> None:
    """``[]`` would say the compensation touches nothing; leave ``resources`` out instead."""
    with pytest.raises(ValueError, match="at least 1"):
        Compensation(tool="t.undo", resources=[])


@pytest.mark.req("DEP-2")
def test_templates_over_declared_sources_load() -> None:
    registry = Registry.from_manifests(manifests("t:{args.path}", "t:{result.size}/x"))
    compensation = registry.get("t.write").compensation
    assert compensation is not None
    assert compensation.resources == ["t:{args.path}", "t:{result.size}/x"]


@pytest.mark.req("DEP-2")
def test_a_template_reading_an_undeclared_argument_names_the_tool_and_source() -> None:
    problem = refused(manifests("t:{args.pth}"))
    assert "compensation t.undo: resources template 't:{args.pth}'" in problem
    assert "'args.pth' names no input property" in problem
    assert "it declares: content, path" in problem


@pytest.mark.req("DEP-2")
def test_a_template_reading_an_undeclared_result_field_names_the_tool_and_source() -> None:
    problem = refused(manifests("t:{args.path}", "t:{result.sise}"))
    assert "compensation t.undo: resources template 't:{result.sise}'" in problem
    assert "'result.sise' is not in the output schema of t.write" in problem


@pytest.mark.req("DEP-2")
def test_a_template_reading_the_result_of_a_tool_without_an_output_schema_is_refused() -> None:
    items = manifests("t:{result.size}")
    del items[0]["output_schema"]
    assert "declares no output_schema" in refused(items)


def test_the_manifest_json_carries_the_templates() -> None:
    registry = Registry.from_manifests(manifests("t:{args.path}"))
    data = registry.get("t.write").to_json()
    assert data["compensation"]["resources"] == ["t:{args.path}"]
    again = Registry.from_manifests([copy.deepcopy(m.to_json()) for m in registry])
    assert again.get("t.write") == registry.get("t.write")


# -- rendering -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("templates", "args", "result", "names"),
    [
        (["s3:{args.bucket}/{args.key}"], {"bucket": "b", "key": "k/1"}, None, ["s3:b/k/1"]),
        (["gh:{args.repo}#{result.number}"], {"repo": "o/r"}, {"number": 12}, ["gh:o/r#12"]),
        (["fs:{result.created}"], {}, {"created": ["a", "a/b"]}, ["fs:a", "fs:a/b"]),
        (["fs:{result.created}"], {}, {"created": []}, []),  # made nothing: touches nothing
        (
            ["x:{args.a}-{args.b}"],
            {"a": [1, 2], "b": ["p", "q"]},
            None,
            ["x:1-p", "x:1-q", "x:2-p", "x:2-q"],
        ),
        (["pg:t{args.key}"], {"key": {"id": 3, "a": True}}, None, ['pg:t{"a":true,"id":3}']),
        (["fs:{args.src}", "fs:{args.dst}"], {"src": "a", "dst": "a"}, None, ["fs:a"]),
        (["queue:jobs"], {}, None, ["queue:jobs"]),
        (
            ["gh:{args.owner|lower}/{args.repo}"],
            {"owner": "Octo", "repo": "Hi"},
            None,
            ["gh:octo/Hi"],
        ),
        (["gh:{args.names|lower}"], {"names": ["A", "b"]}, None, ["gh:a", "gh:b"]),
    ],
)
def test_rendered_names(
    templates: list[str], args: dict[str, Any], result: dict[str, Any] | None, names: list[str]
) -> None:
    assert render_resources(templates, args, result) == names


@pytest.mark.parametrize(
    ("args", "result"),
    [
        ({"key": None}, None),  # a null value
        ({}, None),  # a missing argument
        ({"key": "k"}, None),  # a result source with no result (an uncertain step)
        ({"key": "k"}, {"n": [1, None]}),  # a null inside a list
    ],
)
def test_a_value_that_is_missing_or_null_leaves_the_resources_unknown(
    args: dict[str, Any], result: dict[str, Any] | None
) -> None:
    assert render_resources(["k:{args.key}", "n:{result.n}"], args, result) is None


def test_more_names_than_the_limit_leave_the_resources_unknown() -> None:
    many = {"a": list(range(MAX_RESOURCES)), "b": [1, 2]}
    assert render_resources(["x:{args.a}"], many, None) is not None
    assert render_resources(["x:{args.a}/{args.b}"], many, None) is None


def test_names_overlap_when_equal_or_one_lies_under_the_other() -> None:
    assert overlap("fs:d", "fs:d")
    assert overlap("fs:d", "fs:d/f.txt")
    assert overlap("fs:d/e/f", "fs:d")
    assert not overlap("fs:d/a", "fs:d/b")
    assert not overlap("fs:d", "fs:dd")
    assert not overlap("gh:o/r#1", "gh:o/r#12")
    assert conflicts(["a"], ["b", "a/x"])
    assert not conflicts(["a"], ["b"])
    assert not conflicts([], ["b"])
    assert conflicts(None, [])  # unknown overlaps everything
    assert conflicts(["a"], None)


def test_journaled_resources_read_back_only_a_list_of_names() -> None:
    assert journaled_resources({"tool": "t", "args": {}, "resources": ["a"]}) == ["a"]
    assert journaled_resources({"tool": "t", "args": {}}) is None  # an older journal
    assert journaled_resources({"tool": "t", "args": {}, "resources": "a"}) is None
    assert journaled_resources({"tool": "t", "args": {}, "resources": [1]}) is None
    assert journaled_resources(None) is None


# -- journaled with the compensation ---------------------------------------------------------


def stack_run(journal: SQLiteJournal, backend: StackBackend) -> Run:
    return Run.start(
        journal,
        registry_for([StackConnector]),
        scope=["stk:write", "stk:read"],
        executor=executor_for([StackConnector(backend)]),
    )


@pytest.mark.req("DEP-2")
async def test_a_steps_resources_are_journaled_with_its_compensation(
    journal: SQLiteJournal,
) -> None:
    run = stack_run(journal, StackBackend())
    seq, _ = await run.call("stk.push", {"res": "a/b", "token": "t1"})
    any_seq, _ = await run.call("stk.push_any", {"res": "a", "token": "t2"})
    assert journal.get_step(run.id, seq).compensation == {
        "tool": "stk.pop",
        "args": {"res": "a/b", "token": "t1"},
        "resources": ["stk:a/b"],
    }
    # no declaration: no names, so the step overlaps everything
    assert journal.get_step(run.id, any_seq).compensation == {
        "tool": "stk.pop",
        "args": {"res": "a", "token": "t2"},
    }


@pytest.mark.req("DEP-2")
async def test_an_uncertain_step_gets_its_resources_when_resolved_applied(
    journal: SQLiteJournal,
) -> None:
    backend = StackBackend(forward={"t1": "uncertain"})
    run = stack_run(journal, backend)
    with pytest.raises(EffectUncertainError):
        await run.call("stk.push", {"res": "a", "token": "t1"})
    assert journal.get_step(run.id, 1).compensation is None
    resolved = run.resolve(1, applied=True)
    assert resolved.compensation is not None
    assert resolved.compensation["resources"] == ["stk:a"]


# -- the order they give (RB-12) ----------------------------------------------------------


def candidate(seq: int, resources: list[str] | None) -> StepRecord:
    compensation: dict[str, Any] = {"tool": "t.undo", "args": {}}
    if resources is not None:
        compensation["resources"] = resources
    return StepRecord(
        run_id="run_x",
        seq=seq,
        tool="t.write",
        effect="reversible",
        permission="t:write",
        args={},
        reason=None,
        state=StepState.SUCCEEDED,
        idempotency_key=f"reversi-run_x-{seq}",
        started_at=0.0,
        compensation=compensation,
    )


def order(
    *steps: tuple[int, list[str] | None], dependents: dict[int, list[int]] | None = None
) -> dict[int, list[int]]:
    newest_first = sorted((candidate(s, r) for s, r in steps), key=lambda c: -c.seq)
    return waits_for(newest_first, dependents or {})


@pytest.mark.req("RB-12")
def test_steps_on_one_resource_wait_for_the_nearest_later_one() -> None:
    assert order((1, ["a"]), (2, ["b"]), (3, ["a"]), (4, ["a"])) == {4: [], 3: [4], 2: [], 1: [3]}


@pytest.mark.req("RB-12")
def test_a_step_waits_for_the_later_steps_under_or_above_its_name() -> None:
    got = order((1, ["fs:d"]), (2, ["fs:d/a"]), (3, ["fs:d/b"]), (4, ["fs:e"]), (5, ["fs:d/a/x"]))
    # 1 waits for 5 directly too: the nearest later step on a name under its own
    assert got == {5: [], 4: [], 3: [], 2: [5], 1: [5, 3, 2]}


@pytest.mark.req("RB-12")
def test_a_step_on_two_names_waits_for_both() -> None:
    assert order((1, ["a", "b"]), (2, ["a"]), (3, ["b"])) == {3: [], 2: [], 1: [3, 2]}


@pytest.mark.req("RB-12")
def test_unknown_resources_wait_for_everything_later_and_everything_earlier_waits() -> None:
    got = order((1, ["b"]), (2, ["a"]), (3, None), (4, ["c"]), (5, ["d"]))
    assert got == {5: [], 4: [], 3: [5, 4], 2: [3], 1: [3]}


@pytest.mark.req("RB-12")
def test_a_step_waits_for_the_later_steps_that_require_it() -> None:
    got = order((1, ["a"]), (2, ["b"]), (3, ["c"]), dependents={1: [3, 9]})  # 9: no candidate
    assert got == {3: [], 2: [], 1: [3]}
