#!/usr/bin/env python3
"""The README's demo: an agent's scripted run on a temporary tree, then its rollback.

1. Make a small project tree in a temporary directory and fingerprint it.
2. Play an agent's run through the engine with the fs connector: reads, an overwrite,
   new nested directories and files, a delete, a move, and one call the connector
   refuses (a path escaping the root). Every call is journaled in a SQLite journal.
3. Print the journal with ``reversi show``.
4. Roll the run back with ``reversi rollback RUN --compensator-cmd
   "reversi-connectors compensate --root DIR"`` (a separate process per compensation).
5. Check that the tree is byte for byte as it was (backup directory aside), and exit
   non-zero if it is not.

    python scripts/demo.py [--keep]      # --keep leaves the temporary directory in place
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from reversi_core import (
    EffectUncertainError,
    Run,
    SQLiteJournal,
    ToolError,
    executor_for,
    registry_for,
)
from reversi_core.connector import load_connector_class

BACKUP_DIR = ".reversi-backups"


def make_tree(root: Path) -> None:
    """A small project: text, a binary file with an unusual mode, an empty directory."""
    (root / "src").mkdir()
    (root / "data").mkdir()
    (root / "notes").mkdir()
    (root / "empty").mkdir()
    (root / "README.md").write_text("# Widget\n\nA small project the agent will tidy up.\n")
    (root / "src" / "app.py").write_text("def main():\n    print('hello')\n")
    (root / "notes" / "todo.txt").write_text("- ship it\n- write docs\n")
    logo = root / "data" / "logo.bin"
    logo.write_bytes(bytes(range(256)) * 4 + b"\xff\xfe\x00")
    logo.chmod(0o640)


def fingerprint(root: Path) -> dict[str, tuple[str, int, str]]:
    """``{relative path: (kind, mode, sha256)}`` of everything under ``root`` except backups."""
    out: dict[str, tuple[str, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) == root and d == BACKUP_DIR))
        for name in dirnames:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = ("dir", p.stat().st_mode & 0o7777, "")
        for name in sorted(filenames):
            p = Path(dirpath) / name
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
            out[str(p.relative_to(root))] = ("file", p.stat().st_mode & 0o7777, digest)
    return out


AGENT_SCRIPT: list[tuple[str, dict[str, object], str]] = [
    ("fs.list_dir", {"path": "."}, "look around"),
    ("fs.read_file", {"path": "src/app.py"}, "read the entry point"),
    (
        "fs.write_file",
        {"path": "src/app.py", "content": "def main():\n    print('hello, world')\n"},
        "improve the greeting",
    ),
    ("fs.make_dir", {"path": "reports/2026"}, "make room for reports"),
    (
        "fs.write_file",
        {"path": "reports/2026/summary.md", "content": "# Summary\n\nAll done.\n"},
        "write a summary",
    ),
    ("fs.delete_file", {"path": "notes/todo.txt"}, "the todo list is done"),
    ("fs.make_dir", {"path": "assets"}, "a home for binary assets"),
    (
        "fs.move_file",
        {"source": "data/logo.bin", "destination": "assets/logo.bin"},
        "move the logo",
    ),
    ("fs.write_file", {"path": "../outside.txt", "content": "escape"}, "try to leave the root"),
]


async def play_agent(root: Path, data: Path) -> str:
    fs = load_connector_class("fs")(root=root)
    journal = SQLiteJournal.open(data)
    registry = registry_for([fs])
    run = Run.start(journal, registry, executor=executor_for([fs]), label="demo agent")
    print(f"run {run.id}: scope {', '.join(sorted(run.scope))}\n")
    for tool, args, reason in AGENT_SCRIPT:
        try:
            step, result = await run.call(tool, dict(args), reason=reason)
            shown = {k: v for k, v in result.items() if k not in ("content", "entries")}
            print(f"  step {step}: {tool} {args.get('path') or args.get('source')} -> ok {shown}")
        except (ToolError, EffectUncertainError) as exc:
            print(f"  {tool} {args.get('path')} -> refused: {exc}")
    journal.close()
    await fs.aclose()
    return run.id


def cli(*argv: str) -> int:
    print(f"\n$ {shlex.join(argv)}", flush=True)
    return subprocess.run(argv, check=False).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description="Reversi demo: an agent's run and its rollback.")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    opts = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="reversi-demo-"))
    root, data = base / "project", base / "reversi-data"
    root.mkdir()
    try:
        make_tree(root)
        before = fingerprint(root)
        print(f"project tree: {root} ({len(before)} entries)\n")
        run_id = asyncio.run(play_agent(root, data))
        after_run = fingerprint(root)
        changed = sorted(set(before.items()) ^ set(after_run.items()))
        print(f"\nthe agent changed {len({p for p, _ in changed})} paths")

        bin_dir = Path(sys.executable).parent
        reversi = shutil.which("reversi", path=str(bin_dir)) or "reversi"
        connectors = shutil.which("reversi-connectors", path=str(bin_dir)) or "reversi-connectors"
        cli(reversi, "show", run_id, "--data", str(data))
        compensator = f"{shlex.quote(connectors)} compensate --root {shlex.quote(str(root))}"
        code = cli(
            reversi, "rollback", run_id, "--data", str(data), "--compensator-cmd", compensator
        )
        after = fingerprint(root)
        if code != 0:
            print(f"\nrollback exited {code}: not complete")
            return 1
        if after != before:
            diff = sorted({p for p, _ in set(before.items()) ^ set(after.items())})
            print(f"\nFAILED: the tree differs from before the run: {diff}")
            return 1
        print(
            f"\nOK: the tree is byte for byte as before the run ({len(after)} entries, modes included;"
            f" backups kept in {BACKUP_DIR}/)"
        )
        code = cli(
            reversi, "rollback", run_id, "--data", str(data), "--compensator-cmd", compensator
        )
        if code != 0 or fingerprint(root) != before:
            print("\nFAILED: a second rollback was not a no-op")
            return 1
        print("\nOK: a second rollback changed nothing and reported complete")
        return 0
    finally:
        if opts.keep:
            print(f"\nkept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
