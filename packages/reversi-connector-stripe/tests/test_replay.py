"""Settling an uncertain Stripe write by replaying it with the step's own key (docs/engine.md RES-2, RES-3).

The refund is the case that matters: its answer is lost after Stripe made it, the step
is uncertain, and re-sending the same request with the same key must give back the
refund Stripe made, never a second one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from reversi_connector_stripe import StripeConnector
from reversi_connector_stripe.connector import KEY_LIFETIME, REPLAY
from reversi_connector_stripe.testing import (
    CUSTOMER,
    OPEN_INTENT,
    PAID_CHARGE,
    PAID_INTENT,
    FakeStripe,
)
from reversi_core import (
    CallContext,
    ReplayRefusedError,
    Run,
    SQLiteJournal,
    compensator_for,
    executor_for,
    registry_for,
)
from reversi_core.journal import RollbackState, StepState
from reversi_core.testing import FakeServer, Fault

from .conftest import KEY

pytestmark = pytest.mark.anyio


def run_cli(argv: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run a console script to its end (the fake answers from its own thread meanwhile)."""
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=env, timeout=60, check=False
    )


def script(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"console script {name} is not installed"
    return path


async def approve(request: Any) -> bool:
    return True


def api_refunds(fake: FakeStripe) -> list[dict[str, Any]]:
    """The refunds made through requests (not the seeded one)."""
    return [r for rid, r in fake.refunds.items() if fake.origin[rid] == "api"]


def new_run(journal: SQLiteJournal, stripe: StripeConnector) -> Run:
    return Run.start(
        journal,
        registry_for([stripe]),
        scope={"stripe:refund:write", "stripe:payments:write", "stripe:customers:write"},
        executor=executor_for([stripe]),
        approver=approve,
    )


async def lost_refund(run: Run, server: FakeServer, **args: Any) -> int:
    """A refund Stripe carries out whose answer never arrives: its step is uncertain."""
    server.faults.add(Fault.drop_after_read(apply=True), method="POST", path="/v1/refunds")
    outcome = await run.attempt("stripe.create_refund", {"payment_intent": PAID_INTENT, **args})
    assert outcome.state is StepState.UNCERTAIN, outcome
    assert outcome.step is not None
    return outcome.step


@pytest.mark.req("RES-2", "RES-3")
async def test_a_lost_refund_replayed_through_the_cli_is_resolved_with_the_one_refund(
    fake: FakeStripe, server: FakeServer, stripe: StripeConnector, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    with SQLiteJournal.open(data) as journal:
        run = new_run(journal, stripe)
        seq = await lost_refund(run, server, amount=700)
    assert len(api_refunds(fake)) == 1  # Stripe made it; the agent never heard
    (made,) = api_refunds(fake)
    env = {**os.environ, "STRIPE_SECRET_KEY": KEY, "STRIPE_BASE_URL": fake.base_url(server)}
    argv = [script("reversi"), "resolve", run.id, str(seq), "--replay", "--data", str(data), "--json",
            "--replay-cmd", f"{script('reversi-connectors')} replay"]
    done = await anyio.to_thread.run_sync(run_cli, argv, env)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["applied"] is True
    assert outcome["step"]["resolution"] == "applied"
    assert outcome["step"]["result"]["id"] == made["id"]
    assert outcome["step"]["result"]["amount"] == 700
    assert len(api_refunds(fake)) == 1  # the replay gave the refund back, it made none
    assert fake.charges[PAID_CHARGE]["amount_refunded"] == 700
    replayed = [r for r in server.requests if r.method == "POST" and r.path == "/v1/refunds"]
    assert len(replayed) == 2
    assert {r.headers["idempotency-key"] for r in replayed} == {f"reversi-{run.id}-{seq}"}
    assert replayed[0].body == replayed[1].body  # the very same request
    with SQLiteJournal.open(data) as journal:
        events = [e for e in journal.list_events(run.id) if e["kind"] == "replayed"]
        assert [e["detail"]["outcome"] for e in events] == ["applied"]
        rollback = await Run.open(journal, registry_for([stripe]), run.id).rollback(
            compensate=compensator_for([stripe])
        )
    assert [o.state for o in rollback.unrecoverable] == ["unrecoverable"]  # a refund stays refunded


@pytest.mark.req("RES-3")
async def test_a_refund_that_never_reached_stripe_is_made_once_by_the_replay(
    fake: FakeStripe, server: FakeServer, stripe: StripeConnector, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = new_run(journal, stripe)
        server.faults.add(Fault.drop_after_read(apply=False), method="POST", path="/v1/refunds")
        outcome = await run.attempt("stripe.create_refund", {"payment_intent": PAID_INTENT})
        assert outcome.state is StepState.UNCERTAIN
        assert outcome.step is not None
        assert api_refunds(fake) == []
        replay = await run.replay(outcome.step)
        assert replay.applied is True
        assert len(api_refunds(fake)) == 1
        sent = len(server.requests)
        with pytest.raises(ReplayRefusedError, match="already resolved as applied"):
            await run.replay(outcome.step)  # the step is settled: a second replay sends nothing
        assert len(server.requests) == sent
        assert len(api_refunds(fake)) == 1


@pytest.mark.req("RES-2")
async def test_no_replay_sends_a_refund_after_its_step_was_resolved_or_the_run_rolled_back(
    fake: FakeStripe, server: FakeServer, stripe: StripeConnector, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    with SQLiteJournal.open(data) as journal:
        run = new_run(journal, stripe)
        steps = []
        for amount in (100, 200):  # two refunds whose requests never reached Stripe
            server.faults.add(Fault.drop_after_read(apply=False), method="POST", path="/v1/refunds")
            outcome = await run.attempt("stripe.create_refund", {"payment_intent": PAID_INTENT, "amount": amount})
            assert outcome.state is StepState.UNCERTAIN
            assert outcome.step is not None
            steps.append(outcome.step)
    resolved, open_question = steps
    env = {**os.environ, "STRIPE_SECRET_KEY": KEY, "STRIPE_BASE_URL": fake.base_url(server)}

    def reversi(*argv: str) -> subprocess.CompletedProcess[str]:
        return run_cli([script("reversi"), *argv, "--data", str(data)], env)

    def replay(step: int) -> subprocess.CompletedProcess[str]:
        return reversi("resolve", run.id, str(step), "--replay",
                       "--replay-cmd", f"{script('reversi-connectors')} replay")

    done = await anyio.to_thread.run_sync(reversi, "resolve", run.id, str(resolved), "--not-applied")
    assert done.returncode == 0, done.stderr
    refused = await anyio.to_thread.run_sync(replay, resolved)
    assert refused.returncode == 2
    assert "already resolved as not applied" in refused.stderr
    with SQLiteJournal.open(data) as journal:
        report = await Run.open(journal, registry_for([stripe]), run.id).rollback(
            compensate=compensator_for([stripe])
        )
    assert [o.step for o in report.outstanding] == [open_question]  # still uncertain
    sent = len(server.requests)
    for step in (resolved, open_question):
        refused = await anyio.to_thread.run_sync(replay, step)
        assert refused.returncode == 2, refused.stdout
    assert f"the rollback of run {run.id} has started" in refused.stderr
    assert len(server.requests) == sent  # nothing reached Stripe
    assert api_refunds(fake) == []  # the run that is being undone made no refund
    with SQLiteJournal.open(data) as journal:
        assert journal.get_step(run.id, open_question).resolution is None
        with pytest.raises(ReplayRefusedError, match="has started"):
            await Run.open(journal, registry_for([stripe]), run.id, executor=executor_for([stripe])).replay(
                open_question
            )
    assert api_refunds(fake) == []


@pytest.mark.req("RES-3")
async def test_a_lost_refusal_replayed_resolves_the_step_not_applied(
    fake: FakeStripe, server: FakeServer, stripe: StripeConnector, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = new_run(journal, stripe)
        seq = await lost_refund(run, server, amount=5000)  # more than the charge: refused
        replay = await run.replay(seq)
    assert replay.applied is False
    assert "amount_too_large" in (replay.reason or "")
    assert replay.step.resolution == "not_applied"
    assert api_refunds(fake) == []


@pytest.mark.req("RES-3")
async def test_a_replay_stripe_does_not_answer_leaves_the_step_uncertain(
    fake: FakeStripe, server: FakeServer, stripe: StripeConnector, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = new_run(journal, stripe)
        seq = await lost_refund(run, server)
        for fault in (Fault.status(500), Fault.status(409), Fault.status(401), Fault.drop_after_read()):
            server.faults.add(fault, method="POST", path="/v1/refunds")
            replay = await run.replay(seq)
            assert replay.applied is None, fault
            assert replay.step.resolution is None
        events = [e["detail"]["outcome"] for e in journal.list_events(run.id) if e["kind"] == "replayed"]
        assert events == ["uncertain"] * 4
        assert (await run.replay(seq)).applied is True
    assert len(api_refunds(fake)) == 1


@pytest.mark.req("RES-3")
async def test_stripes_idempotency_error_on_a_replay_does_not_settle_it(
    fake: FakeStripe, server: FakeServer, stripe: StripeConnector, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = new_run(journal, stripe)
        seq = await lost_refund(run, server, amount=300)
        step = journal.get_step(run.id, seq)
        # the key was first used with other parameters: Stripe says idempotency_error (400)
        with fake.lock:
            fake.keys[step.idempotency_key] = type(fake.keys[step.idempotency_key])(
                "POST /v1/refunds", {"amount": "1"}, fake.keys[step.idempotency_key].response, fake.now()
            )
        replay = await run.replay(seq)
    assert replay.applied is None
    assert "idempotency_error" in (replay.reason or "")


@pytest.mark.req("RES-2")
async def test_a_replay_past_the_key_window_is_refused_and_sends_nothing(
    fake: FakeStripe, server: FakeServer, stripe: StripeConnector, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = new_run(journal, stripe)
        seq = await lost_refund(run, server, amount=500)
        step = journal.get_step(run.id, seq)
        sent = len(server.requests)
        with pytest.raises(ReplayRefusedError, match=r"within 23\.0 hours"):
            await run.replay(seq, now=step.started_at + REPLAY.window + 1)
        assert len(server.requests) == sent
        assert journal.get_step(run.id, seq).resolution is None
    # what the window protects against: once Stripe pruned the key, a repeat is a new refund
    (first,) = [r["id"] for r in api_refunds(fake)]
    fake.advance_clock(KEY_LIFETIME + 1)
    again = await stripe.call(
        "stripe.create_refund", step.args, CallContext(idempotency_key=step.idempotency_key)
    )
    assert again["id"] != first
    assert len(api_refunds(fake)) == 2


@pytest.mark.req("RES-2")
async def test_a_step_whose_tool_does_not_honour_keys_is_refused(
    fake: FakeStripe, server: FakeServer, stripe: StripeConnector, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    with SQLiteJournal.open(data) as journal:
        run = new_run(journal, stripe)
        server.faults.add(Fault.drop_after_read(apply=True), method="DELETE")
        outcome = await run.attempt("stripe.delete_customer", {"customer": CUSTOMER})
        assert outcome.state is StepState.UNCERTAIN
        assert outcome.step is not None
        with pytest.raises(ReplayRefusedError, match="does not declare that the vendor honours"):
            await run.replay(outcome.step)
    sent = len(server.requests)
    env = {**os.environ, "STRIPE_SECRET_KEY": KEY, "STRIPE_BASE_URL": fake.base_url(server)}
    argv = [script("reversi"), "resolve", run.id, str(outcome.step), "--replay", "--data", str(data)]
    done = await anyio.to_thread.run_sync(run_cli, argv, env)
    assert done.returncode == 2
    assert "stripe.delete_customer cannot be replayed" in done.stderr
    assert len(server.requests) == sent  # nothing was sent
    with SQLiteJournal.open(data) as journal:
        assert journal.get_step(run.id, outcome.step).resolution is None


@pytest.mark.req("RES-3")
async def test_the_replay_process_takes_a_forward_call_only_with_the_steps_own_key(
    fake: FakeStripe, server: FakeServer
) -> None:
    env = {**os.environ, "STRIPE_SECRET_KEY": KEY, "STRIPE_BASE_URL": fake.base_url(server)}
    call = {
        "tool": "stripe.create_refund",
        "args": {"payment_intent": PAID_INTENT},
        "run_id": "run_0000000000000001",
        "step": 3,
    }

    def replay(**more: Any) -> subprocess.CompletedProcess[str]:
        return run_cli([script("reversi-connectors"), "replay"], env, json.dumps({**call, **more}))

    wrong = replay(idempotency_key="reversi-run_0000000000000001-3-undo")
    assert wrong.returncode == 2
    assert "must carry the step's own idempotency key" in wrong.stderr
    assert api_refunds(fake) == []
    compensation = replay(tool="stripe.delete_customer", args={"customer": CUSTOMER},
                          idempotency_key="reversi-run_0000000000000001-3")
    assert compensation.returncode == 2
    assert "cannot be replayed" in compensation.stderr
    assert CUSTOMER in fake.customers
    right = replay(idempotency_key="reversi-run_0000000000000001-3")
    assert right.returncode == 0, right.stderr
    assert [json.loads(right.stdout)["id"]] == [r["id"] for r in api_refunds(fake)]
    refused = replay(args={"payment_intent": OPEN_INTENT}, idempotency_key="reversi-run_0000000000000001-4",
                     step=4)
    assert refused.returncode == 3  # Stripe's answer: nothing to refund, the call did not take effect
    assert "does not have a successful charge" in refused.stderr


@pytest.mark.req("RES-3")
async def test_an_uncertain_payment_intent_replayed_gets_its_compensation(
    fake: FakeStripe, server: FakeServer, stripe: StripeConnector, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = new_run(journal, stripe)
        server.faults.add(Fault.hang(10), method="POST", path="/v1/payment_intents")
        outcome = await run.attempt(
            "stripe.create_payment_intent", {"amount": 1200, "currency": "usd"}, timeout=0.5
        )
        assert outcome.state is StepState.UNCERTAIN
        assert outcome.step is not None
        server.faults.clear()
        replay = await run.replay(outcome.step)
        assert replay.applied is True
        (intent_id,) = [i for i, o in fake.origin.items() if o == "api"]
        compensation = replay.step.compensation
        assert compensation is not None
        assert compensation["tool"] == "stripe.cancel_payment_intent"
        assert compensation["args"]["payment_intent"] == intent_id
        assert compensation["args"]["if_amount"] == 1200  # what the replayed call left
        report = await run.rollback(compensate=compensator_for([stripe]))
    assert report.complete
    assert fake.payment_intents[intent_id]["status"] == "canceled"
    assert report.steps[0].rollback_state is RollbackState.COMPENSATED
