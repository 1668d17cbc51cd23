"""Each tool against a real PostgreSQL server, with the exact SQL and parameters it sent."""

from __future__ import annotations

import pytest
from _pgfixtures import Db

from reversi_core.errors import ToolError

pytestmark = pytest.mark.anyio


# -- insert_row -----------------------------------------------------------------------------


async def test_insert_row_returns_the_key_and_sends_exactly_this(db: Db) -> None:
    pg = db.connector()
    result = await pg.call(
        "postgres.insert_row", {"table": "items", "values": {"name": "fig", "qty": 7}}
    )
    assert result == {
        "table": "items",
        "schema": None,
        "key_column": "id",
        "key": 3,
        "inserted": '{"id": 3, "qty": 7, "name": "fig", "seen": null, "tags": null, "price": null}',
    }
    assert db.statements == [
        ("BEGIN", ()),
        (
            'INSERT INTO "items" AS "_reversi_row" ("name", "qty") VALUES (%s, %s) '
            'RETURNING "_reversi_row"."id", to_jsonb("_reversi_row".*)::text, '
            '"_reversi_row"."id"::text',
            ("fig", 7),
        ),
        (
            'SELECT to_jsonb("_reversi_row".*)::text FROM "items" AS "_reversi_row" '
            'WHERE "_reversi_row"."id" = %s',
            (3,),
        ),
        ("COMMIT", ()),
    ]
    assert db.rows()[-1] == "(3,fig,7,,,)"


async def test_insert_row_binds_objects_and_arrays_as_json(db: Db) -> None:
    pg = db.connector()
    tags = {"nested": {"list": [1, "two", None, True]}, "quote": 'it\'s "x"'}
    made = await pg.call(
        "postgres.insert_row", {"table": "items", "values": {"name": "j", "tags": tags}}
    )
    assert db.one("SELECT tags FROM items WHERE id = %s", [made["key"]]) == tags
    listed = await pg.call(
        "postgres.insert_row", {"table": "items", "values": {"name": "l", "tags": [1, [2]]}}
    )
    assert db.one("SELECT tags FROM items WHERE id = %s", [listed["key"]]) == [1, [2]]
    assert db.statements[1][1] == ("j", tags)


async def test_insert_row_with_schema_defaults_and_another_key_column(db: Db) -> None:
    db.grant(
        "CREATE SCHEMA shop",
        "CREATE TABLE shop.codes (code text PRIMARY KEY DEFAULT 'c-' || md5(random()::text),"
        " made timestamptz NOT NULL DEFAULT now())",
        "GRANT USAGE ON SCHEMA shop TO {agent}",
        "GRANT SELECT, INSERT, DELETE ON shop.codes TO {agent}",
    )
    pg = db.connector()
    made = await pg.call(
        "postgres.insert_row", {"table": "codes", "schema": "shop", "key_column": "code"}
    )
    assert made["schema"] == "shop"
    assert made["key_column"] == "code"
    assert made["key"].startswith("c-")
    assert db.statements[1] == (
        'INSERT INTO "shop"."codes" AS "_reversi_row" DEFAULT VALUES '
        'RETURNING "_reversi_row"."code", to_jsonb("_reversi_row".*)::text, '
        '"_reversi_row"."code"::text',
        (),
    )
    gone = await pg.call(
        "postgres.delete_row",
        {"table": "codes", "schema": "shop", "key_column": "code", "key": made["key"]},
    )
    assert gone["deleted"] == 1
    assert db.one("SELECT count(*) FROM shop.codes") == 0


async def test_insert_row_with_a_uuid_key_round_trips_through_delete_row(db: Db) -> None:
    db.grant(
        "CREATE TABLE tokens (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), label text)",
        "GRANT SELECT, INSERT, DELETE ON tokens TO {agent}",
    )
    pg = db.connector()
    made = await pg.call("postgres.insert_row", {"table": "tokens", "values": {"label": "x"}})
    assert isinstance(made["key"], str)
    assert len(made["key"]) == 36
    gone = await pg.call("postgres.delete_row", {"table": "tokens", "key": made["key"]})
    assert gone["deleted"] == 1


async def test_insert_row_duplicate_key_is_a_postgres_error_and_nothing_changes(db: Db) -> None:
    pg = db.connector()
    before = db.rows()
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.insert_row", {"table": "items", "values": {"id": 1, "name": "d"}})
    assert caught.value.code == "23505"
    assert str(caught.value).startswith("Postgres error 23505: duplicate key value")
    assert "the transaction was rolled back" in str(caught.value)
    assert db.statements[-1] == ("ROLLBACK", ())
    assert db.rows() == before


