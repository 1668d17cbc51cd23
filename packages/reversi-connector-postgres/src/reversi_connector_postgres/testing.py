"""Test helpers for the ``postgres`` connector, and its opt-in to the certification suite.

The backend of this connector is a real PostgreSQL server, so the helpers here start
one rather than imitate one:

- :func:`find_bindir`, :func:`start_cluster`, :func:`shared_server` and the rest of the
  throwaway server on 127.0.0.1 are core's test kit (:mod:`reversi_core.testing.postgres`,
  which core's own PostgreSQL journal tests use too), re-exported here under the names
  this module has always had;
- :class:`WireProxy` sits between a connector and the server on 127.0.0.1 and, reading
  the PostgreSQL wire protocol (https://www.postgresql.org/docs/current/protocol-message-formats.html),
  drops the connection, goes silent, or has the server answer with a chosen SQLSTATE at
  a chosen statement (``COMMIT``, say), so that lost connections, silent servers and
  server errors can be tested against the real server;
- :func:`certification_fixture` is what the repository's ``certification/`` suite needs
  to drive every postgres tool against a real server (docs/certification-guide.md),
  faults included: :class:`PostgresFaults` realises the suite's fault descriptions on
  the real server and its proxy, and :data:`ERROR_CODES` says which SQLSTATEs stand for
  the HTTP statuses the suite injects. It declares :data:`LIVE` too, the live scenario
  ``nox -s live -- postgres`` runs on the database of ``POSTGRES_URL``.

Every connection the fixture gives the connector logs in as a dedicated role
(:data:`AGENT_ROLE`-prefixed, with a password) holding only the privileges the tools
need on the seeded table, as ``docs/connectors/postgres.md`` recommends.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import struct
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import psycopg
from psycopg import sql

from reversi_core.testing import (
    CertificationFixture,
    ConcurrentChange,
    Dependency,
    ExampleContext,
    Failure,
    LiveScenario,
    Residue,
)
from reversi_core.testing.postgres import (
    BIN_ENV,
    URL_ENV,
    Cluster,
    PostgresServer,
    PostgresUnavailable,
    as_uri,
    find_bindir,
    shared_server,
    start_cluster,
    stop_shared_server,
    with_options,
)

from ._live import LIVE_SCHEMA_VARIABLE, LIVE_SUMMARY, LIVE_VARIABLES, live_scenario
from .connector import ENV_VAR, PostgresConnector

if TYPE_CHECKING:  # the HTTP fake kit is not needed at run time, only Fault's shape
    from reversi_core.testing import Fault

__all__ = [
    "AGENT_ROLE",
    "BIN_ENV",
    "CALL_TIMEOUT",
    "ERROR_CODES",
    "LIVE",
    "URL_ENV",
    "Cluster",
    "PostgresFaults",
    "PostgresServer",
    "PostgresUnavailable",
    "ScratchSchema",
    "WireProxy",
    "as_uri",
    "certification_fixture",
    "commit_statement",
    "find_bindir",
    "raise_statement",
    "shared_server",
    "someone_edits_the_row",
    "start_cluster",
    "stop_shared_server",
    "table_checksums",
    "tool_statement",
    "with_options",
]

AGENT_ROLE = "reversi_agent"
"""Prefix of the dedicated login role the certification fixture gives the connector."""


# -- content checksums --------------------------------------------------------------------------


def table_checksums(conn: psycopg.Connection[Any], schema: str = "public") -> dict[str, str]:
    """``{table: md5 of every row's text, in a stable order}`` for every table of ``schema``.

    Rows are compared by their whole text form (``t::text``), so any change in any column
    changes the checksum; order does not matter.
    """
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", [schema]
        )
    ]
    out: dict[str, str] = {}
    for table in tables:
        query = sql.SQL(
            "SELECT count(*), coalesce(md5(string_agg(t::text, E'\\n' ORDER BY t::text)), '') "
            "FROM {} AS t"
        ).format(sql.Identifier(schema, table))
        row = conn.execute(query).fetchone()
        assert row is not None
        out[table] = f"{row[0]}:{row[1]}"
    return out


# -- the wire proxy ---------------------------------------------------------------------------------

_SSL_REQUEST = 80877103
_GSS_REQUEST = 80877104
_CANCEL_REQUEST = 80877102

FaultKind = Literal["drop", "hang", "raise"]


@dataclass
class _ArmedFault:
    kind: FaultKind
    match: Callable[[str], bool]
    forward: bool
    times: int | None
    hits: int = 0
    seconds: float | None = None
    replacement: str | None = None

    @property
    def spent(self) -> bool:
        return self.times is not None and self.hits >= self.times


def _matcher(prefix: str | Callable[[str], bool]) -> Callable[[str], bool]:
    if callable(prefix):
        return prefix
    wanted = prefix.strip().upper()
    return lambda text: text.lstrip().upper().startswith(wanted)


def _statement_text(kind: bytes, body: bytes) -> str | None:
    """The SQL of a Query ('Q') or Parse ('P') message, else ``None``."""
    try:
        if kind == b"Q":
            return body.rstrip(b"\0").decode("utf-8", "replace")
        if kind == b"P":
            name_end = body.index(b"\0")
            query_end = body.index(b"\0", name_end + 1)
            return body[name_end + 1 : query_end].decode("utf-8", "replace")
    except ValueError:
        return None
    return None


def _query_message(text: str) -> bytes:
    """A simple-protocol Query message: ``'Q'``, Int32 length, the text, a NUL.

    https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-QUERY
    """
    body = text.encode("utf-8") + b"\0"
    return b"Q" + struct.pack("!I", len(body) + 4) + body


_SQLSTATE = re.compile(r"[0-9A-Z]{5}")


def raise_statement(sqlstate: str, message: str) -> str:
    """A ``DO`` block whose ``RAISE`` makes the server itself answer ``sqlstate`` with ``message``.

    ``RAISE EXCEPTION ... USING ERRCODE`` sends an ErrorResponse of severity ``ERROR``
    whose code field is ``sqlstate``
    (https://www.postgresql.org/docs/current/plpgsql-errors-and-messages.html); the codes
    are those of https://www.postgresql.org/docs/current/errcodes-appendix.html.
    """
    if not _SQLSTATE.fullmatch(sqlstate):
        raise ValueError(f"not a SQLSTATE: {sqlstate!r}")
    literal = "'" + message.replace("\0", "").replace("'", "''") + "'"
    tag = "$reversi_fault$"
    while tag in literal:
        tag = f"$reversi_fault_{secrets.token_hex(3)}$"
    return (
        f"DO {tag} BEGIN RAISE EXCEPTION USING ERRCODE = '{sqlstate}', "
        f"MESSAGE = {literal}; END {tag}"
    )


@dataclass
class WireProxy:
    """A TCP proxy on 127.0.0.1 in front of a PostgreSQL server, with faults at statements.

    Use as ``async with WireProxy(server.host, server.port) as proxy`` and connect to
    ``proxy.port`` (:meth:`url` rewrites a URL; it turns TLS off, since the proxy reads
    the messages); synchronous code serves it from a thread with :meth:`in_thread`.
    Faults are armed with :meth:`drop_at`, :meth:`hang_at` and :meth:`raise_at`, which
    match a statement by the start of its text (``"COMMIT"``, ``"INSERT"``) or a
    predicate, from any thread; ``statements`` lists every statement text that went
    through.

    The proxy reads the client's messages as the protocol frames them
    (https://www.postgresql.org/docs/current/protocol-message-formats.html): the untyped
    start-up packets, then typed messages, of which a Query ('Q') or a Parse ('P') carries
    a statement. A Parse opens an extended-protocol batch (Bind, Describe, Execute...)
    that ends with a Sync ('S'); a fault on the Parse takes the whole batch.
    """

    upstream_host: str
    upstream_port: int
    port: int = 0
    statements: list[str] = field(default_factory=list)
    _faults: list[_ArmedFault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)
    _closing: asyncio.Event = field(default_factory=asyncio.Event)

    async def __aenter__(self) -> WireProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):  # every connection ends, and its handler with it
            writer.transport.abort()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=10)
        for task in list(self._tasks):  # a handler that did not end by itself
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    @contextlib.contextmanager
    def in_thread(self) -> Iterator[WireProxy]:
        """Serve the proxy from an event loop of its own, in a background thread, until the block ends.

        For synchronous callers (the certification fixture's ``backend``); arming faults
        and reading ``statements`` are safe from any thread.
        """
        loop = asyncio.new_event_loop()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_forever()
                left = asyncio.all_tasks(loop)
                for task in left:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

        thread = threading.Thread(target=serve, name="WireProxy", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.__aenter__(), loop).result(timeout=30)
            try:
                yield self
            finally:
                closing = self.__aexit__(None, None, None)
                asyncio.run_coroutine_threadsafe(closing, loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)

    def url(self, url: str) -> str:
        """``url`` pointed at the proxy, with ``sslmode=disable`` and ``gssencmode=disable``."""
        return with_options(
            url, host="127.0.0.1", port=str(self.port), sslmode="disable", gssencmode="disable"
        )

    def _arm(self, fault: _ArmedFault) -> _ArmedFault:
        if fault.times is not None and fault.times < 1:
            raise ValueError("times must be >= 1 or None (unlimited)")
        with self._lock:
            self._faults.append(fault)
        return fault

    def drop_at(
        self,
        statement: str | Callable[[str], bool],
        *,
        forward: bool = False,
        times: int | None = 1,
    ) -> _ArmedFault:
        """Close both sides when a matching statement arrives.

        ``forward=False``: the statement never reaches the server. ``forward=True``: it
        is sent on and the server's reply is thrown away (the server did the work; the
        client never hears so).
        """
        return self._arm(_ArmedFault("drop", _matcher(statement), forward, times))

    def hang_at(
        self,
        statement: str | Callable[[str], bool],
        *,
        seconds: float | None = None,
        forward: bool = False,
        times: int | None = 1,
    ) -> _ArmedFault:
        """Hold a matching statement and answer nothing until the client gives up.

        The connection is closed when the client closes its side, the proxy closes, or
        ``seconds`` (when given) have passed. ``forward=True`` sends the statement on
        and throws the server's reply away (the server did the work in silence).
        """
        if seconds is not None and seconds < 0:
            raise ValueError("seconds must be >= 0")
        return self._arm(_ArmedFault("hang", _matcher(statement), forward, times, seconds=seconds))

    def raise_at(
        self,
        statement: str | Callable[[str], bool],
        sqlstate: str,
        message: str,
        *,
        times: int | None = 1,
    ) -> _ArmedFault:
        """Have the server itself answer a matching statement with the error ``sqlstate``.

        The statement (with the rest of its extended-protocol batch) is not sent; the
        server gets :func:`raise_statement` in its place, as a Query. Its ErrorResponse
        and ReadyForQuery are what the server sends after any failed statement, simple or
        extended (https://www.postgresql.org/docs/current/protocol-flow.html), so the
        client reads a real server error, and the server's transaction really is aborted.
        """
        replacement = raise_statement(sqlstate, message)
        return self._arm(
            _ArmedFault("raise", _matcher(statement), False, times, replacement=replacement)
        )

    def clear(self) -> None:
        """Disarm every fault."""
        with self._lock:
            self._faults.clear()

    def _take(self, text: str) -> _ArmedFault | None:
        with self._lock:
            for fault in self._faults:
                if not fault.spent and fault.match(text):
                    fault.hits += 1
                    return fault
        return None

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        writers = [client_w]
        self._writers.add(client_w)
        try:
            server_r, server_w = await asyncio.open_connection(
                self.upstream_host, self.upstream_port
            )
            writers.append(server_w)
            self._writers.add(server_w)
            if self._closing.is_set():
                return
            mute = asyncio.Event()
            replied = asyncio.Event()
            down = asyncio.create_task(self._server_to_client(server_r, client_w, mute, replied))
            try:
                await self._client_to_server(client_r, server_w, mute, replied)
            finally:
                down.cancel()
                await asyncio.gather(down, return_exceptions=True)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for writer in writers:
                writer.close()
                self._writers.discard(writer)
            for writer in writers:  # until the sockets are really closed
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
            self._tasks.discard(task)

    async def _server_to_client(
        self,
        server_r: asyncio.StreamReader,
        client_w: asyncio.StreamWriter,
        mute: asyncio.Event,
        replied: asyncio.Event,
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await server_r.read(65536):
                if mute.is_set():
                    if b"Z" in data:
                        replied.set()
                    continue
                client_w.write(data)
                await client_w.drain()
        replied.set()
        client_w.close()

    async def _client_to_server(
        self,
        client_r: asyncio.StreamReader,
        server_w: asyncio.StreamWriter,
        mute: asyncio.Event,
        replied: asyncio.Event,
    ) -> None:
        while True:  # untyped startup packets: SSL/GSS requests, then startup or cancel
            head = await client_r.readexactly(8)
            length, code = struct.unpack("!II", head)
            server_w.write(head + await client_r.readexactly(length - 8))
            await server_w.drain()
            if code not in (_SSL_REQUEST, _GSS_REQUEST):
                break
        while True:
            kind, message = await _read_message(client_r)
            text = _statement_text(kind, message[5:])
            fault = None
            if text is not None:
                self.statements.append(text)
                fault = self._take(text)
            if fault is None:
                server_w.write(message)
                await server_w.drain()
                continue
            if fault.kind == "raise":
                assert fault.replacement is not None
                if kind == b"P":  # the batch goes unsent up to its Sync
                    while kind != b"S":
                        kind, _ = await _read_message(client_r)
                server_w.write(_query_message(fault.replacement))
                await server_w.drain()
                continue
            if fault.forward:
                mute.set()
                server_w.write(message)
                while kind not in (b"Q", b"S"):  # an extended-protocol batch: on up to its Sync
                    kind, message = await _read_message(client_r)
                    server_w.write(message)
                await server_w.drain()
            if fault.kind == "hang":
                await self._silent(client_r, fault.seconds)
                return
            if fault.forward:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(10):
                        await replied.wait()
            return

    async def _silent(self, client_r: asyncio.StreamReader, seconds: float | None) -> None:
        """Say nothing until the client closes, the proxy closes, or ``seconds`` pass."""
        waits = {
            asyncio.ensure_future(_until_eof(client_r)),
            asyncio.ensure_future(self._closing.wait()),
        }
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pending in waits:
                pending.cancel()
            await asyncio.gather(*waits, return_exceptions=True)


async def _read_message(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One typed message: ``(type byte, the whole message as sent)``."""
    kind = await reader.readexactly(1)
    size = await reader.readexactly(4)
    body = await reader.readexactly(struct.unpack("!I", size)[0] - 4)
    return kind, kind + size + body


async def _until_eof(reader: asyncio.StreamReader) -> None:
    """Read and discard until the peer closes (what a silent server does with a request)."""
    while await reader.read(65536):
        pass


# -- the certification fixture --------------------------------------------------------------------

CERT_DATABASE = "reversi_certification"

CALL_TIMEOUT = 1.0
"""Seconds the connectors the fixture builds wait for the server (the timeout check waits
about one and a half times this per tool)."""

ERROR_CODES: Mapping[int, tuple[str, ...]] = {
    401: ("28P01", "28000"),
    403: ("42501",),
    422: ("22023", "22P02", "23502", "23503", "23505", "23514"),
    500: ("XX000",),
    503: ("53300", "57P03"),
}
"""The SQLSTATEs that stand for each HTTP status the certification checks inject.

From https://www.postgresql.org/docs/current/errcodes-appendix.html: a login refused
(28P01 invalid_password, 28000 invalid_authorization_specification); a privilege missing
(42501 insufficient_privilege); a value or row the server will not take (class 22 data
exception, class 23 integrity constraint violation); an internal error (XX000); no
connection to be had now (53300 too_many_connections, 57P03 cannot_connect_now). The
first code of each is the one :class:`PostgresFaults` makes the server answer.
"""

_TRANSACTION_CONTROL = frozenset(
    {"BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE"}
)
_PRIVILEGES = frozenset(
    {
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "TRUNCATE",
        "REFERENCES",
        "TRIGGER",
        "USAGE",
        "MAINTAIN",
    }
)


def _first_word(text: str) -> str:
    found = re.match(r"\s*([A-Za-z]+)", text)
    return found.group(1).upper() if found else ""


def tool_statement(text: str) -> bool:
    """Whether a statement does a tool's work: anything but transaction control."""
    return _first_word(text) not in _TRANSACTION_CONTROL


def commit_statement(text: str) -> bool:
    """Whether a statement is the ``COMMIT`` through which a transaction's writes take effect."""
    return _first_word(text) in ("COMMIT", "END")


class PostgresFaults:
    """The certification suite's faults (:class:`reversi_core.testing.Fault`), on a real server.

    The ``faults`` of a :class:`ScratchSchema`
    (:class:`reversi_core.testing.FaultControls`). Where the server can be put in
    the state a status stands for, it is, and the server refuses for real; the rest is
    done by the scenario's :class:`WireProxy` at a statement of the tool's own
    (:func:`tool_statement`), or at its ``COMMIT`` with ``writes=True``
    (:func:`commit_statement`), since PostgreSQL applies nothing of a transaction before
    it processes ``COMMIT``:

    ===================================  ===========================================================
    fault                                what the connector meets
    ===================================  ===========================================================
    ``status(401)``                      the agent role's password is changed: every login is
                                         refused, ``28P01``
    ``status(403)``                      the agent loses its privileges on the schema's tables and
                                         sequences: every statement that needs one, ``42501``
    ``status(503)``                      the agent role's ``CONNECTION LIMIT`` is 0: every login
                                         is refused, ``53300``
    ``status(422)``, ``status(500)``     the server answers the statement with ``22023`` or
                                         ``XX000`` (:meth:`WireProxy.raise_at`)
    ``drop_after_read(apply=)``          the connection is closed once the statement arrived;
                                         with ``apply``, after the server got it
    ``hang(seconds, apply=)``            the statement is held (or, with ``apply``, passed on) and
                                         nothing comes back
    ===================================  ===========================================================

    The three server states hold until :meth:`clear` (``times`` must be ``None``), which
    puts the role and the privileges back as they were. :meth:`describe` says in a few
    words which of these a status fault is, for the certification results page.
    """

    DESCRIPTIONS: ClassVar[Mapping[int, str]] = {
        401: "a changed password",
        403: "revoked privileges",
        503: "a connection limit of zero",
        422: "an error the server raises at the statement",
        500: "an error the server raises at the statement",
    }
    """What :meth:`add` does for ``status(N)``, by ``N``, in words."""

    def __init__(self, scratch: ScratchSchema, proxy: WireProxy) -> None:
        self._scratch = scratch
        self._proxy = proxy
        self._undo: list[Callable[[], None]] = []
        self._conditions: Mapping[int, Callable[[], Callable[[], None]]] = {
            401: self._refuse_logins,
            403: self._revoke_privileges,
            503: self._no_connection_slots,
        }

    def add(self, fault: Fault, *, times: int | None = 1, writes: bool = False) -> object:
        """Arm ``fault`` (see the class docstring); raises ``ValueError`` for what has no counterpart."""
        where = commit_statement if writes else tool_statement
        if fault.kind == "drop_after_read":
            return self._proxy.drop_at(where, forward=fault.apply, times=times)
        if fault.kind == "hang":
            return self._proxy.hang_at(
                where, seconds=fault.seconds, forward=fault.apply, times=times
            )
        status = fault.http_status
        assert status is not None
        condition = self._conditions.get(status)
        if condition is not None:
            if times is not None or writes or fault.apply:
                raise ValueError(
                    f"HTTP {status} is a state of the server, armed for every request until "
                    "clear(): give times=None, and neither writes nor apply"
                )
            self._undo.append(condition())
            return None
        if status not in ERROR_CODES or fault.apply:
            raise ValueError(
                f"no PostgreSQL counterpart for HTTP {status}"
                + (" with apply=True" if fault.apply else "")
                + f"; the statuses there are: {', '.join(map(str, sorted(ERROR_CODES)))}"
            )
        body = fault.json.get("message") if isinstance(fault.json, dict) else None
        message = str(body) if body else f"injected fault: HTTP {status}"
        return self._proxy.raise_at(where, ERROR_CODES[status][0], message, times=times)

    def describe(self, fault: Fault) -> str | None:
        """What :meth:`add` makes of a ``status`` fault, in words (``None`` for a drop or a hang).

        The certification suite prints it instead of ``HTTP N``: the server is not asked
        for a status, it is put in a state (:data:`DESCRIPTIONS`).
        """
        if fault.http_status is None:
            return None
        return self.DESCRIPTIONS.get(fault.http_status)

    def clear(self) -> None:
        """Disarm the proxy's faults and put the role and privileges back."""
        self._proxy.clear()
        while self._undo:
            self._undo.pop()()

    def _refuse_logins(self) -> Callable[[], None]:
        agent = sql.Identifier(self._scratch.agent)
        wrong = "refused-" + secrets.token_hex(12)
        with self._scratch.server.admin() as conn:
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(agent, sql.Literal(wrong)))

        def undo() -> None:
            with self._scratch.server.admin() as conn:
                right = sql.Literal(self._scratch.password)
                conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(agent, right))

        return undo

    def _revoke_privileges(self) -> Callable[[], None]:
        scratch = self._scratch
        agent = sql.Identifier(scratch.agent)
        schema = sql.Identifier(scratch.schema)
        with scratch.admin() as conn:
            held = conn.execute(
                "SELECT c.relname, c.relkind = 'S', a.privilege_type "
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "CROSS JOIN LATERAL aclexplode(c.relacl) a "
                "WHERE n.nspname = %s AND a.grantee = (SELECT oid FROM pg_roles WHERE rolname = %s)",
                [scratch.schema, scratch.agent],
            ).fetchall()
            conn.execute(
                sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(schema, agent)
            )
            conn.execute(
                sql.SQL("REVOKE ALL ON ALL SEQUENCES IN SCHEMA {} FROM {}").format(schema, agent)
            )

        def undo() -> None:
            with scratch.admin() as conn:
                for relation, sequence, privilege in held:
                    if privilege not in _PRIVILEGES:
                        raise ValueError(f"unexpected privilege {privilege!r}")
                    conn.execute(
                        sql.SQL("GRANT {} ON {} {} TO {}").format(
                            sql.SQL(privilege),
                            sql.SQL("SEQUENCE" if sequence else "TABLE"),
                            sql.Identifier(scratch.schema, relation),
                            agent,
                        )
                    )

        return undo

    def _no_connection_slots(self) -> Callable[[], None]:
        agent = sql.Identifier(self._scratch.agent)
        with self._scratch.server.admin() as conn:
            row = conn.execute(
                "SELECT rolconnlimit FROM pg_roles WHERE rolname = %s", [self._scratch.agent]
            ).fetchone()
            limit = int(row[0]) if row else -1
            conn.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT 0").format(agent))

        def undo() -> None:
            with self._scratch.server.admin() as conn:
                conn.execute(
                    sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(agent, sql.Literal(limit))
                )

        return undo


@dataclass
class ScratchSchema:
    """One certification scenario: a fresh schema on the shared server, and the agent's URL.

    ``agent_url`` logs in as :attr:`agent` (password :attr:`password`) with the schema
    first on its ``search_path``, through the scenario's :class:`WireProxy` (``proxy``)
    when there is one; ``faults`` (a :class:`PostgresFaults`) arms the suite's faults.
    """

    server: PostgresServer
    database: str
    schema: str
    agent: str
    password: str
    agent_url: str
    proxy: WireProxy | None = None
    faults: PostgresFaults | None = None

    def admin(self) -> psycopg.Connection[Any]:
        """A superuser connection to the scenario's database."""
        return self.server.admin(self.database)


_agent_lock = threading.Lock()
_agents: dict[str, tuple[str, str]] = {}
_AGENT_PASSWORD = "cert-" + secrets.token_hex(12)
"""The agent role's password in this process: the credential the redaction check looks for."""


def _agent_for(server: PostgresServer) -> tuple[str, str]:
    """The dedicated login role (and its password) the fixture uses on ``server``."""
    with _agent_lock:
        found = _agents.get(server.admin_url)
        if found is not None:
            return found
        role = f"{AGENT_ROLE}_{secrets.token_hex(4)}"
        password = _AGENT_PASSWORD
        with server.admin() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(password)
                )
            )
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [CERT_DATABASE]
            ).fetchone()
            if exists is None:
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(
                        sql.SQL("CREATE DATABASE {}").format(sql.Identifier(CERT_DATABASE))
                    )
        _agents[server.admin_url] = (role, password)
        return role, password


