"""A gateway whose journal cannot be written refuses to start (status 2, one line), and a
journal that refuses the session's run later is a tool error for the client, never a
traceback nor an "Internal server error" (docs/gateway.md, "Command line").

The read-only journals: a PostgreSQL role with SELECT only on the journal's tables, and a
SQLite file that cannot be written (immutable for root, which ignores file modes; mode
0444 for anyone else). The SQLite file was refused at start-up before the check came
(its open refuses a file it cannot write); its test keeps it so."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from _stores import sql as sql_rows
from mcp import ClientSession, StdioServerParameters, stdio_client
from test_gateway import GATEWAY, Box

from reversi_core.errors import JournalError
from reversi_core.journal import JOURNAL_ENV, open_journal
from reversi_core.testing.postgres import PostgresServer

PASSWORD = "ro-pw-" + secrets.token_hex(6)


@pytest.fixture
def role_url(pg_server: PostgresServer, pg_location: str) -> Iterator[Callable[[str], str]]:
    """``role_url(grants)``: the URL of a new login role of the test's journal (already
    made by the superuser), with ``grants`` (``"SELECT"``, ``"SELECT, INSERT, UPDATE"``) on
    every journal table, and ``revoke(privilege)`` as its attribute."""
    from psycopg import sql

    open_journal(pg_location).close()  # the journal's tables, made by their owner
    schema, database = (
        str(v) for v in sql_rows(pg_location, "SELECT current_schema(), current_database()")[0]
    )
    role = f"ro_{secrets.token_hex(4)}"
    r, s = sql.Identifier(role), sql.Identifier(schema)

    def make(grants: str) -> str:
        with pg_server.admin() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(r, sql.Literal(PASSWORD))
            )
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(s, r))
            conn.execute(
                sql.SQL("GRANT " + grants + " ON ALL TABLES IN SCHEMA {} TO {}").format(s, r)
            )
        return pg_server.url(
            user=role, password=PASSWORD, dbname=database, options=f"-c search_path={schema}"
        )

    def revoke(privilege: str, table: str) -> None:
        with pg_server.admin() as conn:
            conn.execute(
                sql.SQL("REVOKE " + privilege + " ON {}.{} FROM {}").format(
                    s, sql.Identifier(table), r
                )
            )

    make.revoke = revoke  # type: ignore[attr-defined]
    yield make
    with pg_server.admin() as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(r))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(r))


@pytest.fixture
def read_only_data(tmp_path: Path) -> Iterator[Path]:
    """A data directory whose SQLite journal exists and cannot be written."""
    data = tmp_path / "ro-data"
    open_journal(data).close()
    path = data / "journal.sqlite3"
    if os.geteuid() == 0:  # root writes a file whatever its mode: make it immutable
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.fail(f"cannot make {path} immutable for root: {made.stderr}", pytrace=False)
        yield data
        subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o444)
        yield data
        path.chmod(0o600)


def _gateway(box: Box, *, url: str | None = None, data: Path | None = None) -> tuple[int, str]:
    """``reversi-gateway`` in front of ``box`` on the journal ``url`` (in $REVERSI_JOURNAL)
    or ``data``, with no client: its exit status and stderr."""
    argv = box.argv()
    at = argv.index("--data")
    del argv[at : at + 2]
    env = {k: v for k, v in os.environ.items() if k not in ("REVERSI_DATA", JOURNAL_ENV)}
    if url is not None:
        env[JOURNAL_ENV] = url
    if data is not None:
        argv += ["--data", str(data)]
    done = subprocess.run(
        [GATEWAY, *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.stdout == ""
    return done.returncode, done.stderr


def test_a_gateway_refuses_a_role_that_may_only_read_the_journal(
    role_url: Callable[[str], str], tmp_path: Path
) -> None:
    code, err = _gateway(Box(tmp_path), url=role_url("SELECT"))
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith("reversi-gateway: error: journal postgresql://127.0.0.1:")
    assert "the journal's role may not write it (it lacks " in err
    assert "INSERT on edges" in err
    assert "UPDATE on steps" in err
    assert "Traceback" not in err
    assert PASSWORD not in err


def test_a_gateway_refuses_a_sqlite_journal_it_cannot_write(
    read_only_data: Path, tmp_path: Path
) -> None:
    code, err = _gateway(Box(tmp_path), data=read_only_data)
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith(f"reversi-gateway: error: journal {read_only_data}")
    assert "not writable" in err or "cannot be written" in err


def test_check_writable_says_why_on_both_stores(
    role_url: Callable[[str], str], location: str
) -> None:
    with open_journal(location) as journal:
        journal.check_writable()  # a journal its opener may write: nothing said
    with (
        open_journal(location, read_only=True) as journal,
        pytest.raises(JournalError, match=r"cannot be written|takes no writes"),
    ):
        journal.check_writable()
    with (
        open_journal(role_url("SELECT")) as journal,
        pytest.raises(JournalError, match="may not write it"),
    ):
        journal.check_writable()


@pytest.mark.anyio
async def test_a_journal_that_refuses_the_run_later_is_a_tool_error_not_a_traceback(
    role_url: Callable[[str], str], tmp_path: Path
) -> None:
    url = role_url("SELECT, INSERT, UPDATE")
    box = Box(tmp_path)
    argv = box.argv()
    at = argv.index("--data")
    del argv[at : at + 2]
    env = {k: v for k, v in os.environ.items() if k != "REVERSI_DATA"}
    env[JOURNAL_ENV] = url
    errlog = tmp_path / "gateway.err"
    with errlog.open("w") as err:
        params = StdioServerParameters(command=GATEWAY, args=argv, env=env)
        async with stdio_client(params, errlog=err) as (read, write):
            with anyio.fail_after(60):  # started: the journal was found writable
                while "serving" not in errlog.read_text():  # noqa: ASYNC110 - another process's file
                    await anyio.sleep(0.05)
            role_url.revoke("INSERT", "runs")  # type: ignore[attr-defined]
            async with ClientSession(read, write) as client:
                await client.initialize()
                tools = await client.list_tools()
                assert "box.write" in {t.name for t in tools.tools}
                result = await client.call_tool("box.write", {"name": "a", "text": "x"})
    said = errlog.read_text()
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "could not start this session's run in the journal, so it did not run" in text
    assert "permission denied for table runs" in text
    assert not (box.root / "a").exists()  # nothing ran
    assert "Traceback" not in said
    assert "Internal server error" not in said
    assert "error: the run could not be started in the journal: journal postgresql://" in said
    assert PASSWORD not in said + text
