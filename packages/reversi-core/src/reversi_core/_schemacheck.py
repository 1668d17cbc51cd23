"""A fast first check of a call's arguments: ``fastjsonschema``, where it agrees with ``jsonschema``.

:meth:`~reversi_core.registry.Registry.validate_arguments` runs on every call, before the
call is forwarded (docs/engine.md, CALL-1). ``jsonschema``, the project's validator, whose
messages a rejection quotes, builds a validator object per property it descends into:
about 20 µs (130,000 instructions) for ``fs.write_file``'s three properties on a warm
cache, and around 0.1 ms in the gateway, whose cache is cold between two calls.
``fastjsonschema`` (https://horejsek.github.io/python-fastjsonschema/) compiles a schema
into a Python function once: under 1 µs (11,000 instructions) for the same check. So the
registry asks it first and trusts only its "valid": arguments it refuses, or a value it
cannot read, are checked again by ``jsonschema``, which decides and says why.

That is only sound where both agree on what is valid. ``fastjsonschema`` follows JSON
Schema draft 7 and the registry validates by 2020-12, so the fast check is built only
for a schema made of the keywords of :data:`KEYWORDS`, whose meaning is the same in both
drafts and in both libraries: types, properties, lengths, bounds, enumerations and
constants of scalars, combinations, and ``$ref`` into the schema itself with nothing
beside it but annotations (draft 7 ignores the siblings of a ``$ref``; 2020-12 applies
them). Never ``prefixItems`` (draft 7 does not know it), ``items`` as a list (a tuple in
draft 7, an error in 2020-12), ``pattern`` and ``patternProperties`` (``fastjsonschema``
reads ``$`` as ``\\Z``), ``format``, ``multipleOf`` (floating point), ``uniqueItems``,
``$id`` or a reference outside the schema. Any other schema is checked by ``jsonschema``
alone. Defaults are never applied (``use_default=False``): the arguments journaled are
the arguments sent.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = ["KEYWORDS", "fast_check"]

ANNOTATIONS = frozenset(
    {
        "$comment",
        "default",
        "deprecated",
        "description",
        "examples",
        "readOnly",
        "title",
        "writeOnly",
    }
)
"""Keywords that never make a value invalid."""

KEYWORDS = ANNOTATIONS | {
    "$defs",
    "$ref",
    "additionalProperties",
    "allOf",
    "anyOf",
    "const",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "not",
    "oneOf",
    "properties",
    "required",
    "type",
}
"""The keywords a schema may use for the fast check to be built."""

_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_MAPS = ("properties", "$defs")
_ONE = ("items", "additionalProperties", "not")
_LISTS = ("anyOf", "oneOf", "allOf")
_NUMBERS = ("exclusiveMaximum", "exclusiveMinimum", "maximum", "minimum")
_COUNTS = ("maxItems", "maxLength", "maxProperties", "minItems", "minLength", "minProperties")


def _scalar(value: Any) -> bool:
    return value is None or type(value) in (str, int, float, bool)


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _within(schema: Any) -> bool:
    if type(schema) is bool:
        return True
    if type(schema) is not dict:
        return False
    if "$ref" in schema:
        ref = schema["$ref"]
        if type(ref) is not str or not ref.startswith("#"):
            return False  # only references inside the schema: nothing is fetched
        if not schema.keys() - {"$ref", "$defs"} <= ANNOTATIONS:
            return False
        defs = schema.get("$defs", {})
        return type(defs) is dict and all(_within(v) for v in defs.values())
    for key, value in schema.items():
        if key not in KEYWORDS:
            return False
        if key in _MAPS:
            if type(value) is not dict or not all(_within(v) for v in value.values()):
                return False
        elif key in _ONE:
            if not _within(value):
                return False
        elif key in _LISTS:
            if type(value) is not list or not value or not all(_within(v) for v in value):
                return False
        elif key == "type":
            names = value if type(value) is list else [value]
            if not names or not all(type(n) is str and n in _TYPES for n in names):
                return False
        elif key == "enum":
            if type(value) is not list or not all(_scalar(v) for v in value):
                return False
        elif key == "const":
            if not _scalar(value):
                return False
        elif key == "required":
            if type(value) is not list or not all(type(v) is str for v in value):
                return False
        elif key in _NUMBERS:
            if not _number(value):
                return False
        elif key in _COUNTS and not (type(value) is int and value >= 0):
            return False
    return True


def fast_check(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """A function answering whether a value is valid for ``schema`` (its True is to be
    trusted, its False checked again), or ``None`` where the schema uses anything outside
    :data:`KEYWORDS` or ``fastjsonschema`` cannot compile it."""
    if not _within(schema):
        return None
    import fastjsonschema  # only once a call is checked: start-up does not pay for it

    try:
        validate = fastjsonschema.compile(
            copy.deepcopy(schema),  # its reference resolver rewrites "$ref" in place
            use_default=False,
            use_formats=False,
            # (its short exceptions cannot compile "const"; a valid value takes the same path)
        )
    except Exception:  # whatever it cannot compile, jsonschema checks alone
        return None

    def check(value: Any) -> bool:
        try:
            validate(value)
        except Exception:  # refused, or a value it cannot read: jsonschema decides
            return False
        return True

    return check
