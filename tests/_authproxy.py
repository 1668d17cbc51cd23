"""A forwarding proxy that adds the gateway's bearer token, for clients that cannot send one.

The MCP conformance suite connects to a server URL with no way to add a header; the
gateway refuses every request without its token. :class:`AuthProxy` listens on
``127.0.0.1`` (a free port), forwards each request to the gateway unchanged but for
``Authorization: Bearer <token>`` and streams the answer back (SSE included). ``Host``
and ``Origin`` are passed on, with the proxy's own port replaced by the gateway's, so
that the gateway's DNS-rebinding checks see what the client sent: ``localhost:<proxy
port>`` arrives as ``localhost:<gateway port>``, ``evil.example.com`` as itself.
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import suppress
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn

HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"content-length"}


class AuthProxy:
    """See the module docstring; ``url`` is the proxy's ``/mcp`` once :meth:`start` returns."""

    def __init__(self, target: str, token: str) -> None:
        self.target = target
        self.token = token
        parts = urlsplit(target)
        self._target_port = str(parts.port)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = str(self._sock.getsockname()[1])
        self.url = f"http://localhost:{self.port}{parts.path}"
        config = uvicorn.Config(
            self.app,
            interface="asgi3",
            lifespan="off",
            access_log=False,
            log_level="warning",
            proxy_headers=False,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name="auth-proxy", daemon=True)

    def _serve(self) -> None:
        self._server.run(sockets=[self._sock])

    def start(self) -> AuthProxy:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()

    def _swap_port(self, value: bytes) -> bytes:
        text = value.decode("latin-1")
        suffix = f":{self.port}"
        if text.endswith(suffix):
            text = text[: -len(suffix)] + f":{self._target_port}"
        return text.encode("latin-1")

    async def app(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers: list[tuple[bytes, bytes]] = []
        for name, value in scope["headers"]:
            if name in HOP or name == b"authorization":
                continue
            if name in (b"host", b"origin"):
                value = self._swap_port(value)
            headers.append((name, value))
        headers.append((b"authorization", f"Bearer {self.token}".encode()))
        url = self.target
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode()
        async with httpx.AsyncClient(timeout=None) as client:
            request = client.build_request(scope["method"], url, headers=headers, content=body)
            response = await client.send(request, stream=True)
            try:
                out = [(k.lower(), v) for k, v in response.headers.raw if k.lower() not in HOP]
                await send(
                    {"type": "http.response.start", "status": response.status_code, "headers": out}
                )
                with suppress(httpx.TransportError):  # the gateway ended the stream: end ours
                    async for chunk in response.aiter_raw():
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                await response.aclose()
