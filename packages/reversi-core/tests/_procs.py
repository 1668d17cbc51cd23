"""Child Python processes for the crash and concurrency tests, and raw journal bytes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
PRELUDE = f"import sys\nsys.path.insert(0, {str(TESTS_DIR)!r})\n"


@contextmanager
def child(script: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """Run ``script`` (dedented) in a new interpreter; kill and reap it on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def wait_for_file(path: Path, proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    """Wait until ``path`` exists; fail with the child's stderr if it exits first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(
                f"child exited {proc.returncode} before {path.name}:\n{out}\n{err}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"child did not create {path} within {timeout} s")
        time.sleep(0.005)


def kill9(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the child and reap it (a zombie would still look alive)."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def signal_file(path: Path, text: str = "") -> None:
    """Create ``path`` atomically (for a child to tell the parent it got somewhere)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def journal_bytes(data_dir: Path) -> bytes:
    """Every byte of the journal's files (the database, its -wal and -shm)."""
    return b"".join(p.read_bytes() for p in sorted(data_dir.iterdir()) if p.is_file())
