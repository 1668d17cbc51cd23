"""The registry: a validated set of manifests.

:meth:`Registry.from_manifests` refuses, with a :class:`~reversi_core.errors.ManifestError`
naming the tool, any set in which a rollback could not work end to end:

- a ``reversible`` or ``compensable`` tool without a compensation, or a ``read_only``,
  ``idempotent`` or ``irreversible`` tool with one;
- an ``irreversible`` tool whose approval is not ``always``;
- a ``read_only`` tool that declares a :class:`~reversi_core.manifest.Replay` (a read is
  never uncertain, so there is nothing to replay);
- a compensation tool that is not in the set or is not ``idempotent``;
- an argument map that does not produce exactly the compensation's arguments (a
  required argument missing, or an argument the compensation does not take);
- an ``args.`` source (in an argument map, a resource template or a ``requires``
  match) that the tool's input schema does not define;
- a ``result.`` source (in an argument map or a resource template, or the ``earlier``
  side of a ``requires`` match) that the output schema of the tool whose result it reads does not define, or
  that reads the result of a tool declaring no output schema (see :func:`path_problem`
  for what "defined" means: ``$ref``, nested objects, array indices and ``Optional``
  fields are followed; a key of a free-form mapping cannot be proven and is refused);
- an input or output schema that is not a valid JSON Schema, or an output schema that
  does not describe an object;
- a ``requires`` declaration naming an unknown tool;
- two manifests with one name.

Each message names the tool, the compensation or requirement, and the source, such as
``fs.write_file: compensation fs.restore_file: argument_map['backup'] = 'result.bakup' is
not in the output schema of fs.write_file: result has no property 'bakup' (it declares:
backup, existed, mode, path, sha256, size)``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from ._resources import template_sources
from ._schemacheck import fast_check
from .errors import InvalidArgumentsError, ManifestError, UnknownToolError
from .manifest import Approval, Const, Effect, Manifest

__all__ = [
    "ManifestDrift",
    "Registry",
    "canonical_json",
    "detect_manifest_drift",
    "path_problem",
    "schema_hash",
]


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


MAX_REF_DEPTH = 64
"""How many ``$ref`` and ``allOf`` hops a path check follows before it gives up (a cycle)."""


def path_problem(schema: Any, path: Sequence[str], *, root: str) -> str | None:
    """Why the JSON Schema ``schema`` does not define the dotted ``path``, or ``None`` when it does.

    ``path`` is a source's path after its root (``["created", "0"]`` for
    ``result.created.0``); ``root`` (``"args"`` or ``"result"``) starts the names in the
    message. A path is defined when every part of it is declared:

    - a name is a key of ``properties`` of an object schema;
    - a number (``0``, ``12``) is an index into an array schema (``items``, or
      ``prefixItems`` for a fixed position); whether the array is that long is known
      only when the call has run;
    - ``$ref`` (to ``#/...`` inside the schema, as pydantic's ``#/$defs/Name``) and
      ``allOf`` are followed: a name declared by any of the schemas a value must satisfy
      is declared;
    - for ``anyOf`` and ``oneOf`` every branch that is not ``null`` must declare it (an
      ``Optional`` field is its type or ``null``; a ``null`` value is found when the call
      has run and recorded with the step, as every missing value is).

    A name that an object schema does not list in ``properties`` is refused even when
    the schema allows other keys (``additionalProperties`` not false, as a free-form
    ``dict[str, Any]``, or no schema at all): nothing says such a key will be there, so
    the path cannot be proven. Map the whole mapping instead, or declare the key.
    """
    return _path_problem(schema, list(path), root, schema, 0)


def _path_problem(node: Any, parts: list[str], where: str, doc: Any, depth: int) -> str | None:
    if depth > MAX_REF_DEPTH:
        return f"{where}: the schema nests $ref/allOf more than {MAX_REF_DEPTH} deep (a cycle?)"
    if not parts:
        return None
    if node is False:
        return f"{where} can hold no value (its schema is false)"
    if not isinstance(node, Mapping) or not node.keys() - _ANNOTATIONS:
        return (
            f"{where} may be any value (its schema declares nothing), so "
            f"{where}.{parts[0]} cannot be proven to be there"
        )
    # 1. the node's own properties or items
    own = _own_problem(node, parts, where, doc, depth)
    if own is None:
        return None
    # 2. the schemas the value must satisfy too: its $ref and allOf
    members: list[Any] = list(node.get("allOf") or [])
    ref = node.get("$ref")
    if ref is not None:
        target = _resolve_ref(doc, ref)
        if target is _UNRESOLVED:
            return (
                f"{where}: cannot follow $ref {ref!r} (only '#/...' inside the schema is followed)"
            )
        members.insert(0, target)
    member_problems = [_path_problem(m, parts, where, doc, depth + 1) for m in members]
    if None in member_problems:
        return None
    # 3. the branches one of which it satisfies: each that is not null must declare the path
    alternatives = node.get("anyOf") or node.get("oneOf")
    branch_problem: str | None = None
    if alternatives:
        branches = [b for b in alternatives if not _is_null(b, doc)]
        if not branches:
            return f"{where} is always null, so it has no {parts[0]!r}"
        problems = [_path_problem(b, parts, where, doc, depth + 1) for b in branches]
        branch_problem = next((p for p in problems if p is not None), None)
        if branch_problem is None:
            return None
    if isinstance(own, str):
        return own
    for problem in (*member_problems, branch_problem):
        if problem is not None:
            return problem
    return f"{where} is not described as an object or an array, so it has no {parts[0]!r}"


_UNDECLARED = object()
"""``_own_problem``'s answer for a schema whose own keywords say nothing about the shape."""

_UNRESOLVED = object()

_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "$schema",
        "$id",
        "$defs",
        "definitions",
    }
)
"""Keywords that describe a schema without constraining its value."""