@contextlib.contextmanager
def _scratch(directory: Path) -> Iterator[ScratchSchema]:
    server = shared_server()
    role, password = _agent_for(server)
    schema = f"cert_{secrets.token_hex(6)}"
    with server.admin(CERT_DATABASE) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(
            sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                sql.Identifier(schema), sql.Identifier(role)
            )
        )
    url = server.url(
        user=role, password=password, dbname=CERT_DATABASE, options=f"-c search_path={schema}"
    )
    try:
        with WireProxy(server.host, server.port).in_thread() as proxy:
            scratch = ScratchSchema(
                server, CERT_DATABASE, schema, role, password, proxy.url(url), proxy
            )
            faults = scratch.faults = PostgresFaults(scratch, proxy)
            try:
                yield scratch
            finally:
                faults.clear()
    finally:
        with server.admin(CERT_DATABASE) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


SEED_ROWS: tuple[tuple[int, str, int, str | None], ...] = (
    (1, "apple", 3, '{"colour": "red"}'),
    (2, "pear", 5, None),
    (3, "100% plum; $1 off", 0, '["a", "b"]'),
)
"""The rows of ``items`` (id, name, qty, tags as JSON text) that :func:`_seed` writes."""


def _seed(scratch: ScratchSchema) -> None:
    s = sql.Identifier(scratch.schema)
    agent = sql.Identifier(scratch.agent)
    with scratch.admin() as conn:
        conn.execute(
            sql.SQL(
                "CREATE TABLE {}.items (id serial PRIMARY KEY, name text NOT NULL, "
                "qty integer NOT NULL DEFAULT 0, tags jsonb, price numeric(10, 2), "
                "seen timestamptz)"
            ).format(s)
        )
        conn.execute(sql.SQL("CREATE TABLE {}.vault (id serial PRIMARY KEY, v text)").format(s))
        for row in SEED_ROWS:
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.items (id, name, qty, tags, price, seen) "
                    "VALUES (%s, %s, %s, %s, 1.50, '2024-05-01 12:00:00+02')"
                ).format(s),
                list(row),
            )
        conn.execute(sql.SQL("INSERT INTO {}.vault (v) VALUES ('secret')").format(s))
        conn.execute(
            sql.SQL("SELECT setval(%s, (SELECT max(id) FROM {}.items))").format(s),
            [f"{scratch.schema}.items_id_seq"],
        )
        conn.execute(
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {}.items TO {}").format(s, agent)
        )
        conn.execute(sql.SQL("GRANT USAGE ON SEQUENCE {}.items_id_seq TO {}").format(s, agent))


