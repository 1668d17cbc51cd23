"""Serve one connector's tools over MCP (stdio), as ``reversi-connectors serve NAME`` does.

Each manifest becomes an MCP tool: its name, description, input schema and output
schema (:func:`output_schema`: the tool's result, or the error object of a failed
call), MCP tool annotations derived from its effect, and Reversi's own declarations
under ``_meta`` (``reversi/effect``, ``reversi/permission``, ``reversi/approval``,
``reversi/compensation``, ``reversi/requires``).

A ``tools/call`` runs :meth:`reversi_core.connector.Connector.call`. Its outcome is
always a ``CallToolResult`` (never a JSON-RPC error), and ``_meta["reversi/outcome"]``
says which of three outcomes it was, so that a gateway in front of this server can
journal the step correctly:

* ``succeeded``: ``structuredContent`` is the tool's JSON result, and one text block
  holds the same JSON.
* ``failed``: ``isError`` is true; the backend did not change. ``structuredContent`` is
  ``{"error": {"type": "tool_error" | "rejected", "message", "status", "code"}}``.
* ``uncertain``: ``isError`` is true; the write may or may not have happened.
  ``structuredContent`` is ``{"error": {"type": "uncertain", "message", "status", "code"}}``.

Every message and result is scrubbed of registered secrets. See ``docs/mcp.md``.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from ..__about__ import __version__
from ..connector import CallContext, Connector
from ..errors import (
    ApprovalDenied,
    CallRejected,
    EffectUncertainError,
    InvalidArgumentsError,
    PermissionDenied,
    ToolError,
    UnknownToolError,
)
from ..manifest import Effect, Manifest
from ..redact import scrub, scrub_json

__all__ = [
    "ERROR_SCHEMA",
    "IDEMPOTENCY_KEY_META",
    "OUTCOME_META",
    "RUN_ID_META",
    "STEP_META",
    "build_server",
    "call_result",
    "output_schema",
    "serve_stdio",
    "tool_annotations",
    "tool_definition",
]

OUTCOME_META = "reversi/outcome"
"""``_meta`` key of a ``CallToolResult``: ``"succeeded"``, ``"failed"`` or ``"uncertain"``."""

IDEMPOTENCY_KEY_META = "reversi/idempotency_key"
"""``_meta`` key of a ``tools/call`` request: the idempotency key the tool receives."""

RUN_ID_META = "reversi/run_id"
"""``_meta`` key of a ``tools/call`` request: the caller's run id (optional)."""

STEP_META = "reversi/step"
"""``_meta`` key of a ``tools/call`` request: the caller's step number (optional)."""


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A failed call (isError true); _meta['reversi/outcome'] says whether the "
    "backend may have changed ('uncertain') or not ('failed').",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "type": {
                    "type": "string",
                    "description": "tool_error (the backend refused), rejected (refused before "
                    "the tool ran) or uncertain (the write may or may not have happened)",
                },
                "message": {"type": "string"},
                "status": {"type": ["integer", "null"], "description": "the vendor's HTTP status"},
                "code": {"type": ["string", "null"], "description": "a short error code"},
                "problems": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "invalid_arguments: one problem per field",
                },
            },
            "required": ["type", "message"],
        }
    },
    "required": ["error"],
    "additionalProperties": False,
}
"""The ``structuredContent`` of a failed call: ``{"error": {"type", "message", "status", "code"}}``."""


def output_schema(manifest: Manifest) -> dict[str, Any] | None:
    """The MCP ``outputSchema`` of a tool: its result (the manifest's) or :data:`ERROR_SCHEMA`.

    MCP says the ``structuredContent`` of a tool with an output schema conforms to it
    (https://modelcontextprotocol.io/specification/2025-06-18/server/tools#output-schema),
    and some clients (the TypeScript SDK) check it on failed calls too, which carry
    ``{"error": ...}`` here. So the schema is ``{"type": "object", "anyOf": [result,
    error]}``, the result's ``$defs`` moved to the root so that its ``$ref`` still
    resolve. ``None`` for a manifest that declares no output schema.
    """
    result = manifest.output_schema
    if result is None:
        return None
    out: dict[str, Any] = {
        "type": "object",
        "anyOf": [{k: v for k, v in result.items() if k != "$defs"}, ERROR_SCHEMA],
    }
    if "$defs" in result:
        out["$defs"] = result["$defs"]
    return out


def tool_annotations(manifest: Manifest, *, open_world: bool = True) -> types.ToolAnnotations:
    """The MCP hints for a tool, from its effect alone.

    ``readOnlyHint`` only for ``read_only``. ``destructiveHint`` is false only for
    ``read_only``: whether a write is purely additive cannot be told from the effect, so
    every writing tool keeps MCP's cautious default of true. ``idempotentHint`` for
    ``read_only`` and ``idempotent``. ``openWorldHint`` is the connector's ``open_world``.
    """
    effect = manifest.effect
    return types.ToolAnnotations(
        read_only_hint=effect is Effect.READ_ONLY,
        destructive_hint=effect is not Effect.READ_ONLY,
        idempotent_hint=effect in (Effect.READ_ONLY, Effect.IDEMPOTENT),
        open_world_hint=open_world,
    )


