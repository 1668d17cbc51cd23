"""The registry: a validated set of manifests.

:meth:`Registry.from_manifests` refuses, with a :class:`~reversi_core.errors.ManifestError`
naming the tool, any set in which a rollback could not work end to end:

- a ``reversible`` or ``compensable`` tool without a compensation, or a ``read_only``,
  ``idempotent`` or ``irreversible`` tool with one;
- an ``irreversible`` tool whose approval is not ``always``;
- a compensation tool that is not in the set or is not ``idempotent``;
- an argument map that does not produce exactly the compensation's arguments (a
  required argument missing, or an argument the compensation does not take);
- an ``args.`` source (in an argument map or a ``requires`` match) naming no input
  property;
- a ``requires`` declaration naming an unknown tool;
- two manifests with one name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from .errors import InvalidArgumentsError, ManifestError, UnknownToolError
from .manifest import Approval, Const, Effect, Manifest

__all__ = ["ManifestDrift", "Registry", "canonical_json", "detect_manifest_drift", "schema_hash"]


def canonical_json(value: Any) -> str:
    """Serialise JSON with sorted keys and no spaces, so equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema_hash(schema: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a JSON Schema's canonical JSON: key order does not change it."""
    return hashlib.sha256(canonical_json(schema).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ManifestDrift:
    """Tool names whose input schema was ``added``, ``removed`` or ``changed`` against a baseline."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def detect_manifest_drift(
    manifests: Iterable[Manifest],
    input_schemas: Mapping[str, Mapping[str, Any]],
    baseline: Mapping[str, str],
) -> ManifestDrift:
    """Compare tools' input schemas with stored hashes.

    ``input_schemas`` maps a tool name to its current schema (a manifest's own
    ``input_schema`` is used for a tool missing from it); ``baseline`` maps a tool name
    to a :func:`schema_hash`. Returns sorted lists of added, removed and changed names.
    """
    current: dict[str, str] = {}
    for manifest in manifests:
        schema = input_schemas.get(manifest.name, manifest.input_schema)
        current[manifest.name] = schema_hash(schema)
    return ManifestDrift(
        added=sorted(set(current) - set(baseline)),
        removed=sorted(set(baseline) - set(current)),
        changed=sorted(n for n in set(current) & set(baseline) if current[n] != baseline[n]),
    )


def _schema_has_path(schema: Mapping[str, Any], path: list[str]) -> bool:
    node: Mapping[str, Any] = schema
    defs = schema.get("$defs", {})
    for part in path:
        node = _deref(node, defs)
        props = node.get("properties")
        if isinstance(props, dict) and part in props:
            node = props[part]
            continue
        # a list index into an array schema
        if node.get("type") == "array" and part.isdigit():
            node = node.get("items", {})
            continue
        # anyOf (Optional[...] in pydantic): accept when any branch has it
        branches = node.get("anyOf") or node.get("oneOf") or []
        return bool(branches) and any(
            _schema_has_path(b | {"$defs": defs}, [part]) for b in branches
        )
    return True


def _deref(node: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return defs.get(ref.split("/")[-1], node)  # type: ignore[no-any-return]
    return node


class Registry:
    """A validated, immutable set of manifests, indexed by tool name."""

    def __init__(self, manifests: Mapping[str, Manifest]) -> None:
        """Prefer :meth:`from_manifests`, which validates; this constructor does not."""
        self._manifests = dict(manifests)
        self._validators: dict[str, Draft202012Validator] = {}

    @classmethod
    def from_manifests(cls, manifests: Iterable[Manifest | Mapping[str, Any]]) -> Registry:
        """Validate ``manifests`` (models or their JSON form) and build a registry.

        Raises :class:`ManifestError` naming the first tool with a problem.
        """
        by_name: dict[str, Manifest] = {}
        for raw in manifests:
            if isinstance(raw, Manifest):
                manifest = raw
            else:
                name = (
                    str(raw.get("name", "<unnamed>")) if isinstance(raw, Mapping) else "<unnamed>"
                )
                try:
                    manifest = Manifest.model_validate(raw)
                except Exception as exc:  # pydantic.ValidationError, with its field list
                    raise ManifestError(name, f"invalid manifest: {exc}") from None
            if manifest.name in by_name:
                raise ManifestError(manifest.name, "declared twice")
            by_name[manifest.name] = manifest
        for manifest in by_name.values():
            cls._validate_one(manifest, by_name)
        return cls(by_name)

    @staticmethod
    def _validate_one(m: Manifest, by_name: Mapping[str, Manifest]) -> None:
        try:
            Draft202012Validator.check_schema(m.input_schema)
        except Exception as exc:
            raise ManifestError(m.name, f"input_schema is not a valid JSON Schema: {exc}") from None
        needs_comp = m.effect in (Effect.REVERSIBLE, Effect.COMPENSABLE)
        if needs_comp and m.compensation is None:
            raise ManifestError(m.name, f"effect {m.effect.value} needs a compensation")
        if not needs_comp and m.compensation is not None:
            raise ManifestError(m.name, f"effect {m.effect.value} takes no compensation")
        if m.effect is Effect.IRREVERSIBLE and m.approval is not Approval.ALWAYS:
            raise ManifestError(m.name, "an irreversible tool must have approval 'always'")
        if m.compensation is not None:
            comp = by_name.get(m.compensation.tool)
            if comp is None:
                raise ManifestError(
                    m.name, f"compensation {m.compensation.tool} is not a registered tool"
                )
            if comp.effect is not Effect.IDEMPOTENT:
                raise ManifestError(
                    m.name,
                    f"compensation {comp.name} must be idempotent, but its effect is {comp.effect.value}",
                )
            props = set(comp.input_schema.get("properties", {}))
            required = set(comp.input_schema.get("required", []))
            mapped = set(m.compensation.argument_map)
            extra = sorted(mapped - props)
            if extra and comp.input_schema.get("additionalProperties", True) is False:
                raise ManifestError(
                    m.name, f"argument_map gives {comp.name} arguments it does not take: {extra}"
                )
            if extra:
                raise ManifestError(
                    m.name, f"argument_map gives {comp.name} arguments it does not declare: {extra}"
                )
            missing = sorted(required - mapped)
            if missing:
                raise ManifestError(
                    m.name, f"argument_map lacks required arguments of {comp.name}: {missing}"
                )
            for arg, source in m.compensation.argument_map.items():
                if isinstance(source, Const) or not source.startswith("args."):
                    continue
                if not _schema_has_path(m.input_schema, source.split(".")[1:]):
                    raise ManifestError(
                        m.name, f"argument_map[{arg!r}] = {source!r} names no input property"
                    )
        for req in m.requires:
            earlier = by_name.get(req.tool)
            if earlier is None:
                raise ManifestError(m.name, f"requires names unknown tool {req.tool}")
            for match in req.match:
                if not match.this.startswith("args."):
                    raise ManifestError(
                        m.name,
                        f"requires source {match.this!r}: 'this' must name an argument "
                        "(edges are recorded before the call runs)",
                    )
                for source, schema in (
                    (match.this, m.input_schema),
                    (match.earlier, earlier.input_schema),
                ):
                    if source.startswith("args.") and not _schema_has_path(
                        schema, source.split(".")[1:]
                    ):
                        raise ManifestError(
                            m.name, f"requires source {source!r} names no input property"
                        )

    # -- lookup ---------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self._manifests

    def __iter__(self) -> Iterator[Manifest]:
        return iter(self._manifests.values())

    def __len__(self) -> int:
        return len(self._manifests)

    @property
    def names(self) -> list[str]:
        """Sorted tool names."""
        return sorted(self._manifests)

    def get(self, name: str) -> Manifest:
        """Return the manifest of ``name``; raises :class:`UnknownToolError`."""
        try:
            return self._manifests[name]
        except KeyError:
            raise UnknownToolError(f"unknown tool {name!r}: no manifest declares it") from None

    def validate_arguments(self, name: str, args: Any) -> None:
        """Check ``args`` against the tool's input schema.

        Raises :class:`InvalidArgumentsError` whose ``problems`` list one line per field,
        such as ``"args.path: 3 is not of type 'string'"``.
        """
        manifest = self.get(name)
        validator = self._validators.get(name)
        if validator is None:
            validator = Draft202012Validator(manifest.input_schema)
            self._validators[name] = validator
        if not isinstance(args, dict):
            raise InvalidArgumentsError(
                f"invalid arguments for {name}: expected a JSON object, got {type(args).__name__}",
                problems=["args: not an object"],
            )
        problems = []
        for error in sorted(validator.iter_errors(args), key=lambda e: list(map(str, e.path))):
            where = ".".join(["args", *map(str, error.path)])
            problems.append(f"{where}: {error.message}")
        if problems:
            raise InvalidArgumentsError(
                f"invalid arguments for {name}: " + "; ".join(problems), problems=problems
            )

    def default_scope(self) -> set[str]:
        """The permissions an agent gets when none are listed explicitly.

        Every permission, except those needed only by idempotent tools (the destructive
        ones that exist to be compensations, such as ``github:branch:delete``) and by
        irreversible tools.
        """
        granted: set[str] = set()
        for m in self._manifests.values():
            if m.effect not in (Effect.IDEMPOTENT, Effect.IRREVERSIBLE):
                granted.add(m.permission)
        return granted

    def schema_hashes(self) -> dict[str, str]:
        """``{tool: schema_hash(input_schema)}`` for every manifest."""
        return {n: schema_hash(m.input_schema) for n, m in self._manifests.items()}
