"""The template connector's tools against its fake, and a rollback through the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector___connector__ import __Connector__Connector
from reversi_connector___connector__.testing import CERTIFICATION_TOKEN, Fake__Connector__
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.testing import FakeServer


@pytest.mark.anyio
async def test_create_is_rolled_back_against_the_fake(tmp_path: Path) -> None:
    fake = Fake__Connector__()
    with FakeServer(fake) as server:
        connector = __Connector__Connector(token=CERTIFICATION_TOKEN, base_url=server.url)
        journal = SQLiteJournal.open(tmp_path / "data")
        run = Run.start(journal, registry_for([connector]), executor=executor_for([connector]))
        _, created = await run.call("__connector__.create_note", {"text": "hello"})
        assert fake.notes == {created["id"]: "hello"}
        report = await run.rollback(compensate=compensator_for([connector]))
        assert report.complete
        assert fake.notes == {}
        assert server.requests[-1].method == "DELETE"
        await connector.aclose()
        journal.close()
