"""PostgresFaults: the certification suite's fault descriptions, realised on the real server.

Each test starts the certification fixture's own backend (a scratch schema, the agent
role, a WireProxy in a thread), arms one ``reversi_core.testing.Fault`` through
``scratch.faults`` as the suite does, and looks at what the connector and the server
then really did.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from reversi_connector_postgres import PostgresConnector
from reversi_connector_postgres.testing import (
    CALL_TIMEOUT,
    ERROR_CODES,
    ScratchSchema,
    certification_fixture,
    commit_statement,
    raise_statement,
    tool_statement,
)
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.testing import Fault

pytestmark = pytest.mark.anyio

INSERT = {"table": "items", "values": {"name": "fig"}}
UPDATE = {"table": "items", "key": 1, "values": {"qty": 42}}
QUERY = {"sql": "SELECT name FROM items WHERE id = $1", "params": [1]}


@pytest.fixture
def scratch(pg_server: Any) -> Iterator[ScratchSchema]:
    """The fixture's backend, seeded, as one certification scenario sees it."""
    fixture = certification_fixture()
    with fixture.backend(Path("unused")) as made:
        assert fixture.seed is not None
        fixture.seed(made)
        yield made


def faults(scratch: ScratchSchema) -> Any:
    assert scratch.faults is not None
    return scratch.faults


def connector(scratch: ScratchSchema) -> PostgresConnector:
    return PostgresConnector(scratch.agent_url, timeout=CALL_TIMEOUT)


def count(scratch: ScratchSchema) -> int:
    with scratch.admin() as conn:
        query = sql.SQL("SELECT count(*) FROM {}.items").format(sql.Identifier(scratch.schema))
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def settle(scratch: ScratchSchema, rows: int, timeout: float = 5.0) -> None:
    """Wait until ``items`` holds ``rows`` rows: the server notices a lost client, then commits
    or rolls back, a moment after the proxy dropped it."""
    deadline = time.monotonic() + timeout
    while count(scratch) != rows and time.monotonic() < deadline:
        time.sleep(0.02)


