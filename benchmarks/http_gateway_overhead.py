#!/usr/bin/env python
"""What ``reversi-gateway --listen`` costs over HTTP, beside a direct HTTP connection.

Run from the repository root, with reversi-core and the fs connector installed::

    python benchmarks/http_gateway_overhead.py              # 500 calls per tool and target
    python benchmarks/http_gateway_overhead.py --calls 200 --json figures.json

One upstream, ``http_fs_server.py`` (the fs connector on the MCP SDK's streamable HTTP
transport), is called by the MCP SDK's HTTP client in one run:

* directly;
* through ``reversi-gateway --listen 127.0.0.1:0 --upstream-url <it>`` (``--durability
  process``, the default), the client sending the gateway's bearer token;

* with ``--reference``, through the two relays of ``http_reference_relay.py`` in front
  of the same upstream (``copy``: bytes copied both ways; ``journal``: the least a
  journaling HTTP proxy does), to show what any Python HTTP proxy costs on the machine;
* with ``--baseline CHECKOUT``, through a second gateway running another checkout of
  this repository, in front of the same upstream: a change beside its baseline;

for ``fs.read_file`` (4 KiB) and ``fs.write_file`` (1 KiB, cycling over 10 files), each
with a client of the handshake era (2025-11-25, a session) and one of 2026-07-28
(stateless). The gateway itself speaks 2026-07-28 to the upstream (it offers it). The
targets' calls are interleaved in blocks of 50, so that a machine that slows down part
way slows every target alike. Target: a call's median through the gateway at most 1.3x
direct, reads and writes. Also printed: each process's CPU time per call (client,
gateway, upstream) and the load average.

This is a report, not a test: it prints a table with PASS or MISS and exits 0 whether
or not a target is missed (1 only when something breaks). Everything listens on
127.0.0.1 only, in temporary directories. See docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
TARGET = 1.3
"""Gateway median / direct median, at most, for reads and writes."""
BLOCK = 50
CALL_TIMEOUT_S = 30.0
READ_PATH = "bench/read.txt"
READ_BYTES = 4096
WRITE_BYTES = 1024
MODES = ("legacy", "2026-07-28")
REFERENCE_RELAYS = ("copy", "journal")
RELAYS = (*REFERENCE_RELAYS, "baseline")


def executable(name: str) -> str:
    sibling = Path(sys.executable).parent / name
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found; install reversi-core and reversi-connector-fs")
    return found


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for(path: Path, proc: subprocess.Popen[bytes], what: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode}")
        time.sleep(0.02)
    raise RuntimeError(f"{what} did not start within {timeout} s")


@dataclass
class Target:
    """One (server, client era) pair the benchmark calls."""

    name: str
    url: str
    mode: str
    headers: dict[str, str]
    pids: tuple[int | None, int]
    """The gateway's process (``None`` for a direct target) and the upstream's."""
    client: Client | None = None
    latency: dict[str, list[float]] = field(default_factory=dict)
    cpu_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per tool: CPU milliseconds per call of the client, the gateway and the upstream."""


