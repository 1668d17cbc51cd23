"""Stripe's form encoding: nested parameters flattened into ``name[key]`` fields.

Stripe's API takes ``application/x-www-form-urlencoded`` bodies in which a hash is
spelled with brackets (``metadata[order_id]=6735``) and a list with indices
(``expand[0]=customer``); booleans are ``true``/``false`` and numbers their decimal
digits (https://docs.stripe.com/api/metadata, https://docs.stripe.com/api/expanding_objects).
The HTTP layer percent-encodes each name and value once, so a value holding ``&``,
``=``, ``+``, ``%`` or non-ASCII text arrives exactly as given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["flatten"]


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    raise TypeError(f"Stripe's form encoding takes no {type(value).__name__} value")


def _walk(prefix: str, value: Any, out: dict[str, str]) -> None:
    if value is None:
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str) or "[" in key or "]" in key:
                raise ValueError(f"{prefix}: the key {key!r} cannot be spelled in a Stripe form body")
            _walk(f"{prefix}[{key}]", item, out)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for index, item in enumerate(value):
            _walk(f"{prefix}[{index}]", item, out)
    else:
        out[prefix] = _scalar(value)


def flatten(params: Mapping[str, Any]) -> dict[str, str]:
    """``params`` as the flat form fields Stripe reads, in their given order.

    ``{"amount": 2000, "metadata": {"order": "6735"}}`` becomes ``{"amount": "2000",
    "metadata[order]": "6735"}``; ``None`` values are left out. Raises ``ValueError``
    for a key holding ``[`` or ``]`` (it would change the nesting) and ``TypeError``
    for a value that is neither a string, an integer, a boolean, a mapping nor a list
    (a float: Stripe takes amounts as integers in the smallest currency unit).
    """
    out: dict[str, str] = {}
    for name, value in params.items():
        _walk(name, value, out)
    return out
