"""The PostgreSQL journal's schema and its migrations.

The tables are those of the SQLite journal (``_schema.py``), in the first schema of the
connection's ``search_path`` (``current_schema()``), with PostgreSQL's types: times are
``double precision`` UNIX seconds and JSON is ``text`` as the SQLite journal writes it,
so that both stores give back the same records. ``runs.last_seq`` is the last step
number handed out in the run: every step number is taken by bumping it in the
transaction that writes the step, which makes them dense and unique however many
processes write to one run.

Versions: the table ``reversi_migrations`` holds one row per migration applied
(``version``, ``applied_at``, the ``reversi_core`` version that applied it).
:data:`PG_MIGRATIONS` has one entry per schema version, the same versions as the SQLite
journal's :data:`~reversi_core.journal._schema.MIGRATIONS`. :func:`migrate` reads the
version without a lock and, only when something is missing, takes a session-level
advisory lock (one per schema) and reads it again in a new transaction, so that
processes opening a fresh database at once migrate it once: the others wait for the
lock and find it done.
"""

from __future__ import annotations

import time
from typing import Any

from ..__about__ import __version__
from ..errors import JournalError, JournalVersionError
from ._pg_conn import advisory_key, reason
from ._schema import SCHEMA_VERSION, older_message

__all__ = [
    "MIGRATIONS_TABLE",
    "PG_MIGRATIONS",
    "PG_TABLES",
    "check_version",
    "migrate",
    "prepare_error",
    "schema_version",
]

MIGRATIONS_TABLE = "reversi_migrations"

PG_MIGRATIONS: list[str] = [
    # 1: runs (with the step counter), steps, edges, events
    """
    CREATE TABLE runs (
        id text PRIMARY KEY,
        started_at double precision NOT NULL,
        status text NOT NULL,
        scope text NOT NULL,
        label text,
        rollback_owner text,
        rollback_started_at double precision,
        rollback_finished_at double precision,
        last_seq integer NOT NULL DEFAULT 0
    );
    CREATE TABLE steps (
        run_id text NOT NULL REFERENCES runs(id),
        seq integer NOT NULL,
        tool text NOT NULL,
        effect text NOT NULL,
        permission text NOT NULL,
        args text NOT NULL,
        reason text,
        state text NOT NULL,
        idempotency_key text NOT NULL,
        owner text,
        started_at double precision NOT NULL,
        finished_at double precision,
        result text,
        error text,
        compensation text,
        compensation_error text,
        approval text,
        resolution text,
        rollback_state text,
        rollback_reason text,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE edges (
        run_id text NOT NULL,
        seq integer NOT NULL,
        requires_seq integer NOT NULL,
        PRIMARY KEY (run_id, seq, requires_seq)
    );
    CREATE TABLE events (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id text NOT NULL,
        seq integer,
        at double precision NOT NULL,
        kind text NOT NULL,
        detail text NOT NULL
    );
    CREATE INDEX steps_pending ON steps(state) WHERE state = 'pending';
    CREATE INDEX events_run ON events(run_id, id)
    """,
    # 2: a person's decision that a step's compensation may overwrite a later change
    """
    ALTER TABLE steps ADD COLUMN overwrite text
    """,
    # the tamper-evident journal: each run's hash chain of step records (_chain.py), its
    # head kept in the run's row; the runs already here are marked as written before it
    """
    CREATE TABLE chain (
        run_id text NOT NULL,
        seq integer NOT NULL,
        step integer,
        kind text NOT NULL,
        content text NOT NULL,
        prev_hash text NOT NULL,
        hash text NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    ALTER TABLE runs ADD COLUMN chained boolean NOT NULL DEFAULT false;
    ALTER TABLE runs ADD COLUMN chain_seq integer NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN chain_prev text NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN chain_hash text NOT NULL DEFAULT ''
    """,
    # 4: reversi console: the approval queue (journal/_approvals.py) and who resolved a step
    """
    ALTER TABLE steps ADD COLUMN resolved_by text;
    CREATE TABLE approvals (
        id text PRIMARY KEY,
        run_id text NOT NULL,
        tool text NOT NULL,
        args_hash text NOT NULL,
        args text NOT NULL,
        reason text,
        requested_by text NOT NULL,
        requested_at double precision NOT NULL,
        expires_at double precision NOT NULL,
        state text NOT NULL,
        decided_by text,
        decided_at double precision,
        note text
    );
    CREATE INDEX approvals_waiting ON approvals(state, requested_at);
    CREATE INDEX approvals_call ON approvals(run_id, tool, args_hash)
    """,
    # 5: the SQLite journal keeps a step's own records in its row (_sqlite_chain.py); the
    # PostgreSQL journal's layout does not change (its hot path is one statement a commit)
    """
    SELECT 1
    """,
]
"""One migration per schema version (the SQLite journal's versions); statements split on ``;``."""