def make_root(base: Path) -> Path:
    root = base / "root"
    (root / "bench").mkdir(parents=True)
    line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    (root / READ_PATH).write_text((line * (READ_BYTES // len(line) + 1))[:READ_BYTES])
    return root


def read_args(i: int) -> dict[str, Any]:
    return {"path": READ_PATH}


def make_write_args(files: int) -> Callable[[int], dict[str, Any]]:
    filler = "x" * WRITE_BYTES

    def write_args(i: int) -> dict[str, Any]:
        stamp = f"call {i}\n"
        return {"path": f"bench/w{i % files:04d}.txt", "content": stamp + filler[len(stamp) :]}

    return write_args


async def call(client: Client, tool: str, args: dict[str, Any]) -> types.CallToolResult:
    with anyio.fail_after(CALL_TIMEOUT_S):
        result = await client.call_tool(tool, args)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return result


async def measure(targets: list[Target], calls: int, warmup: int, files: int) -> None:
    write_args = make_write_args(files)
    async with AsyncExitStack() as stack:
        for target in targets:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=target.headers, timeout=CALL_TIMEOUT_S)
            )
            target.client = await stack.enter_async_context(
                Client(
                    streamable_http_client(target.url, http_client=http),
                    mode=target.mode,  # type: ignore[arg-type]
                    cache=None,
                )
            )
            listed = {t.name for t in (await target.client.list_tools()).tools}
            if not {"fs.read_file", "fs.write_file"} <= listed:
                raise RuntimeError(f"{target.name}: the fs tools are not listed")
        for target in targets:
            assert target.client is not None
            for i in range(warmup):
                await call(target.client, "fs.read_file", read_args(i))
                last = await call(target.client, "fs.write_file", write_args(calls + i))
            if target.name.startswith("gateway") and "reversi/run" not in (last.meta or {}):
                raise RuntimeError(f"{target.name}: no reversi/run in the result's _meta")
        me = os.getpid()
        for tool, make_args in (("fs.read_file", read_args), ("fs.write_file", write_args)):
            spent = {t.name: [0.0, 0.0, 0.0] for t in targets}  # client, gateway, upstream
            for target in targets:
                target.latency[tool] = []
            for start in range(0, calls, BLOCK):
                for target in targets:
                    assert target.client is not None
                    before = cpu_of(me, target.pids)
                    for i in range(start, min(start + BLOCK, calls)):
                        args = make_args(i)
                        t0 = time.perf_counter()
                        await call(target.client, tool, args)
                        target.latency[tool].append(time.perf_counter() - t0)
                    after = cpu_of(me, target.pids)
                    for k in range(3):
                        spent[target.name][k] += after[k] - before[k]
            for target in targets:
                client, gateway, upstream = (x * 1e3 / calls for x in spent[target.name])
                target.cpu_ms[tool] = {"client": client, "gateway": gateway, "upstream": upstream}


def cpu_of(me: int, pids: tuple[int | None, int]) -> tuple[float, float, float]:
    """CPU seconds so far of this client, the gateway (0 when direct) and the upstream."""
    gateway, upstream = pids
    return cpu_seconds(me), cpu_seconds(gateway) if gateway else 0.0, cpu_seconds(upstream)


def report(targets: list[Target], args: argparse.Namespace) -> dict[str, Any]:
    load = os.getloadavg()
    print(
        f"HTTP gateway overhead: {args.calls} calls per tool and target, blocks of {BLOCK}; "
        f"python {platform.python_version()}, {os.cpu_count()} cpu, "
        f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    figures: dict[str, Any] = {"calls": args.calls, "load": load, "rows": []}
    by = {(t.name.split(" ")[0], t.mode): t for t in targets}
    print(
        f"{'client':<11} {'tool':<14} {'direct':>8} {'gateway':>8} {'ratio':>6} "
        f"{'p99 direct/gateway':>19}   CPU/call: direct client+upstream / "
        "gateway client+gateway+upstream"
    )
    for mode in MODES:
        direct, gateway = by[("direct", mode)], by[("gateway", mode)]
        for tool in ("fs.read_file", "fs.write_file"):
            d = statistics.median(direct.latency[tool])
            g = statistics.median(gateway.latency[tool])
            ratio = g / d
            row = {
                "client": mode,
                "tool": tool,
                "direct_median_ms": d * 1e3,
                "gateway_median_ms": g * 1e3,
                "ratio": ratio,
                "direct_p99_ms": p99(direct.latency[tool]) * 1e3,
                "gateway_p99_ms": p99(gateway.latency[tool]) * 1e3,
                "direct_cpu_ms": direct.cpu_ms[tool],
                "gateway_cpu_ms": gateway.cpu_ms[tool],
                "pass": ratio <= TARGET,
            }
            figures["rows"].append(row)
            dc, gc = direct.cpu_ms[tool], gateway.cpu_ms[tool]
            print(
                f"{mode:<11} {tool:<14} {d * 1e3:>6.2f}ms {g * 1e3:>6.2f}ms {ratio:>5.2f}x "
                f"{row['direct_p99_ms']:>9.2f}/{row['gateway_p99_ms']:<7.2f}ms  "
                f"{dc['client']:.2f}+{dc['upstream']:.2f} / "
                f"{gc['client']:.2f}+{gc['gateway']:.2f}+{gc['upstream']:.2f} ms  "
                f"{'PASS' if row['pass'] else 'MISS'} (<= {TARGET}x)"
            )
    relays = [r for r in RELAYS if (r, MODES[0]) in by]
    if relays:
        print(
            "reference relays (http_reference_relay.py) and the --baseline gateway, same run: "
            "median / direct, its CPU/call"
        )
    for relay in relays:
        for mode in MODES:
            direct, through = by[("direct", mode)], by[(relay, mode)]
            for tool in ("fs.read_file", "fs.write_file"):
                d = statistics.median(direct.latency[tool])
                r = statistics.median(through.latency[tool])
                cpu = through.cpu_ms[tool]
                figures["rows"].append(
                    {
                        "client": mode,
                        "tool": tool,
                        "relay": relay,
                        "direct_median_ms": d * 1e3,
                        "relay_median_ms": r * 1e3,
                        "ratio": r / d,
                        "relay_cpu_ms": cpu,
                    }
                )
                print(
                    f"{relay + (' relay' if relay != 'baseline' else ''):<14} {mode:<11} {tool:<14} {d * 1e3:>6.2f}ms "
                    f"{r * 1e3:>6.2f}ms {r / d:>5.2f}x  its CPU {cpu['gateway']:.2f} ms"
                )
    return figures


def start_relays(
    base: Path, up_url: str, procs: list[subprocess.Popen[bytes]]
) -> dict[str, tuple[str, int]]:
    """The reference relays in front of the upstream: their URLs and process ids."""
    started = {}
    for relay in REFERENCE_RELAYS:
        url_file = base / f"{relay}.url"
        proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "http_reference_relay.py"),
                *(relay, up_url, str(url_file)),
                *("--manifests", str(base / "manifests"), "--data", str(base / f"{relay}-data")),
            ],
            stdout=subprocess.DEVNULL,
            stderr=(base / f"{relay}.err").open("wb"),
        )
        procs.append(proc)
        started[relay] = (wait_for(url_file, proc, f"the {relay} relay"), proc.pid)
    return started


