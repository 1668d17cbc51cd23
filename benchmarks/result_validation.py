#!/usr/bin/env python
"""What checking each result against its output model costs ``Connector.call``.

Run from the repository root, with reversi-core and the fs connector installed (github
and postgres too, for their rows)::

    python benchmarks/result_validation.py            # 20,000 checks per result
    python benchmarks/result_validation.py --number 2000 --json figures.json

A report, not a test: it prints one line per figure and exits 0. Two measurements:

1. The check alone, as ``Connector.call`` makes it (the output model's compiled pydantic
   validator in strict mode), on results shaped like the real ones: ``fs.read_file``
   with 4 KiB of text, ``fs.list_dir`` with 100 entries, ``fs.write_file``,
   ``github.get_issue`` and ``postgres.query`` with 100 rows of 5 columns. Median and
   99th percentile of ``--number`` checks, in microseconds; and, for comparison, the
   same result checked with a ``jsonschema`` validator of the manifest's
   ``output_schema`` (how an MCP client checks ``structuredContent``).
2. Whole in-process ``Connector.call`` of ``fs.read_file`` (a 4 KiB file) and
   ``fs.list_dir`` (100 entries), ``--calls`` each with the check and with it replaced by
   a no-op, interleaved in blocks so that a machine that slows down slows both alike: the
   difference is what the check adds to a real call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from jsonschema import Draft202012Validator

from reversi_core import connector as core_connector
from reversi_core.connector import Connector, load_connector_class


def samples() -> list[tuple[str, dict[str, Any]]]:
    """``(tool, result)`` pairs shaped like what the connectors return."""
    out: list[tuple[str, dict[str, Any]]] = [
        (
            "fs.read_file",
            {"path": "a.txt", "content": "x" * 4096, "encoding": "utf-8", "size": 4096},
        ),
        (
            "fs.list_dir",
            {
                "path": ".",
                "entries": [
                    {"name": f"file-{i:03d}.txt", "type": "file", "size": 100 + i}
                    for i in range(100)
                ],
                "truncated": False,
            },
        ),
        (
            "fs.write_file",
            {"path": "a.txt", "existed": True, "backup": "a.txt.1-abc", "size": 1024, "mode": 420},
        ),
        (
            "github.get_issue",
            {
                "owner": "octo",
                "repo": "hello",
                "number": 42,
                "title": "A bug",
                "body": "It breaks " * 50,
                "state": "open",
                "state_reason": None,
                "labels": ["bug", "p1", "needs-triage"],
                "comments": 3,
                "html_url": "https://github.com/octo/hello/issues/42",
                "is_pull_request": False,
            },
        ),
        (
            "postgres.query",
            {
                "columns": ["id", "name", "price", "created", "tags"],
                "rows": [
                    [i, f"item {i}", "19.90", "2026-11-30T12:00:00+00:00", ["a", "b"]]
                    for i in range(100)
                ],
                "row_count": 100,
                "truncated": False,
            },
        ),
    ]
    return out


def installed(tool: str) -> type[Connector] | None:
    try:
        return load_connector_class(tool.split(".", 1)[0])
    except Exception:
        return None


def timed(func: Callable[[], object], number: int) -> list[float]:
    """Seconds of each of ``number`` calls of ``func``."""
    out = []
    clock = time.perf_counter
    for _ in range(number):
        start = clock()
        func()
        out.append(clock() - start)
    return out


def summary(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "median_us": statistics.median(ordered) * 1e6,
        "p99_us": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e6,
    }


def check_alone(number: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for tool, result in samples():
        cls = installed(tool)
        if cls is None:
            print(f"{tool:18} skipped: its connector is not installed")
            continue
        spec = cls.tool_specs()[tool]
        manifest = next(m for m in cls.manifests() if m.name == tool)
        core_connector._checked_result(tool, spec, result)  # it passes, or the sample is wrong
        validator = Draft202012Validator(manifest.output_schema or {})
        assert validator.is_valid(result), tool
        pydantic_figures = summary(
            timed(lambda s=spec, t=tool, r=result: core_connector._checked_result(t, s, r), number)
        )
        schema_figures = summary(
            timed(lambda v=validator, r=result: v.is_valid(r), max(200, number // 20))
        )
        figures[tool] = {"check": pydantic_figures, "jsonschema": schema_figures}
        print(
            f"{tool:18} check: median {pydantic_figures['median_us']:7.1f} us, "
            f"p99 {pydantic_figures['p99_us']:7.1f} us   "
            f"(jsonschema: median {schema_figures['median_us']:8.1f} us)"
        )
    return figures


def files(root: Path) -> None:
    """``a.txt`` (4 KiB) and ``d/`` with 100 small files under ``root``."""
    (root / "a.txt").write_text("x" * 4096)
    (root / "d").mkdir()
    for i in range(100):
        (root / "d" / f"file-{i:03d}.txt").write_text("y" * (100 + i))


async def whole_calls(calls: int, block: int = 100) -> dict[str, Any]:
    """In-process fs calls with and without the check, interleaved in blocks."""
    fs = load_connector_class("fs")
    real = core_connector._checked_result

    def unchecked(name: str, spec: Any, result: Any) -> dict[str, Any]:
        return result  # type: ignore[no-any-return]

    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="reversi-bench-") as root:
        files(Path(root))
        connector = fs.from_env(os.environ, root=root)
        for tool, args, what in (
            ("fs.read_file", {"path": "a.txt"}, "a 4 KiB file"),
            ("fs.list_dir", {"path": "d"}, "100 entries"),
        ):
            for _ in range(200):  # warm up
                await connector.call(tool, args)
            times: dict[str, list[float]] = {"checked": [], "unchecked": []}
            clock = time.perf_counter
            done = 0
            while done < calls:
                for label, check in (("checked", real), ("unchecked", unchecked)):
                    core_connector._checked_result = check  # type: ignore[assignment]
                    try:
                        for _ in range(block):
                            start = clock()
                            await connector.call(tool, args)
                            times[label].append(clock() - start)
                    finally:
                        core_connector._checked_result = real
                done += block
            checked, without = summary(times["checked"]), summary(times["unchecked"])
            added = checked["median_us"] - without["median_us"]
            print(
                f"{tool} call ({what}): median {checked['median_us']:.1f} us with the check, "
                f"{without['median_us']:.1f} us without: {added:+.1f} us per call "
                f"({added / without['median_us'] * 100:+.1f}%)"
            )
            figures[tool] = {"checked": checked, "unchecked": without, "added_us": added}
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=20_000, help="checks per result")
    parser.add_argument("--calls", type=int, default=5_000, help="calls per tool and side")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f}")
    figures = {"check_alone": check_alone(args.number)}
    figures["whole_calls"] = anyio.run(whole_calls, args.calls)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
