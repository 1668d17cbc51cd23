"""The approval queue: calls waiting for a person's decision on ``reversi console``.

A gateway whose client cannot be asked (no MCP elicitation) journals an approval request
for a call of an ``approval: always`` tool and polls for its decision; ``reversi console``
lists the waiting requests and records a person's decision. Both may be separate
processes, on one SQLite journal or one PostgreSQL journal: the requests are rows of the
journal's ``approvals`` table (schema version 3 of both stores: ``_schema.py`` and
``_pg_schema.py``).

A request is bound to the exact call: its run, its tool and the SHA-256 of the canonical
JSON of its arguments (:func:`args_hash`). A decision names the hash it was shown and is
refused for another, and the gateway takes a decision only for the hash of its own call,
so a call with other arguments needs its own approval. Each call journals its own
request, even when an identical call (same run, tool and arguments) is waiting too: one
decision allows exactly one execution. Every request and decision is also
an event of the run's audit trail (``approval_requested``, ``approval_decided``,
``approval_expired``), with who decided and when.

The stores get the methods of :class:`ApprovalStore` from :class:`SQLiteApprovals` and
:class:`PgApprovals`; :func:`approvals_of` gives the store of a journal.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigurationError, JournalError
from ..redact import scrub
from ..registry import canonical_json
from ._schema import dumps, loads

__all__ = [
    "APPROVAL_METHODS",
    "ApprovalDecisionError",
    "ApprovalRecord",
    "ApprovalState",
    "ApprovalStore",
    "PgApprovals",
    "SQLiteApprovals",
    "approvals_of",
    "args_hash",
]

APPROVAL_METHODS = (
    "request_approval",
    "get_approval",
    "list_approvals",
    "decide_approval",
    "expire_approval",
)
"""The store methods whose driver errors become :class:`JournalError`."""

_COLUMNS = (
    "id, run_id, tool, args_hash, args, reason, requested_by, requested_at, expires_at, "
    "state, decided_by, decided_at, note"
)


def args_hash(args: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of ``args`` (sorted keys, no spaces): the
    arguments an approval is bound to. Key order does not change it; any value does."""
    return hashlib.sha256(canonical_json(args).encode("utf-8", "surrogatepass")).hexdigest()


class ApprovalState(StrEnum):
    """Where an approval request stands."""

    WAITING = "waiting"
    APPROVED = "approved"
    REFUSED = "refused"
    EXPIRED = "expired"


class ApprovalDecisionError(JournalError):
    """A decision the journal did not record: unknown request, decided or expired
    already, or decided for other arguments than the request's."""


@dataclass(frozen=True)
class ApprovalRecord:
    """One approval request. Times are UNIX seconds; ``args`` are scrubbed of secrets."""

    id: str
    run_id: str
    tool: str
    args_hash: str
    args: dict[str, Any]
    reason: str | None
    requested_by: str
    requested_at: float
    expires_at: float
    state: ApprovalState
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None

    def current_state(self, now: float | None = None) -> ApprovalState:
        """The state, ``expired`` for a waiting request past its limit (its gateway gone)."""
        if self.state is ApprovalState.WAITING and (now or time.time()) >= self.expires_at:
            return ApprovalState.EXPIRED
        return self.state

    def to_json(self) -> dict[str, Any]:
        """Every field as JSON data, ``state`` as :meth:`current_state` says."""
        return {
            "id": self.id,
            "run_id": self.run_id,
            "tool": self.tool,
            "args_hash": self.args_hash,
            "args": self.args,
            "reason": self.reason,
            "requested_by": self.requested_by,
            "requested_at": self.requested_at,
            "expires_at": self.expires_at,
            "state": self.current_state().value,
            "decided_by": self.decided_by,
            "decided_at": self.decided_at,
            "note": self.note,
        }


def _record(row: tuple[Any, ...]) -> ApprovalRecord:
    return ApprovalRecord(
        id=row[0],
        run_id=row[1],
        tool=row[2],
        args_hash=row[3],
        args=loads(row[4]),
        reason=row[5],
        requested_by=row[6],
        requested_at=row[7],
        expires_at=row[8],
        state=ApprovalState(row[9]),
        decided_by=row[10],
        decided_at=row[11],
        note=row[12],
    )