async def test_insert_row_with_a_null_key_inserts_nothing(db: Db) -> None:
    db.grant("CREATE TABLE notes (id int, body text)", "GRANT SELECT, INSERT ON notes TO {agent}")
    pg = db.connector()
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.insert_row", {"table": "notes", "values": {"body": "b"}})
    assert caught.value.code == "no_key"
    assert db.statements[-1] == ("ROLLBACK", ())
    assert db.one("SELECT count(*) FROM notes") == 0


@pytest.mark.parametrize(
    ("column", "value", "text"),
    [
        ("double precision", 1.5, "1.5"),
        ("boolean", True, "true"),
        ("numeric(6,2)", "12.50", "12.50"),
        ("jsonb", {"k": [1, 2]}, '{"k": [1, 2]}'),
        ("date", "2026-12-02", "2026-12-02"),
    ],
)
async def test_insert_row_with_a_key_of_another_type_is_undone_by_its_delete(
    db: Db, column: str, value: object, text: str
) -> None:
    """A key that is not an integer comes back in PostgreSQL's text form, which delete_row
    (the undo, whose key is an integer or a string) finds the row by."""
    db.grant(
        f"CREATE TABLE odd (k {column} PRIMARY KEY, body text)",
        "GRANT SELECT, INSERT, DELETE ON odd TO {agent}",
    )
    pg = db.connector()
    made = await pg.call(
        "postgres.insert_row",
        {"table": "odd", "key_column": "k", "values": {"k": value, "body": "b"}},
    )
    assert made["key"] == text
    gone = await pg.call(
        "postgres.delete_row",
        {"table": "odd", "key_column": "k", "key": made["key"], "inserted": made["inserted"]},
    )
    assert gone["deleted"] == 1
    assert db.one("SELECT count(*) FROM odd") == 0


async def test_insert_row_keyed_by_a_column_without_equality_inserts_nothing(db: Db) -> None:
    db.grant(
        "CREATE TABLE docs (doc json NOT NULL, body text)", "GRANT SELECT, INSERT ON docs TO {agent}"
    )
    pg = db.connector()
    with pytest.raises(ToolError) as caught:
        await pg.call(
            "postgres.insert_row",
            {"table": "docs", "key_column": "doc", "values": {"doc": {"a": 1}, "body": "b"}},
        )
    assert caught.value.code == "no_key"
    assert "nothing was inserted" in str(caught.value)
    assert db.statements[-1] == ("ROLLBACK", ())
    assert db.one("SELECT count(*) FROM docs") == 0


async def test_insert_row_keyed_by_a_column_other_rows_share_inserts_nothing(db: Db) -> None:
    """Its undo would delete every row with that key: the insert is refused instead."""
    db.grant(
        "CREATE TABLE tasks (id serial PRIMARY KEY, status text)",
        "INSERT INTO tasks (status) VALUES ('open')",
        "GRANT SELECT, INSERT ON tasks TO {agent}",
        "GRANT USAGE ON SEQUENCE tasks_id_seq TO {agent}",
    )
    pg = db.connector()
    with pytest.raises(ToolError) as caught:
        await pg.call(
            "postgres.insert_row",
            {"table": "tasks", "key_column": "status", "values": {"status": "open"}},
        )
    assert caught.value.code == "key_not_unique"
    assert db.statements[-1] == ("ROLLBACK", ())
    assert db.one("SELECT count(*) FROM tasks") == 1


# -- update_row and restore_row --------------------------------------------------------------


async def test_update_row_returns_old_values_in_one_locked_transaction(db: Db) -> None:
    pg = db.connector()
    result = await pg.call(
        "postgres.update_row",
        {"table": "items", "key": 1, "values": {"qty": 10, "tags": None, "price": "2.25"}},
    )
    assert result == {
        "table": "items",
        "schema": None,
        "key_column": "id",
        "key": 1,
        "previous": {"qty": "3", "tags": '{"colour": "red"}', "price": "1.50"},
        "written": {"qty": "10", "tags": None, "price": "2.25"},
    }
    assert db.statements == [
        ("BEGIN", ()),
        (
            'SELECT "qty"::text, "tags"::text, "price"::text FROM "items" WHERE "id" = %s '
            "FOR UPDATE",
            (1,),
        ),
        (
            'UPDATE "items" SET "qty" = %s, "tags" = %s, "price" = %s WHERE "id" = %s '
            'RETURNING "qty"::text, "tags"::text, "price"::text',
            (10, None, "2.25", 1),
        ),
        ("COMMIT", ()),
    ]
    assert db.rows()[0] == '(1,apple,10,,2.25,"2024-05-01 10:00:00+00")'


