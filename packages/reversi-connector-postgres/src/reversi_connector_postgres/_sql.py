"""SQL text: identifier rules, the statements each tool sends, and a small lexer for ``query``.

Every statement a write tool sends is composed here with :mod:`psycopg.sql`
(https://www.psycopg.org/psycopg3/docs/api/sql.html): identifiers go through
:class:`psycopg.sql.Identifier`, which always double-quotes them, and every value is a
``%s`` placeholder that psycopg binds as a parameter on the server (extended query
protocol, https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-EXT-QUERY).
No value is ever written into SQL text. Identifiers are checked against
:data:`IDENTIFIER_RE` once more here, right before they are quoted, so a builder can
never compose SQL from a name the input models did not already accept.

``query`` statements are the agent's own text, with PostgreSQL's native ``$1, $2, ...``
placeholders. They are sent as they are through psycopg's raw cursor
(https://www.psycopg.org/psycopg3/docs/advanced/cursors.html#raw-query-cursors), so the
server's own parser decides what is a placeholder and nothing is rewritten on the way:
a ``%`` or a ``$1`` inside a string constant reaches the server untouched. The lexer in
this module only reads the text, to find its first keyword and the placeholders it
uses (outside string constants, quoted identifiers, dollar-quoted strings and
comments, https://www.postgresql.org/docs/current/sql-syntax-lexical.html), so that a
statement of the wrong kind or with the wrong number of values is refused before
anything is sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from reversi_core.errors import ToolError

__all__ = [
    "IDENTIFIER_PATTERN",
    "IDENTIFIER_RE",
    "ROW_ALIAS",
    "Lexed",
    "Statement",
    "check_identifier",
    "columns_holding",
    "delete_row",
    "insert_row",
    "lex",
    "restore_row",
    "row_now",
    "select_for_update",
    "table_name",
    "update_row",
]

ROW_ALIAS = "_reversi_row"
"""The alias under which a statement refers to the whole row (``to_jsonb(_reversi_row.*)``).

With ``.*`` the reference is the row itself even when the table has a column of the same
name (https://www.postgresql.org/docs/current/rowtypes.html#ROWTYPES-USAGE)."""

IDENTIFIER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,62}$"
"""Table, schema and column names: a letter or ``_``, then up to 62 letters, digits or ``_``."""

IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
""":data:`IDENTIFIER_PATTERN` for :func:`re.fullmatch` (no trailing newline slips through)."""


@dataclass(frozen=True)
class Statement:
    """A statement to send: composed SQL and the values bound to its ``%s`` placeholders."""

    query: sql.Composed
    params: tuple[Any, ...] = ()

    def text(self) -> str:
        """The SQL text psycopg sends (before ``%s`` become ``$n``), for logs and tests."""
        return self.query.as_string(None)


def check_identifier(name: object, what: str) -> str:
    """Return ``name`` when it is a valid identifier, else raise ``ToolError`` (``invalid_identifier``).

    ``what`` says which argument it came from (``"table"``, ``"column"``...). The
    message shows the name with :func:`repr`, so control characters stay visible.
    """
    if not isinstance(name, str) or IDENTIFIER_RE.fullmatch(name) is None:
        raise ToolError(
            f"invalid {what} name {name!r}: names must match {IDENTIFIER_PATTERN} "
            "(a letter or underscore, then letters, digits or underscores, 63 at most); "
            "nothing was sent to the server",
            code="invalid_identifier",
        )
    return name


def table_name(table: str, schema: str | None) -> sql.Identifier:
    """``"schema"."table"``, or ``"table"`` (found through the search_path) when no schema."""
    check_identifier(table, "table")
    if schema is None:
        return sql.Identifier(table)
    check_identifier(schema, "schema")
    return sql.Identifier(schema, table)


def _columns(names: Sequence[str]) -> list[sql.Identifier]:
    return [sql.Identifier(check_identifier(n, "column")) for n in names]


def _whole_row() -> sql.Composable:
    """``to_jsonb("_reversi_row".*)``: every column of the row as one jsonb value."""
    return sql.SQL("to_jsonb({}.*)").format(sql.Identifier(ROW_ALIAS))


