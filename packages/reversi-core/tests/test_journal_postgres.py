"""What only the PostgreSQL journal has: its migrations table, first opens at once, the
privileges of its role, its connection (lost and found again), owners on other hosts,
and a URL whose password is never repeated (docs/engine.md, "The PostgreSQL journal").

Each test gets a fresh schema on the session's server (``pg_location``, conftest.py).
"""

from __future__ import annotations

import secrets
import time
import urllib.parse
from typing import Any

import psycopg
import pytest
from _stores import make_version_1, sql
from psycopg import sql as pgsql

from reversi_core import (
    JournalError,
    JournalVersionError,
    RollbackInProgressError,
    RunStatus,
    StepState,
)
from reversi_core.__about__ import __version__
from reversi_core.journal import Durability, open_journal
from reversi_core.journal._approvals import approvals_of
from reversi_core.journal._pg_conn import advisory_key
from reversi_core.journal._pg_schema import PG_MIGRATIONS, PG_TABLES
from reversi_core.journal.postgres import PostgresJournal
from reversi_core.journal.sqlite import SCHEMA_VERSION
from reversi_core.redact import scrub
from reversi_core.testing.postgres import PostgresServer, as_uri

OTHER_HOST_OWNER = "another-host.invalid:4242:987654"
"""A process of a host that cannot be asked: alive exactly while its advisory lock is held."""


def _schema(location: str) -> str:
    return str(sql(location, "SELECT current_schema()")[0][0])


def _database(location: str) -> str:
    return str(sql(location, "SELECT current_database()")[0][0])


def _pending_step(location: str, owner: str, run_id: str = "run_a", seq: int = 1) -> None:
    """A step left ``pending`` by ``owner`` (as a gateway mid-call leaves it)."""
    sql(
        location,
        "INSERT INTO steps (run_id, seq, tool, effect, permission, args, state, idempotency_key, "
        "owner, started_at) VALUES (%s, %s, 'mem.put', 'reversible', 'x:y', '{}', 'pending', "
        "%s, %s, 1.0)",
        [run_id, seq, f"reversi-{run_id}-{seq}", owner],
    )
    sql(location, "UPDATE runs SET last_seq = %s WHERE id = %s", [seq, run_id])


def _wait_released(location: str, owner: str) -> None:
    """Until no session holds ``owner``'s lock (a closed connection's backend ends a moment later)."""
    key = advisory_key("owner", owner)
    deadline = time.monotonic() + 30
    while sql(
        location,
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
        "AND ((classid::bigint << 32) | objid::bigint) = %s",
        [key],
    ) != [(0,)]:
        assert time.monotonic() < deadline, "the server kept a closed session's lock"
        time.sleep(0.01)


# -- migrations ----------------------------------------------------------------------


@pytest.mark.req("JNL-8")
def test_the_first_open_creates_the_schema_and_records_each_migration(pg_location: str) -> None:
    journal = open_journal(pg_location)
    try:
        assert isinstance(journal, PostgresJournal)
        assert journal.schema == _schema(pg_location)
        assert journal.location.startswith("postgresql://127.0.0.1:")
        assert journal.location.endswith(f"/{_database(pg_location)}")
    finally:
        journal.close()
    rows = sql(pg_location, "SELECT version, reversi_core FROM reversi_migrations ORDER BY version")
    assert rows == [(n, __version__) for n in range(1, SCHEMA_VERSION + 1)]
    assert len(PG_MIGRATIONS) == SCHEMA_VERSION  # one migration per version, as SQLite's
    tables = {
        r[0]
        for r in sql(
            pg_location, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )
    }
    assert tables == {*PG_TABLES, "reversi_migrations"}
    again = open_journal(pg_location, create=False)  # migrated: nothing more to do
    again.close()
    assert len(sql(pg_location, "SELECT * FROM reversi_migrations")) == SCHEMA_VERSION


