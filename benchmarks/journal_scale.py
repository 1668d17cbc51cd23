#!/usr/bin/env python
"""Many gateways, one journal: journaled calls per second on PostgreSQL and SQLite.

Run from the repository root, with reversi-core (and its ``postgresql`` extra) and the fs
connector installed, and PostgreSQL server binaries on the machine (or ``--url``)::

    python benchmarks/journal_scale.py                      # 8 gateways x 250 writes
    python benchmarks/journal_scale.py --gateways 4 --writes 100 --json figures.json

This is a report, not a test: it prints a table and exits 0 whatever the figures (1 only
when something breaks, or when a check of the journal below fails). Everything runs
locally: the gateways and their fs servers over stdio pipes, the PostgreSQL server it
starts on 127.0.0.1. See docs/performance.md for what the figures mean.

Each scenario is a fresh journal (a new data directory, or a new schema on the one
PostgreSQL server) and ``G`` gateway processes (``reversi-gateway`` in front of its own
``reversi-connectors serve fs`` on its own root), each driven by one MCP client session
making ``--writes`` sequential ``fs.write_file`` calls, all sessions at once. The clock
runs from the first call to the last answer; the figure is calls answered per second,
every one journaled (an intent and an outcome, two commits). Scenarios:

1. SQLite, 1 gateway: the baseline every ratio is against, measured in the same run.
2. PostgreSQL, 1 gateway.
3. PostgreSQL, ``--gateways`` gateways at once: the shared journal's case.
4. SQLite, ``--gateways`` gateways at once on one data directory (for comparison).

Beside them, for where the time goes, the journal alone: ``begin_step`` + ``finish_step``
(the two commits of a write) in a loop in this process, on SQLite and on PostgreSQL.

After each scenario the journal is read back and checked: one run per gateway, each with
exactly ``--writes`` steps numbered 1..N, every step ``succeeded`` and holding the very
call its gateway made at that number (its path and content name the gateway and the
call), and nothing else: no step lost, none duplicated, no run holding another's call.

The PostgreSQL server is started with ``fsync``, ``synchronous_commit`` and
``full_page_writes`` on (PostgreSQL's defaults), so each commit is flushed to the disk;
``--fsync-off`` starts it as the tests do. The gateways run with ``--durability process``,
the default: on SQLite, no fsync per commit. ``--url`` uses an existing server instead
(a role that may create schemas in its database).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from reversi_core.journal import StepState, describe_location, open_journal

CALL_TIMEOUT_S = 60.0
"""One call that takes longer than this aborts the benchmark (something is wrong)."""
START_TIMEOUT_S = 60.0
CONTENT_BYTES = 512


def executable(name: str) -> str:
    """The console script ``name``: next to this interpreter first, else on PATH."""
    sibling = Path(sys.executable).parent / name
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found next to {sys.executable} or on PATH")
    return found


@dataclass
class Scenario:
    name: str
    store: str
    gateways: int
    writes: int
    rounds: list[float] = field(default_factory=list)
    """Seconds of each round (``--repeat``)."""
    latencies: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return self.gateways * self.writes

    @property
    def seconds(self) -> float:
        """The median round."""
        return statistics.median(self.rounds) if self.rounds else 0.0

    @property
    def rate(self) -> float:
        """Calls per second in the median round."""
        return self.calls / self.seconds if self.rounds else 0.0


def write_args(gateway: int, i: int) -> dict[str, Any]:
    """Call ``i`` of gateway ``gateway``: its path and content say whose call it is."""
    stamp = f"gateway {gateway} call {i}\n"
    return {
        "path": f"g{gateway}/w{i % 20:02d}.txt",
        "content": stamp + "x" * (CONTENT_BYTES - len(stamp)),
    }


def gateway_argv(gateway: str, connectors: str, manifests: Path, root: Path) -> list[str]:
    return [
        gateway,
        "--manifests", str(manifests),
        "--upstream-cmd", connectors,
        "--upstream-arg", "serve",
        "--upstream-arg", "fs",
        "--upstream-arg", "--root",
        "--upstream-arg", str(root),
    ]  # fmt: skip


def environment(journal: str) -> dict[str, str]:
    """This process's environment with ``journal`` as $REVERSI_JOURNAL (a URL holding a
    password is refused on a command line) and no $REVERSI_DATA."""
    env = {k: v for k, v in os.environ.items() if k != "REVERSI_DATA"}
    env["REVERSI_JOURNAL"] = journal
    return env


async def drive(
    scenario: Scenario,
    journal: str,
    base: Path,
    tools: tuple[str, str],
    manifests: Path,
    errlog: TextIO,
) -> dict[int, str]:
    """Start the scenario's gateways, run their writes at once; return ``{gateway: run id}``."""
    gateway, connectors = tools
    runs: dict[int, str] = {}
    sessions: list[ClientSession] = []
    async with AsyncExitStack() as stack:
        for g in range(scenario.gateways):
            root = base / f"root-{g}"
            (root / f"g{g}").mkdir(parents=True)
            argv = gateway_argv(gateway, connectors, manifests, root)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=environment(journal))
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            session = await stack.enter_async_context(ClientSession(read, write))
            with anyio.fail_after(START_TIMEOUT_S):
                await session.initialize()
                listed = {t.name for t in (await session.list_tools()).tools}
            if "fs.write_file" not in listed:
                raise RuntimeError(f"gateway {g}: tools/list lacks fs.write_file")
            sessions.append(session)

        async def one(g: int, session: ClientSession) -> None:
            for i in range(scenario.writes):
                t0 = time.perf_counter()
                with anyio.fail_after(CALL_TIMEOUT_S):
                    result = await session.call_tool("fs.write_file", write_args(g, i))
                scenario.latencies.append(time.perf_counter() - t0)
                if result.is_error:
                    raise RuntimeError(f"gateway {g} call {i} failed: {result.content}")
                meta = result.meta or {}
                if meta.get("reversi/step") != i + 1:
                    scenario.problems.append(
                        f"gateway {g} call {i} was given step {meta.get('reversi/step')}, not {i + 1}"
                    )
                runs.setdefault(g, str(meta.get("reversi/run")))

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for g, session in enumerate(sessions):
                tg.start_soon(one, g, session)
        scenario.rounds.append(time.perf_counter() - t0)
    return runs