def insert_row(
    table: str, schema: str | None, values: Mapping[str, Any], key_column: str
) -> Statement:
    """``INSERT INTO "t" AS r ("a") VALUES (%s) RETURNING r."id", to_jsonb(r.*)::text, r."id"::text``.

    ``DEFAULT VALUES`` when ``values`` is empty. The second value returned is the whole
    row as the insert left it, defaults and triggers included, in jsonb's text form
    (https://www.postgresql.org/docs/current/functions-json.html): what
    :func:`delete_row` compares before it deletes. The third is the key in PostgreSQL's
    text form, which the column's input function reads back whatever its type.
    """
    target = table_name(table, schema)
    alias = sql.Identifier(ROW_ALIAS)
    key = sql.SQL("{}.{}").format(alias, sql.Identifier(check_identifier(key_column, "key column")))
    returning = sql.SQL("RETURNING {}, {}::text, {}::text").format(key, _whole_row(), key)
    if not values:
        query = sql.SQL("INSERT INTO {} AS {} DEFAULT VALUES {}").format(target, alias, returning)
        return Statement(query)
    columns = list(values)
    query = sql.SQL("INSERT INTO {} AS {} ({}) VALUES ({}) {}").format(
        target,
        alias,
        sql.SQL(", ").join(_columns(columns)),
        sql.SQL(", ").join(sql.Placeholder() * len(columns)),
        returning,
    )
    return Statement(query, tuple(values[c] for c in columns))


def select_for_update(
    table: str, schema: str | None, columns: Sequence[str], key_column: str, key: Any
) -> Statement:
    """``SELECT "a"::text, "b"::text FROM "t" WHERE "id" = %s FOR UPDATE``.

    The old values are read in PostgreSQL's text form, which every type's input function
    accepts back, so that ``restore_row`` writes exactly what was there.
    """
    target = table_name(table, schema)
    query = sql.SQL("SELECT {} FROM {} WHERE {} = %s FOR UPDATE").format(
        sql.SQL(", ").join(sql.SQL("{}::text").format(c) for c in _columns(columns)),
        target,
        sql.Identifier(check_identifier(key_column, "key column")),
    )
    return Statement(query, (key,))


def _set(values: Mapping[str, Any]) -> sql.Composable:
    return sql.SQL(", ").join(sql.SQL("{} = %s").format(c) for c in _columns(list(values)))


def _holds(columns: Sequence[str]) -> sql.Composable:
    """``"a"::text IS NOT DISTINCT FROM %s::text AND ...``: the row holds these text forms.

    Text forms compare every type, ``json`` and ``xml`` included (which have no ``=``), and
    ``IS NOT DISTINCT FROM`` makes a NULL equal to a NULL
    (https://www.postgresql.org/docs/current/functions-comparison.html). Both sides come
    from the type's output function under the session settings that
    :mod:`~reversi_connector_postgres._session` pins (``DateStyle``, ``TimeZone``,
    ``extra_float_digits``...), so equal values give equal text.
    """
    return sql.SQL(" AND ").join(
        sql.SQL("{}::text IS NOT DISTINCT FROM %s::text").format(c) for c in _columns(columns)
    )


def update_row(
    table: str, schema: str | None, values: Mapping[str, Any], key_column: str, key: Any
) -> Statement:
    """``UPDATE "t" SET "a" = %s, "b" = %s WHERE "id" = %s RETURNING "a"::text, "b"::text``.

    What it returns is what the update wrote, as stored (after the columns' input
    functions and any trigger), in the text form :func:`restore_row` compares.
    """
    target = table_name(table, schema)
    columns = list(values)
    query = sql.SQL("UPDATE {} SET {} WHERE {} = %s RETURNING {}").format(
        target,
        _set(values),
        sql.Identifier(check_identifier(key_column, "key column")),
        sql.SQL(", ").join(sql.SQL("{}::text").format(c) for c in _columns(columns)),
    )
    return Statement(query, (*(values[c] for c in columns), key))


