"""The two journal stores the tests run against, and what a test may ask of either.

``sqlite``: a data directory under the test's ``tmp_path``. ``postgresql``: a fresh
schema on the session's throwaway server (``reversi_core.testing.postgres``), named by
a superuser URL whose ``search_path`` is that schema alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

STORES = ("sqlite", "postgresql")


def is_postgres(location: str) -> bool:
    return location.startswith("postgresql://")


def stored_bytes(location: str) -> bytes:
    """Everything the journal at ``location`` holds, as bytes: the SQLite files (the
    database, its -wal and -shm), or the text of every row of the schema's tables."""
    if not is_postgres(location):
        data = Path(location)
        return b"".join(p.read_bytes() for p in sorted(data.iterdir()) if p.is_file())
    import psycopg

    out: list[str] = []
    with psycopg.connect(location, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "ORDER BY tablename"
            )
        ]
        for table in tables:
            out += [r[0] for r in conn.execute(f'SELECT t::text FROM "{table}" t')]
    return "\n".join(out).encode()


def sql(location: str, statement: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Run one statement on the journal's database, outside the journal (a test's hand).

    SQLite placeholders are ``?``, PostgreSQL's ``%s``; returns the rows (none for a write).
    """
    if is_postgres(location):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            cur = conn.execute(statement.encode(), params)
            return list(cur.fetchall()) if cur.description else []
    import sqlite3

    conn = sqlite3.connect(Path(location) / "journal.sqlite3")
    try:
        with conn:
            cur = conn.execute(statement, params or [])
            return list(cur.fetchall())
    finally:
        conn.close()


def make_version_1(location: str) -> None:
    """Take a journal just created back to schema version 1: undo schema 5's links (SQLite), the approval queue's
    migration (``approvals``,
    ``steps.resolved_by``), the chain's (the ``chain`` table, the chain's columns of
    ``runs`` and SQLite's run numbers), then ``steps.overwrite``."""
    if not is_postgres(location):  # schema 5: a step's links, the run's chain head
        sql(location, "ALTER TABLE steps DROP COLUMN links")
        sql(location, "ALTER TABLE steps DROP COLUMN head")
        sql(location, "DROP TABLE chain_start")
    sql(location, "DROP TABLE approvals")
    sql(location, "ALTER TABLE steps DROP COLUMN resolved_by")
    sql(location, "DROP TABLE chain")
    if not is_postgres(location):
        sql(location, "DROP INDEX runs_num")
    columns = ["chained"] + (
        ["chain_seq", "chain_prev", "chain_hash"] if is_postgres(location) else ["num"]
    )
    for column in columns:
        sql(location, f"ALTER TABLE runs DROP COLUMN {column}")
    sql(location, "ALTER TABLE steps DROP COLUMN overwrite")
    if is_postgres(location):
        sql(location, "DELETE FROM reversi_migrations WHERE version > 1")
    else:
        sql(location, "PRAGMA user_version = 1")
