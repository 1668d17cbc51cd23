"""Every installed connector declares a documented, closed result model for every tool.

The registry checks each ``result.`` source against these models and ``Connector.call``
checks each result against them (``packages/reversi-core/tests/test_registry.py`` and
``test_call.py``); the certification suite's ``forward_success`` check runs every example
of every connector and validates its result against the output schema. Here: the
connectors found by entry point all load into one registry, and their result models say
what each field is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from reversi_core import ManifestError, Registry, registry_for
from reversi_core.connector import available_connectors, load_connector_class

CONNECTORS = sorted(available_connectors())


def test_the_workspace_connectors_are_installed() -> None:
    assert {"fs", "github", "postgres"} <= set(CONNECTORS)


def test_every_installed_connector_loads_into_one_registry() -> None:
    registry = registry_for([load_connector_class(n) for n in CONNECTORS])
    assert isinstance(registry, Registry)
    assert {m.connector for m in registry} == set(CONNECTORS)


def objects(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object schema with ``properties`` in ``schema``, with where it is."""
    if isinstance(schema, dict):
        if isinstance(schema.get("properties"), dict):
            yield where, schema
        for key, value in schema.items():
            yield from objects(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from objects(value, f"{where}/{index}")


@pytest.mark.parametrize("name", CONNECTORS)
def test_every_tool_declares_a_documented_closed_result_model(name: str) -> None:
    for manifest in load_connector_class(name).manifests():
        schema = manifest.output_schema
        assert schema is not None, manifest.name
        assert schema.get("type") == "object", manifest.name
        found = list(objects(schema, manifest.name))
        assert found, f"{manifest.name}: its result model declares no field"
        for where, model in found:
            assert model.get("description"), f"{where}: the result model has no docstring"
            assert model.get("additionalProperties") is False, f"{where} is not closed"
            for field, spec in model["properties"].items():
                assert spec.get("description"), f"{where}.{field} is not documented"
            assert set(model.get("required", [])) == set(model["properties"]), (
                f"{where}: every field of a result is always there (null when it has no value)"
            )


def test_a_typo_in_a_real_connectors_result_source_is_refused_at_load() -> None:
    manifests = [m.to_json() for m in load_connector_class("fs").manifests()]
    write = next(m for m in manifests if m["name"] == "fs.write_file")
    write["compensation"]["argument_map"]["backup"] = "result.bakup"
    with pytest.raises(ManifestError) as info:
        Registry.from_manifests(manifests)
    # the example in reversi_core.registry's docstring, word for word
    assert str(info.value) == (
        "fs.write_file: compensation fs.restore_file: argument_map['backup'] = 'result.bakup' "
        "is not in the output schema of fs.write_file: result has no property 'bakup' "
        "(it declares: backup, existed, mode, path, sha256, size)"
    )
