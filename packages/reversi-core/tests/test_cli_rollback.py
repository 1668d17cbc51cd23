"""``reversi rollback`` in parallel: ``--parallel``, the live display, ``--dry-run`` and Ctrl-C.

Runs are played in-process with the ``note`` test connector (``cli_fixture/``), whose
``note.create`` declares the note it touches: six notes are six independent steps.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from reversi_core import Run, SQLiteJournal, executor_for, registry_for
from reversi_core.cli import reversi
from reversi_core.connector import load_connector_class
from reversi_core.journal import RollbackState

FIXTURE = Path(__file__).resolve().parent / "cli_fixture"
NOTES = 6

COMPENSATOR = """\
import json, sys, time
from pathlib import Path
call = json.load(sys.stdin)
log = Path(sys.argv[1])
with log.open("a") as f:
    f.write(f"start {call['step']}\\n")
time.sleep(float(sys.argv[2]))
with log.open("a") as f:
    f.write(f"end {call['step']}\\n")
if str(call["step"]) in sys.argv[3:]:
    print(f"step {call['step']} refused", file=sys.stderr)
    sys.exit(1)
"""
"""A compensator that logs each call's start and end, takes argv[2] seconds, and fails
for the steps listed after that."""


@dataclass
class Notes:
    data: Path
    root: Path
    run_id: str
    env: dict[str, str]
    tmp: Path

    def compensator(self, delay: float = 0.0, *failing: int) -> str:
        script = self.tmp / "compensate.py"
        script.write_text(COMPENSATOR)
        argv = [sys.executable, str(script), str(self.log), str(delay), *map(str, failing)]
        return shlex.join(argv)

    @property
    def log(self) -> Path:
        return self.tmp / "calls.log"

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def rows(self) -> list[str]:
        connection = sqlite3.connect(f"file:{self.data / 'journal.sqlite3'}?mode=ro", uri=True)
        try:
            return list(connection.iterdump())
        finally:
            connection.close()

    def states(self) -> dict[int, RollbackState | None]:
        with SQLiteJournal.open(self.data, create=False) as journal:
            return {s.seq: s.rollback_state for s in journal.list_steps(self.run_id)}


async def play(root: Path, data: Path) -> str:
    note = load_connector_class("note")(root=root)
    with SQLiteJournal.open(data) as journal:
        run = Run.start(
            journal,
            registry_for([note]),
            scope={"note:write", "note:read"},
            executor=executor_for([note]),
        )
        for i in range(1, NOTES + 1):
            await run.call("note.create", {"name": f"n{i}", "text": "x"})
        await run.call("note.read", {"name": "n1"})  # step 7: nothing to undo
        return run.id


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Notes:
    monkeypatch.syspath_prepend(str(FIXTURE))
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    run_id = anyio.run(play, root, data)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FIXTURE), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "200"
    return Notes(data, root, run_id, env, tmp_path)


def rollback(notes: Notes, *args: str, err: Console, out: Console | None = None) -> int:
    """``reversi rollback RUN --data DIR ARGS`` in this process, with the consoles given."""
    argv = ["rollback", notes.run_id, "--data", str(notes.data), *args]
    parsed = reversi.build_parser().parse_args(argv)
    return reversi._cmd_rollback(parsed, out or Console(file=io.StringIO(), width=200), err)


def console(*, terminal: bool) -> tuple[Console, io.StringIO]:
    text = io.StringIO()
    return Console(file=text, force_terminal=terminal, width=160, highlight=False), text


# -- the plan ---------------------------------------------------------------------------------


@pytest.mark.req("RB-15")
def test_a_dry_run_prints_the_plan_writes_nothing_and_the_rollback_then_runs_it(
    notes: Notes, capsys: pytest.CaptureFixture[str]
) -> None:
    before = notes.rows()
    assert (
        reversi.main(["rollback", notes.run_id, "--data", str(notes.data), "--dry-run", "--json"])
        == 0
    )
    plan = json.loads(capsys.readouterr().out)
    assert notes.rows() == before  # nothing journaled, not even the run's status
    assert notes.calls() == []
    assert plan["status"] == "open"
    assert plan["parallel"] == 16  # the default (DEFAULT_PARALLEL)
    assert plan["complete"] is True
    assert plan["waves"] == [[6, 5, 4, 3, 2, 1]]
    by_step = {s["step"]: s for s in plan["steps"]}
    assert by_step[7]["action"] == "not_applicable"
    assert by_step[3] == {
        "step": 3,
        "tool": "note.create",
        "action": "compensate",
        "reason": None,
        "wave": 1,
        "compensation": "note.delete",
        "resources": ["note:n3"],
        "after": [],
    }
    err, _ = console(terminal=False)
    assert rollback(notes, "--compensator-cmd", notes.compensator(), "--json", err=err) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["waves"] == plan["waves"]
    assert sorted(report["compensated_now"]) == [1, 2, 3, 4, 5, 6]


@pytest.mark.req("RB-15")
def test_a_dry_run_one_at_a_time_and_for_people(
    notes: Notes, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["rollback", notes.run_id, "--data", str(notes.data), "--dry-run"]
    assert reversi.main([*argv, "--parallel", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["waves"] == [[6], [5], [4], [3], [2], [1]]
    assert reversi.main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())  # as wide as the console is
    assert f"rollback plan of {notes.run_id} (open): 6 compensation(s) in 1 wave(s)" in text
    assert "at most 16 at once. Nothing has run." in text
    assert "note:n4" in text
    assert "Nothing to undo (read-only, failed, rejected or not applied): step(s) 7." in text
    assert "the rollback will be complete" in text
    assert f"reversi rollback {notes.run_id} --compensator-cmd CMD --data {notes.data}" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dry-run", "--overwrite", "2"], "--overwrite records a decision in the journal"),
        ([], "the following arguments are required: --compensator-cmd (unless --dry-run)"),
        (["--dry-run", "--parallel", "0"], "--parallel: must be at least 1: '0'"),
        (["--dry-run", "--parallel", "many"], "--parallel: not a whole number: 'many'"),
    ],
)
def test_bad_combinations_are_refused_before_anything_happens(
    notes: Notes, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = notes.rows()
    assert reversi.main(["rollback", notes.run_id, "--data", str(notes.data), *argv]) == 2
    assert message in capsys.readouterr().err
    assert notes.rows() == before


# -- the display -------------------------------------------------------------------------------


LINES = [f"  step {i} note.create: compensated" for i in range(6, 0, -1)]


def test_piped_the_progress_is_plain_lines_only(notes: Notes) -> None:
    err, text = console(terminal=False)
    assert rollback(notes, "--compensator-cmd", notes.compensator(), err=err) == 0
    lines = text.getvalue().splitlines()
    assert "\x1b" not in text.getvalue()
    assert sorted(lines) == sorted([*LINES, "  step 7 note.read: not_applicable"])
    assert lines[0] == "  step 7 note.read: not_applicable"  # decided first: nothing to run


def test_on_a_terminal_a_live_line_counts_done_running_failed_deferred_and_time(
    notes: Notes,
) -> None:
    err, text = console(terminal=True)
    status = rollback(
        notes, "--compensator-cmd", notes.compensator(1.0, 2), "--parallel", "3", err=err
    )
    assert status == 1  # step 2's compensation failed
    shown = text.getvalue()
    assert "\x1b[" in shown  # drawn for a terminal
    assert f"rolling back {notes.run_id}" in shown
    assert "3 running · 0 failed · 0 deferred" in shown  # while the first three ran
    assert "7/7" in shown  # every step decided, at the end
    assert "0 running · 1 failed · 0 deferred" in shown
    assert "0:00:0" in shown  # the time so far
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)  # the same text, without the styles
    for line in LINES:
        if "step 2 " not in line:
            assert line in plain.splitlines()
    failed = "  step 2 note.create: compensation_failed (note.delete failed: step 2 refused)"
    assert failed in plain.splitlines()


def test_with_json_even_a_terminal_gets_plain_lines_only(notes: Notes) -> None:
    err, text = console(terminal=True)
    assert rollback(notes, "--compensator-cmd", notes.compensator(), "--json", err=err) == 0
    assert "running ·" not in text.getvalue()
    assert f"rolling back {notes.run_id}" not in text.getvalue()


@pytest.mark.req("RB-11")
def test_parallel_one_runs_one_compensation_at_a_time_newest_first(notes: Notes) -> None:
    err, _ = console(terminal=False)
    assert (
        rollback(notes, "--compensator-cmd", notes.compensator(0.05), "--parallel", "1", err=err)
        == 0
    )
    expected = [f"{what} {i}" for i in range(6, 0, -1) for what in ("start", "end")]
    assert notes.calls() == expected


@pytest.mark.req("RB-11")
def test_by_default_independent_compensations_overlap(notes: Notes) -> None:
    err, _ = console(terminal=False)
    assert rollback(notes, "--compensator-cmd", notes.compensator(0.5), err=err) == 0
    calls = notes.calls()
    assert calls.index("end 6") > max(calls.index(f"start {i}") for i in range(1, 7))
    assert sorted(calls) == sorted(f"{w} {i}" for i in range(1, 7) for w in ("start", "end"))


# -- Ctrl-C ------------------------------------------------------------------------------------


def script(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"console script {name} is not installed"
    return path


@pytest.mark.req("RB-14")
def test_ctrl_c_starts_no_more_compensations_and_lets_the_running_ones_finish(
    notes: Notes,
) -> None:
    """SIGINT to the whole process group, as a terminal sends it: the compensator
    processes (in sessions of their own) finish, their outcomes are journaled, no other
    starts, and the same command run again completes the rollback."""
    argv = [
        script("reversi"),
        "rollback",
        notes.run_id,
        "--data",
        str(notes.data),
        "--parallel",
        "2",
        "--compensator-cmd",
    ]
    proc = subprocess.Popen(
        [*argv, notes.compensator(1.0)],
        env=notes.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group of its own, as a terminal's job
    )
    deadline = time.monotonic() + 60
    while len([c for c in notes.calls() if c.startswith("start")]) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, notes.calls()
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert sorted(notes.calls()) == ["end 5", "end 6", "start 5", "start 6"]
    states = notes.states()
    assert states[6] is states[5] is RollbackState.COMPENSATED
    assert [states[i] for i in (4, 3, 2, 1)] == [None] * 4
    again = subprocess.run(
        [*argv, notes.compensator()],
        env=notes.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    started = [c for c in notes.calls() if c.startswith("start")]
    assert sorted(started) == sorted(f"start {i}" for i in range(1, 7))  # 5 and 6 not twice


# -- a pending step in the plan -----------------------------------------------------------------


def _pending_step(location: str, *, gone: bool) -> str:
    """A run whose one step, a write, is pending: its call started, no outcome journaled.
    ``gone``: its owner is a process of this host that has exited (a gateway SIGKILLed);
    else this process, which lives."""
    from _stores import sql

    from reversi_core.journal import open_journal

    with open_journal(location) as journal:
        run = journal.create_run("run_pending", ["x:y"], None)
        journal.begin_step(run.id, "mem.put", "reversible", "x:y", {}, None, None, [])
    if gone:
        exited = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        )
        owner = sql(location, "SELECT owner FROM steps")[0][0]
        host, _, start = owner.rsplit(":", 2)
        mark = "%s" if location.startswith("postgresql://") else "?"
        sql(
            location,
            f"UPDATE steps SET owner = {mark}",
            [f"{host}:{exited.stdout.strip()}:{start}"],
        )
    return run.id


def test_a_dry_run_says_of_a_step_whose_process_is_gone_what_show_says(
    location: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _pending_step(location, gone=True)
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv("REVERSI_JOURNAL", location)
    assert reversi.main(["show", run_id]) == 0
    assert "pending (process gone)" in " ".join(capsys.readouterr().out.split())
    assert reversi.main(["rollback", run_id, "--dry-run", "--json"]) == 1
    (step,) = json.loads(capsys.readouterr().out)["steps"]
    assert step["action"] == "uncertain"
    assert step["reason"].startswith("pending (process gone): the process that made the call")
    assert "it is made uncertain when a process that writes the journal opens it" in step["reason"]
    assert "still running" not in step["reason"]
    assert reversi.main(["rollback", run_id, "--dry-run"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "Uncertain or pending" in out
    assert "pending (process gone)" in out
    # the resolve it names is taken: the command writes, so it opens the journal as a
    # writer, which makes the step uncertain first
    assert reversi.main(["resolve", run_id, "1", "--not-applied"]) == 0


def test_a_dry_run_never_suggests_resolving_a_step_still_running(
    location: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _pending_step(location, gone=False)
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv("REVERSI_JOURNAL", location)
    assert reversi.main(["rollback", run_id, "--dry-run", "--json"]) == 1
    (step,) = json.loads(capsys.readouterr().out)["steps"]
    assert step["reason"].startswith("still running in another process")
    assert "unknown" not in step["reason"]
    assert "reversi resolve" not in step["reason"]
    # which would be refused: the step is not uncertain
    assert reversi.main(["resolve", run_id, "1", "--not-applied"]) == 2
    assert "not uncertain" in capsys.readouterr().err


KILL_JOURNAL = """\
import json, sys
import psycopg
call = json.load(sys.stdin)
with psycopg.connect(sys.argv[1], autocommit=True) as conn:  # the journal's session goes
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        [sys.argv[2]],
    )
