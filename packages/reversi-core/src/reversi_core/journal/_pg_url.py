"""A ``postgresql://`` journal URL read strictly, by its text, before libpq is given it.

libpq reads the user part of a URL up to the first ``@`` that comes before any ``/``
(https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS). So
a password holding an unencoded ``/`` (``user:Rev/SECRET@host/db``) is not a password
to libpq at all: ``user`` becomes the host, ``Rev`` its port and ``SECRET@host/db`` the
database, and a message naming the journal by libpq's parts would print the password.
Nothing here trusts that reading:

- **The password rule** (:func:`password_text`): a URL whose text holds an ``@`` after
  ``://`` with a ``:`` anywhere before the last such ``@`` holds a password: the text
  from that ``:`` to the last ``@``, whatever it holds (``/``, ``?``, ``#``, ``@``). It
  is registered with the redactor at once, and ``--journal`` refuses it.
- **The strict reading** (:func:`split_url`): one ``user[:password]@`` at most, holding no
  unencoded ``/`` or ``@``; hosts (``host``, ``[v6]``) with ports that are numbers;
  valid ``%XX`` escapes. Anything else is refused with :class:`UrlError`, whose message
  repeats no part of the URL.
- :func:`~reversi_core.journal._pg_conn.parse_url` then checks that libpq reads the same
  host, port, database, user and password; only then is a name built from them shown.
- :func:`mask` hides, in a driver's message, every run of characters (4 or more, or the
  whole password when it is shorter) that comes from a password read here.

Needs no psycopg.
"""

from __future__ import annotations

import contextlib
import re
import threading
import urllib.parse
from dataclasses import dataclass, field

from ..redact import REDACTED, register_secret

__all__ = ["PgUrl", "UrlError", "holds_password", "mask", "password_text", "split_url"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})|%00")
_PORT = re.compile(r"[0-9]{1,5}")
_PASSWORD_KEYS = frozenset({"password", "sslpassword"})

_ENCODE = (
    "percent-encode '/' as %2F, '@' as %40, ':' as %3A in the user name and password "
    "(https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS)"
)
_NOT_SHOWN = "the URL is not repeated here: it may hold a password"


class UrlError(ValueError):
    """A journal URL that is refused; the message repeats no part of it."""


@dataclass(frozen=True)
class PgUrl:
    """A ``postgresql://`` URL as its text says (percent-decoded parts)."""

    scheme: str
    user: str | None = None
    password: str | None = None
    hosts: tuple[str, ...] = ()
    ports: tuple[str, ...] = ()
    dbname: str | None = None
    query: dict[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, str]:
        """The libpq parameters the text names: ``host``, ``port`` (comma-separated for
        several hosts), ``dbname``, ``user``, ``password``, then the query's, which win."""
        out: dict[str, str] = {}
        if self.user:
            out["user"] = self.user
        if self.password is not None:
            out["password"] = self.password
        if self.dbname:
            out["dbname"] = self.dbname
        if any(self.hosts):
            out["host"] = ",".join(self.hosts)
        if any(self.ports):
            out["port"] = ",".join(self.ports)
        out.update(self.query)
        return out


_lock = threading.Lock()
_hidden: set[str] = set()


def _hide(text: str | None) -> None:
    """Register ``text`` with the redactor and for :func:`mask`."""
    if not text:
        return
    register_secret(text)
    with _lock:
        _hidden.add(text)


def mask(text: str) -> str:
    """``text`` with every run of 4 characters or more (or a whole password shorter than
    that) that is part of a password read by :func:`split_url` replaced by ``[REDACTED]``.

    For a driver's message, which may quote a piece of the URL as it read it.
    """
    with _lock:
        hidden = sorted(_hidden, key=len, reverse=True)
    for secret in hidden:
        least = min(4, len(secret))
        out: list[str] = []
        i = 0
        while i < len(text):
            j = i
            while j < len(text) and text[i : j + 1] in secret:
                j += 1
            if j - i >= least:
                out.append(REDACTED)
                i = j
            else:
                out.append(text[i])
                i += 1
        text = "".join(out)
    return text


def _rest(url: str) -> str | None:
    found = _URL.match(url)
    return url[found.end() :] if found else None


def password_text(url: str) -> str | None:
    """The password of ``url`` by the password rule (module docstring), as written: the text
    from the first ``:`` to the last ``@`` after ``://``; ``None`` when there is none (an
    empty one, ``user:@host``, is ``None`` too)."""
    rest = _rest(url)
    if rest is None:
        return None
    at = rest.rfind("@")
    colon = rest.find(":", 0, at) if at >= 0 else -1
    if colon < 0:
        return None
    return rest[colon + 1 : at] or None