def tool_definition(manifest: Manifest, *, open_world: bool = True) -> types.Tool:
    """The MCP ``Tool`` for a manifest (see the module docstring)."""
    data = manifest.to_json()
    return types.Tool(
        name=manifest.name,
        description=manifest.description or None,
        input_schema=manifest.input_schema,
        output_schema=output_schema(manifest),
        annotations=tool_annotations(manifest, open_world=open_world),
        _meta={
            "reversi/effect": manifest.effect.value,
            "reversi/permission": manifest.permission,
            "reversi/approval": manifest.approval.value,
            "reversi/compensation": data["compensation"],
            "reversi/requires": data["requires"],
        },
    )


def _rejection_code(exc: CallRejected) -> str:
    if isinstance(exc, UnknownToolError):
        return "unknown_tool"
    if isinstance(exc, InvalidArgumentsError):
        return "invalid_arguments"
    if isinstance(exc, PermissionDenied):
        return "permission_denied"
    if isinstance(exc, ApprovalDenied):
        return "approval_denied"
    return "rejected"


def _error_result(outcome: str, error: dict[str, Any]) -> types.CallToolResult:
    error["message"] = scrub(str(error["message"]))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=error["message"])],
        structured_content={"error": error},
        is_error=True,
        _meta={OUTCOME_META: outcome},
    )


def call_result(
    outcome: dict[str, Any] | BaseException, *, writes: bool = True
) -> types.CallToolResult:
    """The ``CallToolResult`` for a tool's JSON result or the exception it raised.

    ``writes`` says whether the tool may change the backend: an unexpected exception
    from a writing tool is reported ``uncertain``, from a read-only one ``failed``.
    """
    if isinstance(outcome, dict):
        result = scrub_json(outcome)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result))],
            structured_content=result,
            is_error=False,
            _meta={OUTCOME_META: "succeeded"},
        )
    if isinstance(outcome, EffectUncertainError):
        return _error_result(
            "uncertain",
            {"type": "uncertain", "message": str(outcome), "status": None, "code": None},
        )
    if isinstance(outcome, ToolError):
        return _error_result("failed", outcome.to_json())
    if isinstance(outcome, CallRejected):
        error: dict[str, Any] = {
            "type": "rejected",
            "message": str(outcome),
            "status": None,
            "code": _rejection_code(outcome),
        }
        if isinstance(outcome, InvalidArgumentsError) and outcome.problems:
            error["problems"] = [scrub(p) for p in outcome.problems]
        return _error_result("failed", error)
    text = f"{type(outcome).__name__}: {outcome}"
    if writes:
        return _error_result(
            "uncertain",
            {
                "type": "uncertain",
                "message": f"unexpected error, outcome unknown: {text}",
                "status": None,
                "code": "unexpected",
            },
        )
    return _error_result(
        "failed",
        {
            "type": "tool_error",
            "message": f"unexpected error: {text}",
            "status": None,
            "code": "unexpected",
        },
    )


def _call_context(meta: Any) -> CallContext:
    """Read Reversi's optional keys from the request's ``_meta``; ignore ill-typed ones."""
    if not isinstance(meta, dict):
        return CallContext()
    key = meta.get(IDEMPOTENCY_KEY_META)
    run_id = meta.get(RUN_ID_META)
    step = meta.get(STEP_META)
    return CallContext(
        run_id=run_id if isinstance(run_id, str) else None,
        step=step if isinstance(step, int) and not isinstance(step, bool) else None,
        idempotency_key=key if isinstance(key, str) and key else None,
    )


def build_server(connector: Connector) -> Server[Any]:
    """A low-level MCP server exposing every tool of ``connector`` (not yet running)."""
    manifests = {m.name: m for m in connector.manifests()}
    tools = [tool_definition(m, open_world=type(connector).open_world) for m in manifests.values()]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        manifest = manifests.get(params.name)
        writes = manifest.writes if manifest is not None else False
        try:
            result = await connector.call(
                params.name, params.arguments or {}, _call_context(params.meta)
            )
        except Exception as exc:  # every outcome, including a bug, becomes a tool result
            return call_result(exc, writes=writes)
        return call_result(result, writes=writes)

    return Server(
        f"reversi-{connector.name}",
        version=__version__,
        instructions=(
            f"Tools of the Reversi {connector.name} connector. A failed call carries "
            "_meta['reversi/outcome'] = 'failed' (nothing changed) or 'uncertain' "
            "(the change may or may not have happened)."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(connector: Connector) -> None:
    """Serve ``connector`` on stdin/stdout until the client closes stdin; then close it."""
    server = build_server(connector)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await connector.aclose()