def _fingerprint(scratch: ScratchSchema) -> dict[str, Any]:
    s = sql.Identifier(scratch.schema)
    with scratch.admin() as conn:
        items = [
            r[0]
            for r in conn.execute(sql.SQL("SELECT t::text FROM {}.items t ORDER BY id").format(s))
        ]
        vault = [
            r[0]
            for r in conn.execute(sql.SQL("SELECT t::text FROM {}.vault t ORDER BY id").format(s))
        ]
        seq = conn.execute(sql.SQL("SELECT last_value, is_called FROM {}.items_id_seq").format(s))
        last = seq.fetchone()
    return {"items": items, "vault": vault, "sequence": list(last) if last else None}


def _without_sequence(fingerprint: Any) -> Any:
    return {**fingerprint, "sequence": None}


@contextlib.contextmanager
def _revoke_writes(scratch: ScratchSchema, tool: str, args: Mapping[str, Any]) -> Iterator[None]:
    """The agent role loses UPDATE and DELETE on ``items`` (a real 42501) until the block ends."""
    target = sql.SQL("{}.items").format(sql.Identifier(scratch.schema))
    agent = sql.Identifier(scratch.agent)
    with scratch.admin() as conn:
        conn.execute(sql.SQL("REVOKE UPDATE, DELETE ON {} FROM {}").format(target, agent))
    try:
        yield
    finally:
        with scratch.admin() as conn:
            conn.execute(sql.SQL("GRANT UPDATE, DELETE ON {} TO {}").format(target, agent))


