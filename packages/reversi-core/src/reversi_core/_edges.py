"""Finding a new call's ``requires`` edges without scanning the run.

:class:`EdgeIndex` keeps, for the steps of one run whose tool some requirement names,
only the values the requirements compare (not whole arguments or results), indexed by
those values: equal values by their canonical JSON, paths by their normalised form, so
that ``equals`` and ``same_path`` are one lookup and ``within`` one lookup per parent
directory of the new path. A call's edges therefore cost the same on the thousandth
step as on the first, and a session's memory does not grow with what it read.

For each requirement the edge goes to the newest earlier step that matches and may
have applied. Requirements name the earlier step a call builds on; when several
match (the same file written three times), the newest one depends on the older ones
in turn, so the chain orders the rollback without an edge to every ancestor.

A requirement on an earlier step's *result* (``result.created`` of ``fs.make_dir``)
cannot be decided while that step has no result yet: it is still in flight (a client
that sends its calls without waiting for each answer) or its outcome is uncertain. Such
a step may have made what the new call uses, so the new call gets an edge to it as
well, to every one newer than the newest step that surely matches (DEP-1). An edge too
many only keeps a parallel rollback from undoing the two at once; one too few could
undo a directory before the file written into it.
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .manifest import MISSING, Manifest, Match, match_holds, resolve_source
from .registry import canonical_json

__all__ = ["EdgeIndex"]


def _normal(path: str) -> str:
    return posixpath.normpath(path.strip("/")) or "."


def _keys(relation: str, value: Any) -> list[str]:
    """Index keys of an earlier step's value for one relation."""
    if value is MISSING or value is None:
        return []
    if relation == "equals":
        return [canonical_json(value)]
    items = value if isinstance(value, list) else [value]
    return [_normal(v) for v in items if isinstance(v, str)]


def _lookup_keys(relation: str, value: Any) -> list[str]:
    """Keys under which earlier steps matching a new call's value are indexed."""
    if value is MISSING:
        return []
    if relation == "equals":
        return [canonical_json(value)]
    if not isinstance(value, str):
        return []
    path = _normal(value)
    if relation == "same_path":
        return [path]
    if path == ".":
        return []
    parts = path.split("/")
    return [".", *("/".join(parts[:i]) for i in range(1, len(parts)))]


_Plan = list[tuple[str, str, list[tuple[str, str, list[Match]]]]]
"""A manifest's requirements grouped by their first match's ``this`` and relation:
``[(this, relation, [(earlier tool, earlier source, the other matches), ...]), ...]``."""


def _plan(manifest: Manifest) -> _Plan:
    groups: dict[tuple[str, str], list[tuple[str, str, list[Match]]]] = {}
    for req in manifest.requires:
        first = req.match[0]
        groups.setdefault((first.this, first.relation), []).append(
            (req.tool, first.earlier, req.match[1:])
        )
    return [(this, relation, reqs) for (this, relation), reqs in groups.items()]


@dataclass
class _Entry:
    seq: int
    values: dict[str, Any]
    applied: bool = True  # may have applied: pending, succeeded or uncertain
    settled: bool = False  # its result is known (indexed with it)