def _types(node: Mapping[str, Any]) -> set[str]:
    kind = node.get("type")
    found = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
    return found - {"null"}


def _own_problem(
    node: Mapping[str, Any], parts: list[str], where: str, doc: Any, depth: int
) -> str | object | None:
    """The path checked against ``node``'s own properties/items: ``None``, a problem or undeclared."""
    part, rest = parts[0], parts[1:]
    types = _types(node)
    props = node.get("properties")
    if isinstance(props, Mapping) and part in props:
        return _path_problem(props[part], rest, f"{where}.{part}", doc, depth + 1)
    if "object" in types or isinstance(props, Mapping) or "additionalProperties" in node:
        declared = sorted(props) if isinstance(props, Mapping) else []
        open_ = node.get("additionalProperties", True) is not False or "patternProperties" in node
        advice = f"declare it, or map {where} whole"
        if not declared:
            if open_:
                return f"{where} is a free-form mapping: nothing says {part!r} will be in it ({advice})"
            return f"{where} is an object without properties: it has no {part!r}"
        problem = f"{where} has no property {part!r} (it declares: {', '.join(declared)})"
        if open_:
            problem += f"; it takes other keys, but nothing says {part!r} will be there ({advice})"
        return problem
    if "array" in types or "items" in node or "prefixItems" in node:
        if not part.isdigit():
            return f"{where} is an array: {part!r} is not an index"
        prefix = node.get("prefixItems") or []
        item = prefix[int(part)] if int(part) < len(prefix) else node.get("items", True)
        return _path_problem(item, rest, f"{where}.{part}", doc, depth + 1)
    if types:
        return f"{where} is {' or '.join(sorted(types))}: it has no {part!r}"
    return _UNDECLARED


def _is_null(node: Any, doc: Any) -> bool:
    if isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
        node = _resolve_ref(doc, node["$ref"])
    if not isinstance(node, Mapping):
        return False
    kind = node.get("type")
    return (
        kind == "null"
        or kind == ["null"]
        or ("const" in node and node["const"] is None)
        or node.get("enum") == [None]
    )


