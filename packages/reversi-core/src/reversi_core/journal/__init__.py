"""The journal: the durable record of every run and step.

:class:`Journal` is the protocol the engine writes through; :class:`SQLiteJournal` is
the embedded default (one SQLite file in the data directory). Records are plain data
classes: :class:`RunRecord` and :class:`StepRecord`.
"""

from __future__ import annotations

from ._base import (
    DEFAULT_DATA_DIR,
    Durability,
    Journal,
    RollbackState,
    RunRecord,
    RunStatus,
    StepRecord,
    StepState,
    resolve_data_dir,
    step_idempotency_key,
)
from .sqlite import SCHEMA_VERSION, SQLiteJournal

__all__ = [
    "DEFAULT_DATA_DIR",
    "SCHEMA_VERSION",
    "Durability",
    "Journal",
    "RollbackState",
    "RunRecord",
    "RunStatus",
    "SQLiteJournal",
    "StepRecord",
    "StepState",
    "resolve_data_dir",
    "step_idempotency_key",
]
