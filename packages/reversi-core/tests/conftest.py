"""Fixtures of the reversi-core tests: a journal on each store, the in-memory connector
of ``_memconnector.py`` and runs over them.

``journal`` (and ``make_run``, ``location``) are parametrized over both stores
(``_stores.STORES``): a data directory under the test's ``tmp_path`` for SQLite, and a
fresh schema on one throwaway PostgreSQL server for the session
(``reversi_core.testing.postgres.shared_server``, or ``REVERSI_TEST_POSTGRES_URL``).
When no PostgreSQL server can be had, the PostgreSQL half FAILS with the reason: it is
never skipped. ``sqlite_journal`` is for tests of what only the SQLite file has (its
pragmas, its bytes on disk).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _memconnector import MemConnector  # noqa: E402 - found only after the tests folder is put on sys.path above
from _stores import STORES  # noqa: E402 - as above

from reversi_core import Registry, Run, SQLiteJournal, registry_for  # noqa: E402 - as above
from reversi_core.connector import executor_for  # noqa: E402 - as above
from reversi_core.journal import Journal, open_journal  # noqa: E402 - as above

if TYPE_CHECKING:  # the PostgreSQL kit needs psycopg: imported when first needed
    from reversi_core.testing.postgres import PostgresServer


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data directory that does not exist yet."""
    return tmp_path / "data"


@pytest.fixture(scope="session")
def pg_server() -> PostgresServer:
    """The session's PostgreSQL server; fails (never skips) when none can be had."""
    try:
        from reversi_core.testing.postgres import (
            PostgresUnavailable,
            shared_server,
        )
    except ImportError as exc:
        pytest.fail(
            f"the PostgreSQL journal tests need psycopg (pip install 'reversi-core[postgresql]'): {exc}",
            pytrace=False,
        )
    try:
        server = shared_server()
    except PostgresUnavailable as exc:
        pytest.fail(f"no PostgreSQL server for the journal tests: {exc}", pytrace=False)
    # not stopped here: other fixtures of this process (the journal's, the connector's,
    # the soak's) share it; shared_server stops it when the process exits
    return server


@pytest.fixture
def pg_location(pg_server: PostgresServer) -> Iterator[str]:
    """A superuser URL of a fresh, empty schema on the session's server (dropped after)."""
    from reversi_core.testing.postgres import fresh_schema

    with fresh_schema(pg_server, prefix="journal") as url:
        yield url


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> str:
    """The journal store under test: ``sqlite`` or ``postgresql``."""
    return str(request.param)


@pytest.fixture
def location(store: str, data_dir: Path, request: pytest.FixtureRequest) -> str:
    """Where the test's journal is: a data directory, or a PostgreSQL URL (a fresh schema)."""
    if store == "sqlite":
        return str(data_dir)
    return str(request.getfixturevalue("pg_location"))


@pytest.fixture
def journal(location: str) -> Iterator[Journal]:
    """The test's journal, on each store in turn."""
    j = open_journal(location)
    yield j
    j.close()


@pytest.fixture
def sqlite_journal(data_dir: Path) -> Iterator[SQLiteJournal]:
    """A SQLite journal, for what only that store has."""
    j = SQLiteJournal.open(data_dir)
    yield j
    j.close()


@pytest.fixture
def mem() -> MemConnector:
    return MemConnector()


@pytest.fixture
def registry() -> Registry:
    return registry_for([MemConnector])


@pytest.fixture
def make_run(journal: Journal, registry: Registry, mem: MemConnector) -> Callable[..., Run]:
    """``make_run(scope=..., approver=..., executor=...)``: a new run over ``mem``."""

    def make(**kwargs: Any) -> Run:
        kwargs.setdefault("executor", executor_for([mem]))
        return Run.start(journal, registry, **kwargs)

    return make
