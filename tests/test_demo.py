"""The README's demo command, run as a test: the agent's run is rolled back completely."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_demo_rolls_the_tree_back_byte_for_byte() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "OK: the tree is byte for byte as before the run" in out
    assert "OK: a second rollback changed nothing and reported complete" in out
    # the escape attempt was refused and journaled, not executed
    assert "refused" in out
