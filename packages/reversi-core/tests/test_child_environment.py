"""What the processes Reversi starts inherit: never ``$REVERSI_JOURNAL`` (the journal's
URL and the password it may carry) nor ``$REVERSI_GATEWAY_TOKEN`` (docs/cli.md,
docs/gateway.md). Compensators (``reversi rollback --compensator-cmd``), replays
(``reversi resolve --replay-cmd``) and the gateway's upstream are told apart from the
journal: they need their own credentials. ``$PGPASSWORD`` and ``$PGPASSFILE`` are libpq's
own variables, which a connector on PostgreSQL may need for its database, and are kept."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import anyio
import pytest

from reversi_core import Run, executor_for, registry_for
from reversi_core._childenv import HIDDEN_FROM_CHILDREN, child_environment
from reversi_core.cli import reversi
from reversi_core.cli.gateway import upstream_environment
from reversi_core.compensator import CommandReplayer
from reversi_core.connector import CallContext, load_connector_class
from reversi_core.journal import JOURNAL_ENV, open_journal
from reversi_core.mcp._listen import TOKEN_ENV
from reversi_core.mcp._upstream import spawn_upstream

FIXTURE = Path(__file__).resolve().parent / "cli_fixture"

DUMP = """\
import json, os, sys
from pathlib import Path
call = json.load(sys.stdin)
Path(sys.argv[1], f"env-{call['step']}.json").write_text(json.dumps(dict(os.environ)))
print(json.dumps({"ok": True}))
"""
"""A command that writes its whole environment to DIR/env-STEP.json and succeeds."""

KEPT = {"PGPASSFILE": "/home/agent/.pgpass", "PGPASSWORD": "libpq-pw-1", "NOTE_TOKEN": "kept"}


def _dump_command(tmp: Path) -> tuple[str, Path]:
    script, out = tmp / "dump.py", tmp / "envs"
    script.write_text(DUMP)
    out.mkdir()
    return shlex.join([sys.executable, str(script), str(out)]), out


def _environments(out: Path) -> list[dict[str, str]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("env-*.json"))]


def test_every_child_environment_drops_the_same_variables() -> None:
    assert {JOURNAL_ENV, TOKEN_ENV} <= set(HIDDEN_FROM_CHILDREN)
    env = child_environment({JOURNAL_ENV: "postgresql://u:pw@h/d", TOKEN_ENV: "t", **KEPT})
    assert env == KEPT


def test_a_compensator_never_sees_the_journal_url_nor_the_gateway_token(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(FIXTURE))
    root = tmp_path / "root"
    root.mkdir()

    async def play() -> str:
        note = load_connector_class("note")(root=root)
        with open_journal(location) as journal:
            run = Run.start(
                journal, registry_for([note]), scope={"note:write"}, executor=executor_for([note])
            )
            for i in range(3):
                await run.call("note.create", {"name": f"n{i}", "text": "x"})
            return run.id

    run_id = anyio.run(play)
    command, out = _dump_command(tmp_path)
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv(JOURNAL_ENV, location)  # the journal, with its password for PostgreSQL
    monkeypatch.setenv(TOKEN_ENV, "gateway-token-0123456789abcdef")
    for name, value in KEPT.items():
        monkeypatch.setenv(name, value)
    assert reversi.main(["rollback", run_id, "--compensator-cmd", command, "--json"]) == 0
    seen = _environments(out)
    assert len(seen) == 3
    for env in seen:
        assert JOURNAL_ENV not in env
        assert TOKEN_ENV not in env
        assert location not in json.dumps(env)
        for name, value in KEPT.items():
            assert env[name] == value


def test_a_replay_command_never_sees_the_journal_url_nor_the_gateway_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command, out = _dump_command(tmp_path)
    monkeypatch.setenv(JOURNAL_ENV, "postgresql://agent:journal-pw-77@db/reversi")
    monkeypatch.setenv(TOKEN_ENV, "gateway-token-0123456789abcdef")
    monkeypatch.setenv("NOTE_TOKEN", "kept")
    ctx = CallContext(run_id="run_r", step=1, idempotency_key="k", replay=True)
    assert anyio.run(CommandReplayer(command), "note.create", {}, ctx) == {"ok": True}
    (env,) = _environments(out)
    assert JOURNAL_ENV not in env
    assert TOKEN_ENV not in env
    assert env["NOTE_TOKEN"] == "kept"


def test_the_gateways_upstream_drops_the_same_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in HIDDEN_FROM_CHILDREN:
        monkeypatch.setenv(name, "hidden-value")
    monkeypatch.setenv("NOTE_TOKEN", "kept")
    env = upstream_environment()
    assert not set(HIDDEN_FROM_CHILDREN) & set(env)
    assert env["NOTE_TOKEN"] == "kept"
    # and an upstream started with no environment given (the library's default)
    out = tmp_path / "env.json"
    code = f"import json, os; open({str(out)!r}, 'w').write(json.dumps(dict(os.environ)))"
    process = spawn_upstream([sys.executable, "-c", code])
    process.communicate(timeout=60)
    seen = json.loads(out.read_text())
    assert not set(HIDDEN_FROM_CHILDREN) & set(seen)
    assert seen["NOTE_TOKEN"] == "kept"