def journal_alone(location: str, calls: int) -> float:
    """Writes per second through the journal alone: ``begin_step`` + ``finish_step``."""
    args = write_args(0, 0)
    with open_journal(location) as journal:
        journal.create_run("run_alone", ["fs:write"], None)

        def write() -> None:
            step = journal.begin_step(
                "run_alone", "fs.write_file", "reversible", "fs:write", args, None, None, []
            )
            journal.finish_step(
                "run_alone",
                step.seq,
                StepState.SUCCEEDED,
                result={"path": args["path"]},
                error=None,
                compensation={"tool": "fs.restore_file", "args": {"path": args["path"]}},
                compensation_error=None,
            )

        for _ in range(20):  # warm: prepared statements, caches
            write()
        t0 = time.perf_counter()
        for _ in range(calls):
            write()
        return calls / (time.perf_counter() - t0)


def check(scenario: Scenario, journal: str, runs: dict[int, str], base: Path) -> None:
    """The journal holds exactly the calls the gateways made (see the module docstring)."""
    problems = scenario.problems
    with open_journal(journal, create=False) as j:
        listed = j.list_runs()
        if sorted(r.id for r in listed) != sorted(runs.values()):
            problems.append(f"{len(listed)} runs journaled for {scenario.gateways} gateways")
        total = 0
        for g, run_id in sorted(runs.items()):
            steps = j.list_steps(run_id)
            total += len(steps)
            if [s.seq for s in steps] != list(range(1, scenario.writes + 1)):
                problems.append(
                    f"run of gateway {g}: steps {[s.seq for s in steps][:5]}... not 1..{scenario.writes}"
                )
            for s in steps:
                want = write_args(g, s.seq - 1)
                if s.tool != "fs.write_file" or s.state is not StepState.SUCCEEDED:
                    problems.append(f"run of gateway {g} step {s.seq}: {s.tool} {s.state.value}")
                elif s.args.get("path") != want["path"] or s.args.get("content") != want["content"]:
                    problems.append(
                        f"run of gateway {g} step {s.seq} holds another call: {s.args.get('path')}"
                    )
        if total != scenario.calls:
            problems.append(f"{total} steps journaled for {scenario.calls} calls")
    for g in runs:  # each tree holds only its own gateway's files
        names = sorted(p.name for p in (base / f"root-{g}").iterdir() if not p.name.startswith("."))
        if names != [f"g{g}"]:
            problems.append(f"root of gateway {g} holds {names}")


