"""The template connector's tools against its fake, and a rollback through the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector_gcalendar import GcalendarConnector
from reversi_connector_gcalendar.testing import CERTIFICATION_TOKEN, FakeGcalendar
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.testing import FakeServer


@pytest.mark.anyio
async def test_create_is_rolled_back_against_the_fake(tmp_path: Path) -> None:
    fake = FakeGcalendar()
    with FakeServer(fake) as server:
        connector = GcalendarConnector(token=CERTIFICATION_TOKEN, base_url=server.url)
        journal = SQLiteJournal.open(tmp_path / "data")
        run = Run.start(journal, registry_for([connector]), executor=executor_for([connector]))
        _, created = await run.call("gcalendar.create_note", {"text": "hello"})
        assert fake.notes == {created["id"]: "hello"}
        report = await run.rollback(compensate=compensator_for([connector]))
        assert report.complete
        assert fake.notes == {}
        assert server.requests[-1].method == "DELETE"
        await connector.aclose()
        journal.close()
