"""Reference relays for ``gateway_overhead.py --reference``: how cheap can a proxy be?

Two deliberately minimal MCP stdio relays, timed beside the gateway in the same run so
that its overhead can be read against what any Python proxy on this machine costs:

``copy``
    Copies bytes both ways between the client and the upstream (two threads, blocking
    reads, no parsing). What a relay costs before it looks at a message.

``journal``
    The least a journaling proxy must do, and nothing else: parse each client line; for
    a ``tools/call``, check the arguments against the tool's input schema (the
    manifests' own, compiled with ``fastjsonschema``); for a writing tool commit the
    intent to SQLite (WAL mode, the durability given) *before* forwarding it, and on the
    answer, add ``_meta`` and commit the outcome before answering; for a read-only tool,
    answer first and then journal the step in one commit (docs/engine.md, CALL-4),
    without an fsync of its own under ``power``, as the gateway does. No scope,
    approval, redaction, ``requires`` edges, compensation, timeouts, cancellation,
    restarts or error handling: it is not safe to use, only a lower bound for what
    ``reversi-gateway`` does with every call.

``journal-loop``
    The same journaling relay, its lines read and written from the callbacks of an
    event loop (uvloop, as the gateway's) instead of two blocking threads: what the
    loop itself costs a relay that does the least, measured beside the threaded one.

    Because it is the lower bound, it uses the fastest well-kept libraries the gateway
    itself may use (the gateway uses both on its hot path): ``orjson`` to parse and
    encode JSON and ``fastjsonschema`` to check arguments. With the standard library's
    ``json`` and ``jsonschema`` it would be slower than the gateway and bound nothing.

Usage (the benchmark builds this)::

    python reference_relay.py copy|journal|journal-loop --manifests DIR --data DIR
        [--durability process|power] -- UPSTREAM-COMMAND [ARG...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import fastjsonschema
import orjson
import uvloop


def copy(src: BinaryIO, dst: int) -> None:
    """Copy ``src`` to the descriptor ``dst`` until end of file."""
    fd = src.fileno()
    while chunk := os.read(fd, 1 << 16):
        os.write(dst, chunk)


class JournalingRelay:
    """Intent before forwarding, outcome after; one client, one upstream, one run."""

    def __init__(
        self,
        manifests: Path,
        data: Path,
        durability: str,
        to_upstream: Callable[[bytes], Any],
        to_client: Callable[[bytes], Any],
    ) -> None:
        self.validators: dict[str, Any] = {}
        self.read_only: set[str] = set()
        for path in sorted(manifests.glob("*.json")):
            loaded = json.loads(path.read_text(encoding="utf-8"))
            for manifest in loaded if isinstance(loaded, list) else [loaded]:
                self.validators[manifest["name"]] = fastjsonschema.compile(manifest["input_schema"])
                if manifest["effect"] == "read_only":
                    self.read_only.add(manifest["name"])
        data.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(
            str(data / "reference.sqlite3"), isolation_level=None, check_same_thread=False
        )
        self.db.execute("PRAGMA journal_mode=WAL")
        self.power = durability == "power"
        self.db.execute(f"PRAGMA synchronous={'FULL' if self.power else 'NORMAL'}")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS steps (seq INTEGER PRIMARY KEY, tool TEXT NOT NULL, "
            "args TEXT NOT NULL, state TEXT NOT NULL, result TEXT)"
        )
        self.lock = threading.Lock()
        self.seq = 0
        self.pending: dict[int, tuple[Any, int, str, Any]] = {}
        self.to_upstream = to_upstream
        self.to_client = to_client

    def commit(self, tool: str, sql: str, params: tuple[Any, ...]) -> None:
        """One statement in its own transaction; a read's without an fsync under power."""
        light = self.power and tool in self.read_only
        if light:
            self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(sql, params)
        if light:
            self.db.execute("PRAGMA synchronous=FULL")

    def from_client(self, line: bytes) -> None:
        message = orjson.loads(line)
        params = message.get("params")
        if message.get("method") != "tools/call" or not isinstance(params, dict):
            self.to_upstream(line)
            return
        tool, args = params["name"], params.get("arguments") or {}
        self.validators[tool](args)
        with self.lock:
            self.seq += 1
            seq = self.seq
            if tool not in self.read_only:  # a read is journaled once, after it answered
                self.commit(
                    tool,
                    "INSERT INTO steps (seq, tool, args, state) VALUES (?, ?, ?, 'pending')",
                    (seq, tool, orjson.dumps(args).decode()),
                )
        wire_id = -seq  # our ids cannot collide with the client's own requests
        self.pending[wire_id] = (message["id"], seq, tool, args)
        message["id"] = wire_id
        self.to_upstream(orjson.dumps(message) + b"\n")

    def from_upstream(self, line: bytes) -> None:
        message = orjson.loads(line)
        known = self.pending.pop(message.get("id"), None)
        if known is None:
            self.to_client(line)
            return
        client_id, seq, tool, args = known
        result = message["result"]
        result.setdefault("_meta", {}).update({"reversi/step": seq})
        message["id"] = client_id
        answer = orjson.dumps(message) + b"\n"
        structured = orjson.dumps(result.get("structuredContent")).decode()
        if tool in self.read_only:
            self.to_client(answer)
            with self.lock:
                self.commit(
                    tool,
                    "INSERT INTO steps (seq, tool, args, state, result) "
                    "VALUES (?, ?, ?, 'succeeded', ?)",
                    (seq, tool, orjson.dumps(args).decode(), structured),
                )
            return
        with self.lock:
            self.commit(
                tool,
                "UPDATE steps SET state = 'succeeded', result = ? WHERE seq = ?",
                (structured, seq),
            )
        self.to_client(answer)


