"""The PostgreSQL journal's step writes: a rejected call, a step begun and finished, a
read's reserved number, a step written whole or deferred, an uncertain step resolved or
replayed.

:class:`PgSteps` is the step-writing part of
:class:`~reversi_core.journal.postgres.PostgresJournal`; how a step takes its number
there is in that module's docstring ("Step numbers"). Deferred steps
(:meth:`PgSteps.defer_step`) are written together by :meth:`PgSteps.flush`: when enough
are waiting, and before the handle's next write or read.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

from ..errors import JournalError, RunClosedError, UnknownRunError
from ..redact import scrub, scrub_json
from . import _chain as chain
from ._base import LostStep, RunStatus, StepRecord, StepState
from ._deferred import step_row, taken_message
from ._pg_conn import reason
from ._pg_sql import (
    BEGIN_STEP,
    FINISH_STEP,
    INSERT_DEFERRED,
    INSERT_STRICT,
    RECORD_REJECTED,
    pg_row,
    pg_text,
)
from ._schema import dumps

if TYPE_CHECKING:
    from ._deferred import DeferredSteps

__all__ = ["PgSteps"]


class PgSteps:
    """The step writes of the PostgreSQL journal (see the module docstring)."""

    if TYPE_CHECKING:  # what PostgresJournal brings
        _lock: threading.RLock
        _conn: Any
        _owner: str
        _psycopg: Any
        _deferred: DeferredSteps
        location: str

        @staticmethod
        def forward_key(run_id: str, seq: int) -> str: ...
        def _c(self) -> Any: ...
        def _tx(self) -> Any: ...
        def _event(
            self, c: Any, run_id: str, seq: int | None, kind: str, detail: dict[str, Any]
        ) -> None: ...
        def _append(self, run_id: str, seq: int, kind: str, text: str) -> None: ...

    def _closed(self, c: Any, run_id: str) -> JournalError | RunClosedError:
        """Why a run took no step: it is unknown, or not open."""
        row = c.execute("SELECT status FROM runs WHERE id = %s", [run_id]).fetchone()
        if row is None:
            return UnknownRunError(f"no run {run_id!r} in {self.location}")
        return RunClosedError(
            f"run {run_id} was rolled back ({row[0]}); it takes no new calls. Start a new run."
        )

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
        values: dict[str, Any] = {
            "run": run_id,
            "tool": pg_text(tool),
            "effect": effect,
            "permission": pg_text(permission),
            "args": dumps(args),
            "reason": pg_text(reason),
            "now": time.time(),
            "error": pg_text(scrub(error)),
            "approval": dumps(approval),
        }
        values["content"] = chain.rejected_content(
            values["tool"], effect, values["permission"], values["args"], values["reason"],
            values["now"], values["error"], values["approval"],
        )  # fmt: skip
        with self._lock:
            if self._deferred:
                self.flush()
            row = self._c().execute(RECORD_REJECTED, values).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id!r} in {self.location}")
        return int(row[0])

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
        now = time.time()
        edges = sorted(set(requires))
        values: dict[str, Any] = {
            "run": run_id,
            "tool": pg_text(tool),
            "effect": effect,
            "permission": pg_text(permission),
            "args": dumps(args),
            "reason": pg_text(reason),
            "owner": self._owner,
            "now": now,
            "approval": dumps(approval),
            "edges": edges,
        }
        values["content"] = chain.begin_content(
            values["tool"], effect, values["permission"], values["args"], values["reason"],
            self._owner, now, values["approval"], edges,
        )  # fmt: skip
        with self._lock:
            if self._deferred:
                self.flush()
            c = self._c()
            row = c.execute(BEGIN_STEP, values).fetchone()
            if row is None:
                raise self._closed(c, run_id)
        seq = int(row[0])
        return StepRecord(
            run_id=run_id,
            seq=seq,
            tool=tool,
            effect=effect,
            permission=permission,
            args=scrub_json(args),
            reason=reason,
            state=StepState.PENDING,
            idempotency_key=self.forward_key(run_id, seq),
            started_at=now,
            approval=scrub_json(approval),
            requires=edges,
            owner=self._owner,
        )

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
        values: dict[str, Any] = {
            "run": run_id,
            "seq": seq,
            "state": state.value,
            "now": time.time(),
            "result": dumps(result),
            "error": pg_text(scrub(error)) if error else None,
            "compensation": dumps(compensation),
            "cerror": pg_text(scrub(compensation_error)) if compensation_error else None,
            "detail": dumps({"state": state.value, "error": error}),
        }
        values["content"] = chain.finish_content(
            state.value, values["now"], values["result"], values["error"],
            values["compensation"], values["cerror"],
        )  # fmt: skip
        with self._lock:
            if self._deferred:
                self.flush()
            self._c().execute(FINISH_STEP, values)

    def reserve_step(self, run_id: str) -> int:
        with self._lock:
            c = self._c()
            row = c.execute(
                "UPDATE runs SET last_seq = last_seq + 1 WHERE id = %s AND status = 'open' "
                "RETURNING last_seq",
                [run_id],
            ).fetchone()
            if row is None:
                raise self._closed(c, run_id)
        return int(row[0])

    def record_step(self, step: StepRecord) -> None:
        psycopg = self._psycopg
        with self._lock:
            if self._deferred:
                self.flush()
            try:
                self._c().execute(INSERT_STRICT, pg_row(step_row(step), step.requires))
            except psycopg.errors.UniqueViolation:
                raise JournalError(taken_message(step)) from None

    def defer_step(self, step: StepRecord, on_lost: LostStep) -> None:
        with self._lock:
            full = self._deferred.add(step, on_lost)
        if full:
            self.flush()

    def flush(self) -> None:
        psycopg = self._psycopg
        lost: list[tuple[StepRecord, LostStep, JournalError]] = []
        with self._lock:
            items = self._deferred.take()
            if not items:
                return
            try:
                c = self._c()
                with c.transaction(), c.cursor() as cur:
                    cur.executemany(
                        INSERT_DEFERRED,
                        [pg_row(row, step.requires) for step, row, _ in items],
                        returning=True,
                    )
                    written: set[int] = set()
                    while True:
                        written.update(r[0] for r in cur.fetchall())
                        if not cur.nextset():
                            break
            except (psycopg.Error, JournalError) as exc:
                text = exc if isinstance(exc, JournalError) else reason(exc)
                error = JournalError(f"journal {self.location}: {text}")
                lost = [(step, on_lost, error) for step, _, on_lost in items]
            else:
                lost = [
                    (step, on_lost, JournalError(taken_message(step)))
                    for step, _, on_lost in items
                    if step.seq not in written
                ]
        for step, on_lost, error in lost:  # told outside the lock
            with contextlib.suppress(Exception):  # a failing report must not fail a write
                on_lost(step, error)

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
        values = (
            dumps(result),
            dumps(compensation),
            pg_text(scrub(compensation_error)) if compensation_error else None,
        )
        by = pg_text(scrub(decided_by)) if decided_by else None
        with self._lock, self._tx():
            cur = self._conn.execute(
                "UPDATE steps SET resolution = %s, result = coalesce(%s, result), "
                "compensation = %s, compensation_error = %s, rollback_state = NULL, "
                "rollback_reason = NULL, resolved_by = %s WHERE run_id = %s AND seq = %s",
                ["applied" if applied else "not_applied", *values, by, run_id, seq],
            )
            if cur.rowcount == 1:
                self._append(run_id, seq, "resolve", chain.resolve_content(applied, *values, by))
            self._event(self._conn, run_id, seq, "resolved", {"applied": applied, "by": by})

    def begin_replay(self, run_id: str, seq: int) -> bool:
        with self._lock, self._tx():
            c = self._conn
            # the run's row, FOR SHARE: a rollback starting now (FOR UPDATE) waits, or is seen
            row = c.execute("SELECT status FROM runs WHERE id = %s FOR SHARE", [run_id]).fetchone()
            if row is None or row[0] != RunStatus.OPEN:
                return False
            cur = c.execute(
                "INSERT INTO events (run_id, seq, at, kind, detail) "
                "SELECT %s, %s, %s, 'replay_started', '{}' "
                "WHERE EXISTS (SELECT 1 FROM steps WHERE run_id = %s AND seq = %s "
                "AND state = 'uncertain' AND resolution IS NULL)",
                [run_id, seq, time.time(), run_id, seq],
            )
            return bool(cur.rowcount == 1)