def grants(scratch: ScratchSchema) -> list[tuple[str, str]]:
    with scratch.admin() as conn:
        rows = conn.execute(
            "SELECT c.relname, a.privilege_type FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "CROSS JOIN LATERAL aclexplode(c.relacl) a "
            "WHERE n.nspname = %s AND a.grantee = (SELECT oid FROM pg_roles WHERE rolname = %s) "
            "ORDER BY 1, 2",
            [scratch.schema, scratch.agent],
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


def role(scratch: ScratchSchema) -> tuple[int, bool]:
    """The agent role's connection limit, and whether it can log in with its password."""
    with scratch.server.admin() as conn:
        row = conn.execute(
            "SELECT rolconnlimit FROM pg_roles WHERE rolname = %s", [scratch.agent]
        ).fetchone()
    assert row is not None
    try:
        with psycopg.connect(scratch.agent_url) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return int(row[0]), False
    return int(row[0]), True


# -- the server put in a state --------------------------------------------------------------


async def test_401_changes_the_password_so_every_login_is_refused_with_28P01(
    scratch: ScratchSchema,
) -> None:
    pg = connector(scratch)
    faults(scratch).add(Fault.status(401), times=None)
    for tool, args in (("postgres.query", QUERY), ("postgres.insert_row", INSERT)):
        with pytest.raises(ToolError) as caught:
            await pg.call(tool, args)
        assert caught.value.code == "28P01"
        assert "password authentication failed" in str(caught.value)
        assert scratch.password not in str(caught.value)
    faults(scratch).clear()
    assert (await pg.call("postgres.query", QUERY))["rows"] == [["apple"]]


async def test_403_revokes_the_privileges_and_clear_grants_exactly_them_back(
    scratch: ScratchSchema,
) -> None:
    pg = connector(scratch)
    before = grants(scratch)
    assert ("items", "SELECT") in before
    faults(scratch).add(Fault.status(403), times=None)
    assert grants(scratch) == []
    for tool, args in (("postgres.query", QUERY), ("postgres.update_row", UPDATE)):
        with pytest.raises(ToolError) as caught:
            await pg.call(tool, args)
        assert caught.value.code == "42501"
        assert str(caught.value).startswith(
            "Postgres error 42501: permission denied for table items"
        )
    faults(scratch).clear()
    assert grants(scratch) == before
    assert (await pg.call("postgres.update_row", UPDATE))["previous"] == {"qty": "3"}


async def test_503_drops_the_connection_limit_to_zero_so_logins_get_53300(
    scratch: ScratchSchema,
) -> None:
    pg = connector(scratch)
    assert role(scratch) == (-1, True)
    faults(scratch).add(Fault.status(503), times=None)
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.insert_row", INSERT)
    assert caught.value.code == "53300"
    assert "too many connections for role" in str(caught.value)
    assert count(scratch) == 3
    faults(scratch).clear()
    assert role(scratch) == (-1, True)
    await pg.call("postgres.insert_row", INSERT)
    assert count(scratch) == 4


def test_describe_says_what_arming_each_status_does(scratch: ScratchSchema) -> None:
    """The results page prints these words, then the codes the connector answered with."""
    described = faults(scratch)
    assert described.describe(Fault.status(401)) == "a changed password"
    assert described.describe(Fault.status(403)) == "revoked privileges"
    assert described.describe(Fault.status(503)) == "a connection limit of zero"
    assert described.describe(Fault.status(422)) == "an error the server raises at the statement"
    assert described.describe(Fault.drop_after_read()) is None
    assert described.describe(Fault.hang(seconds=1.0)) is None
    assert set(described.DESCRIPTIONS) == set(ERROR_CODES)


def test_a_server_state_holds_until_clear_and_refuses_what_it_cannot_do(
    scratch: ScratchSchema,
) -> None:
    for bad in (
        lambda: faults(scratch).add(Fault.status(401)),  # times=1
        lambda: faults(scratch).add(Fault.status(403), times=None, writes=True),
        lambda: faults(scratch).add(Fault.status(418), times=None),
        lambda: faults(scratch).add(Fault.status(500, apply=True), times=None),
    ):
        with pytest.raises(ValueError, match="HTTP"):
            bad()


def test_leaving_the_backend_puts_the_role_back(pg_server: Any) -> None:
    fixture = certification_fixture()
    with fixture.backend(Path("unused")) as first:
        assert role(first) == (-1, True)
        faults(first).add(Fault.status(503), times=None)
        assert role(first) == (0, False)
        faults(first).add(Fault.status(401), times=None)
    with fixture.backend(Path("unused")) as second:
        assert role(second) == (-1, True)


# -- the server made to answer, through the proxy -----------------------------------------------


async def test_422_is_an_error_the_server_itself_raises_at_the_tools_statement(
    scratch: ScratchSchema,
) -> None:
    pg = connector(scratch)
    faults(scratch).add(Fault.status(422, json={"message": "it's refused"}), times=None)
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.insert_row", INSERT)
    assert caught.value.code == ERROR_CODES[422][0] == "22023"
    assert str(caught.value).startswith("Postgres error 22023: it's refused")
    assert count(scratch) == 3
    assert scratch.proxy is not None
    assert scratch.proxy.statements[-2:] == [
        'INSERT INTO "items" AS "_reversi_row" ("name") VALUES ($1) '
        'RETURNING "_reversi_row"."id", to_jsonb("_reversi_row".*)::text, "_reversi_row"."id"::text',
        "ROLLBACK",
    ]


def test_a_raised_error_aborts_the_servers_transaction_for_real(scratch: ScratchSchema) -> None:
    faults(scratch).add(Fault.status(500, json={"message": "boom"}), times=1)
    with psycopg.connect(scratch.agent_url, autocommit=True) as conn:
        conn.execute("BEGIN")
        with pytest.raises(psycopg.errors.InternalError_) as caught:
            conn.execute("SELECT 1")
        assert caught.value.sqlstate == "XX000"
        assert caught.value.diag.message_primary == "boom"
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            conn.execute("SELECT 2")
        conn.execute("ROLLBACK")
        assert conn.execute("SELECT 3").fetchone() == (3,)


def test_raise_statement_quotes_any_message() -> None:
    text = raise_statement("P0001", "a 'quote', a $reversi_fault$ tag and a \0 NUL")
    assert "''quote''" in text
    assert "\0" not in text
    assert not text.startswith("DO $reversi_fault$")
    with pytest.raises(ValueError, match="SQLSTATE"):
        raise_statement("42501; DROP", "x")


def test_raise_statement_runs_on_the_server(scratch: ScratchSchema) -> None:
    text = raise_statement("P0001", "a 'quote', a $reversi_fault$ tag")
    with psycopg.connect(scratch.agent_url) as conn, pytest.raises(psycopg.Error) as caught:
        conn.execute(text.encode())
    assert caught.value.sqlstate == "P0001"
    assert caught.value.diag.message_primary == "a 'quote', a $reversi_fault$ tag"


def test_where_faults_land() -> None:
    assert tool_statement("  insert into x values (1)")
    assert tool_statement("WITH t AS (SELECT 1) SELECT * FROM t")
    for control in ("BEGIN", "BEGIN READ ONLY", "COMMIT", "ROLLBACK", "SAVEPOINT a"):
        assert not tool_statement(control)
    assert commit_statement("COMMIT")
    assert commit_statement("end")
    assert not commit_statement("ROLLBACK")
    assert not commit_statement("COMMENT ON TABLE x IS ''")


# -- lost and silent connections ------------------------------------------------------------------


@pytest.mark.parametrize("apply", [False, True], ids=["not-applied", "applied"])
async def test_a_drop_on_writes_lands_on_commit_and_leaves_the_write_uncertain(
    scratch: ScratchSchema, apply: bool
) -> None:
    pg = connector(scratch)
    faults(scratch).add(Fault.drop_after_read(apply=apply), times=None, writes=True)
    with pytest.raises(EffectUncertainError, match="after COMMIT was sent"):
        await pg.call("postgres.insert_row", INSERT)
    assert scratch.proxy is not None
    assert scratch.proxy.statements[-1] == "COMMIT"
    faults(scratch).clear()
    settle(scratch, 4 if apply else 3)
    assert count(scratch) == (4 if apply else 3)


async def test_a_drop_on_a_read_is_a_plain_tool_error(scratch: ScratchSchema) -> None:
    pg = connector(scratch)
    faults(scratch).add(Fault.drop_after_read(), times=None)
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.query", QUERY)
    assert not isinstance(caught.value, EffectUncertainError)
    assert caught.value.code == "connection_lost"


async def test_a_hang_is_given_up_within_the_connectors_timeout(scratch: ScratchSchema) -> None:
    pg = connector(scratch)
    faults(scratch).add(Fault.hang(seconds=30), times=None, writes=True)
    started = time.monotonic()
    with pytest.raises(EffectUncertainError, match="did not answer within"):
        await pg.call("postgres.update_row", UPDATE)
    assert time.monotonic() - started < CALL_TIMEOUT * 2 + 1
    faults(scratch).clear()
    faults(scratch).add(Fault.hang(seconds=30), times=None)
    started = time.monotonic()
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.query", QUERY)
    assert caught.value.code == "timeout"
    assert time.monotonic() - started < CALL_TIMEOUT * 2 + 1
