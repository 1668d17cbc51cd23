"""Journal records and the protocol every journal store implements."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._frozen import quick_init
from ..errors import JournalError

if TYPE_CHECKING:
    from collections.abc import Collection

    from ._chain import ChainRecord, Verification

__all__ = [
    "DEFAULT_DATA_DIR",
    "Durability",
    "Journal",
    "LostStep",
    "RollbackState",
    "RunRecord",
    "RunStatus",
    "StepRecord",
    "StepState",
    "resolve_data_dir",
    "step_idempotency_key",
]

DEFAULT_DATA_DIR = "./reversi-data"


def resolve_data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: ``explicit`` if given, else ``$REVERSI_DATA``, else ``./reversi-data``."""
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("REVERSI_DATA") or DEFAULT_DATA_DIR)


def step_idempotency_key(run_id: str, seq: int) -> str:
    """The idempotency key of a step's forward call: ``reversi-<run>-<step>``, stable for the step."""
    return f"reversi-{run_id}-{seq}"


class Durability(StrEnum):
    """How hard each journal commit is pushed to disk.

    ``process``: WAL with ``synchronous=NORMAL``. A killed process (``kill -9``, a crash)
    loses nothing; a power cut or kernel panic may lose the last commits. The default:
    it is what protects against the failure that actually happens to agents (a killed
    gateway), at about ten times the commit rate of ``power``.

    ``power``: WAL with ``synchronous=FULL``, an fsync per commit. Survives a power cut.
    """

    PROCESS = "process"
    POWER = "power"


class StepState(StrEnum):
    """Forward state of a step (docs/engine.md)."""

    REJECTED = "rejected"
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNCERTAIN = "uncertain"


class RollbackState(StrEnum):
    """Rollback state of a step (docs/engine.md)."""

    COMPENSATED = "compensated"
    COMPENSATION_FAILED = "compensation_failed"
    VERIFICATION_FAILED = "verification_failed"
    DEFERRED = "deferred"
    UNRECOVERABLE = "unrecoverable"
    NOT_APPLICABLE = "not_applicable"


class RunStatus(StrEnum):
    """Status of a run.

    ``open`` takes calls; ``rolling_back`` is being rolled back now; ``rolled_back``
    was rolled back completely; ``rollback_incomplete`` was rolled back with steps
    outstanding. Only ``open`` takes new calls.
    """

    OPEN = "open"
    ROLLING_BACK = "rolling_back"
    ROLLED_BACK = "rolled_back"
    ROLLBACK_INCOMPLETE = "rollback_incomplete"


