"""Choosing the journal on the command line: ``--journal URL|DIR``, ``--data DIR``,
``$REVERSI_JOURNAL`` and ``$REVERSI_DATA`` for ``reversi-gateway`` and every ``reversi``
command (docs/cli.md), on both stores. A PostgreSQL URL here carries a password, and
no output, error or hint may repeat it."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from _stores import is_postgres
from _stores import sql as sql_rows
from mcp import ClientSession, StdioServerParameters, stdio_client
from test_gateway import GATEWAY, REVERSI, Box

from reversi_core import StepState
from reversi_core.cli.gateway import upstream_environment
from reversi_core.cli.reversi import main
from reversi_core.journal import JOURNAL_ENV, describe_location, open_journal
from reversi_core.testing.postgres import PostgresServer, as_uri

PASSWORD = "journal-pw-4a1f"


@pytest.fixture
def journal_url(pg_server: PostgresServer, pg_location: str) -> Iterator[str]:
    """The test's PostgreSQL journal as a URL with a password in it: a login role of its
    own that may create the journal in the test's schema."""
    from psycopg import sql

    schema, database = (
        str(v) for v in sql_rows(pg_location, "SELECT current_schema(), current_database()")[0]
    )
    role = f"cli_{secrets.token_hex(4)}"
    r, s = sql.Identifier(role), sql.Identifier(schema)
    with pg_server.admin() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(r, sql.Literal(PASSWORD)))
        conn.execute(sql.SQL("GRANT USAGE, CREATE ON SCHEMA {} TO {}").format(s, r))
    yield pg_server.url(
        user=role, password=PASSWORD, dbname=database, options=f"-c search_path={schema}"
    )
    with pg_server.admin() as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(r))
        conn.execute(sql.SQL("DROP ROLE {}").format(r))


