"""The tamper-evident journal (journal/_chain.py), on both stores: every write that changes
a step appends a record to its run's hash chain in the same transaction, and
``verify_run`` reports the first record that does not match when a row was edited,
added or removed behind the journal's back."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from _stores import is_postgres, make_version_1, sql

from reversi_core.journal import Journal, RollbackState, StepState, open_journal
from reversi_core.journal._chain import CHAIN_SCHEMA, link_hash


def _linked(location: str) -> bool:
    """Whether a step's own records (begin, finish, rejected, recorded) are links of its
    row, their content its fields (SQLite since schema 5), rather than ``chain`` rows."""
    return not is_postgres(location)


def _links(location: str, run: str, seq: int) -> str:
    return str(
        sql(location, "SELECT links FROM steps WHERE run_id = ? AND seq = ?", [run, seq])[0][0]
    )


def _placeholders(location: str, statement: str) -> str:
    return statement.replace("?", "%s") if is_postgres(location) else statement


def _busy_run(journal: Journal, run: str = "run_a", create: bool = True) -> None:
    """A run that went through every kind of write that changes a step."""
    if create:
        journal.create_run(run, ["x:y"], "label")
    _writes(journal, run)


def _writes(journal: Journal, run_a: str) -> None:
    one = journal.begin_step(run_a, "mem.put", "reversible", "x:y", {"key": "a"}, "why", None, [])
    journal.finish_step(
        run_a, one.seq, StepState.SUCCEEDED, result={"old": None},
        error=None, compensation={"tool": "mem.delete", "args": {"key": "a"}}, compensation_error=None,
    )  # fmt: skip
    journal.record_rejected(
        run_a, "mem.put", "reversible", "x:y", {"key": "b"}, None, "denied", None
    )
    two = journal.begin_step(
        run_a, "mem.put", "reversible", "x:y", {"key": "c"}, None, None, [one.seq]
    )
    journal.finish_step(
        run_a, two.seq, StepState.UNCERTAIN, result=None, error="timed out",
        compensation=None, compensation_error=None,
    )  # fmt: skip
    journal.resolve_step(run_a, two.seq, True, {"old": 1}, {"tool": "mem.put", "args": {}}, None)
    seq = journal.reserve_step(run_a)
    read = journal.get_step(run_a, one.seq)
    from dataclasses import replace

    journal.defer_step(
        replace(read, seq=seq, tool="mem.get", effect="read_only", idempotency_key=f"reversi-{run_a}-{seq}",
                args={"key": "a"}, result={"value": 1}, owner=None, compensation=None, requires=[]),
        lambda step, error: None,
    )  # fmt: skip
    journal.flush()
    journal.allow_overwrite(run_a, one.seq, {"by": "ada", "at": 1.0})
    journal.start_rollback(run_a)
    journal.set_rollback_state(run_a, two.seq, RollbackState.COMPENSATED, None)
    journal.set_rollback_state(run_a, one.seq, RollbackState.COMPENSATED, None)
    journal.finish_rollback(run_a, True)


@pytest.fixture
def busy(journal: Journal) -> Journal:
    _busy_run(journal)
    return journal


def test_every_write_that_changes_a_step_is_chained_and_verifies(busy: Journal) -> None:
    result = busy.verify_run("run_a")
    assert result.status == "ok", result.describe()
    records = busy.run_chain("run_a")
    kinds = [r.kind for r in records]
    assert kinds == [
        "begin", "finish", "rejected", "begin", "finish", "resolve", "recorded",
        "overwrite", "rollback_state", "rollback_state",
    ]  # fmt: skip
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert records[0].prev_hash == ""
    for before, rec in itertools.pairwise(records):
        assert rec.prev_hash == before.hash
    for rec in records:  # the same bytes hashed by either store (PostgreSQL: in SQL)
        assert rec.hash == link_hash(rec.prev_hash, rec.seq, rec.step, rec.kind, rec.content)
    assert result.head == records[-1].hash
    assert result.records == len(records)


def _edit(location: str, statement: str, params: list[Any]) -> None:
    sql(location, _placeholders(location, statement), params)


def test_a_step_argument_edited_behind_the_journal_is_reported(
    busy: Journal, location: str
) -> None:
    _edit(location, "UPDATE steps SET args = ? WHERE run_id = 'run_a' AND seq = 1", ['{"key":"z"}'])
    result = busy.verify_run("run_a")
    assert (result.status, result.step) == ("tampered", 1)
    if _linked(location):  # the begin record's content is the row's: record 1 no longer matches
        assert result.seq == 1
        assert "row no longer matches its begin record" in (result.what or "")
        return
    # named by the latest record that sets args (its begin, record 1), not by the step's
    # latest record (its rollback state, record 10), which holds no args
    assert "args differs from record 1 (begin), the latest that sets it" in (result.what or "")
    assert result.seq == 1


def test_a_rollback_state_edited_behind_the_journal_is_reported(
    busy: Journal, location: str
) -> None:
    _edit(location, "UPDATE steps SET rollback_state = NULL WHERE run_id = 'run_a' AND seq = 3", [])
    result = busy.verify_run("run_a")
    assert (result.status, result.step) == ("tampered", 3)
    assert "rollback_state differs" in (result.what or "")


def test_a_chain_record_edited_is_reported(busy: Journal, location: str) -> None:
    if _linked(location):  # record 2 (step 1's finish) is held by step 1's row: edit that
        _edit(
            location,
            "UPDATE steps SET result = ? WHERE run_id = 'run_a' AND seq = 1",
            ['{"old":"forged"}'],
        )
        result = busy.verify_run("run_a")
        assert (result.status, result.seq, result.step) == ("tampered", 2, 1)
        assert "row no longer matches its finish record" in (result.what or "")
        return
    content = busy.run_chain("run_a")[1].content.replace('"old":null', '"old":"forged"')
    _edit(location, "UPDATE chain SET content = ? WHERE run_id = 'run_a' AND seq = 2", [content])
    result = busy.verify_run("run_a")
    assert (result.status, result.seq, result.step) == ("tampered", 2, 1)
    assert "hash does not match its content" in (result.what or "")


def test_a_chain_record_edited_with_its_hash_breaks_the_next_link(
    busy: Journal, location: str
) -> None:
    rec = busy.run_chain("run_a")[1]
    forged = rec.content.replace('"old":null', '"old":"forged"')
    new_hash = link_hash(rec.prev_hash, rec.seq, rec.step, rec.kind, forged)
    if _linked(location):  # the row's result and the link's hash, edited together
        links = _links(location, "run_a", 1).replace(rec.hash, new_hash)
        _edit(
            location, "UPDATE steps SET result = ?, links = ? WHERE run_id = 'run_a' AND seq = 1",
            ['{"old":"forged"}', links],
        )  # fmt: skip
        result = busy.verify_run("run_a")
        assert (result.status, result.seq) == ("tampered", 3)  # record 3 links to the old hash
        assert "row no longer matches its rejected record" in (result.what or "")
        return
    _edit(
        location, "UPDATE chain SET content = ?, hash = ? WHERE run_id = 'run_a' AND seq = 2",
        [forged, new_hash],
    )  # fmt: skip
    result = busy.verify_run("run_a")
    assert (result.status, result.seq) == ("tampered", 3)
    assert "prev_hash is not the previous record's hash" in (result.what or "")


def test_a_chain_record_deleted_is_reported(busy: Journal, location: str) -> None:
    if _linked(location):  # record 4 is step 3's begin: a link of its row
        links = " ".join(x for x in _links(location, "run_a", 3).split() if not x.startswith("4:"))
        _edit(location, "UPDATE steps SET links = ? WHERE run_id = 'run_a' AND seq = 3", [links])
    else:
        _edit(location, "DELETE FROM chain WHERE run_id = 'run_a' AND seq = 4", [])
    result = busy.verify_run("run_a")
    assert (result.status, result.seq) == ("tampered", 4)
    assert "record 4 is missing" in (result.what or "")


def test_the_last_chain_record_deleted_is_reported(busy: Journal, location: str) -> None:
    last = len(busy.run_chain("run_a"))
    _edit(location, "DELETE FROM chain WHERE run_id = 'run_a' AND seq = ?", [last])
    result = busy.verify_run("run_a")
    assert result.status == "tampered"
    # the step it changed no longer matches its row (and on PostgreSQL the head says so first)
    assert result.step == 1 or "chain head" in (result.what or "")


def test_a_head_hash_edited_is_reported_as_such(busy: Journal, location: str) -> None:
    """The head a store keeps apart from the records (PostgreSQL: the run's row; SQLite:
    the tail step's ``head`` or its last link) holding another hash is named as that."""
    if is_postgres(location):
        _edit(location, "UPDATE runs SET chain_hash = 'abc' WHERE id = 'run_a'", [])
    else:
        last = len(busy.run_chain("run_a"))
        _edit(location, "DELETE FROM chain WHERE run_id = 'run_a' AND seq = ?", [last])
    result = busy.verify_run("run_a")
    assert result.status == "tampered"
    if is_postgres(location):
        assert "with a hash other than that record's" in (result.what or ""), result.what
        assert "the chain ends at record" not in (result.what or "")


def test_a_step_row_deleted_or_inserted_is_reported(busy: Journal, location: str) -> None:
    _edit(location, "DELETE FROM steps WHERE run_id = 'run_a' AND seq = 2", [])
    result = busy.verify_run("run_a")
    if _linked(location):  # the row held record 3 (its rejection): the chain lacks it
        assert (result.status, result.seq) == ("tampered", 3)
        assert "record 3 is missing" in (result.what or "")
    else:
        assert (result.status, result.step) == ("tampered", 2)
        assert "row is gone" in (result.what or "")
    _edit(
        location,
        "INSERT INTO steps (run_id, seq, tool, effect, permission, args, state, idempotency_key, "
        "started_at) VALUES ('run_a', 2, 'mem.put', 'reversible', 'x:y', '{}', 'rejected', "
        "'reversi-run_a-2', 1.0)",
        [],
    )
    result = busy.verify_run("run_a")
    assert result.status == "tampered"
    assert result.step == 2 or (_linked(location) and result.seq == 3)


def test_a_run_written_before_the_chain_verifies_as_not_chained(location: str) -> None:
    open_journal(location).close()
    make_version_1(location)
    sql(
        location,
        "INSERT INTO runs (id, started_at, status, scope) VALUES ('old', 1, 'rolled_back', '[]')",
    )
    with open_journal(location, create=False) as journal:  # migrates it
        result = journal.verify_run("old")
        assert (result.status, result.ok) == ("unchained", True)
        assert f"not chained (written before schema {CHAIN_SCHEMA})" in result.describe()
        journal.create_run("new", [], None)
        journal.begin_step("new", "mem.put", "reversible", "x:y", {}, None, None, [])
        assert journal.verify_run("new").status == "ok"


def test_a_run_written_before_the_chain_gets_no_records_from_later_writes(
    location: str,
) -> None:
    """An open run from before the chain's migration, written on afterwards (steps, a
    refusal, a resolution, a deferred read, an overwrite decision, a rollback): it stays
    unchained, with no records, not "marked as written before the chain, yet has chain
    records" (which verify reports as tampering)."""
    open_journal(location).close()
    make_version_1(location)
    sql(
        location, "INSERT INTO runs (id, started_at, status, scope) VALUES ('old', 1, 'open', '[]')"
    )
    with open_journal(location, create=False) as journal:  # migrates it
        _busy_run(journal, "old", create=False)
        _busy_run(journal, "new")  # a chained run written alongside is chained still
        result = journal.verify_run("old")
        assert (result.status, result.ok) == ("unchained", True), result.describe()
        assert journal.run_chain("old") == []
        assert journal.verify_run("new").status == "ok"
    count = _placeholders(location, "SELECT count(*) FROM chain WHERE run_id = ?")
    assert sql(location, count, ["old"]) == [(0,)]
    if _linked(location):
        links = "SELECT count(*) FROM steps WHERE run_id = ? AND links IS NOT NULL"
        assert sql(location, links, ["old"]) == [(0,)]


def test_who_resolved_a_step_is_chained_and_an_edit_of_it_is_reported(
    journal: Journal, location: str
) -> None:
    journal.create_run("run_r", ["x:y"], None)
    step = journal.begin_step("run_r", "mem.put", "reversible", "x:y", {}, None, None, [])
    journal.finish_step(
        "run_r", step.seq, StepState.UNCERTAIN, result=None, error="timed out",
        compensation=None, compensation_error=None,
    )  # fmt: skip
    journal.resolve_step("run_r", step.seq, True, None, None, "no result", "ada")
    assert journal.get_step("run_r", step.seq).resolved_by == "ada"
    assert journal.verify_run("run_r").status == "ok"
    _edit(location, "UPDATE steps SET resolved_by = ? WHERE run_id = 'run_r'", ["mallory"])
    result = journal.verify_run("run_r")
    assert (result.status, result.step) == ("tampered", step.seq)
    assert "resolved_by differs from record" in (result.what or "")
    assert "(resolve), the latest that sets it" in (result.what or "")


def test_a_run_unchained_behind_the_journal_is_reported(journal: Journal, location: str) -> None:
    """A chained run marked as written before the chain, its records removed: the journal
    knows it was made after the chain's migration (SQLite: its number is not below the
    first run made under the chain; PostgreSQL: it started after schema 3 was applied)."""
    if is_postgres(location):  # the upgrade was long ago (a run started just after is not late)
        sql(
            location,
            "UPDATE reversi_migrations SET applied_at = applied_at - 3600 WHERE version = %s",
            [CHAIN_SCHEMA],
        )
    _busy_run(journal)
    assert journal.verify_run("run_a").status == "ok"
    _edit(
        location,
        "UPDATE runs SET chained = ? WHERE id = 'run_a'",
        [False if is_postgres(location) else 0],
    )
    _edit(location, "DELETE FROM chain WHERE run_id = 'run_a'", [])
    if _linked(location):
        _edit(location, "UPDATE steps SET links = NULL, head = NULL WHERE run_id = 'run_a'", [])
    result = journal.verify_run("run_a")
    assert (result.status, result.ok) == ("tampered", False), result.describe()
    assert "marked as written before the chain, yet" in (result.what or "")