async def test_restore_row_puts_back_exactly_what_update_row_replaced(db: Db) -> None:
    db.grant(
        "CREATE TABLE odd (id bigserial PRIMARY KEY, ts timestamptz, d date, t time, "
        "iv interval, arr int[], js json, jb jsonb, b bytea, f float8, n numeric, "
        "u uuid, inet inet, r int4range, flag boolean, txt text)",
        "INSERT INTO odd (ts, d, t, iv, arr, js, jb, b, f, n, u, inet, r, flag, txt) VALUES ("
        "'2024-02-29 23:59:59.123456-05', '2024-02-29', '13:14:15', '1 year 2 days 03:04:05',"
        " '{1,NULL,3}', '{\"b\": 1,  \"a\": [2]}', '{\"z\": {\"y\": null}}', '\\x00ff10',"
        " 0.1, 12345678901234567890.123456789, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',"
        " '10.1.2.3/24', '[1,5)', true, E'line\\nnext \\\\ ''quoted'' 100% $1')",
        "GRANT SELECT, UPDATE ON odd TO {agent}",
    )
    before = db.rows("odd")
    columns = ["ts", "d", "t", "iv", "arr", "js", "jb", "b", "f", "n", "u", "inet", "r", "flag"]
    new = {
        "ts": "2000-01-01T00:00:00Z",
        "d": "2000-01-01",
        "t": "00:00",
        "iv": "1 second",
        "arr": "{9}",
        "js": {"new": True},
        "jb": [1, 2],
        "b": "\\x01",
        "f": 2.5,
        "n": "1",
        "u": "00000000-0000-0000-0000-000000000000",
        "inet": "127.0.0.1",
        "r": "[2,3)",
        "flag": False,
        "txt": None,
    }
    pg = db.connector()
    updated = await pg.call("postgres.update_row", {"table": "odd", "key": 1, "values": new})
    assert list(updated["previous"]) == [*columns, "txt"]
    assert db.rows("odd") != before
    restore = {
        "table": "odd",
        "key": 1,
        "values": updated["previous"],
    }
    first = await pg.call("postgres.restore_row", restore)
    assert first["restored"] == 1
    assert db.rows("odd") == before
    await pg.call("postgres.restore_row", restore)
    assert db.rows("odd") == before
    # the undo as the engine computes it: only where the row holds what the update wrote,
    # which every one of these types must compare equal to itself (json and ranges too)
    again = await pg.call("postgres.update_row", {"table": "odd", "key": 1, "values": new})
    guarded = {**restore, "written": again["written"]}
    assert (await pg.call("postgres.restore_row", guarded))["restored"] == 1
    assert db.rows("odd") == before
    assert (await pg.call("postgres.restore_row", guarded))["restored"] == 0
    assert db.rows("odd") == before


async def test_update_row_of_a_missing_row_changes_nothing(db: Db) -> None:
    pg = db.connector()
    before = db.rows()
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.update_row", {"table": "items", "key": 99, "values": {"qty": 1}})
    assert caught.value.code == "not_found"
    assert [s[0] for s in db.statements][-1] == "ROLLBACK"
    assert not any(s[0].startswith("UPDATE") for s in db.statements)
    assert db.rows() == before


async def test_update_row_refuses_a_key_that_matches_several_rows(db: Db) -> None:
    db.grant(
        "CREATE TABLE dup (id int, v text)",
        "INSERT INTO dup VALUES (1, 'a'), (1, 'b')",
        "GRANT SELECT, UPDATE, DELETE ON dup TO {agent}",
    )
    pg = db.connector()
    before = db.rows("dup")
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.update_row", {"table": "dup", "key": 1, "values": {"v": "c"}})
    assert caught.value.code == "key_not_unique"
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.delete_row", {"table": "dup", "key": 1})
    assert caught.value.code == "key_not_unique"
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.restore_row", {"table": "dup", "key": 1, "values": {"v": "z"}})
    assert caught.value.code == "key_not_unique"
    assert db.rows("dup") == before
    assert db.statements[-1] == ("ROLLBACK", ())


async def test_restore_row_of_a_vanished_row_fails(db: Db) -> None:
    pg = db.connector()
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.restore_row", {"table": "items", "key": 99, "values": {"qty": "1"}})
    assert caught.value.code == "not_found"
    assert db.statements == [
        ("BEGIN", ()),
        ('UPDATE "items" SET "qty" = %s WHERE "id" = %s', ("1", 99)),
        ("ROLLBACK", ()),
    ]


async def test_a_server_error_in_update_rolls_back(db: Db) -> None:
    pg = db.connector()
    before = db.rows()
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.update_row", {"table": "items", "key": 1, "values": {"qty": -1}})
    assert caught.value.code == "23514"
    assert "Postgres error 23514: new row for relation" in str(caught.value)
    assert db.statements[-1] == ("ROLLBACK", ())
    assert db.rows() == before