@runtime_checkable
class ApprovalStore(Protocol):
    """The approval queue of a journal (both stores implement it)."""

    def request_approval(
        self,
        run_id: str,
        tool: str,
        args: dict[str, Any],
        reason: str | None,
        *,
        requested_by: str,
        timeout: float,
    ) -> ApprovalRecord:
        """Journal a new waiting request for this exact call (``timeout`` seconds from
        now) and return it. Every call gets its own request, even one identical to a call
        already waiting: one decision allows exactly one execution."""
        ...

    def get_approval(self, approval_id: str) -> ApprovalRecord:
        """One request; raises :class:`ApprovalDecisionError` if unknown."""
        ...

    def list_approvals(self, *, waiting: bool = False, limit: int = 200) -> list[ApprovalRecord]:
        """Requests newest first (``waiting``: only those waiting and not past their limit)."""
        ...

    def decide_approval(
        self,
        approval_id: str,
        *,
        approved: bool,
        by: str,
        args_hash: str,
        note: str | None = None,
    ) -> ApprovalRecord:
        """Record a person's decision on a waiting request shown with ``args_hash``.

        Raises :class:`ApprovalDecisionError` (nothing written) when the request is
        unknown, decided or past its limit, or ``args_hash`` is not the request's.
        """
        ...

    def expire_approval(self, approval_id: str) -> ApprovalRecord:
        """Mark a request nobody decided in time as expired (a decided one is left as
        is) and return it as journaled now."""
        ...


