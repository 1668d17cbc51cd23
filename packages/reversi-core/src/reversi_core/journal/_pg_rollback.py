"""The PostgreSQL journal's rollbacks: their lock, and the owner's check on every write.

:class:`PgRollbacks` is the rollback half of
:class:`~reversi_core.journal.postgres.PostgresJournal`. Starting a rollback
(:func:`~._pg_owners.take_rollback`) records this process as the run's
``rollback_owner`` and takes the run's session advisory lock. From then on, every
write of the rollback (a step's rollback state, its ``compensation_started`` and other
events, the end) first reads the run's row ``FOR SHARE`` and is refused with
:class:`~reversi_core.errors.RollbackInProgressError` unless the row still names this
process (:func:`~._pg_owners.check_rollback`): a process whose connection was lost
may have been judged gone by another one (the server let go of its owner lock), which
then marked the rollback abandoned and took it over; its writes must not overwrite the
new owner's. A refusal is kept: every later write of that rollback raises it too, so
the rollback starts no more compensations, and :meth:`finish_rollback` writes nothing.

A connection made again while this handle rolls back takes each run's advisory lock
again, after checking ``status = 'rolling_back' AND rollback_owner = <this process>``
``FOR UPDATE`` (:func:`~._pg_owners.reclaim_rollback`); when either fails, that
rollback is refused from then on the same way.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

from ..errors import RollbackInProgressError
from ..redact import scrub
from ._base import RollbackState, RunRecord, RunStatus
from ._chain import rollback_content
from ._owner import claim_in_process, release_in_process
from ._pg_conn import advisory_key
from ._pg_owners import check_rollback, reclaim_rollback, take_rollback
from ._pg_sql import pg_text

if TYPE_CHECKING:
    from ._deferred import DeferredSteps

__all__ = ["PgRollbacks"]


class PgRollbacks:
    """The rollback methods of the PostgreSQL journal (see the module docstring)."""

    # the runs this handle rolls back: None while it owns the rollback, else the error
    # every later write of it raises
    _rollbacks: dict[str, RollbackInProgressError | None]
    # the runs whose advisory lock the current connection holds
    _locked: set[str]

    if TYPE_CHECKING:  # what PostgresJournal brings
        _lock: threading.RLock
        _conn: Any
        _owner: str
        _psycopg: Any
        _deferred: DeferredSteps
        location: str
        schema: str

        def _c(self) -> Any: ...
        def _tx(self) -> Any: ...
        def _lost(self) -> bool: ...
        def flush(self) -> None: ...
        def get_run(self, run_id: str) -> RunRecord: ...
        def _event(
            self, c: Any, run_id: str, seq: int | None, kind: str, detail: dict[str, Any]
        ) -> None: ...
        def _append(self, run_id: str, seq: int, kind: str, text: str) -> None: ...

    def _identity(self, run_id: str) -> tuple[str, str]:
        return (f"{self.location}#{self.schema}", run_id)

    def _rollback_key(self, run_id: str) -> int:
        return advisory_key("rollback", self.schema, run_id)

    def _reclaim(self) -> None:
        """On a new connection (under the lock): take each rollback of this handle back."""
        for run_id, lost in self._rollbacks.items():
            if lost is None and run_id not in self._locked:
                lost = reclaim_rollback(self._conn, run_id, self._owner, self._rollback_key(run_id))
                self._rollbacks[run_id] = lost
                if lost is None:
                    self._locked.add(run_id)

    def _own(self, run_id: str) -> None:
        """Inside a transaction: raise :class:`RollbackInProgressError` unless this
        process still owns ``run_id``'s rollback (a refusal of this handle's is kept)."""
        lost = self._rollbacks.get(run_id)
        if lost is None:
            try:
                check_rollback(self._conn, run_id, self._owner, self.location)
                return
            except RollbackInProgressError as exc:
                if run_id not in self._rollbacks:
                    raise
                lost = self._rollbacks[run_id] = exc
        raise lost

    def start_rollback(self, run_id: str) -> RunRecord:
        key = self._identity(run_id)
        claim_in_process(key)
        try:
            with self._lock:
                if self._deferred:
                    self.flush()
                lock_key = self._rollback_key(run_id)
                take_rollback(self._c(), run_id, self._owner, lock_key, self.location, self._event)
                self._rollbacks[run_id] = None
                self._locked.add(run_id)
            return self.get_run(run_id)
        except BaseException:
            release_in_process(key)
            raise

    def set_rollback_state(
        self,
        run_id: str,
        seq: int,
        state: RollbackState | None,
        reason: str | None,
    ) -> None:
        with self._lock, self._tx():
            self._own(run_id)
            values = (state.value if state else None, pg_text(scrub(reason)) if reason else None)
            cur = self._conn.execute(
                "UPDATE steps SET rollback_state = %s, rollback_reason = %s "
                "WHERE run_id = %s AND seq = %s",
                [*values, run_id, seq],
            )
            if cur.rowcount == 1:
                self._append(run_id, seq, "rollback_state", rollback_content(*values))
            self._event(
                self._conn,
                run_id,
                seq,
                "rollback_state",
                {"state": state.value if state else None, "reason": reason},
            )

    def finish_rollback(self, run_id: str, complete: bool) -> None:
        status = RunStatus.ROLLED_BACK if complete else RunStatus.ROLLBACK_INCOMPLETE
        try:
            with self._lock:
                try:
                    with self._tx():
                        self._own(run_id)
                        self._conn.execute(
                            "UPDATE runs SET status = %s, rollback_owner = NULL, "
                            "rollback_finished_at = %s WHERE id = %s",
                            [status.value, time.time(), run_id],
                        )
                        self._event(
                            self._conn, run_id, None, "rollback_finished", {"complete": complete}
                        )
                finally:  # the run's lock, whether the end was written or refused
                    if run_id in self._locked and not self._lost():
                        with contextlib.suppress(self._psycopg.Error):
                            self._conn.execute(
                                "SELECT pg_advisory_unlock(%s)", [self._rollback_key(run_id)]
                            )
        finally:
            with self._lock:
                self._rollbacks.pop(run_id, None)
                self._locked.discard(run_id)
            release_in_process(self._identity(run_id))
