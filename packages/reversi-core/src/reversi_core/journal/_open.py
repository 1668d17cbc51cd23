"""One factory for every journal: :func:`open_journal` opens the store a location names."""

from __future__ import annotations

import os
import re

from ..errors import JournalError
from ._base import Durability, Journal, resolve_data_dir

__all__ = ["open_journal"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def open_journal(
    location: str | os.PathLike[str] | None = None,
    *,
    durability: Durability | str = Durability.PROCESS,
    create: bool = True,
    busy_timeout: float = 30.0,
) -> Journal:
    """Open the journal at ``location`` and return it (the caller closes it).

    ``location`` is a data directory, which holds the embedded SQLite journal, or ``None``
    for :func:`resolve_data_dir` (``$REVERSI_DATA``, else ``./reversi-data``). A URL
    names a journal server: ``postgresql://`` is the shared PostgreSQL journal, which
    this release does not have yet. ``create`` (directories only) makes a missing journal;
    ``busy_timeout`` is how long, in seconds, a write waits for another process's.

    Raises :class:`~reversi_core.errors.JournalError` when the journal cannot be opened
    (the message never repeats a URL, which may carry a password), and
    :class:`~reversi_core.errors.JournalVersionError` when it was written by a newer
    schema.
    """
    text = os.fspath(location) if location is not None else None
    if text is not None:
        url = _URL.match(text)
        if url is not None:
            scheme = url.group(1).lower()
            if scheme in ("postgresql", "postgres"):
                raise JournalError(
                    "a PostgreSQL journal (a postgresql:// URL) is not available in this "
                    "release of reversi-core; give a data directory instead"
                )
            raise JournalError(
                f"a journal location with the scheme {scheme!r} is not known; give a data directory"
            )
    from .sqlite import SQLiteJournal

    return SQLiteJournal.open(
        resolve_data_dir(text), durability=durability, create=create, busy_timeout=busy_timeout
    )