def test_an_older_journal_is_migrated_forward_on_open(pg_location: str) -> None:
    open_journal(pg_location).close()
    make_version_1(pg_location)
    journal = open_journal(pg_location, create=False)
    try:
        journal.create_run("run_a", ["x:y"], None)
        step = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        journal.allow_overwrite("run_a", step.seq, {"by": "ada", "at": 1.0})
        assert journal.get_step("run_a", step.seq).overwrite == {"by": "ada", "at": 1.0}
        journal.finish_step(
            "run_a",
            step.seq,
            StepState.UNCERTAIN,
            result=None,
            error="lost",
            compensation=None,
            compensation_error=None,
        )
        journal.resolve_step("run_a", step.seq, False, None, None, None, "ada")
        assert journal.get_step("run_a", step.seq).resolved_by == "ada"
        approvals = approvals_of(journal)
        waiting = approvals.request_approval(
            "run_a", "mem.put", {}, None, requested_by="gw", timeout=30
        )
        assert approvals.get_approval(waiting.id) == waiting
    finally:
        journal.close()
    assert [
        r[0] for r in sql(pg_location, "SELECT version FROM reversi_migrations ORDER BY 1")
    ] == list(range(1, SCHEMA_VERSION + 1))


@pytest.mark.req("JNL-3")
def test_a_newer_journal_is_refused_and_left_as_it_is(pg_location: str) -> None:
    open_journal(pg_location).close()
    sql(
        pg_location,
        "INSERT INTO runs (id, started_at, status, scope) VALUES ('run_a', 1, 'open', '[]')",
    )
    _pending_step(pg_location, "gone-host.invalid:1:1")  # a dead owner's: recovery would touch it
    sql(
        pg_location,
        "INSERT INTO reversi_migrations VALUES (%s, 1, '9.9.9')",
        [SCHEMA_VERSION + 1],
    )
    with pytest.raises(JournalVersionError) as info:
        open_journal(pg_location)
    message = str(info.value)
    assert f"schema version {SCHEMA_VERSION + 1}, newer than the {SCHEMA_VERSION}" in message
    assert "upgrade reversi-core" in message
    assert sql(pg_location, "SELECT state FROM steps") == [("pending",)]  # not recovered
    assert sql(pg_location, "SELECT count(*) FROM events") == [(0,)]


def test_an_empty_schema_is_no_journal_without_create(pg_location: str) -> None:
    with pytest.raises(JournalError, match="no Reversi journal in postgresql://"):
        open_journal(pg_location, create=False)
    assert sql(
        pg_location, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
    ) == [(0,)]


def test_no_schema_to_create_in_is_refused_with_an_options_parameter_that_parses(
    pg_location: str,
) -> None:
    import re

    params = psycopg.conninfo.conninfo_to_dict(pg_location)
    params.pop("options", None)
    base = as_uri(psycopg.conninfo.make_conninfo("", **params))
    glue = "&" if "?" in base else "?"
    missing = f"{base}{glue}options=-csearch_path%3Dno_such_schema_{secrets.token_hex(3)}"
    with pytest.raises(JournalError, match="no schema to create the journal's tables in") as info:
        open_journal(missing)
    hint = re.search(r"options=\S+SCHEMA", str(info.value))
    assert hint is not None, str(info.value)
    assert hint.group(0) == "options=-csearch_path%3DSCHEMA"
    # the hint, as written, with the schema named: libpq reads it, and the journal opens there
    schema = _schema(pg_location)
    url = f"{base}{glue}{hint.group(0).replace('SCHEMA', schema)}"
    assert psycopg.conninfo.conninfo_to_dict(url)["options"] == f"-csearch_path={schema}"
    with open_journal(url) as journal:
        assert journal.schema == schema


def test_tables_of_another_program_are_refused(pg_location: str) -> None:
    sql(pg_location, "CREATE TABLE runs (id integer)")
    with pytest.raises(JournalError, match="holds runs but no Reversi schema version"):
        open_journal(pg_location)
    assert sql(
        pg_location, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
    ) == [(1,)]


# -- the role -----------------------------------------------------------------------------


