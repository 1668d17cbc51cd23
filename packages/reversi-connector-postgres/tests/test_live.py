"""postgres's live scenario, run as ``nox -s live -- postgres`` would, on a real server."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pgfixtures import Db

from reversi_connector_postgres import PostgresConnector
from reversi_connector_postgres.testing import LIVE, as_uri
from reversi_core.testing import LiveCheckFailed, MissingLiveVariables, run_live


@pytest.mark.anyio
async def test_the_scenario_passes_as_a_dedicated_role_and_leaves_the_database_as_it_was(
    db: Db, tmp_path: Path
) -> None:
    db.grant("GRANT CREATE ON SCHEMA public TO {agent}")  # what the docs ask of the live role
    before = db.checksums()
    lines: list[str] = []
    outcome = await run_live(
        PostgresConnector, LIVE, {"POSTGRES_URL": as_uri(db.agent_url)}, data_dir=tmp_path, log=lines.append
    )
    assert outcome.steps == 3  # insert, update, query
    assert outcome.cassette is None  # nothing recorded: not HTTP
    created = [line for line in lines if line.startswith("created public.reversi_live_")]
    assert len(created) == 1
    assert lines[-1] == created[0].replace("created", "dropped")
    assert db.checksums() == before  # the throwaway table is gone, nothing else touched
    tables = db.one("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'reversi_live_%'")
    assert tables == 0


@pytest.mark.anyio
async def test_the_scenario_names_what_it_needs_and_refuses_an_odd_schema(db: Db, tmp_path: Path) -> None:
    with pytest.raises(MissingLiveVariables, match="POSTGRES_URL"):
        await run_live(PostgresConnector, LIVE, {}, data_dir=tmp_path)
    environ = {"POSTGRES_URL": as_uri(db.agent_url), "REVERSI_LIVE_POSTGRES_SCHEMA": 'x"; DROP'}
    with pytest.raises(LiveCheckFailed, match="plain identifier"):
        await run_live(PostgresConnector, LIVE, environ, data_dir=tmp_path / "j")
