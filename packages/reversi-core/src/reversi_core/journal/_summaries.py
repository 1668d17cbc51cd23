"""A page of runs with their step count and when each was last active, in one statement.

``reversi console``'s runs page shows every run's steps, start and last activity. Reading
each run's steps and events for that costs two queries a run and every row of them;
:meth:`RunSummaryStore.run_summaries` asks the store once for one page, newest first,
with the total number of runs. Both stores run the same SQL (:data:`_SQL`), SQLite with
its scalar ``max()``, PostgreSQL with ``greatest()``:
https://www.sqlite.org/lang_corefunc.html#max_scalar,
https://www.postgresql.org/docs/current/functions-conditional.html#FUNCTIONS-GREATEST-LEAST
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigurationError
from ._base import RunRecord
from ._schema import run_from_row

__all__ = [
    "SUMMARY_METHODS",
    "PgRunSummaries",
    "RunPage",
    "RunSummary",
    "RunSummaryStore",
    "SQLiteRunSummaries",
    "run_summaries_of",
]

SUMMARY_METHODS = ("run_summaries",)
"""The store methods whose driver errors become :class:`~reversi_core.errors.JournalError`."""

MAX_PAGE = 1000
"""The most runs one page may hold."""


@dataclass(frozen=True)
class RunSummary:
    """One run (``run.step_count`` its steps) and ``last_active``: the latest of its start,
    its steps' starts and ends, its events (rollbacks, resolutions, approvals) and its
    rollbacks' start and end, in UNIX seconds."""

    run: RunRecord
    last_active: float


@dataclass(frozen=True)
class RunPage:
    """``runs``: at most ``limit`` runs from ``offset`` on, newest first (start time, then
    id, descending); ``total``: how many runs the journal holds."""

    runs: list[RunSummary]
    total: int
    offset: int
    limit: int


# The outer one-row select gives ``total`` even for a page past the end (no run joined).
_SQL = """
SELECT t.total, p.id, p.started_at, p.status, p.scope, p.label, p.rollback_started_at,
       p.rollback_finished_at, p.step_count, p.rollback_owner, p.last_active
FROM (SELECT count(*) AS total FROM runs) t
LEFT JOIN (
    SELECT r.id AS id, r.started_at AS started_at, r.status AS status, r.scope AS scope,
           r.label AS label, r.rollback_started_at AS rollback_started_at,
           r.rollback_finished_at AS rollback_finished_at,
           (SELECT count(*) FROM steps s WHERE s.run_id = r.id) AS step_count,
           r.rollback_owner AS rollback_owner,
           {greatest}(
               r.started_at,
               coalesce(r.rollback_started_at, r.started_at),
               coalesce(r.rollback_finished_at, r.started_at),
               coalesce((SELECT max(coalesce(s.finished_at, s.started_at)) FROM steps s
                         WHERE s.run_id = r.id), r.started_at),
               coalesce((SELECT max(e.at) FROM events e WHERE e.run_id = r.id), r.started_at)
           ) AS last_active
    FROM runs r
    ORDER BY r.started_at DESC, r.id DESC
    LIMIT {mark} OFFSET {mark}
) p ON 1 = 1
ORDER BY p.started_at DESC, p.id DESC
"""


@runtime_checkable
class RunSummaryStore(Protocol):
    """A journal that pages its runs with their summaries (both stores)."""

    def run_summaries(self, *, limit: int = 100, offset: int = 0) -> RunPage:
        """Runs ``offset`` to ``offset + limit - 1``, newest first, in one statement.

        Raises :class:`ValueError` for a ``limit`` outside 1..:data:`MAX_PAGE` or a
        negative ``offset``; :class:`~reversi_core.errors.JournalError` when the store fails.
        """
        ...


class _RunSummaries:
    _MARK = "?"
    _GREATEST = "max"

    @contextlib.contextmanager
    def _summary_read(self) -> Iterator[Any]:  # pragma: no cover - each store's own
        raise NotImplementedError
        yield

    def run_summaries(self, *, limit: int = 100, offset: int = 0) -> RunPage:
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be 1 to {MAX_PAGE} runs, not {limit}")
        if offset < 0:
            raise ValueError(f"offset must be 0 or more, not {offset}")
        sql = _SQL.format(greatest=self._GREATEST, mark=self._MARK)
        with self._summary_read() as c:
            rows = c.execute(sql, [limit, offset]).fetchall()
        runs = [
            RunSummary(run=run_from_row(row[1:10]), last_active=float(row[10]))
            for row in rows
            if row[1] is not None
        ]
        return RunPage(runs=runs, total=int(rows[0][0]), offset=offset, limit=limit)


class SQLiteRunSummaries(_RunSummaries):
    """:meth:`run_summaries` of :class:`~reversi_core.journal.SQLiteJournal`."""

    _conn: Any
    _reading: Callable[..., Any]

    @contextlib.contextmanager
    def _summary_read(self) -> Iterator[Any]:
        with self._reading():
            yield self._conn


class PgRunSummaries(_RunSummaries):
    """:meth:`run_summaries` of :class:`~reversi_core.journal.PostgresJournal`."""

    _MARK = "%s"
    _GREATEST = "greatest"
    _lock: Any
    _reading: Callable[..., Any]

    @contextlib.contextmanager
    def _summary_read(self) -> Iterator[Any]:
        with self._lock:
            yield self._reading()


def run_summaries_of(journal: Any) -> RunSummaryStore:
    """``journal`` as a :class:`RunSummaryStore`; raises :class:`ConfigurationError` for a
    store without :meth:`~RunSummaryStore.run_summaries` (a journal double of a test, say)."""
    if isinstance(journal, _RunSummaries):
        return journal
    raise ConfigurationError(
        f"the journal {getattr(journal, 'location', journal)!r} cannot page its runs"
    )