PG_TABLES = ("runs", "steps", "edges", "events", "chain", "approvals")
"""The journal's tables (besides :data:`MIGRATIONS_TABLE`)."""

if len(PG_MIGRATIONS) != SCHEMA_VERSION:  # pragma: no cover - caught by the first import
    raise AssertionError("PG_MIGRATIONS and the SQLite MIGRATIONS must have one version each")


def schema_version(conn: Any) -> int:
    """The journal's version in the connection's schema: 0 when it has no journal."""
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [MIGRATIONS_TABLE]).fetchone()
    if not row[0]:
        return 0
    row = conn.execute(f"SELECT coalesce(max(version), 0) FROM {MIGRATIONS_TABLE}").fetchone()  # noqa: S608 - a constant table name
    return int(row[0])


def _newer(where: str, version: int) -> JournalVersionError:
    return JournalVersionError(
        f"journal {where} has schema version {version}, newer than the {SCHEMA_VERSION} "
        "this reversi-core understands; upgrade reversi-core"
    )


def check_version(conn: Any, where: str) -> None:
    """For a read-only open: refuse a journal that is missing, newer, or older (which a
    read-only open does not migrate); writes nothing. Raises :class:`JournalError` or
    :class:`JournalVersionError` naming the commands that migrate."""
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise _newer(where, version)
    if version == 0:
        raise JournalError(f"no Reversi journal in {where}; nothing has run here")
    if version < SCHEMA_VERSION:
        raise JournalVersionError(older_message(where, version))


def migrate(conn: Any, where: str, *, create: bool) -> None:
    """Bring the journal in ``conn``'s schema to :data:`SCHEMA_VERSION` (``conn`` in autocommit).

    ``where`` names the journal in messages. Raises :class:`JournalVersionError` for a
    newer schema (before writing anything), and :class:`JournalError` when there is no
    journal and ``create`` is false, when the schema holds tables of the journal's names
    but no Reversi version, or when the connection has no schema to create tables in.
    """
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise _newer(where, version)
    if version == SCHEMA_VERSION:
        return
    if version == 0 and not create:
        raise JournalError(f"no Reversi journal in {where}; nothing has run here")
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    if schema is None:
        raise JournalError(
            f"journal {where}: no schema to create the journal's tables in (none of the "
            "connection's search_path exists); create one, or set search_path with "
            "options=-csearch_path%3DSCHEMA in the URL (the = written %3D)"
        )
    key = advisory_key("migrate", schema)
    conn.execute("SELECT pg_advisory_lock(%s)", [key])
    try:
        with conn.transaction():
            _migrate_locked(conn, where, schema)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", [key])


def _migrate_locked(conn: Any, where: str, schema: str) -> None:
    """The migration, in a transaction begun once the migration lock was held.

    The lock is a session lock taken before the transaction rather than a transaction
    lock inside it: a transaction begun after another process's migration committed
    reads the catalog afresh, where one that waited for a lock inside itself could still
    look the new tables up in its session's stale catalog cache and find none.
    """
    version = schema_version(conn)  # again, under the lock: another process may have done it
    if version > SCHEMA_VERSION:
        raise _newer(where, version)
    if version == 0:
        found = [
            r[0]
            for r in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relname = ANY(%s) ORDER BY c.relname",
                [schema, list(PG_TABLES)],
            )
        ]
        if found:
            raise JournalError(
                f"journal {where}: schema {schema} holds {', '.join(found)} but no Reversi "
                f"schema version ({MIGRATIONS_TABLE}); give the journal a schema of its own"
            )
        conn.execute(
            f"CREATE TABLE {MIGRATIONS_TABLE} (version integer PRIMARY KEY, "
            "applied_at double precision NOT NULL, reversi_core text NOT NULL)"
        )
    for number in range(version, SCHEMA_VERSION):
        for statement in PG_MIGRATIONS[number].split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} (version, applied_at, reversi_core) "  # noqa: S608 - a constant table name
            "VALUES (%s, %s, %s)",
            [number + 1, time.time(), __version__],
        )


def prepare_error(where: str, exc: Any) -> JournalError:
    """The :class:`JournalError` for a driver's error while migrating or recovering ``where``.

    A missing privilege (SQLSTATE 42501) says which the journal's role needs.
    """
    code = f" (SQLSTATE {exc.sqlstate})" if getattr(exc, "sqlstate", None) else ""
    hint = ""
    if getattr(exc, "sqlstate", None) == "42501":  # insufficient_privilege
        hint = (
            "; the journal's role needs CREATE on its schema for the first open, then "
            "SELECT, INSERT and UPDATE on the journal's tables (docs/engine.md)"
        )
    return JournalError(f"journal {where}: cannot prepare the journal{code}: {reason(exc)}{hint}")
