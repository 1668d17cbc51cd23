"""How the SQLite journal stores and appends its hash chain (journal/_sqlite_chain.py): one
B-tree keyed by the run's number and the record's seq, the head cached by each handle
and checked in every write transaction, so that several handles (processes) writing one
journal, and a transaction rolled back after its append, still leave one dense chain."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reversi_core.journal import SQLiteJournal, StepState
from reversi_core.journal import _chain as chain
from reversi_core.journal._sqlite_chain import SEQ_BITS, key_range, sqlite_append


def _write(journal: SQLiteJournal, run_id: str, key: str) -> int:
    step = journal.begin_step(run_id, "mem.put", "reversible", "x:y", {"key": key}, None, None, [])
    journal.finish_step(
        run_id, step.seq, StepState.SUCCEEDED, result={"old": None}, error=None,
        compensation={"tool": "mem.delete", "args": {"key": key}}, compensation_error=None,
    )  # fmt: skip
    return step.seq


def _keys(path: Path) -> list[tuple[int, str, int]]:
    conn = sqlite3.connect(path / "journal.sqlite3")
    try:
        return conn.execute("SELECT id, run_id, seq FROM chain ORDER BY id").fetchall()
    finally:
        conn.close()


def _links(path: Path) -> list[tuple[str, int, str]]:
    conn = sqlite3.connect(path / "journal.sqlite3")
    try:
        return conn.execute("SELECT run_id, seq, links FROM steps ORDER BY run_id, seq").fetchall()
    finally:
        conn.close()


def test_two_handles_appending_in_turn_keep_one_dense_chain(tmp_path: Path) -> None:
    one = SQLiteJournal.open(tmp_path)
    two = SQLiteJournal.open(tmp_path)
    try:
        one.create_run("run_a", ["x:y"], None)
        for i in range(4):  # each handle's cached head is stale at every other write
            _write(one if i % 2 == 0 else two, "run_a", f"k{i}")
        assert [r.seq for r in one.run_chain("run_a")] == list(range(1, 9))
        assert one.verify_run("run_a").status == "ok"
        assert two.verify_run("run_a").status == "ok"
    finally:
        one.close()
        two.close()


def test_a_steps_own_records_are_links_of_its_row_and_nothing_else(tmp_path: Path) -> None:
    """Schema 5: a step's begin and finish are links ``seq:kind:hash`` of its own row (no
    ``chain`` table row, no other row: one B-tree and one page less per commit)."""
    with SQLiteJournal.open(tmp_path) as journal:
        journal.create_run("run_a", [], None)
        journal.create_run("run_b", [], None)
        _write(journal, "run_b", "b")
        _write(journal, "run_a", "a")
        _write(journal, "run_b", "c")
        records = {r: journal.run_chain(r) for r in ("run_a", "run_b")}
    assert _keys(tmp_path) == []
    for run_id, seq, links in _links(tmp_path):
        mine = [r for r in records[run_id] if r.step == seq]
        assert links == " ".join(f"{r.seq}:{r.kind}:{r.hash}" for r in mine)
        assert [r.kind for r in mine] == ["begin", "finish"]
    conn = sqlite3.connect(tmp_path / "journal.sqlite3")
    heads = conn.execute("SELECT run_id, seq, head FROM steps WHERE head IS NOT NULL").fetchall()
    conn.close()
    assert heads == []  # each run's tail row holds its head as its own last link


def test_runs_are_numbered_and_each_holds_its_own_range_of_keys(tmp_path: Path) -> None:
    with SQLiteJournal.open(tmp_path) as journal:
        journal.create_run("run_a", [], None)
        journal.create_run("run_b", [], None)
        for run_id in ("run_b", "run_a", "run_b"):  # records the chain table keeps whole
            seq = _write(journal, run_id, run_id)
            journal.allow_overwrite(run_id, seq, {"by": "ada"})
            journal.allow_overwrite(run_id, seq, {"by": "bob"})
    rows = _keys(tmp_path)
    a, b = key_range(1), key_range(2)
    assert [(i - a[0], s) for i, r, s in rows if r == "run_a"] == [(3, 3), (4, 4)]
    assert [(i - b[0], s) for i, r, s in rows if r == "run_b"] == [(3, 3), (4, 4), (7, 7), (8, 8)]
    assert a[1] < b[0]
    assert b[0] == 2 << SEQ_BITS


def test_a_transaction_rolled_back_after_its_append_leaves_no_gap(tmp_path: Path) -> None:
    with SQLiteJournal.open(tmp_path) as journal:
        journal.create_run("run_a", ["x:y"], None)
        _write(journal, "run_a", "a")

        def append_then_fail() -> None:
            # the record is appended (and the tail row names it as the head), then the write fails
            with journal._tx() as c:
                text = chain.rollback_content(None, None)
                sqlite_append(c, "run_a", 1, "rollback_state", text)
                raise RuntimeError("the write after the append failed")

        with pytest.raises(RuntimeError):
            append_then_fail()
        _write(journal, "run_a", "b")
        assert [r.seq for r in journal.run_chain("run_a")] == [1, 2, 3, 4]
        assert journal.verify_run("run_a").status == "ok"


def test_a_run_deleted_and_made_again_is_chained_from_its_first_record(tmp_path: Path) -> None:
    with SQLiteJournal.open(tmp_path) as journal:
        journal.create_run("run_a", ["x:y"], None)
        _write(journal, "run_a", "a")  # this handle caches run_a's head
        journal.start_rollback("run_a")
        journal.finish_rollback("run_a", True)
        assert journal.delete_run("run_a", {"rolled_back"})
        journal.create_run("run_a", ["x:y"], None)
        seq = _write(journal, "run_a", "b")
        journal.allow_overwrite("run_a", seq, {"by": "ada"})
        assert [r.seq for r in journal.run_chain("run_a")] == [1, 2, 3]
        assert journal.verify_run("run_a").status == "ok"
    assert [s for _, _, s in _keys(tmp_path)] == [3]  # nothing left of the first


def test_a_record_moved_to_another_run_or_seq_is_reported(tmp_path: Path) -> None:
    with SQLiteJournal.open(tmp_path) as journal:
        journal.create_run("run_a", ["x:y"], None)
        seq = _write(journal, "run_a", "a")
        journal.allow_overwrite("run_a", seq, {"by": "ada"})  # record 3, in the chain table
    conn = sqlite3.connect(tmp_path / "journal.sqlite3")
    with conn:
        conn.execute("UPDATE chain SET seq = 7 WHERE run_id = 'run_a' AND seq = 3")
    conn.close()
    with SQLiteJournal.open(tmp_path) as journal:
        result = journal.verify_run("run_a")
    assert result.status == "tampered"
    assert "stored as record 7" in (result.what or "")


def test_content_is_the_same_text_with_or_without_orjson_fragments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = {"tool": "t", "at": 1.5, "requires": [3, 1], "reason": None, "name": "é"}
    encoded = {"args": '{"k":1,"s":"\\ud800"}', "result": None}
    fast = chain.content(plain, encoded)
    monkeypatch.setattr(chain, "_FRAGMENT", None)
    assert chain.content(plain, encoded) == fast
    assert fast.startswith('{"args":{"k":1,"s":"\\ud800"},"at":1.5,')
    # a lone surrogate in a plain value is spelled in ASCII, as the journal stores it
    assert chain.content({"reason": "x\udc80"}) == '{"reason":"x\\udc80"}'


def test_a_link_moved_to_another_seq_or_garbled_is_reported(tmp_path: Path) -> None:
    with SQLiteJournal.open(tmp_path) as journal:
        journal.create_run("run_a", ["x:y"], None)
        _write(journal, "run_a", "a")
        _write(journal, "run_a", "b")
    conn = sqlite3.connect(tmp_path / "journal.sqlite3")
    with conn:
        conn.execute(
            "UPDATE steps SET links = replace(links, '2:finish:', '7:finish:') WHERE seq = 1"
        )
    with SQLiteJournal.open(tmp_path) as journal:
        result = journal.verify_run("run_a")
    assert (result.status, result.seq) == ("tampered", 2)
    assert "record 2 is missing" in (result.what or "")
    with conn:
        conn.execute("UPDATE steps SET links = 'garbled' WHERE seq = 2")
    conn.close()
    with SQLiteJournal.open(tmp_path) as journal:
        result = journal.verify_run("run_a")
    assert result.status == "tampered"
    assert "step 2's links are not the journal's" in (result.what or "")


def _schema_4_journal(path: Path) -> list[str]:
    """A journal as schema 4 wrote it (every record whole in the ``chain`` table, no
    links, no head in the run's row): one run of two finished steps. Returns the hashes."""
    from reversi_core.journal._schema import MIGRATIONS

    path.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path / "journal.sqlite3")
    for script in MIGRATIONS[:4]:
        conn.executescript(script)
    conn.execute("PRAGMA user_version = 4")
    conn.execute(
        "INSERT INTO runs (id, started_at, status, scope, label, chained, num) "
        "VALUES ('old', 1.0, 'open', '[\"x:y\"]', NULL, 1, 1)"
    )
    records = []
    for seq in (1, 2):
        args, result, comp = f'{{"key":"k{seq}"}}', '{"old":null}', '{"tool":"mem.delete"}'
        conn.execute(
            "INSERT INTO steps (run_id, seq, tool, effect, permission, args, state, "
            "idempotency_key, owner, started_at, finished_at, result, compensation) VALUES "
            "('old', ?, 'mem.put', 'reversible', 'x:y', ?, 'succeeded', ?, 'h:1:1', 2.0, 3.0, ?, ?)",
            (seq, args, f"reversi-old-{seq}", result, comp),
        )
        records.append(
            (
                seq,
                "begin",
                chain.begin_content(
                    "mem.put", "reversible", "x:y", args, None, "h:1:1", 2.0, None, []
                ),
            )
        )
        records.append(
            (seq, "finish", chain.finish_content("succeeded", 3.0, result, None, comp, None))
        )
    prev, hashes = "", []
    for n, (step, kind, text) in enumerate(records, start=1):
        digest = chain.link_hash(prev, n, step, kind, text)
        conn.execute(
            "INSERT INTO chain (id, run_id, seq, step, kind, content, prev_hash, hash) "
            "VALUES (?, 'old', ?, ?, ?, ?, ?, ?)",
            ((1 << SEQ_BITS) | n, n, step, kind, text, prev, digest),
        )
        prev = digest
        hashes.append(digest)
    conn.commit()
    conn.close()
    return hashes