@dataclass(frozen=True)
class RunRecord:
    """One run as journaled. Times are UNIX seconds (float). ``rollback_owner`` is the
    process (``host:pid:start``, ``_owner.py``) rolling the run back while its status is
    ``rolling_back``; it is not part of :meth:`to_json`."""

    id: str
    started_at: float
    status: RunStatus
    scope: list[str]
    label: str | None
    step_count: int
    rollback_started_at: float | None = None
    rollback_finished_at: float | None = None
    rollback_owner: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return a JSON object with ``id``, ``started_at``, ``status``, ``steps`` and the rest."""
        return {
            "id": self.id,
            "started_at": self.started_at,
            "status": self.status.value,
            "steps": self.step_count,
            "scope": self.scope,
            "label": self.label,
            "rollback_started_at": self.rollback_started_at,
            "rollback_finished_at": self.rollback_finished_at,
        }


@quick_init
@dataclass(frozen=True)
class StepRecord:
    """One journaled call.

    ``compensation`` is ``{"tool", "args"}`` computed at call time, or ``None``;
    ``compensation_error`` says why it could not be computed. ``resolution`` is
    ``"applied"`` or ``"not_applied"`` once a person resolved an uncertain step, and
    ``resolved_by`` who did (``None``: not said, or resolved by a replay's answer).
    ``requires`` lists the ``seq`` of the earlier steps this one depends on.
    ``overwrite`` is a person's decision that the step's compensation may overwrite a
    change made since the call: ``{"by": OS user, "at": UNIX seconds}``, or ``None``
    (docs/engine.md, RB-10).
    """

    run_id: str
    seq: int
    tool: str
    effect: str
    permission: str
    args: dict[str, Any]
    reason: str | None
    state: StepState
    idempotency_key: str
    started_at: float
    finished_at: float | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    compensation: dict[str, Any] | None = None
    compensation_error: str | None = None
    approval: dict[str, Any] | None = None
    resolution: str | None = None
    rollback_state: RollbackState | None = None
    rollback_reason: str | None = None
    requires: list[int] = field(default_factory=list)
    owner: str | None = None
    overwrite: dict[str, Any] | None = None
    resolved_by: str | None = None

    @property
    def may_have_applied(self) -> bool:
        """True when the backend may carry this step's effect (succeeded, or uncertain not resolved as not applied)."""
        if self.state is StepState.SUCCEEDED:
            return True
        if self.state in (StepState.UNCERTAIN, StepState.PENDING):
            return self.resolution != "not_applied"
        return False

    def to_json(self) -> dict[str, Any]:
        """Return every field as JSON data."""
        return {
            "run_id": self.run_id,
            "step": self.seq,
            "tool": self.tool,
            "effect": self.effect,
            "permission": self.permission,
            "args": self.args,
            "reason": self.reason,
            "state": self.state.value,
            "idempotency_key": self.idempotency_key,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "result": self.result,
            "error": self.error,
            "compensation": self.compensation,
            "compensation_error": self.compensation_error,
            "approval": self.approval,
            "resolution": self.resolution,
            "resolved_by": self.resolved_by,
            "rollback_state": self.rollback_state.value if self.rollback_state else None,
            "rollback_reason": self.rollback_reason,
            "overwrite": self.overwrite,
            "requires": self.requires,
        }


LostStep = Callable[[StepRecord, JournalError], None]
"""Told about a deferred step (:meth:`Journal.defer_step`) that could not be written, and why."""


class Journal(Protocol):
    """What the engine needs from a journal store. Every write is durable on return.

    Every method raises :class:`~reversi_core.errors.JournalError` (or a subclass) when
    the store fails, never the store's own exception type (``sqlite3.Error``, a
    database driver's error), so that callers handle one error whatever the store.
    """

    location: str
    """Where the journal is, for messages: a data directory, or ``postgresql://HOST:PORT/DB``
    (a URL without its user, password or options)."""

    def create_run(self, run_id: str, scope: list[str], label: str | None) -> RunRecord:
        """Record a new open run."""
        ...

    def get_run(self, run_id: str) -> RunRecord:
        """Return a run; raises :class:`~reversi_core.errors.JournalError` if unknown."""
        ...

    def run_status(self, run_id: str) -> RunStatus:
        """The run's status alone; raises :class:`~reversi_core.errors.JournalError` if unknown."""
        ...

    def list_runs(self) -> list[RunRecord]:
        """All runs, oldest first."""
        ...

    def list_steps(self, run_id: str) -> list[StepRecord]:
        """All steps of a run, by ``seq``."""
        ...

    def get_step(self, run_id: str, seq: int) -> StepRecord:
        """One step; raises :class:`~reversi_core.errors.JournalError` if unknown."""
        ...

    def record_rejected(
        self,
        run_id: str,
        tool: str,
        effect: str,
        permission: str,
        args: dict[str, Any],
        reason: str | None,
        error: str,
        approval: dict[str, Any] | None,
    ) -> int:
        """Record a step refused before execution; returns its ``seq``."""
        ...

    def begin_step(
        self,
        run_id: str,
        tool: str,
        effect: str,
        permission: str,
        args: dict[str, Any],
        reason: str | None,
        approval: dict[str, Any] | None,
        requires: list[int],
    ) -> StepRecord:
        """Durably record a ``pending`` step (the intent) in an open run, before execution.

        Raises :class:`~reversi_core.errors.RunClosedError` if the run is not open.
        """
        ...

    def finish_step(
        self,
        run_id: str,
        seq: int,
        state: StepState,
        *,
        result: dict[str, Any] | None,
        error: str | None,
        compensation: dict[str, Any] | None,
        compensation_error: str | None,
    ) -> None:
        """Durably record a step's outcome."""
        ...

    def reserve_step(self, run_id: str) -> int:
        """A step number for a call journaled only once it answered (a read-only one).

        The SQLite journal writes nothing: the number is not handed out again by this
        journal handle, but another handle may write a step under it first. The PostgreSQL
        journal bumps the run's step counter (one commit), so that no handle, in any
        process, takes it. :meth:`record_step` writes the step under it. Raises
        :class:`~reversi_core.errors.RunClosedError` if the run is not open and
        :class:`~reversi_core.errors.JournalError` if it is unknown.
        """
        ...

    def record_step(self, step: StepRecord) -> None:
        """Write a finished step, reserved with :meth:`reserve_step`, in one commit.

        Raises :class:`~reversi_core.errors.JournalError` when it cannot be written
        (among others when another handle wrote a step under the same number).
        """
        ...

    def defer_step(self, step: StepRecord, on_lost: LostStep) -> None:
        """Queue a finished step, reserved with :meth:`reserve_step`, to be written later.

        For read-only steps (docs/engine.md, CALL-4). The step is encoded now and
        written by :meth:`flush`, which this handle also runs before any other write,
        before it reads the journal, on :meth:`close`, and once a bounded number of
        steps or bytes is queued. A step that cannot be written then (the store failed,
        another handle took its number) is handed to ``on_lost`` with the reason; a
        process killed before the flush loses the steps it queued. Raises nothing for
        the queued step itself.
        """
        ...

    def flush(self) -> None:
        """Write every step queued by :meth:`defer_step`, in one commit.

        Steps that cannot be written are handed to their ``on_lost``, never raised.
        """
        ...

    def resolve_step(
        self,
        run_id: str,
        seq: int,
        applied: bool,
        result: dict[str, Any] | None,
        compensation: dict[str, Any] | None,
        compensation_error: str | None,
        decided_by: str | None = None,
    ) -> None:
        """Record a person's resolution of an uncertain step.

        ``decided_by`` names who resolved it (scrubbed of registered secrets); it goes in
        the step's ``resolved_by`` and the ``resolved`` event (``{"applied", "by"}``), in
        the same transaction. Resolving again replaces both the outcome and the name.
        """
        ...

    def begin_replay(self, run_id: str, seq: int) -> bool:
        """Record that step ``seq`` is being replayed, if it still may be; else record nothing.

        In one transaction: only while the run is ``open`` (its rollback has not started)
        and the step is ``uncertain`` with no resolution, append a ``replay_started`` event
        and return ``True``; otherwise return ``False``. A rollback that starts at the same
        moment is ordered before or after it, never between the check and the record, as
        for :meth:`begin_step`.
        """
        ...

    def start_rollback(self, run_id: str) -> RunRecord:
        """Close the run to new calls and take its rollback lock.

        Raises :class:`~reversi_core.errors.RollbackInProgressError` when a live process
        holds the lock.
        """
        ...

    def set_rollback_state(
        self, run_id: str, seq: int, state: RollbackState | None, reason: str | None
    ) -> None:
        """Durably record a step's rollback state, in the rollback this process owns.

        Raises :class:`~reversi_core.errors.RollbackInProgressError` (and writes nothing)
        when the run's rollback is not running under this process's ownership: another
        process judged this one gone and took the rollback over, or it ended since.
        """
        ...

    def finish_rollback(self, run_id: str, complete: bool) -> None:
        """Release the rollback lock and set the run's status.

        Raises :class:`~reversi_core.errors.RollbackInProgressError`, with the status
        left as the journal holds it, when the rollback was taken over (as for
        :meth:`set_rollback_state`); this handle lets go of the rollback either way.
        """
        ...

    def allow_overwrite(self, run_id: str, seq: int, decision: dict[str, Any]) -> None:
        """Durably record that step ``seq``'s compensation may overwrite a later change.

        ``decision`` is ``{"by", "at"}`` (who decided, when), kept in the step's record
        (:attr:`StepRecord.overwrite`) and in the audit trail (an ``overwrite_allowed``
        event). Raises :class:`~reversi_core.errors.JournalError` if the step is unknown.
        """
        ...

    def add_event(self, run_id: str, seq: int | None, kind: str, detail: dict[str, Any]) -> None:
        """Append to the run's audit trail (rollback attempts, resolutions).

        While this handle rolls the run back (from :meth:`start_rollback` to
        :meth:`finish_rollback`), the event is part of that rollback (such as
        ``compensation_started``) and is refused as :meth:`set_rollback_state` is when
        the rollback was taken over.
        """
        ...

    def list_events(self, run_id: str) -> list[dict[str, Any]]:
        """The run's audit trail, oldest first."""
        ...

    def run_chain(self, run_id: str) -> list[ChainRecord]:
        """The run's hash chain (``_chain.py``), oldest record first; raises
        :class:`~reversi_core.errors.JournalError` if the run is unknown."""
        ...

    def verify_run(self, run_id: str) -> Verification:
        """Recompute the run's chain and compare it with its steps' rows, in one snapshot.

        Returns a :class:`~reversi_core.journal._chain.Verification` (``ok``,
        ``tampered`` with the first record that does not match, or ``unchained`` for a run
        written before the chain); raises :class:`~reversi_core.errors.JournalError` if
        the run is unknown.
        """
        ...

    def delete_run(self, run_id: str, statuses: Collection[str]) -> bool:
        """Delete the run and everything journaled of it (steps, edges, events, chain), in
        one transaction, if its status is still one of ``statuses``; returns whether it did.
        For retention (``reversi prune``): the caller decides which runs may go."""
        ...

    def check_writable(self) -> None:
        """Raise :class:`~reversi_core.errors.JournalError`, saying why, when this handle could
        not write the journal: opened ``read_only``; a SQLite file that takes no write
        transaction; a PostgreSQL server that takes no writes (a standby,
        ``default_transaction_read_only``) or a role without ``SELECT``, ``INSERT`` and
        ``UPDATE`` on every journal table. Writes nothing. For a gateway, which refuses
        to start on such a journal rather than fail at its client's first message.
        """
        ...

    def close(self) -> None:
        """Release the store."""
        ...

    def __enter__(self) -> Journal:
        """The journal itself; :meth:`close` is called on leaving the block."""
        ...

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        ...
