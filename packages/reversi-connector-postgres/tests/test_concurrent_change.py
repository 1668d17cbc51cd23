"""A rollback never overwrites a change someone made after the call (docs/engine.md, RB-10).

On the real server: the agent's ``insert_row`` or ``update_row``, then "a person" changes
the row over their own (superuser) connection, then the compensation with the arguments
the manifest's map computes, as the engine does. It must refuse with ``changed_since``,
name the columns that differ, and leave the row as the person left it; once the person
takes their change back it succeeds; with ``ctx.overwrite`` (a person's decision) it goes
ahead anyway. Values of jsonb, numeric, timestamptz and NULL columns that are equal but
written differently are not a change.
"""

from __future__ import annotations

from typing import Any

import pytest
from _pgfixtures import Db

from reversi_connector_postgres import PostgresConnector
from reversi_core.connector import CallContext
from reversi_core.errors import ToolError
from reversi_core.manifest import evaluate_argument_map

pytestmark = pytest.mark.anyio

UNDO = CallContext(compensation=True)
OVERWRITE = CallContext(compensation=True, overwrite=True)
MANIFESTS = {m.name: m for m in PostgresConnector.manifests()}


async def forward(db: Db, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Run ``tool`` as the agent; return its compensation and the arguments the map gives."""
    result = await db.connector().call(tool, args)
    compensation = MANIFESTS[tool].compensation
    assert compensation is not None
    return compensation.tool, evaluate_argument_map(compensation, args, result)


def person(db: Db, statement: str) -> None:
    with db.admin() as conn:
        conn.execute(statement.encode())


async def refused(db: Db, tool: str, args: dict[str, Any], words: str) -> ToolError:
    """The undo must refuse with ``words``, in one conditional statement, changing nothing."""
    before = db.rows()
    db.statements.clear()
    with pytest.raises(ToolError) as caught:
        await db.connector().call(tool, args, UNDO)
    assert caught.value.code == "changed_since", caught.value
    assert words in str(caught.value)
    assert "--overwrite STEP" in str(caught.value)
    assert db.rows() == before
    verb = {"postgres.restore_row": "UPDATE", "postgres.delete_row": "DELETE"}[tool]
    sent = [text.split()[0] for text, _ in db.statements]
    assert sent == ["BEGIN", verb, "SELECT", "ROLLBACK"]  # one write, matching nothing
    return caught.value


# -- update_row undone by restore_row --------------------------------------------------------


async def test_a_column_someone_changed_since_the_update_is_kept(db: Db) -> None:
    undo, args = await forward(
        db, "postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 10, "name": "x"}}
    )
    person(db, "UPDATE items SET qty = 11 WHERE id = 1")
    error = await refused(db, undo, args, "the column qty no longer holds what the update wrote")
    assert "the row of items with id = 1 changed since the update" in str(error)
    assert db.one("SELECT qty FROM items WHERE id = 1") == 11
    person(db, "UPDATE items SET qty = 10 WHERE id = 1")
    assert (await db.connector().call(undo, args, UNDO))["restored"] == 1
    assert db.one("SELECT qty || ' ' || name FROM items WHERE id = 1") == "3 apple"


async def test_every_column_that_differs_is_named(db: Db) -> None:
    undo, args = await forward(
        db, "postgres.update_row", {"table": "items", "key": 2, "values": {"qty": 6, "name": "y"}}
    )
    person(db, "UPDATE items SET qty = 7, name = 'z' WHERE id = 2")
    await refused(db, undo, args, "the columns qty, name no longer hold what the update wrote")


async def test_a_change_to_another_column_is_kept_by_the_restore(db: Db) -> None:
    undo, args = await forward(
        db, "postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 10}}
    )
    person(db, "UPDATE items SET name = 'renamed by a person' WHERE id = 1")
    assert (await db.connector().call(undo, args, UNDO))["restored"] == 1
    assert db.one("SELECT qty || ' ' || name FROM items WHERE id = 1") == "3 renamed by a person"


async def test_null_json_numeric_and_time_compare_by_value_not_by_spelling(db: Db) -> None:
    new = {"tags": {"b": 1, "a": [1.5]}, "price": "2.5", "seen": "2025-01-01 00:00:00+00"}
    undo, args = await forward(db, "postgres.update_row", {"table": "items", "key": 1, "values": new})
    # the same values written again, spelled otherwise: no change anyone could lose
    person(
        db,
        "UPDATE items SET tags = '{\"a\": [1.5],  \"b\": 1}', price = 2.500, "
        "seen = '2025-01-01 01:00:00+01' WHERE id = 1",
    )
    assert (await db.connector().call(undo, args, UNDO))["restored"] == 1
    assert db.one("SELECT tags FROM items WHERE id = 1") == {"colour": "red"}

    undo, args = await forward(
        db, "postgres.update_row", {"table": "items", "key": 2, "values": {"tags": {"k": 1}}}
    )
    assert args["values"] == {"tags": None}  # pear had no tags
    person(db, "UPDATE items SET tags = 'null'::jsonb WHERE id = 2")  # JSON null is not NULL
    await refused(db, undo, args, "the column tags no longer holds")


async def test_a_row_set_back_by_hand_counts_as_restored(db: Db) -> None:
    undo, args = await forward(
        db, "postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 10}}
    )
    person(db, "UPDATE items SET qty = 3 WHERE id = 1")
    assert (await db.connector().call(undo, args, UNDO))["restored"] == 0


async def test_a_row_someone_deleted_cannot_be_restored(db: Db) -> None:
    undo, args = await forward(
        db, "postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 10}}
    )
    person(db, "DELETE FROM items WHERE id = 1")
    with pytest.raises(ToolError) as caught:
        await db.connector().call(undo, args, UNDO)
    assert caught.value.code == "not_found"


async def test_overwrite_restores_over_the_later_change(db: Db) -> None:
    undo, args = await forward(
        db, "postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 10}}
    )
    person(db, "UPDATE items SET qty = 11 WHERE id = 1")
    db.statements.clear()
    assert (await db.connector().call(undo, args, OVERWRITE))["restored"] == 1
    assert db.one("SELECT qty FROM items WHERE id = 1") == 3
    assert db.statements[1] == ('UPDATE "items" SET "qty" = %s WHERE "id" = %s', ("3", 1))


# -- insert_row undone by delete_row ---------------------------------------------------------


async def test_a_row_someone_changed_since_the_insert_is_not_deleted(db: Db) -> None:
    undo, args = await forward(db, "postgres.insert_row", {"table": "items", "values": {"name": "fig"}})
    key = args["key"]
    person(db, f"UPDATE items SET qty = 4, tags = '[]' WHERE id = {key}")
    error = await refused(db, undo, args, "the columns qty, tags no longer hold what the insert wrote")
    assert f"with id = {key} changed since the insert" in str(error)
    assert "it was not deleted" in str(error)
    person(db, f"UPDATE items SET qty = 0, tags = NULL WHERE id = {key}")
    assert (await db.connector().call(undo, args, UNDO))["deleted"] == 1
    assert db.one(f"SELECT count(*) FROM items WHERE id = {key}") == 0


async def test_a_change_to_a_column_the_agent_did_not_set_is_seen_too(db: Db) -> None:
    undo, args = await forward(db, "postgres.insert_row", {"table": "items", "values": {"name": "fig"}})
    person(db, f"UPDATE items SET seen = now() WHERE id = {args['key']}")
    await refused(db, undo, args, "the column seen no longer holds what the insert wrote")


async def test_an_inserted_row_someone_deleted_is_already_undone(db: Db) -> None:
    undo, args = await forward(db, "postgres.insert_row", {"table": "items", "values": {"name": "fig"}})
    person(db, f"DELETE FROM items WHERE id = {args['key']}")
    assert (await db.connector().call(undo, args, UNDO))["deleted"] == 0


async def test_an_exact_numeric_survives_the_comparison(db: Db) -> None:
    db.grant(
        "CREATE TABLE exact (id serial PRIMARY KEY, n numeric(40, 30), f float8, js json)",
        "GRANT SELECT, INSERT, DELETE ON exact TO {agent}",
        "GRANT USAGE ON SEQUENCE exact_id_seq TO {agent}",
    )
    values = {"n": "0.123456789012345678901234567890", "f": 0.1, "js": {"b": 1, "a": 2}}
    undo, args = await forward(db, "postgres.insert_row", {"table": "exact", "values": values})
    assert "0.123456789012345678901234567890" in args["inserted"]
    assert (await db.connector().call(undo, args, UNDO))["deleted"] == 1


async def test_overwrite_deletes_the_changed_row(db: Db) -> None:
    undo, args = await forward(db, "postgres.insert_row", {"table": "items", "values": {"name": "fig"}})
    person(db, f"UPDATE items SET qty = 4 WHERE id = {args['key']}")
    assert (await db.connector().call(undo, args, OVERWRITE))["deleted"] == 1


async def test_a_stamping_trigger_stops_the_undo_of_an_insert_the_run_then_updated(
    db: Db, tmp_path: Any
) -> None:
    """The documented limit: the undo of the update fires the trigger again, so the row the
    insert left is no longer as it was, and the rollback stops there, naming the column."""
    from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
    from reversi_core.journal import RollbackState

    db.grant(
        "CREATE TABLE stamped (id serial PRIMARY KEY, v text, touched int NOT NULL DEFAULT 0)",
        "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN NEW.touched := OLD.touched + 1; RETURN NEW; END $$",
        "CREATE TRIGGER touch BEFORE UPDATE ON stamped FOR EACH ROW EXECUTE FUNCTION touch()",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON stamped TO {agent}",
        "GRANT USAGE ON SEQUENCE stamped_id_seq TO {agent}",
    )
    pg = db.connector()
    with SQLiteJournal.open(tmp_path) as journal:
        run = Run.start(journal, registry_for([pg]), executor=executor_for([pg]))
        inserted, made = await run.call("postgres.insert_row", {"table": "stamped", "values": {"v": "a"}})
        await run.call("postgres.update_row", {"table": "stamped", "key": made["key"], "values": {"v": "b"}})
        report = await run.rollback(compensate=compensator_for([pg]))
        [step] = [s for s in report.steps if s.seq == inserted]
        assert step.rollback_state is RollbackState.COMPENSATION_FAILED
        assert "the column touched no longer holds what the insert wrote" in (step.rollback_reason or "")
        assert db.one("SELECT v || ' ' || touched FROM stamped") == "a 2"
        run.allow_overwrite(inserted, by="the person who checked the row")
        assert (await run.rollback(compensate=compensator_for([pg]))).complete
        assert db.one("SELECT count(*) FROM stamped") == 0
