"""One factory for every journal: :func:`open_journal` opens the store a location names."""

from __future__ import annotations

import os
import re

from ..errors import ConfigurationError, JournalError
from . import _pg_url
from ._base import Durability, Journal, resolve_data_dir

__all__ = [
    "DATA_ENV",
    "JOURNAL_ENV",
    "LIBPQ_KEYWORDS",
    "POSTGRES_SCHEMES",
    "describe_location",
    "holds_password",
    "is_conninfo",
    "is_url",
    "open_journal",
    "resolve_location",
    "scheme_of",
]

JOURNAL_ENV = "REVERSI_JOURNAL"
"""The environment variable naming the journal: a ``postgresql://`` URL or a data directory."""

DATA_ENV = "REVERSI_DATA"
"""The environment variable naming the data directory (the SQLite journal's)."""

POSTGRES_SCHEMES = ("postgresql", "postgres")
"""URL schemes of the PostgreSQL journal (libpq takes both)."""

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

LIBPQ_KEYWORDS = frozenset(
    [
        "application_name",
        "channel_binding",
        "client_encoding",
        "connect_timeout",
        "dbname",
        "fallback_application_name",
        "gssdelegation",
        "gssencmode",
        "gsslib",
        "host",
        "hostaddr",
        "keepalives",
        "keepalives_count",
        "keepalives_idle",
        "keepalives_interval",
        "krbsrvname",
        "load_balance_hosts",
        "max_protocol_version",
        "min_protocol_version",
        "oauth_client_id",
        "oauth_client_secret",
        "oauth_issuer",
        "oauth_scope",
        "options",
        "passfile",
        "password",
        "port",
        "replication",
        "require_auth",
        "requirepeer",
        "requiressl",
        "scram_client_key",
        "scram_server_key",
        "service",
        "ssl_max_protocol_version",
        "ssl_min_protocol_version",
        "sslcert",
        "sslcertmode",
        "sslcompression",
        "sslcrl",
        "sslcrldir",
        "sslkey",
        "sslkeylogfile",
        "sslmode",
        "sslnegotiation",
        "sslpassword",
        "sslrootcert",
        "sslsni",
        "target_session_attrs",
        "tcp_user_timeout",
        "user",
    ]
)
"""libpq's connection parameter key words (PostgreSQL 18:
https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-PARAMKEYWORDS)."""

# a key word of a key=value connection string: at the start or after white space
_KEY = re.compile(r"(?:^|\s)([A-Za-z_]+)\s*=")

_CONNINFO_REFUSED = (
    "the journal location looks like a libpq key=value connection string, which is not "
    "taken (it would be read as a directory name, and it may hold a password: it is not "
    "repeated here); give a postgresql:// URL, in $REVERSI_JOURNAL"
)


def open_journal(
    location: str | os.PathLike[str] | None = None,
    *,
    durability: Durability | str = Durability.PROCESS,
    create: bool = True,
    busy_timeout: float = 30.0,
    read_only: bool = False,
) -> Journal:
    """Open the journal at ``location`` and return it (the caller closes it).

    ``location`` is a ``postgresql://`` (or ``postgres://``) URL, which names the shared
    PostgreSQL journal (:class:`~reversi_core.journal.postgres.PostgresJournal`, needs
    ``reversi-core[postgresql]``), or a data directory, which holds the embedded SQLite
    journal, or ``None`` for :func:`resolve_location` (``$REVERSI_JOURNAL``, else
    ``$REVERSI_DATA``, else ``./reversi-data``). ``create`` makes a missing journal (a
    data directory and its file; a PostgreSQL schema's tables); ``busy_timeout`` is how
    long, in seconds, a write waits for another process's. ``read_only`` opens an
    existing journal to read it only (``reversi runs``, ``show``, ``rollback
    --dry-run``): no migration, no crash recovery, nothing written, and every write
    raises :class:`~reversi_core.errors.JournalError`; ``create`` is then not used, and
    a journal of an older schema is refused with
    :class:`~reversi_core.errors.JournalVersionError` naming the commands that migrate it.

    Raises :class:`~reversi_core.errors.JournalError` when the journal cannot be opened
    (the message never repeats a URL, which may carry a password), and
    :class:`~reversi_core.errors.JournalVersionError` when it was written by a newer
    schema.
    """
    text = os.fspath(location) if location is not None else resolve_location()
    if is_url(text):
        scheme = scheme_of(text)
        if scheme in POSTGRES_SCHEMES:
            from ._pg_conn import import_psycopg

            import_psycopg()  # names the extra to install when psycopg is missing
            from .postgres import PostgresJournal

            return PostgresJournal.open(
                text,
                durability=durability,
                create=create,
                busy_timeout=busy_timeout,
                read_only=read_only,
            )
        raise JournalError(_unknown_scheme(scheme))
    if is_conninfo(text):
        raise JournalError(_CONNINFO_REFUSED)
    from .sqlite import SQLiteJournal

    return SQLiteJournal.open(
        resolve_data_dir(text),
        durability=durability,
        create=create,
        busy_timeout=busy_timeout,
        read_only=read_only,
    )


