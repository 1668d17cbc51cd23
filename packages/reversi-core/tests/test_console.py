"""reversi console's HTTP side (Starlette TestClient): every route, the token, CSRF, the
approval binding, paging; on both journal stores where the journal is involved."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from _console_support import TOKEN, console_client, csrf_of, log_in
from _memconnector import MemConnector
from starlette.testclient import TestClient

from reversi_core import Run
from reversi_core.connector import compensator_for
from reversi_core.console import PAGE_SIZE, RUNS_PAGE_SIZE
from reversi_core.engine import ApprovalRequest
from reversi_core.journal import Journal, StepState, open_journal
from reversi_core.journal._approvals import ApprovalState, approvals_of, args_hash
from reversi_core.mcp._approval import ConsoleQueue
from reversi_core.redact import register_secret

ROUTES_GET = [
    "/",
    "/runs/R",
    "/runs/R/plan",
    "/runs/R/rollback",
    "/approvals",
    "/api/approvals",
    "/api/runs/R/rollback",
    "/static/console.js",
]
ROUTES_POST = ["/runs/R/rollback", "/runs/R/steps/1/resolve", "/approvals/x"]


@pytest.fixture
def played(make_run: Callable[..., Run], mem: MemConnector) -> Run:
    """A run of three steps: a directory, a key in it, and an uncertain put."""
    run = make_run()

    async def play() -> None:
        await run.call("mem.mkdir", {"path": "d"}, reason="make room")
        await run.call("mem.put", {"key": "d/a", "value": "1"})
        mem.fault("mem.put", "uncertain", times=1, message="socket closed mid-request")
        await run.attempt("mem.put", {"key": "d/b", "value": "2"})

    anyio.run(play)
    return run


@pytest.fixture
def client(journal: Journal, location: str, mem: MemConnector) -> Iterator[TestClient]:
    with console_client(journal, location, compensator=compensator_for([mem])) as c:
        yield c


def test_every_route_refuses_a_request_without_the_token(client: TestClient) -> None:
    for path in ROUTES_GET:
        assert client.get(path).status_code == 401, path
    for path in ROUTES_POST:
        assert client.post(path, data={}).status_code == 401, path
    assert client.get("/", headers={"Cookie": "reversi_console=wrong"}).status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/?token=wrong", follow_redirects=False).status_code == 401
    assert client.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_the_token_in_the_address_becomes_a_cookie_and_leaves_the_address(
    client: TestClient,
) -> None:
    answer = client.get(f"/approvals?token={TOKEN}&x=1", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/approvals?x=1"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    page = client.get("/approvals")
    assert page.status_code == 200
    assert TOKEN not in page.text  # never on a page
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"


def test_posts_need_the_sessions_csrf_token_and_the_same_origin(
    client: TestClient, played: Run
) -> None:
    log_in(client)
    page = client.get(f"/runs/{played.id}/plan").text
    csrf = csrf_of(page)
    url = f"/runs/{played.id}/steps/3/resolve"
    form = {"outcome": "not_applied", "name": "ann"}
    assert client.post(url, data=form).status_code == 403  # no token
    assert client.post(url, data={**form, "csrf": "0" * 64}).status_code == 403
    evil = {"Origin": "http://evil.example"}
    assert client.post(url, data={**form, "csrf": csrf}, headers=evil).status_code == 403
    cross = {"Sec-Fetch-Site": "cross-site"}
    assert client.post(url, data={**form, "csrf": csrf}, headers=cross).status_code == 403
    assert played.journal.get_step(played.id, 3).resolution is None  # nothing was done
    same = {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"}
    answer = client.post(url, data={**form, "csrf": csrf}, headers=same, follow_redirects=False)
    assert answer.status_code == 303
    step = played.journal.get_step(played.id, 3)
    assert (step.resolution, step.resolved_by) == ("not_applied", "ann")
    [event] = [e for e in played.journal.list_events(played.id) if e["kind"] == "resolved"]
    assert event["detail"] == {"applied": False, "by": "ann"}
    timeline = client.get(answer.headers["location"]).text
    assert 'uncertain → not applied<br><small class="resolved-by">by ann</small>' in timeline


def test_an_unknown_host_is_refused(journal: Journal, location: str) -> None:
    with console_client(journal, location, hosts=frozenset({"127.0.0.1"})) as c:
        assert c.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 400
        ok = c.get(f"/?token={TOKEN}", headers={"Host": "127.0.0.1:9"}, follow_redirects=False)
        assert ok.status_code == 303


def test_the_runs_page_and_the_timeline(client: TestClient, played: Run) -> None:
    log_in(client)
    runs = client.get("/").text
    assert played.id in runs
    assert "<td>open</td>" in runs
    assert '<td class="num">3</td>' in runs
    page = client.get(f"/runs/{played.id}").text
    assert 'id="step-3" class="step uncertain"' in page  # stands out
    assert "socket closed mid-request" in page  # the evidence
    assert "mem.restore" in page  # the compensation planned
    assert '<line class="edge requires"' in page  # put requires mkdir
    assert "make room" in page
    assert client.get("/runs/nope").status_code == 404


def test_the_runs_page_is_paged_and_reads_no_runs_steps_or_events(
    journal: Journal, location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One query of the journal for the page (``run_summaries``), whatever the runs hold."""
    for n in range(RUNS_PAGE_SIZE + 5):
        journal.create_run(f"run_{n:03}", ["x:y"], None)

    def refused(*args: object) -> None:
        raise AssertionError("the runs page read the runs one by one")

    for name in ("list_runs", "list_steps", "list_events", "get_run"):
        monkeypatch.setattr(journal, name, refused)
    with console_client(journal, location) as c:
        log_in(c)
        first, second = c.get("/").text, c.get("/?page=2").text
        beyond, bad = c.get("/?page=9"), c.get("/?page=x")
    assert first.count('class="run status-open"') == RUNS_PAGE_SIZE
    assert f"page 1 of 2 ({RUNS_PAGE_SIZE + 5} runs)" in first
    assert "run_104" in first  # newest first
    assert "run_000" not in first
    assert second.count('class="run status-open"') == 5
    assert "run_000" in second
    assert "No runs on this page" in beyond.text
    assert bad.status_code == 400


