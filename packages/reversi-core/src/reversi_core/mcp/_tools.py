"""What the gateway serves: the manifests it reads and the tools it lists or withholds."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import yaml

from ..engine import Withheld
from ..errors import ConfigurationError, ManifestError
from ..registry import Registry, schema_hash
from .serve import tool_annotations

__all__ = ["DRIFTED_META", "MANIFEST_SUFFIXES", "ToolIndex", "load_manifest_dir"]

DRIFTED_META = "reversi/drifted"
"""``_meta`` key of a listed tool: true when calls to it are refused for drift."""

MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")


def load_manifest_dir(directory: str | Path) -> Registry:
    """Read every ``*.json``, ``*.yaml`` and ``*.yml`` in ``directory`` into a registry.

    Each file holds a list of manifest objects (what ``reversi-connectors manifests
    NAME`` prints) or a single one. Raises :class:`ConfigurationError` for a missing or
    empty directory or an unreadable file, and :class:`ManifestError` (naming the tool
    and, in the problem, its file) for an invalid manifest set.
    """
    path = Path(directory)
    if not path.is_dir():
        raise ConfigurationError(f"--manifests {path}: not a directory")
    files = sorted(p for p in path.iterdir() if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    if not files:
        raise ConfigurationError(
            f"--manifests {path}: no *.json, *.yaml or *.yml files; write them with "
            f"'reversi-connectors manifests NAME > {path}/NAME.json'"
        )
    raw: list[Any] = []
    origin: dict[str, Path] = {}
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
            data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            problem = " ".join(str(exc).split())
            raise ConfigurationError(f"--manifests: cannot read {file}: {problem}") from None
        items = data if isinstance(data, list) else [data]
        for item in items:
            if not isinstance(item, dict):
                raise ConfigurationError(
                    f"--manifests: {file} must hold a list of manifest objects, "
                    f"found {type(item).__name__}"
                )
            name = item.get("name")
            if isinstance(name, str):
                origin.setdefault(name, file)
            raw.append(item)
    try:
        return Registry.from_manifests(raw)
    except ManifestError as exc:
        where = origin.get(exc.tool)
        suffix = f" (in {where})" if where is not None else ""
        raise ManifestError(exc.tool, f"{exc.problem}{suffix}") from None


@dataclass
class ToolIndex:
    """What the gateway serves, computed once per upstream (re)start.

    ``listed``: the downstream tool definitions; ``withheld``: tool name -> why every
    call to it is refused (drifted, or declared by a manifest but not offered by the
    upstream), which the engine applies (:attr:`reversi_core.engine.Run.withheld`);
    ``drifted``: the drifted names; ``hidden``: upstream tools without a manifest;
    ``missing``: manifests without an upstream tool.
    """

    listed: list[types.Tool]
    withheld: dict[str, Withheld]
    drifted: list[str]
    hidden: list[str]
    missing: list[str]

    @classmethod
    def build(
        cls,
        registry: Registry,
        upstream_tools: Iterable[types.Tool],
        namespace: str | None = None,
    ) -> ToolIndex:
        """Match the upstream's tools against the manifests (see the class docstring).

        With ``namespace`` ``NS``, the upstream's tool ``T`` is the manifests' ``NS.T``
        (listed as ``T``); ``withheld``, ``drifted`` and ``missing`` name manifests.
        """
        prefix = f"{namespace}." if namespace else ""
        listed: list[types.Tool] = []
        withheld: dict[str, Withheld] = {}
        drifted: list[str] = []
        hidden: list[str] = []
        offered: set[str] = set()
        for tool in upstream_tools:
            name = prefix + tool.name
            if name not in registry:
                hidden.append(tool.name)
                continue
            manifest = registry.get(name)
            offered.add(name)
            upstream_hint = tool.annotations.open_world_hint if tool.annotations else None
            annotations = tool_annotations(
                manifest, open_world=True if upstream_hint is None else upstream_hint
            )
            meta = dict(tool.meta or {})
            meta.update(
                {
                    "reversi/effect": manifest.effect.value,
                    "reversi/permission": manifest.permission,
                    "reversi/approval": manifest.approval.value,
                }
            )
            description = tool.description or manifest.description or None
            if schema_hash(tool.input_schema) != schema_hash(manifest.input_schema):
                drifted.append(name)
                withheld[name] = Withheld(
                    "drifted",
                    f"{name} is refused: the upstream's input schema for it differs from "
                    f"its manifest (the connector changed since the manifests were written). "
                    f"Regenerate them with 'reversi-connectors manifests {manifest.connector}' "
                    f"into the --manifests directory and restart reversi-gateway",
                )
                meta[DRIFTED_META] = True
                description = "[refused until the manifests are regenerated] " + (description or "")
            listed.append(
                tool.model_copy(
                    update={
                        "annotations": annotations,
                        "meta": meta,
                        "description": description,
                    }
                )
            )
        missing = sorted(n for n in registry.names if n not in offered)
        for name in missing:
            withheld[name] = Withheld(
                "not_offered",
                f"{name} is refused: it has a manifest but the upstream server does not offer it",
            )
        return cls(listed, withheld, sorted(drifted), sorted(hidden), missing)
