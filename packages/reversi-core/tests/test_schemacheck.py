"""The fast first check of arguments (``_schemacheck``): never valid where jsonschema refuses."""

from __future__ import annotations

from typing import Any

import pytest
from _memconnector import MemConnector
from hypothesis import event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from reversi_core import InvalidArgumentsError, registry_for
from reversi_core._schemacheck import fast_check

RICH: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 8},
        "mode": {"enum": ["a", "b", 1, None]},
        "count": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
        "ratio": {"type": ["number", "null"], "maximum": 1.5},
        "flag": {"const": True},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}]},
        "ref": {"$ref": "#/$defs/Thing"},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]},
        "one": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
        "free": {"type": "object", "additionalProperties": {"type": "integer"}},
        "not_null": {"not": {"type": "null"}},
    },
    "$defs": {
        "Thing": {
            "type": "object",
            "properties": {"id": {"type": "integer"}},
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
    | st.sampled_from(["", "a", "b", "\ud800", 0, 1, 1.0, 5, 9.999, 10, True, False])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
MEM_KEYS = ["by", "existed", "key", "message", "name", "previous", "value"]  # MemConnector's
KEYS = st.sampled_from([*RICH["properties"], *MEM_KEYS, "id", "other"])
ARGS = st.dictionaries(KEYS, VALUES | st.fixed_dictionaries({"id": VALUES}), max_size=5)


REGISTRY = registry_for([MemConnector])


def _schemas() -> list[dict[str, Any]]:
    return [RICH, *(m.input_schema for m in MemConnector.manifests())]


@pytest.mark.parametrize("schema", _schemas(), ids=lambda s: str(s.get("title", "rich")))
def test_schemas_of_the_known_keywords_get_a_fast_check(schema: dict[str, Any]) -> None:
    assert fast_check(schema) is not None


@pytest.mark.req("CALL-1")
@settings(max_examples=600, deadline=None)
@given(ARGS)
def test_the_fast_check_never_passes_what_jsonschema_refuses(args: dict[str, Any]) -> None:
    fast = fast_check(RICH)
    assert fast is not None
    valid = Draft202012Validator(RICH).is_valid(args)
    try:
        passed = fast(args)
    except Exception:  # noqa: BLE001 - a value it cannot read: jsonschema decides
        passed = False
    assert not (passed and not valid), args


@pytest.mark.req("CALL-1")
@settings(max_examples=300, deadline=None)
@given(ARGS)
def test_the_registry_decides_as_jsonschema_does(args: dict[str, Any]) -> None:
    for manifest in REGISTRY:
        valid = Draft202012Validator(manifest.input_schema).is_valid(args)
        event("valid" if valid else "invalid")
        try:
            REGISTRY.validate_arguments(manifest.name, args)
        except InvalidArgumentsError as exc:
            assert not valid, args
            assert exc.problems  # jsonschema said why
        else:
            assert valid, args


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^\\d+$"},  # \d: Python's re and ECMA 262 differ
        {"type": "string", "format": "date"},
        {"type": "number", "multipleOf": 0.1},
        {"type": "array", "uniqueItems": True},
        {"$ref": "https://example.com/schema.json"},  # nothing is fetched
        {"type": "object", "properties": {"a": {"pattern": "x"}}},  # found when nested
        {"type": "object", "$defs": {"A": {"format": "uri"}}},
    ],
)
def test_other_keywords_are_left_to_jsonschema_alone(schema: dict[str, Any]) -> None:
    assert fast_check(schema) is None
