#!/usr/bin/env python
"""How much faster a rollback is with compensations in parallel, against a backend with latency.

Run from the repository root, with reversi-core installed (``pip install -e
packages/reversi-core``)::

    python benchmarks/rollback_parallel.py                 # 1,000 steps, 20 ms per compensation
    python benchmarks/rollback_parallel.py --steps 200     # a quick look
    python benchmarks/rollback_parallel.py --also 4 16     # other limits too, for information
    python benchmarks/rollback_parallel.py --http          # the backend behind loopback HTTP

A report, not a test: it prints its figures and exits 0 whatever they are; 1 only when
something breaks or the rollbacks do not all end the same way.

The backend holds items: a put stores one at once, a delete removes it and answers after
``--latency`` seconds (20 ms), as a vendor's API across a network would. A ``bench``
connector, defined here, puts items and is undone by deleting them; its compensation
declares ``bench:{args.key}``, so every step is on a resource of its own. By default the
backend lives in the benchmark's process and a delete awaits its latency, so that the
figures are the rollback's own (its order, its journal writes) and not an HTTP client's.
With ``--http`` it is a small HTTP/1.1 server on ``127.0.0.1`` in a process of its own,
reached through ``httpx``; on a machine that is busy or has few cores, that measures
mostly the client's cost and the scheduling of the two processes.

For each limit (``--parallel 1``, the default of ``Run.rollback``, and any ``--also``),
in a journal of its own: ``--steps`` journaled calls through ``Run.call`` (not timed),
then ``Run.rollback(parallel=N)`` timed with ``time.perf_counter``. Each outcome (every
step's rollback state and reason, and the items left in the backend) must equal that of
``--parallel 1``. It prints the seconds of each, the speed-up over ``--parallel 1``
(the target of docs/performance.md is at least 8x for the default), and the ceiling: N
compensations at once cannot be more than N times faster, apart from the time that
``--parallel 1`` spends between compensations, which the parallel rollback spends while
others wait.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx
from pydantic import BaseModel, ConfigDict

from reversi_core import (
    CallContext,
    Compensation,
    Connector,
    Run,
    SQLiteJournal,
    compensator_for,
    executor_for,
    registry_for,
    tool,
)
from reversi_core.engine import DEFAULT_PARALLEL
from reversi_core.manifest import Effect

# -- the backend (run with --serve, in its own process) ------------------------------------


async def serve(latency: float) -> None:
    """Serve the items on 127.0.0.1 (a free port, printed on stdout) until stdin closes."""
    items: dict[str, int] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                if length:
                    await reader.readexactly(length)
                path, _, query = target.partition("?")
                status = 404
                body: dict[str, Any] = {"error": "not found"}
                if path.startswith("/items/") and method == "PUT":
                    key = path[len("/items/") :]
                    items[key] = items.get(key, 0) + 1
                    status, body = 200, {"key": key, "version": items[key]}
                elif path.startswith("/items/") and method == "DELETE":
                    await asyncio.sleep(latency)
                    key = path[len("/items/") :]
                    status, body = 200, {"key": key, "deleted": items.pop(key, None) is not None}
                elif path == "/items" and method == "GET":
                    prefix = query.partition("prefix=")[2]
                    status, body = 200, {"keys": sorted(k for k in items if k.startswith(prefix))}
                data = json.dumps(body).encode()
                writer.write(
                    f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the benchmark closes stdin
    server.close()


# -- the connector ------------------------------------------------------------------------------


class KeyArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str


class PutResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str
    version: int


class DeleteResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str
    deleted: bool


class MemoryBackend:
    """The items, in this process: a delete answers after ``latency`` seconds."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.items: dict[str, int] = {}

    async def put(self, key: str) -> dict[str, Any]:
        self.items[key] = self.items.get(key, 0) + 1
        return {"key": key, "version": self.items[key]}

    async def delete(self, key: str) -> dict[str, Any]:
        await anyio.sleep(self.latency)
        return {"key": key, "deleted": self.items.pop(key, None) is not None}

    async def keys(self, prefix: str) -> list[str]:
        return sorted(k for k in self.items if k.startswith(prefix))

    async def aclose(self) -> None:
        return None


class HttpBackend:
    """The items behind the ``--serve`` process, through ``httpx``."""

    def __init__(self, url: str) -> None:
        self.client = httpx.AsyncClient(base_url=url, timeout=30)

    async def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        resp = await self.client.request(method, path, **kwargs)
        resp.raise_for_status()
        result: dict[str, Any] = resp.json()
        return result

    async def put(self, key: str) -> dict[str, Any]:
        return await self._json("PUT", f"/items/{key}")

    async def delete(self, key: str) -> dict[str, Any]:
        return await self._json("DELETE", f"/items/{key}")

    async def keys(self, prefix: str) -> list[str]:
        keys: list[str] = (await self._json("GET", "/items", params={"prefix": prefix}))["keys"]
        return keys

    async def aclose(self) -> None:
        await self.client.aclose()


