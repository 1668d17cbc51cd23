#!/usr/bin/env python
"""The least MCP server the SDK makes: a reference for start-up time, not for use.

``mcp.server.lowlevel.Server`` with one tool (``fs.read_file``, answering a fixed text)
on the SDK's own ``stdio_server``, as the SDK's documentation writes it, and nothing of
Reversi. ``gateway_overhead.py --reference`` times its spawn to the answer of the first
``tools/list`` beside ``reversi-connectors serve fs``: what start-up any server built on
the MCP SDK has on the machine (docs/performance.md).

    python benchmarks/bare_sdk_server.py      # speaks MCP on stdin/stdout
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOL = types.Tool(
    name="fs.read_file",
    description="Answers a fixed text (a reference server for start-up time).",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[TOOL])


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="hello")])


async def main() -> None:
    server: Server[Any] = Server(
        "bare-sdk-server", on_list_tools=list_tools, on_call_tool=call_tool
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