class _Approvals:
    """The queue's SQL, written once for both stores (``?`` placeholders)."""

    _MARK = "?"

    @contextlib.contextmanager
    def _approval_tx(self) -> Iterator[Any]:  # pragma: no cover - each store's own
        raise NotImplementedError
        yield

    @contextlib.contextmanager
    def _approval_read(self) -> Iterator[Any]:  # pragma: no cover - each store's own
        raise NotImplementedError
        yield

    def _q(self, sql: str) -> str:
        return sql if self._MARK == "?" else sql.replace("?", self._MARK)

    def _approval_event(self, c: Any, record: ApprovalRecord, kind: str, at: float) -> None:
        detail = {
            "approval": record.id,
            "tool": record.tool,
            "args_hash": record.args_hash,
            "state": record.state.value,
            "by": record.decided_by if kind != "approval_requested" else record.requested_by,
            "note": record.note,
        }
        c.execute(
            self._q("INSERT INTO events (run_id, seq, at, kind, detail) VALUES (?, ?, ?, ?, ?)"),
            [record.run_id, None, at, kind, dumps(detail)],
        )

    def _one(self, c: Any, approval_id: str) -> ApprovalRecord | None:
        row = c.execute(
            self._q(f"SELECT {_COLUMNS} FROM approvals WHERE id = ?"),  # noqa: S608 - constant columns
            [approval_id],
        ).fetchone()
        return None if row is None else _record(row)

    def request_approval(
        self,
        run_id: str,
        tool: str,
        args: dict[str, Any],
        reason: str | None,
        *,
        requested_by: str,
        timeout: float,
    ) -> ApprovalRecord:
        digest = args_hash(args)
        now = time.time()
        # Always a new request: one decision allows exactly one execution, so two
        # identical calls waiting at the same moment each need their own decision.
        with self._approval_tx() as c:
            record = ApprovalRecord(
                id=secrets.token_hex(8),
                run_id=run_id,
                tool=tool,
                args_hash=digest,
                args=loads(dumps(args)),
                reason=reason,
                requested_by=requested_by,
                requested_at=now,
                expires_at=now + timeout,
                state=ApprovalState.WAITING,
            )
            c.execute(
                self._q(
                    f"INSERT INTO approvals ({_COLUMNS}) "  # noqa: S608 - constant columns
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                [
                    record.id,
                    run_id,
                    tool,
                    digest,
                    dumps(args),
                    None if reason is None else scrub(reason),
                    requested_by,
                    now,
                    record.expires_at,
                    record.state.value,
                    None,
                    None,
                    None,
                ],
            )
            self._approval_event(c, record, "approval_requested", now)
        return record

    def get_approval(self, approval_id: str) -> ApprovalRecord:
        with self._approval_read() as c:
            record = self._one(c, approval_id)
        if record is None:
            raise ApprovalDecisionError(f"no approval request {approval_id!r} in the journal")
        return record

    def list_approvals(self, *, waiting: bool = False, limit: int = 200) -> list[ApprovalRecord]:
        where = "WHERE state = 'waiting' AND expires_at > ? " if waiting else ""
        params: list[Any] = [time.time()] if waiting else []
        with self._approval_read() as c:
            rows = c.execute(
                self._q(
                    f"SELECT {_COLUMNS} FROM approvals {where}"  # noqa: S608 - constant SQL
                    "ORDER BY requested_at DESC, id LIMIT ?"
                ),
                [*params, int(limit)],
            ).fetchall()
        return [_record(r) for r in rows]

    def decide_approval(
        self,
        approval_id: str,
        *,
        approved: bool,
        by: str,
        args_hash: str,
        note: str | None = None,
    ) -> ApprovalRecord:
        if not by.strip():
            raise ApprovalDecisionError("a decision needs the name of who decided")
        now = time.time()
        state = ApprovalState.APPROVED if approved else ApprovalState.REFUSED
        with self._approval_tx() as c:
            record = self._one(c, approval_id)
            if record is None:
                raise ApprovalDecisionError(f"no approval request {approval_id!r} in the journal")
            if record.args_hash != args_hash:
                raise ApprovalDecisionError(
                    f"approval request {approval_id} is for other arguments than the ones "
                    "decided on (their hash differs); nothing was recorded"
                )
            current = record.current_state(now)
            if current is not ApprovalState.WAITING:
                raise ApprovalDecisionError(
                    f"approval request {approval_id} is {current.value} already"
                    + (f" (by {record.decided_by})" if record.decided_by else "")
                    + "; nothing was recorded"
                )
            c.execute(
                self._q(
                    "UPDATE approvals SET state = ?, decided_by = ?, decided_at = ?, note = ? "
                    "WHERE id = ? AND state = 'waiting'"
                ),
                [state.value, scrub(by), now, None if note is None else scrub(note), approval_id],
            )
            decided = ApprovalRecord(
                **{
                    **record.__dict__,
                    "state": state,
                    "decided_by": scrub(by),
                    "decided_at": now,
                    "note": None if note is None else scrub(note),
                }
            )
            self._approval_event(c, decided, "approval_decided", now)
        return decided

    def expire_approval(self, approval_id: str) -> ApprovalRecord:
        now = time.time()
        with self._approval_tx() as c:
            changed = c.execute(
                self._q(
                    "UPDATE approvals SET state = 'expired', decided_at = ? "
                    "WHERE id = ? AND state = 'waiting'"
                ),
                [now, approval_id],
            ).rowcount
            record = self._one(c, approval_id)
            if record is None:
                raise ApprovalDecisionError(f"no approval request {approval_id!r} in the journal")
            if changed:
                self._approval_event(c, record, "approval_expired", now)
        return record


class SQLiteApprovals(_Approvals):
    """The approval queue of :class:`~reversi_core.journal.SQLiteJournal`."""

    _conn: Any
    _tx: Callable[..., Any]  # the journal's own
    _reading: Callable[..., Any]

    @contextlib.contextmanager
    def _approval_tx(self) -> Iterator[Any]:
        with self._tx() as c:
            yield c

    @contextlib.contextmanager
    def _approval_read(self) -> Iterator[Any]:
        with self._reading():
            yield self._conn


class PgApprovals(_Approvals):
    """The approval queue of :class:`~reversi_core.journal.PostgresJournal`."""

    _MARK = "%s"
    _conn: Any
    _lock: Any
    _tx: Callable[..., Any]  # the journal's own
    _reading: Callable[..., Any]

    @contextlib.contextmanager
    def _approval_tx(self) -> Iterator[Any]:
        with self._lock, self._tx():
            yield self._conn

    @contextlib.contextmanager
    def _approval_read(self) -> Iterator[Any]:
        with self._lock:
            yield self._reading()


def approvals_of(journal: Any) -> ApprovalStore:
    """The approval queue of ``journal``; raises :class:`ConfigurationError` for a store
    without one (a journal double of a test, say)."""
    if isinstance(journal, _Approvals):
        return journal
    raise ConfigurationError(
        f"the journal {getattr(journal, 'location', journal)!r} has no approval queue"
    )
