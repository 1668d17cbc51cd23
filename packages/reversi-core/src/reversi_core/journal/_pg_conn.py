"""The PostgreSQL journal's connection: the URL, psycopg, errors, and advisory lock keys.

psycopg (https://www.psycopg.org/psycopg3/docs/) is imported only when a PostgreSQL
journal is opened, so that the SQLite journal needs none of it; it comes with the
``postgresql`` extra (``pip install 'reversi-core[postgresql]'``).

A journal URL may carry a password (``postgresql://user:secret@host/db`` or
``?password=secret``). Nothing here repeats it: the URL is read strictly by its text
first (``_pg_url.py``), which registers every password it may hold with the redactor
and refuses a URL libpq would read otherwise than it is written (a password holding an
unencoded ``/`` or ``@``); libpq must then read the same host, port, database, user and
password, or the URL is refused. Every message names the journal by :func:`describe`
(scheme, host, port and database, nothing else), a URL libpq cannot parse is refused
without quoting libpq's complaint, and a driver's message is cleared of every piece of
a password (:func:`reason`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, TypeVar

from ..errors import JournalError
from ..redact import scrub
from ._pg_url import UrlError, mask, split_url

__all__ = [
    "CONNECT_TIMEOUT",
    "EXTRA",
    "advisory_key",
    "connect",
    "describe",
    "import_psycopg",
    "parse_url",
    "pg_errors",
    "reason",
]

EXTRA = "reversi-core[postgresql]"
"""What to install for the PostgreSQL journal."""

CONNECT_TIMEOUT = 10
"""Seconds a connection attempt may take when the URL does not say (libpq's ``connect_timeout``)."""

_URI_DOCS = "https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS"


def import_psycopg() -> ModuleType:
    """psycopg, or :class:`JournalError` saying which extra to install."""
    try:
        import psycopg
    except ImportError as exc:
        raise JournalError(
            f"the PostgreSQL journal needs psycopg 3, which is not installed or cannot load "
            f"({exc}); install it with: pip install '{EXTRA}'"
        ) from None
    return psycopg


_CHECKED = ("host", "hostaddr", "port", "dbname", "user", "password")
"""The parameters libpq must read as the URL's text says before a message may name them."""


def parse_url(url: str) -> dict[str, Any]:
    """The libpq parameters of ``url``, once its text was read strictly
    (:func:`~._pg_url.split_url`, which registers its passwords with the redactor) and
    libpq was found to read the same :data:`_CHECKED` parameters.

    Raises :class:`JournalError`, without quoting the URL, when it is refused by the strict
    reading, libpq cannot parse it, or libpq reads it otherwise.
    """
    try:
        written = split_url(url).params()
    except UrlError as exc:
        raise JournalError(str(exc)) from None
    psycopg = import_psycopg()
    try:
        params: dict[str, Any] = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        raise JournalError(
            "the PostgreSQL journal URL cannot be parsed (it is not repeated here: it may "
            f"hold a password); see {_URI_DOCS}"
        ) from None
    if any(written.get(k) != (None if params.get(k) is None else str(params[k])) for k in _CHECKED):
        raise JournalError(
            "libpq reads the PostgreSQL journal URL otherwise than it is written (its host, "
            "port, database, user or password), so it is not used (it is not repeated "
            f"here: it may hold a password); percent-encode what is not a delimiter: {_URI_DOCS}"
        )
    return params


def describe(params: dict[str, Any]) -> str:
    """``postgresql://HOST:PORT/DB``: the journal named for messages, with no user or password."""
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    port = params.get("port")
    dbname = params.get("dbname") or ""
    where = f"{host}:{port}" if port else host
    if "/" in where:  # a Unix socket directory
        where = f"[{where}]"
    return scrub(f"postgresql://{where}/{dbname}")


def reason(exc: BaseException) -> str:
    """The first line of a driver's error, scrubbed of registered secrets and of every
    piece of a journal URL's password (:func:`~._pg_url.mask`)."""
    text = str(exc).strip().splitlines()
    first = text[0].strip() if text else type(exc).__name__
    return mask(scrub(first))


def advisory_key(*parts: str) -> int:
    """A signed 64-bit key for ``pg_advisory_lock`` naming ``parts`` (namespaced to Reversi).

    https://www.postgresql.org/docs/current/functions-admin.html#FUNCTIONS-ADVISORY-LOCKS
    """
    digest = hashlib.blake2b("\0".join(("reversi-journal", *parts)).encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def connect(
    url: str,
    params: dict[str, Any],
    location: str,
    *,
    owner_key: int,
    lock_timeout: float,
    synchronous: bool,
    read_only: bool = False,
) -> tuple[Any, str]:
    """A new autocommit connection to ``url`` and the schema it writes to (``current_schema()``).

    The connection holds a shared session advisory lock on ``owner_key`` (this process's
    owner, ``_pg_owners.py``) until it closes, waits ``lock_timeout`` seconds at most for
    a row or lock another session holds, and under ``synchronous`` commits with
    ``synchronous_commit`` on whatever the server's default; under ``read_only`` every
    transaction of the session is read-only (``default_transaction_read_only``), so that
    a write fails rather than lands. ``connect_timeout`` is
    :data:`CONNECT_TIMEOUT` unless the URL says. Raises :class:`JournalError` naming
    ``location`` and libpq's reason, never the URL
    (https://www.postgresql.org/docs/current/runtime-config-client.html).
    """
    psycopg = import_psycopg()
    extra: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in params:
        extra["connect_timeout"] = CONNECT_TIMEOUT
    try:
        conn = psycopg.connect(url, **extra)
    except psycopg.Error as exc:
        raise JournalError(
            f"cannot connect to the PostgreSQL journal at {location}: {reason(exc)}"
        ) from None
    try:
        conn.execute(f"SET lock_timeout = {int(lock_timeout * 1000)}")
        if synchronous:
            conn.execute("SET synchronous_commit TO on")
        if read_only:
            conn.execute("SET default_transaction_read_only TO on")
        conn.execute("SELECT pg_advisory_lock_shared(%s)", [owner_key])
        schema = conn.execute("SELECT current_schema()").fetchone()[0] or ""
    except psycopg.Error as exc:
        conn.close()
        raise JournalError(f"journal {location}: {reason(exc)}") from None
    return conn, str(schema)


_C = TypeVar("_C", bound=type)


def pg_errors(methods: Iterable[str]) -> Callable[[_C], _C]:
    """A class decorator: ``methods`` raise ``JournalError`` where psycopg raised its own error.

    The message names the journal (the instance's ``location``), the SQLSTATE and the
    server's first line, scrubbed. A lost connection is said so; the journal connects
    again on its next use (the instance's ``_lost()``).
    """

    def wrap(method: Any) -> Any:
        @functools.wraps(method)
        def inner(self: Any, *args: Any, **kwargs: Any) -> Any:
            psycopg = self._psycopg
            try:
                return method(self, *args, **kwargs)
            except psycopg.Error as exc:
                if self._lost():
                    raise JournalError(
                        f"journal {self.location}: the connection to the server was lost "
                        f"({reason(exc)}); what was not committed was not written, and the "
                        "journal connects again on its next use"
                    ) from None
                code = f" (SQLSTATE {exc.sqlstate})" if getattr(exc, "sqlstate", None) else ""
                raise JournalError(
                    f"journal {self.location}: {type(exc).__name__}{code}: {reason(exc)}"
                ) from None

        return inner

    def decorate(cls: _C) -> _C:
        for name in methods:
            setattr(cls, name, wrap(getattr(cls, name)))
        return cls

    return decorate