@pytest.fixture
def roles(pg_server: PostgresServer, pg_location: str) -> Any:
    """Two login roles with exactly the privileges docs/engine.md lists: ``owner`` may
    create in the schema (the first open, migrations), ``gateway`` only uses the tables."""
    schema, database = _schema(pg_location), _database(pg_location)
    suffix = secrets.token_hex(4)
    made = {"owner": f"journal_owner_{suffix}", "gateway": f"journal_gw_{suffix}"}
    password = "pw-" + secrets.token_hex(8)
    s = pgsql.Identifier(schema)
    with pg_server.admin() as conn:
        for role in made.values():
            r = pgsql.Identifier(role)
            conn.execute(
                pgsql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(r, pgsql.Literal(password))
            )
            conn.execute(
                pgsql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                    pgsql.Identifier(database), r
                )
            )
            conn.execute(pgsql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(s, r))
        conn.execute(
            pgsql.SQL("GRANT CREATE ON SCHEMA {} TO {}").format(s, pgsql.Identifier(made["owner"]))
        )

    def url(role: str) -> str:
        return pg_server.url(
            user=made[role], password=password, dbname=database, options=f"-c search_path={schema}"
        )

    yield {"url": url, "names": made, "schema": schema}
    with pg_server.admin() as conn:
        for role in made.values():
            conn.execute(pgsql.SQL("DROP OWNED BY {}").format(pgsql.Identifier(role)))
            conn.execute(pgsql.SQL("DROP ROLE {}").format(pgsql.Identifier(role)))


@pytest.mark.anyio
async def test_a_role_with_select_insert_update_runs_everything_after_the_first_open(
    roles: Any, pg_server: PostgresServer
) -> None:
    from _memconnector import MemConnector

    from reversi_core import Run, compensator_for, registry_for
    from reversi_core.connector import executor_for

    with pytest.raises(JournalError) as info:  # no CREATE: it cannot make the tables
        open_journal(roles["url"]("gateway"))
    assert "SQLSTATE 42501" in str(info.value)
    assert "needs CREATE on its schema for the first open" in str(info.value)
    open_journal(roles["url"]("owner")).close()  # the first open, by the role that may create
    s = pgsql.Identifier(roles["schema"])
    with pg_server.admin() as conn:
        conn.execute(
            pgsql.SQL("GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA {} TO {}").format(
                s, pgsql.Identifier(roles["names"]["gateway"])
            )
        )
    journal = open_journal(roles["url"]("gateway"))
    try:  # every kind of write the engine makes: steps, reads, a rollback, a resolution
        mem = MemConnector()
        registry = registry_for([mem])
        run = Run.start(journal, registry, executor=executor_for([mem]))
        await run.call("mem.put", {"key": "a", "value": "1"})
        await run.call("mem.get", {"key": "a"})
        await run.attempt("mem.nope", {})
        report = await run.rollback(compensate=compensator_for([mem]))
        assert report.complete
        assert next(e["kind"] for e in journal.list_events(run.id)) == "rollback_started"
    finally:
        journal.close()


# -- errors and the URL ----------------------------------------------------------------------


@pytest.mark.req("JNL-4")
def test_server_errors_reach_callers_as_journal_errors(pg_location: str) -> None:
    journal = open_journal(pg_location)
    try:
        journal.create_run("run_a", ["x:y"], None)
        sql(pg_location, "DROP TABLE edges")
        with pytest.raises(JournalError, match=r"UndefinedTable \(SQLSTATE 42P01\)") as info:
            journal.list_steps("run_a")
        assert not isinstance(info.value, psycopg.Error)
        assert info.value.__cause__ is None
    finally:
        journal.close()


def test_a_wrong_password_is_refused_without_repeating_it(
    pg_server: PostgresServer, pg_location: str
) -> None:
    password = "wrong-" + secrets.token_hex(8)
    database = _database(pg_location)
    url = pg_server.url(user="postgres", password=password, dbname=database)
    with pytest.raises(JournalError) as info:
        open_journal(url)
    message = str(info.value)
    assert message.startswith(
        f"cannot connect to the PostgreSQL journal at postgresql://{pg_server.host}:{pg_server.port}/{database}: "
    )
    assert "password authentication failed" in message
    assert password not in message
    assert scrub(f"x {password} y") == "x [REDACTED] y"  # registered: scrubbed everywhere
    quoted = urllib.parse.quote(password)
    assert quoted not in message


