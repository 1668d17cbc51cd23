"""Helpers of the postgres connector tests: the test database and its roles (see conftest.py)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from reversi_connector_postgres import PostgresConnector
from reversi_connector_postgres.testing import PostgresServer, table_checksums

AGENT_PASSWORD = "agent-" + secrets.token_hex(10)
READER_PASSWORD = "reader-" + secrets.token_hex(10)

ITEMS = """
CREATE TABLE items (
    id serial PRIMARY KEY,
    name text NOT NULL,
    qty integer NOT NULL DEFAULT 0 CHECK (qty >= 0),
    tags jsonb,
    price numeric(10, 2),
    seen timestamptz
)
"""


@dataclass(frozen=True)
class Roles:
    """The login roles of the session: ``agent`` (writes ``items``) and ``reader`` (no grants)."""

    agent: str
    reader: str


@dataclass
class Db:
    """A fresh database with ``items``; ``statements`` records what the connector sent."""

    server: PostgresServer
    name: str
    roles: Roles
    statements: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    @property
    def agent_url(self) -> str:
        return self.server.url(user=self.roles.agent, password=AGENT_PASSWORD, dbname=self.name)

    @property
    def reader_url(self) -> str:
        return self.server.url(user=self.roles.reader, password=READER_PASSWORD, dbname=self.name)

    def admin(self) -> psycopg.Connection[Any]:
        """A superuser connection to this database (autocommit)."""
        return self.server.admin(self.name)

    def connector(self, url: str | None = None, *, timeout: float = 10.0) -> PostgresConnector:
        """A connector logging in as ``agent`` (or ``url``), recording into ``statements``."""
        return PostgresConnector(
            url or self.agent_url,
            timeout=timeout,
            on_statement=lambda text, params: self.statements.append((text, params)),
        )

    def rows(self, table: str = "items") -> list[str]:
        """Every row of ``table`` as PostgreSQL text, by id."""
        with self.admin() as conn:
            query = sql.SQL("SELECT t::text FROM {} t ORDER BY id").format(sql.Identifier(table))
            return [r[0] for r in conn.execute(query)]

    def one(self, query: str, params: list[Any] | None = None) -> Any:
        """The first column of the first row of an admin query."""
        with self.admin() as conn:
            row = conn.execute(query.encode(), params).fetchone()
        assert row is not None
        return row[0]

    def checksums(self) -> dict[str, str]:
        with self.admin() as conn:
            return table_checksums(conn)

    def grant(self, *statements: str) -> None:
        """Run admin statements with ``{agent}`` and ``{reader}`` filled with the role names."""
        with self.admin() as conn:
            for text in statements:
                filled = text.replace("{agent}", f'"{self.roles.agent}"')
                conn.execute(filled.replace("{reader}", f'"{self.roles.reader}"').encode())