def restore_row(
    table: str,
    schema: str | None,
    values: Mapping[str, Any],
    key_column: str,
    key: Any,
    written: Mapping[str, str | None] | None = None,
) -> Statement:
    """``UPDATE "t" SET "a" = %s WHERE "id" = %s`` and, with ``written``, only where the row
    still holds it: ``AND "a"::text IS NOT DISTINCT FROM %s::text`` for every column.

    One statement: a row someone changed since matches nothing, so nothing is written.
    """
    target = table_name(table, schema)
    columns = list(values)
    where = sql.SQL("{} = %s").format(sql.Identifier(check_identifier(key_column, "key column")))
    params: tuple[Any, ...] = (*(values[c] for c in columns), key)
    if written is not None:
        where = sql.SQL("{} AND {}").format(where, _holds(list(written)))
        params += tuple(written.values())
    query = sql.SQL("UPDATE {} SET {} WHERE {}").format(target, _set(values), where)
    return Statement(query, params)


def delete_row(
    table: str, schema: str | None, key_column: str, key: Any, inserted: str | None = None
) -> Statement:
    """``DELETE FROM "t" WHERE "id" = %s``; with ``inserted`` (the row as the insert left it,
    jsonb text), only while the row is still exactly that: ``DELETE FROM "t" AS r WHERE
    r."id" = %s AND to_jsonb(r.*) = %s::jsonb`` (jsonb equality: a NULL column is JSON
    ``null``, numbers compare by value)."""
    target = table_name(table, schema)
    key_name = sql.Identifier(check_identifier(key_column, "key column"))
    if inserted is None:
        query = sql.SQL("DELETE FROM {} WHERE {} = %s").format(target, key_name)
        return Statement(query, (key,))
    alias = sql.Identifier(ROW_ALIAS)
    key_ref = sql.SQL("{}.{}").format(alias, key_name)
    query = sql.SQL("DELETE FROM {} AS {} WHERE {} = %s AND {} = %s::jsonb").format(
        target, alias, key_ref, _whole_row()
    )
    return Statement(query, (key, inserted))


def columns_holding(
    table: str,
    schema: str | None,
    key_column: str,
    key: Any,
    checks: Mapping[str, Sequence[tuple[str, Any]]],
) -> Statement:
    """One row of booleans, one per ``(column, text)`` of each named check, for the row's key.

    ``SELECT "a"::text IS NOT DISTINCT FROM %s::text, ... FROM "t" WHERE "id" = %s``: read
    after a conditional statement matched nothing, to say which columns differ (and
    whether the row already holds the values being restored). The booleans come in the
    order of ``checks``, then of each one's pairs.
    """
    target = table_name(table, schema)
    pairs = [pair for group in checks.values() for pair in group]
    query = sql.SQL("SELECT {} FROM {} WHERE {} = %s").format(
        sql.SQL(", ").join(
            sql.SQL("{}::text IS NOT DISTINCT FROM %s::text").format(c)
            for c in _columns([column for column, _ in pairs])
        ),
        target,
        sql.Identifier(check_identifier(key_column, "key column")),
    )
    return Statement(query, (*(value for _, value in pairs), key))


def row_now(table: str, schema: str | None, key_column: str, key: Any) -> Statement:
    """``SELECT to_jsonb(r.*)::text FROM "t" AS r WHERE r."id" = %s``: the row as it is now."""
    target = table_name(table, schema)
    alias = sql.Identifier(ROW_ALIAS)
    query = sql.SQL("SELECT {}::text FROM {} AS {} WHERE {}.{} = %s").format(
        _whole_row(),
        target,
        alias,
        alias,
        sql.Identifier(check_identifier(key_column, "key column")),
    )
    return Statement(query, (key,))


# -- the lexer used by query ------------------------------------------------------------


@dataclass(frozen=True)
class Lexed:
    """What :func:`lex` found in a statement.

    ``first_word`` is the first keyword (upper-cased) after whitespace, comments and
    opening parentheses, or ``""``; ``placeholders`` the numbers ``n`` of every ``$n``
    outside constants, quoted identifiers and comments; ``semicolon`` whether a ``;``
    appears anywhere, even inside a constant; ``unterminated`` names a constant or
    comment left open at the end of the text, if any.
    """

    first_word: str
    placeholders: frozenset[int]
    semicolon: bool
    unterminated: str | None = None


