"""Values in and out: JSON arguments to bound parameters, PostgreSQL values to JSON.

Going in (https://www.psycopg.org/psycopg3/docs/basic/adapt.html): ``null``, booleans,
integers and floats bind as themselves; a string binds with the *unknown* type, so the
server converts it with the column's own input function (``'42'`` into an ``int``
column, ``'2024-05-01'`` into a ``date``); an object or an array binds as JSON through
:class:`psycopg.types.json.Json` (https://www.psycopg.org/psycopg3/docs/basic/adapt.html#json-adaptation),
for ``json`` and ``jsonb`` columns.

Coming out, every value becomes JSON: text, integers, booleans and ``null`` as they
are; floats as numbers (``NaN`` and infinities as strings); ``numeric`` as a string,
exactly; dates, times and timestamps in ISO 8601, intervals as ISO 8601 durations
(``P1DT3600.000000S``); ``uuid`` and everything else PostgreSQL-specific (ranges,
network addresses) as its text form; ``json``
and ``jsonb`` and arrays as JSON; ``bytea`` as PostgreSQL's hex form (``\\x0102``).
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from psycopg.types.json import Json

__all__ = ["bind", "bind_all", "to_json"]


def bind(value: Any) -> Any:
    """The parameter to bind for one JSON argument value (see the module docstring)."""
    if isinstance(value, Mapping | list | tuple):
        return Json(value)
    return value


def bind_all(values: Sequence[Any]) -> list[Any]:
    """:func:`bind` applied to each value."""
    return [bind(v) for v in values]


def to_json(value: Any) -> Any:
    """A JSON value for one value psycopg loaded from PostgreSQL (see the module docstring)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return f"P{value.days}DT{value.seconds}.{value.microseconds:06d}S"
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return str(value)