@contextlib.contextmanager
def postgres(opts: argparse.Namespace) -> Iterator[Any]:
    """The server: ``--url``, else a throwaway cluster (durable unless ``--fsync-off``)."""
    from psycopg import conninfo

    from reversi_core.testing.postgres import PostgresServer, start_cluster

    if opts.url:
        params = conninfo.conninfo_to_dict(opts.url)
        yield PostgresServer(
            admin_url=opts.url,
            host=str(params.get("host") or "127.0.0.1"),
            port=int(params.get("port") or 5432),
        )
        return
    with start_cluster(durable=not opts.fsync_off) as cluster:
        yield cluster.server


def server_settings(url: str) -> str:
    import psycopg

    names = ("server_version", "fsync", "synchronous_commit", "full_page_writes")
    values = []
    with psycopg.connect(url, autocommit=True) as conn:
        for name in names:
            row = conn.execute(f"SHOW {name}").fetchone()
            values.append(f"{name}={row[0] if row else '?'}")
    return ", ".join(values)


def ms(values: Sequence[float], q: float) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3:.1f}"


def report(scenarios: list[Scenario], settings: str, alone: dict[str, float], out: TextIO) -> None:
    base = scenarios[0].rate
    print(f"\nmachine: {platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}", file=out)
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}", file=out)
    rounds = len(scenarios[0].rounds)
    print(f"PostgreSQL: {settings}", file=out)
    print(
        f"rounds: {rounds} of every scenario in turn; seconds and calls/s of the median", file=out
    )
    print("gateways: --durability process; SQLite commits without an fsync\n", file=out)
    header = (
        f"{'scenario':<30}{'gateways':>9}{'calls':>7}{'seconds':>9}{'calls/s':>9}"
        f"{'vs sqlite x1':>14}{'median ms':>11}{'p99 ms':>8}"
    )
    print(header, file=out)
    print("-" * len(header), file=out)
    for s in scenarios:
        print(
            f"{s.name:<30}{s.gateways:>9}{s.calls:>7}{s.seconds:>9.2f}{s.rate:>9.0f}"
            f"{s.rate / base:>13.2f}x{ms(s.latencies, 0.5):>11}{ms(s.latencies, 0.99):>8}",
            file=out,
        )
    print("\nthe journal alone (begin_step + finish_step in one process, no gateway):", file=out)
    for store, rate in alone.items():
        print(f"  {store:<12}{rate:>9.0f} writes/s", file=out)
    print("\nchecks:", file=out)
    for s in scenarios:
        verdict = "ok" if not s.problems else f"{len(s.problems)} PROBLEMS"
        print(
            f"  {s.name}: {s.calls} steps in {s.gateways} runs, 1..{s.writes} each, "
            f"{len(s.rounds)} rounds: {verdict}",
            file=out,
        )
        for problem in s.problems[:10]:
            print(f"    {problem}", file=out)


