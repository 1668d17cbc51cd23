"""The shared journal: one PostgreSQL database that many gateways and ``reversi`` commands use.

Opened by :func:`~reversi_core.journal.open_journal` with a ``postgresql://`` URL
(libpq's syntax: https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS),
through psycopg 3 (``pip install 'reversi-core[postgresql]'``). The tables live in the
first schema of the connection's ``search_path`` and are created, or migrated, on the
first open (``_pg_schema.py``). docs/engine.md, "The PostgreSQL journal", says what it
guarantees and which privileges its role needs.

How the guarantees are kept, by the database rather than by one process:

- **Step numbers** are taken by ``UPDATE runs SET last_seq = last_seq + 1 ... RETURNING``
  in the statement that writes the step: the run's row lock orders the writers of one run,
  and a step that is not written gives its number back with the rest of its transaction,
  so numbers are dense and unique whatever the number of writers. A read reserves its
  number the same way (:meth:`reserve_step`, one commit) and writes it once it answered
  (CALL-4); only a process killed in between leaves that number unused
  (``_pg_steps.py``).
- **Owners**: ``_pg_owners.py``. Each connection holds an advisory lock naming its
  process; a process of another host is dead when nobody holds its lock.
- **Rollbacks** of one run exclude each other three ways: the run row's status and
  ``rollback_owner``, read ``FOR UPDATE``; a session advisory lock per run, held by the
  rolling-back connection until :meth:`finish_rollback` (two handles of one process);
  and a set of the rollbacks running in this process (two rollbacks on one handle).
  Every write of a rollback checks, in its own transaction, that the run's row still
  names this process as the owner, and a connection made again while this handle rolls
  back takes the run's advisory lock again first (``_pg_rollback.py``).

Durability: the server decides (its ``synchronous_commit``, on by default, flushes each
commit to its disk); under ``power`` the journal sets ``synchronous_commit`` to ``on``
for its sessions whatever the server's default.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from ..errors import JournalError, RollbackInProgressError, UnknownRunError
from . import _chain as chain
from ._approvals import APPROVAL_METHODS, PgApprovals
from ._base import (
    Durability,
    Journal,
    RunRecord,
    RunStatus,
    StepRecord,
    step_idempotency_key,
)
from ._deferred import DeferredSteps
from ._owner import process_owner
from ._pg_conn import (
    advisory_key,
    connect,
    describe,
    import_psycopg,
    parse_url,
    pg_errors,
)
from ._pg_operate import PgReads
from ._pg_owners import recover
from ._pg_rollback import PgRollbacks
from ._pg_schema import MIGRATIONS_TABLE, PG_TABLES, check_version, migrate, prepare_error
from ._pg_sql import pg_text
from ._pg_steps import PgSteps
from ._schema import RUN_COLUMNS, STEP_COLUMNS, dumps, run_from_row, step_from_row
from ._summaries import SUMMARY_METHODS, PgRunSummaries

__all__ = ["PostgresJournal"]

_STORE_METHODS = tuple(
    name for name, value in vars(Journal).items() if callable(value) and not name.startswith("_")
)


@pg_errors(_STORE_METHODS + APPROVAL_METHODS + SUMMARY_METHODS + ("recover_orphans",))
class PostgresJournal(PgRollbacks, PgSteps, PgReads, PgApprovals, PgRunSummaries):
    """The PostgreSQL journal (see the module docstring). Open with :meth:`open`.

    Safe to share between threads of one process (one connection, under a lock); any
    number of processes, on any number of hosts, may open the same database at once.
    """

    forward_key = staticmethod(step_idempotency_key)

    def __init__(
        self,
        url: str,
        params: dict[str, Any],
        durability: Durability,
        busy_timeout: float,
        read_only: bool = False,
    ) -> None:
        self._psycopg = import_psycopg()
        self._url = url
        self._params = params
        self.location = describe(params)
        """``postgresql://HOST:PORT/DB``: never the user, the password or the options."""
        self.durability = durability
        self.read_only = read_only
        """Opened to read only: every transaction is read-only, nothing was migrated or recovered."""
        self._busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._owner = process_owner()
        self._owner_key = advisory_key("owner", self._owner)
        self._deferred = DeferredSteps()
        self._conn: Any = None
        self._rollbacks: dict[str, RollbackInProgressError | None] = {}
        self._locked: set[str] = set()
        self._recheck = False  # a new connection: take the rollbacks back (_reclaim)
        self.schema = ""
        """The schema holding the journal's tables (the connection's ``current_schema()``)."""

    # -- opening -----------------------------------------------------------------

    @classmethod
    def open(
        cls,
        url: str,
        *,
        durability: Durability | str = Durability.PROCESS,
        create: bool = True,
        busy_timeout: float = 30.0,
        read_only: bool = False,
    ) -> PostgresJournal:
        """Connect to the journal at ``url``, migrate its schema, recover orphaned steps.

        ``create``: make the journal's tables when the schema has none (migrations of an
        older journal run either way). ``busy_timeout`` is how long, in seconds, a write
        waits for a row another process holds (``lock_timeout``). ``read_only``: no
        migration, no recovery, and every transaction read-only (a write raises
        :class:`JournalError`); ``create`` is then not used. Raises
        :class:`JournalError` when psycopg is missing, the URL cannot be parsed, the server
        cannot be reached or refuses the role, or the schema holds no journal (without
        ``create``), and :class:`JournalVersionError` for a newer schema (or, under
        ``read_only``, an older one, naming the commands that migrate it). No message
        repeats the URL.
        """
        durability = Durability(durability)
        journal = cls(url, parse_url(url), durability, busy_timeout, read_only)
        journal._connect()
        try:
            if read_only:
                journal._check_version()
            else:
                journal._prepare(create)
        except BaseException:
            journal._conn.close()
            raise
        return journal

    def _connect(self) -> None:
        """A new connection, holding this process's owner lock; raises :class:`JournalError`."""
        self._conn, self.schema = connect(
            self._url,
            self._params,
            self.location,
            owner_key=self._owner_key,
            lock_timeout=self._busy_timeout,
            synchronous=self.durability is Durability.POWER,
            read_only=self.read_only,
        )

    def _check_version(self) -> None:
        try:
            check_version(self._conn, self.location)
        except self._psycopg.Error as exc:
            raise prepare_error(self.location, exc) from None

    def _prepare(self, create: bool) -> None:
        try:
            migrate(self._conn, self.location, create=create)
            self._recover()
        except self._psycopg.Error as exc:
            raise prepare_error(self.location, exc) from None

    def _lost(self) -> bool:
        """Whether the connection is gone (then the next use connects again)."""
        return self._conn is None or bool(self._conn.closed)

    def _c(self) -> Any:
        """The connection, connected again if it was lost (call under the lock).

        A new connection while this handle rolls runs back takes each rollback back
        (:meth:`_reclaim`) before anything else uses it.
        """
        if self._lost():
            self._recheck = True
            self._locked.clear()  # the lost connection's advisory locks went with it
            self._connect()
        if self._recheck:
            self._reclaim()
            self._recheck = False
        return self._conn

    def _tx(self) -> Any:
        """A transaction on the connection, once the deferred steps are written (under the lock)."""
        if self._deferred:
            self.flush()
        return self._c().transaction()

    def _reading(self) -> Any:
        """The connection, for a query, once the deferred steps are written (under the lock)."""
        if self._deferred:
            self.flush()
        return self._c()

    # -- owners ------------------------------------------------------------------

    def _recover(self) -> None:
        c = self._c()
        with c.transaction():
            recover(c, self._owner, self._event, self._append)

    def recover_orphans(self) -> None:
        """Recover what a process that is gone left behind, as an open does (JNL-1): each
        pending step of a dead owner becomes ``uncertain`` and each rollback lock of one
        is released, each with its event. For a handle held open for long (``reversi
        console``), which sees other processes die after it opened the journal. Raises
        :class:`~reversi_core.errors.JournalError` when the journal cannot be written."""
        with self._lock:
            if self._deferred:
                self.flush()
            self._recover()

    # -- runs --------------------------------------------------------------------

    def create_run(self, run_id: str, scope: list[str], label: str | None) -> RunRecord:
        with self._lock:
            with self._tx():
                self._conn.execute(
                    "INSERT INTO runs (id, started_at, status, scope, label, chained) "
                    "VALUES (%s, %s, 'open', %s, %s, true)",
                    [run_id, time.time(), json.dumps(sorted(scope)), pg_text(label)],
                )
            return self.get_run(run_id)

    def get_run(self, run_id: str) -> RunRecord:
        with self._lock:
            row = (
                self._reading()
                .execute(f"SELECT {RUN_COLUMNS} FROM runs r WHERE r.id = %s", [run_id])  # noqa: S608 - constant columns
                .fetchone()
            )
        if row is None:
            raise UnknownRunError(f"no run {run_id!r} in {self.location}")
        return run_from_row(row)

    def run_status(self, run_id: str) -> RunStatus:
        with self._lock:
            row = self._c().execute("SELECT status FROM runs WHERE id = %s", [run_id]).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id!r} in {self.location}")
        return RunStatus(row[0])

    def list_runs(self) -> list[RunRecord]:
        with self._lock:
            rows = (
                self._reading()
                .execute(f"SELECT {RUN_COLUMNS} FROM runs r ORDER BY r.started_at, r.id")  # noqa: S608 - constant columns
                .fetchall()
            )
        return [run_from_row(r) for r in rows]

    # -- steps: their writes are _pg_steps.PgSteps --------------------------------

    def list_steps(self, run_id: str) -> list[StepRecord]:
        with self._lock:
            c = self._reading()
            rows = c.execute(
                f"SELECT {STEP_COLUMNS} FROM steps WHERE run_id = %s ORDER BY seq",  # noqa: S608 - constant columns
                [run_id],
            ).fetchall()
            edges: dict[int, list[int]] = {}
            for seq, req in c.execute(
                "SELECT seq, requires_seq FROM edges WHERE run_id = %s ORDER BY seq, requires_seq",
                [run_id],
            ):
                edges.setdefault(seq, []).append(req)
        return [step_from_row(r, edges.get(r[1], [])) for r in rows]

    def get_step(self, run_id: str, seq: int) -> StepRecord:
        with self._lock:
            c = self._reading()
            row = c.execute(
                f"SELECT {STEP_COLUMNS} FROM steps WHERE run_id = %s AND seq = %s",  # noqa: S608 - constant columns
                [run_id, seq],
            ).fetchone()
            reqs = [
                r[0]
                for r in c.execute(
                    "SELECT requires_seq FROM edges WHERE run_id = %s AND seq = %s "
                    "ORDER BY requires_seq",
                    [run_id, seq],
                )
            ]
        if row is None:
            raise JournalError(f"run {run_id!r} has no step {seq}")
        return step_from_row(row, reqs)

    # -- rollback: _pg_rollback.PgRollbacks --------------------------------------

    def allow_overwrite(self, run_id: str, seq: int, decision: dict[str, Any]) -> None:
        text = dumps(decision)
        with self._lock, self._tx():
            changed = self._conn.execute(
                "UPDATE steps SET overwrite = %s WHERE run_id = %s AND seq = %s",
                [text, run_id, seq],
            ).rowcount
            if not changed:
                raise JournalError(f"run {run_id!r} has no step {seq}")
            self._append(run_id, seq, "overwrite", chain.overwrite_content(text))
            self._event(self._conn, run_id, seq, "overwrite_allowed", decision)

    # -- events ------------------------------------------------------------------

    def _event(
        self, c: Any, run_id: str, seq: int | None, kind: str, detail: dict[str, Any]
    ) -> None:
        c.execute(
            "INSERT INTO events (run_id, seq, at, kind, detail) VALUES (%s, %s, %s, %s, %s)",
            [run_id, seq, time.time(), kind, dumps(detail)],
        )

    def add_event(self, run_id: str, seq: int | None, kind: str, detail: dict[str, Any]) -> None:
        with self._lock, self._tx():
            if run_id in self._rollbacks:  # an event of this handle's rollback
                self._own(run_id)
            self._event(self._conn, run_id, seq, kind, detail)

    def list_events(self, run_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = (
                self._reading()
                .execute(
                    "SELECT seq, at, kind, detail FROM events WHERE run_id = %s ORDER BY id",
                    [run_id],
                )
                .fetchall()
            )
        return [{"step": r[0], "at": r[1], "kind": r[2], "detail": json.loads(r[3])} for r in rows]

    def check_writable(self) -> None:
        with self._lock:
            conn = self._c()
            read_only = conn.execute("SELECT current_setting('transaction_read_only')").fetchone()
            if read_only[0] == "on":
                raise JournalError(
                    f"journal {self.location}: the server takes no writes in this session "
                    "(a standby, default_transaction_read_only, or a journal opened to read "
                    "only); a gateway needs a journal it can write"
                )
            missing = conn.execute(
                "SELECT t, p FROM unnest(%s::text[]) AS t, "
                "unnest(ARRAY['SELECT', 'INSERT', 'UPDATE']) AS p "
                "WHERE NOT has_table_privilege(format('%%I.%%I', current_schema(), t), p) "
                "ORDER BY t, p",
                [[*PG_TABLES, MIGRATIONS_TABLE]],
            ).fetchall()
        if missing:
            lacks = ", ".join(f"{p} on {t}" for t, p in missing)
            raise JournalError(
                f"journal {self.location}: the journal's role may not write it (it lacks "
                f"{lacks}); grant SELECT, INSERT and UPDATE on the journal's tables "
                '(docs/engine.md, "What a user sets up")'
            )

    def close(self) -> None:
        with self._lock:
            try:
                self.flush()  # what cannot be written (the server is gone) is told, not raised
            finally:
                if self._conn is not None:
                    self._conn.close()

    def __enter__(self) -> PostgresJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
