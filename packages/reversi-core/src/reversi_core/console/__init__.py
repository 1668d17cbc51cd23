"""``reversi console``: a local web page over the journal (docs/console.md).

:func:`create_app` builds the Starlette application for a :class:`ConsoleConfig`; the
command (``reversi_core.cli.console``) serves it with uvicorn on 127.0.0.1.
"""

from __future__ import annotations

from .app import PAGE_SIZE, RUNS_PAGE_SIZE, ConsoleConfig, create_app

__all__ = ["PAGE_SIZE", "RUNS_PAGE_SIZE", "ConsoleConfig", "create_app"]
