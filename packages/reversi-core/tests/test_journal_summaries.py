"""``run_summaries``: a page of runs with their step count, start and last activity, in one
SQL statement, on both journal stores (the query ``reversi console``'s runs page uses)."""

from __future__ import annotations

from typing import Any

import pytest
from _stores import is_postgres, sql

from reversi_core import StepState
from reversi_core.errors import ConfigurationError
from reversi_core.journal import Journal
from reversi_core.journal._summaries import MAX_PAGE, RunPage, run_summaries_of


def q(location: str, statement: str) -> str:
    return statement if is_postgres(location) else statement.replace("%s", "?")


def at(location: str, statement: str, *params: Any) -> None:
    sql(location, q(location, statement), list(params))


def step(journal: Journal, run_id: str, *, finish: bool) -> int:
    record = journal.begin_step(run_id, "mem.put", "reversible", "x:y", {}, None, None, [])
    if finish:
        journal.finish_step(
            run_id,
            record.seq,
            StepState.SUCCEEDED,
            result={},
            error=None,
            compensation=None,
            compensation_error=None,
        )
    return record.seq


@pytest.fixture
def four_runs(journal: Journal, location: str) -> Journal:
    """run_a (100; steps to 130; an event at 125), run_b (200; an event at 250), run_d
    (200, no activity), run_c (300; a rollback that ended at 350)."""
    for run_id in ("run_a", "run_b", "run_c", "run_d"):
        journal.create_run(run_id, ["x:y"], f"label {run_id}")
    one = step(journal, "run_a", finish=True)
    two = step(journal, "run_a", finish=False)  # still pending: its start counts
    journal.add_event("run_a", one, "resolved", {})
    journal.add_event("run_b", None, "approval_requested", {})
    for run_id, started in (("run_a", 100), ("run_b", 200), ("run_c", 300), ("run_d", 200)):
        at(location, "UPDATE runs SET started_at = %s WHERE id = %s", started, run_id)
    at(
        location,
        "UPDATE steps SET started_at = 110, finished_at = 120 WHERE run_id = 'run_a' AND seq = %s",
        one,
    )
    at(location, "UPDATE steps SET started_at = 130 WHERE run_id = 'run_a' AND seq = %s", two)
    at(location, "UPDATE events SET at = 125 WHERE run_id = 'run_a'")
    at(location, "UPDATE events SET at = 250 WHERE run_id = 'run_b'")
    at(
        location,
        "UPDATE runs SET rollback_started_at = 340, rollback_finished_at = 350 WHERE id = 'run_c'",
    )
    return journal


def summary(page: RunPage) -> list[tuple[str, int, float, float]]:
    return [(s.run.id, s.run.step_count, s.run.started_at, s.last_active) for s in page.runs]


def test_a_page_of_runs_newest_first_with_steps_and_last_activity(four_runs: Journal) -> None:
    page = run_summaries_of(four_runs).run_summaries(limit=10)
    assert (page.total, page.offset, page.limit) == (4, 0, 10)
    assert summary(page) == [
        ("run_c", 0, 300, 350),  # its rollback's end
        ("run_d", 0, 200, 200),  # same start as run_b: the greater id first
        ("run_b", 0, 200, 250),  # its event
        ("run_a", 2, 100, 130),  # its pending step's start, later than its event and end
    ]
    # the same records as list_runs gives (which lists them oldest first)
    assert [s.run for s in page.runs] == four_runs.list_runs()[::-1]


def test_pages_of_runs_and_a_page_past_the_end(four_runs: Journal) -> None:
    store = run_summaries_of(four_runs)
    first = store.run_summaries(limit=2)
    second = store.run_summaries(limit=2, offset=2)
    beyond = store.run_summaries(limit=2, offset=4)
    assert [s.run.id for s in first.runs] == ["run_c", "run_d"]
    assert [s.run.id for s in second.runs] == ["run_b", "run_a"]
    assert (beyond.runs, beyond.total) == ([], 4)  # the total is known past the end too
    assert (first.total, second.total) == (4, 4)


def test_an_empty_journal_has_no_runs(journal: Journal) -> None:
    page = run_summaries_of(journal).run_summaries()
    assert (page.runs, page.total) == ([], 0)


def test_a_page_outside_the_limits_is_refused(journal: Journal) -> None:
    store = run_summaries_of(journal)
    for limit in (0, MAX_PAGE + 1):
        with pytest.raises(ValueError, match="limit must be 1 to"):
            store.run_summaries(limit=limit)
    with pytest.raises(ValueError, match="offset must be 0 or more"):
        store.run_summaries(offset=-1)
    with pytest.raises(ConfigurationError, match="cannot page its runs"):
        run_summaries_of(object())


class Counting:
    """A connection that counts the statements sent through it."""

    def __init__(self, conn: Any, sent: list[str]) -> None:
        self._conn, self._sent = conn, sent

    def execute(self, statement: Any, *args: Any, **kwargs: Any) -> Any:
        self._sent.append(str(statement))
        return self._conn.execute(statement, *args, **kwargs)


def test_one_statement_whatever_the_number_of_runs_and_steps(
    journal: Journal, location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(25):
        journal.create_run(f"run_{n:02}", ["x:y"], None)
        for _ in range(4):
            step(journal, f"run_{n:02}", finish=True)
    sent: list[str] = []
    # the store's own connection, wrapped where the query takes it (white box: both stores
    # read through it; SQLite's trace callback sees the same single statement)
    if is_postgres(location):
        reading = journal._reading  # type: ignore[attr-defined]
        monkeypatch.setattr(journal, "_reading", lambda: Counting(reading(), sent))
    else:
        journal._conn.set_trace_callback(sent.append)  # type: ignore[attr-defined]
    page = run_summaries_of(journal).run_summaries(limit=20)
    if not is_postgres(location):
        journal._conn.set_trace_callback(None)  # type: ignore[attr-defined]
    assert len(sent) == 1, sent
    assert page.total == 25
    assert [s.run.step_count for s in page.runs] == [4] * 20
    starts = [s.run.started_at for s in page.runs]
    assert starts == sorted(starts, reverse=True)