def test_a_journal_of_schema_4_migrated_still_verifies_and_is_chained_on(tmp_path: Path) -> None:
    hashes = _schema_4_journal(tmp_path)
    with SQLiteJournal.open(tmp_path) as journal:  # migrates it to schema 5
        assert journal.verify_run("old").status == "ok"
        assert journal.verify_run("old").head == hashes[-1]
        seq = _write(journal, "old", "new")  # a step after the migration: links of its row
        result = journal.verify_run("old")
        assert (result.status, result.records) == ("ok", 6), result.describe()
        records = journal.run_chain("old")
    assert records[4].prev_hash == hashes[-1]  # the new records carry on the old chain
    assert [(r.step, r.kind) for r in records[4:]] == [(seq, "begin"), (seq, "finish")]
    assert [s for _, _, s in _keys(tmp_path)] == [1, 2, 3, 4]  # the old records, whole


def test_a_record_of_schema_4_tampered_is_reported_after_the_migration(tmp_path: Path) -> None:
    _schema_4_journal(tmp_path)
    with SQLiteJournal.open(tmp_path) as journal:
        _write(journal, "old", "new")
    conn = sqlite3.connect(tmp_path / "journal.sqlite3")
    with conn:  # an old record's content, edited
        conn.execute("UPDATE chain SET content = replace(content, 'k2', 'k9') WHERE seq = 3")
    with SQLiteJournal.open(tmp_path) as journal:
        result = journal.verify_run("old")
    assert (result.status, result.seq, result.step) == ("tampered", 3, 2)
    assert "hash does not match its content" in (result.what or "")
    with conn:  # put back; the old step's row edited instead
        conn.execute("UPDATE chain SET content = replace(content, 'k9', 'k2') WHERE seq = 3")
        conn.execute("UPDATE steps SET args = '{\"key\":\"k9\"}' WHERE run_id = 'old' AND seq = 2")
    conn.close()
    with SQLiteJournal.open(tmp_path) as journal:
        result = journal.verify_run("old")
    assert (result.status, result.step) == ("tampered", 2)
    assert "args differs from record" in (result.what or "")
    assert "the latest that sets it" in (result.what or "")


