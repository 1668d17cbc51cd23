"""Secret registry and scrubbing.

A connector registers each credential it holds with :func:`register_secret` as soon as
it reads it from the environment. Everything Reversi writes where a person or another
program can read it (error messages, journal entries, JSON results, logs) goes through
:func:`scrub` or :func:`scrub_json` first, which replace every registered secret, and
the common encodings of it (URL-quoted, base64 of ``user:secret`` basic credentials are
registered by the connector itself), with ``[REDACTED]``.
"""

from __future__ import annotations

import re
import shlex
import threading
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "REDACTED",
    "Redactor",
    "default_redactor",
    "register_secret",
    "scrub",
    "scrub_command",
    "scrub_json",
]

REDACTED = "[REDACTED]"

#: Secrets shorter than this are not registered: scrubbing a two-letter string would
#: mangle ordinary text while protecting nothing.
MIN_SECRET_LENGTH = 4


class Redactor:
    """A set of secrets and the scrubbing of text and JSON values against it.

    Thread-safe. Longer secrets are replaced first so that a secret containing another
    is never left half-visible.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: list[str] = []
        for secret in secrets:
            self.register(secret)

    def register(self, secret: str | None) -> None:
        """Add ``secret`` (and its URL-quoted forms) to the set; ``None`` or short values are ignored."""
        if not secret or len(secret) < MIN_SECRET_LENGTH:
            return
        forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
        with self._lock:
            for form in forms:
                if form not in self._secrets:
                    self._secrets.append(form)
            self._secrets.sort(key=len, reverse=True)

    def scrub(self, text: str) -> str:
        """Return ``text`` with every registered secret replaced by ``[REDACTED]``."""
        if not self._secrets:
            return text
        with self._lock:
            secrets = list(self._secrets)
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def scrub_bytes(self, data: bytes) -> bytes:
        """Return ``data`` with the UTF-8 bytes of every registered secret replaced by ``[REDACTED]``."""
        if not self._secrets:
            return data
        with self._lock:
            secrets = [s.encode("utf-8", "surrogatepass") for s in self._secrets]
        for secret in secrets:
            if secret in data:
                data = data.replace(secret, REDACTED.encode())
        return data

    def scrub_json(self, value: Any) -> Any:
        """Return a copy of a JSON value (dict, list, str, number, bool, None) with strings scrubbed.

        Keys are scrubbed as well as values. With no secret registered the value itself
        is returned (nothing to replace, so no copy is made).
        """
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub(str(k)): self.scrub_json(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub_json(v) for v in value]
        return value

    def __contains__(self, text: object) -> bool:
        """``text in redactor`` is true when ``text`` contains a registered secret."""
        if not isinstance(text, str):
            return False
        with self._lock:
            return any(secret in text for secret in self._secrets)


default_redactor = Redactor()
"""The process-wide redactor used by the engine, the journal and the command-line tools."""


def register_secret(secret: str | None) -> None:
    """Register ``secret`` with the process-wide redactor (see :class:`Redactor.register`)."""
    default_redactor.register(secret)


def scrub(text: str) -> str:
    """Scrub ``text`` with the process-wide redactor."""
    return default_redactor.scrub(text)


def scrub_json(value: Any) -> Any:
    """Scrub a JSON value with the process-wide redactor."""
    return default_redactor.scrub_json(value)


#: Words that make an option, a variable or a query parameter name a credential's
#: (``--api-key``, ``--token``, ``GITHUB_TOKEN=``, ``?access_token=``), matched in any case.
_SECRET_NAME = re.compile(
    r"(?i)(token|secret|passw(or)?d|pwd|api[-_]?key|access[-_]?key|private[-_]?key|"
    r"credential|auth(?:orization|entication)?(?![a-z])|bearer|cookie|signature|^key$)"
)
_ASSIGNMENT = re.compile(r"^(-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)=(.*)$", re.S)


def _secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name.lstrip("-")))


def _scrub_url(word: str) -> str:
    """``word`` with a URL's password (or lone user token) and credential query values hidden."""
    if "://" not in word:
        return word
    scheme, _, rest = word.partition("://")
    last_at = rest.rfind("@")
    first_colon = rest.find(":", 0, last_at) if last_at >= 0 else -1
    if first_colon >= 0 and any(c in rest[first_colon + 1 : last_at] for c in "/?#@"):
        # user:anything@ even when "anything" holds a delimiter, which urlsplit would cut
        # the authority at (postgresql://u:pa/ss@host): all of it up to the last "@" goes
        head, tail = rest[:first_colon], rest[last_at + 1 :]
        return _scrub_url(f"{scheme}://{head}:{REDACTED}@{tail}")
    try:
        parts = urllib.parse.urlsplit(word)
    except ValueError:
        return word
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        # user:password@ keeps the user; a lone userinfo (https://TOKEN@host) is the secret
        netloc = f"{user}:{REDACTED}@{host}" if colon else f"{REDACTED}@{host}"
    query = parts.query
    if query:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        if any(_secret_name(k) for k, _ in pairs):
            query = "&".join(
                f"{urllib.parse.quote(k, safe='')}="
                + (REDACTED if _secret_name(k) else urllib.parse.quote(v, safe=""))
                for k, v in pairs
            )
    if netloc == parts.netloc and query == parts.query:
        return word
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub_command(argv: Sequence[str]) -> str:
    """A command line, shell-quoted (:func:`shlex.join`), with what looks like a credential hidden.

    For showing an upstream server's command in a run's label, a message or a log:
    beside every registered secret (:func:`scrub`), it hides the value of an option
    whose name says it holds one (``--token X``, ``--api-key=X``, ``-p``-style short
    options are not guessed), of a ``NAME=value`` word whose name does
    (``GITHUB_TOKEN=...`` before a command, as ``env`` takes them), a URL's password
    (``postgresql://user:[REDACTED]@host/db``) or lone user token, and credential
    query parameters (``?access_token=[REDACTED]``). Credentials belong in the
    environment, where none of this is shown; this is a safety net for a command line
    written otherwise. Returns the redacted, quoted command line (a ``str``).
    """
    out: list[str] = []
    hide_next = False
    for word in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        assignment = _ASSIGNMENT.match(word)
        if assignment and _secret_name(assignment.group(1)):
            out.append(f"{assignment.group(1)}={REDACTED}")
            continue
        if word.startswith("--") and "=" not in word and _secret_name(word):
            out.append(word)
            hide_next = True
            continue
        out.append(_scrub_url(word))
    return scrub(shlex.join(out))
