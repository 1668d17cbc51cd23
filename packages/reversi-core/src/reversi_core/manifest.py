"""Manifests: what a tool does to the world and how to undo it.

A :class:`Manifest` names a tool's effect, the permission it needs, whether a person
must approve each call, the compensation that undoes it (a tool plus an argument map
from the call's ``args`` and ``result``), and the earlier steps it depends on
(:class:`Requirement`), and whether the vendor honours the call's idempotency key so
that an uncertain call can be settled by sending it again (:class:`Replay`). Manifests
are plain data: they are printed by
``reversi-connectors manifests``, read back by the gateway, and validated together by
:class:`reversi_core.registry.Registry`.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._resources import template_sources

__all__ = [
    "MISSING",
    "Approval",
    "Compensation",
    "Const",
    "Effect",
    "Manifest",
    "MappingFailed",
    "Match",
    "Replay",
    "Requirement",
    "Source",
    "evaluate_argument_map",
    "lookup",
    "resolve_source",
]


class Effect(StrEnum):
    """What a tool does to the backend (see docs/engine.md)."""

    READ_ONLY = "read_only"
    """Changes nothing; never compensated."""
    REVERSIBLE = "reversible"
    """Its compensation restores the prior state, or a documented residue."""
    COMPENSABLE = "compensable"
    """Not undoable by itself; the result records the prior state that the compensation restores."""
    IDEMPOTENT = "idempotent"
    """A second identical call changes nothing more. Has no compensation of its own."""
    IRREVERSIBLE = "irreversible"
    """No compensation; every call needs approval."""


class Approval(StrEnum):
    """Whether each call must be approved by a person before it runs."""

    ALWAYS = "always"
    NEVER = "never"


class Const(BaseModel):
    """A constant argument-map source: ``{"const": value}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    const: Any


Source = str | Const
"""An argument-map source: ``"args.<dotted.path>"``, ``"result.<dotted.path>"`` or ``{"const": v}``."""


