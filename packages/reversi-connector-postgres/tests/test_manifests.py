"""Manifests, input schemas, configuration and secrets of the postgres connector."""

from __future__ import annotations

import re

import pytest

from reversi_connector_postgres import IDENTIFIER_PATTERN, PostgresConnector
from reversi_core import registry_for
from reversi_core.connector import available_connectors, load_connector_class
from reversi_core.errors import ConfigurationError
from reversi_core.manifest import Effect
from reversi_core.redact import scrub


def manifests() -> dict[str, dict[str, object]]:
    return {m.name: m.to_json() for m in PostgresConnector.manifests()}


def test_entry_point_and_registry() -> None:
    assert available_connectors()["postgres"] == "reversi_connector_postgres:PostgresConnector"
    assert load_connector_class("postgres") is PostgresConnector
    registry = registry_for([PostgresConnector])
    assert registry.names == [
        "postgres.delete_row",
        "postgres.insert_row",
        "postgres.query",
        "postgres.restore_row",
        "postgres.update_row",
    ]
    assert PostgresConnector.credential_env == "POSTGRES_URL"


def test_effects_permissions_and_compensations_follow_the_spec() -> None:
    found = {
        name: (m["effect"], m["permission"], (m["compensation"] or {}).get("tool"))
        for name, m in manifests().items()
    }
    assert found == {
        "postgres.query": (Effect.READ_ONLY, "postgres:rows:read", None),
        "postgres.insert_row": (Effect.REVERSIBLE, "postgres:rows:write", "postgres.delete_row"),
        "postgres.update_row": (Effect.REVERSIBLE, "postgres:rows:write", "postgres.restore_row"),
        "postgres.delete_row": (Effect.IDEMPOTENT, "postgres:rows:delete", None),
        "postgres.restore_row": (Effect.IDEMPOTENT, "postgres:rows:write", None),
    }
    insert = manifests()["postgres.insert_row"]["compensation"]
    assert insert == {
        "tool": "postgres.delete_row",
        "argument_map": {
            "table": "result.table",
            "schema": "result.schema",
            "key_column": "result.key_column",
            "key": "result.key",
            "inserted": "result.inserted",
        },
        # no resources: rows are tied by foreign keys and triggers a manifest cannot see,
        # so a rollback undoes them one at a time (docs/connectors/postgres.md)
        "resources": None,
    }
    update = manifests()["postgres.update_row"]["compensation"]
    assert isinstance(update, dict)
    assert update["resources"] is None
    assert update["argument_map"]["values"] == "result.previous"
    assert update["argument_map"]["written"] == "result.written"


def test_update_row_declares_it_depends_on_earlier_changes_to_the_row() -> None:
    requires = manifests()["postgres.update_row"]["requires"]
    assert isinstance(requires, list)
    assert [r["tool"] for r in requires] == ["postgres.insert_row", "postgres.update_row"]


def test_every_name_argument_carries_the_identifier_pattern() -> None:
    for name, manifest in manifests().items():
        schema = manifest["input_schema"]
        assert isinstance(schema, dict)
        assert schema.get("additionalProperties") is False, name
        props = schema["properties"]
        for arg in ("table", "key_column"):
            if arg in props:
                assert props[arg]["pattern"] == IDENTIFIER_PATTERN, (name, arg)
        if "schema" in props:
            patterns = [v.get("pattern") for v in props["schema"]["anyOf"]]
            assert IDENTIFIER_PATTERN in patterns, name
        if "values" in props:
            assert props["values"]["propertyNames"] == {"pattern": IDENTIFIER_PATTERN}, name
    query = manifests()["postgres.query"]["input_schema"]
    assert isinstance(query, dict)
    assert query["properties"]["sql"]["pattern"] == "^[^;]*$"
    assert re.fullmatch(IDENTIFIER_PATTERN.strip("^$"), "a" * 63)


def test_from_env_needs_postgres_url() -> None:
    with pytest.raises(ConfigurationError, match="POSTGRES_URL is not set"):
        PostgresConnector.from_env({})
    with pytest.raises(ConfigurationError, match="POSTGRES_URL is not set"):
        PostgresConnector.from_env({"POSTGRES_URL": ""})


def test_url_and_password_are_registered_as_secrets() -> None:
    password = "s3cret-Pa55word-for-tests"
    url = f"postgresql://agent:{password}@db.internal:5432/app"
    PostgresConnector.from_env({"POSTGRES_URL": url, "PGPASSWORD": "another-pg-password"})
    assert password not in scrub(f"failed for {password}")
    assert url not in scrub(f"dsn was {url}")
    assert "another-pg-password" not in scrub("pw another-pg-password")
    keyvalue = "host=db user=agent password=kv-password-123 dbname=app"
    PostgresConnector(keyvalue)
    assert "kv-password-123" not in scrub("kv-password-123")


def test_invalid_url_is_refused_without_quoting_it() -> None:
    bad = "postgresql://agent:leaky-password-9@db/app?nonsense_option=1"
    with pytest.raises(ConfigurationError) as caught:
        PostgresConnector(bad)
    assert "leaky-password-9" not in str(caught.value)
    assert "POSTGRES_URL is not a valid" in str(caught.value)


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="positive"):
        PostgresConnector("postgresql://localhost/app", timeout=0)
