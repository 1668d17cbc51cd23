"""Fixtures for the postgres connector tests: one real server per session, a database per test.

The server is ``REVERSI_TEST_POSTGRES_URL`` when set, else a throwaway cluster started
once for the session on a random port (``reversi_connector_postgres.testing``) and
removed at the end. When neither can be had, every test that needs it FAILS with the
reason: these tests are never skipped.

Each test that takes ``db`` gets a fresh database holding ``items`` (serial key), owned
by the superuser; the connector logs in as ``agent``, a role with SELECT, INSERT,
UPDATE and DELETE on it (and USAGE on its sequence) and nothing else, as the
dedicated-role recipe in docs/connectors/postgres.md says.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg import sql

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _pgfixtures import AGENT_PASSWORD, ITEMS, READER_PASSWORD, Db, Roles  # noqa: E402 - found only after the tests folder is put on sys.path above

from reversi_connector_postgres.testing import (  # noqa: E402 - as above
    PostgresServer,
    PostgresUnavailable,
    shared_server,
)


@pytest.fixture(scope="session")
def pg_server() -> PostgresServer:
    """The session's PostgreSQL server; fails (never skips) when none can be had."""
    try:
        server = shared_server()
    except PostgresUnavailable as exc:
        pytest.fail(f"no PostgreSQL server for the postgres connector tests: {exc}", pytrace=False)
    # not stopped here: other fixtures of this process (the journal's, the connector's,
    # the soak's) share it; shared_server stops it when the process exits
    return server


@pytest.fixture(scope="session")
def roles(pg_server: PostgresServer) -> Iterator[Roles]:
    suffix = secrets.token_hex(3)
    made = Roles(agent=f"agent_{suffix}", reader=f"reader_{suffix}")
    with pg_server.admin() as conn:
        for role, password in ((made.agent, AGENT_PASSWORD), (made.reader, READER_PASSWORD)):
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(password)
                )
            )
    yield made
    with pg_server.admin() as conn:
        for role in (made.agent, made.reader):
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.fixture
def db(pg_server: PostgresServer, roles: Roles) -> Iterator[Db]:
    """A fresh database with ``items`` (rows 1 apple, 2 pear) and the agent's grants."""
    name = f"t_{secrets.token_hex(5)}"
    with pg_server.admin() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    made = Db(pg_server, name, roles)
    with made.admin() as conn:
        conn.execute(ITEMS.encode())
        conn.execute(
            b"INSERT INTO items (name, qty, tags, price, seen) VALUES "
            b"('apple', 3, '{\"colour\": \"red\"}', 1.50, '2024-05-01 12:00:00+02'), "
            b"('pear', 5, NULL, 0.99, NULL)"
        )
    made.grant(
        "GRANT SELECT, INSERT, UPDATE, DELETE ON items TO {agent}",
        "GRANT USAGE ON SEQUENCE items_id_seq TO {agent}",
    )
    yield made
    with pg_server.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