def _resolve_ref(doc: Any, ref: Any) -> Any:
    """The schema a local ``$ref`` (``#`` or ``#/json/pointer``) points at, else ``_UNRESOLVED``."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        return _UNRESOLVED
    node = doc
    for token in ref[2:].split("/") if ref != "#" else []:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return _UNRESOLVED
    return node


def _source_problem(source: str, tool: Manifest) -> str | None:
    """Why an ``args.`` or ``result.`` source cannot be read from a call of ``tool``, or ``None``.

    The answer starts with the source, for the caller's message: ``'result.sha' is not
    in the output schema of github.create_issue: result has no property 'sha' ...``.
    """
    root, _, rest = source.partition(".")
    path = rest.split(".")
    if root == "args":
        problem = path_problem(tool.input_schema, path, root="args")
        return None if problem is None else f"{source!r} names no input property ({problem})"
    if tool.output_schema is None:
        return (
            f"{source!r} reads the result of {tool.name}, which declares no output_schema to "
            "check it against (every tool declares its result model)"
        )
    problem = path_problem(tool.output_schema, path, root="result")
    if problem is None:
        return None
    return f"{source!r} is not in the output schema of {tool.name}: {problem}"


class Registry:
    """A validated, immutable set of manifests, indexed by tool name."""

    def __init__(self, manifests: Mapping[str, Manifest]) -> None:
        """Prefer :meth:`from_manifests`, which validates; this constructor does not."""
        self._manifests = dict(manifests)
        # per tool: the fast check (where its schema allows one) and jsonschema's validator
        self._validators: dict[str, tuple[Callable[[Any], bool] | None, Draft202012Validator]] = {}

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
        for field_name, schema in (
            ("input_schema", m.input_schema),
            ("output_schema", m.output_schema),
        ):
            if schema is None:
                continue
            try:
                Draft202012Validator.check_schema(schema)
            except Exception as exc:
                raise ManifestError(
                    m.name, f"{field_name} is not a valid JSON Schema: {exc}"
                ) from None
        if m.output_schema is not None and m.output_schema.get("type") != "object":
            raise ManifestError(
                m.name,
                "output_schema must describe a JSON object ('type': 'object' at its root): "
                "a tool's result is one",
            )
        needs_comp = m.effect in (Effect.REVERSIBLE, Effect.COMPENSABLE)
        if needs_comp and m.compensation is None:
            raise ManifestError(m.name, f"effect {m.effect.value} needs a compensation")
        if not needs_comp and m.compensation is not None:
            raise ManifestError(m.name, f"effect {m.effect.value} takes no compensation")
        if m.effect is Effect.IRREVERSIBLE and m.approval is not Approval.ALWAYS:
            raise ManifestError(m.name, "an irreversible tool must have approval 'always'")
        if m.replay is not None and m.effect is Effect.READ_ONLY:
            raise ManifestError(
                m.name,
                "a read_only tool declares replay, but a read is never uncertain: "
                "there is nothing to replay",
            )
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
                if isinstance(source, Const):
                    continue
                problem = _source_problem(source, m)
                if problem is not None:
                    raise ManifestError(
                        m.name, f"compensation {comp.name}: argument_map[{arg!r}] = {problem}"
                    )
            for template in m.compensation.resources or []:
                for source in template_sources(template):
                    problem = _source_problem(source, m)
                    if problem is not None:
                        raise ManifestError(
                            m.name,
                            f"compensation {comp.name}: resources template {template!r}: {problem}",
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
                for side, source, tool in (
                    ("this", match.this, m),
                    ("earlier", match.earlier, earlier),
                ):
                    problem = _source_problem(source, tool)
                    if problem is not None:
                        raise ManifestError(
                            m.name, f"requires {earlier.name}: match {side} = {problem}"
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

    def lookup(self, name: str) -> Manifest | None:
        """The manifest of ``name``, or ``None`` when no manifest declares it."""
        return self._manifests.get(name)

    def get(self, name: str) -> Manifest:
        """Return the manifest of ``name``; raises :class:`UnknownToolError`."""
        try:
            return self._manifests[name]
        except KeyError:
            raise UnknownToolError(f"unknown tool {name!r}: no manifest declares it") from None

    def validate_arguments(self, name: str, args: Any) -> None:
        """Check ``args`` against the tool's input schema.

        Raises :class:`InvalidArgumentsError` whose ``problems`` list one line per field,
        such as ``"args.path: 3 is not of type 'string'"``, and :class:`UnknownToolError`
        for a tool without a manifest. JSON Schema 2020-12
        (https://json-schema.org/draft/2020-12/json-schema-validation), decided by
        ``jsonschema``, after a faster first check where one is sound
        (:mod:`reversi_core._schemacheck`).
        """
        checks = self._validators.get(name)
        if checks is None:
            schema = self.get(name).input_schema
            checks = self._validators[name] = (fast_check(schema), Draft202012Validator(schema))
        fast, validator = checks
        if not isinstance(args, dict):
            raise InvalidArgumentsError(
                f"invalid arguments for {name}: expected a JSON object, got {type(args).__name__}",
                problems=["args: not an object"],
            )
        if fast is not None and fast(args):  # its "valid" is trusted; jsonschema decides the rest
            return
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