def write_manifests(base: Path, connectors: str) -> Path:
    """``reversi-connectors manifests fs --format json`` into ``base/manifests/fs.json``."""
    manifests = base / "manifests"
    manifests.mkdir()
    text = subprocess.run(
        [connectors, "manifests", "fs", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    json.loads(text)  # fail here, clearly, if it is not JSON
    (manifests / "fs.json").write_text(text, encoding="utf-8")
    return manifests


async def run_all(
    opts: argparse.Namespace, base: Path, manifests: Path, errlog: TextIO
) -> tuple[list[Scenario], str, dict[str, float]]:
    gateway, connectors = executable("reversi-gateway"), executable("reversi-connectors")
    n, w = opts.gateways, opts.writes
    scenarios = [
        Scenario("sqlite, 1 gateway", "sqlite", 1, w),
        Scenario("postgresql, 1 gateway", "postgresql", 1, w),
        Scenario(f"postgresql, {n} gateways", "postgresql", n, w),
        Scenario(f"sqlite, {n} gateways (one file)", "sqlite", n, w),
    ]
    with postgres(opts) as server:
        settings = server_settings(server.admin_url)
        for r in range(opts.repeat):  # every scenario in turn, round after round: a
            for i, scenario in enumerate(scenarios):  # machine that slows slows them alike
                where = base / f"round-{r}-scenario-{i}"
                await run_one(scenario, where, server, (gateway, connectors), manifests, errlog)
        from reversi_core.testing.postgres import fresh_schema

        alone = {"sqlite": journal_alone(str(base / "alone"), 1000)}
        with fresh_schema(server, prefix="bench") as journal:
            alone["postgresql"] = journal_alone(journal, 1000)
    return scenarios, settings, alone


async def run_one(
    scenario: Scenario,
    where: Path,
    server: Any,
    tools: tuple[str, str],
    manifests: Path,
    errlog: TextIO,
) -> None:
    """One round of ``scenario`` in a fresh journal under ``where``, then its checks."""
    from reversi_core.testing.postgres import fresh_schema

    await anyio.Path(where).mkdir()
    print(f"{scenario.name}: {scenario.calls} writes ...", file=sys.stderr, flush=True)
    if scenario.store == "sqlite":
        journal = str(where / "data")
        runs = await drive(scenario, journal, where, tools, manifests, errlog)
        check(scenario, journal, runs, where)
        return
    with fresh_schema(server, prefix="bench") as journal:
        print(f"  journal {describe_location(journal)}", file=sys.stderr, flush=True)
        runs = await drive(scenario, journal, where, tools, manifests, errlog)
        check(scenario, journal, runs, where)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gateways", type=int, default=8, help="gateways at once (default 8)")
    parser.add_argument("--writes", type=int, default=250, help="writes per gateway (default 250)")
    parser.add_argument(
        "--url", help="an existing PostgreSQL server (a role that may CREATE SCHEMA)"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of every scenario (the median is shown)"
    )
    parser.add_argument("--fsync-off", action="store_true", help="start the server without fsync")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    opts = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="reversi-scale-"))
    errpath = base / "servers.err"
    try:
        manifests = write_manifests(base, executable("reversi-connectors"))
        with errpath.open("w") as errlog:
            scenarios, settings, alone = anyio.run(run_all, opts, base, manifests, errlog)
    except Exception as exc:  # a report: say what broke, and the servers' last words
        print(f"journal_scale: {type(exc).__name__}: {exc}", file=sys.stderr)
        if errpath.exists():
            print(
                "".join(errpath.read_text(errors="replace").splitlines(True)[-20:]), file=sys.stderr
            )
        return 1
    finally:
        if not opts.keep:
            shutil.rmtree(base, ignore_errors=True)
    report(scenarios, settings, alone, sys.stdout)
    if opts.json:
        figures = {
            "settings": settings,
            "journal_alone_writes_per_second": alone,
            "scenarios": [
                {
                    "name": s.name,
                    "store": s.store,
                    "gateways": s.gateways,
                    "calls": s.calls,
                    "seconds": s.rounds,
                    "calls_per_second": s.rate,
                    "median_ms": statistics.median(s.latencies) * 1e3,
                    "problems": s.problems,
                }
                for s in scenarios
            ],
        }
        Path(opts.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 1 if any(s.problems for s in scenarios) else 0


if __name__ == "__main__":
    sys.exit(main())