class Compensation(BaseModel):
    """The tool that undoes a call, how its arguments are computed, and what it touches.

    ``argument_map`` maps each compensation argument to a :data:`Source`. ``resources``
    (optional) are templates naming what the compensation touches, with ``{args.<path>}``
    and ``{result.<path>}`` placeholders: ``["fs:{result.path}"]``,
    ``["s3:{args.bucket}/{args.key}"]`` (rules: :mod:`reversi_core._resources`). A rollback
    undoes steps whose names overlap one after the other, newest first, and the others
    at once; ``None`` (the default) means the compensation may touch anything, so it runs
    alone (docs/engine.md, "Rollback in parallel").
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str
    argument_map: dict[str, Source] = Field(default_factory=dict)
    resources: list[str] | None = Field(default=None, min_length=1)

    @field_validator("argument_map")
    @classmethod
    def _check_sources(cls, value: dict[str, Source]) -> dict[str, Source]:
        for arg, source in value.items():
            if isinstance(source, str):
                _split_source(source, where=f"argument_map[{arg!r}]")
        return value

    @field_validator("resources")
    @classmethod
    def _check_templates(cls, value: list[str] | None) -> list[str] | None:
        for template in value or []:
            for source in template_sources(template):
                _split_source(source, where=f"resources template {template!r}")
        return value


class Match(BaseModel):
    """One condition of a :class:`Requirement`.

    ``this`` is an ``args.`` source on the new call (edges are recorded before the call
    runs, so its result is not known yet); ``earlier`` is an ``args.`` or ``result.``
    source on the earlier step. ``relation`` is ``equals`` (equal values), ``same_path``
    (the same ``/``-separated path once normalised: ``./a//b`` is ``a/b``) or ``within``
    (``this`` is a path strictly inside ``earlier``; when ``earlier`` is a list, inside
    any of its items).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    this: str
    earlier: str
    relation: Literal["equals", "same_path", "within"] = "equals"

    @field_validator("this", "earlier")
    @classmethod
    def _check(cls, value: str) -> str:
        _split_source(value, where="requires")
        return value


class Requirement(BaseModel):
    """A dependency of a call on an earlier step of the same run.

    The engine records an edge from the new step to every earlier succeeded (or possibly
    applied) step of ``tool`` for which all ``match`` conditions hold. A rollback then
    defers the earlier step while the later one still stands.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str
    match: list[Match] = Field(min_length=1)


class Replay(BaseModel):
    """The vendor honours this tool's idempotency key, so an uncertain call can be replayed.

    Declared by a tool whose every write carries the call's idempotency key to a vendor
    that, for a repeat of the same request with the same key, answers with the outcome
    of the first request instead of acting again (Stripe:
    https://docs.stripe.com/api/idempotent_requests). ``window`` is how many seconds
    after the call such a repeat is still safe: less than the time the vendor keeps a
    key (Stripe prunes keys once they are 24 hours old, and then carries a repeat out
    as a new request), with a margin. ``reversi resolve RUN STEP --replay`` re-sends an
    uncertain step's call with its original key only within that window
    (docs/engine.md, RES-2).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    window: float = Field(gt=0, description="seconds after the call during which a replay is safe")


class Manifest(BaseModel):
    """The declaration of one tool (the fields ``reversi-connectors manifests`` prints)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[a-z][a-z0-9]*\.[a-z][a-z0-9_]*$")
    description: str = ""
    effect: Effect
    permission: str = Field(min_length=1)
    approval: Approval = Approval.NEVER
    compensation: Compensation | None = None
    requires: list[Requirement] = Field(default_factory=list)
    replay: Replay | None = None
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None

    @property
    def connector(self) -> str:
        """The connector token, the part of ``name`` before the dot."""
        return self.name.split(".", 1)[0]

    @property
    def writes(self) -> bool:
        """True for every effect except ``read_only``."""
        return self.effect is not Effect.READ_ONLY

    def to_json(self) -> dict[str, Any]:
        """Return the manifest as plain JSON data, with every field present."""
        return self.model_dump(mode="json")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Returned by :func:`lookup` when a path does not exist."""


class MappingFailed(Exception):
    """A source names a value that is not there (raised by :func:`evaluate_argument_map`)."""


def _split_source(source: str, *, where: str) -> tuple[str, list[str]]:
    root, _, rest = source.partition(".")
    if root not in ("args", "result") or not rest or any(not part for part in rest.split(".")):
        raise ValueError(
            f"{where}: source {source!r} must be 'args.<path>', 'result.<path>' or {{'const': value}}"
        )
    return root, rest.split(".")


def lookup(value: Any, path: Sequence[str]) -> Any:
    """Follow ``path`` through nested dicts (and list indices); :data:`MISSING` if absent."""
    for part in path:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


@functools.lru_cache(maxsize=1024)
def _parsed_source(source: str) -> tuple[str, tuple[str, ...]]:
    """:func:`_split_source`, once per source: every call resolves the same few sources of
    its manifest (requirements, the argument map) again."""
    root, path = _split_source(source, where="source")
    return root, tuple(path)


def resolve_source(source: Source, args: dict[str, Any], result: dict[str, Any] | None) -> Any:
    """Return the value a source names, or :data:`MISSING`."""
    if isinstance(source, Const):
        return source.const
    root, path = _parsed_source(source)
    if root == "args":
        return lookup(args, path)
    if result is None:
        return MISSING
    return lookup(result, path)


def evaluate_argument_map(
    compensation: Compensation, args: dict[str, Any], result: dict[str, Any] | None
) -> dict[str, Any]:
    """Compute a compensation's arguments from a call's ``args`` and ``result``.

    Returns ``{compensation_arg: value}``. Raises :class:`MappingFailed` naming the first
    source that has no value (for example ``result.sha`` on a result without ``sha``).
    An ``args.`` path that the caller left out while the schema allows it maps to
    ``None`` only if the schema gave it a default; otherwise it is missing too.
    """
    out: dict[str, Any] = {}
    for arg, source in compensation.argument_map.items():
        value = resolve_source(source, args, result)
        if value is MISSING:
            raise MappingFailed(
                f"cannot compute argument {arg!r} of {compensation.tool}: "
                f"{source} is not in the call's {'result' if str(source).startswith('result') else 'arguments'}"
            )
        out[arg] = value
    return out


def _normal(path: str) -> str:
    return posixpath.normpath(path.strip("/"))


def path_within(inner: str, outer: str) -> bool:
    """True when ``inner`` is a ``/``-separated path strictly inside ``outer`` (both normalised)."""
    a = _normal(inner)
    b = _normal(outer)
    if b in ("", "."):
        return a not in ("", ".")
    return a.startswith(b + "/")


def match_holds(match: Match, this_value: Any, earlier_value: Any) -> bool:
    """Evaluate one :class:`Match` on already-resolved values."""
    if this_value is MISSING or earlier_value is MISSING:
        return False
    if match.relation == "equals":
        return bool(this_value == earlier_value)
    if match.relation == "same_path":
        return (
            isinstance(this_value, str)
            and isinstance(earlier_value, str)
            and _normal(this_value) == _normal(earlier_value)
        )
    if not isinstance(this_value, str):
        return False
    candidates = earlier_value if isinstance(earlier_value, list) else [earlier_value]
    return any(isinstance(c, str) and path_within(this_value, c) for c in candidates)