class Lines(asyncio.Protocol):
    """Hands each complete line of a pipe to ``handle``; ``ended`` is set at its end."""

    def __init__(self, handle: Callable[[bytes], None], ended: asyncio.Future[None]) -> None:
        self.held = b""
        self.handle = handle
        self.ended = ended

    def data_received(self, data: bytes) -> None:
        held = self.held + data
        while (end := held.find(b"\n")) >= 0:
            self.handle(held[: end + 1])
            held = held[end + 1 :]
        self.held = held

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ended.done():
            self.ended.set_result(None)


def on_loop(opts: argparse.Namespace, process: subprocess.Popen[bytes]) -> None:
    """Run the journaling relay from uvloop's callbacks until the client closes stdin."""
    assert process.stdin is not None
    assert process.stdout is not None
    upstream_in, upstream_out = process.stdin, process.stdout

    async def relay() -> None:
        loop = asyncio.get_running_loop()
        ended = loop.create_future()
        to_upstream, _ = await loop.connect_write_pipe(asyncio.Protocol, upstream_in)
        to_client, _ = await loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(1, "wb", buffering=0, closefd=False)
        )
        journaling = JournalingRelay(
            opts.manifests, opts.data, opts.durability, to_upstream.write, to_client.write
        )
        await loop.connect_read_pipe(
            lambda: Lines(journaling.from_upstream, loop.create_future()), upstream_out
        )
        await loop.connect_read_pipe(
            lambda: Lines(journaling.from_client, ended),
            os.fdopen(0, "rb", buffering=0, closefd=False),
        )
        await ended
        to_upstream.close()

    uvloop.run(relay())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["copy", "journal", "journal-loop"])
    parser.add_argument("--manifests", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--durability", choices=["process", "power"], default="process")
    argv = sys.argv[1:]
    if "--" not in argv:
        parser.error("give the upstream command after --")
    split = argv.index("--")
    opts = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        parser.error("give the upstream command after --")
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert process.stdin is not None
    assert process.stdout is not None
    client = os.fdopen(0, "rb", buffering=1 << 16)
    if opts.mode == "copy":
        threading.Thread(target=copy, args=(process.stdout, 1), daemon=True).start()
        copy(client, process.stdin.fileno())
    elif opts.mode == "journal-loop":
        on_loop(opts, process)  # closes the upstream's stdin at the end
        return process.wait()
    else:
        up = process.stdin.fileno()
        relay = JournalingRelay(
            opts.manifests,
            opts.data,
            opts.durability,
            lambda data: os.write(up, data),
            lambda data: os.write(1, data),
        )
        answers = os.fdopen(process.stdout.fileno(), "rb", buffering=1 << 16, closefd=False)

        def pump() -> None:
            for line in answers:
                relay.from_upstream(line)

        threading.Thread(target=pump, daemon=True).start()
        for line in client:
            relay.from_client(line)
    process.stdin.close()
    return process.wait()


if __name__ == "__main__":
    sys.exit(main())
