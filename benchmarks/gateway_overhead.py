#!/usr/bin/env python
"""What the Reversi gateway costs: latency, journal throughput, memory and start-up.

Run from the repository root, with reversi-core and the fs connector installed::

    python benchmarks/gateway_overhead.py            # 1,000 calls per tool and target
    python benchmarks/gateway_overhead.py --calls 200 --json figures.json

This is a report, not a test: it prints a table with each figure, its target and
PASS or MISS, and exits 0 whether or not a target is missed (1 only when something
breaks). Everything runs locally over stdio pipes in temporary directories; nothing
listens on a socket. See docs/performance.md for what the figures mean.

What one run measures:

1. Latency of ``fs.read_file`` and ``fs.write_file`` (median and p99 of ``--calls``
   sequential calls each) from an ``mcp`` stdio client, made directly to
   ``reversi-connectors serve fs`` and through ``reversi-gateway`` in front of the same
   server with ``--durability process`` and ``--durability power``. The sessions are
   open at once and the calls are interleaved in blocks, so that a machine that slows
   down part way through slows all of them alike; each target is ``--instances``
   processes (default 3) whose blocks rotate, so that the scheduler's placement of one
   process pair does not decide its median. Targets: gateway median at most
   1.3x direct for reads and writes under ``process``, and for reads under ``power``;
   1.5x for writes under ``power``.
2. The journal's own throughput: ``SQLiteJournal.begin_step`` + ``finish_step`` (the
   engine's two commits per call) against a raw ``sqlite3`` loop doing the same two
   commits (an INSERT, then an UPDATE, each in its own ``BEGIN IMMEDIATE`` transaction,
   WAL, same ``synchronous`` setting, same schema). Target: at least 80% of the raw rate.
3. The gateway process's resident memory (``VmRSS`` and peak ``VmHWM`` from
   ``/proc/PID/status``) after the calls; with several processes a target, of the
   first, given untimed the calls its replicas took. Target: under 80 MB.
4. Start-up: from spawning ``reversi-gateway`` to the answer of its first ``tools/list``
   (which needs its fs upstream started), median of ``--starts`` starts. Target: 1.0 s.
   Beside it, for reference, the fs server alone and ``bare_sdk_server.py``, the least
   server the MCP SDK makes: the floor of any server built on it.

With ``--floor``, a fourth latency target, information only: the gateway with
``Run.attempt`` and ``Run.begin_call`` cut down to forwarding, which separates the cost
of the MCP relay from the cost of the engine and the journal. With ``--reference``,
three more, also information only (``reference_relay.py``): a relay that only copies
bytes, and the least a Python proxy that journals each call before forwarding it must
do, in both durability modes.
With ``--baseline CHECKOUT``, two more (information only): the gateway of another
checkout of this repository in both modes, its calls interleaved with the others', so
that a change and what it changes from are compared in one run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from reversi_core.journal import Durability, SQLiteJournal, StepState
from reversi_core.journal.sqlite import MIGRATIONS

LATENCY_TARGETS = {
    ("process", "fs.read_file"): 1.3,
    ("process", "fs.write_file"): 1.3,
    ("power", "fs.read_file"): 1.3,
    ("power", "fs.write_file"): 1.5,
}
"""Gateway median / direct median, at most, by durability mode and tool."""
JOURNAL_TARGET = 0.80
"""Journal rate / raw SQLite rate, at least."""
MEMORY_TARGET_MB = 80.0
"""Gateway resident memory, under."""
STARTUP_TARGET_S = 1.0
"""Spawn to first tools/list answer, at most."""

CALL_TIMEOUT_S = 30.0
"""One call that takes longer than this aborts the benchmark (something is wrong)."""
START_TIMEOUT_S = 30.0
BLOCK = 50
"""Calls made to one target before moving to the next (interleaving)."""

READ_PATH = "bench/read.txt"
READ_BYTES = 4096
WRITE_BYTES = 1024


# -- small helpers -------------------------------------------------------------------


def executable(name: str) -> str:
    """The console script ``name``: next to this interpreter first, else on PATH.

    The sibling of ``sys.executable`` avoids version-manager shims (pyenv, asdf), which
    add a shell and a second interpreter start to every spawn.
    """
    sibling = Path(sys.executable).parent / name
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(
            f"{name} not found next to {sys.executable} or on PATH; "
            "install reversi-core and reversi-connector-fs first"
        )
    return found


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def p99(values: Sequence[float]) -> float:
    """The 99th percentile, nearest-rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def proc_status(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of ``pid`` in kB, from ``/proc/PID/status``."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far, from ``/proc/PID/stat``."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def find_child(marker: str) -> int:
    """The pid of this process's child with ``marker`` as one of its arguments."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                args = fh.read().decode(errors="replace").split("\0")
        except (OSError, ValueError, IndexError):
            continue
        if marker in args:
            return int(entry)
    raise RuntimeError(f"no child process of {me} with {marker!r} in its command line")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# -- the MCP targets -----------------------------------------------------------------


@dataclass
class Target:
    """One server the client talks to: direct, or a gateway with one durability mode."""

    name: str
    argv: list[str]
    root: Path
    data: Path | None = None
    mode: str | None = None
    """The gateway's durability mode; ``None`` for the direct target and the floor."""
    env: dict[str, str] | None = None
    """The server's environment, when not this process's (``--baseline``)."""
    session: ClientSession | None = None
    pid: int | None = None
    upstream_pid: int | None = None
    latency: dict[str, list[float]] = field(default_factory=dict)
    memory_kb: dict[str, int] = field(default_factory=dict)
    rss_by_phase_kb: dict[str, int] = field(default_factory=dict)
    """The gateway's VmRSS after each tool's timed calls."""
    upstream_memory_kb: dict[str, int] = field(default_factory=dict)
    cpu_ms: dict[str, float] = field(default_factory=dict)
    """Per tool: CPU milliseconds per call of the server process (the gateway, or the
    fs server when direct)."""
    upstream_cpu_ms: dict[str, float] = field(default_factory=dict)
    replicas: list[Target] = field(default_factory=list)
    """More processes of the same server (``--instances``), each with its own root and
    data directory: the target's blocks of calls rotate over it and them."""

    @property
    def is_gateway(self) -> bool:
        return self.data is not None

    @property
    def instances(self) -> list[Target]:
        """This target's processes: itself first, then its replicas."""
        return [self, *self.replicas]

    def replica(self, base: Path, number: int) -> Target:
        """Another process of this server, on a fresh copy of its root and data."""
        root = make_root(base, f"{self.root.name.removeprefix('root-')}-{number}")
        data = None if self.data is None else self.data.with_name(f"{self.data.name}-{number}")
        swap = {str(self.root): str(root)}
        if self.data is not None and data is not None:
            swap[str(self.data)] = str(data)
        argv = [swap.get(arg, arg) for arg in self.argv]
        return Target(self.name, argv, root, data=data, mode=self.mode, env=self.env)


def make_root(base: Path, name: str) -> Path:
    """A small tree for the fs connector: the file read, and the directory written to."""
    root = base / f"root-{name}"
    (root / "bench").mkdir(parents=True)
    line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    text = (line * (READ_BYTES // len(line) + 1))[:READ_BYTES]
    (root / READ_PATH).write_text(text, encoding="utf-8")
    return root


def write_manifests(base: Path, connectors: str) -> Path:
    """``reversi-connectors manifests fs --format json`` into ``base/manifests/fs.json``."""
    directory = base / "manifests"
    directory.mkdir(exist_ok=True)
    text = subprocess.run(
        [connectors, "manifests", "fs", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    json.loads(text)  # fail here, clearly, if it is not JSON
    (directory / "fs.json").write_text(text, encoding="utf-8")
    return directory


def upstream_argv(connectors: str, root: Path) -> list[str]:
    return [connectors, "serve", "fs", "--root", str(root)]


def gateway_argv(
    gateway: str, manifests: Path, data: Path, durability: str, upstream: list[str]
) -> list[str]:
    argv = [
        gateway,
        "--manifests",
        str(manifests),
        "--data",
        str(data),
        "--durability",
        durability,
        "--upstream-cmd",
        upstream[0],
    ]
    for arg in upstream[1:]:
        argv += ["--upstream-arg", arg]
    return argv


FLOOR_LAUNCHER = """
import sys
from reversi_core._outcome import failure
from reversi_core.connector import CallContext
from reversi_core.engine import CallOutcome, Run
from reversi_core.journal import StepState

async def forward_only(self, tool, args, *, reason=None, execute=None, approver=None,
                       timeout=None, answer=None):
    ctx = CallContext(run_id=self.id, step=0, idempotency_key="floor", timeout=timeout)
    result = await (execute or self.executor)(tool, args, ctx)
    outcome = CallOutcome(self.id, tool, 0, StepState.SUCCEEDED, result=result)
    if answer is not None:
        answer(outcome)
    return outcome

class Forward:  # Run.begin_call's ReadCall or WriteCall, cut down to telling the answer
    seq = 0
    key = "floor"

    def __init__(self, run, tool):
        self.run, self.manifest = run, run.registry.get(tool)

    def succeeded(self, result, answer=None):
        return self.settle(StepState.SUCCEEDED, result, None, answer)

    def failed(self, error, answer=None, timeout=None):
        return self.settle(*failure(self.manifest, error, timeout), answer)

    def settle(self, state, result, error, answer):
        outcome = CallOutcome(self.run.id, self.manifest.name, 0, state, result=result, error=error)
        if answer is not None:
            answer(outcome)
        return outcome

    def abandon(self, exc):
        pass

def begin_only(self, tool, args, *, reason=None):
    return Forward(self, tool)

Run.attempt = forward_only
Run.begin_read = begin_only
Run.begin_call = begin_only
from reversi_core.cli.gateway import main
sys.exit(main())
"""
"""``python -c`` source of the ``--floor`` target: the gateway with ``Run.attempt`` and
``Run.begin_call`` (the engine's doors) cut down to forwarding the call (no checks,
no journal), to show what the MCP relay alone costs."""


def params(argv: list[str], env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env or dict(os.environ))


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    with anyio.fail_after(CALL_TIMEOUT_S):
        result = await session.call_tool(tool, args)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return result


def read_args(i: int) -> dict[str, Any]:
    return {"path": READ_PATH}


def make_write_args(files: int) -> Callable[[int], dict[str, Any]]:
    filler = "x" * WRITE_BYTES

    def write_args(i: int) -> dict[str, Any]:
        stamp = f"call {i}\n"
        return {
            "path": f"bench/w{i % files:04d}.txt",
            "content": stamp + filler[len(stamp) :],
        }

    return write_args


async def run_latency(
    targets: list[Target],
    calls: int,
    warmup: int,
    write_files: int,
    errlog: TextIO,
    budget: float,
) -> None:
    """Open every target, warm up, then time ``calls`` reads and writes on each, interleaved.

    Raises :class:`TimeoutError` when it all takes longer than ``budget`` seconds.
    """
    with anyio.fail_after(budget):
        await _run_latency(targets, calls, warmup, write_files, errlog)


async def _run_latency(
    targets: list[Target], calls: int, warmup: int, write_files: int, errlog: TextIO
) -> None:
    write_args = make_write_args(write_files)
    async with AsyncExitStack() as stack:
        for target in (each for lead in targets for each in lead.instances):
            # (the contexts are entered outside any cancel scope: they hold task groups)
            read, write = await stack.enter_async_context(
                stdio_client(params(target.argv, target.env), errlog=errlog)
            )
            session = await stack.enter_async_context(ClientSession(read, write))
            with anyio.fail_after(START_TIMEOUT_S):
                await session.initialize()
                listed = {t.name for t in (await session.list_tools()).tools}
            missing = {"fs.read_file", "fs.write_file"} - listed
            if missing:
                raise RuntimeError(f"{target.name}: tools/list lacks {sorted(missing)}")
            target.session = session
            if target.is_gateway:
                target.pid = find_child(str(target.data))
                target.upstream_pid = find_upstream(target.pid)
            else:
                target.pid = find_child(str(target.root))
        # Warm up: imports, caches, first files, the journal's first pages.
        for target in (each for lead in targets for each in lead.instances):
            assert target.session is not None
            for i in range(warmup):
                result = await call(target.session, "fs.read_file", read_args(i))
                await call(target.session, "fs.write_file", write_args(calls + i))
            if target.mode is not None:  # a real gateway
                meta = result.meta or {}
                if "reversi/run" not in meta or "reversi/step" not in meta:
                    raise RuntimeError(f"{target.name}: result _meta lacks reversi/run or step")
        for tool, make_args in (("fs.read_file", read_args), ("fs.write_file", write_args)):
            cpu0: dict[str, tuple[float, float]] = {}
            for target in targets:
                target.latency[tool] = []
                cpu0[target.name] = cpu_pairs(target)
            for number, start in enumerate(range(0, calls, BLOCK)):
                for target in targets:
                    # the blocks rotate over the target's processes (--instances)
                    session = target.instances[number % len(target.instances)].session
                    assert session is not None
                    times = target.latency[tool]
                    for i in range(start, min(start + BLOCK, calls)):
                        args = make_args(i)
                        t0 = time.perf_counter()
                        await call(session, tool, args)
                        times.append(time.perf_counter() - t0)
            for target in targets:
                own, up = cpu_pairs(target)
                target.cpu_ms[tool] = (own - cpu0[target.name][0]) * 1e3 / calls
                if target.is_gateway:
                    target.rss_by_phase_kb[tool] = max(
                        proc_status(pid_of(each))["VmRSS"] for each in target.instances
                    )
                if target.upstream_pid is not None:
                    target.upstream_cpu_ms[tool] = (up - cpu0[target.name][1]) * 1e3 / calls
        # The memory target is checked on one process that served every call, as when a
        # target was one process: each gateway's first process is given, untimed, the
        # calls of the blocks its replicas took.
        taken = [min(BLOCK, calls - start) for start in range(0, calls, BLOCK)]
        for target in targets:
            if not target.is_gateway:
                continue
            lead = target.instances[0]
            assert lead.session is not None
            assert lead.upstream_pid is not None
            served = sum(n for number, n in enumerate(taken) if number % len(target.instances) == 0)
            for tool, make_args in (("fs.read_file", read_args), ("fs.write_file", write_args)):
                for i in range(calls - served):
                    await call(lead.session, tool, make_args(i))
            target.memory_kb = proc_status(pid_of(lead))
            target.upstream_memory_kb = proc_status(lead.upstream_pid)


def pid_of(target: Target) -> int:
    assert target.pid is not None
    return target.pid


def cpu_pairs(target: Target) -> tuple[float, float]:
    """CPU seconds so far of all the target's server processes and of their upstreams."""
    pairs = [cpu_pair(each) for each in target.instances]
    return sum(own for own, _ in pairs), sum(up for _, up in pairs)


def cpu_pair(target: Target) -> tuple[float, float]:
    """CPU seconds so far of the target's server process and of its upstream (0 if none)."""
    assert target.pid is not None
    up = cpu_seconds(target.upstream_pid) if target.upstream_pid is not None else 0.0
    return cpu_seconds(target.pid), up


def find_upstream(gateway_pid: int) -> int:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == gateway_pid:
            return int(entry)
    raise RuntimeError(f"the gateway {gateway_pid} has no child process")


# -- start-up ------------------------------------------------------------------------


async def time_startup(
    argv: list[str], starts: int, errlog: TextIO, marker: str | None = None
) -> tuple[list[float], list[int]]:
    """Seconds from spawn to the first ``tools/list`` answer, ``starts`` times.

    With ``marker`` (a string in the server's command line), also the server's
    ``VmRSS`` in kB right after that answer.
    """
    times: list[float] = []
    rss: list[int] = []
    for _ in range(starts):
        t0 = time.perf_counter()
        async with (
            stdio_client(params(argv), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(START_TIMEOUT_S):
                await session.initialize()
                listed = await session.list_tools()
            elapsed = time.perf_counter() - t0
            if not any(t.name == "fs.read_file" for t in listed.tools):
                raise RuntimeError("tools/list answered without fs.read_file")
            if marker is not None:
                rss.append(proc_status(find_child(marker))["VmRSS"])
        times.append(elapsed)
    return times, rss


# -- journal throughput ----------------------------------------------------------------

_ARGS = {"path": "bench/w0001.txt", "content": "x" * WRITE_BYTES}
_RESULT = {
    "path": "bench/w0001.txt",
    "existed": True,
    "backup": "w0001.txt.b1",
    "size": 1024,
    "mode": 420,
}
_COMP = {"tool": "fs.restore_file", "args": {"path": "bench/w0001.txt", "backup": "w0001.txt.b1"}}


class JournalLoop:
    """The engine's two commits per call through :class:`SQLiteJournal`."""

    def __init__(self, directory: Path, durability: Durability) -> None:
        self.journal = SQLiteJournal.open(directory, durability=durability)
        self.run = self.journal.create_run("run_bench", ["fs:read", "fs:write"], "benchmark").id

    def __call__(self, n: int) -> float:
        """Seconds for ``n`` calls."""
        journal, run = self.journal, self.run
        t0 = time.perf_counter()
        for _ in range(n):
            step = journal.begin_step(
                run, "fs.write_file", "reversible", "fs:write", _ARGS, None, None, []
            )
            journal.finish_step(
                run,
                step.seq,
                StepState.SUCCEEDED,
                result=_RESULT,
                error=None,
                compensation=_COMP,
                compensation_error=None,
            )
        return time.perf_counter() - t0

    def close(self) -> None:
        self.journal.close()


class RawLoop:
    """The same two commits with plain ``sqlite3``: same schema, WAL, same ``synchronous``.

    Each call is ``BEGIN IMMEDIATE; INSERT ...; COMMIT`` (the intent) then ``BEGIN
    IMMEDIATE; UPDATE ...; COMMIT`` (the outcome), with the JSON serialised in the loop.
    """

    def __init__(self, directory: Path, durability: Durability) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.conn = conn = sqlite3.connect(str(directory / "raw.sqlite3"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL").fetchone()
        sync = "FULL" if durability is Durability.POWER else "NORMAL"
        conn.execute(f"PRAGMA synchronous={sync}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.executescript(MIGRATIONS[0])
        self.run = "run_bench"
        conn.execute(
            "INSERT INTO runs (id, started_at, status, scope, label) "
            "VALUES (?, ?, 'open', '[]', NULL)",
            (self.run, time.time()),
        )
        self.seq = 0

    def __call__(self, n: int) -> float:
        """Seconds for ``n`` calls."""
        conn, run = self.conn, self.run
        t0 = time.perf_counter()
        for _ in range(n):
            self.seq += 1
            seq = self.seq
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO steps (run_id, seq, tool, effect, permission, args, reason, state, "
                "idempotency_key, owner, started_at, approval) "
                "VALUES (?, ?, ?, ?, ?, ?, NULL, 'pending', ?, ?, ?, NULL)",
                (
                    run,
                    seq,
                    "fs.write_file",
                    "reversible",
                    "fs:write",
                    json.dumps(_ARGS),
                    f"reversi-{run}-{seq}",
                    "host:1:1",
                    time.time(),
                ),
            )
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "UPDATE steps SET state = ?, finished_at = ?, result = ?, error = NULL, "
                "compensation = ?, compensation_error = NULL "
                "WHERE run_id = ? AND seq = ? AND state = 'pending'",
                ("succeeded", time.time(), json.dumps(_RESULT), json.dumps(_COMP), run, seq),
            )
            conn.execute("COMMIT")
        return time.perf_counter() - t0

    def close(self) -> None:
        self.conn.close()


def journal_throughput(base: Path, n: int, chunk: int = 50) -> dict[str, dict[str, float]]:
    """Calls/s of the raw loop and the journal, per durability mode.

    Both run ``n`` calls in alternating chunks (raw, journal, raw, ...), after a short
    warm-up, so that a disk or a machine that changes speed part way through affects
    both alike. Beside the rates, ``raw_cpu_us`` and ``journal_cpu_us``: this process's
    CPU time (user + system) per call of each, which other processes' load on the
    machine changes far less than the rates (information only: the target is the rate).
    """
    out: dict[str, dict[str, float]] = {}
    for durability in (Durability.PROCESS, Durability.POWER):
        raw = RawLoop(base / f"raw-{durability.value}", durability)
        eng = JournalLoop(base / f"journal-{durability.value}", durability)
        try:
            raw(min(chunk, n))
            eng(min(chunk, n))
            raw_s = eng_s = raw_cpu = eng_cpu = 0.0
            done = 0
            while done < n:
                k = min(chunk, n - done)
                cpu0 = time.process_time()
                raw_s += raw(k)
                cpu1 = time.process_time()
                eng_s += eng(k)
                raw_cpu += cpu1 - cpu0
                eng_cpu += time.process_time() - cpu1
                done += k
        finally:
            raw.close()
            eng.close()
        out[durability.value] = {
            "raw": n / raw_s,
            "journal": n / eng_s,
            "raw_cpu_us": raw_cpu * 1e6 / n,
            "journal_cpu_us": eng_cpu * 1e6 / n,
        }
    return out


# -- the report ----------------------------------------------------------------------


@dataclass
class Row:
    what: str
    figure: str
    target: str
    ok: bool | None  # None: information only

    def cells(self) -> list[str]:
        return [self.what, self.figure, self.target, "" if self.ok is None else verdict(self.ok)]


def print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    print(f"\n{title}")
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    print(line)
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="timed calls per tool and target")
    parser.add_argument("--warmup", type=int, default=50, help="untimed calls of each tool first")
    parser.add_argument(
        "--write-files",
        type=int,
        default=10,
        help="fs.write_file cycles over this many files (default 10: most writes replace a "
        "file written before, as an agent editing a few files does)",
    )
    parser.add_argument("--starts", type=int, default=5, help="gateway starts to time")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON here")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=1800.0,
        help="give up (exit 1) when the latency runs take longer than this (default 1800)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time a fourth target: the gateway with the engine cut out (calls are only "
        "forwarded, nothing is checked or journaled), for what the MCP relay alone costs",
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also time reference_relay.py: a byte-copying relay and a minimal journaling "
        "relay (process and power), for what any Python proxy costs on this machine",
    )
    parser.add_argument(
        "--baseline",
        metavar="CHECKOUT",
        help="also time the gateway of another checkout of this repository (its packages' "
        "src/ directories first on PYTHONPATH), in both durability modes, interleaved with "
        "the others: a change and its baseline measured in one run",
    )
    parser.add_argument(
        "--instances",
        type=int,
        default=3,
        metavar="K",
        help="start each latency target K times (its own root and data each) and rotate its "
        "blocks of calls over them (default 3): a single process's median depends on where "
        "the scheduler keeps it and its client, by more than the gateway's own cost",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    opts = parser.parse_args(argv)
    if opts.baseline is not None:
        srcs = sorted(Path(opts.baseline).glob("packages/*/src"))
        if not srcs:
            parser.error(f"--baseline {opts.baseline}: no packages/*/src there")
        opts.baseline_path = os.pathsep.join(str(p.resolve()) for p in srcs)
    if min(opts.calls, opts.warmup, opts.starts, opts.write_files, opts.instances) < 1:
        parser.error("--calls, --warmup, --starts, --write-files and --instances must be positive")

    connectors = executable("reversi-connectors")
    gateway = executable("reversi-gateway")
    base = Path(tempfile.mkdtemp(prefix="reversi-bench-"))
    errlog_path = base / "servers.log"
    print(
        f"reversi gateway overhead: {opts.calls} calls per tool and target, "
        f"{opts.warmup} warm-up, writes over {opts.write_files} file(s)"
    )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} CPU(s), sqlite {sqlite3.sqlite_version}, load average {load}; "
        f"work dir {base}"
    )
    started = time.perf_counter()
    try:
        with open(errlog_path, "w", encoding="utf-8") as errlog:
            figures = run_all(opts, base, connectors, gateway, errlog)
    except BaseException as exc:
        if not isinstance(exc, KeyboardInterrupt):
            text = str(exc) or (
                "a call, a start or the whole run took too long (see --max-seconds)"
                if isinstance(exc, TimeoutError)
                else ""
            )
            print(f"\nerror: {type(exc).__name__}: {text}", file=sys.stderr)
            tail = (
                errlog_path.read_text(errors="replace").splitlines()[-20:]
                if errlog_path.exists()
                else []
            )
            if tail:
                print("last lines the servers wrote on stderr:", *tail, sep="\n  ", file=sys.stderr)
        if not opts.keep:
            shutil.rmtree(base, ignore_errors=True)
        return 1
    figures["seconds"] = round(time.perf_counter() - started, 1)
    if opts.json:
        Path(opts.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if not opts.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def run_all(
    opts: argparse.Namespace, base: Path, connectors: str, gateway: str, errlog: TextIO
) -> dict[str, Any]:
    figures: dict[str, Any] = {"calls": opts.calls, "write_files": opts.write_files}
    rows: list[Row] = []

    # 2 first: the journal in a quiet process, before any server runs.
    print("\n[1/3] journal throughput ...", flush=True)
    rates = journal_throughput(base / "journal", opts.calls)
    figures["journal"] = rates

    manifests = write_manifests(base, connectors)
    direct_root = make_root(base, "direct")
    targets = [Target("direct", upstream_argv(connectors, direct_root), direct_root)]
    for mode in ("process", "power"):
        root = make_root(base, mode)
        data = base / f"data-{mode}"
        targets.append(
            Target(
                f"gateway ({mode})",
                gateway_argv(gateway, manifests, data, mode, upstream_argv(connectors, root)),
                root,
                data=data,
                mode=mode,
            )
        )
    if opts.floor:
        root = make_root(base, "floor")
        data = base / "data-floor"
        argv = gateway_argv(gateway, manifests, data, "process", upstream_argv(connectors, root))
        targets.append(
            Target(
                "relay only (floor)",
                [sys.executable, "-c", FLOOR_LAUNCHER, *argv[1:]],
                root,
                data=data,
            )
        )
    if opts.baseline is not None:
        env = dict(os.environ, PYTHONPATH=opts.baseline_path)
        for mode in ("process", "power"):
            root = make_root(base, f"baseline-{mode}")
            data = base / f"data-baseline-{mode}"
            argv = gateway_argv(gateway, manifests, data, mode, upstream_argv(connectors, root))
            targets.append(Target(f"baseline ({mode})", argv, root, data=data, env=env))
    if opts.reference:
        relay = str(Path(__file__).with_name("reference_relay.py"))
        for kind, mode, name in (
            ("copy", "process", "copy relay (reference)"),
            ("journal", "process", "journaling relay, process (reference)"),
            ("journal", "power", "journaling relay, power (reference)"),
            ("journal-loop", "process", "journaling relay on uvloop, process (reference)"),
        ):
            root = make_root(base, f"ref-{kind}-{mode}")
            data = base / f"data-ref-{kind}-{mode}"
            argv = [sys.executable, relay, kind, "--manifests", str(manifests), "--data"]
            argv += [str(data), "--durability", mode, "--", *upstream_argv(connectors, root)]
            targets.append(Target(name, argv, root, data=data))
    for target in targets:
        target.replicas = [target.replica(base, n) for n in range(1, opts.instances)]
    print(
        f"[2/3] latency ({opts.instances} process(es) per target): "
        f"{', '.join(t.name for t in targets)} ...",
        flush=True,
    )
    anyio.run(
        run_latency, targets, opts.calls, opts.warmup, opts.write_files, errlog, opts.max_seconds
    )

    print(f"[3/3] start-up, {opts.starts} starts each ...", flush=True)
    start_root = make_root(base, "startup")
    start_data = base / "data-startup"
    start_argv = gateway_argv(
        gateway, manifests, start_data, "process", upstream_argv(connectors, start_root)
    )
    gateway_starts, start_rss = anyio.run(
        time_startup, start_argv, opts.starts, errlog, str(start_data)
    )
    direct_starts, _ = anyio.run(
        time_startup, upstream_argv(connectors, start_root), opts.starts, errlog
    )
    bare = [sys.executable, str(Path(__file__).with_name("bare_sdk_server.py"))]
    bare_starts, _ = anyio.run(time_startup, bare, opts.starts, errlog)

    # -- latency table
    direct = targets[0]
    lat_rows: list[list[str]] = []
    figures["latency"] = {}
    for target in targets:
        figures["latency"][target.name] = {}
        for tool, times in target.latency.items():
            med, top = median(times), p99(times)
            figures["latency"][target.name][tool] = {"median_ms": med * 1e3, "p99_ms": top * 1e3}
            if target is direct:
                lat_rows.append([target.name, tool, ms(med), ms(top), "", "", "", ""])
                continue
            ratio = med / median(direct.latency[tool])
            ratio99 = top / p99(direct.latency[tool])
            figures["latency"][target.name][tool].update(
                {"median_ratio": ratio, "p99_ratio": ratio99}
            )
            if target.mode is None:  # the floor and the references: information only
                lat_rows.append(
                    [
                        target.name,
                        tool,
                        ms(med),
                        ms(top),
                        f"{ratio:.2f}x",
                        f"{ratio99:.2f}x",
                        "",
                        "",
                    ]
                )
                continue
            limit = LATENCY_TARGETS[(target.mode, tool)]
            ok = ratio <= limit
            lat_rows.append(
                [
                    target.name,
                    tool,
                    ms(med),
                    ms(top),
                    f"{ratio:.2f}x",
                    f"{ratio99:.2f}x",
                    f"<= {limit}x",
                    verdict(ok),
                ]
            )
            rows.append(
                Row(f"{tool} median, {target.name} / direct", f"{ratio:.2f}x", f"<= {limit}x", ok)
            )
    print_table(
        f"Latency ({opts.calls} sequential calls each; ratio = gateway / direct)",
        ["target", "tool", "median", "p99", "median ratio", "p99 ratio", "target", ""],
        lat_rows,
    )

    # -- CPU table (information: where a call's work is done)
    c_rows: list[list[str]] = []
    figures["cpu_ms_per_call"] = {}
    for target in targets:
        figures["cpu_ms_per_call"][target.name] = {}
        for tool, own in target.cpu_ms.items():
            up = target.upstream_cpu_ms.get(tool)
            figures["cpu_ms_per_call"][target.name][tool] = {"server": own, "upstream": up}
            c_rows.append(
                [
                    target.name,
                    tool,
                    f"{own:.2f} ms",
                    "" if up is None else f"{up:.2f} ms",
                ]
            )
    print_table(
        "CPU time per call (from /proc; server = the fs server when direct, the gateway otherwise)",
        ["target", "tool", "server CPU", "its upstream CPU"],
        c_rows,
    )

    # -- journal table
    j_rows: list[list[str]] = []
    for mode, r in rates.items():
        ratio = r["journal"] / r["raw"]
        ok = ratio >= JOURNAL_TARGET
        figures["journal"][mode]["ratio"] = ratio
        j_rows.append(
            [
                mode,
                f"{r['raw']:,.0f}/s",
                f"{r['journal']:,.0f}/s",
                f"{ratio:.0%}",
                f">= {JOURNAL_TARGET:.0%}",
                verdict(ok),
                f"{r['raw_cpu_us']:.0f} / {r['journal_cpu_us']:.0f} us",
            ]
        )
        rows.append(
            Row(
                f"journal rate, {mode} / raw SQLite", f"{ratio:.0%}", f">= {JOURNAL_TARGET:.0%}", ok
            )
        )
    print_table(
        f"Journal throughput (calls/s, two commits per call, {opts.calls} calls each, interleaved)",
        [
            "durability",
            "raw sqlite3",
            "SQLiteJournal",
            "ratio",
            "target",
            "",
            "CPU/call raw / journal",
        ],
        j_rows,
    )

    # -- memory table
    m_rows: list[list[str]] = []
    figures["memory_mb"] = {}
    for target in targets:
        if target.mode is None:
            continue
        rss = target.memory_kb.get("VmRSS", 0) / 1024
        hwm = target.memory_kb.get("VmHWM", 0) / 1024
        up = target.upstream_memory_kb.get("VmRSS", 0) / 1024
        ok = max(rss, hwm) < MEMORY_TARGET_MB
        after_reads = target.rss_by_phase_kb.get("fs.read_file", 0) / 1024
        figures["memory_mb"][target.name] = {
            "rss": rss,
            "hwm": hwm,
            "rss_after_reads": after_reads,
            "upstream_rss": up,
        }
        m_rows.append(
            [
                target.name,
                f"{after_reads:.1f} MB",
                f"{rss:.1f} MB",
                f"{hwm:.1f} MB",
                f"{up:.1f} MB",
                f"< {MEMORY_TARGET_MB:g} MB",
                verdict(ok),
            ]
        )
        rows.append(
            Row(
                f"gateway memory (peak), {target.name}",
                f"{hwm:.1f} MB",
                f"< {MEMORY_TARGET_MB:g} MB",
                ok,
            )
        )
    print_table(
        f"Gateway memory after {2 * (opts.calls + opts.warmup)} calls (the gateway process only)",
        [
            "target",
            "VmRSS after reads",
            "VmRSS at end",
            "VmHWM (peak)",
            "upstream VmRSS",
            "target",
            "",
        ],
        m_rows,
    )
    if start_rss:
        idle = median(start_rss) / 1024
        figures["memory_mb"]["gateway at start"] = {"rss": idle}
        print(f"(for comparison: the gateway's VmRSS right after start-up is {idle:.1f} MB)")

    # -- start-up table
    g_med, d_med, b_med = median(gateway_starts), median(direct_starts), median(bare_starts)
    ok = g_med <= STARTUP_TARGET_S
    figures["startup_s"] = {
        "gateway": gateway_starts,
        "gateway_median": g_med,
        "direct": direct_starts,
        "direct_median": d_med,
        "bare_sdk_server": bare_starts,
        "bare_sdk_server_median": b_med,
    }
    print_table(
        f"Start-up: spawn to first tools/list answer (median of {opts.starts})",
        ["server", "median", "min", "max", "target", ""],
        [
            [
                "gateway + fs upstream",
                f"{g_med:.3f} s",
                f"{min(gateway_starts):.3f} s",
                f"{max(gateway_starts):.3f} s",
                f"<= {STARTUP_TARGET_S} s",
                verdict(ok),
            ],
            [
                "fs server alone (reference)",
                f"{d_med:.3f} s",
                f"{min(direct_starts):.3f} s",
                f"{max(direct_starts):.3f} s",
                "",
                "",
            ],
            [
                "bare MCP SDK server (reference)",
                f"{b_med:.3f} s",
                f"{min(bare_starts):.3f} s",
                f"{max(bare_starts):.3f} s",
                "",
                "",
            ],
        ],
    )
    print(
        "(the bare MCP SDK server is bare_sdk_server.py: the SDK's low-level Server with one "
        "tool on its stdio_server; no server built on the SDK starts faster on this machine, "
        "and the gateway's first tools/list needs its upstream started)"
    )
    rows.append(
        Row("gateway start-up to tools/list", f"{g_med:.3f} s", f"<= {STARTUP_TARGET_S} s", ok)
    )

    # -- summary
    print_table("Summary", ["figure", "value", "target", ""], [r.cells() for r in rows])
    missed = [r for r in rows if r.ok is False]
    figures["targets"] = [
        {"what": r.what, "value": r.figure, "target": r.target, "pass": r.ok} for r in rows
    ]
    if missed:
        print(
            f"\nRESULT: {len(missed)} of {len(rows)} targets missed: "
            + "; ".join(r.what for r in missed)
        )
    else:
        print(f"\nRESULT: all {len(rows)} targets met")
    return figures


if __name__ == "__main__":
    sys.exit(main())
