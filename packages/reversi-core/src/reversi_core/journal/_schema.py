"""The SQLite journal's schema, its migrations, and how rows become records."""

from __future__ import annotations

import json
from typing import Any

from .._json import dumps_text
from ..errors import JournalCorruptError
from ..redact import scrub_json
from ._base import RollbackState, RunRecord, RunStatus, StepRecord, StepState

__all__ = [
    "MIGRATIONS",
    "RUN_COLUMNS",
    "SCHEMA_VERSION",
    "STEP_COLUMNS",
    "dumps",
    "loads",
    "older_message",
    "run_from_row",
    "step_from_row",
]

MIGRATIONS: list[str] = [
    # 1: runs, steps, edges, events
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        started_at REAL NOT NULL,
        status TEXT NOT NULL,
        scope TEXT NOT NULL,
        label TEXT,
        rollback_owner TEXT,
        rollback_started_at REAL,
        rollback_finished_at REAL
    );
    CREATE TABLE steps (
        run_id TEXT NOT NULL REFERENCES runs(id),
        seq INTEGER NOT NULL,
        tool TEXT NOT NULL,
        effect TEXT NOT NULL,
        permission TEXT NOT NULL,
        args TEXT NOT NULL,
        reason TEXT,
        state TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        owner TEXT,
        started_at REAL NOT NULL,
        finished_at REAL,
        result TEXT,
        error TEXT,
        compensation TEXT,
        compensation_error TEXT,
        approval TEXT,
        resolution TEXT,
        rollback_state TEXT,
        rollback_reason TEXT,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE edges (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        requires_seq INTEGER NOT NULL,
        PRIMARY KEY (run_id, seq, requires_seq)
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL,
        seq INTEGER,
        at REAL NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX steps_pending ON steps(state) WHERE state = 'pending';
    CREATE INDEX events_run ON events(run_id, id);
    """,
    # 2: a person's decision that a step's compensation may overwrite a later change
    """
    ALTER TABLE steps ADD COLUMN overwrite TEXT;
    """,
    # 3: the tamper-evident journal: each run's hash chain of step records (_chain.py),
    # one B-tree keyed by (runs.num << 32) | seq (_sqlite_chain.py); the runs already here
    # are marked as written before it (chained = 0) and numbered in the order of their rows
    """
    CREATE TABLE chain (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        step INTEGER,
        kind TEXT NOT NULL,
        content TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL
    );
    ALTER TABLE runs ADD COLUMN chained INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN num INTEGER;
    UPDATE runs SET num = rowid;
    CREATE UNIQUE INDEX runs_num ON runs(num);
    """,
    # 4: reversi console: the approval queue (journal/_approvals.py) and who resolved a step
    """
    ALTER TABLE steps ADD COLUMN resolved_by TEXT;
    CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        args_hash TEXT NOT NULL,
        args TEXT NOT NULL,
        reason TEXT,
        requested_by TEXT NOT NULL,
        requested_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        state TEXT NOT NULL,
        decided_by TEXT,
        decided_at REAL,
        note TEXT
    );
    CREATE INDEX approvals_waiting ON approvals(state, requested_at);
    CREATE INDEX approvals_call ON approvals(run_id, tool, args_hash);
    """,
    # 5: a step's own records (begin, finish, rejected, recorded) kept as links in its row,
    # their content computed from it, and the run's chain head named by its tail row (the
    # step numbered highest: its head, else its last link) (_sqlite_chain.py); the records
    # already in the chain table stay there, whole, and verify as before; chain_start: the
    # number of the first run made under the chain (a run numbered from it on is chained)
    """
    ALTER TABLE steps ADD COLUMN links TEXT;
    ALTER TABLE steps ADD COLUMN head TEXT;
    UPDATE steps SET head = (
        SELECT c.seq || ':' || c.hash FROM chain c, runs r WHERE r.id = steps.run_id
        AND c.id BETWEEN (r.num << 32) AND ((r.num << 32) | 4294967295)
        ORDER BY c.id DESC LIMIT 1)
    WHERE seq = (SELECT max(t.seq) FROM steps t WHERE t.run_id = steps.run_id)
    AND run_id IN (SELECT id FROM runs WHERE chained AND num IS NOT NULL);
    CREATE TABLE chain_start (first_num INTEGER NOT NULL);
    INSERT INTO chain_start (first_num) SELECT coalesce(
        (SELECT min(num) FROM runs WHERE chained), (SELECT max(num) FROM runs) + 1, 1);
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


def older_message(where: str, version: int) -> str:
    """Why a read-only open refuses the journal ``where`` at the older schema ``version``."""
    return (
        f"journal {where} has schema version {version}, older than the {SCHEMA_VERSION} of "
        "this reversi-core, and a read-only open (reversi runs, reversi show, reversi "
        "rollback --dry-run) does not migrate it; a command that writes to the journal "
        "migrates it on opening (reversi-gateway, reversi rollback, reversi resolve), after "
        "which it can be read"
    )


def dumps(value: Any) -> str | None:
    """``value`` (scrubbed of registered secrets) as compact JSON text, or ``None``.

    Any Python string can be stored, a lone surrogate read from a peer's JSON included
    (:func:`reversi_core._json.dumps_text` spells it in ASCII): it reads back unchanged.
    """
    if value is None:
        return None
    return dumps_text(scrub_json(value))


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


RUN_COLUMNS = (
    "r.id, r.started_at, r.status, r.scope, r.label, r.rollback_started_at, "
    "r.rollback_finished_at, (SELECT count(*) FROM steps s WHERE s.run_id = r.id), "
    "r.rollback_owner"
)


_UNREADABLE = (ValueError, TypeError, KeyError, IndexError)
"""What decoding a row raises when it holds what no write stores (json's JSONDecodeError
is a ValueError, so is an unknown enum value)."""


def _corrupt(what: str, exc: Exception, run_id: Any, seq: Any) -> JournalCorruptError:
    return JournalCorruptError(
        f"{what} cannot be read back from the journal ({type(exc).__name__}: {exc}): it was "
        "changed behind the journal's back (reversi verify reports it)",
        run_id=run_id if isinstance(run_id, str) else None,
        seq=seq if isinstance(seq, int) else None,
    )


def run_from_row(row: tuple[Any, ...]) -> RunRecord:
    """A run record from a row of :data:`RUN_COLUMNS`; raises
    :class:`~reversi_core.errors.JournalCorruptError` for a row no write could store."""
    try:
        return _run_from_row(row)
    except _UNREADABLE as exc:
        raise _corrupt(f"run {row[0]!r}", exc, row[0], None) from None


def _run_from_row(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        id=row[0],
        started_at=row[1],
        status=RunStatus(row[2]),
        scope=json.loads(row[3]),
        label=row[4],
        rollback_started_at=row[5],
        rollback_finished_at=row[6],
        step_count=row[7],
        rollback_owner=row[8],
    )


STEP_COLUMNS = (
    "run_id, seq, tool, effect, permission, args, reason, state, idempotency_key, owner, "
    "started_at, finished_at, result, error, compensation, compensation_error, approval, "
    "resolution, rollback_state, rollback_reason, overwrite, resolved_by"
)


def step_from_row(row: tuple[Any, ...], requires: list[int]) -> StepRecord:
    """A step record from a row of :data:`STEP_COLUMNS` and its ``requires`` edges; raises
    :class:`~reversi_core.errors.JournalCorruptError` for a row no write could store."""
    try:
        return _step_from_row(row, requires)
    except _UNREADABLE as exc:
        raise _corrupt(f"step {row[1]} of run {row[0]!r}", exc, row[0], row[1]) from None


def _step_from_row(row: tuple[Any, ...], requires: list[int]) -> StepRecord:
    return StepRecord(
        run_id=row[0],
        seq=row[1],
        tool=row[2],
        effect=row[3],
        permission=row[4],
        args=json.loads(row[5]),
        reason=row[6],
        state=StepState(row[7]),
        idempotency_key=row[8],
        owner=row[9],
        started_at=row[10],
        finished_at=row[11],
        result=loads(row[12]),
        error=row[13],
        compensation=loads(row[14]),
        compensation_error=row[15],
        approval=loads(row[16]),
        resolution=row[17],
        rollback_state=RollbackState(row[18]) if row[18] else None,
        rollback_reason=row[19],
        overwrite=loads(row[20]),
        resolved_by=row[21],
        requires=requires,
    )
