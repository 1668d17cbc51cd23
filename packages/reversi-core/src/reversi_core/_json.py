"""JSON on the hot path: encoded with ``orjson``, parsed with the standard library.

Every line the gateway writes and every value the journal stores is encoded here.
``orjson`` encodes a 9 KB tool result in a few microseconds where :mod:`json` takes tens,
which matters on the gateway's path (docs/performance.md). A value ``orjson`` cannot
encode (an integer over 64 bits, a key that is not a string, a string that is not
Unicode) is encoded by :mod:`json` as ASCII instead, which any string can be, so nothing
is lost. Floats that are not numbers (``NaN``, infinities) have no JSON spelling: they
are encoded as ``null``.

Parsing stays with :mod:`json` (:func:`loads`): ``orjson`` reads an integer over 64 bits
as a float, and telling such text apart costs more than ``orjson`` saves.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["dumps", "dumps_text", "loads"]

_ascii = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode

loads = json.loads
"""Parse one JSON text (:func:`json.loads`); raises :class:`ValueError` when it is not JSON."""


def dumps(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8 bytes."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return _ascii(value).encode("ascii")


def dumps_text(value: Any) -> str:
    """``value`` as compact JSON text."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:
        return _ascii(value)
