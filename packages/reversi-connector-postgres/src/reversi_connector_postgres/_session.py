"""One tool call's connection: its deadline, its statement log, and its errors mapped.

Every call opens its own connection (psycopg 3, ``autocommit`` on, so that the
connector itself sends ``BEGIN``, ``COMMIT`` and ``ROLLBACK`` and nothing is implied;
https://www.psycopg.org/psycopg3/docs/basic/transactions.html#autocommit-transactions)
and closes it at the end. A connection lives for one call only, so a dropped connection
can never leak into the next call, and what was sent on it is known exactly.

Time limits, from the call's timeout ``T`` seconds:

- ``statement_timeout`` is ``T`` on the server
  (https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-STATEMENT-TIMEOUT):
  a statement running longer, or waiting longer for a lock, is cancelled by the server,
  which answers SQLSTATE 57014 and rolls the transaction back: a definite failure;
- ``connect_timeout`` is ``T`` rounded up (libpq takes whole seconds, at least 2;
  https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNECT-CONNECT-TIMEOUT);
- the client gives up ``T`` plus a grace period after the call started (:func:`grace`)
  when the server has not answered at all: the socket is shut down, which makes the
  pending psycopg call fail at once. A write whose ``COMMIT`` was sent by then is
  uncertain; anything else is a definite failure, since PostgreSQL never commits a
  transaction without its ``COMMIT``.

Other session settings pin the text forms that ``update_row`` reads back
(``DateStyle=ISO,YMD``, ``IntervalStyle=postgres``, ``TimeZone=UTC``,
``bytea_output=hex``, ``extra_float_digits=1``), and ``idle_in_transaction_session_timeout``
releases the locks of a transaction whose client vanished. They are passed as
``options`` at connection time, after any ``options`` the URL already has.
"""

from __future__ import annotations

import asyncio
import math
import os
import socket
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing, suppress
from types import TracebackType
from typing import Any, cast

import psycopg
from psycopg import AsyncConnection, AsyncCursor, AsyncRawCursor, conninfo

from reversi_core.errors import EffectUncertainError, ReversiError, ToolError
from reversi_core.redact import scrub

from ._sql import Statement
from ._values import bind, bind_all, to_json

__all__ = [
    "LOGIN_REFUSALS",
    "QueryResult",
    "Session",
    "StatementLog",
    "connection_string",
    "grace",
    "login_refusal",
    "url_problem",
]

StatementLog = Callable[[str, tuple[Any, ...]], None]
"""Called with ``(sql_text, params)`` right before each statement is sent."""

APPLICATION_NAME = "reversi-connector-postgres"

QueryResult = tuple[list[str], list[list[Any]], bool]
"""``(column names, rows, truncated)`` from :meth:`Session.select`."""


def grace(timeout: float) -> float:
    """Seconds the client waits beyond ``timeout`` for the server's own timeout to answer."""
    return min(5.0, max(0.5, timeout / 2))


def connection_string(url: str, timeout: float) -> str:
    """The libpq connection string for one call: ``url`` plus timeouts and pinned settings.

    ``url`` is a ``postgresql://`` URI or a ``key=value`` string
    (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING).
    Raises ``psycopg.ProgrammingError`` when it cannot be parsed.
    """
    params = conninfo.conninfo_to_dict(url)
    millis = max(1, int(timeout * 1000))
    idle = max(millis * 2, 60_000)
    ours = (
        f"-c statement_timeout={millis} -c idle_in_transaction_session_timeout={idle} "
        "-c DateStyle=ISO,YMD -c IntervalStyle=postgres -c TimeZone=UTC "
        "-c bytea_output=hex -c extra_float_digits=1"
    )
    given = str(params.get("options") or "").strip()
    params["options"] = f"{given} {ours}".strip()
    params["connect_timeout"] = str(max(2, math.ceil(timeout)))
    params.setdefault("application_name", APPLICATION_NAME)
    return conninfo.make_conninfo("", **params)


_URL_NAME = "POSTGRES_URL"

URI_SCHEMES = ("postgresql://", "postgres://")
"""The prefixes by which libpq tells a URI from a ``key=value`` string (case matters)."""

PERCENT_ENCODING = (
    "percent-encode the user name and password: '@' as %40, '/' as %2F, '%' as %25 "
    "(and ':' in the user name as %3A)"
)
"""The fix, for the messages that refuse a URL (none of which quotes it)."""