async def _inserted_row(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("postgres.insert_row", {"table": "items", "values": {"name": "tmp"}})
    return {"table": "items", "key": made["key"], "inserted": made["inserted"]}


async def _updated_row(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    done = await ctx.call(
        "postgres.update_row", {"table": "items", "key": 2, "values": {"qty": 8, "name": "plum"}}
    )
    return {"table": "items", "key": 2, "values": done["previous"], "written": done["written"]}


def someone_edits_the_row(
    scratch: ScratchSchema, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange:
    """A person adds 100 to ``qty`` of the row ``tool`` inserted or updated, on their own connection.

    The undo must refuse, naming ``the column qty``; ``revert()`` takes the 100 back.
    """
    items = sql.Identifier(scratch.schema, str(args["table"]))

    def bump(by: int) -> None:
        with scratch.admin() as conn:
            conn.execute(
                sql.SQL("UPDATE {} SET qty = qty + %s WHERE id = %s").format(items),
                [by, result["key"]],
            )

    bump(100)
    return ConcurrentChange(what="the column qty", revert=lambda: bump(-100))


async def _update_inserted(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    key = ctx.results["postgres.insert_row"]["key"]
    return {"table": "items", "key": key, "values": {"qty": 9}}


def _live_env(scratch: ScratchSchema) -> dict[str, str]:
    """The live scenario on a scenario's schema, as the superuser (who may create tables)."""
    admin = with_options(scratch.server.admin_url, dbname=scratch.database)
    return {ENV_VAR: as_uri(admin), LIVE_SCHEMA_VARIABLE: scratch.schema}


LIVE = LiveScenario(
    name="row-insert-update",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    record=False,
    test_env=_live_env,
)
"""postgres's live scenario (:mod:`reversi_connector_postgres._live`): ``nox -s live --
postgres`` runs it on the database of ``POSTGRES_URL``; nothing is recorded."""


def certification_fixture() -> CertificationFixture[ScratchSchema]:
    """How the certification suite drives the ``postgres`` connector: a real server.

    Each scenario gets a fresh schema on :func:`shared_server` with a seeded ``items``
    table and a ``vault`` table the agent role may not touch, and a :class:`WireProxy`
    between the connector and the server, through which :class:`PostgresFaults` arms
    the suite's faults. A compensation is made to fail by revoking the agent's UPDATE
    and DELETE privileges (SQLSTATE 42501). :data:`ERROR_CODES` tells the suite which
    SQLSTATEs stand for the statuses it injects. :func:`someone_edits_the_row` is the
    person who changes a row after the agent inserted or updated it.
    """
    return CertificationFixture(
        backend_summary="a real PostgreSQL server the tests start, faults included",
        command_line=lambda scratch: ({"POSTGRES_URL": as_uri(scratch.agent_url)}, []),
        backend=_scratch,
        seed=_seed,
        build=lambda scratch: PostgresConnector(scratch.agent_url, timeout=CALL_TIMEOUT),
        build_with_timeout=lambda scratch, seconds: PostgresConnector(
            scratch.agent_url, timeout=seconds
        ),
        fingerprint=_fingerprint,
        credential=_AGENT_PASSWORD,
        examples={
            "postgres.query": [
                {
                    "sql": "SELECT id, name, tags FROM items WHERE qty > $1 ORDER BY id",
                    "params": [1],
                },
                {"sql": "WITH t AS (SELECT count(*) AS n FROM items) SELECT n, '100%' FROM t"},
            ],
            "postgres.insert_row": [
                {"table": "items", "values": {"name": "fig", "qty": 7, "tags": {"k": ["v"]}}},
                {"table": "items", "values": {"name": "x'); DROP TABLE items; --"}},
            ],
            "postgres.update_row": [
                {"table": "items", "key": 1, "values": {"qty": 10, "tags": None}},
                {"table": "items", "key": 3, "values": {"name": "kiwi", "price": "9.99"}},
            ],
            "postgres.delete_row": [_inserted_row, {"table": "items", "key": 999}],
            "postgres.restore_row": [
                _updated_row,
                {"table": "items", "key": 2, "values": {"qty": "5", "name": "pear"}},
            ],
        },
        failures={  # SQLSTATEs: https://www.postgresql.org/docs/current/errcodes-appendix.html
            "postgres.query": [
                Failure({"sql": "SELECT * FROM missing_table"}, code="42P01"),  # undefined_table
                Failure(  # read_only_sql_transaction: the query tool runs READ ONLY
                    {
                        "sql": "WITH w AS (INSERT INTO items (name) VALUES ('w') RETURNING id) "
                        "SELECT id FROM w"
                    },
                    code="25006",
                ),
            ],
            "postgres.insert_row": [
                Failure(  # unique_violation
                    {"table": "items", "values": {"id": 1, "name": "duplicate"}}, code="23505"
                ),
                Failure(  # insufficient_privilege: the agent role has no grant on vault
                    {"table": "vault", "values": {"v": "not allowed"}}, code="42501"
                ),
            ],
            "postgres.update_row": [
                Failure({"table": "items", "key": 999, "values": {"qty": 1}}, code="not_found")
            ],
            "postgres.restore_row": [
                Failure({"table": "items", "key": 999, "values": {"qty": "1"}}, code="not_found")
            ],
            "postgres.delete_row": [Failure({"table": "vault", "key": 1}, code="42501")],
        },
        dependencies=[
            Dependency(
                earlier="postgres.insert_row",
                earlier_args={"table": "items", "values": {"name": "new"}},
                later="postgres.update_row",
                later_args=_update_inserted,
            ),
            Dependency(
                earlier="postgres.update_row",
                earlier_args={"table": "items", "key": 2, "values": {"qty": 6}},
                later="postgres.update_row",
                later_args={"table": "items", "key": 2, "values": {"qty": 7}},
            ),
        ],
        residue={
            "postgres.insert_row": Residue(
                reason="the id sequence stays advanced: PostgreSQL sequences are not "
                "transactional, so deleting the inserted row leaves a gap in serial ids",
                normalise=_without_sequence,
            )
        },
        undo_fault=_revoke_writes,
        concurrent_change=someone_edits_the_row,
        call_timeout=CALL_TIMEOUT,
        error_codes=ERROR_CODES,
        live=LIVE,
    )