def test_the_plan_shows_the_waves(client: TestClient, played: Run) -> None:
    log_in(client)
    page = client.get(f"/runs/{played.id}/plan").text
    assert "Wave 1" in page
    assert "Wave 2" not in page  # the mkdir is deferred: the uncertain put may stand in it
    assert "deferred" in page
    assert "uncertain" in page
    assert "Nothing has run" in page
    assert played.journal.get_run(played.id).status.value == "open"


def _wait_done(client: TestClient, run_id: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body = client.get(f"/api/runs/{run_id}/rollback").json()
        if not body["active"]:
            return body
        time.sleep(0.05)
    raise AssertionError("the rollback did not end")


def test_a_rollback_from_the_page_is_repeated_until_complete(
    client: TestClient, played: Run, mem: MemConnector
) -> None:
    log_in(client)
    csrf = csrf_of(client.get(f"/runs/{played.id}/plan").text)
    answer = client.post(f"/runs/{played.id}/rollback", data={"csrf": csrf}, follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/runs/{played.id}/rollback"
    first = _wait_done(client, played.id)
    assert first["complete"] is False  # the uncertain step stays outstanding
    assert first["status"] == "rollback_incomplete"
    assert "d/a" not in mem.data
    client.post(
        f"/runs/{played.id}/steps/3/resolve",
        data={"csrf": csrf, "outcome": "not_applied", "name": "ann"},  # the fault wrote nothing
    )
    client.post(f"/runs/{played.id}/rollback", data={"csrf": csrf})
    second = _wait_done(client, played.id)
    assert second["complete"] is True
    assert second["status"] == "rolled_back"
    assert mem.data == {}
    page = client.get(f"/runs/{played.id}/rollback").text
    assert "rollback complete" in page


def test_a_console_without_a_compensator_says_it_cannot_roll_back(
    journal: Journal, location: str, played: Run
) -> None:
    with console_client(journal, location) as c:
        log_in(c)
        page = c.get(f"/runs/{played.id}/plan").text
        assert "cannot roll back" in page
        # the uncertain step's form gives the session's CSRF token
        csrf = csrf_of(c.get(f"/runs/{played.id}").text)
        answer = c.post(f"/runs/{played.id}/rollback", data={"csrf": csrf})
        assert answer.status_code == 409
        assert "--compensator-cmd" in answer.text
        assert played.journal.get_run(played.id).status.value == "open"


def test_a_decision_on_the_page_is_bound_to_the_arguments(client: TestClient, played: Run) -> None:
    log_in(client)
    queue = approvals_of(played.journal)
    a = queue.request_approval(
        played.id,
        "mem.guarded_put",
        {"key": "k", "value": "1"},
        "why",
        requested_by="gw",
        timeout=60,
    )
    b = queue.request_approval(
        played.id,
        "mem.guarded_put",
        {"key": "k", "value": "2"},
        None,
        requested_by="gw",
        timeout=60,
    )
    page = client.get("/approvals").text
    assert f'id="approval-{a.id}"' in page
    assert f'id="approval-{b.id}"' in page
    csrf = csrf_of(page)
    wrong = client.post(
        f"/approvals/{a.id}",
        data={"csrf": csrf, "decision": "approve", "name": "ann", "args_hash": b.args_hash},
    )
    assert wrong.status_code == 409
    assert "other arguments" in wrong.text
    nameless = client.post(
        f"/approvals/{a.id}",
        data={"csrf": csrf, "decision": "approve", "name": " ", "args_hash": a.args_hash},
    )
    assert nameless.status_code == 400
    ok = client.post(
        f"/approvals/{a.id}",
        data={
            "csrf": csrf,
            "decision": "approve",
            "name": "ann",
            "args_hash": a.args_hash,
            "note": "fine",
        },
        follow_redirects=False,
    )
    assert ok.status_code == 303
    decided = queue.get_approval(a.id)
    assert (decided.state, decided.decided_by, decided.note) == (
        ApprovalState.APPROVED,
        "ann",
        "fine",
    )
    assert queue.get_approval(b.id).state is ApprovalState.WAITING
    assert [w["id"] for w in client.get("/api/approvals").json()["waiting"]] == [b.id]


def test_a_waiting_call_goes_on_only_with_its_own_approval(location: str, played: Run) -> None:
    """The gateway's side (ConsoleQueue) and the console in another journal handle."""
    registry = played.registry
    manifest = registry.get("mem.guarded_put")
    with open_journal(location) as console_journal, console_client(console_journal, location) as c:
        log_in(c)
        queue = ConsoleQueue(played.journal, 3.0, interval=0.05)
        results: dict[str, object] = {}

        async def gateway() -> None:
            async def ask(value: str) -> None:
                request = ApprovalRequest(
                    played.id, "mem.guarded_put", manifest, {"key": "k", "value": value}, None
                )
                results[value] = await queue.wait(request, "test client")

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask, "1")
                tg.start_soon(ask, "2")
                await anyio.sleep(0.3)
                waiting = approvals_of(console_journal).list_approvals(waiting=True)
                assert len(waiting) == 2
                one = next(w for w in waiting if w.args["value"] == "1")
                csrf = csrf_of(c.get("/approvals").text)
                await anyio.to_thread.run_sync(
                    lambda: c.post(
                        f"/approvals/{one.id}",
                        data={
                            "csrf": csrf,
                            "decision": "approve",
                            "name": "ann",
                            "args_hash": one.args_hash,
                        },
                    )
                )

        anyio.run(gateway)
    first, second = results["1"], results["2"]
    assert first.approved is True
    assert "ann via reversi console" in first.by
    assert second.approved is False  # nobody approved these arguments
    assert "nobody decided" in (second.note or "")
    assert args_hash({"key": "k", "value": "2"}) != args_hash({"key": "k", "value": "1"})


def test_secrets_and_the_journal_password_never_reach_a_page(
    client: TestClient, make_run: Callable[..., Run]
) -> None:
    register_secret("hunter2-console-secret")
    run = make_run()
    anyio.run(lambda: run.call("mem.mkdir", {"path": "hunter2-console-secret"}))
    log_in(client)
    page = client.get(f"/runs/{run.id}").text
    assert "hunter2-console-secret" not in page
    assert "[REDACTED]" in page


def test_credentials_of_the_environment_never_reach_a_page(
    journal: Journal, location: str, make_run: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    # only in the environment: the console registers it as `reversi export` does
    env_secret = "ghp_console-env-secret-0123456789"
    monkeypatch.setenv("GITHUB_TOKEN", env_secret)
    run = make_run()
    anyio.run(lambda: run.call("mem.mkdir", {"path": env_secret}, reason=f"uses {env_secret}"))
    args = {"key": "k", "value": env_secret, "token": "by-key-name-only-0123"}
    approvals_of(journal).request_approval(
        run.id, "mem.guarded_put", args, f"token is {env_secret}", requested_by="gw", timeout=60
    )
    with console_client(journal, location) as c:
        log_in(c)
        pages = {
            "timeline": c.get(f"/runs/{run.id}").text,
            "approvals": c.get("/approvals").text,
            "api": c.get("/api/approvals").text,
        }
    for name, text in pages.items():
        assert env_secret not in text, name
        assert "by-key-name-only-0123" not in text, name  # a credential-named key's value
        assert "[REDACTED]" in text, name


def test_a_journal_url_is_shown_without_its_password(sqlite_journal: Journal) -> None:
    with console_client(sqlite_journal, "postgresql://ann:pw-never-shown@db.example:5432/j") as c:
        log_in(c)
        page = c.get("/").text
    assert "pw-never-shown" not in page
    assert "db.example" in page


def test_a_5000_step_run_is_paged_and_no_page_is_large(
    sqlite_journal: Journal, data_dir: Path
) -> None:
    """The page size depends on the rendering, not the store: one store is enough."""
    sqlite_journal.create_run("big", ["mem:write"], None)
    for n in range(5000):
        step = sqlite_journal.begin_step(
            "big",
            "mem.put",
            "reversible",
            "mem:write",
            {"key": f"k{n}", "value": "x" * 40},
            "a reason",
            None,
            [n] if n else [],
        )
        sqlite_journal.finish_step(
            "big",
            step.seq,
            StepState.SUCCEEDED,
            result={"existed": False},
            error=None,
            compensation={"tool": "mem.restore", "args": {"key": f"k{n}"}},
            compensation_error=None,
        )
    with console_client(sqlite_journal, str(data_dir)) as c:
        log_in(c)
        first = c.get("/runs/big")
        last = c.get("/runs/big?page=25")
        plan = c.get("/runs/big/plan")
    assert first.status_code == 200
    assert len(first.content) < 1_000_000, len(first.content)
    assert first.text.count('class="step ') == PAGE_SIZE
    assert "page 1 of 25" in first.text
    assert 'id="step-5000"' in last.text
    assert 'id="step-1"' not in last.text
    assert plan.status_code == 200


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("//evil.example/x", "/evil.example/x"),
        ("///evil.example/x?a=1", "/evil.example/x?a=1"),
        ("/%5Cevil.example/x", "/evil.example/x"),
        ("/runs/R?page=2", "/runs/R?page=2"),
    ],
)
def test_the_token_redirect_stays_on_this_site(
    journal: Journal, location: str, path: str, expected: str
) -> None:
    sep = "&" if "?" in path else "?"
    with console_client(journal, location) as c:
        request = c.build_request("GET", "/")  # the path as sent, never read as //host
        request.url = request.url.copy_with(raw_path=f"{path}{sep}token={TOKEN}".encode())
        answer = c.send(request, follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == expected  # never //host: another site


def test_a_journal_that_cannot_be_read_gets_a_503_page_and_the_console_goes_on(
    journal: Journal, location: str, played: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal outage (its database gone, its file locked) is the journal's own error:
    a 503 naming it, not a bare 500; once it is back, the same page is served."""
    from reversi_core.errors import JournalError

    def down(*args: object, **kwargs: object) -> None:
        raise JournalError("database is locked")

    with console_client(journal, location) as c:
        log_in(c)
        with monkeypatch.context() as m:
            m.setattr(type(journal), "get_run", down)
            m.setattr(type(journal), "list_runs", down)
            m.setattr(type(journal), "run_summaries", down, raising=False)
            for path in ("/", f"/runs/{played.id}"):
                answer = c.get(path)
                assert answer.status_code == 503, (path, answer.status_code)
                assert "the journal cannot be read now: database is locked" in answer.text
        assert c.get("/").status_code == 200
        assert c.get(f"/runs/{played.id}").status_code == 200
        assert c.get("/runs/no-such-run").status_code == 404
        assert played.id in c.get("/").text
