"""Frozen dataclasses that are quick to build: :func:`quick_init`.

A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__``,
one call per field: 13,700 instructions for a :class:`~reversi_core.engine.CallOutcome`
(7 fields) and 36,600 for a :class:`~reversi_core.journal.StepRecord` (22), built on
every call the gateway relays (docs/performance.md). :func:`quick_init` gives such a
class an ``__init__`` with the same signature that fills the instance's ``__dict__`` in
one step: 3,900 and 17,000 (most of what is left is Python's handling of the keyword
arguments). Everything else the dataclass generated (``__eq__``, ``__hash__``,
``__repr__``, the frozen ``__setattr__``) stays as it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["quick_init"]

T = TypeVar("T", bound=type)

_MISSING: Any = object()


def quick_init(cls: T) -> T:
    """Replace the ``__init__`` of the frozen dataclass ``cls`` (see the module docstring).

    ``cls`` must be a frozen dataclass without ``__slots__``, ``__post_init__``,
    keyword-only fields or ``init=False`` fields; anything else raises
    :class:`TypeError`. Defaults and default factories behave as in the generated one.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__}: quick_init needs a frozen dataclass without slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: quick_init does not call __post_init__")
    namespace: dict[str, Any] = {"_set": object.__setattr__, "_MISSING": _MISSING}
    arguments: list[str] = []
    values: list[str] = []
    for f in dataclasses.fields(cls):
        if not f.init or f.kw_only:
            raise TypeError(f"{cls.__name__}.{f.name}: quick_init needs plain fields")
        name = f.name
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = f.default
            arguments.append(f"{name}=_default_{name}")
            values.append(f"{name!r}: {name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = f.default_factory
            arguments.append(f"{name}=_MISSING")
            values.append(f"{name!r}: _factory_{name}() if {name} is _MISSING else {name}")
        else:
            arguments.append(name)
            values.append(f"{name!r}: {name}")
    source = (
        f"def __init__(self, {', '.join(arguments)}):\n"
        f"    _set(self, '__dict__', {{{', '.join(values)}}})\n"
    )
    exec(source, namespace)  # noqa: S102 - built from the dataclass's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    generated: Any = cls.__dict__["__init__"]
    init.__doc__ = generated.__doc__
    init.__annotations__ = dict(generated.__annotations__)
    type.__setattr__(cls, "__init__", init)
    return cls