_DOLLAR_TAG = re.compile(r"\$([A-Za-z_\x80-\U0010ffff][A-Za-z0-9_\x80-\U0010ffff]*)?\$")
_PLACEHOLDER = re.compile(r"\$([0-9]+)")
_WORD = re.compile(r"[A-Za-z_\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*")


def lex(text: str) -> Lexed:
    """Read ``text`` as PostgreSQL's lexer would, far enough for :class:`Lexed`.

    Handles ``'...'`` (with ``''``), ``E'...'`` (with backslash escapes), ``U&'...'``,
    ``"..."`` (with ``""``), ``$tag$...$tag$``, ``-- ...`` and nested ``/* ... */``
    (https://www.postgresql.org/docs/current/sql-syntax-lexical.html). A word directly
    followed by ``$`` continues the word (``a$1`` is one identifier), as in PostgreSQL.
    """
    i = 0
    n = len(text)
    first = ""
    seen_token = False
    found: set[int] = set()
    unterminated: str | None = None
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if text.startswith("/*", i):
            depth = 0
            while i < n:
                if text.startswith("/*", i):
                    depth += 1
                    i += 2
                elif text.startswith("*/", i):
                    depth -= 1
                    i += 2
                    if depth == 0:
                        break
                else:
                    i += 1
            if depth:
                unterminated = "comment"
            continue
        if c == "(" and not seen_token:
            i += 1
            continue
        if c in "eE" and i + 1 < n and text[i + 1] == "'":
            i, closed = _skip_quoted(text, i + 2, "'", backslash=True)
            unterminated = unterminated or (None if closed else "string constant")
            seen_token = True
            continue
        if c in "uU" and text.startswith("&'", i + 1):
            i, closed = _skip_quoted(text, i + 3, "'", backslash=False)
            unterminated = unterminated or (None if closed else "string constant")
            seen_token = True
            continue
        if c in "uU" and text.startswith('&"', i + 1):
            i, closed = _skip_quoted(text, i + 3, '"', backslash=False)
            unterminated = unterminated or (None if closed else "quoted identifier")
            seen_token = True
            continue
        if c == "'":
            i, closed = _skip_quoted(text, i + 1, "'", backslash=False)
            unterminated = unterminated or (None if closed else "string constant")
            seen_token = True
            continue
        if c == '"':
            i, closed = _skip_quoted(text, i + 1, '"', backslash=False)
            unterminated = unterminated or (None if closed else "quoted identifier")
            seen_token = True
            continue
        if c == "$":
            number = _PLACEHOLDER.match(text, i)
            if number:
                found.add(int(number.group(1)))
                i = number.end()
                seen_token = True
                continue
            tag = _DOLLAR_TAG.match(text, i)
            if tag:
                end = text.find(tag.group(0), tag.end())
                if end < 0:
                    unterminated = unterminated or "dollar-quoted string"
                    i = n
                else:
                    i = end + len(tag.group(0))
                seen_token = True
                continue
            i += 1
            seen_token = True
            continue
        word = _WORD.match(text, i)
        if word:
            if not seen_token:
                first = word.group(0).upper()
            i = word.end()
            seen_token = True
            continue
        i += 1
        seen_token = True
    return Lexed(
        first_word=first,
        placeholders=frozenset(found),
        semicolon=";" in text,
        unterminated=unterminated,
    )


def _skip_quoted(text: str, i: int, quote: str, *, backslash: bool) -> tuple[int, bool]:
    """Index just past the closing ``quote`` (a doubled one is part of the text); closed?"""
    n = len(text)
    while i < n:
        c = text[i]
        if backslash and c == "\\":
            i += 2
            continue
        if c == quote:
            if i + 1 < n and text[i + 1] == quote:
                i += 2
                continue
            return i + 1, True
        i += 1
    return n, False
