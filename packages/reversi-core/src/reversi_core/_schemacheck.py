"""A fast first check of a call's arguments: ``jsonschema-rs``, where it agrees with ``jsonschema``.

:meth:`~reversi_core.registry.Registry.validate_arguments` runs on every call, before the
call is forwarded (docs/engine.md, CALL-1). ``jsonschema`` (the project's validator, whose
messages the rejections quote) takes about 15 µs for a small schema on a warm cache and
around 0.1 ms on the gateway's cold one; ``jsonschema-rs`` (https://github.com/Stranger6667/jsonschema)
takes well under a microsecond. So the registry asks ``jsonschema-rs`` first and trusts
only its "valid": arguments it refuses, or cannot read (a lone surrogate, an integer
over 64 bits), are checked again by ``jsonschema``, which decides and says why.

That is only sound where both validators agree on what is valid, so the fast check is
built only for a schema made of the keywords in :data:`KEYWORDS` (types, properties,
lengths, bounds, enumerations, combinations, local ``$ref``): nothing whose meaning
depends on an implementation, such as ``pattern`` (Python's ``re`` and ECMA 262 read
``\\d`` or ``\\w`` differently), ``format``, ``multipleOf`` (floating point) or
``uniqueItems``. Any other schema is checked by ``jsonschema`` alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema_rs

__all__ = ["KEYWORDS", "fast_check"]

KEYWORDS = frozenset(
    {
        "$defs",
        "$ref",
        "additionalProperties",
        "allOf",
        "anyOf",
        "const",
        "default",
        "deprecated",
        "description",
        "enum",
        "examples",
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
        "prefixItems",
        "properties",
        "readOnly",
        "required",
        "title",
        "type",
        "writeOnly",
    }
)
"""The keywords a schema may use for the fast check to be built."""

_MAPS = ("properties", "$defs")
_ONE = ("items", "additionalProperties", "not")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _within(schema: Any) -> bool:
    if type(schema) is bool:
        return True
    if type(schema) is not dict:
        return False
    for key, value in schema.items():
        if key not in KEYWORDS:
            return False
        if key == "$ref" and not (type(value) is str and value.startswith("#")):
            return False  # only references inside the schema: nothing is fetched
        if key in _MAPS:
            if type(value) is not dict or not all(_within(v) for v in value.values()):
                return False
        elif key in _ONE:
            if not _within(value):
                return False
        elif key in _LISTS and (type(value) is not list or not all(_within(v) for v in value)):
            return False
    return True


def fast_check(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """A function answering whether a value is valid for ``schema`` (its True is to be
    trusted, its False checked again), or ``None`` where the schema is outside
    :data:`KEYWORDS` or ``jsonschema-rs`` cannot build it. The function may raise for a
    value it cannot read: take that as False."""
    if not _within(schema):
        return None
    try:
        validator = jsonschema_rs.Draft202012Validator(schema, validate_formats=False)
    except Exception:  # noqa: BLE001 - whatever it refuses, jsonschema checks alone
        return None
    is_valid: Callable[[Any], bool] = validator.is_valid
    return is_valid