def url_problem(url: str) -> str | None:
    """Why libpq would read ``url`` so that part of its password may end up in an error.

    ``None`` when there is no such problem. The answer never quotes ``url``, so it can
    go into any error message. In a URI, libpq ends the user name and password at the
    first ``@`` (or, when a ``/`` comes before any ``@``, reads no user name or password
    at all: ``user:pass`` becomes the host and port). Whatever of an unencoded password
    lies past that point is read as the host, port or database name, which libpq and
    the server quote in their errors (``failed to resolve host '...'``), and it is not
    registered as a secret because libpq never called it the password. So a URI may
    hold one ``@``, the one that ends the user name and password; any other, and a port
    that is not a number (a ``/`` in the password), is refused. The ``key=value`` form
    has no such ambiguity: a value with spaces is quoted (``password='a b'``), and
    anything libpq cannot parse is refused without being quoted anyway.
    """
    prefix = next((p for p in URI_SCHEMES if url.startswith(p)), None)
    if prefix is not None:
        rest = url[len(prefix) :]
        end = next((i for i, c in enumerate(rest) if c in "@/"), len(rest))
        separator = end if end < len(rest) and rest[end] == "@" else -1
        if any(c == "@" and i != separator for i, c in enumerate(rest)):
            return (
                f"{_URL_NAME} has an '@' other than the one that ends the user name and "
                "password: libpq would read part of them as the host, port or database name, "
                f"which its errors quote; {PERCENT_ENCODING}, and any other '@' in the URL as %40"
            )
    try:
        port = conninfo.conninfo_to_dict(url).get("port")
    except psycopg.Error:
        return None  # unparsable: refused by whoever parses it, without quoting it
    if port is not None and not all(_is_number(p) for p in str(port).split(",") if p):
        return (
            f"{_URL_NAME} gives a port that is not a number; when the password holds a '/', "
            f"libpq reads the user name and password as a host and port: {PERCENT_ENCODING}"
        )
    return None


def _is_number(text: str) -> bool:
    text = text.strip()
    return text.isascii() and text.isdigit()


def _one_line(text: str) -> str:
    return " ".join(scrub(text).split())


LOGIN_REFUSALS: tuple[tuple[str, str], ...] = (
    ("password authentication failed for user", "28P01"),
    ("authentication failed for user", "28000"),
    ("no pg_hba.conf entry for", "28000"),
    ("pg_hba.conf rejects connection", "28000"),
    ("is not permitted to log in", "28000"),
    ("too many connections for role", "53300"),
    ("too many connections for database", "53300"),
    ("sorry, too many clients already", "53300"),
    ("remaining connection slots are reserved", "53300"),
    ("the database system is starting up", "57P03"),
    ("the database system is shutting down", "57P03"),
    ("the database system is in recovery mode", "57P03"),
    ("the database system is not yet accepting connections", "57P03"),
    ("the database system is not accepting connections", "57P03"),
    ("permission denied for database", "42501"),
    ("is not currently accepting connections", "55000"),
)
"""The server's refusals of a login, by the start of their message, and their SQLSTATE.

A server that refuses a connection sends an ErrorResponse carrying the SQLSTATE
(https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-START-UP), but
libpq reports a failed connection as text only and psycopg exposes no SQLSTATE for it
(``exc.sqlstate`` is ``None``). These are the messages PostgreSQL sends for its
login refusals (``src/backend/libpq/auth.c``, ``src/backend/utils/init/postinit.c``,
the postmaster), in English, with the codes of
https://www.postgresql.org/docs/current/errcodes-appendix.html; more specific first.
A server whose ``lc_messages`` is not English gives none of them, and the error keeps
the code ``connect``.
"""


def login_refusal(message: str) -> str | None:
    """The SQLSTATE of the server's refusal quoted in a failed connection's ``message``, if known."""
    for text, sqlstate in LOGIN_REFUSALS:
        if text in message:
            return sqlstate
    return None


