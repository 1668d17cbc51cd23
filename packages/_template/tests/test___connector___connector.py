"""The template connector's tools, manifests and rollback through the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector___connector__ import __Connector__Connector
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for


def test_manifests_form_a_valid_registry() -> None:
    registry = registry_for([__Connector__Connector])
    assert registry.names == ["__connector__.create_note", "__connector__.delete_note", "__connector__.get_note"]


@pytest.mark.anyio
async def test_create_is_rolled_back(tmp_path: Path) -> None:
    connector = __Connector__Connector()
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([connector]), executor=executor_for([connector]))
    _, created = await run.call("__connector__.create_note", {"text": "hello"})
    assert connector.notes == {created["id"]: "hello"}
    report = await run.rollback(compensate=compensator_for([connector]))
    assert report.complete
    assert connector.notes == {}
    journal.close()
