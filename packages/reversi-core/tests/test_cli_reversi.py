"""``reversi``: runs, show, rollback and resolve on journals written by the engine.

Runs are played in-process with the ``note`` test connector (``cli_fixture/``); rollbacks
go through ``--compensator-cmd "reversi-connectors compensate --root DIR"``, a separate
process per compensation, as in production.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from reversi_core import Run, SQLiteJournal, executor_for, register_secret, registry_for
from reversi_core.cli.reversi import main, os_user
from reversi_core.connector import load_connector_class
from reversi_core.journal import RollbackState

FIXTURE = Path(__file__).resolve().parent / "cli_fixture"


def script(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"console script {name} is not installed (pip install -e packages/reversi-core)"
    return path


def one_error_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    assert lines[0].startswith("reversi: error: "), lines[0]
    return lines[0]


@dataclass
class Played:
    data: Path
    root: Path
    run_id: str
    env: dict[str, str]

    @property
    def compensator(self) -> str:
        program = shlex.quote(script("reversi-connectors"))
        return f"{program} compensate --root {shlex.quote(str(self.root))}"

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [script("reversi"), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            check=False,
        )


SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("note.create", {"name": "a", "text": "hello"}),  # 1 succeeded, compensated by note.delete
    ("note.read", {"name": "a"}),  # 2 read-only
    ("note.create", {"name": "a", "text": "again"}),  # 3 failed (exists)
    ("note.flaky", {"name": "b", "text": "maybe"}),  # 4 uncertain (it did write)
    ("note.delete", {"name": "a"}),  # 5 rejected: no note:delete permission
    ("note.publish", {"name": "a"}),  # 6 rejected: needs approval
    ("note.create", {"name": "c", "text": "x" * 300}),  # 7 succeeded
]


async def play(root: Path, data: Path, steps: list[tuple[str, dict[str, Any]]]) -> str:
    note = load_connector_class("note")(root=root)
    with SQLiteJournal.open(data) as journal:
        run = Run.start(
            journal,
            registry_for([note]),
            scope={"note:write", "note:read", "note:publish"},
            executor=executor_for([note]),
            label="cli test",
        )
        for tool, args in steps:
            try:
                await run.call(tool, dict(args), reason=f"the agent wanted {tool}")
            except Exception:
                continue
        return run.id


@pytest.fixture
def played(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Played:
    monkeypatch.syspath_prepend(str(FIXTURE))
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    run_id = anyio.run(play, root, data, SCRIPT)
    # child processes (the compensator, the console scripts) find the test connectors too
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(FIXTURE), os.environ.get("PYTHONPATH")]))
    )
    env = dict(os.environ)
    env["COLUMNS"] = "200"
    return Played(data, root, run_id, env)


def run_status(p: Played) -> str:
    with SQLiteJournal.open(p.data, create=False) as journal:
        return journal.get_run(p.run_id).status.value


# -- runs ---------------------------------------------------------------------------------------


def test_runs_table(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--data", str(played.data)]) == 0
    out = capsys.readouterr().out
    assert played.run_id in out
    assert "open" in out
    assert "cli test" in out
    assert " 7 " in out


def test_runs_json(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--json", "--data", str(played.data)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data) == 1
    assert {"id", "started_at", "status", "steps"} <= set(data[0])
    assert data[0]["id"] == played.run_id
    assert data[0]["status"] == "open"
    assert data[0]["steps"] == 7


def test_runs_reads_reversi_data(
    played: Played, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REVERSI_DATA", str(played.data))
    assert main(["runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["id"] == played.run_id


def test_runs_on_an_empty_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    SQLiteJournal.open(tmp_path / "data").close()
    assert main(["runs", "--data", str(tmp_path / "data")]) == 0
    assert "no runs" in capsys.readouterr().out
    assert main(["runs", "--json", "--data", str(tmp_path / "data")]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_runs_console_script(played: Played) -> None:
    proc = played.cli("runs", "--json", "--data", str(played.data))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["id"] == played.run_id


# -- show ---------------------------------------------------------------------------------------


def test_show_marks_uncertain_steps_with_how_to_resolve(
    played: Played, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", played.run_id, "--data", str(played.data)]) == 0
    out = capsys.readouterr().out
    assert f"run {played.run_id}" in out
    for tool in ("note.create", "note.read", "note.flaky", "note.publish"):
        assert tool in out
    assert "UNCERTAIN" in out
    assert "note a exists" in out  # the failed step's error
    assert "note:delete" in out  # the rejected step's reason
    assert f"reversi resolve {played.run_id} 4 --applied|--not-applied --data {played.data}" in out


def test_a_read_left_uncertain_needs_no_resolving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A gateway killed between a read's answer and its outcome leaves the read pending;
    # the next open that writes makes it uncertain (show only reads the journal: it says
    # so). Nothing is asked of a person for it.
    data = tmp_path / "data"
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    with SQLiteJournal.open(data) as journal:
        run = journal.create_run("run_read", ["note:read"], None)
        step = journal.begin_step(run.id, "note.read", "read_only", "note:read", {}, None, None, [])
        owner = journal._conn.execute("SELECT owner FROM steps").fetchone()[0]
        host, _, start = owner.rsplit(":", 2)
        journal._conn.execute(  # the owner: a process that has exited
            "UPDATE steps SET owner = ?", (f"{host}:{gone.stdout.strip()}:{start}",)
        )
    assert main(["show", run.id, "--data", str(data)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "pending (process gone)" in out
    assert "reversi resolve" not in out
    assert main(["rollback", run.id, "--compensator-cmd", "true", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "rollback complete" in out
    assert "uncertain step" not in out
    with SQLiteJournal.open(data) as journal:
        assert journal.get_step(run.id, step.seq).rollback_state is RollbackState.NOT_APPLICABLE


def test_show_json(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", played.run_id, "--json", "--data", str(played.data)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run"]["id"] == played.run_id
    states = [s["state"] for s in data["steps"]]
    assert states == [
        "succeeded",
        "succeeded",
        "failed",
        "uncertain",
        "rejected",
        "rejected",
        "succeeded",
    ]
    assert data["steps"][6]["args"]["text"] == "x" * 300  # JSON is never wrapped or cut
    assert data["steps"][0]["compensation"] == {
        "tool": "note.delete",
        "args": {"name": "a"},
        "resources": ["note:a"],  # what the compensation touches, rendered at call time
    }


def test_show_unknown_run(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "run_nope", "--data", str(played.data)]) == 2
    captured = capsys.readouterr()
    assert "no run 'run_nope'" in one_error_line(captured.err)
    assert captured.out == ""


def test_errors_are_scrubbed(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    secret = "ghp_cli_secret_4d1f0a9b"
    register_secret(secret)
    assert main(["show", secret, "--data", str(played.data)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert secret not in line
    assert "[REDACTED]" in line


# -- journal errors (status 3) --------------------------------------------------------------


def test_missing_data_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--data", str(tmp_path / "nothing")]) == 3
    assert "does not exist" in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "nothing").exists()  # read commands never create a journal


def test_data_dir_without_a_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "run_x", "--data", str(tmp_path)]) == 3
    assert "no journal" in one_error_line(capsys.readouterr().err)


def test_data_dir_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    assert main(["runs", "--data", str(tmp_path / "file")]) == 3
    one_error_line(capsys.readouterr().err)


def test_journal_with_a_newer_schema(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    conn = sqlite3.connect(played.data / "journal.sqlite3")
    conn.execute("PRAGMA user_version=99")
    conn.close()
    for argv in (
        ["runs"],
        ["show", played.run_id],
        ["rollback", played.run_id, "--compensator-cmd", "true"],
        ["resolve", played.run_id, "4", "--not-applied"],
    ):
        assert main([*argv, "--data", str(played.data)]) == 3, argv
        line = one_error_line(capsys.readouterr().err)
        assert "schema version 99" in line
        assert "upgrade reversi-core" in line


def test_journal_error_from_the_console_script(tmp_path: Path) -> None:
    proc = subprocess.run(
        [script("reversi"), "runs", "--data", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 3
    one_error_line(proc.stderr)
    assert "Traceback" not in proc.stderr


# -- usage errors (status 2) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["rollback", "run_x"],  # --compensator-cmd is required
        ["rollback", "run_x", "--compensator-cmd", "true", "--timeout", "0"],
        ["rollback", "run_x", "--compensator-cmd", "true", "--timeout", "soon"],
        ["resolve", "run_x", "4"],
        ["resolve", "run_x", "4", "--applied", "--not-applied"],
        ["resolve", "run_x", "four", "--applied"],
        ["rollback", "run_x", "--compensator-cmd", "true", "--overwrite", "three"],
    ],
)
def test_usage_errors(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--data", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    one_error_line(captured.err)
    assert captured.out == ""


def test_help_documents_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "exit status" in out
    for line in (
        "0  success",
        "1  rollback is incomplete",
        "2  usage",
        "3  journal error",
        "4  another process",
    ):
        assert line in out
    assert main(["rollback", "--help"]) == 0
    assert "--compensator-cmd" in capsys.readouterr().out


# -- rollback -------------------------------------------------------------------------------------


def test_rollback_end_to_end_through_the_compensator_process(played: Played) -> None:
    notes = played.root / "notes"
    assert sorted(p.name for p in notes.iterdir()) == ["a.txt", "b.txt", "c.txt"]

    first = played.cli(
        "rollback",
        played.run_id,
        "--data",
        str(played.data),
        "--compensator-cmd",
        played.compensator,
    )
    assert first.returncode == 1, first.stderr  # the uncertain step is outstanding
    assert "rollback incomplete" in first.stdout
    assert "step 7 note.create: compensated" in first.stderr  # progress on stderr
    assert f"reversi resolve {played.run_id} 4" in first.stdout
    assert sorted(p.name for p in notes.iterdir()) == ["b.txt"]
    assert run_status(played) == "rollback_incomplete"

    resolved = played.cli("resolve", played.run_id, "4", "--applied", "--data", str(played.data))
    assert resolved.returncode == 0, resolved.stderr
    assert 'note.delete {"name": "b"}' in resolved.stdout

    second = played.cli(
        "rollback",
        played.run_id,
        "--data",
        str(played.data),
        "--compensator-cmd",
        played.compensator,
        "--json",
    )
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["complete"] is True
    assert report["status"] == "complete"
    assert report["compensated_now"] == [4]  # 1 and 7 were not compensated twice
    assert "step 7 note.create: already compensated" in second.stderr
    assert "step 4 note.flaky: compensated" in second.stderr
    assert [s["step"] for s in report["steps"]] == [7, 6, 5, 4, 3, 2, 1]
    assert list(notes.iterdir()) == []
    assert run_status(played) == "rolled_back"
    keys = (played.root / "last-key").read_text()
    assert keys == f"reversi-{played.run_id}-4-undo"  # the key derives from the run and the step

    third = played.cli(
        "rollback",
        played.run_id,
        "--data",
        str(played.data),
        "--compensator-cmd",
        played.compensator,
    )
    assert third.returncode == 0
    assert "rollback complete" in third.stdout


@pytest.mark.req("RB-10")
def test_overwrite_is_recorded_for_the_steps_named_with_who_and_when(played: Played) -> None:
    rolled = played.cli(
        "rollback",
        played.run_id,
        "--data",
        str(played.data),
        "--compensator-cmd",
        played.compensator,
        "--overwrite",
        "7",
        "--overwrite",
        "1",
    )
    assert rolled.returncode == 1, rolled.stderr  # the uncertain step 4 is outstanding
    who = os_user()
    assert f"step 1 note.create: overwrite allowed by {who}" in rolled.stderr
    assert f"step 7 note.create: overwrite allowed by {who}" in rolled.stderr
    shown = played.cli("show", played.run_id, "--data", str(played.data), "--json")
    steps = {s["step"]: s for s in json.loads(shown.stdout)["steps"]}
    assert {n for n, s in steps.items() if s["overwrite"]} == {1, 7}
    assert steps[1]["overwrite"]["by"] == who
    assert isinstance(steps[1]["overwrite"]["at"], float)
    with SQLiteJournal.open(played.data, create=False) as journal:
        started = [
            e for e in journal.list_events(played.run_id) if e["kind"] == "compensation_started"
        ]
    assert {e["step"]: "overwrite" in e["detail"] for e in started} == {7: True, 1: True}
    table = played.cli("show", played.run_id, "--data", str(played.data))
    assert table.stdout.count(f"overwrite allowed: by {who} at ") == 2


@pytest.mark.req("RB-10")
@pytest.mark.parametrize(
    ("step", "words"),
    [
        ("2", "has no compensation to run, so there is nothing it could overwrite"),
        ("99", "has no step 99"),
    ],
)
def test_overwrite_of_a_step_without_a_compensation_to_run_touches_nothing(
    played: Played, step: str, words: str
) -> None:
    proc = played.cli(
        "rollback",
        played.run_id,
        "--data",
        str(played.data),
        "--compensator-cmd",
        played.compensator,
        "--overwrite",
        step,
    )
    assert proc.returncode == 2
    assert words in one_error_line(proc.stderr)
    assert run_status(played) == "open"  # refused before the rollback began
    assert sorted(p.name for p in (played.root / "notes").iterdir()) == ["a.txt", "b.txt", "c.txt"]


def test_a_refused_compensation_suggests_insisting_for_its_step(
    played: Played, capsys: pytest.CaptureFixture[str]
) -> None:
    (played.root / ".locked").write_text("")
    argv = ["rollback", played.run_id, "--data", str(played.data)]
    assert main([*argv, "--compensator-cmd", played.compensator]) == 1
    out = capsys.readouterr().out
    assert "--overwrite 7 --overwrite 1" in " ".join(out.split())


def test_rollback_in_process_json(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resolve", played.run_id, "4", "--not-applied", "--data", str(played.data)]) == 0
    capsys.readouterr()
    code = main(
        [
            "rollback",
            played.run_id,
            "--data",
            str(played.data),
            "--compensator-cmd",
            played.compensator,
            "--json",
            "--timeout",
            "60",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["complete"] is True
    by_step = {s["step"]: s for s in report["steps"]}
    assert by_step[4]["rollback_state"] == "not_applicable"
    assert by_step[4]["resolution"] == "not_applied"
    assert by_step[1]["rollback_state"] == "compensated"
    assert (played.root / "notes" / "b.txt").exists()  # resolved not applied: left alone
    assert not (played.root / "notes" / "a.txt").exists()


def test_rollback_reports_failed_compensations(
    played: Played, capsys: pytest.CaptureFixture[str]
) -> None:
    (played.root / ".locked").write_text("")
    code = main(
        [
            "rollback",
            played.run_id,
            "--data",
            str(played.data),
            "--compensator-cmd",
            played.compensator,
        ]
    )
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())  # the table wraps at the console's width
    assert code == 1
    assert "compensation_failed" in out
    assert "note store is locked (remove .locked)" in out
    assert "rollback incomplete" in out

    (played.root / ".locked").unlink()
    assert main(["resolve", played.run_id, "4", "--applied", "--data", str(played.data)]) == 0
    assert (
        main(
            [
                "rollback",
                played.run_id,
                "--data",
                str(played.data),
                "--compensator-cmd",
                played.compensator,
            ]
        )
        == 0
    )
    assert "rollback complete" in capsys.readouterr().out


def test_rollback_lists_unrecoverable_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(FIXTURE))
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()

    async def approve(request: Any) -> bool:
        return True

    async def publish() -> str:
        note = load_connector_class("note")(root=root)
        with SQLiteJournal.open(data) as journal:
            run = Run.start(
                journal,
                registry_for([note]),
                executor=executor_for([note]),
                approver=approve,
                scope={"note:publish"},
            )
            await run.call("note.publish", {"name": "a"})
            return run.id

    run_id = anyio.run(publish)
    assert main(["rollback", run_id, "--data", str(data), "--compensator-cmd", "true"]) == 1
    out = capsys.readouterr().out
    assert "Unrecoverable" in out
    assert "irreversible" in out
    assert "unrecoverable" in out


def test_rollback_with_a_missing_compensator_command_touches_nothing(
    played: Played, capsys: pytest.CaptureFixture[str]
) -> None:
    for cmd in (
        "reversi-no-such-program compensate",
        "/nonexistent/compensator",
        "",
        "'unbalanced",
    ):
        assert (
            main(["rollback", played.run_id, "--data", str(played.data), "--compensator-cmd", cmd])
            == 2
        ), cmd
        one_error_line(capsys.readouterr().err)
    assert run_status(played) == "open"


def test_rollback_of_an_unknown_run(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["rollback", "run_nope", "--data", str(played.data), "--compensator-cmd", "true"]) == 2
    )
    assert "no run 'run_nope'" in one_error_line(capsys.readouterr().err)


def test_rollback_refused_while_another_process_rolls_back(played: Played) -> None:
    with SQLiteJournal.open(played.data, create=False) as journal:
        journal.start_rollback(played.run_id)  # this test process holds the lock, and is alive
        try:
            proc = played.cli(
                "rollback",
                played.run_id,
                "--data",
                str(played.data),
                "--compensator-cmd",
                played.compensator,
            )
        finally:
            journal.finish_rollback(played.run_id, False)
    assert proc.returncode == 4
    line = one_error_line(proc.stderr)
    assert "being rolled back by another process" in line
    assert proc.stdout == ""
    assert sorted(p.name for p in (played.root / "notes").iterdir()) == ["a.txt", "b.txt", "c.txt"]


def test_rollback_timeout_counts_as_failure(
    played: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(30)\n")
    cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(slow))}"
    assert (
        main(
            [
                "rollback",
                played.run_id,
                "--data",
                str(played.data),
                "--compensator-cmd",
                cmd,
                "--timeout",
                "0.5",
                "--json",
            ]
        )
        == 1
    )
    report = json.loads(capsys.readouterr().out)
    failed = {o["step"]: o for o in report["outstanding"]}
    assert failed[7]["state"] == "compensation_failed"
    assert "within 0.5 s" in failed[7]["reason"]


# -- resolve --------------------------------------------------------------------------------------


def test_resolve_errors(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    data = ["--data", str(played.data)]
    cases = [
        (["resolve", played.run_id, "1", "--applied"], "not uncertain"),
        (["resolve", played.run_id, "99", "--applied"], "has no step 99"),
        (["resolve", "run_nope", "4", "--applied"], "no run 'run_nope'"),
        (
            ["resolve", played.run_id, "4", "--applied", "--result-json", "{oops"],
            "--result-json is not valid JSON",
        ),
        (
            ["resolve", played.run_id, "4", "--applied", "--result-json", "[1]"],
            "must be a JSON object",
        ),
        (["resolve", played.run_id, "4", "--not-applied", "--result-json", "{}"], "--applied only"),
    ]
    for argv, expected in cases:
        assert main([*argv, *data]) == 2, argv
        assert expected in one_error_line(capsys.readouterr().err), argv


def test_resolve_json_and_result(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "resolve",
                played.run_id,
                "4",
                "--applied",
                "--result-json",
                '{"name": "b"}',
                "--json",
                "--data",
                str(played.data),
            ]
        )
        == 0
    )
    step = json.loads(capsys.readouterr().out)
    assert step["resolution"] == "applied"
    assert step["result"] == {"name": "b"}
    assert step["compensation"] == {"tool": "note.delete", "args": {"name": "b"}}
    assert step["resolved_by"] == os_user()  # who ran the command
    assert main(["show", played.run_id, "--data", str(played.data)]) == 0
    out = capsys.readouterr().out
    assert "uncertain → applied" in out
    assert f"resolved applied: by {os_user()}" in out
    assert main(["show", played.run_id, "--json", "--data", str(played.data)]) == 0
    shown = json.loads(capsys.readouterr().out)["steps"][3]
    assert (shown["step"], shown["resolved_by"]) == (4, os_user())
    assert "reversi resolve" not in out  # nothing left to resolve


def test_resolve_finds_manifests_in_a_directory(played: Played, tmp_path: Path) -> None:
    """Without the connector installed, --manifests DIR supplies the compensation."""
    env = {k: v for k, v in played.env.items() if k != "PYTHONPATH"}  # note is not installed here
    proc = played.cli("resolve", played.run_id, "4", "--applied", "--data", str(played.data))
    assert proc.returncode == 0  # with the connector installed
    no_connector = subprocess.run(
        [script("reversi"), "resolve", played.run_id, "4", "--applied", "--data", str(played.data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert no_connector.returncode == 2
    assert "no manifest for note.flaky" in one_error_line(no_connector.stderr)

    manifests = tmp_path / "manifests"
    manifests.mkdir()
    printed = subprocess.run(
        [script("reversi-connectors"), "manifests", "note", "--format", "yaml"],
        capture_output=True,
        text=True,
        env=played.env,
        timeout=60,
        check=True,
    )
    (manifests / "note.yaml").write_text(printed.stdout)
    (manifests / "README.txt").write_text("ignored")
    assert yaml.safe_load(printed.stdout)
    with_dir = subprocess.run(
        [
            script("reversi"),
            "resolve",
            played.run_id,
            "4",
            "--applied",
            "--json",
            "--manifests",
            str(manifests),
            "--data",
            str(played.data),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert with_dir.returncode == 0, with_dir.stderr
    assert json.loads(with_dir.stdout)["compensation"] == {
        "tool": "note.delete",
        "args": {"name": "b"},
    }


# -- the fs connector, end to end ----------------------------------------------------------------


def test_the_exit_statuses_of_help_are_those_of_docs_cli_md() -> None:
    import re

    from reversi_core.cli.reversi import EPILOG

    docs = (Path(__file__).resolve().parents[3] / "docs" / "cli.md").read_text()
    section = docs.split("### Exit status of `reversi`", 1)[1].split("\n### ", 1)[0]
    documented = {
        m.group(1): " ".join(m.group(2).replace("`", "").split())
        for m in re.finditer(r"^\| (\d+) \| (.*) \|$", section, re.M)
    }
    listing = EPILOG.split("exit status (docs/cli.md):\n", 1)[1].split("\n\n", 1)[0]
    helped: dict[str, str] = {}
    code = ""
    for line in listing.splitlines():
        found = re.match(r"^\s*(\d+)  (.*)$", line)
        if found:
            code = found.group(1)
            helped[code] = found.group(2)
        else:
            helped[code] += " " + line.strip()
    assert {k: " ".join(v.split()) for k, v in helped.items()} == documented