class Session:
    """A connection for one call of ``tool``: use as ``async with Session(...) as s``.

    ``writes`` says whether the call may change data: for such a call, a connection lost
    or given up on after :meth:`commit` sent ``COMMIT`` raises ``EffectUncertainError``;
    before that (and always for reads) a ``ToolError`` with code ``connection_lost`` or
    ``timeout``. A server error raises ``ToolError`` with the SQLSTATE as its code.
    Opening raises ``ToolError`` with code ``connect``, or with the SQLSTATE when the
    server refused the login in words :data:`LOGIN_REFUSALS` knows (``28P01`` for a wrong
    password, ``53300`` for too many connections...).
    """

    def __init__(
        self,
        url: str,
        *,
        tool: str,
        timeout: float,
        writes: bool,
        log: StatementLog | None = None,
    ) -> None:
        self._url = url
        self._tool = tool
        self._timeout = timeout
        self._writes = writes
        self._log = log
        self._conn: AsyncConnection[Any] | None = None
        self._deadline = time.monotonic() + timeout + grace(timeout)
        self._watchdog: asyncio.TimerHandle | None = None
        self._expired = False
        self._commit_sent = False
        self._in_transaction = False

    # -- opening and closing ---------------------------------------------------------

    async def __aenter__(self) -> Session:
        problem = url_problem(self._url)
        if problem is not None:
            raise ToolError(f"{self._tool}: {problem}; nothing was sent", code="connect")
        try:
            target = connection_string(self._url, self._timeout)
        except psycopg.Error:
            raise ToolError(
                f"{self._tool}: POSTGRES_URL is not a valid connection URI or key=value string",
                code="connect",
            ) from None
        try:
            async with asyncio.timeout(max(0.0, self._deadline - time.monotonic())):
                self._conn = await AsyncConnection.connect(
                    target, autocommit=True, prepare_threshold=None
                )
        except TimeoutError:
            raise ToolError(
                f"{self._tool}: could not connect to PostgreSQL within {self._timeout:g} s; "
                "nothing was sent",
                code="connect",
            ) from None
        except psycopg.Error as exc:
            sqlstate = exc.sqlstate or login_refusal(str(exc))
            state = f" (SQLSTATE {sqlstate})" if sqlstate else ""
            raise ToolError(
                f"{self._tool}: could not connect to PostgreSQL{state}: {_one_line(str(exc))}; "
                "nothing was sent",
                code=sqlstate or "connect",
            ) from None
        except OSError as exc:
            raise ToolError(
                f"{self._tool}: could not connect to PostgreSQL: {_one_line(str(exc))}; "
                "nothing was sent",
                code="connect",
            ) from None
        loop = asyncio.get_running_loop()
        self._watchdog = loop.call_at(
            loop.time() + max(0.0, self._deadline - time.monotonic()), self._expire
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._conn is not None:
            with suppress(psycopg.Error, OSError):  # a broken connection: nothing left to do
                await self._conn.close()

    def _expire(self) -> None:
        """The deadline passed: shut the socket down so the pending call fails now."""
        self._expired = True
        conn = self._conn
        if conn is None or conn.closed:
            return
        try:
            fd = conn.pgconn.socket
            sock = socket.socket(fileno=os.dup(fd))
        except (psycopg.Error, OSError):
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            sock.close()

    @property
    def connection(self) -> AsyncConnection[Any]:
        """The open connection (only inside the ``async with`` block)."""
        if self._conn is None:
            raise RuntimeError("the session is not open")
        return self._conn

    # -- sending -------------------------------------------------------------------------

    def _record(self, text: str, params: Sequence[Any]) -> None:
        if self._log is not None:
            self._log(text, tuple(params))

    async def begin(self, read_only: bool = False) -> None:
        """Send ``BEGIN`` (or ``BEGIN READ ONLY``)."""
        await self.simple("BEGIN READ ONLY" if read_only else "BEGIN")
        self._in_transaction = True

    async def simple(self, text: str) -> str:
        """Send a parameterless statement (``BEGIN``, ``COMMIT``...); return its status message."""
        self._record(text, ())
        cur = self.connection.cursor()
        try:
            await cur.execute(text.encode())
        except (psycopg.Error, OSError) as exc:
            raise self._failure(exc) from None
        return cur.statusmessage or ""

    async def execute(self, statement: Statement) -> AsyncCursor[Any]:
        """Send a composed statement with its values bound; return the cursor for its rows."""
        self._record(statement.text(), statement.params)
        cur = self.connection.cursor()
        try:
            await cur.execute(statement.query, bind_all(statement.params))
        except (psycopg.Error, OSError) as exc:
            raise self._failure(exc) from None
        return cur

    async def fetchall(self, cur: AsyncCursor[Any]) -> list[tuple[Any, ...]]:
        """All rows of the statement just executed on ``cur``."""
        try:
            return list(await cur.fetchall())
        except (psycopg.Error, OSError) as exc:
            raise self._failure(exc) from None

    async def select(self, text: str, params: Sequence[Any], limit: int) -> QueryResult:
        """Send the agent's ``text`` as it is (``$n`` placeholders) and read up to ``limit`` rows.

        Uses a raw cursor in single-row mode (extended protocol: the server refuses more
        than one statement). Returns ``(columns, rows, truncated)``, rows as JSON lists.
        """
        self._record(text, tuple(params))
        cur = AsyncRawCursor(self.connection)
        rows: list[list[Any]] = []
        truncated = False
        try:
            stream = cast(
                AsyncGenerator[Any, None], cur.stream(text.encode(), [bind(p) for p in params])
            )
            async with aclosing(stream):
                async for row in stream:
                    if len(rows) == limit:
                        truncated = True
                        break
                    rows.append([to_json(v) for v in row])
        except (psycopg.Error, OSError) as exc:
            raise self._failure(exc) from None
        columns = [c.name for c in cur.description or ()]
        return columns, rows, truncated

    async def commit(self) -> None:
        """Send ``COMMIT``; from here on a lost connection leaves a write uncertain.

        Raises ``ToolError`` (code ``rolled_back``) when the server answers ``ROLLBACK``
        (the transaction had failed), or the mapped error.
        """
        self._commit_sent = True
        self._in_transaction = False
        status = await self.simple("COMMIT")
        if status.upper() != "COMMIT":
            raise ToolError(
                f"{self._tool}: the server rolled the transaction back instead of committing "
                f"(it answered {status!r}); nothing was changed",
                code="rolled_back",
            )

    async def rollback(self) -> None:
        """Send ``ROLLBACK`` if a transaction is open and the connection still works.

        Never raises: closing the connection rolls the transaction back anyway.
        """
        conn = self._conn
        if not self._in_transaction or conn is None or conn.broken or conn.closed:
            return
        self._in_transaction = False
        self._record("ROLLBACK", ())
        with suppress(psycopg.Error, OSError):
            await conn.cursor().execute(b"ROLLBACK")

    # -- errors ----------------------------------------------------------------------------

    def _lost(self) -> bool:
        conn = self._conn
        return conn is None or conn.broken or conn.closed

    def _failure(self, exc: BaseException) -> ReversiError:
        """The error to raise for ``exc`` raised while talking to the server."""
        if isinstance(exc, psycopg.Error) and exc.sqlstate and not self._lost():
            return self.server_error(exc)
        if isinstance(exc, psycopg.DataError | psycopg.ProgrammingError) and not self._lost():
            # refused by psycopg while adapting a value: the statement was never sent
            tail = "the transaction was rolled back" if self._writes else "nothing was changed"
            return ToolError(
                f"{self._tool}: a value cannot be sent to PostgreSQL: {_one_line(str(exc))}; {tail}",
                code="invalid_value",
            )
        if self._expired:
            what = (
                f"PostgreSQL did not answer within {self._timeout:g} s "
                f"(+{grace(self._timeout):g} s grace)"
            )
            code = "timeout"
        else:
            what = f"the connection to PostgreSQL was lost ({_one_line(str(exc)) or type(exc).__name__})"
            code = "connection_lost"
        if self._writes and self._commit_sent:
            return EffectUncertainError(
                f"{self._tool}: {what} after COMMIT was sent: the change may or may not have "
                "been committed; check the row and resolve the step"
            )
        tail = "nothing was committed" if self._writes else "nothing was changed"
        return ToolError(f"{self._tool}: {what}; {tail}", code=code)

    def server_error(self, exc: psycopg.Error) -> ToolError:
        """``ToolError("Postgres error SQLSTATE: message", code=SQLSTATE)`` for a server error."""
        diag = exc.diag
        message = diag.message_primary or str(exc)
        detail = f" ({diag.message_detail})" if diag.message_detail else ""
        if exc.sqlstate == "57014" and "statement timeout" in message:
            message += f" (statement_timeout is {self._timeout:g} s)"
        tail = "the transaction was rolled back" if self._writes else "nothing was changed"
        return ToolError(
            f"Postgres error {exc.sqlstate}: {_one_line(message + detail)}; {tail}",
            code=exc.sqlstate,
        )
