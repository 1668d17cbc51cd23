"""How Stripe spells things on the wire: form bodies read back into values, error bodies.

Written from Stripe's documentation, separately from the connector's encoder
(:mod:`reversi_connector_stripe._form`), so that the fake catches an encoder that
drifts: ``metadata[k]=v`` is the hash ``{"metadata": {"k": "v"}}`` and ``a[0]=x``
(or ``a[]=x``) the list ``{"a": ["x"]}`` (https://docs.stripe.com/api/metadata).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from reversi_core.testing import FakeResponse

__all__ = ["StripeFakeError", "decode_form", "error_body"]

_PART = re.compile(r"\[([^\[\]]*)\]")


class StripeFakeError(Exception):
    """A refusal a route raises: the answer, and whether Stripe saves it under the key.

    Stripe saves an idempotent result only once an endpoint began to run: a request
    whose parameters fail validation is not saved, and may be retried with the same key
    (https://docs.stripe.com/api/idempotent_requests). ``saved`` is false for those.
    """

    def __init__(self, response: FakeResponse, *, saved: bool) -> None:
        super().__init__(str(response.json))
        self.response = response
        self.saved = saved


def error_body(
    error_type: str, message: str, *, code: str | None = None, param: str | None = None, **more: Any
) -> dict[str, Any]:
    """Stripe's error body ``{"error": {"type", "message", "code"?, "param"?, ...}}``.

    https://docs.stripe.com/api/errors
    """
    error: dict[str, Any] = {"type": error_type, "message": message}
    if code is not None:
        error["code"] = code
        error["doc_url"] = f"https://docs.stripe.com/error-codes/{code.replace('_', '-')}"
    if param is not None:
        error["param"] = param
    error.update(more)
    return {"error": error}


def _split(name: str) -> list[str] | None:
    """``metadata[a][b]`` as ``["metadata", "a", "b"]``; ``None`` when it is not well formed."""
    head, bracket, rest = name.partition("[")
    if not head:
        return None
    parts = [head]
    if not bracket:
        return parts
    rest = "[" + rest
    pos = 0
    for match in _PART.finditer(rest):
        if match.start() != pos:
            return None
        parts.append(match.group(1))
        pos = match.end()
    return parts if pos == len(rest) else None


def _listify(value: Any) -> Any:
    if isinstance(value, dict):
        value = {k: _listify(v) for k, v in value.items()}
        if value and all(k.isdigit() for k in value):
            return [value[k] for k in sorted(value, key=int)]
    return value


def decode_form(body: bytes) -> dict[str, Any]:
    """Stripe's parameters from a form body: nested hashes and lists rebuilt, values as text.

    Raises ``ValueError`` for a body that is not UTF-8 form encoding or a name whose
    brackets do not nest (``a[b``), or that sets one name twice in two shapes.
    """
    text = body.decode("utf-8")
    out: dict[str, Any] = {}
    for name, value in urllib.parse.parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text)):
        parts = _split(name)
        if parts is None:
            raise ValueError(f"Invalid parameter name: {name}")
        node: dict[str, Any] = out
        for index, part in enumerate(parts[:-1]):
            nxt = parts[index + 1]
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"Invalid parameter name: {name}")
            if nxt == "":  # a[]=x appends
                parts[index + 1] = str(len(child))
            node = child
        last = parts[-1] or str(len(node))
        if isinstance(node.get(last), dict):
            raise ValueError(f"Invalid parameter name: {name}")
        node[last] = value
    result = _listify(out)
    assert isinstance(result, dict)
    return result
