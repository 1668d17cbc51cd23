"""Registry validation (one test per rule), default scope, schema hashes and drift."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from reversi_core import (
    InvalidArgumentsError,
    Manifest,
    ManifestError,
    Registry,
    UnknownToolError,
    detect_manifest_drift,
    schema_hash,
)
from reversi_core.manifest import Effect

PATH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path"],
}
UNDO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "previous": {"type": "string"}},
    "required": ["path"],
}
WRITE_RESULT: dict[str, Any] = {
    "type": "object",
    "properties": {"previous": {"type": ["string", "null"]}, "size": {"type": "integer"}},
    "required": ["previous", "size"],
    "additionalProperties": False,
}


def manifest(name: str, effect: str, permission: str = "t:write", **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "effect": effect,
        "permission": permission,
        "input_schema": copy.deepcopy(PATH_SCHEMA),
        **fields,
    }


def base() -> list[dict[str, Any]]:
    """A valid set: a reversible write, its idempotent undo, a read and a dependent append."""
    return [
        manifest(
            "t.write",
            "reversible",
            compensation={
                "tool": "t.undo",
                "argument_map": {"path": "args.path", "previous": "result.previous"},
            },
            output_schema=copy.deepcopy(WRITE_RESULT),
        ),
        manifest("t.undo", "idempotent", "t:undo", input_schema=copy.deepcopy(UNDO_SCHEMA)),
        manifest("t.read", "read_only", "t:read"),
        manifest(
            "t.append",
            "reversible",
            compensation={"tool": "t.undo", "argument_map": {"path": "args.path"}},
            requires=[
                {"tool": "t.write", "match": [{"this": "args.path", "earlier": "args.path"}]}
            ],
        ),
    ]


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in items}


def refused(items: list[dict[str, Any]], tool: str) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        Registry.from_manifests(items)
    assert info.value.tool == tool
    assert str(info.value).startswith(f"{tool}: ")
    return info.value


def test_valid_set_loads() -> None:
    registry = Registry.from_manifests(base())
    assert registry.names == ["t.append", "t.read", "t.undo", "t.write"]
    assert isinstance(registry.get("t.write"), Manifest)
    assert "t.write" in registry
    assert len(registry) == 4
    with pytest.raises(UnknownToolError, match=r"t\.nope"):
        registry.get("t.nope")


def test_reversible_without_compensation_is_refused() -> None:
    items = base()
    del by_name(items)["t.write"]["compensation"]
    assert "needs a compensation" in refused(items, "t.write").problem


def test_compensable_without_compensation_is_refused() -> None:
    items = [*base(), manifest("t.move", "compensable")]
    assert "needs a compensation" in refused(items, "t.move").problem


def test_read_only_with_compensation_is_refused() -> None:
    items = base()
    by_name(items)["t.read"]["compensation"] = {
        "tool": "t.undo",
        "argument_map": {"path": "args.path"},
    }
    assert "takes no compensation" in refused(items, "t.read").problem


def test_unregistered_compensation_is_refused() -> None:
    items = [m for m in base() if m["name"] != "t.undo"]
    assert "t.undo is not a registered tool" in refused(items, "t.write").problem


def test_non_idempotent_compensation_is_refused() -> None:
    items = base()
    by_name(items)["t.undo"]["effect"] = "read_only"
    assert "must be idempotent" in refused(items, "t.write").problem


def test_argument_map_with_an_extra_argument_is_refused() -> None:
    items = base()
    by_name(items)["t.write"]["compensation"]["argument_map"]["mode"] = {"const": "fast"}
    problem = refused(items, "t.write").problem
    assert "does not declare" in problem
    assert "mode" in problem


def test_argument_map_missing_a_required_argument_is_refused() -> None:
    items = base()
    by_name(items)["t.undo"]["input_schema"]["required"] = ["path", "previous"]
    by_name(items)["t.write"]["compensation"]["argument_map"] = {"path": "args.path"}
    problem = refused(items, "t.write").problem
    assert "lacks required arguments" in problem
    assert "previous" in problem


def test_args_path_naming_no_input_property_is_refused() -> None:
    items = base()
    by_name(items)["t.write"]["compensation"]["argument_map"]["path"] = "args.filename"
    assert "'args.filename' names no input property" in refused(items, "t.write").problem


def test_requires_naming_an_unknown_tool_is_refused() -> None:
    items = base()
    by_name(items)["t.append"]["requires"][0]["tool"] = "t.mkdir"
    assert "unknown tool t.mkdir" in refused(items, "t.append").problem


def test_requires_source_naming_no_input_property_is_refused() -> None:
    items = base()
    by_name(items)["t.append"]["requires"][0]["match"][0]["earlier"] = "args.dir"
    assert "'args.dir' names no input property" in refused(items, "t.append").problem


def test_irreversible_without_approval_always_is_refused() -> None:
    items = [*base(), manifest("t.send", "irreversible", "t:send")]
    assert "approval 'always'" in refused(items, "t.send").problem
    ok = [*base(), manifest("t.send", "irreversible", "t:send", approval="always")]
    assert "t.send" in Registry.from_manifests(ok)


def test_duplicate_name_is_refused() -> None:
    items = [*base(), manifest("t.read", "read_only", "t:read")]
    assert "declared twice" in refused(items, "t.read").problem


def test_malformed_manifest_is_refused_naming_it() -> None:
    items = [*base(), {"name": "t.bad", "effect": "sometimes", "permission": "p"}]
    assert "invalid manifest" in refused(items, "t.bad").problem


def test_args_paths_follow_pydantic_refs_and_optionals() -> None:
    class Target(BaseModel):
        path: str

    class Args(BaseModel):
        target: Target
        note: Target | None = None

    schema = Args.model_json_schema()
    undo = manifest("t.undo", "idempotent", "t:undo", input_schema=copy.deepcopy(UNDO_SCHEMA))

    def write(source: str) -> dict[str, Any]:
        return manifest(
            "t.write",
            "reversible",
            input_schema=schema,
            compensation={"tool": "t.undo", "argument_map": {"path": source}},
        )

    assert "t.write" in Registry.from_manifests([write("args.target.path"), undo])
    assert "t.write" in Registry.from_manifests([write("args.note.path"), undo])
    refused([write("args.target.name"), undo], "t.write")


# -- result. sources: checked against the output schema of the tool whose result they read --


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    tags: list[str]


class Written(BaseModel):
    """A result with every shape a path walks through."""

    model_config = ConfigDict(extra="forbid")
    previous: str | None
    target: Target
    maybe: Target | None
    history: list[Target]
    pair: tuple[str, Target]
    extra: dict[str, Any]
    counts: dict[str, int]


def writes_with(source: str, output_schema: Any = None) -> list[dict[str, Any]]:
    """base() with t.write's compensation mapping ``previous`` from ``source``."""
    items = base()
    write = by_name(items)["t.write"]
    write["compensation"]["argument_map"]["previous"] = source
    write["output_schema"] = Written.model_json_schema() if output_schema is None else output_schema
    return items


