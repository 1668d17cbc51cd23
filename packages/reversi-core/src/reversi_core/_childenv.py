"""The environment of the processes Reversi starts: its own, without the journal's URL
and the gateway's client token.

A compensator (``reversi rollback --compensator-cmd``), a replay command (``reversi
resolve --replay-cmd``) and the gateway's upstream need their own credentials from the
environment, never ``$REVERSI_JOURNAL``, which names the journal and may carry its
password, nor ``$REVERSI_GATEWAY_TOKEN``, the token clients present. libpq's own
variables (``$PGPASSWORD``, ``$PGPASSFILE``, ``$PGHOST``, ...) are kept: a connector on
PostgreSQL may need them for its own database; keep the journal's password in
``$REVERSI_JOURNAL`` or a password file, not in ``$PGPASSWORD``, so that no child sees it
(docs/cli.md). Imports nothing: the gateway's command line uses it before its slow imports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["HIDDEN_FROM_CHILDREN", "child_environment"]

HIDDEN_FROM_CHILDREN = ("REVERSI_JOURNAL", "REVERSI_GATEWAY_TOKEN")
"""Variables no process Reversi starts inherits (``journal.JOURNAL_ENV``, ``mcp._listen.TOKEN_ENV``)."""


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``environ`` (default: this process's) without :data:`HIDDEN_FROM_CHILDREN`."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k not in HIDDEN_FROM_CHILDREN}
