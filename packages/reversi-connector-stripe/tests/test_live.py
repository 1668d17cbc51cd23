"""stripe's live scenario: what it leaves on the fake, its test-mode guard, its cassette as an oracle.

The cassette in tests/cassettes/ was recorded against the fake (``python scripts/live.py
stripe --test-backend``): no Stripe credentials are available to this project. The
contract (test_contract.py) replays it; here connectors changed on purpose must fail it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reversi_connector_stripe import StripeConnector
from reversi_connector_stripe._args import CancelPaymentIntentArgs
from reversi_connector_stripe.testing import LIVE, FakeStripe
from reversi_core.connector import CallContext
from reversi_core.testing import (
    CassetteMismatch,
    FakeServer,
    LiveCheckFailed,
    replay_cassette,
    run_live,
)

pytestmark = pytest.mark.anyio

CASSETTE = Path(__file__).resolve().parent / "cassettes" / f"{LIVE.name}.yaml"
KEY = "sk_test_liveScenarioKey0123456789abcdef"


async def test_the_scenario_leaves_only_the_documented_residue(tmp_path: Path) -> None:
    fake = FakeStripe(token=KEY)
    with FakeServer(fake) as server:
        environ = {"STRIPE_SECRET_KEY": KEY, "STRIPE_BASE_URL": fake.base_url(server)}
        outcome = await run_live(StripeConnector, LIVE, environ, data_dir=tmp_path, log=lambda _: None)
        sent = [f"{r.method} {r.path}" for r in server.requests]
    assert outcome.steps == 2
    state = fake.snapshot()
    assert state["customers"] == {}
    assert list(state["deleted_customers"].values()) == ["api"]  # the deleted customer's stub
    ((intent_id, intent),) = state["payment_intents"].items()
    ((customer_id, _),) = state["deleted_customers"].items()
    assert (intent["status"], intent["amount"], intent["origin"]) == ("canceled", 1234, "api")
    # the edge's order: the intent is canceled before its customer is deleted
    cancel = sent.index(f"POST /v1/payment_intents/{intent_id}/cancel")
    assert cancel < sent.index(f"DELETE /v1/customers/{customer_id}")
    assert sent.count("POST /v1/customers") == 1


async def test_a_live_mode_key_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    live_key = "sk_live_notARealKey0123456789abcdef"
    fake = FakeStripe(token=live_key)
    with FakeServer(fake) as server:
        environ = {"STRIPE_SECRET_KEY": live_key, "STRIPE_BASE_URL": fake.base_url(server)}
        with pytest.raises(LiveCheckFailed, match="never runs in live mode"):
            await run_live(StripeConnector, LIVE, environ, data_dir=tmp_path, log=lambda _: None)
        assert server.requests == []


class CancelsBlindly(StripeConnector):
    """cancel_payment_intent no longer reads the intent before it cancels."""

    async def _read_intent(self, ctx: CallContext, intent_id: str) -> dict[str, Any]:
        return {"id": intent_id, "status": "requires_payment_method"}


class SendsTheReasonAlways(StripeConnector):
    """cancel_payment_intent sends a cancellation_reason the recording never sent."""

    async def cancel_payment_intent(self, args: CancelPaymentIntentArgs, ctx: CallContext) -> dict[str, Any]:
        reason = args.cancellation_reason or "abandoned"
        return await super().cancel_payment_intent(args.model_copy(update={"cancellation_reason": reason}), ctx)


async def test_the_shipped_cassette_replays_offline() -> None:
    report = await replay_cassette(StripeConnector, LIVE, CASSETTE)
    assert report.exchanges == 9
    assert report.sent[:2] == ["POST /v1/customers", "POST /v1/payment_intents"]
    assert report.sent.count("GET /v1/customers/cus_bhOmM1Khzfx1hcMbm9lThEnU") == 1


async def test_an_undo_that_no_longer_reads_first_fails_the_replay() -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(StripeConnector, LIVE, CASSETTE, connector_class=CancelsBlindly)
    assert any(
        p.startswith("the connector never sent GET /v1/payment_intents/pi_cMgSzmqw5UE156KkSRn9XdYR")
        for p in failed.value.problems
    ), failed.value.problems


async def test_a_changed_form_field_fails_the_replay() -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(StripeConnector, LIVE, CASSETTE, connector_class=SendsTheReasonAlways)
    first = failed.value.problems[0]
    assert first.startswith(
        "the connector sent POST /v1/payment_intents/pi_cMgSzmqw5UE156KkSRn9XdYR/cancel, which the "
        "cassette does not hold"
    ), first
    assert "abandoned" in first
