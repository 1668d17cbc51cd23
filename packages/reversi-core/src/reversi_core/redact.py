"""Secret registry and scrubbing.

A connector registers each credential it holds with :func:`register_secret` as soon as
it reads it from the environment. Everything Reversi writes where a person or another
program can read it (error messages, journal entries, JSON results, logs) goes through
:func:`scrub` or :func:`scrub_json` first, which replace every registered secret, and
the common encodings of it (URL-quoted, base64 of ``user:secret`` basic credentials are
registered by the connector itself), with ``[REDACTED]``.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "Redactor", "default_redactor", "register_secret", "scrub", "scrub_json"]

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
