#!/usr/bin/env python
"""``reversi-connectors serve fs`` over streamable HTTP: the upstream of the HTTP benchmark.

    python benchmarks/http_fs_server.py ROOT URL_FILE

Serves the fs connector rooted at ``ROOT`` with :func:`reversi_core.mcp.serve.build_server`
(the server ``reversi-connectors serve`` runs over stdio) on the MCP SDK's streamable HTTP
transport (``StreamableHTTPSessionManager``, uvicorn) at ``http://127.0.0.1:PORT/mcp``,
PORT chosen by the system and written to ``URL_FILE`` once the socket listens. Both the
direct client and the gateway of ``http_gateway_overhead.py`` talk to this one process.
Plain HTTP on the loopback address, no token: it is a benchmark fixture, not a server to
deploy.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import anyio
import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from reversi_core.connector import load_connector_class
from reversi_core.mcp.serve import build_server


def bind() -> socket.socket:
    """A listening socket on 127.0.0.1, a port the system picks."""
    # proto IPPROTO_TCP: asyncio sets TCP_NODELAY on the accepted sockets only then
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


async def serve(root: str, sock: socket.socket) -> None:
    connector = load_connector_class("fs").from_env(os.environ, root=root)
    manager = StreamableHTTPSessionManager(build_server(connector))
    config = uvicorn.Config(
        manager.handle_request,
        interface="asgi3",
        lifespan="off",
        access_log=False,
        log_level="warning",
        proxy_headers=False,
    )
    async with manager.run():
        await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    listening = bind()
    # connections wait in the backlog until it serves
    Path(sys.argv[2]).write_text(f"http://127.0.0.1:{listening.getsockname()[1]}/mcp")
    anyio.run(serve, sys.argv[1], listening)