Backend = MemoryBackend | HttpBackend


class BenchConnector(Connector):
    """Items on the benchmark's backend; ``bench.put`` is undone by ``bench.delete``."""

    name = "bench"

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> BenchConnector:
        return cls(options["backend"])

    @tool(
        effect=Effect.REVERSIBLE,
        permission="bench:write",
        input=KeyArgs,
        output=PutResult,
        compensation=Compensation(
            tool="bench.delete", argument_map={"key": "args.key"}, resources=["bench:{args.key}"]
        ),
    )
    async def put(self, args: KeyArgs, ctx: CallContext) -> dict[str, Any]:
        """Store an item."""
        return await self.backend.put(args.key)

    @tool(effect=Effect.IDEMPOTENT, permission="bench:delete", input=KeyArgs, output=DeleteResult)
    async def delete(self, args: KeyArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete an item (answers after the backend's latency)."""
        return await self.backend.delete(args.key)


# -- one measurement ----------------------------------------------------------------------------

Outcome = tuple[list[tuple[int, str | None, str | None]], list[str]]


async def measure(backend: Backend, data: Path, steps: int, parallel: int) -> tuple[float, Outcome]:
    """Journal ``steps`` puts, roll them back with ``parallel``: (seconds, outcome)."""
    bench = BenchConnector(backend)
    prefix = f"p{parallel}-"
    with SQLiteJournal.open(data) as journal:
        run = Run.start(journal, registry_for([bench]), executor=executor_for([bench]))
        for i in range(steps):
            await run.call("bench.put", {"key": f"{prefix}{i:05d}"})
        compensate = compensator_for([bench])
        began = time.perf_counter()
        report = await run.rollback(compensate=compensate, parallel=parallel)
        seconds = time.perf_counter() - began
        states = [
            (s.seq, s.rollback_state.value if s.rollback_state else None, s.rollback_reason)
            for s in report.steps
        ]
    if not report.complete:
        raise SystemExit(f"the rollback with --parallel {parallel} is incomplete")
    return seconds, (states, await backend.keys(prefix))


async def measure_all(
    args: argparse.Namespace, url: str | None, limits: list[int], tmp: Path
) -> dict[int, tuple[float, Outcome]]:
    backend: Backend = HttpBackend(url) if url else MemoryBackend(args.latency)
    try:
        return {n: await measure(backend, tmp / f"p{n}", args.steps, n) for n in limits}
    finally:
        await backend.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="steps in the run (default 1000)")
    parser.add_argument(
        "--latency", type=float, default=0.020, help="seconds each compensation takes (0.020)"
    )
    parser.add_argument(
        "--also", type=int, nargs="*", default=[], metavar="N", help="other limits to time"
    )
    parser.add_argument(
        "--http", action="store_true", help="put the backend behind loopback HTTP, in a process"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(serve(args.latency))
        return 0
    server = None
    url = None
    if args.http:
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--latency", str(args.latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}"
    try:
        limits = [1, DEFAULT_PARALLEL, *[n for n in args.also if n not in (1, DEFAULT_PARALLEL)]]
        where = f"over loopback HTTP (backend pid {server.pid})" if server else "in this process"
        print(
            f"rollback of {args.steps} steps on independent resources, each compensation "
            f"answered after {args.latency * 1000:g} ms, the backend {where} "
            f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f})"
        )
        with tempfile.TemporaryDirectory() as tmp:
            results = anyio.run(measure_all, args, url, limits, Path(tmp))
        base_seconds, base_outcome = results[1]
        same = True
        for n, (seconds, outcome) in results.items():
            ok = outcome == base_outcome
            same = same and ok
            label = (
                "--parallel 1"
                if n == 1
                else f"--parallel {n}" + (" (the default)" if n == DEFAULT_PARALLEL else "")
            )
            print(
                f"  {label:<28} {seconds:7.2f} s  {base_seconds / seconds:5.2f}x  "
                f"(ceiling {min(n, args.steps)}x)  "
                f"{'same outcome' if ok else 'OUTCOME DIFFERS'}: {len(outcome[0])} steps "
                f"compensated, {len(outcome[1])} items left"
            )
        ideal = args.steps * args.latency
        print(
            f"  the latency alone, one at a time: {ideal:.2f} s; overhead per step with "
            f"--parallel 1: {(base_seconds - ideal) / args.steps * 1000:.2f} ms"
        )
        speedup = base_seconds / results[DEFAULT_PARALLEL][0]
        print(f"speed-up with the default ({DEFAULT_PARALLEL}): {speedup:.2f}x (target >= 8x)")
        return 0 if same else 1
    finally:
        if server is not None and server.stdin is not None:
            server.stdin.close()
            server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