@dataclass
class EdgeIndex:
    """The index of one run (see the module docstring)."""

    watched: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    """``{tool: {(earlier source, relation)}}`` that some requirement compares."""
    entries: dict[int, _Entry] = field(default_factory=dict)
    keys: dict[tuple[str, str, str, str], list[int]] = field(default_factory=dict)
    """``(tool, source, relation, key) -> [seq, ...]`` in ascending step order (a step's
    result values arrive when it finishes, which may be after later steps began)."""
    _plans: dict[str, _Plan] = field(default_factory=dict, init=False, repr=False)
    """Per tool (the index serves one registry): its requirements by first match."""
    unsettled: dict[str, list[int]] = field(default_factory=dict)
    """``tool -> [seq, ...]`` (ascending) of the steps that may have applied and whose
    result, which some requirement compares, is not known yet."""

    @classmethod
    def for_manifests(cls, manifests: Iterable[Manifest]) -> EdgeIndex:
        """An empty index watching what the manifests' requirements compare."""
        watched: dict[str, set[tuple[str, str]]] = {}
        for manifest in manifests:
            for req in manifest.requires:
                for match in req.match:
                    watched.setdefault(req.tool, set()).add((match.earlier, match.relation))
        return cls(watched=watched)

    def add(
        self,
        seq: int,
        tool: str,
        args: dict[str, Any],
        result: dict[str, Any] | None,
        *,
        settled: bool | None = None,
    ) -> None:
        """Index a step (again, with its result, once it succeeded).

        ``settled`` says whether the step's result is known (by default: ``result`` is
        not None); a step of a tool whose result some requirement compares stays a
        possible dependency of every later call until it is (module docstring).
        """
        sources = self.watched.get(tool)
        if not sources:
            return
        entry = self.entries.get(seq)
        if entry is None:
            entry = self.entries[seq] = _Entry(seq, {})
        if settled is None:
            settled = result is not None
        if not entry.settled and any(source.startswith("result.") for source, _ in sources):
            if settled:
                self._forget_unsettled(tool, seq)
            elif entry.applied:
                bucket = self.unsettled.setdefault(tool, [])
                at = bisect.bisect_left(bucket, seq)
                if at == len(bucket) or bucket[at] != seq:
                    bucket.insert(at, seq)
        entry.settled = entry.settled or settled
        for source, relation in sources:
            if source in entry.values:
                continue
            value = resolve_source(source, args, result)
            if value is MISSING:
                continue
            entry.values[source] = value
            for key in _keys(relation, value):
                bucket = self.keys.setdefault((tool, source, relation, key), [])
                if not bucket or bucket[-1] < seq:
                    bucket.append(seq)
                else:  # a result indexed late (calls finish out of order): keep step order
                    at = bisect.bisect_left(bucket, seq)
                    if at == len(bucket) or bucket[at] != seq:
                        bucket.insert(at, seq)

    def mark_not_applied(self, seq: int) -> None:
        """The step failed or was rejected: nothing can depend on it."""
        entry = self.entries.get(seq)
        if entry is not None:
            entry.applied = False
            for tool in self.unsettled:
                self._forget_unsettled(tool, seq)

    def _forget_unsettled(self, tool: str, seq: int) -> None:
        bucket = self.unsettled.get(tool)
        if bucket:
            at = bisect.bisect_left(bucket, seq)
            if at < len(bucket) and bucket[at] == seq:
                del bucket[at]

    def edges(self, manifest: Manifest, args: dict[str, Any]) -> list[int]:
        """The ``seq`` of the earlier steps a new call of ``manifest`` with ``args`` depends on."""
        plan = self._plans.get(manifest.name)
        if plan is None:
            plan = self._plans[manifest.name] = _plan(manifest)
        found: set[int] = set()
        for this, relation, requirements in plan:
            keys = _lookup_keys(relation, resolve_source(this, args, None))
            if not keys:
                continue
            for tool, earlier, rest in requirements:
                newest: int | None = None
                for key in keys:
                    bucket = self.keys.get((tool, earlier, relation, key))
                    # newest first, stopping at the first match: a file written a thousand
                    # times costs one look, not a thousand
                    for seq in reversed(bucket or ()):
                        if newest is not None and seq <= newest:
                            break
                        entry = self.entries[seq]
                        if entry.applied and all(self._holds(m, args, entry) for m in rest):
                            newest = seq
                            break
                if newest is not None:
                    found.add(newest)
                if earlier.startswith("result."):
                    # in flight or uncertain: may have made what this call uses
                    for seq in reversed(self.unsettled.get(tool) or ()):
                        if newest is not None and seq <= newest:
                            break
                        entry = self.entries[seq]
                        if all(self._may_hold(m, args, entry) for m in rest):
                            found.add(seq)
        return sorted(found)

    @classmethod
    def _may_hold(cls, match: Match, args: dict[str, Any], entry: _Entry) -> bool:
        """A further match of a step without its result: false only when it is decided."""
        if match.earlier.startswith("result.") and match.earlier not in entry.values:
            return True
        return cls._holds(match, args, entry)

    @staticmethod
    def _holds(match: Match, args: dict[str, Any], entry: _Entry) -> bool:
        return match_holds(
            match,
            resolve_source(match.this, args, None),
            entry.values.get(match.earlier, MISSING),
        )
