"""Denials, timeouts and lost connections against the real server.

Lost and silent connections are made by :class:`WireProxy` between the connector and
the server: it drops the connection (or goes silent) at a chosen statement, before or
after passing it on, so the tests know exactly what the server did.
"""

from __future__ import annotations

import secrets
import socket
import time
from pathlib import Path

import pytest
from _pgfixtures import AGENT_PASSWORD, Db

from reversi_connector_postgres import PostgresConnector
from reversi_connector_postgres._session import login_refusal
from reversi_connector_postgres.testing import WireProxy
from reversi_core import Run, SQLiteJournal, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.journal import StepState

pytestmark = pytest.mark.anyio

INSERT = {"table": "items", "values": {"name": "fig", "qty": 1}}


# -- permission denial by a real role ------------------------------------------------------


async def test_a_role_without_the_privilege_gets_42501_and_nothing_changes(db: Db) -> None:
    db.grant("GRANT SELECT ON items TO {reader}")
    pg = db.connector(db.reader_url)
    before = db.checksums()
    seq = db.one("SELECT last_value FROM items_id_seq")
    cases = [
        ("postgres.insert_row", INSERT),
        ("postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 9}}),
        ("postgres.restore_row", {"table": "items", "key": 1, "values": {"qty": "9"}}),
        ("postgres.delete_row", {"table": "items", "key": 1}),
    ]
    for tool, args in cases:
        with pytest.raises(ToolError) as caught:
            await pg.call(tool, args)
        assert caught.value.code == "42501", (tool, caught.value)
        assert str(caught.value).startswith(
            "Postgres error 42501: permission denied for table items"
        )
        assert db.statements[-1] == ("ROLLBACK", ())
        assert READER_SECRET_FREE(str(caught.value))
    assert db.checksums() == before
    assert db.one("SELECT last_value FROM items_id_seq") == seq
    db.grant("REVOKE SELECT ON items FROM {reader}")
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.query", {"sql": "SELECT * FROM items"})
    assert caught.value.code == "42501"


def READER_SECRET_FREE(text: str) -> bool:
    return "reader-" not in text and "agent-" not in text


async def test_a_wrong_password_is_28P01_without_the_password(db: Db) -> None:
    url = db.agent_url.replace(AGENT_PASSWORD, "wrong-password-123")
    pg = PostgresConnector(url)
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.insert_row", INSERT)
    assert caught.value.code == "28P01"
    assert "(SQLSTATE 28P01)" in str(caught.value)
    assert "password authentication failed" in str(caught.value)
    assert "wrong-password-123" not in str(caught.value)
    assert "nothing was sent" in str(caught.value)


async def test_a_login_refused_by_the_server_carries_its_sqlstate(db: Db) -> None:
    """Each refusal is caused for real; the SQLSTATEs are what the server logs for them."""
    role = f"refused_{secrets.token_hex(3)}"
    password = "refused-" + secrets.token_hex(8)
    db.grant(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    url = db.server.url(user=role, password=password, dbname=db.name)
    pg = PostgresConnector(url, timeout=5)
    query = {"sql": "SELECT 1"}
    try:
        assert (await pg.call("postgres.query", query))["rows"] == [[1]]
        for change, sqlstate, words in (
            (f"ALTER ROLE {role} CONNECTION LIMIT 0", "53300", "too many connections for role"),
            (f"ALTER ROLE {role} NOLOGIN", "28000", "is not permitted to log in"),
            (f"REVOKE CONNECT ON DATABASE {db.name} FROM PUBLIC", "42501", "permission denied"),
        ):
            db.grant(change)
            with pytest.raises(ToolError) as caught:
                await pg.call("postgres.query", query)
            assert caught.value.code == sqlstate, change
            assert f"(SQLSTATE {sqlstate})" in str(caught.value)
            assert words in str(caught.value)
            assert password not in str(caught.value)
            db.grant(
                f"ALTER ROLE {role} LOGIN CONNECTION LIMIT -1",
                f"GRANT CONNECT ON DATABASE {db.name} TO PUBLIC",
            )
        assert (await pg.call("postgres.query", query))["rows"] == [[1]]
    finally:
        db.grant(f"DROP ROLE {role}")


def test_a_refusal_in_words_it_does_not_know_keeps_the_connect_code() -> None:
    assert login_refusal('FATAL:  password authentication failed for user "a"') == "28P01"
    assert login_refusal('FATAL:  Ident authentication failed for user "a"') == "28000"
    assert login_refusal("FATAL:  the database system is starting up") == "57P03"
    assert login_refusal("FATAL:  sorry, too many clients already") == "53300"
    assert login_refusal("FATAL:  l'authentification par mot de passe a échoué") is None
    assert login_refusal("Connection refused\n\tIs the server running on that host") is None


async def test_no_server_is_a_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pg = PostgresConnector(f"postgresql://a:secret-pass-1@127.0.0.1:{port}/x", timeout=2)
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.update_row", {"table": "t", "key": 1, "values": {"a": 1}})
    assert caught.value.code == "connect"
    assert "secret-pass-1" not in str(caught.value)


# -- timeouts -------------------------------------------------------------------------------


async def test_a_lock_held_by_another_session_times_out_definitely(db: Db) -> None:
    pg = db.connector()
    before = db.rows()
    with db.admin() as holder:
        holder.execute(b"BEGIN")
        holder.execute(b"SELECT * FROM items WHERE id = 1 FOR UPDATE")
        started = time.monotonic()
        with pytest.raises(ToolError) as caught:
            await pg.call(
                "postgres.update_row",
                {"table": "items", "key": 1, "values": {"qty": 9}},
                CallContext(timeout=0.5),
            )
        waited = time.monotonic() - started
        holder.execute(b"ROLLBACK")
    assert caught.value.code == "57014"
    assert "canceling statement due to statement timeout" in str(caught.value)
    assert "statement_timeout is 0.5 s" in str(caught.value)
    assert 0.4 < waited < 3
    assert db.rows() == before
    # the other writes wait for the lock in the same way
    with db.admin() as holder:
        holder.execute(b"BEGIN")
        holder.execute(b"LOCK TABLE items IN ACCESS EXCLUSIVE MODE")
        for tool, args in (
            ("postgres.insert_row", INSERT),
            ("postgres.delete_row", {"table": "items", "key": 2}),
            ("postgres.restore_row", {"table": "items", "key": 2, "values": {"qty": "1"}}),
            ("postgres.query", {"sql": "SELECT count(*) FROM items"}),
        ):
            with pytest.raises(ToolError) as caught:
                await pg.call(tool, args, CallContext(timeout=0.3))
            assert caught.value.code == "57014", tool
        holder.execute(b"ROLLBACK")
    assert db.rows() == before


async def test_a_slow_read_hits_statement_timeout(db: Db) -> None:
    pg = db.connector(timeout=0.3)
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.query", {"sql": "SELECT pg_sleep(5)"})
    assert caught.value.code == "57014"


async def test_a_silent_server_after_commit_leaves_the_write_uncertain(db: Db) -> None:
    async with WireProxy(db.server.host, db.server.port) as proxy:
        pg = db.connector(proxy.url(db.agent_url), timeout=0.5)
        proxy.hang_at("COMMIT")
        started = time.monotonic()
        with pytest.raises(EffectUncertainError, match="after COMMIT was sent"):
            await pg.call("postgres.insert_row", INSERT)
        assert time.monotonic() - started < 3
        assert proxy.statements[-1] == "COMMIT"
    wait_for_backends(db)
    assert db.one("SELECT count(*) FROM items") == 2  # the COMMIT never reached the server


async def test_a_silent_server_before_commit_is_a_definite_timeout(db: Db) -> None:
    async with WireProxy(db.server.host, db.server.port) as proxy:
        pg = db.connector(proxy.url(db.agent_url), timeout=0.5)
        proxy.hang_at("UPDATE")
        with pytest.raises(ToolError) as caught:
            await pg.call("postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 7}})
        assert caught.value.code == "timeout"
        assert "nothing was committed" in str(caught.value)
        proxy.hang_at("SELECT")
        with pytest.raises(ToolError) as caught:
            await pg.call("postgres.query", {"sql": "SELECT 1"})
        assert caught.value.code == "timeout"
    wait_for_backends(db)
    assert db.one("SELECT qty FROM items WHERE id = 1") == 3


# -- lost connections -----------------------------------------------------------------------------


@pytest.mark.parametrize("forward", [False, True], ids=["not-applied", "applied"])
async def test_a_connection_lost_at_commit_is_uncertain(db: Db, forward: bool) -> None:
    async with WireProxy(db.server.host, db.server.port) as proxy:
        pg = db.connector(proxy.url(db.agent_url))
        proxy.drop_at("COMMIT", forward=forward)
        with pytest.raises(EffectUncertainError) as caught:
            await pg.call("postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 8}})
        assert "connection to PostgreSQL was lost" in str(caught.value)
        assert AGENT_PASSWORD not in str(caught.value)
    wait_for_backends(db)
    # both outcomes are real: the tool cannot tell them apart, so it says uncertain
    assert db.one("SELECT qty FROM items WHERE id = 1") == (8 if forward else 3)


async def test_a_connection_lost_before_commit_is_a_definite_failure(db: Db) -> None:
    async with WireProxy(db.server.host, db.server.port) as proxy:
        pg = db.connector(proxy.url(db.agent_url))
        for statement, tool, args in (
            ("INSERT", "postgres.insert_row", INSERT),
            ("SELECT", "postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 8}}),
            (
                "UPDATE",
                "postgres.restore_row",
                {"table": "items", "key": 1, "values": {"qty": "8"}},
            ),
            ("DELETE", "postgres.delete_row", {"table": "items", "key": 1}),
        ):
            proxy.drop_at(statement, forward=True)
            with pytest.raises(ToolError) as caught:
                await pg.call(tool, args)
            assert caught.value.code == "connection_lost", tool
            assert "nothing was committed" in str(caught.value)
    wait_for_backends(db)
    assert db.rows()[0].startswith("(1,apple,3,")
    assert db.one("SELECT count(*) FROM items") == 2


async def test_a_connection_lost_during_a_query_is_a_tool_error(db: Db) -> None:
    async with WireProxy(db.server.host, db.server.port) as proxy:
        pg = db.connector(proxy.url(db.agent_url))
        proxy.drop_at("SELECT")
        with pytest.raises(ToolError) as caught:
            await pg.call("postgres.query", {"sql": "SELECT * FROM items"})
        assert caught.value.code == "connection_lost"
        assert (await pg.call("postgres.query", {"sql": "SELECT 1"}))["rows"] == [[1]]


async def test_the_engine_journals_a_lost_commit_as_uncertain(db: Db, tmp_path: Path) -> None:
    async with WireProxy(db.server.host, db.server.port) as proxy:
        pg = db.connector(proxy.url(db.agent_url))
        journal = SQLiteJournal.open(tmp_path / "journal")
        run = Run.start(journal, registry_for([pg]), executor=executor_for([pg]))
        proxy.drop_at("COMMIT", forward=True)
        with pytest.raises(EffectUncertainError):
            await run.call("postgres.insert_row", INSERT)
        proxy.drop_at("INSERT")
        with pytest.raises(ToolError):
            await run.call("postgres.insert_row", INSERT)
        assert [s.state for s in run.steps()] == [StepState.UNCERTAIN, StepState.FAILED]
        journal.close()


def wait_for_backends(db: Db, timeout: float = 5.0) -> None:
    """Wait until the server has noticed every dropped agent connection (its locks are gone)."""
    deadline = time.monotonic() + timeout
    query = "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND datname = %s"
    while db.one(query, [db.roles.agent, db.name]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert db.one(query, [db.roles.agent, db.name]) == 0
