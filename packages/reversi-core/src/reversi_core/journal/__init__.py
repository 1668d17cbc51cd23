"""The journal: the durable record of every run and step.

:class:`Journal` is the protocol the engine writes through; :func:`open_journal` opens
one from a location: a data directory holds :class:`SQLiteJournal`, the embedded
default, one SQLite file in it; a ``postgresql://`` URL names :class:`PostgresJournal`,
one database shared by many gateways and hosts (imported on first use: it needs
psycopg, ``reversi-core[postgresql]``). Every store reports its failures as
:class:`~reversi_core.errors.JournalError`, never as its driver's own exception, and
decides who owns a pending step with the storage-neutral rules of ``_owner``. Records
are plain data classes: :class:`RunRecord` and :class:`StepRecord`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from ._open import (
    DATA_ENV,
    JOURNAL_ENV,
    describe_location,
    open_journal,
    resolve_location,
)

if TYPE_CHECKING:
    from .postgres import PostgresJournal
    from .sqlite import SCHEMA_VERSION, SQLiteJournal

__all__ = [
    "DATA_ENV",
    "DEFAULT_DATA_DIR",
    "JOURNAL_ENV",
    "SCHEMA_VERSION",
    "Durability",
    "Journal",
    "LostStep",
    "PostgresJournal",
    "RollbackState",
    "RunRecord",
    "RunStatus",
    "SQLiteJournal",
    "StepRecord",
    "StepState",
    "describe_location",
    "open_journal",
    "resolve_data_dir",
    "resolve_location",
    "step_idempotency_key",
]


def __getattr__(name: str) -> Any:
    """:class:`PostgresJournal` (it imports psycopg), :class:`SQLiteJournal` and
    :data:`SCHEMA_VERSION`, imported on first use: the SQLite journal's module brings the
    registry, the manifests, pydantic and jsonschema, which ``reversi-gateway`` imports
    only after it started its upstream, so that both happen at once
    (docs/performance.md, "Start-up")."""
    if name == "PostgresJournal":
        from .postgres import PostgresJournal

        return PostgresJournal
    if name in ("SQLiteJournal", "SCHEMA_VERSION"):
        from . import sqlite

        return getattr(sqlite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
