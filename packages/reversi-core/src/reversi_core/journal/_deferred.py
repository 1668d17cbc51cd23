"""Finished steps written later, several in one commit: the SQLite journal's deferred records.

A read-only call changes nothing, so its record may wait (docs/engine.md, CALL-4):
:meth:`~reversi_core.journal.sqlite.SQLiteJournal.defer_step` queues it here, encoded at
once (so that what is written is what the call returned, whatever the caller does with
the result afterwards), and the journal writes the queue in one commit: when asked
(``flush``), before any other write of the handle and before it reads the journal, when
it is closed, and as soon as the queue holds :data:`DEFERRED_STEPS_LIMIT` steps or
:data:`DEFERRED_BYTES_LIMIT` bytes.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..redact import scrub
from ._base import LostStep, StepRecord
from ._chain import recorded_content
from ._schema import dumps
from ._sqlite_chain import ChainHeads, sqlite_append

__all__ = [
    "DEFERRED_BYTES_LIMIT",
    "DEFERRED_STEPS_LIMIT",
    "DeferredSteps",
    "step_row",
    "taken_message",
    "write_step",
]

DEFERRED_STEPS_LIMIT = 64
"""Deferred steps a journal handle holds at most before it writes them."""

DEFERRED_BYTES_LIMIT = 1 << 20
"""Bytes of encoded arguments and results a journal handle holds at most (1 MiB)."""

_INSERT_STEP = (
    "INSERT INTO steps (run_id, seq, tool, effect, permission, args, reason, state, "
    "idempotency_key, started_at, finished_at, result, error, compensation, "
    "compensation_error, approval) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
"""A finished step, written whole (the values of :func:`step_row`)."""

_INSERT_DEFERRED = _INSERT_STEP + " ON CONFLICT DO NOTHING"


def step_row(step: StepRecord) -> tuple[Any, ...]:
    """The values of :data:`_INSERT_STEP` for ``step``, encoded and scrubbed now."""
    return (
        step.run_id,
        step.seq,
        step.tool,
        step.effect,
        step.permission,
        dumps(step.args),
        step.reason,
        step.state.value,
        step.idempotency_key,
        step.started_at,
        step.finished_at,
        dumps(step.result),
        scrub(step.error) if step.error else None,
        dumps(step.compensation),
        scrub(step.compensation_error) if step.compensation_error else None,
        dumps(step.approval),
    )


def taken_message(step: StepRecord) -> str:
    """Why ``step`` could not be written: another handle wrote under its number."""
    return (
        f"step {step.seq} of run {step.run_id} was written by another journal handle "
        f"meanwhile; the record of this {step.tool} call is lost"
    )


class DeferredSteps:
    """The queue of one journal handle (not thread-safe: the journal's lock guards it)."""

    __slots__ = ("_bytes", "_items")

    def __init__(self) -> None:
        self._items: list[tuple[StepRecord, tuple[Any, ...], LostStep]] = []
        self._bytes = 0

    def __bool__(self) -> bool:
        return bool(self._items)

    def add(self, step: StepRecord, on_lost: LostStep) -> bool:
        """Queue ``step``; True when the queue is full and should be written now."""
        row = step_row(step)
        self._items.append((step, row, on_lost))
        self._bytes += len(row[5]) + len(row[11] or "")
        return len(self._items) >= DEFERRED_STEPS_LIMIT or self._bytes >= DEFERRED_BYTES_LIMIT

    def take(self) -> list[tuple[StepRecord, tuple[Any, ...], LostStep]]:
        """Everything queued, oldest first; the queue is empty after."""
        items, self._items, self._bytes = self._items, [], 0
        return items

    @staticmethod
    def write(
        c: sqlite3.Connection,
        items: list[tuple[StepRecord, tuple[Any, ...], LostStep]],
        heads: ChainHeads | None = None,
    ) -> list[tuple[StepRecord, LostStep]]:
        """Insert ``items`` in the caller's transaction (``heads``: the handle's chain
        heads); returns those whose step number another journal handle had taken
        meanwhile (they are not written)."""
        return [
            (step, on_lost) for step, row, on_lost in items if not write_step(c, step, row, heads)
        ]


def write_step(
    c: sqlite3.Connection,
    step: StepRecord,
    row: tuple[Any, ...],
    heads: ChainHeads | None = None,
    *,
    strict: bool = False,
) -> bool:
    """Insert ``step`` (its :func:`step_row`), its ``requires`` edges and its chain record
    (``heads``: the handle's chain heads); False when another handle wrote under its
    number. ``strict``: raise :class:`sqlite3.IntegrityError` then."""
    if c.execute(_INSERT_STEP if strict else _INSERT_DEFERRED, row).rowcount != 1:
        return False
    edges = sorted(set(step.requires))
    if edges:
        c.executemany(
            "INSERT INTO edges (run_id, seq, requires_seq) VALUES (?, ?, ?)",
            [(step.run_id, step.seq, r) for r in edges],
        )
    sqlite_append(c, step.run_id, step.seq, "recorded", recorded_content(row, edges), heads)
    return True