# -- delete_row ---------------------------------------------------------------------------------


async def test_delete_row_is_idempotent(db: Db) -> None:
    pg = db.connector()
    first = await pg.call("postgres.delete_row", {"table": "items", "key": 2})
    second = await pg.call("postgres.delete_row", {"table": "items", "key": "2"})
    assert (first["deleted"], second["deleted"]) == (1, 0)
    assert db.statements == [
        ("BEGIN", ()),
        ('DELETE FROM "items" WHERE "id" = %s', (2,)),
        ("COMMIT", ()),
        ("BEGIN", ()),
        ('DELETE FROM "items" WHERE "id" = %s', ("2",)),
        ("COMMIT", ()),
    ]
    assert len(db.rows()) == 1


# -- query ----------------------------------------------------------------------------------------


async def test_query_runs_read_only_with_native_placeholders(db: Db) -> None:
    pg = db.connector()
    text = "SELECT id, name, tags, price, seen FROM items WHERE qty > $1 AND name <> $2 ORDER BY id"
    result = await pg.call("postgres.query", {"sql": text, "params": [1, "nobody"]})
    assert result == {
        "columns": ["id", "name", "tags", "price", "seen"],
        "rows": [
            [1, "apple", {"colour": "red"}, "1.50", "2024-05-01T10:00:00+00:00"],
            [2, "pear", None, "0.99", None],
        ],
        "row_count": 2,
        "truncated": False,
    }
    assert db.statements == [("BEGIN READ ONLY", ()), (text, (1, "nobody")), ("ROLLBACK", ())]


async def test_query_leaves_percent_and_dollar_signs_in_constants_alone(db: Db) -> None:
    pg = db.connector()
    text = (
        "SELECT '100%' AS pct, '$1' AS dollar, '%s %(x)s %%' AS fmt, $q$ $2 ; no $q$ AS dq, "
        "E'\\'$1\\'' AS esc, \"name\" AS \"$1%\" /* $3 */ FROM items -- $4\nWHERE id = $1"
    )
    result = await pg.call("postgres.query", {"sql": text.replace(";", ","), "params": [1]})
    assert result["columns"] == ["pct", "dollar", "fmt", "dq", "esc", "$1%"]
    assert result["rows"] == [["100%", "$1", "%s %(x)s %%", " $2 , no ", "'$1'", "apple"]]
    assert db.statements[1] == (text.replace(";", ","), (1,))


async def test_query_binds_object_parameters_as_json(db: Db) -> None:
    pg = db.connector()
    result = await pg.call(
        "postgres.query",
        {"sql": "SELECT name FROM items WHERE tags @> $1::jsonb", "params": [{"colour": "red"}]},
    )
    assert result["rows"] == [["apple"]]


async def test_query_returns_at_most_1000_rows(db: Db) -> None:
    pg = db.connector()
    result = await pg.call(
        "postgres.query", {"sql": "SELECT g FROM generate_series(1, 250000) AS g ORDER BY g"}
    )
    assert result["row_count"] == 1000
    assert result["truncated"] is True
    assert result["rows"][-1] == [1000]
    exact = await pg.call("postgres.query", {"sql": "SELECT g FROM generate_series(1, 1000) g"})
    assert (exact["row_count"], exact["truncated"]) == (1000, False)


async def test_a_write_hidden_in_with_is_refused_by_the_server(db: Db) -> None:
    pg = db.connector()
    before = db.rows()
    seq = db.one("SELECT last_value FROM items_id_seq")
    for text in (
        "WITH w AS (INSERT INTO items (name) VALUES ('x') RETURNING id) SELECT id FROM w",
        "WITH d AS (DELETE FROM items RETURNING id) SELECT count(*) FROM d",
        "WITH u AS (UPDATE items SET qty = 0 RETURNING id) SELECT * FROM u",
    ):
        with pytest.raises(ToolError) as caught:
            await pg.call("postgres.query", {"sql": text})
        assert caught.value.code == "25006", caught.value
        assert "read-only transaction" in str(caught.value)
    assert db.rows() == before
    assert db.one("SELECT last_value FROM items_id_seq") == seq


async def test_query_server_errors_carry_the_sqlstate(db: Db) -> None:
    pg = db.connector()
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.query", {"sql": "SELECT * FROM nowhere"})
    assert caught.value.code == "42P01"
    assert str(caught.value).startswith('Postgres error 42P01: relation "nowhere" does not exist')
    with pytest.raises(ToolError) as caught:
        await pg.call("postgres.query", {"sql": "SELECT 1 / $1", "params": [0]})
    assert caught.value.code == "22012"
