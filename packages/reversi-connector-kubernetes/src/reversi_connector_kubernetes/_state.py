"""What FakeKubernetes stores, and how the API server spells it: objects, selectors, patches.

Objects are kept as the JSON the API server would serve (``metadata``, ``spec``,
``status``), so that the fake answers with exactly what it stores. A cluster-wide
revision counter stands for etcd's: every write gives the object it changed a new
``resourceVersion``, as the API server does
(https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions).
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LabelSelector",
    "SelectorError",
    "Store",
    "merge_patch",
    "now",
]


def now() -> str:
    """The current time as the API server writes it (RFC 3339, UTC, seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch (RFC 7386): objects merge key by key, ``null`` removes a key.

    https://datatracker.ietf.org/doc/html/rfc7386 (the API server's
    ``application/merge-patch+json``; for the maps the connector patches, a strategic merge
    patch does the same).
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class SelectorError(ValueError):
    """A selector the API server would refuse (400 BadRequest)."""


_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9./_-]+)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[A-Za-z0-9._-]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?\s*$"
)


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: ``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``, ``k notin (a)``.

    https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors
    """

    requirements: tuple[tuple[str, str, frozenset[str]], ...]

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse ``text``; raises :class:`SelectorError` for one the API server refuses."""
        parts = _split_top_level(text)
        found: list[tuple[str, str, frozenset[str]]] = []
        for part in parts:
            match = _REQUIREMENT.match(part)
            if not part.strip() or match is None:
                raise SelectorError(f"unable to parse requirement: {part.strip()!r}")
            key = match["key"]
            if match["neg"]:
                if match["op"] or match["setop"]:
                    raise SelectorError(f"unable to parse requirement: {part.strip()!r}")
                found.append((key, "!", frozenset()))
            elif match["op"]:
                op = "!=" if match["op"] == "!=" else "="
                found.append((key, op, frozenset({match["value"]})))
            elif match["setop"]:
                values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
                found.append((key, match["setop"], values))
            else:
                found.append((key, "exists", frozenset()))
        return cls(tuple(found))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every requirement."""
        for key, op, values in self.requirements:
            present = key in labels
            value = labels.get(key)
            ok = {
                "=": present and value in values,
                "!=": not present or value not in values,
                "in": present and value in values,
                "notin": not present or value not in values,
                "exists": present,
                "!": not present,
            }[op]
            if not ok:
                return False
        return True


def _split_top_level(text: str) -> list[str]:
    """``text`` split at commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


POD_FIELDS = {
    "metadata.name": ("metadata", "name"),
    "metadata.namespace": ("metadata", "namespace"),
    "spec.nodeName": ("spec", "nodeName"),
    "spec.restartPolicy": ("spec", "restartPolicy"),
    "spec.serviceAccountName": ("spec", "serviceAccountName"),
    "status.phase": ("status", "phase"),
    "status.podIP": ("status", "podIP"),
}
"""The field labels the API server supports in a pod field selector (a subset)."""


def field_matches(obj: Mapping[str, Any], text: str) -> bool:
    """Whether a pod matches the field selector ``text`` (``f=v``, ``f==v``, ``f!=v``, comma-joined).

    Raises :class:`SelectorError` for an unsupported field label, as the API server answers
    400 ``field label not supported``
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/).
    """
    for part in text.split(","):
        match = re.match(r"^\s*([A-Za-z.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if match is None:
            raise SelectorError(f"invalid selector: {part.strip()!r}")
        field, op, wanted = match.groups()
        if field not in POD_FIELDS:
            raise SelectorError(f'field label not supported: {field}')
        value: Any = obj
        for key in POD_FIELDS[field]:
            value = value.get(key) if isinstance(value, Mapping) else None
        actual = "" if value is None else str(value)
        if (actual == wanted) != (op != "!="):
            return False
    return True


class Store:
    """The objects of the fake cluster by resource, namespace and name, and the revision counter.

    ``objects[(resource, namespace, name)]`` is the object's JSON (``resource`` is
    ``"deployments"``, ``"pods"`` or ``"configmaps"``). :meth:`write` stamps a new
    ``resourceVersion``; :meth:`put` creates an object with a fresh ``uid``.
    """

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.namespaces: set[str] = set()
        self.revision = 0
        self.compacted = 0
        """Continue tokens of a list made at this revision or before have expired (410)."""

    def bump(self) -> str:
        """A new cluster revision, as a resourceVersion string."""
        self.revision += 1
        return str(self.revision)

    def put(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a new object (its metadata gets a uid, a creation time and a resourceVersion)."""
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now())
        meta["resourceVersion"] = self.bump()
        self.namespaces.add(meta["namespace"])
        self.objects[(resource, meta["namespace"], meta["name"])] = obj
        return obj

    def write(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Record a change of a stored object: give it a new resourceVersion."""
        obj["metadata"]["resourceVersion"] = self.bump()
        return obj

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((resource, namespace, name))

    def remove(self, resource: str, namespace: str, name: str) -> dict[str, Any]:
        self.bump()
        return self.objects.pop((resource, namespace, name))

    def listed(self, resource: str, namespace: str) -> list[dict[str, Any]]:
        """The objects of ``resource`` in ``namespace``, by name (the order etcd keeps them in)."""
        return [
            obj
            for (kind, ns, _), obj in sorted(self.objects.items())
            if kind == resource and ns == namespace
        ]

    def all(self, resource: str) -> Iterable[tuple[str, str, dict[str, Any]]]:
        for (kind, ns, name), obj in sorted(self.objects.items()):
            if kind == resource:
                yield ns, name, obj
