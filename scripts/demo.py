#!/usr/bin/env python3
"""The README's demo: an agent's session through the gateway, then its rollback.

1. Make a small project tree in a temporary directory and fingerprint it.
2. Write the fs manifests (``reversi-connectors manifests fs``) and start
   ``reversi-gateway`` in front of ``reversi-connectors serve fs --root DIR``.
3. Play an agent's session with a real MCP client through the gateway: list and read,
   an overwrite, new nested directories and files, a delete, a move, and a call the
   connector refuses (a path escaping the root). The gateway journals every call.
4. Print the journal with ``reversi show``.
5. Roll the run back with ``reversi rollback RUN --compensator-cmd
   "reversi-connectors compensate --root DIR"`` (a separate process per compensation).
6. Check that the tree is byte for byte as it was (backup directory aside), and that a
   second rollback changes nothing; exit non-zero otherwise.

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

from mcp import ClientSession, StdioServerParameters, stdio_client

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


def write_manifests(folder: Path, tools: dict[str, str]) -> Path:
    """What ``reversi-connectors manifests fs`` prints, in a folder of its own for the gateway."""
    folder.mkdir()
    listing = subprocess.run(
        [tools["reversi-connectors"], "manifests", "fs", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    (folder / "fs.json").write_text(listing.stdout)
    return folder


async def play_agent(root: Path, data: Path, tools: dict[str, str]) -> str:
    """Drive the gateway with an MCP client session; return the run id it journaled."""
    manifests = write_manifests(data.parent / "manifests", tools)
    upstream = ["serve", "fs", "--root", str(root)]
    gateway = StdioServerParameters(
        command=tools["reversi-gateway"],
        args=[
            "--manifests",
            str(manifests),
            "--data",
            str(data),
            "--upstream-cmd",
            tools["reversi-connectors"],
            *[arg for a in upstream for arg in ("--upstream-arg", a)],
        ],
    )
    run_id = ""
    print(f"$ reversi-gateway --manifests {manifests} --data {data} \\")
    print(
        f"    --upstream-cmd reversi-connectors {' '.join('--upstream-arg ' + a for a in upstream)}\n"
    )
    with (data.parent / "gateway.log").open("w") as log:
        async with (
            stdio_client(gateway, errlog=log) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            print(
                f"the agent sees {len(listed.tools)} tools: "
                f"{', '.join(sorted(t.name for t in listed.tools))}\n"
            )
            for tool, args, reason in AGENT_SCRIPT:
                result = await session.call_tool(tool, dict(args), meta={"reversi/reason": reason})
                meta = result.meta or {}
                run_id = str(meta.get("reversi/run", run_id))
                where = args.get("path") or args.get("source")
                if result.is_error:
                    error = (result.structured_content or {}).get("error", {})
                    print(
                        f"  step {meta.get('reversi/step')}: {tool} {where} -> refused: "
                        f"{error.get('message', result.content)}"
                    )
                    continue
                shown = {
                    k: v
                    for k, v in (result.structured_content or {}).items()
                    if k not in ("content", "entries")
                }
                print(f"  step {meta.get('reversi/step')}: {tool} {where} -> ok {shown}")
    return run_id


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
        bin_dir = Path(sys.executable).parent
        tools = {
            name: shutil.which(name, path=str(bin_dir)) or shutil.which(name) or name
            for name in ("reversi", "reversi-connectors", "reversi-gateway")
        }
        reversi, connectors = tools["reversi"], tools["reversi-connectors"]
        run_id = asyncio.run(play_agent(root, data, tools))
        if not run_id:
            print("FAILED: the gateway returned no run id")
            return 1
        after_run = fingerprint(root)
        changed = sorted(set(before.items()) ^ set(after_run.items()))
        print(f"\nthe agent changed {len({p for p, _ in changed})} paths")

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
