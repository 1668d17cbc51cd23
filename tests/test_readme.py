"""The README's worked example, run as written, in order, in an empty directory.

Its code blocks are taken from README.md itself (the Python one saved as ``agent.py``,
as the text says), so the example cannot drift from what works: the run it makes must
be listed and shown, and the rollback must undo it, then say ``already compensated``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worked_example() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## A worked example", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(sh|python)\n(.*?)```", section, flags=re.DOTALL)


def test_the_worked_example_runs_in_the_order_written_and_undoes_the_run(tmp_path: Path) -> None:
    blocks = worked_example()
    assert [kind for kind, _ in blocks] == ["sh", "python", "sh"]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("REVERSI_DATA", None)
    outputs = []
    for kind, code in blocks:
        if kind == "python":
            (tmp_path / "agent.py").write_text(code)
            continue
        done = subprocess.run(
            ["bash", "-e", "-c", code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        outputs.append(done.stdout + done.stderr)
    run_id = (tmp_path / "run-id.txt").read_text().strip()
    assert run_id.startswith("run_")
    final = outputs[-1]
    assert "hi" in final  # the file the agent wrote, before the rollback
    assert "rollback complete: 2 compensation(s) ran now" in final
    assert os.listdir(tmp_path / "work") == []  # undone: the directory and its file are gone
    again = subprocess.run(
        [
            "reversi",
            "rollback",
            run_id,
            "--data",
            "./reversi-data",
            "--compensator-cmd",
            "reversi-connectors compensate --root ./work",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stderr.count("already compensated") == 2
    assert again.stdout.count("already compensated") == 2
    assert "0 compensation(s) ran now" in again.stdout