def _query_passwords(url: str) -> list[str]:
    """Values of ``password`` and ``sslpassword`` anywhere after a ``?`` or ``&``, as written."""
    found = []
    for part in re.split(r"[?&]", _rest(url) or "")[1:]:
        key, _, value = part.partition("=")
        if urllib.parse.unquote(key).strip().lower() in _PASSWORD_KEYS:
            found.append(value)
    return found


def holds_password(url: str) -> bool:
    """Whether ``url`` carries a password: by the password rule, or as a ``password`` or
    ``sslpassword`` query parameter (key in any case or encoding)."""
    return password_text(url) is not None or any(v for v in _query_passwords(url))


def _decode(text: str, what: str) -> str:
    if _BAD_ESCAPE.search(text):
        raise UrlError(
            f"the PostgreSQL journal URL has a malformed %-escape in its {what} ({_NOT_SHOWN})"
        )
    return urllib.parse.unquote(text, errors="strict")


def split_url(url: str) -> PgUrl:
    """``url`` read strictly (module docstring); every password in it is registered with
    the redactor first, whatever follows.

    Raises :class:`UrlError` (repeating no part of ``url``) for a scheme other than
    ``postgresql://`` or ``postgres://`` in lower case, a user part holding an unencoded
    ``/`` or ``@`` (or an ``@`` later in the URL, after a ``:``), a host holding ``@``, a
    port that is not a number from 1 to 65535, an unclosed ``[`` IPv6 address, a query
    parameter without ``=``, or a malformed ``%`` escape.
    """
    secret = password_text(url)
    _hide(secret)
    if secret:
        with contextlib.suppress(UnicodeDecodeError):
            _hide(urllib.parse.unquote(secret, errors="strict"))
    for value in _query_passwords(url):
        _hide(value)
        _hide(urllib.parse.unquote(value))
    found = _URL.match(url)
    if found is None or found.group(1) not in ("postgresql", "postgres"):
        raise UrlError(
            "a PostgreSQL journal URL starts with postgresql:// or postgres://, in lower case "
            f"({_NOT_SHOWN})"
        )
    rest = url[found.end() :]
    user = password = None
    at = rest.rfind("@")
    if at >= 0 and (secret is not None or "/" not in rest[:at]):
        userinfo = rest[:at]
        if "/" in userinfo or "@" in userinfo:
            raise UrlError(
                "the PostgreSQL journal URL's user part holds an unencoded '/' or '@', or an "
                "'@' follows a ':' later in the URL: libpq would not read it as written, and "
                f"it may hold a password ({_NOT_SHOWN}); {_ENCODE}"
            )
        name, colon, word = userinfo.partition(":")
        user = _decode(name, "user name")
        password = _decode(word, "password") if colon else None
        rest = rest[at + 1 :]
    end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    hosts: list[str] = []
    ports: list[str] = []
    for item in authority.split(",") if authority else []:
        if item.startswith("["):
            close = item.find("]")
            if close < 0:
                raise UrlError(
                    f"the PostgreSQL journal URL has an IPv6 host whose '[' is not closed "
                    f"({_NOT_SHOWN})"
                )
            host, after = item[1:close], item[close + 1 :]
            if after and not after.startswith(":"):
                raise UrlError(
                    "the PostgreSQL journal URL has text after an IPv6 host's ']' that is not "
                    f"':PORT' ({_NOT_SHOWN})"
                )
            port = after[1:]
        else:
            host, _, port = item.partition(":")
        if "@" in host:
            raise UrlError(f"the PostgreSQL journal URL has an '@' in its host ({_NOT_SHOWN})")
        if port and not (_PORT.fullmatch(port) and 0 < int(port) < 65536):
            raise UrlError(
                "the PostgreSQL journal URL has a port that is not a number from 1 to 65535 "
                f"({_NOT_SHOWN}); if its password holds a '/', {_ENCODE}"
            )
        hosts.append(_decode(host, "host"))
        ports.append(port)
    path, _, query = tail.partition("?")
    dbname = _decode(path[1:], "database name") if path else None
    params: dict[str, str] = {}
    for part in query.split("&") if query else []:
        key, eq, value = part.partition("=")
        if not eq:
            raise UrlError(
                f"the PostgreSQL journal URL has a query parameter without '=' ({_NOT_SHOWN})"
            )
        params[_decode(key, "query")] = _decode(value, "query")
    return PgUrl(found.group(1), user, password, tuple(hosts), tuple(ports), dbname, params)
