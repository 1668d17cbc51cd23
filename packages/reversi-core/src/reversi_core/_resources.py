"""Resources: what a step's compensation touches, so that a rollback knows what it may undo at once.

A manifest's compensation declares resource templates
(:attr:`reversi_core.manifest.Compensation.resources`): text with placeholders naming
sources of the call, as an argument map does, such as ``"fs:{result.path}"``,
``"s3:{args.bucket}/{args.key}"`` or ``"github:{args.owner}/{args.repo}/issues/{result.number}"``.
When the call succeeds (or a person resolves it as applied) the templates are rendered
against its arguments and result, and the names are journaled with its compensation
(``{"tool", "args", "resources": [...]}``), so the order of a rollback is known before it
starts (docs/engine.md, "Rollback in parallel").

A placeholder's value is inserted as text when it is a string, as JSON when it is a
number, a boolean or an object (keys sorted); a list gives one name per item (several
lists: one per combination). ``{args.owner|lower}`` inserts it in lower case, for a
vendor whose names are not case-sensitive (GitHub's owners and repositories). A value
that is missing or null makes the step's resources unknown, and so does a template that
would give more than :data:`MAX_RESOURCES` names.

Two names *overlap* when they are equal or one lies under the other, ``/`` separating
the levels: ``fs:d`` and ``fs:d/f.txt`` overlap, ``fs:d/a`` and ``fs:d/b`` do not. Steps
whose names overlap are undone one after the other, newest first. A step whose
resources are unknown (its compensation declares none, a journal older than resources,
or a template that could not be rendered) overlaps every step.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "MAX_RESOURCES",
    "conflicts",
    "journaled_resources",
    "overlap",
    "render_resources",
    "template_sources",
]

MAX_RESOURCES = 1000
"""The most names one step's templates may give; more make its resources unknown."""

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_SOURCE = re.compile(r"(?P<source>(?:args|result)(?:\.[^.{}|\s]+)+)(?:\|(?P<filter>lower))?")


def template_sources(template: str) -> list[str]:
    """The sources (``args.x``, ``result.y.z``) of a resource template, in order.

    Raises :class:`ValueError` naming the problem for a brace that opens or closes no
    placeholder, or a placeholder that is not an ``args.`` or ``result.`` source.
    """
    if not isinstance(template, str) or not template:
        raise ValueError("a resource template is a non-empty string")
    sources = []
    for match in _PLACEHOLDER.finditer(template):
        placeholder = _SOURCE.fullmatch(match.group(1))
        if placeholder is None:
            raise ValueError(
                f"resource template {template!r}: placeholder {{{match.group(1)}}} must name "
                "'args.<path>' or 'result.<path>', optionally followed by '|lower'"
            )
        sources.append(placeholder["source"])
    if "{" in _PLACEHOLDER.sub("", template) or "}" in _PLACEHOLDER.sub("", template):
        raise ValueError(f"resource template {template!r}: a brace opens or closes no placeholder")
    return sources


def _text(value: Any) -> list[str] | None:
    """The texts one placeholder's value gives, or ``None`` when it gives no name."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        texts: list[str] = []
        for item in value:
            one = _text(item)
            if one is None:
                return None
            texts.extend(one)
        return texts
    return [json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)]


def render_resources(
    templates: Sequence[str], args: dict[str, Any], result: dict[str, Any] | None
) -> list[str] | None:
    """The names ``templates`` give for a call's ``args`` and ``result``, or ``None`` (unknown).

    Sorted, without repeats. ``None`` when a placeholder's value is missing or null, or
    when more than :data:`MAX_RESOURCES` names would result.
    """
    from .manifest import MISSING, resolve_source  # manifest imports this module

    names: set[str] = set()
    for template in templates:
        pieces = _PLACEHOLDER.split(template)  # text, source, text, source, ..., text
        choices: list[list[str]] = []
        for i, piece in enumerate(pieces):
            if i % 2 == 0:
                choices.append([piece])
                continue
            placeholder = _SOURCE.fullmatch(piece)
            assert placeholder is not None  # checked when the manifest was loaded
            value = resolve_source(placeholder["source"], args, result)
            texts = None if value is MISSING else _text(value)
            if texts is None:
                return None
            choices.append([t.lower() for t in texts] if placeholder["filter"] else texts)
        count = 1
        for c in choices:
            count *= len(c)
        if len(names) + count > MAX_RESOURCES:
            return None
        names.update("".join(parts) for parts in itertools.product(*choices))
    return sorted(names)


def journaled_resources(compensation: Mapping[str, Any] | None) -> list[str] | None:
    """The resource names journaled with a step's compensation, or ``None`` when unknown."""
    if not compensation:
        return None
    names = compensation.get("resources")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return names


def overlap(a: str, b: str) -> bool:
    """True when the names are equal or one lies under the other (``fs:d``, ``fs:d/f``)."""
    if a == b:
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return long.startswith(short + "/")


def conflicts(a: Iterable[str] | None, b: Iterable[str] | None) -> bool:
    """True when two steps' resources overlap; unknown (``None``) overlaps everything."""
    if a is None or b is None:
        return True
    bs = list(b)
    return any(overlap(x, y) for x in a for y in bs)


def ancestors(name: str) -> Iterable[str]:
    """The names ``name`` lies under: ``fs:a/b/c`` gives ``fs:a/b``, ``fs:a``."""
    while "/" in name:
        name = name.rsplit("/", 1)[0]
        yield name
