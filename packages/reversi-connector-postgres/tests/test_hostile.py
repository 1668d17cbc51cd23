"""Hostile names are refused before any connection is opened; hostile values are stored verbatim."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from _pgfixtures import Db

from reversi_connector_postgres import PostgresConnector
from reversi_core import Run, SQLiteJournal, executor_for, registry_for
from reversi_core.errors import InvalidArgumentsError, ToolError
from reversi_core.journal import StepState

pytestmark = pytest.mark.anyio

INJECTIONS = [
    'items"; DROP TABLE items; --',
    "items; DROP TABLE items",
    "items WHERE 1=1",
    "items--",
    "items/**/",
    '"items"',
    "pg_catalog.pg_authid",
    "items\n",
    "items\x00",
    "ítems",
    "1items",
    "",
    "i" * 64,
    "$1",
    "%s",
    "items)",
]


def closed_port_url() -> str:
    """A URL whose server does not exist: any attempt to connect would fail with 'connect'."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"postgresql://agent:nopassword1@127.0.0.1:{port}/none"


def calls_with(name: str) -> list[tuple[str, dict[str, Any]]]:
    """Every place a name goes, in every tool that takes it."""
    return [
        ("postgres.insert_row", {"table": name, "values": {"name": "x"}}),
        ("postgres.insert_row", {"table": "items", "schema": name, "values": {"name": "x"}}),
        ("postgres.insert_row", {"table": "items", "values": {name: "x"}}),
        ("postgres.insert_row", {"table": "items", "values": {"name": "x"}, "key_column": name}),
        ("postgres.update_row", {"table": name, "key": 1, "values": {"qty": 1}}),
        ("postgres.update_row", {"table": "items", "key": 1, "values": {name: 1}}),
        (
            "postgres.update_row",
            {"table": "items", "key": 1, "key_column": name, "values": {"a": 1}},
        ),
        ("postgres.restore_row", {"table": "items", "key": 1, "values": {name: "1"}}),
        ("postgres.restore_row", {"table": "items", "schema": name, "key": 1, "values": {"a": 1}}),
        ("postgres.delete_row", {"table": name, "key": 1}),
        ("postgres.delete_row", {"table": "items", "key_column": name, "key": 1}),
    ]


@pytest.mark.parametrize("name", INJECTIONS, ids=repr)
async def test_hostile_identifiers_are_refused_before_connecting(name: str) -> None:
    sent: list[tuple[str, tuple[Any, ...]]] = []
    pg = PostgresConnector(closed_port_url(), on_statement=lambda t, p: sent.append((t, p)))
    for tool, args in calls_with(name):
        with pytest.raises(InvalidArgumentsError) as caught:
            await pg.call(tool, args)
        assert "should match pattern" in str(caught.value), (tool, args)
    assert sent == []


async def test_hostile_identifiers_are_rejected_steps_in_the_engine(tmp_path: Path) -> None:
    pg = PostgresConnector(closed_port_url())
    journal = SQLiteJournal.open(tmp_path / "journal")
    run = Run.start(journal, registry_for([pg]), executor=executor_for([pg]))
    with pytest.raises(InvalidArgumentsError):
        await run.call("postgres.insert_row", {"table": "t; DROP TABLE t", "values": {"a": 1}})
    with pytest.raises(InvalidArgumentsError):
        await run.call("postgres.update_row", {"table": "t", "key": 1, "values": {'a"b': 1}})
    assert [s.state for s in run.steps()] == [StepState.REJECTED, StepState.REJECTED]
    journal.close()


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1; DROP TABLE items",
        "SELECT 1;",
        "SELECT ';'",
        "DELETE FROM items",
        "UPDATE items SET qty = 0",
        "INSERT INTO items (name) VALUES ('x')",
        "/* SELECT */ DROP TABLE items",
        "-- SELECT\nTRUNCATE items",
        "COPY items TO STDOUT",
        "CALL something()",
        "SET ROLE postgres",
        "",
    ],
)
async def test_query_refuses_anything_but_one_select_or_with(text: str) -> None:
    sent: list[tuple[str, tuple[Any, ...]]] = []
    pg = PostgresConnector(closed_port_url(), on_statement=lambda t, p: sent.append((t, p)))
    with pytest.raises(InvalidArgumentsError):
        await pg.call("postgres.query", {"sql": text})
    assert sent == []


async def test_query_refuses_placeholders_that_do_not_match_the_values() -> None:
    pg = PostgresConnector(closed_port_url())
    for text, params in (
        ("SELECT $1", []),
        ("SELECT 1", [1]),
        ("SELECT $1, $3", [1, 2, 3]),
        ("SELECT $2", [1, 2]),
    ):
        with pytest.raises(InvalidArgumentsError, match="values were given"):
            await pg.call("postgres.query", {"sql": text, "params": params})


HOSTILE_VALUES = [
    "x'); DROP TABLE items; --",
    "'; DELETE FROM items WHERE ''='",
    '"; DROP TABLE items; --',
    "$1 $2 %s %(name)s %% \\ \\\\ \\'",
    "$$; DROP TABLE items; $$",
    "\u202eevil\u202c ünïcödé 🐘",
    "line1\nline2\r\n\ttab",
    "x" * 100_000,
    "E'\\x41'",
]


async def test_hostile_values_are_stored_verbatim(db: Db) -> None:
    pg = db.connector()
    keys = []
    for value in HOSTILE_VALUES:
        made = await pg.call("postgres.insert_row", {"table": "items", "values": {"name": value}})
        keys.append(made["key"])
    for key, value in zip(keys, HOSTILE_VALUES, strict=True):
        assert db.one("SELECT name FROM items WHERE id = %s", [key]) == value
        back = await pg.call(
            "postgres.query", {"sql": "SELECT name FROM items WHERE id = $1", "params": [key]}
        )
        assert back["rows"] == [[value]]
    same = await pg.call(
        "postgres.query",
        {"sql": "SELECT count(*) FROM items WHERE name = $1", "params": [HOSTILE_VALUES[0]]},
    )
    assert same["rows"] == [[1]]
    updated = await pg.call(
        "postgres.update_row", {"table": "items", "key": 1, "values": {"name": HOSTILE_VALUES[1]}}
    )
    assert updated["previous"] == {"name": "apple"}
    assert db.one("SELECT name FROM items WHERE id = 1") == HOSTILE_VALUES[1]
    assert db.one("SELECT count(*) FROM items") == 2 + len(HOSTILE_VALUES)


async def test_a_hostile_string_key_is_a_value_not_sql(db: Db) -> None:
    pg = db.connector()
    before = db.rows()
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.delete_row", {"table": "items", "key": "1 OR 1=1"})
    assert caught.value.code == "22P02"  # the server read it as an integer, and could not
    assert db.statements[1] == ('DELETE FROM "items" WHERE "id" = %s', ("1 OR 1=1",))
    assert db.rows() == before


async def test_a_nul_character_is_refused_by_the_server_not_truncated(db: Db) -> None:
    pg = db.connector()
    before = db.rows()
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.insert_row", {"table": "items", "values": {"name": "a\x00b"}})
    assert caught.value.code == "invalid_value"
    assert "NUL" in str(caught.value)
    assert db.statements[-1] == ("ROLLBACK", ())
    assert db.rows() == before