def test_a_lost_connection_is_said_and_the_next_use_connects_again(pg_location: str) -> None:
    journal = open_journal(pg_location)
    assert isinstance(journal, PostgresJournal)
    try:
        journal.create_run("run_a", ["x:y"], None)
        pid = journal._conn.info.backend_pid
        sql(pg_location, "SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(JournalError, match="connection to the server was lost") as info:
            journal.get_run("run_a")
        assert pg_location not in str(info.value)
        assert journal.get_run("run_a").status is RunStatus.OPEN  # connected again
        assert journal._conn.info.backend_pid != pid
        key = advisory_key("owner", journal._owner)
        held = sql(
            pg_location,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s "
            "AND ((classid::bigint << 32) | objid::bigint) = %s",
            [journal._conn.info.backend_pid, key],
        )
        assert held == [(1,)]  # the new connection holds the owner's lock again
    finally:
        journal.close()


def test_text_postgresql_cannot_hold_is_journaled_all_the_same(pg_location: str) -> None:
    journal = open_journal(pg_location)
    try:
        journal.create_run("run_a", ["x:y"], "client\0name")
        seq = journal.record_rejected(
            "run_a", "mem.\0nope", "unknown", "unknown", {"k": "a\0b"}, "why\0", "no\0", None
        )
        step = journal.get_step("run_a", seq)
        assert (step.tool, step.reason, step.error) == ("mem.\ufffdnope", "why\ufffd", "no\ufffd")
        assert step.args == {"k": "a\0b"}  # JSON keeps it exactly
        assert journal.get_run("run_a").label == "client\ufffdname"
    finally:
        journal.close()


def test_durability_power_makes_every_commit_synchronous(pg_location: str) -> None:
    # the test server runs with synchronous_commit=off: power overrides it, process keeps it
    for durability, expected in ((Durability.POWER, "on"), (Durability.PROCESS, "off")):
        journal = open_journal(pg_location, durability=durability)
        assert isinstance(journal, PostgresJournal)
        try:
            assert journal._conn.execute("SHOW synchronous_commit").fetchone()[0] == expected
        finally:
            journal.close()


# -- owners on other hosts ---------------------------------------------------------------------


@pytest.mark.req("JNL-1", "JNL-7")
def test_a_step_of_another_hosts_gateway_is_pending_while_it_is_connected(
    pg_location: str,
) -> None:
    open_journal(pg_location).close()
    sql(
        pg_location,
        "INSERT INTO runs (id, started_at, status, scope) VALUES ('run_a', 1, 'open', '[]')",
    )
    _pending_step(pg_location, OTHER_HOST_OWNER)
    # the other host's gateway: a session holding its owner's lock, as the journal's does
    gateway = psycopg.connect(pg_location, autocommit=True)
    try:
        gateway.execute(
            "SELECT pg_advisory_lock_shared(%s)", [advisory_key("owner", OTHER_HOST_OWNER)]
        )
        journal = open_journal(pg_location, create=False)
        try:
            assert journal.get_step("run_a", 1).state is StepState.PENDING  # never stolen
        finally:
            journal.close()
    finally:
        gateway.close()  # the gateway's process ended: the server lets go of its lock
    _wait_released(pg_location, OTHER_HOST_OWNER)
    journal = open_journal(pg_location, create=False)
    try:
        step = journal.get_step("run_a", 1)
        assert step.state is StepState.UNCERTAIN
        assert "(pid 4242) stopped before recording its outcome" in (step.error or "")
        assert [e["kind"] for e in journal.list_events("run_a")] == ["recovered"]
    finally:
        journal.close()


@pytest.mark.req("RB-9", "JNL-7")
def test_a_rollback_held_on_another_host_is_refused_until_that_host_lets_go(
    pg_location: str,
) -> None:
    journal = open_journal(pg_location)
    try:
        journal.create_run("run_a", ["x:y"], None)
        sql(
            pg_location,
            "UPDATE runs SET status = 'rolling_back', rollback_owner = %s WHERE id = 'run_a'",
            [OTHER_HOST_OWNER],
        )
        other = psycopg.connect(pg_location, autocommit=True)
        try:
            other.execute(
                "SELECT pg_advisory_lock_shared(%s)", [advisory_key("owner", OTHER_HOST_OWNER)]
            )
            with pytest.raises(RollbackInProgressError) as info:
                journal.start_rollback("run_a")
            assert (
                "being rolled back by another process (pid 4242) on host another-host.invalid"
                in str(info.value)
            )
            assert "refused to run at the same time (it does not wait)" in str(info.value)
        finally:
            other.close()
        _wait_released(pg_location, OTHER_HOST_OWNER)
        record = journal.start_rollback("run_a")  # that host's process is gone: its lock is free
        assert record.status is RunStatus.ROLLING_BACK
        journal.finish_rollback("run_a", complete=True)
        assert journal.get_run("run_a").status is RunStatus.ROLLED_BACK
    finally:
        journal.close()


@pytest.mark.req("JNL-1", "JNL-7")
def test_an_owner_of_this_host_whose_pid_is_not_seen_lives_while_its_lock_is_held(
    pg_location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Containers on the host's network share its host name, not its pids: a process of
    another pid namespace looks gone to a pid check. It is judged dead only when its
    owner lock is free too."""
    from reversi_core.journal import _pg_owners
    from reversi_core.journal._owner import owner_alive, process_owner

    # how long a killed process's lock may linger (raising=False: absent before the fix)
    monkeypatch.setattr(_pg_owners, "DEAD_PID_GRACE", 0.05, raising=False)
    # this host, a pid no process of this namespace has (this pid with another start time)
    elsewhere = process_owner().rsplit(":", 1)[0] + ":0"
    assert not owner_alive(elsewhere)
    journal = open_journal(pg_location)
    try:
        journal.create_run("run_a", ["x:y"], None)
        journal.create_run("run_b", ["x:y"], None)
    finally:
        journal.close()
    _pending_step(pg_location, elsewhere)
    sql(
        pg_location,
        "UPDATE runs SET status = 'rolling_back', rollback_owner = %s WHERE id = 'run_b'",
        [elsewhere],
    )
    other = psycopg.connect(pg_location, autocommit=True)  # that process's journal session
    try:
        other.execute("SELECT pg_advisory_lock_shared(%s)", [advisory_key("owner", elsewhere)])
        journal = open_journal(pg_location, create=False)
        try:
            assert journal.get_step("run_a", 1).state is StepState.PENDING  # never stolen
            assert journal.get_run("run_b").status is RunStatus.ROLLING_BACK
            with pytest.raises(RollbackInProgressError, match="being rolled back by another"):
                journal.start_rollback("run_b")
        finally:
            journal.close()
    finally:
        other.close()
    _wait_released(pg_location, elsewhere)
    journal = open_journal(pg_location, create=False)  # now its pid and its lock are gone
    try:
        assert journal.get_step("run_a", 1).state is StepState.UNCERTAIN
        assert journal.get_run("run_b").status is RunStatus.ROLLBACK_INCOMPLETE
    finally:
        journal.close()


def test_a_password_file_keeps_the_password_out_of_the_url(
    roles: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = roles["url"]("owner")
    params = psycopg.conninfo.conninfo_to_dict(url)
    passfile = tmp_path / "pgpass"
    passfile.write_text(
        f"{params['host']}:{params['port']}:{params['dbname']}:{params['user']}:{params['password']}\n"
    )
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    bare = psycopg.conninfo.make_conninfo(
        "", **{k: v for k, v in params.items() if k != "password"}
    )
    journal = open_journal(as_uri(bare))
    try:
        journal.create_run("run_a", [], None)
        assert [r.id for r in journal.list_runs()] == ["run_a"]
    finally:
        journal.close()
