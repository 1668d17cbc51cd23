"""``reversi-gateway --listen`` as a child process of a test, and MCP clients of it.

:class:`GatewayProcess` starts the gateway on ``127.0.0.1:0`` (the system picks a free
port), waits for the ``listening on http://...`` line on its stderr and stops it with
SIGTERM. :func:`client` is an MCP SDK client of it over streamable HTTP, in the
protocol version asked for (``"legacy"``: the newest handshake version the SDK speaks,
or a 2026-07-28 pin).
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

BIN = Path(sys.executable).parent
GATEWAY = str(BIN / "reversi-gateway") if (BIN / "reversi-gateway").exists() else "reversi-gateway"
LISTENING = re.compile(r"listening on (http://\S+/mcp)")


def new_token() -> str:
    """A fresh bearer token for one gateway."""
    return secrets.token_urlsafe(24)


class GatewayProcess:
    """One ``reversi-gateway --listen 127.0.0.1:0`` process; ``url`` once it listens."""

    def __init__(
        self, argv: list[str], errlog: Path, *, token: str, env: Mapping[str, str] | None = None
    ) -> None:
        self.token = token
        self.errlog = errlog
        environ = dict(os.environ if env is None else env)
        environ["REVERSI_GATEWAY_TOKEN"] = token
        self._err = errlog.open("w")
        self.proc = subprocess.Popen(
            [GATEWAY, *argv, "--listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._err,
            env=environ,
        )
        self.url = self._wait_listening()

    def _wait_listening(self, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = LISTENING.search(self.stderr())
            if found:
                return found[1]
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"reversi-gateway exited {self.proc.returncode}:\n{self.stderr()}"
                )
            time.sleep(0.02)
        self.stop()
        raise AssertionError(f"reversi-gateway did not listen within {timeout} s:\n{self.stderr()}")

    @property
    def headers(self) -> dict[str, str]:
        """The ``Authorization`` header with the gateway's token."""
        return {"Authorization": f"Bearer {self.token}"}

    def stderr(self) -> str:
        return self.errlog.read_text()

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM the gateway (this test's own child) and return its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._err.close()
        return self.proc.returncode


@asynccontextmanager
async def client(
    url: str,
    headers: Mapping[str, str],
    mode: str = "legacy",
    *,
    name: str = "http-test",
    **options: Any,
) -> AsyncIterator[Client]:
    """An MCP SDK client of ``url`` speaking ``mode`` (``"legacy"`` or ``"2026-07-28"``)."""
    async with (
        httpx2.AsyncClient(headers=dict(headers), timeout=60) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,  # type: ignore[arg-type]
            client_info=types.Implementation(name=name, version="1"),
            **options,
        ) as mcp,
    ):
        yield mcp


def mcp_headers(version: str | None = None) -> dict[str, str]:
    """What a streamable HTTP POST carries besides the token."""
    out = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if version is not None:
        out["MCP-Protocol-Version"] = version
    return out
