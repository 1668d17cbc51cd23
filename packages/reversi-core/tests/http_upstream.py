"""A Reversi connector served over streamable HTTP: the upstream of the HTTP tests.

    python http_upstream.py BOX_SCRIPT ROOT [--tls CERT KEY] [--token-env VAR]
                            [--handshake-only] [--port-file PATH]

``BOX_SCRIPT`` is the box connector of ``test_gateway.py`` (its ``Box`` class is
loaded from the file). It is served by :func:`reversi_core.mcp.serve.build_server`, the
server of ``reversi-connectors serve``, on the MCP SDK's streamable HTTP transport
(uvicorn) at ``http(s)://127.0.0.1:PORT/mcp``, PORT picked by the system and said on
stderr (``listening on URL``) and in ``--port-file``. ``--tls`` serves HTTPS with that
certificate; ``--token-env VAR`` requires ``Authorization: Bearer $VAR``;
``--handshake-only`` refuses the 2026-07-28 protocol (``400``, as a server of 2025
would), so that a client must use ``initialize``. Every request's method is appended to
``ROOT/../requests.log`` (``METHOD PATH mcp-method session-id``), for the tests to see what came.
"""

from __future__ import annotations

import argparse
import hmac
import importlib.util
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from reversi_core.mcp.serve import build_server


def load_box(script: str, root: str) -> Any:
    spec = importlib.util.spec_from_file_location("box", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Box(root)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("script")
    parser.add_argument("root")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--token-env")
    parser.add_argument("--handshake-only", action="store_true")
    parser.add_argument("--port-file")
    args = parser.parse_args()
    box = load_box(args.script, args.root)
    log = Path(args.root).parent / "requests.log"
    manager = StreamableHTTPSessionManager(build_server(box))
    expected = f"Bearer {os.environ[args.token_env]}".encode() if args.token_env else None

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        body = b""
        more = True
        messages = []
        while more:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            method = json.loads(body).get("method", "-") if body else "-"
        except (ValueError, AttributeError):
            method = "?"
        with log.open("a") as out:
            session = headers.get(b"mcp-session-id", b"-").decode()
            out.write(f"{scope['method']} {scope['path']} {method} {session}\n")
        if expected is not None and not hmac.compare_digest(
            headers.get(b"authorization", b""), expected
        ):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        version = headers.get(b"mcp-protocol-version", b"").decode()
        if args.handshake_only and version.startswith("2026"):
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no"}}
            await send(
                {
                    "type": "http.response.start",
                    "status": 400,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": json.dumps(error).encode()})
            return

        async def replay() -> Any:
            if messages:
                return messages.pop(0)
            return await receive()

        await manager.handle_request(scope, replay, send)

    # proto IPPROTO_TCP: asyncio sets TCP_NODELAY on the accepted sockets only then
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    ssl: dict[str, Any] = {}
    if args.tls:
        ssl = {"ssl_certfile": args.tls[0], "ssl_keyfile": args.tls[1]}
    config = uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning", **ssl)
    server = uvicorn.Server(config)
    url = f"{'https' if args.tls else 'http'}://127.0.0.1:{port}/mcp"
    if args.port_file:  # connections wait in the socket's backlog until it serves
        Path(args.port_file).write_text(url)  # noqa: ASYNC240 - before serving anything
    async with manager.run():
        print(f"listening on {url}", file=sys.stderr, flush=True)
        await server.serve(sockets=[sock])


if __name__ == "__main__":
    anyio.run(main)
