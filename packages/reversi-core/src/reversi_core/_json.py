"""JSON on the hot path: ``orjson`` where it gives what the standard library gives.

Every line the gateway writes and every value the journal stores is encoded here.
``orjson`` encodes a 9 KB tool result in a few microseconds where :mod:`json` takes tens,
which matters on the gateway's path (docs/performance.md). A value ``orjson`` cannot
encode (an integer over 64 bits, a key that is not a string, a string that is not
Unicode) is encoded by :mod:`json` as ASCII instead, which any string can be, so nothing
is lost. Floats that are not numbers (``NaN``, infinities) have no JSON spelling: they
are encoded as ``null``.

Every line the gateway reads is parsed by :func:`loads`: ``orjson`` first (5 µs for a
9 KB answer where :mod:`json` takes 20), and :mod:`json` whenever ``orjson``'s reading
could differ from it. ``orjson`` refuses what :mod:`json` may still read (``NaN``, a
lone surrogate escape, a number too large for a double, UTF-16): :mod:`json` then reads
it or raises. And ``orjson`` reads an integer outside 64 bits as a float without saying
so: a parsed value holding an integral float of magnitude 2**63 or more (which such an
integer becomes) is read again by :mod:`json`, which keeps the integer exact.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["dumps", "dumps_line", "dumps_text", "loads"]

_ascii = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode

_SUSPECT = float(2**63)
"""An integral float this large may be an integer ``orjson`` could not hold."""


def loads(data: bytes | str) -> Any:
    """Parse one JSON text exactly as :func:`json.loads` does (see the module docstring).

    Raises :class:`ValueError` (:class:`json.JSONDecodeError`, or
    :class:`UnicodeDecodeError` for bytes that are not UTF-8, -16 or -32) when it is not
    JSON.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
    kind = type(value)
    if kind is dict or kind is list:
        try:
            if _suspect(value):
                return json.loads(data)
        except RecursionError:  # nested deeper than Python recurses: as json reads it
            return json.loads(data)
    elif kind is float and abs(value) >= _SUSPECT and value.is_integer():
        return json.loads(data)
    return value


def _suspect(container: dict[str, Any] | list[Any]) -> bool:
    """Whether ``container`` holds an integral float of magnitude 2**63 or more, anywhere.

    A recursive walk over the containers (strings, the bulk of a tool's answer, are
    skipped first): 14,000 instructions for the 16 values of a 9 KB ``fs.read_file``
    answer, against 19,000 for a loop over an explicit stack.
    """
    items: Any = container.values() if type(container) is dict else container
    for item in items:
        kind = type(item)
        if kind is str:
            continue
        if kind is dict or kind is list:
            if _suspect(item):
                return True
        elif kind is float and abs(item) >= _SUSPECT and item.is_integer():
            return True
    return False


def dumps(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8 bytes."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return _ascii(value).encode("ascii")


_LINE = orjson.OPT_APPEND_NEWLINE


def dumps_line(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8 bytes, and a newline: one JSON-RPC line.

    The newline is written by ``orjson`` with the rest, so a 9 KB answer is not copied
    again to append it.
    """
    try:
        return orjson.dumps(value, option=_LINE)
    except TypeError:
        return _ascii(value).encode("ascii") + b"\n"


def dumps_text(value: Any) -> str:
    """``value`` as compact JSON text."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:
        return _ascii(value)