def start_servers(base: Path, procs: list[subprocess.Popen[bytes]]) -> tuple[str, str, str]:
    """The HTTP fs server and the gateway in front of it: their URLs, and the token."""
    root = make_root(base)
    errlog = (base / "servers.err").open("wb")
    upstream = subprocess.Popen(
        [sys.executable, str(HERE / "http_fs_server.py"), str(root), str(base / "up.url")],
        stdout=subprocess.DEVNULL,
        stderr=errlog,
    )
    procs.append(upstream)
    up_url = wait_for(base / "up.url", upstream, "the HTTP fs server")
    manifests = base / "manifests"
    manifests.mkdir()
    printed = subprocess.run(
        [executable("reversi-connectors"), "manifests", "fs", "--format", "json"],
        check=True,
        capture_output=True,
    ).stdout
    (manifests / "fs.json").write_bytes(printed)
    token = secrets.token_urlsafe(24)
    gw_url = start_gateway(base, "gateway", manifests, up_url, token, os.environ, procs)
    return up_url, gw_url, token


def start_gateway(
    base: Path,
    name: str,
    manifests: Path,
    up_url: str,
    token: str,
    env: Mapping[str, str],
    procs: list[subprocess.Popen[bytes]],
) -> str:
    """``reversi-gateway --listen`` in front of ``up_url`` (its journal in ``base/data-NAME``),
    started with ``env``: the URL it listens on."""
    gw_err = base / f"{name}.err"
    gateway = subprocess.Popen(
        [
            executable("reversi-gateway"),
            *("--manifests", str(manifests), "--data", str(base / f"data-{name}")),
            *("--upstream-url", up_url, "--listen", "127.0.0.1:0"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=gw_err.open("wb"),
        env={**env, "REVERSI_GATEWAY_TOKEN": token},
    )
    procs.append(gateway)
    deadline = time.monotonic() + 60
    while True:
        text = gw_err.read_text() if gw_err.exists() else ""
        found = [
            line.split("listening on ", 1)[1]
            for line in text.splitlines()
            if "listening on " in line
        ]
        if found:
            return found[0].strip()
        if gateway.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the {name} did not start:\n{text}")
        time.sleep(0.02)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--write-files", type=int, default=10)
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--reference", action="store_true", help="also time the relays of http_reference_relay.py"
    )
    parser.add_argument(
        "--baseline",
        metavar="CHECKOUT",
        help="also time a second gateway running another checkout of this repository (its "
        "packages' src/ directories first on PYTHONPATH) in front of the same upstream, its "
        "calls interleaved with the others': a change and its baseline in one run",
    )
    args = parser.parse_args()
    baseline_path = None
    if args.baseline is not None:
        srcs = sorted(Path(args.baseline).glob("packages/*/src"))
        if not srcs:
            parser.error(f"--baseline {args.baseline}: no packages/*/src there")
        baseline_path = os.pathsep.join(str(p.resolve()) for p in srcs)
    base = Path(tempfile.mkdtemp(prefix="reversi-http-bench-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        up_url, gw_url, token = start_servers(base, procs)
        upstream, gateway = procs
        relays = start_relays(base, up_url, procs) if args.reference else {}
        bearer = {"Authorization": f"Bearer {token}"}
        if baseline_path is not None:
            env = {**os.environ, "PYTHONPATH": baseline_path}
            url = start_gateway(base, "baseline", base / "manifests", up_url, token, env, procs)
            relays["baseline"] = (url, procs[-1].pid)
        targets = []
        for mode in MODES:
            targets.append(Target(f"direct {mode}", up_url, mode, {}, (None, upstream.pid)))
            targets.append(
                Target(f"gateway {mode}", gw_url, mode, bearer, (gateway.pid, upstream.pid))
            )
            for relay, (url, pid) in relays.items():
                headers = bearer if relay == "baseline" else {}
                targets.append(Target(f"{relay} {mode}", url, mode, headers, (pid, upstream.pid)))
        anyio.run(measure, targets, args.calls, args.warmup, args.write_files)
        figures = report(targets, args)
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=2))
        return 0
    except Exception as exc:
        print(f"error: {exc}", file=sys.stderr)
        for log in (base / "servers.err", base / "gateway.err", *base.glob("*.err")):
            if log.exists():
                print(log.read_text()[-3000:], file=sys.stderr)
        return 1
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
