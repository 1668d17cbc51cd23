"""A console already running sees what a gateway killed after it opened the journal left
behind: the journal's own recovery (JNL-1) runs before a timeline, a plan and a rollback,
on both stores (docs/console.md)."""

from __future__ import annotations

import pytest
from _console_support import TOKEN, console_client, log_in
from _stores import is_postgres, sql

from reversi_core import RunStatus, StepState
from reversi_core.connector import Compensator
from reversi_core.console._security import csrf_token
from reversi_core.journal import Journal, open_journal
from reversi_core.journal._owner import process_owner

# this process's host and pid with another start time: a process that is gone, on both
# stores (as test_journal_read_only.py)
DEAD = process_owner().rsplit(":", 1)[0] + ":0"


def _q(location: str, statement: str) -> str:
    return statement if is_postgres(location) else statement.replace("%s", "?")


def _killed_gateway_leaves(location: str) -> None:
    """run_a gets a pending step of a process that is gone, run_b a dead rollback lock."""
    with open_journal(location, create=False) as gateway:
        gateway.begin_step("run_a", "mem.put", "reversible", "x:y", {}, None, None, [])
    sql(location, _q(location, "UPDATE steps SET owner = %s WHERE run_id = 'run_a'"), [DEAD])
    sql(
        location,
        _q(
            location,
            "UPDATE runs SET status = 'rolling_back', rollback_owner = %s WHERE id = 'run_b'",
        ),
        [DEAD],
    )


@pytest.mark.parametrize("page", ["/runs/run_a", "/runs/run_a/plan"])
def test_a_running_console_shows_a_killed_gateways_step_as_uncertain(
    journal: Journal, location: str, page: str
) -> None:
    journal.create_run("run_a", ["x:y"], None)
    journal.create_run("run_b", ["x:y"], None)
    with console_client(journal, location) as c:
        log_in(c)
        assert "UNCERTAIN" not in c.get("/runs/run_a").text  # nothing pending yet
        _killed_gateway_leaves(location)  # after the console opened the journal
        answer = c.get(page)
        assert answer.status_code == 200
        step = journal.get_step("run_a", 1)
        assert step.state is StepState.UNCERTAIN
        assert "stopped before recording its outcome" in (step.error or "")
        assert journal.get_run("run_b").status is RunStatus.ROLLBACK_INCOMPLETE
        if page == "/runs/run_a":
            assert "UNCERTAIN" in answer.text
        else:
            assert "uncertain" in answer.text.lower()
        kinds = [e["kind"] for e in journal.list_events("run_a")]
        assert kinds.count("recovered") == 1
        c.get(page)  # a second look recovers nothing more
        assert [e["kind"] for e in journal.list_events("run_a")].count("recovered") == 1


def test_a_rollback_from_a_running_console_first_recovers_a_killed_gateways_step(
    journal: Journal, location: str
) -> None:
    journal.create_run("run_a", ["x:y"], None)
    journal.create_run("run_b", ["x:y"], None)
    called: list[str] = []

    async def compensate(*args: object, **kwargs: object) -> None:
        called.append("compensated")

    compensator: Compensator = compensate  # type: ignore[assignment]
    with console_client(journal, location, compensator=compensator) as c:
        log_in(c)
        csrf = csrf_token(TOKEN)
        _killed_gateway_leaves(location)
        answer = c.post("/runs/run_a/rollback", data={"csrf": csrf}, follow_redirects=False)
        assert answer.status_code == 303
        # the rollback saw the step as uncertain (never compensated blindly as pending)
        assert journal.get_step("run_a", 1).state is StepState.UNCERTAIN
        assert "recovered" in [e["kind"] for e in journal.list_events("run_a")]