def _unknown_scheme(scheme: str) -> str:
    hint = ""
    if scheme.split("+", 1)[0] in POSTGRES_SCHEMES:
        hint = " (a driver suffix such as +psycopg is SQLAlchemy's: write postgresql://)"
    return (
        f"a journal location with the scheme {scheme!r} is not known{hint}; give a "
        "postgresql:// URL or a data directory"
    )


def is_url(text: str) -> bool:
    """Whether a journal location is a URL (``scheme://...``) rather than a directory."""
    return _URL.match(text) is not None


def is_conninfo(text: str) -> bool:
    """Whether ``text`` holds a libpq ``key=value`` parameter anywhere (``sslmode=require
    host=db``, ``./data password=x``): a key word of :data:`LIBPQ_KEYWORDS` followed by
    ``=``, at the start or after white space, in any case. Such a location is never taken
    for a directory, nor shown."""
    return any(m.group(1).lower() in LIBPQ_KEYWORDS for m in _KEY.finditer(text))


def holds_password(location: str) -> bool:
    """Whether the ``postgresql://`` URL ``location`` carries a password: in its user part,
    by the text (an ``@`` after ``://`` with a ``:`` before it: ``user:secret@host``, even
    when the secret holds ``/``, ``?``, ``#`` or ``@``), or as a ``password`` or
    ``sslpassword`` query parameter
    (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS).
    ``False`` for anything else. Needs no psycopg."""
    if scheme_of(location) not in POSTGRES_SCHEMES:
        return False
    return _pg_url.holds_password(location)


def scheme_of(text: str) -> str:
    """The scheme of the URL ``text``, lower case (``""`` for a directory)."""
    found = _URL.match(text)
    return found.group(1).lower() if found else ""


def describe_location(location: str) -> str:
    """``location`` as messages may show it: a data directory as it is; a URL as
    ``scheme://HOST:PORT/DB``, without its user, password or options; a libpq
    ``key=value`` string (:func:`is_conninfo`) not at all, since it may hold a password."""
    if not is_url(location):
        if is_conninfo(location):
            return "a libpq key=value connection string (not shown: it may hold a password)"
        return location
    if scheme_of(location) in POSTGRES_SCHEMES:
        from ._pg_conn import describe

        try:  # the text's own parts, never libpq's reading of them
            return describe(_pg_url.split_url(location).params())
        except _pg_url.UrlError:
            return "a PostgreSQL journal (its URL is refused: it is not shown)"
    return f"a {scheme_of(location)}:// URL"


def resolve_location(
    journal: str | None = None,
    data: str | os.PathLike[str] | None = None,
    *,
    check_libpq: bool = True,
) -> str:
    """The journal to open, from a command's ``--journal`` and ``--data`` and the environment.

    ``journal`` (a ``postgresql://`` URL or a data directory) or ``data`` (a data
    directory) if given, else ``$REVERSI_JOURNAL``, else ``$REVERSI_DATA``, else
    ``./reversi-data``. Both options at once, or both variables set (and neither
    option given), is refused with :class:`~reversi_core.errors.ConfigurationError`
    naming them, never their values: they would name two journals, and guessing which
    one was meant could write a run where nobody looks for it. So is a libpq
    ``key=value`` string (:func:`is_conninfo`), which is not a directory, and a
    ``postgresql://`` URL the strict reading refuses (``_pg_url.split_url``: a password
    holding an unencoded ``/`` or ``@``, a port that is not a number, ...) or libpq
    cannot parse or reads otherwise, without repeating either, and a URL of any other
    scheme; the passwords such a URL may hold are registered with the redactor.
    ``check_libpq=False`` leaves libpq's reading to the open (psycopg is not imported
    here then: ``reversi-gateway`` starts its upstream first, and reports a journal
    that cannot be opened with the same status 2).
    """
    if journal and data:
        raise ConfigurationError(
            "--journal and --data both name the journal; give one (--journal takes a "
            "postgresql:// URL or a data directory, --data a data directory)"
        )
    env_journal = os.environ.get(JOURNAL_ENV)
    env_data = os.environ.get(DATA_ENV)
    if not (journal or data) and env_journal and env_data:
        raise ConfigurationError(
            f"${JOURNAL_ENV} and ${DATA_ENV} are both set and name the journal; unset one, "
            "or say which with --journal or --data"
        )
    location = journal or (os.fspath(data) if data else None) or env_journal
    location = location or str(resolve_data_dir(None))
    if not is_url(location) and is_conninfo(location):
        raise ConfigurationError(_CONNINFO_REFUSED)
    if is_url(location):
        if scheme_of(location) not in POSTGRES_SCHEMES:
            raise ConfigurationError(_unknown_scheme(scheme_of(location)))
        try:
            _pg_url.split_url(location)
        except _pg_url.UrlError as exc:
            raise ConfigurationError(str(exc)) from None
        if not check_libpq:
            return location
        from ._pg_conn import import_psycopg, parse_url

        try:
            import_psycopg()
        except JournalError:
            return location  # opening it says which extra to install (status 3)
        try:  # libpq's reading, which must match the text's
            parse_url(location)
        except JournalError as exc:
            raise ConfigurationError(str(exc)) from None
    return location