def test_a_resolution_moves_the_finish_record_whole_into_the_chain_table(tmp_path: Path) -> None:
    """A resolution changes fields the step's finish record holds: the record is first
    kept whole in ``chain`` (as the row gave it), so that it still verifies after."""
    with SQLiteJournal.open(tmp_path) as journal:
        journal.create_run("run_a", ["x:y"], None)
        step = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        journal.finish_step(
            "run_a", step.seq, StepState.UNCERTAIN, result=None, error="timed out",
            compensation=None, compensation_error=None,
        )  # fmt: skip
        finish = journal.run_chain("run_a")[1]
        journal.resolve_step("run_a", step.seq, True, {"old": 1}, {"tool": "mem.put"}, None)
        records = journal.run_chain("run_a")
        assert journal.verify_run("run_a").status == "ok"
    assert [s for _, _, s in _keys(tmp_path)] == [2, 3]  # the finish, moved; the resolution
    assert (records[1].kind, records[1].content, records[1].hash) == (
        "finish",
        finish.content,
        finish.hash,
    )
    assert not records[1].linked
    assert records[1].prev_hash == records[0].hash
    assert [links.split(":")[1] for _, _, links in _links(tmp_path)] == ["begin"]


def test_the_tail_row_names_a_head_kept_elsewhere_and_a_cut_chain_is_reported(
    tmp_path: Path,
) -> None:
    """Records appended for an older step (its finish, a decision) after a later step
    began: the tail row (the step numbered highest) names the head, and removing the
    chain's last record is reported by the head it names."""
    with SQLiteJournal.open(tmp_path) as journal:
        journal.create_run("run_a", ["x:y"], None)
        one = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        two = journal.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
        journal.finish_step(
            "run_a", one.seq, StepState.SUCCEEDED, result={}, error=None,
            compensation=None, compensation_error=None,
        )  # fmt: skip
        journal.allow_overwrite("run_a", one.seq, {"by": "ada"})
        records = journal.run_chain("run_a")
        assert [(r.step, r.kind) for r in records] == [
            (one.seq, "begin"), (two.seq, "begin"), (one.seq, "finish"), (one.seq, "overwrite")
        ]  # fmt: skip
        assert journal.verify_run("run_a").status == "ok"
    conn = sqlite3.connect(tmp_path / "journal.sqlite3")
    tail = conn.execute("SELECT seq, head FROM steps WHERE head IS NOT NULL").fetchall()
    assert tail == [(two.seq, f"4:{records[3].hash}")]
    with conn:
        conn.execute("DELETE FROM chain WHERE seq = 4")
    conn.close()
    with SQLiteJournal.open(tmp_path) as journal:
        result = journal.verify_run("run_a")
        assert result.status == "tampered"
        assert "chain head names record 4" in (result.what or "")
