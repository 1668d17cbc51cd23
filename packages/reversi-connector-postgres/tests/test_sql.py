"""The SQL each tool composes (exact text and parameters), the identifier rule, the lexer,
value conversion and the connection string: no server needed."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
from psycopg import conninfo
from psycopg.types.json import Json

from reversi_connector_postgres import _sql
from reversi_connector_postgres._session import connection_string, grace
from reversi_connector_postgres._values import bind, to_json
from reversi_core.errors import ToolError

HOSTILE_NAMES = [
    "",
    "1abc",
    'a"b',
    "items; DROP TABLE items",
    "items--",
    "a b",
    "a.b",
    "a\n",
    "a\x00",
    "é",
    "x" * 64,
    "items)",
    '"; DELETE FROM items; --',
    "$1",
    "%s",
]


ROW = '"_reversi_row"'


def test_insert_row_sql_and_params() -> None:
    st = _sql.insert_row("items", None, {"name": "fig", "qty": 7}, "id")
    assert st.text() == (
        f'INSERT INTO "items" AS {ROW} ("name", "qty") VALUES (%s, %s) '
        f'RETURNING {ROW}."id", to_jsonb({ROW}.*)::text, {ROW}."id"::text'
    )
    assert st.params == ("fig", 7)


def test_insert_row_schema_qualified_and_defaults() -> None:
    st = _sql.insert_row("items", "shop", {}, "item_id")
    assert st.text() == (
        f'INSERT INTO "shop"."items" AS {ROW} DEFAULT VALUES '
        f'RETURNING {ROW}."item_id", to_jsonb({ROW}.*)::text, {ROW}."item_id"::text'
    )
    assert st.params == ()


def test_select_for_update_reads_text_forms() -> None:
    st = _sql.select_for_update("items", "shop", ["qty", "tags"], "id", 4)
    assert st.text() == (
        'SELECT "qty"::text, "tags"::text FROM "shop"."items" WHERE "id" = %s FOR UPDATE'
    )
    assert st.params == (4,)


def test_update_row_returns_what_it_stored() -> None:
    st = _sql.update_row("items", None, {"qty": 1, "tags": {"a": 1}}, "id", "7")
    assert st.text() == (
        'UPDATE "items" SET "qty" = %s, "tags" = %s WHERE "id" = %s '
        'RETURNING "qty"::text, "tags"::text'
    )
    assert st.params == (1, {"a": 1}, "7")


def test_restore_row_sets_back_only_where_the_row_holds_what_was_written() -> None:
    plain = _sql.restore_row("items", None, {"qty": "3", "tags": None}, "id", 7)
    assert plain.text() == 'UPDATE "items" SET "qty" = %s, "tags" = %s WHERE "id" = %s'
    assert plain.params == ("3", None, 7)
    guarded = _sql.restore_row(
        "items", None, {"qty": "3", "tags": None}, "id", 7, {"qty": "10", "tags": '{"a": 1}'}
    )
    assert guarded.text() == (
        'UPDATE "items" SET "qty" = %s, "tags" = %s WHERE "id" = %s AND '
        '"qty"::text IS NOT DISTINCT FROM %s::text AND "tags"::text IS NOT DISTINCT FROM %s::text'
    )
    assert guarded.params == ("3", None, 7, "10", '{"a": 1}')


def test_delete_row_sql() -> None:
    st = _sql.delete_row("items", "public", "sku", "A-1")
    assert st.text() == 'DELETE FROM "public"."items" WHERE "sku" = %s'
    assert st.params == ("A-1",)
    guarded = _sql.delete_row("items", "public", "sku", "A-1", '{"sku": "A-1"}')
    assert guarded.text() == (
        f'DELETE FROM "public"."items" AS {ROW} WHERE {ROW}."sku" = %s '
        f"AND to_jsonb({ROW}.*) = %s::jsonb"
    )
    assert guarded.params == ("A-1", '{"sku": "A-1"}')


def test_the_reads_after_a_refusal() -> None:
    check = _sql.columns_holding(
        "items", None, "id", 7, {"written": [("qty", "10")], "restored": [("qty", "3")]}
    )
    assert check.text() == (
        'SELECT "qty"::text IS NOT DISTINCT FROM %s::text, '
        '"qty"::text IS NOT DISTINCT FROM %s::text FROM "items" WHERE "id" = %s'
    )
    assert check.params == ("10", "3", 7)
    now = _sql.row_now("items", None, "id", 7)
    assert now.text() == f'SELECT to_jsonb({ROW}.*)::text FROM "items" AS {ROW} WHERE {ROW}."id" = %s'


def test_upper_case_and_keyword_names_are_quoted_verbatim() -> None:
    st = _sql.delete_row("Order", "Select", "User", 1)
    assert st.text() == 'DELETE FROM "Select"."Order" WHERE "User" = %s'


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_builders_refuse_hostile_identifiers(name: str) -> None:
    for build in (
        lambda: _sql.insert_row(name, None, {"a": 1}, "id"),
        lambda: _sql.insert_row("t", name, {"a": 1}, "id"),
        lambda: _sql.insert_row("t", None, {name: 1}, "id"),
        lambda: _sql.insert_row("t", None, {"a": 1}, name),
        lambda: _sql.update_row("t", None, {name: 1}, "id", 1),
        lambda: _sql.select_for_update("t", None, [name], "id", 1),
        lambda: _sql.delete_row("t", None, name, 1),
        lambda: _sql.delete_row("t", None, name, 1, "{}"),
        lambda: _sql.restore_row("t", None, {"a": 1}, "id", 1, {name: "1"}),
        lambda: _sql.columns_holding("t", None, "id", 1, {"w": [(name, "1")]}),
        lambda: _sql.row_now("t", None, name, 1),
    ):
        with pytest.raises(ToolError) as caught:
            build()
        assert caught.value.code == "invalid_identifier"
        assert "nothing was sent" in str(caught.value)


def test_longest_identifier_is_accepted() -> None:
    name = "a" + "b" * 62
    assert _sql.check_identifier(name, "table") == name


def test_lexer_first_word_skips_comments_and_parentheses() -> None:
    assert _sql.lex("  -- hi\n /* a /* nested */ comment */ ((select 1))").first_word == "SELECT"
    assert _sql.lex("WITH x AS (SELECT 1) SELECT * FROM x").first_word == "WITH"
    assert _sql.lex("/* SELECT */ DELETE FROM t").first_word == "DELETE"
    assert _sql.lex("-- SELECT\nUPDATE t SET a = 1").first_word == "UPDATE"
    assert _sql.lex("").first_word == ""


def test_lexer_finds_placeholders_only_outside_constants() -> None:
    text = (
        "SELECT $1, '$2 100%', E'it\\'s $3', \"col$4\", $$ $5 $$, $tag$ $6 $tag$, "
        "U&'$7', a$8 /* $9 */ -- $10\n, $11"
    )
    lexed = _sql.lex(text)
    assert lexed.placeholders == {1, 11}
    assert lexed.semicolon is False
    assert lexed.unterminated is None


def test_lexer_reports_semicolons_anywhere() -> None:
    assert _sql.lex("SELECT ';'").semicolon is True
    assert _sql.lex("SELECT 1;").semicolon is True


def test_lexer_reports_unterminated_constants() -> None:
    assert _sql.lex("SELECT 'abc").unterminated == "string constant"
    assert _sql.lex("SELECT $x$ abc").unterminated == "dollar-quoted string"
    assert _sql.lex("SELECT /* abc").unterminated == "comment"


def test_bind_wraps_objects_and_arrays_as_json() -> None:
    wrapped = bind({"a": [1, 2]})
    assert isinstance(wrapped, Json)
    assert wrapped.obj == {"a": [1, 2]}
    assert isinstance(bind([1, "x"]), Json)
    for plain in (None, True, 3, 2.5, "text"):
        assert bind(plain) is plain


def test_to_json_conversions() -> None:
    tz = dt.timezone(dt.timedelta(hours=2))
    assert to_json(Decimal("1.50")) == "1.50"
    assert to_json(float("nan")) == "nan"
    assert to_json(float("inf")) == "inf"
    assert to_json(2.5) == 2.5
    assert to_json(dt.datetime(2024, 5, 1, 12, 0, tzinfo=tz)) == "2024-05-01T12:00:00+02:00"
    assert to_json(dt.date(2024, 5, 1)) == "2024-05-01"
    assert to_json(dt.timedelta(days=1, seconds=5)) == "P1DT5.000000S"
    u = uuid.uuid4()
    assert to_json(u) == str(u)
    assert to_json(b"\x01\xff") == "\\x01ff"
    assert to_json({"a": [Decimal("1"), None]}) == {"a": ["1", None]}
    assert to_json(True) is True


def test_connection_string_adds_timeouts_and_pinned_settings() -> None:
    text = connection_string("postgresql://u:pw@db.example.com:6543/app?options=-c%20x.y%3D1", 2.5)
    params = conninfo.conninfo_to_dict(text)
    assert params["host"] == "db.example.com"
    assert params["port"] == "6543"
    assert params["password"] == "pw"
    assert params["connect_timeout"] == "3"
    assert params["application_name"] == "reversi-connector-postgres"
    options = str(params["options"])
    assert options.startswith("-c x.y=1 ")
    for setting in (
        "-c statement_timeout=2500",
        "-c idle_in_transaction_session_timeout=60000",
        "-c DateStyle=ISO,YMD",
        "-c TimeZone=UTC",
        "-c bytea_output=hex",
    ):
        assert setting in options


def test_connection_string_keeps_a_given_application_name_and_minimum_connect_timeout() -> None:
    params = conninfo.conninfo_to_dict(
        connection_string("host=/tmp dbname=x application_name=mine", 0.2)
    )
    assert params["application_name"] == "mine"
    assert params["connect_timeout"] == "2"
    assert "-c statement_timeout=200" in str(params["options"])


def test_grace_is_bounded() -> None:
    assert grace(0.1) == 0.5
    assert grace(4) == 2
    assert grace(600) == 5
