"""The reference upstream of the conformance test: the tools the MCP conformance suite's
server scenarios call, on the MCP SDK's low-level server over stdio.

    python conformance_upstream.py serve        # speak MCP on stdin/stdout
    python conformance_upstream.py manifests    # print a Reversi manifest per tool

Each tool does what its scenario's description in ``@modelcontextprotocol/conformance``
asks (``test_simple_text`` answers one text block, ``test_tool_with_logging`` sends three
log messages, ``test_sampling`` asks its client to sample, ...). The manifests name the
tools ``conformance.<tool>`` (``reversi-gateway --tool-namespace conformance``), read-only,
with each tool's input schema exactly as listed, so that none drifts.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

# a 1x1 red PNG and a 1-sample WAV
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF"
    + (38).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little")
    + (2).to_bytes(2, "little")
    + (16).to_bytes(2, "little")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\0\0"
).decode()

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def _args(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": d} for name, d in props.items()},
        "required": list(props),
    }


TOOLS = [
    types.Tool(
        name="test_simple_text", description="Answers one text block.", input_schema=NO_ARGS
    ),
    types.Tool(name="test_image_content", description="Answers a PNG image.", input_schema=NO_ARGS),
    types.Tool(name="test_audio_content", description="Answers a WAV sound.", input_schema=NO_ARGS),
    types.Tool(
        name="test_embedded_resource",
        description="Answers an embedded resource.",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_multiple_content_types",
        description="Answers text, an image and a resource.",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_tool_with_logging", description="Logs three messages.", input_schema=NO_ARGS
    ),
    types.Tool(name="test_error_handling", description="Always fails.", input_schema=NO_ARGS),
    types.Tool(
        name="test_tool_with_progress", description="Reports its progress.", input_schema=NO_ARGS
    ),
    types.Tool(
        name="test_sampling",
        description="Asks its client to sample.",
        input_schema=_args(prompt="The prompt to send to the LLM"),
    ),
    types.Tool(
        name="test_elicitation",
        description="Asks its client's user.",
        input_schema=_args(message="The message to show the user"),
    ),
    types.Tool(
        name="test_elicitation_sep1034_defaults",
        description="Asks with defaults.",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_elicitation_sep1330_enums", description="Asks with enums.", input_schema=NO_ARGS
    ),
    types.Tool(
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        input_schema=SCHEMA_2020_12,
    ),
    types.Tool(
        name="test_reconnection",
        description="Takes a moment (its scenario closes the HTTP stream meanwhile).",
        input_schema=NO_ARGS,
    ),
]


def text(value: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=value)], is_error=error
    )


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    name, args, session = params.name, params.arguments or {}, ctx.session
    if name == "test_simple_text":
        return text("This is a simple text response for testing.")
    if name == "test_image_content":
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data=PNG, mime_type="image/png")]
        )
    if name == "test_audio_content":
        return types.CallToolResult(
            content=[types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]
        )
    if name == "test_embedded_resource":
        resource = types.TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return types.CallToolResult(
            content=[types.EmbeddedResource(type="resource", resource=resource)]
        )
    if name == "test_multiple_content_types":
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}),
        )
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="Multiple content types test:"),
                types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                types.EmbeddedResource(type="resource", resource=resource),
            ]
        )
    if name == "test_tool_with_logging":
        for message in (
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ):
            await session.send_log_message("info", message, related_request_id=ctx.request_id)
            await anyio.sleep(0.05)
        return text("Tool with logging executed successfully")
    if name == "test_error_handling":
        return text("This tool intentionally returns an error for testing", error=True)
    if name == "test_tool_with_progress":
        token = params.meta.get("progressToken") if params.meta else None
        for progress in (0, 50, 100):
            if token is not None:
                await session.send_progress_notification(
                    token, progress, 100, related_request_id=str(ctx.request_id)
                )
            await anyio.sleep(0.05)
        return text(f"Tool with progress executed successfully (token {token})")
    if name == "test_sampling":
        try:
            sampled = await session.create_message(
                [
                    types.SamplingMessage(
                        role="user", content=types.TextContent(type="text", text=args["prompt"])
                    )
                ],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )
        except Exception as exc:
            return text(f"sampling failed: {exc}", error=True)
        content = sampled.content
        reply = content.text if isinstance(content, types.TextContent) else str(content)
        return text(f"LLM response: {reply}")
    if name.startswith("test_elicitation"):
        return await elicit(ctx, name, args)
    if name == "json_schema_2020_12_tool":
        return text(f"received {json.dumps(args, sort_keys=True)}")
    if name == "test_reconnection":
        await anyio.sleep(0.2)
        return text("Reconnection test completed")
    return text(f"unknown tool {name}", error=True)


async def elicit(
    ctx: ServerRequestContext[Any], name: str, args: dict[str, Any]
) -> types.CallToolResult:
    if name == "test_elicitation":
        message = args["message"]
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
    elif name == "test_elicitation_sep1034_defaults":
        message = "Please review and update the form fields with defaults"
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {
                    "type": "string",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "default": True},
            },
        }
    else:
        message = "Please select options from the enum fields"
        schema = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
        }
    try:
        answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    except Exception as exc:
        return text(f"elicitation failed: {exc}", error=True)
    done = f"action={answer.action}, content={json.dumps(answer.content)}"
    if name == "test_elicitation":
        return text(f"User response: <{done}>")
    return text(f"Elicitation completed: {done}")


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


def manifests() -> list[dict[str, Any]]:
    """A Reversi manifest per tool, in the ``conformance`` namespace."""
    return [
        {
            "name": f"conformance.{tool.name}",
            "description": tool.description or "",
            "effect": "read_only",
            "permission": "conformance:call",
            "input_schema": tool.input_schema,
        }
        for tool in TOOLS
    ]


async def serve() -> None:
    server = Server("conformance-reference", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1:] == ["manifests"]:
        print(json.dumps(manifests(), indent=2))
    else:
        anyio.run(serve)
