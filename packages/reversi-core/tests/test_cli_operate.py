"""``reversi verify``, ``reversi export`` and ``reversi prune`` on both journal stores.

(fs's backups under prune: packages/reversi-connector-fs/tests/test_prune.py.)
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest
from _stores import is_postgres, sql

from reversi_core.cli.reversi import main
from reversi_core.journal import Journal, RollbackState, StepState
from reversi_core.retention import parse_duration

SECRET_ENV = "sk_live_9f8e7d6c5b4a39281706"
SECRET_ARG = "hunter2-in-the-arguments"


@pytest.fixture
def env(location: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv("REVERSI_JOURNAL", location)
    return location


def _step(journal: Journal, run_id: str, args: dict[str, object], state: StepState) -> int:
    step = journal.begin_step(run_id, "mem.put", "reversible", "x:y", args, None, None, [])
    journal.finish_step(
        run_id,
        step.seq,
        state,
        result={"old": None},
        error=None,
        compensation={"tool": "mem.delete", "args": {"name": "k"}},
        compensation_error=None,
    )
    return step.seq


def _rolled_back(journal: Journal, run_id: str, complete: bool = True) -> None:
    journal.create_run(run_id, ["x:y"], None)
    seq = _step(journal, run_id, {"key": "k"}, StepState.SUCCEEDED)
    journal.start_rollback(run_id)
    state = RollbackState.COMPENSATED if complete else RollbackState.COMPENSATION_FAILED
    journal.set_rollback_state(run_id, seq, state, None)
    journal.finish_rollback(run_id, complete)


def test_verify_reports_a_step_edited_behind_the_journal_and_exits_1(
    journal: Journal, env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _rolled_back(journal, "run_a")
    _rolled_back(journal, "run_b")
    assert main(["verify", "--all"]) == 0
    assert "2 runs, 0 tampered" in capsys.readouterr().out
    mark = "%s" if is_postgres(env) else "?"
    sql(env, f"UPDATE steps SET args = {mark} WHERE run_id = 'run_b' AND seq = 1", ['{"key":"x"}'])
    assert main(["verify", "run_a"]) == 0
    capsys.readouterr()
    assert main(["verify", "--all", "--json"]) == 1
    found = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert found["run_a"]["status"] == "ok"
    assert (found["run_b"]["status"], found["run_b"]["step"]) == ("tampered", 1)
    # SQLite keeps the step's begin record as a link of its row: the row no longer matches it
    assert "args differs" in found["run_b"]["what"] or (
        "row no longer matches its begin record" in found["run_b"]["what"]
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [("rollback_state", "failed"), ("state", "bogus"), ("args", "not json")],
)
def test_a_row_no_write_could_store_is_reported_tampered_not_a_crash(
    journal: Journal, env: str, capsys: pytest.CaptureFixture[str], column: str, value: str
) -> None:
    """A value no write of the journal stores (a state no step can be in, arguments that
    are not JSON) is tampering: verify names the step and goes on with the other runs;
    prune keeps the run even with --force; show says what is wrong (the journal's error)."""
    _rolled_back(journal, "run_a")
    _rolled_back(journal, "run_b")
    mark = "%s" if is_postgres(env) else "?"
    sql(env, f"UPDATE steps SET {column} = {mark} WHERE run_id = 'run_b' AND seq = 1", [value])
    assert main(["verify", "--all", "--json"]) == 1
    found = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert found["run_a"]["status"] == "ok"
    assert (found["run_b"]["status"], found["run_b"]["step"]) == ("tampered", 1)
    assert "cannot be read back" in found["run_b"]["what"]
    for force in ([], ["--force"]):
        assert main(["prune", "--older-than", "0s", "--json", *force]) == 1
        captured = capsys.readouterr()
        answer = json.loads(captured.out)
        assert "run_b" not in answer["removed"]
        assert "cannot be read back" in captured.err
    assert [r.id for r in journal.list_runs()] == ["run_b"]  # run_a went, run_b stayed
    assert main(["show", "run_b"]) == 3
    assert "step 1 of run 'run_b' cannot be read back" in capsys.readouterr().err


def test_export_writes_the_run_as_json_lines_without_credentials(
    journal: Journal,
    env: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ACME_API_TOKEN", SECRET_ENV)  # a credential of this environment
    journal.create_run("run_a", ["x:y"], None)
    # journaled before the secret was registered anywhere: the export must scrub it
    _step(journal, "run_a", {"name": SECRET_ENV, "password": SECRET_ARG}, StepState.SUCCEEDED)
    out = tmp_path / "audit.jsonl"
    assert main(["export", "run_a", "-o", str(out)]) == 0
    text = out.read_text()
    assert SECRET_ENV not in text
    assert SECRET_ARG not in text
    records = [json.loads(line) for line in text.splitlines()]
    kinds = [r["type"] for r in records]
    assert kinds == ["run", "change", "change", "step"]
    run, begin, finish, step = records
    assert run["chain"]["status"] == "ok"
    assert run["chain"]["head"] == finish["hash"]
    assert begin["prev_hash"] == ""
    assert finish["prev_hash"] == begin["hash"]
    assert begin["content"]["args"] == {"name": "[REDACTED]", "password": "[REDACTED]"}
    assert begin["scrubbed"] is True  # its hash is that of the content as journaled
    assert "scrubbed" not in finish
    assert step["args"]["password"] == "[REDACTED]"
    assert main(["export", "run_a"]) == 0  # to stdout, the same lines
    assert capsys.readouterr().out == text


def test_prune_never_removes_an_open_run_or_one_with_a_step_outstanding(
    journal: Journal, env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _rolled_back(journal, "gone")
    _rolled_back(journal, "failed", complete=False)  # its compensation failed: outstanding
    journal.create_run("open", ["x:y"], None)
    _step(journal, "open", {"key": "k"}, StepState.SUCCEEDED)
    assert main(["prune", "--older-than", "0s", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in plan["remove"]] == ["gone"]
    why = {k["run"]: k["why"] for k in plan["kept"]}
    assert why == {
        "failed": "step 1 is outstanding: its rollback state is compensation_failed",
        "open": "it is open",
    }
    assert [r.id for r in journal.list_runs()] == ["gone", "failed", "open"]  # dry run
    assert main(["prune", "--older-than", "1d"]) == 0  # too young: nothing goes
    assert "removed 0 of 3 runs" in capsys.readouterr().out
    assert main(["prune", "--older-than", "0s", "--state", "closed"]) == 0  # not rolled_back
    assert [r.id for r in journal.list_runs()] == ["gone", "failed", "open"]
    assert main(["prune", "--older-than", "0s"]) == 0
    assert "removed run gone (rolled_back, 1 steps)" in capsys.readouterr().out
    assert [r.id for r in journal.list_runs()] == ["failed", "open"]
    for table in ("steps", "events", "edges", "chain"):
        mark = "%s" if is_postgres(env) else "?"
        assert sql(env, f"SELECT count(*) FROM {table} WHERE run_id = {mark}", ["gone"]) == [(0,)]


def test_prune_refuses_a_duration_it_cannot_read(
    env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("30 days", "nan", "inf", "nans", "1d1d", "10s5m", "1w2d", "３０d", "30", "-1d", ""):
        assert main(["prune", f"--older-than={bad}"]) == 2, bad
        assert "is not a duration" in capsys.readouterr().err, bad


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("45s", 45),
        ("90m", 5400),
        ("12h", 43200),
        ("30d", 2592000),
        ("2w", 1209600),
        ("1.5d", 129600),
        ("0s", 0),
    ],
)
def test_a_duration_is_one_number_and_one_unit(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_prune_holds_backups_back_to_the_first_step_of_a_run_still_outstanding(
    journal: Journal, env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A resolved step whose compensation failed names no backup (it has no result): the
    cut-off must stay before its start though nothing in the journal is pending."""
    journal.create_run("failed", ["x:y"], None)
    first = journal.begin_step("failed", "mem.put", "reversible", "x:y", {}, None, None, [])
    journal.finish_step(
        "failed",
        first.seq,
        StepState.UNCERTAIN,
        result=None,
        error="killed",
        compensation=None,
        compensation_error=None,
    )
    journal.resolve_step("failed", first.seq, True, None, None, "no result", "ops")
    journal.start_rollback("failed")
    journal.set_rollback_state("failed", first.seq, RollbackState.COMPENSATION_FAILED, None)
    journal.finish_rollback("failed", False)
    mark = "%s" if is_postgres(env) else "?"
    started = time.time() - 600  # its call began ten minutes ago
    sql(env, f"UPDATE steps SET started_at = {mark} WHERE run_id = 'failed'", [started])
    assert main(["prune", "--older-than", "0s", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [k["run"] for k in plan["kept"]] == ["failed"]
    assert plan["backups_before"] <= started - 1.0  # less the clock margin


def test_prune_refuses_a_backups_command_it_cannot_run_before_removing_anything(
    journal: Journal, env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _rolled_back(journal, "gone")
    for cmd in ("/nonexistent/prog", "no-such-reversi-program-xyz", ""):
        assert main(["prune", "--older-than", "0s", "--backups-cmd", cmd, "--json"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "--backups-cmd is empty" in captured.err if cmd == "" else cmd in captured.err
        assert [r.id for r in journal.list_runs()] == ["gone"]  # nothing removed


def test_prune_lists_the_runs_it_removed_when_the_backups_command_fails_after(
    journal: Journal, env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _rolled_back(journal, "gone")
    assert main(["prune", "--older-than", "0s", "--backups-cmd", "false", "--json"]) == 1
    captured = capsys.readouterr()
    answer = json.loads(captured.out)
    assert answer["removed"] == ["gone"]
    assert answer["backups"] is None
    assert "--backups-cmd false exited 1" in captured.err
    assert journal.list_runs() == []
    _rolled_back(journal, "next")
    assert main(["prune", "--older-than", "0s", "--backups-cmd", "false"]) == 1
    assert "removed run next (rolled_back, 1 steps)" in capsys.readouterr().out


def test_the_backups_command_never_inherits_the_journals_url_or_the_token(
    journal: Journal, env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$REVERSI_JOURNAL`` may hold a PostgreSQL password: like a compensator, the
    backups command gets the environment without it (reversi_core._childenv)."""
    monkeypatch.setenv("REVERSI_GATEWAY_TOKEN", "gateway-token-never-inherited")
    seen = tmp_path / "child-env.json"
    script = (
        "import json, os, sys; sys.stdin.read(); "
        f"open({str(seen)!r}, 'w').write(json.dumps(dict(os.environ))); "
        "print(json.dumps({'connectors': {}}))"
    )
    cmd = shlex.join([sys.executable, "-c", script])
    _rolled_back(journal, "gone")
    assert main(["prune", "--older-than", "0s", "--dry-run", "--backups-cmd", cmd]) == 0
    child = json.loads(seen.read_text())
    assert "REVERSI_JOURNAL" not in child
    assert "REVERSI_GATEWAY_TOKEN" not in child
    assert child.get("PATH") == os.environ.get("PATH")


def test_prune_dry_run_json_says_would_remove_not_removed(
    journal: Journal, env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _rolled_back(journal, "gone")
    assert main(["prune", "--older-than", "0s", "--dry-run", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert "removed" not in answer
    assert answer["would_remove"] == ["gone"]
    assert [r.id for r in journal.list_runs()] == ["gone"]


def test_prune_keeps_a_run_whose_chain_does_not_verify_unless_forced(
    journal: Journal, env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tampered run is evidence: prune warns and keeps it (exit 1), ``--force`` removes
    it with the same warning; an intact run beside it goes either way."""
    _rolled_back(journal, "intact")
    _rolled_back(journal, "edited")
    mark = "%s" if is_postgres(env) else "?"
    sql(env, f"UPDATE steps SET args = {mark} WHERE run_id = 'edited'", ['{"key":"x"}'])
    assert main(["prune", "--older-than", "0s", "--dry-run", "--json"]) == 1
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    assert plan["would_remove"] == ["intact"]
    assert [u["run"] for u in plan["unverified"]] == ["edited"]
    assert "warning: run edited: TAMPERED" in captured.err
    assert main(["prune", "--older-than", "0s"]) == 1
    captured = capsys.readouterr()
    assert "kept run edited: its chain does not verify" in captured.out
    assert "prune kept it" in captured.err
    assert [r.id for r in journal.list_runs()] == ["edited"]
    assert main(["prune", "--older-than", "0s", "--force"]) == 0
    captured = capsys.readouterr()
    assert "removed run edited" in captured.out
    assert "prune removed anyway (--force)" in captured.err
    assert journal.list_runs() == []
