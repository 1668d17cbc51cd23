"""The journal: the durable record of every run and step.

:class:`Journal` is the protocol the engine writes through; :func:`open_journal` opens
one from a location (a data directory today: :class:`SQLiteJournal`, the embedded
default, one SQLite file in it). Every store reports its failures as
:class:`~reversi_core.errors.JournalError`, never as its driver's own exception, and
decides who owns a pending step with the storage-neutral rules of ``_owner``. Records
are plain data classes: :class:`RunRecord` and :class:`StepRecord`.
"""

from __future__ import annotations

from ._base import (
    DEFAULT_DATA_DIR,
    Durability,
    Journal,
    LostStep,
    RollbackState,
    RunRecord,
    RunStatus,
    StepRecord,
    StepState,
    resolve_data_dir,
    step_idempotency_key,
)
from ._open import open_journal
from .sqlite import SCHEMA_VERSION, SQLiteJournal

__all__ = [
    "DEFAULT_DATA_DIR",
    "SCHEMA_VERSION",
    "Durability",
    "Journal",
    "LostStep",
    "RollbackState",
    "RunRecord",
    "RunStatus",
    "SQLiteJournal",
    "StepRecord",
    "StepState",
    "open_journal",
    "resolve_data_dir",
    "step_idempotency_key",
]
