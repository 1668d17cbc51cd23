"""The gateway's lines on stderr and its descriptions of errors."""

from __future__ import annotations

import sys
from typing import TextIO

from mcp.shared.exceptions import MCPError

from ..errors import ReversiError
from ..redact import scrub

__all__ = ["PROG", "describe", "leaf_errors", "say"]

PROG = "reversi-gateway"


def say(message: str, stream: TextIO | None = None) -> None:
    """Print ``reversi-gateway: <message>`` (scrubbed) on ``stream`` (default stderr)."""
    print(f"{PROG}: {scrub(message)}", file=stream or sys.stderr, flush=True)


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc``, exception groups flattened."""
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(leaf_errors(inner))
        return out
    return [exc]


def describe(exc: BaseException) -> str:
    """One line for ``exc``: Reversi's and the SDK's own messages as they are, others typed."""
    parts = []
    for leaf in leaf_errors(exc):
        text = str(leaf) or type(leaf).__name__
        known = isinstance(leaf, ReversiError | MCPError)
        parts.append(text if known else f"{type(leaf).__name__}: {text}")
    return "; ".join(parts)