@pytest.fixture
def bare_url(journal_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``journal_url`` without its password, which a password file ($PGPASSFILE, set for
    this process and the commands it starts) holds instead: what a command line takes."""
    import psycopg

    params = psycopg.conninfo.conninfo_to_dict(journal_url)
    passfile = tmp_path / "pgpass"
    passfile.write_text(
        f"{params['host']}:{params['port']}:{params['dbname']}:{params['user']}:{PASSWORD}\n"
    )
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    del params["password"]
    return as_uri(psycopg.conninfo.make_conninfo("", **params))


@pytest.fixture
def where(store: str, data_dir: Path, request: pytest.FixtureRequest) -> str:
    """The journal on each store, as a command line names it: a data directory, or a URL
    whose password is in the password file ($PGPASSFILE)."""
    if store == "sqlite":
        return str(data_dir)
    return str(request.getfixturevalue("bare_url"))


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REVERSI, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REVERSI_DATA", JOURNAL_ENV)}
    env.update(extra)
    return env


# -- the gateway and the commands, end to end -----------------------------------------------


@pytest.mark.anyio
async def test_a_gateway_run_journaled_by_url_is_rolled_back_by_url(
    tmp_path: Path, where: str, store: str
) -> None:
    box = Box(tmp_path)
    argv = box.argv()
    at = argv.index("--data")
    argv[at : at + 2] = ["--journal", where]
    errlog = tmp_path / "gateway.err"
    params = StdioServerParameters(command=GATEWAY, args=argv, env=_env())
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            wrote = await client.call_tool("box.write", {"name": "a", "text": "hello"})
            read_back = await client.call_tool("box.read", {"name": "a"})
    assert not wrote.is_error
    assert not read_back.is_error
    assert wrote.meta is not None
    run_id = wrote.meta["reversi/run"]
    said = errlog.read_text()
    assert PASSWORD not in said
    if is_postgres(where):
        assert f"(journal {describe_location(where)})" in said
        assert f"'reversi rollback {run_id} --journal URL'" in said
        assert "cli_" not in said  # not even the user
    else:
        assert f"'reversi rollback {run_id} --data {where}'" in said
    assert (box.root / "a").read_text() == "hello"

    listed = _run("runs", "--json", env=_env(**{JOURNAL_ENV: where}))  # from the environment
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == [run_id]
    shown = _run("show", run_id, "--journal", where)
    assert shown.returncode == 0, shown.stderr
    assert "box.write" in shown.stdout
    undone = _run("rollback", run_id, "--journal", where, "--compensator-cmd", box.compensator())
    assert undone.returncode == 0, undone.stderr
    assert not (box.root / "a").exists()
    for out in (listed, shown, undone):
        assert PASSWORD not in out.stdout + out.stderr
    with open_journal(where, create=False) as journal:
        assert journal.get_run(run_id).status.value == "rolled_back"
        assert [s.tool for s in journal.list_steps(run_id)] == ["box.write", "box.read"]


def test_runs_names_a_url_by_its_host_and_database_only(
    journal_url: str, bare_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    open_journal(journal_url).close()
    assert main(["runs", "--journal", bare_url]) == 0
    out = capsys.readouterr().out
    assert f"no runs in {describe_location(journal_url)}" in out
    assert describe_location(journal_url).startswith("postgresql://127.0.0.1:")
    assert PASSWORD not in out
    assert "cli_" not in out  # nor the user


def test_hints_name_the_journal_option_but_never_the_url(
    journal_url: str, bare_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_journal(journal_url) as journal:
        journal.create_run("run_a", ["x:y"], None)
        step = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        journal.finish_step(
            "run_a",
            step.seq,
            StepState.UNCERTAIN,
            result=None,
            error="lost",
            compensation=None,
            compensation_error=None,
        )
    assert main(["show", "run_a", "--journal", bare_url]) == 0
    out = capsys.readouterr().out
    assert "reversi resolve run_a 1 --applied|--not-applied --journal URL" in out
    assert PASSWORD not in out


# -- which journal -------------------------------------------------------------------------


def test_journal_and_data_together_are_refused_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "--journal", str(tmp_path / "a"), "--data", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "--journal and --data both name the journal; give one" in err
    box = Box(tmp_path)
    gateway = subprocess.run(
        [GATEWAY, *box.argv("--journal", "postgresql://u:secret-pw@127.0.0.1:1/db")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert gateway.returncode == 2
    assert "--journal and --data both name the journal" in gateway.stderr
    assert "secret-pw" not in gateway.stderr
    assert not box.data.exists()  # nothing opened, nothing created


def test_a_key_value_connection_string_is_refused_and_never_created_nor_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = f"sslmode=require host=db password={PASSWORD}"
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["runs", "--journal", dsn]) == 2
    err = capsys.readouterr().err
    assert "looks like a libpq key=value connection string" in err
    assert PASSWORD not in err
    box = Box(tmp_path)
    argv = box.argv()
    at = argv.index("--data")
    argv[at : at + 2] = ["--journal", dsn]
    gateway = subprocess.run(
        [GATEWAY, *argv], capture_output=True, text=True, timeout=60, check=False, cwd=work
    )
    assert gateway.returncode == 2
    assert "looks like a libpq key=value connection string" in gateway.stderr
    assert PASSWORD not in gateway.stderr + gateway.stdout
    assert list(work.iterdir()) == []  # no directory of that name


def test_both_variables_set_are_refused_and_an_option_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for data, run in ((one, "run_one"), (two, "run_two")):
        with open_journal(data) as journal:
            journal.create_run(run, [], None)
    monkeypatch.setenv("REVERSI_DATA", str(one))
    monkeypatch.setenv(JOURNAL_ENV, str(two))
    assert main(["runs", "--json"]) == 2
    err = capsys.readouterr().err
    assert "$REVERSI_JOURNAL and $REVERSI_DATA are both set" in err
    assert str(two) not in err  # named, not their values
    assert main(["runs", "--json", "--data", str(one)]) == 0  # an option overrides both
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["run_one"]
    assert main(["runs", "--json", "--journal", str(two)]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["run_two"]
    monkeypatch.delenv("REVERSI_DATA")
    assert main(["runs", "--json"]) == 0  # $REVERSI_JOURNAL alone
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["run_two"]


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_journal_is_exit_status_3_without_its_password(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _closed_port()
    url = f"postgresql://agent:{PASSWORD}@127.0.0.1:{port}/reversi"
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv(JOURNAL_ENV, url)  # where a URL with a password may be given
    assert main(["runs"]) == 3
    err = capsys.readouterr().err
    assert (
        f"cannot connect to the PostgreSQL journal at postgresql://127.0.0.1:{port}/reversi" in err
    )
    assert PASSWORD not in err
    assert "agent" not in err


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://agent:{PASSWORD}@127.0.0.1:{{port}}/reversi",
        f"postgres://agent@127.0.0.1:{{port}}/reversi?password={PASSWORD}",
        f"postgresql://127.0.0.1:{{port}}/reversi?sslpassword={PASSWORD}",
    ],
    ids=["user-part", "password-parameter", "sslpassword-parameter"],
)
def test_a_journal_url_holding_a_password_is_refused_on_the_command_line(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url.format(port=_closed_port())  # were it used, connecting would fail (status 3)
    assert main(["runs", "--journal", url]) == 2
    err = capsys.readouterr().err
    assert "--journal: the URL holds a password, and a command line is visible" in err
    assert "$PGPASSFILE" in err
    assert f"${JOURNAL_ENV}" in err
    assert PASSWORD not in err
    box = Box(tmp_path)
    argv = box.argv()
    at = argv.index("--data")
    argv[at : at + 2] = ["--journal", url]
    gateway = subprocess.run(
        [GATEWAY, *argv], capture_output=True, text=True, timeout=60, check=False, env=_env()
    )
    assert gateway.returncode == 2, gateway.stderr
    assert "--journal: the URL holds a password" in gateway.stderr
    assert PASSWORD not in gateway.stderr + gateway.stdout


def test_the_upstream_never_sees_the_journal_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JOURNAL_ENV, f"postgresql://u:{PASSWORD}@db/reversi")
    monkeypatch.setenv("SOME_CONNECTOR_TOKEN", "kept")
    env = upstream_environment()
    assert JOURNAL_ENV not in env
    assert env["SOME_CONNECTOR_TOKEN"] == "kept"