@pytest.mark.parametrize(
    "source",
    [
        "result.previous",  # a nullable field
        "result.target.path",  # a nested model, through $ref into $defs
        "result.maybe.path",  # an Optional nested model: anyOf [$ref, null]
        "result.history.0.path",  # an array index, then a field of the item
        "result.target.tags.3",  # an array of strings, by index
        "result.pair.1.path",  # prefixItems: a fixed position of a tuple
        "result.extra",  # a free-form mapping, taken whole
    ],
)
def test_result_paths_the_output_schema_defines_are_accepted(source: str) -> None:
    assert "t.write" in Registry.from_manifests(writes_with(source))


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("result.previus", "result has no property 'previus' (it declares: counts, extra,"),
        ("result.target.name", "result.target has no property 'name' (it declares: path, tags)"),
        ("result.maybe.name", "result.maybe has no property 'name'"),
        ("result.history.first", "result.history is an array: 'first' is not an index"),
        ("result.history.0.name", "result.history.0 has no property 'name'"),
        ("result.previous.length", "result.previous is string: it has no 'length'"),
        ("result.pair.0.path", "result.pair.0 is string: it has no 'path'"),
        ("result.extra.id", "result.extra is a free-form mapping: nothing says 'id' will be"),
        ("result.counts.a", "nothing says 'a' will be in it (declare it, or map result.counts"),
    ],
)
def test_a_compensation_mapped_from_a_result_field_that_does_not_exist_is_refused(
    source: str, words: str
) -> None:
    error = refused(writes_with(source), "t.write")
    assert error.problem.startswith(
        f"compensation t.undo: argument_map['previous'] = {source!r} is not in the output "
        "schema of t.write: "
    ), error.problem
    assert words in error.problem


