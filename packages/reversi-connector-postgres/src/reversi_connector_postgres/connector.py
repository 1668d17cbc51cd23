"""The ``postgres`` connector: rows of a PostgreSQL database, every change undoable.

Five tools. ``postgres.query`` reads (one ``SELECT`` or ``WITH``, run inside ``BEGIN
READ ONLY`` ... ``ROLLBACK``); ``postgres.insert_row`` and ``postgres.update_row``
write and are undone by ``postgres.delete_row`` and ``postgres.restore_row``, which are
idempotent and are the compensations. A compensation never overwrites a change made
after the call: ``insert_row`` returns the row as it left it and ``update_row`` what it
wrote, and the undo deletes or restores in one statement that matches only a row still
holding that; a row someone changed since is refused with code ``changed_since``, naming
the columns that differ (unless a person allowed the step to overwrite:
``CallContext.overwrite``). Every tool takes parameters only: table, schema
and column names match :data:`IDENTIFIER_PATTERN` and are always double-quoted, and
every value is bound as a parameter (:mod:`reversi_connector_postgres._sql`).

The connection comes from ``POSTGRES_URL``, a libpq URI or ``key=value`` string
(https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING); the URL
and its password are registered as secrets (:mod:`reversi_core.redact`) as soon as they
are read, so no error, result or journal entry carries them; a URI whose password
holds an unencoded ``@`` (which libpq would read partly as the host name) is refused
with ``ConfigurationError`` instead: it must be percent-encoded. Each call opens its own
connection with psycopg 3 (https://www.psycopg.org/psycopg3/docs/) and closes it
(:mod:`reversi_connector_postgres._session` has the time limits and error mapping).

Errors: a refused argument (bad identifier, a ``;`` or a statement that is not a
``SELECT``/``WITH``, wrong number of values) is an ``InvalidArgumentsError`` raised by
:meth:`~reversi_core.connector.Connector.call` before any connection is opened; a
server error is a ``ToolError`` whose code is the SQLSTATE
(https://www.postgresql.org/docs/current/errcodes-appendix.html) and whose message
starts ``Postgres error 42501: ...``, after the transaction was rolled back; a
connection that cannot be opened is ``ToolError`` code ``connect``, or the SQLSTATE of
the server's refusal when it refused the login (``28P01`` wrong password, ``53300`` too
many connections, ``57P03`` not accepting connections yet); a connection lost
or a server that stops answering after a write's ``COMMIT`` was sent is
``EffectUncertainError`` (before it, ``ToolError`` code ``connection_lost`` or
``timeout``: PostgreSQL never commits without ``COMMIT``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, Literal

import psycopg
from psycopg import conninfo
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict

from reversi_core.connector import CallContext, Connector, tool
from reversi_core.errors import ConfigurationError, ToolError
from reversi_core.manifest import Compensation, Effect, Match, Requirement
from reversi_core.redact import register_secret

from . import _sql
from ._session import PERCENT_ENCODING, Session, StatementLog, url_problem
from ._sql import IDENTIFIER_PATTERN

__all__ = [
    "DEFAULT_TIMEOUT",
    "IDENTIFIER_PATTERN",
    "MAX_ROWS",
    "DeleteRowArgs",
    "DeleteRowResult",
    "InsertRowArgs",
    "InsertRowResult",
    "PostgresConnector",
    "QueryArgs",
    "QueryResult",
    "RestoreRowArgs",
    "RestoreRowResult",
    "StatementLog",
    "UpdateRowArgs",
    "UpdateRowResult",
]

MAX_ROWS = 1000
"""Most rows ``postgres.query`` returns; beyond that the result says ``truncated``."""

DEFAULT_TIMEOUT = 30.0
"""Seconds a call may take when neither the connector nor the call says otherwise."""

ENV_VAR = "POSTGRES_URL"

Identifier = Annotated[str, Field(pattern=IDENTIFIER_PATTERN)]
Key = StrictInt | StrictStr

_NAME_RULE = "must match ^[A-Za-z_][A-Za-z0-9_]{0,62}$; always double-quoted"
_COLUMNS: JsonDict = {"propertyNames": {"pattern": IDENTIFIER_PATTERN}}


# -- input models ------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Target(_Args):
    table: Identifier = Field(description=f"The table ({_NAME_RULE}).")
    schema_: Identifier | None = Field(
        default=None,
        alias="schema",
        description=f"The table's schema ({_NAME_RULE}); null: found through the search_path.",
    )


class _Keyed(_Target):
    key_column: Identifier = Field(
        default="id", description="The column that identifies the row; unique. Default 'id'."
    )
    key: Key = Field(
        description="The value of key_column of the row (a string is converted to the column's "
        "type by the server)."
    )


class QueryArgs(_Args):
    """Arguments of postgres.query."""

    sql: str = Field(
        pattern=r"^[^;]*$",
        description="One SELECT or WITH statement with $1, $2, ... placeholders; no ';' at all "
        "(not even a trailing one).",
    )
    params: list[Any] = Field(
        default_factory=list,
        description="The values of $1, $2, ... in order; objects and arrays are bound as JSON.",
    )

    @field_validator("sql")
    @classmethod
    def _one_select(cls, value: str) -> str:
        lexed = _sql.lex(value)
        if lexed.semicolon:
            raise ValueError("';' is not allowed: send one statement, without a trailing ';'")
        if lexed.first_word not in ("SELECT", "WITH"):
            shown = lexed.first_word or "nothing"
            raise ValueError(f"only SELECT or WITH statements are accepted, not {shown}")
        return value

    @model_validator(mode="after")
    def _placeholders_match(self) -> QueryArgs:
        used = _sql.lex(self.sql).placeholders
        wanted = set(range(1, len(self.params) + 1))
        if used != wanted:
            shown = ", ".join(f"${n}" for n in sorted(used)) or "no placeholders"
            raise ValueError(
                f"the statement uses {shown} but {len(self.params)} values were given: every "
                "value needs its $n and every $n its value"
            )
        return self


class InsertRowArgs(_Target):
    """Arguments of postgres.insert_row."""

    values: dict[Identifier, Any] = Field(
        default_factory=dict,
        description="Column names and their values; empty inserts a row of defaults.",
        json_schema_extra=_COLUMNS,
    )
    key_column: Identifier = Field(
        default="id",
        description="The column returned (RETURNING) to identify the new row; default 'id'.",
    )


class UpdateRowArgs(_Keyed):
    """Arguments of postgres.update_row."""

    values: dict[Identifier, Any] = Field(
        min_length=1,
        description="The columns to set and their new values.",
        json_schema_extra=_COLUMNS,
    )


class RestoreRowArgs(_Keyed):
    """Arguments of postgres.restore_row."""

    values: dict[Identifier, Any] = Field(
        min_length=1,
        description="The columns to set back and their old values (the 'previous' of "
        "postgres.update_row: PostgreSQL text forms, or null).",
        json_schema_extra=_COLUMNS,
    )
    written: dict[Identifier, str | None] | None = Field(
        default=None,
        description="What the undone update wrote (its 'written': the same columns, as "
        "PostgreSQL text, or null): the row is restored only while it still holds exactly "
        "that; otherwise the call fails with code changed_since, naming the columns that "
        "differ, and changes nothing. Null: no such check.",
        json_schema_extra=_COLUMNS,
    )

    @model_validator(mode="after")
    def _same_columns(self) -> RestoreRowArgs:
        if self.written is not None and set(self.written) != set(self.values):
            raise ValueError("written must name exactly the columns of values")
        return self


class DeleteRowArgs(_Keyed):
    """Arguments of postgres.delete_row."""

    inserted: str | None = Field(
        default=None,
        description="The row as the undone insert left it (its 'inserted': every column, as "
        "jsonb text): the row is deleted only while it is still exactly that; otherwise the "
        "call fails with code changed_since, naming the columns that differ, and deletes "
        "nothing. Null: no such check.",
    )


# -- result models ------------------------------------------------------------------------
#
# Each tool's result, field by field (the manifests' output_schema). Values read from the
# database are JSON as _values.to_json makes them (docs/connectors/postgres.md).


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class QueryResult(_Result):
    """Result of postgres.query."""

    columns: list[str] = Field(description="The result's column names, in order.")
    rows: list[list[Any]] = Field(
        description=f"The rows (at most {MAX_ROWS}), each a list of JSON values in column order."
    )
    row_count: int = Field(ge=0, description="How many rows 'rows' holds.")
    truncated: bool = Field(description=f"Whether the statement had more than {MAX_ROWS} rows.")


class _RowResult(_Result):
    table: str = Field(description="The table, as given.")
    schema_: str | None = Field(
        alias="schema", description="The table's schema as given; null: the search_path's."
    )
    key_column: str = Field(description="The column that identifies the row.")


class InsertRowResult(_RowResult):
    """Result of postgres.insert_row."""

    key: Key = Field(
        description="The new row's key_column value, from RETURNING: an integer for an integer "
        "column, else PostgreSQL's text form of the value (which the column reads back); never "
        "null."
    )
    inserted: str = Field(
        description="The whole row as the insert left it, defaults and triggers included: "
        "to_jsonb of the row, as jsonb text (exact for numeric). postgres.delete_row deletes "
        "only a row that is still exactly that."
    )


class UpdateRowResult(_RowResult):
    """Result of postgres.update_row."""

    key: Key = Field(description="The key of the row updated, as given.")
    previous: dict[str, str | None] = Field(
        description="Each column set and its old value, as PostgreSQL text, or null."
    )
    written: dict[str, str | None] = Field(
        description="Each column set and the value the update stored, as PostgreSQL text, or "
        "null: postgres.restore_row restores only a row that still holds it."
    )


class DeleteRowResult(_RowResult):
    """Result of postgres.delete_row."""

    key: Key = Field(description="The key of the row, as given.")
    deleted: Literal[0, 1] = Field(description="1 when the row was deleted, 0 when it was gone.")


class RestoreRowResult(_RowResult):
    """Result of postgres.restore_row."""

    key: Key = Field(description="The key of the row restored, as given.")
    restored: Literal[0, 1] = Field(
        description="1 when the row was set back; 0 when it already held the old values."
    )


# -- declarations ----------------------------------------------------------------------------

_DELETE_INSERTED = Compensation(
    tool="postgres.delete_row",
    argument_map={
        "table": "result.table",
        "schema": "result.schema",
        "key_column": "result.key_column",
        "key": "result.key",
        "inserted": "result.inserted",
    },
)

_RESTORE_UPDATED = Compensation(
    tool="postgres.restore_row",
    argument_map={
        "table": "result.table",
        "schema": "result.schema",
        "key_column": "result.key_column",
        "key": "result.key",
        "values": "result.previous",
        "written": "result.written",
    },
)

_SAME_ROW = [
    # an update of a row inserted earlier in the run: its undo must come first
    Requirement(
        tool="postgres.insert_row",
        match=[
            Match(this="args.table", earlier="args.table"),
            Match(this="args.key", earlier="result.key"),
        ],
    ),
    # a second update of the same row: the later restore must run first
    Requirement(
        tool="postgres.update_row",
        match=[
            Match(this="args.table", earlier="args.table"),
            Match(this="args.key", earlier="args.key"),
        ],
    ),
]


# -- the connector ------------------------------------------------------------------------------


class PostgresConnector(Connector):
    """Rows of one PostgreSQL database (see the module docstring).

    ``url`` is the connection URI or ``key=value`` string (what ``POSTGRES_URL`` holds);
    ``timeout`` the seconds a call may take when the call gives none (``ctx.timeout``
    wins); ``on_statement``, if given, is called with ``(sql_text, params)`` right
    before each statement is sent (an audit log, or a test's record of the exact SQL).
    Raises :class:`~reversi_core.errors.ConfigurationError` for an empty or unparsable
    URL, a URI whose user name or password holds an unencoded ``@`` or ``/`` (libpq
    would read part of the password as the host or port, and quote it in its errors:
    :func:`~reversi_connector_postgres._session.url_problem`), each without quoting
    the URL, or a timeout that is not positive.
    """

    name = "postgres"
    credential_env = ENV_VAR
    env_vars = (ENV_VAR,)

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        on_statement: StatementLog | None = None,
    ) -> None:
        if not url or not url.strip():
            raise ConfigurationError(f"{ENV_VAR} is empty; set it to a postgresql:// URL")
        register_secret(url)
        try:
            parsed = conninfo.conninfo_to_dict(url)
        except psycopg.Error:
            raise ConfigurationError(
                f"{ENV_VAR} is not a valid PostgreSQL connection URI or key=value string "
                "(https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING); "
                f"in a URI, {PERCENT_ENCODING}"
            ) from None
        password = parsed.get("password")
        if password:
            register_secret(str(password))
        problem = url_problem(url)
        if problem is not None:
            raise ConfigurationError(problem)
        if not timeout > 0:
            raise ConfigurationError(f"postgres timeout must be positive, not {timeout!r}")
        self._url = url
        self._timeout = float(timeout)
        self._log = on_statement

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **ignored: Any) -> PostgresConnector:
        """Build the connector from ``POSTGRES_URL``; options meant for other connectors are ignored.

        ``PGPASSWORD``, when set, is registered as a secret too, since libpq may read it.
        Raises ``ConfigurationError`` when ``POSTGRES_URL`` is missing or invalid.
        """
        url = environ.get(ENV_VAR)
        if not url:
            raise ConfigurationError(
                f"{ENV_VAR} is not set; set it to the database URL, such as "
                "postgresql://agent@db.example.com:5432/app"
            )
        register_secret(environ.get("PGPASSWORD"))
        return cls(url)

    def _session(self, tool_name: str, ctx: CallContext, *, writes: bool) -> Session:
        timeout = ctx.timeout if ctx.timeout is not None and ctx.timeout > 0 else self._timeout
        return Session(self._url, tool=tool_name, timeout=timeout, writes=writes, log=self._log)

    # -- reading -------------------------------------------------------------------------

    @tool(
        effect=Effect.READ_ONLY,
        permission="postgres:rows:read",
        input=QueryArgs,
        output=QueryResult,
    )
    async def query(self, args: QueryArgs, ctx: CallContext) -> dict[str, Any]:
        """Run one SELECT or WITH statement read-only and return at most 1000 rows.

        The statement is sent as written, with PostgreSQL's ``$1, $2, ...`` placeholders
        bound to ``params``, inside a read-only transaction that is always rolled back: the
        server itself rejects any data-modifying ``WITH`` clause (SQLSTATE 25006). Returns
        ``{"columns": [names], "rows": [[values]], "row_count", "truncated"}``; values
        are JSON as described in ``docs/connectors/postgres.md``. Raises ``ToolError``
        (the SQLSTATE for a server error, ``connect``, ``connection_lost`` or ``timeout``). A
        statement that is not one SELECT or WITH, holds a ``;``, or whose ``$n`` do not
        match ``params`` is refused with ``InvalidArgumentsError`` before anything is sent.
        See https://www.postgresql.org/docs/current/sql-select.html and
        https://www.postgresql.org/docs/current/sql-begin.html.
        """
        async with self._session("postgres.query", ctx, writes=False) as s:
            await s.begin(read_only=True)
            try:
                columns, rows, truncated = await s.select(args.sql, args.params, MAX_ROWS)
            finally:
                await s.rollback()
        return {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": truncated}

    # -- writing -------------------------------------------------------------------------

    @tool(
        effect=Effect.REVERSIBLE,
        permission="postgres:rows:write",
        input=InsertRowArgs,
        output=InsertRowResult,
        compensation=_DELETE_INSERTED,
    )
    async def insert_row(self, args: InsertRowArgs, ctx: CallContext) -> dict[str, Any]:
        """Insert one row and return its key (the key_column from RETURNING).

        Sends ``BEGIN``, ``INSERT INTO "t" ("a", "b") VALUES ($1, $2) RETURNING "id"``,
        ``COMMIT`` (the statement also returns ``to_jsonb`` of the whole row). Returns
        ``{"table", "schema", "key_column", "key", "inserted"}``, ``inserted`` being the
        row as the insert left it (jsonb text); undone by postgres.delete_row with that key,
        which deletes only a row that is still exactly ``inserted``. Before ``COMMIT`` the
        key is looked up as the undo will look it up; unless it finds just this row, nothing
        is inserted. Raises ``ToolError`` with the SQLSTATE (23505
        for a duplicate key, 42501 without INSERT privilege...), code ``no_key`` when the
        key column came back null or cannot be compared with ``=`` (``json``, ``point``),
        ``key_not_unique`` when other rows have the same key (nothing is inserted then), ``connect``,
        ``connection_lost`` or ``timeout``; ``EffectUncertainError`` when the connection
        is lost after ``COMMIT`` was sent. See
        https://www.postgresql.org/docs/current/sql-insert.html.
        """
        statement = _sql.insert_row(args.table, args.schema_, args.values, args.key_column)
        async with self._session("postgres.insert_row", ctx, writes=True) as s:
            await s.begin()
            try:
                rows = await s.fetchall(await s.execute(statement))
                if len(rows) != 1 or rows[0][0] is None:
                    raise ToolError(
                        f"insert into {args.table!r} returned no value for key column "
                        f"{args.key_column!r}, so the row could not be deleted on rollback; "
                        "nothing was inserted (give key_column a column that identifies the row)",
                        code="no_key",
                    )
                value, inserted, text = rows[0]
                key: int | str = value if type(value) is int else str(text)
                await self._undo_finds(s, args, key)
                await s.commit()
            except BaseException:
                await s.rollback()
                raise
        return {
            "table": args.table,
            "schema": args.schema_,
            "key_column": args.key_column,
            "key": key,
            "inserted": str(inserted),
        }

    async def _undo_finds(self, s: Session, args: InsertRowArgs, key: int | str) -> None:
        """Inside the insert's transaction: the key finds exactly the row inserted, as the undo
        (postgres.delete_row) will look it up, else ``ToolError`` (``no_key`` when the column's
        type has no ``=``, e.g. ``json``; ``key_not_unique`` when other rows share the key) and
        the caller rolls the insert back: an insert that could not be undone is not made."""
        where = f"{args.schema_ + '.' if args.schema_ else ''}{args.table}"
        try:
            found = await s.fetchall(
                await s.execute(_sql.row_now(args.table, args.schema_, args.key_column, key))
            )
        except ToolError as exc:
            raise ToolError(
                f"the rollback of this insert could not find the row by {args.key_column!r} "
                f"(looking it up failed: {exc}); nothing was inserted (give key_column a "
                "column that identifies the row)",
                code="no_key",
            ) from None
        if len(found) != 1:
            raise ToolError(
                f"{len(found)} rows of {where} have {args.key_column} = {key!r} after the insert: "
                "key_column must identify one row, or the rollback would delete others; "
                "nothing was inserted",
                code="key_not_unique",
            )

    @tool(
        effect=Effect.REVERSIBLE,
        permission="postgres:rows:write",
        input=UpdateRowArgs,
        output=UpdateRowResult,
        compensation=_RESTORE_UPDATED,
        requires=_SAME_ROW,
    )
    async def update_row(self, args: UpdateRowArgs, ctx: CallContext) -> dict[str, Any]:
        """Set columns of the row with the given key, returning their old values.

        One transaction: ``BEGIN``, ``SELECT "a"::text, ... FROM "t" WHERE "id" = $1 FOR
        UPDATE`` (the old values, locked), ``UPDATE "t" SET "a" = $1, ... WHERE "id" =
        $n RETURNING "a"::text, ...`` (what was stored), ``COMMIT``. Returns ``{"table",
        "schema", "key_column", "key", "previous", "written"}``: each column set with its
        old value and with the value stored, as PostgreSQL text, or null. Undone by
        postgres.restore_row with ``previous``, only while the row still holds
        ``written``. Raises ``ToolError`` with code
        ``not_found`` (no such row) or ``key_not_unique`` (several rows; nothing is
        changed), the SQLSTATE for a server error, ``connect``, ``connection_lost`` or
        ``timeout``; ``EffectUncertainError`` when the connection is lost after
        ``COMMIT`` was sent. See https://www.postgresql.org/docs/current/sql-update.html
        and https://www.postgresql.org/docs/current/sql-select.html#SQL-FOR-UPDATE-SHARE.
        """
        columns = list(args.values)
        read = _sql.select_for_update(args.table, args.schema_, columns, args.key_column, args.key)
        write = _sql.update_row(args.table, args.schema_, args.values, args.key_column, args.key)
        async with self._session("postgres.update_row", ctx, writes=True) as s:
            await s.begin()
            try:
                old = await s.fetchall(await s.execute(read))
                self._one_row(args, len(old))
                stored = await s.fetchall(await s.execute(write))
                self._one_row(args, len(stored))
                await s.commit()
            except BaseException:
                await s.rollback()
                raise
        return {
            "table": args.table,
            "schema": args.schema_,
            "key_column": args.key_column,
            "key": args.key,
            "previous": dict(zip(columns, old[0], strict=True)),
            "written": dict(zip(columns, stored[0], strict=True)),
        }

    # -- compensations ----------------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="postgres:rows:delete",
        input=DeleteRowArgs,
        output=DeleteRowResult,
    )
    async def delete_row(self, args: DeleteRowArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete the row with the given key; a row already gone is success.

        Sends ``BEGIN``, ``DELETE FROM "t" AS r WHERE r."id" = $1``, ``COMMIT``. With
        ``inserted`` (the undo of postgres.insert_row), the same statement also requires
        ``to_jsonb(r.*) = $2::jsonb``: a row someone changed since matches nothing, is
        read once more to name the columns that differ, and the call fails with code
        ``changed_since``, deleting nothing (``ctx.overwrite``, a person's decision, drops
        that condition). Returns ``{"table", "schema", "key_column", "key", "deleted": 0
        or 1}``. Deletes data for good: keep postgres:rows:delete out of an agent's scope.
        Raises ``ToolError`` with code ``changed_since``, ``key_not_unique`` when several
        rows have the key (nothing is deleted), the SQLSTATE for a server error,
        ``connect``, ``connection_lost`` or ``timeout``; ``EffectUncertainError`` when the
        connection is lost after ``COMMIT`` was sent. See
        https://www.postgresql.org/docs/current/sql-delete.html and
        https://www.postgresql.org/docs/current/functions-json.html.
        """
        inserted = None if ctx.overwrite else args.inserted
        statement = _sql.delete_row(args.table, args.schema_, args.key_column, args.key, inserted)
        async with self._session("postgres.delete_row", ctx, writes=True) as s:
            await s.begin()
            try:
                cur = await s.execute(statement)
                deleted = cur.rowcount
                if deleted > 1:
                    self._one_row(args, deleted)
                if deleted == 0 and inserted is not None:
                    await self._refuse_changed_insert(s, args, inserted)
                await s.commit()
            except BaseException:
                await s.rollback()
                raise
        return {
            "table": args.table,
            "schema": args.schema_,
            "key_column": args.key_column,
            "key": args.key,
            "deleted": deleted,
        }

    async def _refuse_changed_insert(self, s: Session, args: DeleteRowArgs, inserted: str) -> None:
        """After a conditional delete matched nothing: the row is gone (fine), or it changed."""
        now = await s.fetchall(
            await s.execute(_sql.row_now(args.table, args.schema_, args.key_column, args.key))
        )
        if not now:
            return  # already gone: nothing to delete
        self._one_row(args, len(now))
        before, after = _columns_of(inserted), _columns_of(str(now[0][0]))
        differ = sorted(c for c in before.keys() | after.keys() if before.get(c) != after.get(c))
        raise _changed(args, "insert", differ, "it was not deleted")

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="postgres:rows:write",
        input=RestoreRowArgs,
        output=RestoreRowResult,
    )
    async def restore_row(self, args: RestoreRowArgs, ctx: CallContext) -> dict[str, Any]:
        """Set columns of the row with the given key back to old values (undoes update_row).

        Sends ``BEGIN``, ``UPDATE "t" SET "a" = $1, ... WHERE "id" = $n``, ``COMMIT``. With
        ``written`` (what the undone update stored), the same statement also requires
        ``"a"::text IS NOT DISTINCT FROM $m::text`` for every column: a row someone changed
        since matches nothing, is read once more to name the columns that differ, and the
        call fails with code ``changed_since``, changing nothing; a row that already holds
        the old values is success with ``restored`` 0, so running it again changes nothing
        (``ctx.overwrite``, a person's decision, drops the condition). Triggers on the table
        fire on each write. Returns ``{"table", "schema", "key_column", "key",
        "restored"}``. Raises ``ToolError`` with code ``changed_since``, ``not_found`` (the
        row is gone: nothing to restore) or ``key_not_unique`` (nothing is changed), the
        SQLSTATE for a server error, ``connect``, ``connection_lost`` or ``timeout``;
        ``EffectUncertainError`` when the connection is lost after ``COMMIT`` was sent. See
        https://www.postgresql.org/docs/current/sql-update.html and
        https://www.postgresql.org/docs/current/functions-comparison.html.
        """
        written = None if ctx.overwrite else args.written
        statement = _sql.restore_row(
            args.table, args.schema_, args.values, args.key_column, args.key, written
        )
        restored = 1
        async with self._session("postgres.restore_row", ctx, writes=True) as s:
            await s.begin()
            try:
                cur = await s.execute(statement)
                if cur.rowcount == 0 and written is not None:
                    restored = await self._unmatched_restore(s, args, written)
                else:
                    self._one_row(args, cur.rowcount)
                await s.commit()
            except BaseException:
                await s.rollback()
                raise
        return {
            "table": args.table,
            "schema": args.schema_,
            "key_column": args.key_column,
            "key": args.key,
            "restored": restored,
        }

    async def _unmatched_restore(
        self, s: Session, args: RestoreRowArgs, written: Mapping[str, str | None]
    ) -> int:
        """After a conditional restore matched nothing: 0 if the row holds the old values
        already; otherwise raise ``not_found`` or ``changed_since`` naming the columns."""
        check = _sql.columns_holding(
            args.table,
            args.schema_,
            args.key_column,
            args.key,
            {"written": list(written.items()), "restored": list(args.values.items())},
        )
        rows = await s.fetchall(await s.execute(check))
        self._one_row(args, len(rows))
        holds = list(rows[0])
        still, back = holds[: len(written)], holds[len(written) :]
        if all(back):
            return 0
        differ = [column for column, same in zip(written, still, strict=True) if not same]
        raise _changed(args, "update", differ, "nothing was restored")

    @staticmethod
    def _one_row(args: _Keyed, count: int) -> None:
        """Raise ``not_found`` for 0 rows and ``key_not_unique`` for more than 1."""
        where = f"{args.schema_ + '.' if args.schema_ else ''}{args.table}"
        if count == 0:
            raise ToolError(
                f"no row of {where} has {args.key_column} = {args.key!r}; nothing was changed",
                code="not_found",
            )
        if count > 1:
            raise ToolError(
                f"{count} rows of {where} have {args.key_column} = {args.key!r}: key_column must "
                "identify one row; nothing was changed",
                code="key_not_unique",
            )


def _columns_of(row_text: str) -> dict[str, Any]:
    """A row's jsonb text as ``{column: value}``, numbers read exactly (as ``Decimal``)."""
    value = json.loads(row_text, parse_float=Decimal)
    return value if isinstance(value, dict) else {}


def _changed(args: _Keyed, call: str, columns: list[str], kept: str) -> ToolError:
    """The refusal of an undo whose row someone changed since the ``call`` (insert, update)."""
    where = f"{args.schema_ + '.' if args.schema_ else ''}{args.table}"
    if not columns:
        what = f"the row changed while it was being compared with what the {call} wrote"
    elif len(columns) == 1:
        what = f"the column {columns[0]} no longer holds what the {call} wrote"
    else:
        what = f"the columns {', '.join(columns)} no longer hold what the {call} wrote"
    return ToolError(
        f"the row of {where} with {args.key_column} = {args.key!r} changed since the {call}: "
        f"{what}; {kept}. The later change is kept: undo it and roll back again, or let the "
        "rollback overwrite it (reversi rollback RUN --overwrite STEP)",
        code="changed_since",
    )
