"""Rollback through the real engine, and the residue docs/connectors/postgres.md documents.

Each residue test shows, on a real server, one thing a rollback does not undo or does on
top of undoing: sequences stay advanced, triggers fire again on ``restore_row``, and
``ON DELETE CASCADE`` runs when an inserted row is deleted by the undo.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _pgfixtures import Db

from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.journal import RollbackState

pytestmark = pytest.mark.anyio


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[SQLiteJournal]:
    opened = SQLiteJournal.open(tmp_path / "journal")
    yield opened
    opened.close()


async def test_a_run_of_inserts_and_updates_rolls_back_to_the_same_content(
    db: Db, journal: SQLiteJournal
) -> None:
    pg = db.connector()
    before = db.checksums()
    run = Run.start(journal, registry_for([pg]), executor=executor_for([pg]))
    _, made = await run.call("postgres.insert_row", {"table": "items", "values": {"name": "kiwi"}})
    await run.call(
        "postgres.update_row", {"table": "items", "key": made["key"], "values": {"qty": 4}}
    )
    await run.call("postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 30}})
    await run.call("postgres.update_row", {"table": "items", "key": 1, "values": {"tags": [1]}})
    await run.call("postgres.query", {"sql": "SELECT count(*) FROM items"})
    assert db.checksums() != before
    steps = run.steps()
    assert steps[1].requires == [steps[0].seq]  # the update of the new row depends on its insert
    assert steps[3].requires == [steps[2].seq]  # a second update of row 1 on the first
    report = await run.rollback(compensate=compensator_for([pg]))
    assert report.complete, report
    assert db.checksums() == before
    again = await run.rollback(compensate=compensator_for([pg]))
    assert again.complete
    assert again.compensated_now == []
    assert db.checksums() == before


async def test_residue_a_rolled_back_insert_leaves_the_sequence_advanced(
    db: Db, journal: SQLiteJournal
) -> None:
    pg = db.connector()
    before = db.checksums()
    run = Run.start(journal, registry_for([pg]), executor=executor_for([pg]))
    _, made = await run.call("postgres.insert_row", {"table": "items", "values": {"name": "x"}})
    assert made["key"] == 3
    report = await run.rollback(compensate=compensator_for([pg]))
    assert report.complete
    assert db.checksums() == before  # the rows are back as they were...
    assert db.one("SELECT last_value FROM items_id_seq") == 3  # ...the sequence is not
    _, next_one = await Run.start(journal, registry_for([pg]), executor=executor_for([pg])).call(
        "postgres.insert_row", {"table": "items", "values": {"name": "y"}}
    )
    assert next_one["key"] == 4  # a gap where 3 was


async def test_residue_triggers_fire_again_on_restore_row(db: Db, journal: SQLiteJournal) -> None:
    db.grant(
        "ALTER TABLE items ADD COLUMN updated_at timestamptz, ADD COLUMN revisions int DEFAULT 0",
        "CREATE TABLE audit (id serial PRIMARY KEY, item int, old_qty int, new_qty int)",
        "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "NEW.updated_at := clock_timestamp(); NEW.revisions := OLD.revisions + 1; "
        "INSERT INTO audit (item, old_qty, new_qty) VALUES (OLD.id, OLD.qty, NEW.qty); "
        "RETURN NEW; END $$ SECURITY DEFINER",
        "CREATE TRIGGER items_touch BEFORE UPDATE ON items FOR EACH ROW EXECUTE FUNCTION touch()",
    )
    pg = db.connector()
    run = Run.start(journal, registry_for([pg]), executor=executor_for([pg]))
    await run.call("postgres.update_row", {"table": "items", "key": 1, "values": {"qty": 9}})
    report = await run.rollback(compensate=compensator_for([pg]))
    assert report.complete
    assert db.one("SELECT qty FROM items WHERE id = 1") == 3  # the value is back...
    assert db.one("SELECT revisions FROM items WHERE id = 1") == 2  # ...the trigger ran twice
    assert db.one("SELECT updated_at IS NOT NULL FROM items WHERE id = 1") is True
    with db.admin() as conn:
        audit = conn.execute(b"SELECT item, old_qty, new_qty FROM audit ORDER BY id").fetchall()
    assert audit == [(1, 3, 9), (1, 9, 3)]  # the undo is itself audited


async def test_residue_on_delete_cascade_runs_on_the_undo(db: Db, journal: SQLiteJournal) -> None:
    db.grant(
        "CREATE TABLE reviews (id serial PRIMARY KEY, "
        "item int NOT NULL REFERENCES items (id) ON DELETE CASCADE, body text)",
    )
    pg = db.connector()
    run = Run.start(journal, registry_for([pg]), executor=executor_for([pg]))
    _, made = await run.call("postgres.insert_row", {"table": "items", "values": {"name": "new"}})
    # meanwhile, someone else links a row of their own to the agent's new row
    db.grant(f"INSERT INTO reviews (item, body) VALUES ({int(made['key'])}, 'written by a person')")
    db.grant("INSERT INTO reviews (item, body) VALUES (1, 'on an old item')")
    report = await run.rollback(compensate=compensator_for([pg]))
    assert report.complete
    assert db.one("SELECT count(*) FROM items WHERE id = %s", [made["key"]]) == 0
    # the cascade took the other person's review with it; the unrelated one stays
    assert db.one("SELECT array_agg(body ORDER BY id) FROM reviews") == ["on an old item"]


async def test_a_rollback_whose_undo_is_denied_is_incomplete_until_granted(
    db: Db, journal: SQLiteJournal
) -> None:
    pg = db.connector()
    before = db.checksums()
    run = Run.start(journal, registry_for([pg]), executor=executor_for([pg]))
    seq, _ = await run.call(
        "postgres.update_row", {"table": "items", "key": 2, "values": {"qty": 0}}
    )
    db.grant("REVOKE UPDATE ON items FROM {agent}")
    first = await run.rollback(compensate=compensator_for([pg]))
    step = next(s for s in first.steps if s.seq == seq)
    assert not first.complete
    assert step.rollback_state is RollbackState.COMPENSATION_FAILED
    assert "42501" in (step.rollback_reason or "")
    db.grant("GRANT UPDATE ON items TO {agent}")
    second = await run.rollback(compensate=compensator_for([pg]))
    assert second.complete
    assert db.checksums() == before
