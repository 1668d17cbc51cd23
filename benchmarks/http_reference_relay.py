#!/usr/bin/env python
"""Reference HTTP relays for ``http_gateway_overhead.py --reference``: how cheap can an
HTTP proxy in Python be on this machine?

Two deliberately minimal relays in front of one MCP streamable HTTP upstream, timed
beside ``reversi-gateway --listen`` in the same run, so that the gateway's overhead can
be read against what any Python HTTP proxy costs here:

``copy``
    For each client connection, one connection to the upstream and the bytes copied
    both ways (asyncio streams, no parsing). What a relay costs before it looks at a
    request: one more process, two more loopback hops per call.

``journal``
    The least a journaling HTTP proxy must do, and nothing else: parse each request
    (``httptools``, a C parser) and its JSON body (``orjson``); for a ``tools/call``,
    check the arguments against the tool's input schema (the manifests' own, compiled
    by ``fastjsonschema``, as the gateway's first check); for a writing tool commit the
    intent to SQLite (WAL mode, ``synchronous=NORMAL``) *before* forwarding it, and on
    the answer (read whole, its JSON or its event stream parsed) commit the outcome
    before answering; for a read-only tool, answer first and then journal the step in
    one commit. The request and the answer are forwarded as they came, byte for byte
    (no ``_meta`` added, nothing re-encoded), on one keep-alive upstream connection per
    client connection. No token, no ``Host``/``Origin`` check, no protocol versions, no
    scope, approval, redaction, ``requires`` edges, compensation, timeouts, cancellation
    or error handling: it is not safe to use, only a lower bound for what the gateway
    does with every call.

Usage (the benchmark starts these)::

    python http_reference_relay.py copy|journal UPSTREAM_URL URL_FILE
        [--manifests DIR --data DIR]

Listens on 127.0.0.1, a port the system picks, written to ``URL_FILE`` as
``http://127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import fastjsonschema
import httptools
import orjson


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


class Message:
    """One HTTP message read by httptools: its head's headers and its body."""

    def __init__(self) -> None:
        self.headers: dict[bytes, bytes] = {}
        self.body: list[bytes] = []
        self.complete = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


async def read_message(
    reader: asyncio.StreamReader, parser_class: Any, relay_to: asyncio.StreamWriter | None
) -> tuple[Message, bytes] | None:
    """Read one message; its raw bytes are returned, or written to ``relay_to`` as they
    come (an answer's event stream that stays open must flow)."""
    message = Message()
    parser = parser_class(message)
    raw: list[bytes] = []
    while not message.complete:
        chunk = await reader.read(65536)
        if not chunk:
            return None
        parser.feed_data(chunk)
        if relay_to is not None:
            relay_to.write(chunk)
        else:
            raw.append(chunk)
    return message, b"".join(raw)


class Journal:
    """The relay's journal: one run, one row per step, intent and outcome."""

    def __init__(self, manifests: Path, data: Path) -> None:
        self.check: dict[str, Any] = {}
        self.read_only: set[str] = set()
        for path in sorted(manifests.glob("*.json")):
            loaded = json.loads(path.read_text(encoding="utf-8"))
            for manifest in loaded if isinstance(loaded, list) else [loaded]:
                self.check[manifest["name"]] = fastjsonschema.compile(manifest["input_schema"])
                if manifest["effect"] == "read_only":
                    self.read_only.add(manifest["name"])
        data.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(data / "relay.sqlite3", isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS steps (seq INTEGER PRIMARY KEY, tool TEXT, "
            "arguments TEXT, state TEXT, result TEXT, started REAL, ended REAL)"
        )

    def begin(self, tool: str, arguments: bytes) -> int:
        cursor = self.db.execute(
            "INSERT INTO steps (tool, arguments, state, started) VALUES (?, ?, 'pending', ?)",
            (tool, arguments.decode(), time.time()),
        )
        return int(cursor.lastrowid or 0)

    def finish(self, seq: int, state: str, result: bytes) -> None:
        self.db.execute(
            "UPDATE steps SET state = ?, result = ?, ended = ? WHERE seq = ?",
            (state, result.decode(), time.time(), seq),
        )

    def record(self, tool: str, arguments: bytes, state: str, result: bytes) -> None:
        now = time.time()
        self.db.execute(
            "INSERT INTO steps (tool, arguments, state, result, started, ended) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (tool, arguments.decode(), state, result.decode(), now, now),
        )


def outcome(answer: Message) -> tuple[str, bytes]:
    """The step's state from the upstream's answer (a JSON body or an event stream)."""
    body = b"".join(answer.body)
    if answer.headers.get(b"content-type", b"").startswith(b"text/event-stream"):
        data = [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:")]
        body = data[-1] if data else b"{}"
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "uncertain", body
    result = message.get("result") if isinstance(message, dict) else None
    if not isinstance(result, dict):
        return "failed", body
    return ("failed" if result.get("isError") else "succeeded"), body


async def journaling(
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
    upstream: tuple[str, int],
    journal: Journal,
) -> None:
    up_r, up_w = await asyncio.open_connection(*upstream)
    try:
        while True:
            got = await read_message(client_r, httptools.HttpRequestParser, None)
            if got is None:
                return
            request, raw = got
            call: dict[str, Any] | None = None
            if request.body:
                message = orjson.loads(b"".join(request.body))
                if isinstance(message, dict) and message.get("method") == "tools/call":
                    call = message["params"]
            if call is None:  # anything else: forwarded, the answer streamed back
                up_w.write(raw)
                if await read_message(up_r, httptools.HttpResponseParser, client_w) is None:
                    return
                continue
            tool, arguments = call["name"], call.get("arguments") or {}
            journal.check[tool](arguments)  # raises on invalid arguments: not handled
            encoded = orjson.dumps(arguments)
            seq = None if tool in journal.read_only else journal.begin(tool, encoded)
            up_w.write(raw)
            answered = await read_message(up_r, httptools.HttpResponseParser, None)
            if answered is None:
                return
            answer, raw_answer = answered
            state, result = outcome(answer)
            if seq is not None:
                journal.finish(seq, state, result)
                client_w.write(raw_answer)
            else:
                client_w.write(raw_answer)
                journal.record(tool, encoded, state, result)
    except (ConnectionError, OSError):
        pass
    finally:
        up_w.close()
        client_w.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("copy", "journal"))
    parser.add_argument("upstream_url")
    parser.add_argument("url_file")
    parser.add_argument("--manifests", type=Path)
    parser.add_argument("--data", type=Path)
    args = parser.parse_args()
    parts = urlsplit(args.upstream_url)
    upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
    journal = Journal(args.manifests, args.data) if args.mode == "journal" else None
    # proto IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only then
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if journal is not None:
            await journaling(reader, writer, upstream, journal)
            return
        up_r, up_w = await asyncio.open_connection(*upstream)
        await asyncio.gather(pump(reader, up_w), pump(up_r, writer))

    async def run() -> None:
        server = await asyncio.start_server(serve, sock=sock)
        async with server:
            await server.serve_forever()

    # connections wait in the backlog until it serves
    Path(args.url_file).write_text(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
