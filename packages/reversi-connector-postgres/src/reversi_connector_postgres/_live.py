"""postgres's live scenario (``nox -s live -- postgres``; docs/connectors/postgres.md).

Against the database of ``POSTGRES_URL``: create a throwaway table
``<REVERSI_LIVE_POSTGRES_SCHEMA>.reversi_live_<suffix>`` holding one row, then, through
the real engine, insert a second row and update the first; check both; roll the run
back; check that the inserted row is gone and the updated one holds its old value;
drop the table (also when a step fails). The table is created and dropped over a
connection of the scenario's own, outside the connector, which has no DDL tool: the
role of ``POSTGRES_URL`` needs ``CREATE`` on the schema. Nothing is recorded: the
connector speaks PostgreSQL's protocol, not HTTP.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import sql

from reversi_core.testing import LiveCheckFailed, LiveContext, LiveVariable

from ._sql import IDENTIFIER_PATTERN
from .connector import ENV_VAR

__all__ = ["LIVE_SCHEMA_VARIABLE", "LIVE_SUMMARY", "LIVE_VARIABLES", "live_scenario"]

LIVE_SCHEMA_VARIABLE = "REVERSI_LIVE_POSTGRES_SCHEMA"
"""The schema the scenario's throwaway table is created in (default ``public``)."""

LIVE_SUMMARY = (
    "Creates a throwaway table with one row, inserts a row and updates the other through the "
    "engine, rolls the run back, checks that the table holds exactly its first row again, and "
    "drops the table."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(
        LIVE_SCHEMA_VARIABLE,
        "the schema to create the throwaway table in (the role needs CREATE on it)",
        default="public",
    ),
)
"""The variables the scenario reads besides POSTGRES_URL."""


async def _rows(conn: psycopg.AsyncConnection[Any], target: sql.Composable) -> list[tuple[Any, ...]]:
    cursor = await conn.execute(sql.SQL("SELECT id, name, qty FROM {} ORDER BY id").format(target))
    return list(await cursor.fetchall())


async def live_scenario(live: LiveContext) -> None:
    """A row inserted and a row updated, then their rollback, checked (see the module docstring)."""
    schema = live.env[LIVE_SCHEMA_VARIABLE]
    if not re.match(IDENTIFIER_PATTERN, schema):
        raise LiveCheckFailed(f"expected {LIVE_SCHEMA_VARIABLE} to be a plain identifier, not {schema!r}")
    table = live.name("reversi_live", "_")
    target = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table))
    at = {"schema": schema, "table": table}
    async with await psycopg.AsyncConnection.connect(live.environ[ENV_VAR], autocommit=True) as conn:
        await conn.execute(
            sql.SQL(
                "CREATE TABLE {} (id integer PRIMARY KEY, name text NOT NULL, qty integer NOT NULL)"
            ).format(target)
        )
        live.log(f"created {schema}.{table}")
        try:
            await conn.execute(sql.SQL("INSERT INTO {} VALUES (1, 'first', 1)").format(target))
            run = live.start_run()
            await run.call("postgres.insert_row", {**at, "values": {"id": 2, "name": "live", "qty": 2}})
            await run.call("postgres.update_row", {**at, "key": 1, "values": {"qty": 5}})
            _, seen = await run.call(
                "postgres.query",
                # the tool takes SQL text; both names were checked against IDENTIFIER_PATTERN
                {"sql": f'SELECT id, qty FROM "{schema}"."{table}" ORDER BY id'},  # noqa: S608
            )
            live.check(seen["rows"] == [[1, 5], [2, 2]], f"rows [1, 5] and [2, 2], not {seen['rows']}")
            await live.rollback(run)
            after = await _rows(conn, target)
            live.check(after == [(1, "first", 1)], f"only the first row, as it was, not {after}")
        finally:
            await conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(target))
            live.log(f"dropped {schema}.{table}")