"""
"""A compensator that succeeds after ending the journal's connection to its server."""


def test_a_connection_lost_during_a_rollback_says_to_run_it_again(
    pg_location: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import secrets

    from reversi_core.journal import open_journal

    monkeypatch.syspath_prepend(str(FIXTURE))
    tag = f"lost-{secrets.token_hex(4)}"
    glue = "&" if "?" in pg_location else "?"
    url = f"{pg_location}{glue}application_name={tag}"
    root = tmp_path / "root"
    root.mkdir()

    async def play() -> str:
        note = load_connector_class("note")(root=root)
        with open_journal(url) as journal:
            run = Run.start(
                journal, registry_for([note]), scope={"note:write"}, executor=executor_for([note])
            )
            for i in range(3):
                await run.call("note.create", {"name": f"n{i}", "text": "x"})
            return run.id

    run_id = anyio.run(play)
    script = tmp_path / "kill.py"
    script.write_text(KILL_JOURNAL)
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv("REVERSI_JOURNAL", url)
    kill = shlex.join([sys.executable, str(script), pg_location, tag])
    argv = ["rollback", run_id, "--compensator-cmd", kill, "--parallel", "1"]
    assert reversi.main(argv) == 3
    err = " ".join(capsys.readouterr().err.split())
    assert "the connection to the server was lost" in err
    assert "run the same 'reversi rollback' command again to continue" in err
    # and running it again does continue
    assert reversi.main([*argv[:3], shlex.join([sys.executable, "-c", "pass"]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["complete"] is True


# -- --parallel's bound, and a plan of a run being rolled back ----------------------------------


def test_parallel_above_its_bound_is_refused_with_the_bound(
    notes: Notes, capsys: pytest.CaptureFixture[str]
) -> None:
    from reversi_core import Run as EngineRun
    from reversi_core import compensator_for
    from reversi_core.engine import MAX_PARALLEL

    assert MAX_PARALLEL == 256
    argv = ["rollback", notes.run_id, "--data", str(notes.data), "--dry-run", "--parallel"]
    assert reversi.main([*argv, "257"]) == 2
    assert "at most 256 compensations run at once" in capsys.readouterr().err
    assert reversi.main([*argv, "256", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parallel"] == 256
    with SQLiteJournal.open(notes.data) as journal:
        run = EngineRun.open(journal, registry_for([]), notes.run_id)
        with pytest.raises(ValueError, match="at most 256"):
            run.plan_rollback(parallel=257)

        async def roll() -> None:
            await run.rollback(compensate=compensator_for([]), parallel=1000)

        with pytest.raises(ValueError, match="at most 256"):
            anyio.run(roll)


@pytest.mark.parametrize("alive", [True, False], ids=["live", "gone"])
def test_a_dry_run_says_when_another_process_is_rolling_the_run_back(
    alive: bool,
    location: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from _stores import sql

    from reversi_core.journal import open_journal
    from reversi_core.journal._owner import process_owner

    with open_journal(location) as journal:
        journal.create_run("run_busy", ["x:y"], None)
        journal.start_rollback("run_busy")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = process_owner(other.pid)
        if not alive:
            other.kill()
            other.wait()
        mark = "%s" if location.startswith("postgresql://") else "?"
        sql(location, f"UPDATE runs SET rollback_owner = {mark}", [owner])
        monkeypatch.delenv("REVERSI_DATA", raising=False)
        monkeypatch.setenv("REVERSI_JOURNAL", location)
        assert reversi.main(["rollback", "run_busy", "--dry-run", "--json"]) == 0
        plan = json.loads(capsys.readouterr().out)
        assert plan["status"] == "rolling_back"
        assert reversi.main(["rollback", "run_busy", "--dry-run"]) == 0
        text = " ".join(capsys.readouterr().out.split())
    finally:
        other.kill()
        other.wait()
    if alive:
        assert plan["note"].startswith("another process is rolling this run back right now")
        assert "refused (status 4) until it ends" in plan["note"]
        assert "Note: another process is rolling this run back right now" in text
    else:
        assert plan["note"].startswith("a rollback of this run was left unfinished")
        assert "Note: a rollback of this run was left unfinished" in text


def test_a_credential_of_the_environment_a_compensator_echoes_is_scrubbed(
    notes: Notes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A compensator runs with the connector's credentials in its environment; what it
    prints of one (a token in an error message) is scrubbed from the report, the journal's
    rollback reason and ``show``, as ``reversi export`` scrubs it."""
    token = "ghp_echoedByTheCompensator0123456789"
    monkeypatch.setenv("GITHUB_TOKEN", token)
    script = notes.tmp / "leaky.py"
    script.write_text(
        "import os, sys; sys.stdin.read(); "
        "print('refused with ' + os.environ['GITHUB_TOKEN'], file=sys.stderr); sys.exit(3)\n"
    )
    cmd = shlex.join([sys.executable, str(script)])
    argv = ["rollback", notes.run_id, "--data", str(notes.data), "--compensator-cmd", cmd]
    assert reversi.main(argv) == 1
    assert reversi.main(["show", notes.run_id, "--data", str(notes.data), "--json"]) == 0
    captured = capsys.readouterr()
    assert "refused with" in captured.out + captured.err
    assert token not in captured.out + captured.err
    assert not [row for row in notes.rows() if token in row]
