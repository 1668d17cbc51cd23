"""The MCP specification's JSON Schemas (``vendor/mcp/``, see its README), as validators.

:func:`check` validates one JSON value against one definition of one protocol
version's schema (draft-07 for 2025-06-18, 2020-12 for the others), the way the
vendor-api README shows, and fails the test with every error it finds.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

VENDOR = Path(__file__).resolve().parent / "vendor" / "mcp"
VERSIONS = ("2025-06-18", "2025-11-25", "2026-07-28")


@cache
def schema(version: str) -> dict[str, Any]:
    """The whole schema of ``version``."""
    loaded: dict[str, Any] = json.loads((VENDOR / f"schema-{version}.json").read_text())
    return loaded


@cache
def validator(version: str, definition: str) -> Validator:
    """A validator of ``definition`` (``CallToolResult``, ``JSONRPCResponse``, ...)."""
    whole = schema(version)
    defs = "definitions" if "definitions" in whole else "$defs"
    assert definition in whole[defs], f"{version} defines no {definition}"
    root = {"$schema": whole["$schema"], defs: whole[defs], "$ref": f"#/{defs}/{definition}"}
    cls = validator_for(whole)
    cls.check_schema(root)
    checker: Validator = cls(root)
    return checker


def check(version: str, definition: str, instance: Any) -> None:
    """Fail unless ``instance`` is a valid ``definition`` of protocol ``version``."""
    errors = sorted(validator(version, definition).iter_errors(instance), key=str)
    if errors:
        shown = "\n".join(
            f"- at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
            for e in errors[:10]
        )
        raise AssertionError(
            f"not a valid {definition} of MCP {version}:\n{shown}\n"
            f"in: {json.dumps(instance)[:2000]}"
        )


def response_definition(version: str, error: bool = False) -> str:
    """The JSON-RPC response definition's name in ``version`` (it was renamed)."""
    if version == "2025-06-18":
        return "JSONRPCError" if error else "JSONRPCResponse"
    return "JSONRPCErrorResponse" if error else "JSONRPCResultResponse"