def test_a_result_path_into_an_open_object_is_refused_but_declared_fields_pass() -> None:
    class Open(BaseModel):  # pydantic's default: extra keys ignored, so the schema is open
        previous: str

    assert "t.write" in Registry.from_manifests(
        writes_with("result.previous", Open.model_json_schema())
    )
    problem = refused(writes_with("result.other", Open.model_json_schema()), "t.write").problem
    assert problem.endswith(
        "result has no property 'other' (it declares: previous); it takes other keys, but "
        "nothing says 'other' will be there (declare it, or map result whole)"
    )


def test_a_result_source_needs_an_output_schema() -> None:
    items = base()
    del by_name(items)["t.write"]["output_schema"]
    problem = refused(items, "t.write").problem
    assert problem == (
        "compensation t.undo: argument_map['previous'] = 'result.previous' reads the result of "
        "t.write, which declares no output_schema to check it against (every tool declares its "
        "result model)"
    )


def test_an_args_only_compensation_needs_no_output_schema() -> None:
    items = base()
    write = by_name(items)["t.write"]
    del write["output_schema"]
    write["compensation"]["argument_map"]["previous"] = {"const": ""}
    assert "t.write" in Registry.from_manifests(items)


def test_requires_reading_an_earlier_result_is_checked_against_that_tools_output_schema() -> None:
    items = base()
    match = by_name(items)["t.append"]["requires"][0]["match"][0]
    match["earlier"] = "result.size"
    assert "t.append" in Registry.from_manifests(items)
    match["earlier"] = "result.bytes"
    problem = refused(items, "t.append").problem
    assert problem.startswith(
        "requires t.write: match earlier = 'result.bytes' is not in the output schema of "
        "t.write: result has no property 'bytes' (it declares: previous, size)"
    ), problem
    write = by_name(items)["t.write"]
    del write["output_schema"]
    write["compensation"]["argument_map"]["previous"] = {"const": ""}
    match["earlier"] = "result.size"
    assert "reads the result of t.write, which declares no output_schema" in (
        refused(items, "t.append").problem
    )


