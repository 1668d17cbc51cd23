"""Finding a tool's manifest for ``reversi resolve`` and ``reversi console``: a directory of
manifest files (``--manifests DIR``), else the tool's installed connector."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ..connector import load_connector_class
from ..manifest import Manifest
from ._common import CliError

__all__ = ["load_manifest_files", "manifest_for"]


def load_manifest_files(directory: str, tool: str) -> Manifest | None:
    """The manifest of ``tool`` in the JSON/YAML files of ``directory``, or ``None``."""
    path = Path(directory)
    if not path.is_dir():
        raise CliError(f"--manifests {directory} is not a directory", 2)
    for file in sorted(path.iterdir()):
        if file.suffix not in (".json", ".yaml", ".yml"):
            continue
        try:
            text = file.read_text()
            data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise CliError(f"cannot read manifests from {file}: {exc}", 2) from None
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict) and item.get("name") == tool:
                try:
                    return Manifest.model_validate(item)
                except Exception as exc:
                    raise CliError(f"invalid manifest for {tool} in {file}: {exc}", 2) from None
    return None


def manifest_for(tool: str, manifests_dir: str | None) -> Manifest | None:
    """The manifest of ``tool`` from ``manifests_dir`` (when given) or its installed
    connector, or ``None``; raises :class:`CliError` (status 2) for an unreadable file."""
    if manifests_dir:
        found = load_manifest_files(manifests_dir, tool)
        if found is not None:
            return found
    try:
        cls = load_connector_class(tool.split(".", 1)[0])
    except Exception:
        return None
    return next((m for m in cls.manifests() if m.name == tool), None)
