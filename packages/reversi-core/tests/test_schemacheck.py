"""The fast first check of arguments (``_schemacheck``): never valid where jsonschema refuses."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from _memconnector import MemConnector
from hypothesis import event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from reversi_core import InvalidArgumentsError, registry_for
from reversi_core._schemacheck import fast_check
from reversi_core.registry import Registry

RICH: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 8},
        "mode": {"enum": ["a", "b", 1, None, True]},
        "count": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
        "ratio": {"type": ["number", "null"], "maximum": 1.5},
        "flag": {"const": True},
        "one_flag": {"const": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3, "minItems": 1},
        "ref": {"$ref": "#/$defs/Thing", "description": "annotations may stand beside a $ref"},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]},
        "one": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
        "all": {"allOf": [{"type": "number"}, {"exclusiveMinimum": -1}]},
        "free": {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 2},
        "not_null": {"not": {"type": "null"}},
        "nothing": False,
        "anything": True,
    },
    "$defs": {
        "Thing": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "next": {"$ref": "#/$defs/Thing"}},
            "required": ["id"],
            "minProperties": 1,
        }
    },
}

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=10)
    | st.sampled_from(["", "a", "b", "\ud800", 0, 1, 1.0, -1, 5, 9.999, 10, 1.5, True, False])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
MEM_KEYS = ["by", "existed", "key", "message", "name", "previous", "value"]  # MemConnector's
KEYS = st.sampled_from([*RICH["properties"], *MEM_KEYS, "id", "next", "other"])
ARGS = st.dictionaries(
    KEYS, VALUES | st.fixed_dictionaries({"id": VALUES}, optional={"next": VALUES}), max_size=5
)
NEAR = st.builds(  # RICH's required path and one or two of its properties: often valid
    lambda path, more: {**more, "path": path},
    st.text(max_size=9),
    st.dictionaries(
        st.sampled_from(sorted(RICH["properties"])),
        SCALARS | st.lists(SCALARS, max_size=4) | st.fixed_dictionaries({"id": SCALARS}),
        max_size=2,
    ),
)


REGISTRY = registry_for([MemConnector])
RICH_FAST = fast_check(RICH)
RICH_VALIDATOR = Draft202012Validator(RICH)


def _schemas() -> list[dict[str, Any]]:
    return [RICH, *(m.input_schema for m in MemConnector.manifests())]


@pytest.mark.parametrize("schema", _schemas(), ids=lambda s: str(s.get("title", "rich")))
def test_schemas_of_the_known_keywords_get_a_fast_check(schema: dict[str, Any]) -> None:
    assert fast_check(schema) is not None


@pytest.mark.req("CALL-1")
@settings(max_examples=500, deadline=None)
@given(ARGS | NEAR)
def test_the_fast_check_never_passes_what_jsonschema_refuses(args: dict[str, Any]) -> None:
    assert RICH_FAST is not None
    valid = RICH_VALIDATOR.is_valid(args)
    event("valid" if valid else "invalid")
    assert not (RICH_FAST(args) and not valid), args


@pytest.mark.parametrize(
    ("args", "valid"),
    [
        ({"path": "a"}, True),
        ({"path": "a", "mode": True, "flag": True, "one_flag": 1, "count": 9}, True),
        ({"path": "a", "ref": {"id": 1, "next": {"id": 2}}, "either": 5, "all": 0}, True),
        ({"path": "a", "mode": 1.0, "one_flag": 1.0, "count": 3.0}, True),  # 1.0 is 1 in both
        ({"path": "a", "flag": 1}, False),  # 1 is not true
        ({"path": "a", "one_flag": True}, False),  # nor true 1
        ({"path": "a", "mode": False}, False),
        ({"path": "a", "count": True}, False),  # a boolean is no integer
        ({"path": "a", "ref": {"id": 1, "next": {"id": "2"}}}, False),
        ({"path": "a", "nothing": None}, False),
        ({"path": ""}, False),
        ({}, False),
    ],
)
def test_the_fast_check_agrees_with_jsonschema_on_the_hard_cases(
    args: dict[str, Any], valid: bool
) -> None:
    assert RICH_FAST is not None
    assert RICH_VALIDATOR.is_valid(args) is valid
    assert RICH_FAST(args) is valid


@pytest.mark.req("CALL-1")
@settings(max_examples=300, deadline=None)
@given(ARGS)
def test_the_registry_decides_as_jsonschema_does(args: dict[str, Any]) -> None:
    for manifest in REGISTRY:
        valid = Draft202012Validator(manifest.input_schema).is_valid(args)
        event("valid" if valid else "invalid")
        if valid:
            REGISTRY.validate_arguments(manifest.name, args)
        else:
            with pytest.raises(InvalidArgumentsError) as refused:
                REGISTRY.validate_arguments(manifest.name, args)
            assert refused.value.problems  # jsonschema said why


def test_checking_never_fills_in_defaults_nor_changes_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "encoding": {"enum": ["utf-8", "base64"], "default": "utf-8"},
            "thing": {"$ref": "#/$defs/Thing"},
        },
        "$defs": {"Thing": {"type": "object", "properties": {"n": {"default": 1}}}},
    }
    before = copy.deepcopy(schema)
    registry = Registry.from_manifests(
        [
            {
                "name": "x.read",
                "description": "d",
                "effect": "read_only",
                "permission": "x:read",
                "input_schema": schema,
            }
        ]
    )
    args: dict[str, Any] = {"path": "a", "thing": {}}
    registry.validate_arguments("x.read", args)
    assert args == {"path": "a", "thing": {}}  # the arguments journaled are those sent
    assert schema == before


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^\\d+$"},  # fastjsonschema reads $ as \Z
        {"type": "object", "patternProperties": {"^a$": {"type": "integer"}}},
        {"type": "string", "format": "date"},
        {"type": "number", "multipleOf": 0.1},
        {"type": "array", "uniqueItems": True},
        {"type": "array", "prefixItems": [{"type": "integer"}]},  # not in draft 7
        {"type": "array", "items": [{"type": "integer"}]},  # a tuple in draft 7 only
        {"$ref": "https://example.com/schema.json"},  # nothing is fetched
        {"$ref": "#/$defs/A", "minimum": 3, "$defs": {"A": {}}},  # draft 7 ignores the sibling
        {"$id": "https://example.com/a", "type": "object"},
        {"enum": [{"a": 1}]},  # containers compare differently: only scalars
        {"const": [1]},
        {"type": "object", "properties": {"a": {"pattern": "x"}}},  # found when nested
        {"type": "object", "$defs": {"A": {"format": "uri"}}},
        {"type": "object", "anyOf": []},
        {"type": "integers"},
        {"minLength": 1.5},
        {"maximum": True},
    ],
)
def test_other_schemas_are_left_to_jsonschema_alone(schema: dict[str, Any]) -> None:
    assert fast_check(schema) is None