def test_refs_that_cannot_be_followed_or_loop_are_refused() -> None:
    external = {
        "type": "object",
        "properties": {"previous": {"$ref": "https://example.com/previous.json"}},
    }
    problem = refused(writes_with("result.previous.x", external), "t.write").problem
    assert "cannot follow $ref 'https://example.com/previous.json'" in problem
    looping = {
        "type": "object",
        "properties": {"previous": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
    }
    assert (
        "more than 64 deep" in refused(writes_with("result.previous.x", looping), "t.write").problem
    )


def test_a_union_must_define_the_path_in_every_branch_that_is_not_null() -> None:
    class Other(BaseModel):
        size: int

    class Either(BaseModel):
        previous: Target | Other | None

    schema = Either.model_json_schema()
    problem = refused(writes_with("result.previous.path", schema), "t.write").problem
    assert "result.previous has no property 'path' (it declares: size)" in problem
    assert "t.write" in Registry.from_manifests(writes_with("result.previous", schema))


def test_an_output_schema_must_be_a_valid_schema_of_an_object() -> None:
    broken = writes_with("result.previous", {"type": "object", "properties": {"previous": 3}})
    assert "output_schema is not a valid JSON Schema" in refused(broken, "t.write").problem
    listing = writes_with("result.previous", {"type": "array"})
    assert "output_schema must describe a JSON object" in refused(listing, "t.write").problem


def test_default_scope_excludes_permissions_only_used_by_idempotent_and_irreversible_tools() -> (
    None
):
    items = [
        *base(),
        manifest("t.delete", "idempotent", "t:write"),  # shares t:write with t.write: stays
        manifest("t.purge", "idempotent", "t:purge"),
        manifest("t.send", "irreversible", "t:send", approval="always"),
    ]
    assert Registry.from_manifests(items).default_scope() == {"t:write", "t:read"}


def test_validate_arguments_lists_each_bad_field() -> None:
    registry = Registry.from_manifests(base())
    registry.validate_arguments("t.write", {"path": "a"})
    with pytest.raises(InvalidArgumentsError) as info:
        registry.validate_arguments("t.write", {"path": 1, "content": 2})
    assert info.value.problems == [
        "args.content: 2 is not of type 'string'",
        "args.path: 1 is not of type 'string'",
    ]
    with pytest.raises(InvalidArgumentsError, match="expected a JSON object"):
        registry.validate_arguments("t.write", ["path"])


def test_schema_hash_ignores_key_order() -> None:
    a = {
        "type": "object",
        "properties": {"x": {"type": "string", "minLength": 1}, "y": {"type": "integer"}},
    }
    b = {
        "properties": {"y": {"type": "integer"}, "x": {"minLength": 1, "type": "string"}},
        "type": "object",
    }
    assert list(a) != list(b)
    assert schema_hash(a) == schema_hash(b)
    assert len(schema_hash(a)) == 64
    assert schema_hash(a) != schema_hash({**a, "required": ["x"]})


def test_manifest_drift_reports_added_removed_and_changed() -> None:
    registry = Registry.from_manifests(base())
    baseline = registry.schema_hashes()
    assert not detect_manifest_drift(registry, {}, baseline)
    baseline["t.gone"] = schema_hash({"type": "object"})
    del baseline["t.read"]
    changed_schema = {**PATH_SCHEMA, "required": ["path", "content"]}
    drift = detect_manifest_drift(registry, {"t.write": changed_schema}, baseline)
    assert drift
    assert drift.added == ["t.read"]
    assert drift.removed == ["t.gone"]
    assert drift.changed == ["t.write"]
    # key order alone is not drift
    reordered = {"required": ["path"], "properties": PATH_SCHEMA["properties"], "type": "object"}
    assert not detect_manifest_drift(registry, {"t.write": reordered}, registry.schema_hashes())


def test_manifest_connector_and_writes() -> None:
    registry = Registry.from_manifests(base())
    assert registry.get("t.write").connector == "t"
    assert registry.get("t.write").writes
    assert not registry.get("t.read").writes
    assert registry.get("t.read").effect is Effect.READ_ONLY


def test_requires_this_side_must_name_an_argument() -> None:
    items = base()
    by_name(items)["t.append"]["requires"][0]["match"][0]["this"] = "result.path"
    assert "must name an argument" in refused(items, "t.append").problem


def test_match_relations_compare_values_and_normalised_paths() -> None:
    from reversi_core.manifest import Match, match_holds

    equals = Match(this="args.a", earlier="args.b")
    same = Match(this="args.a", earlier="args.b", relation="same_path")
    within = Match(this="args.a", earlier="result.created", relation="within")
    assert match_holds(equals, "x/y", "x/y")
    assert not match_holds(equals, "./x/y", "x/y")
    assert match_holds(same, "./x//y", "x/y")
    assert match_holds(same, "x/y/", "x/y")
    assert not match_holds(same, "x/y/z", "x/y")
    assert match_holds(within, "d/e/f.txt", ["d", "d/e"])
    assert match_holds(within, "./d/f.txt", "d")
    assert not match_holds(within, "d", "d")
    assert not match_holds(within, "dd/f.txt", "d")
