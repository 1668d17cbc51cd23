"""A rollback never deletes or cancels what someone changed on Stripe after the call (RB-10).

Each forward tool runs against the fake, then someone outside the run changes what it
made, through the fake's state (as they would in Stripe's Dashboard or with another
integration), then the compensation runs with the arguments the manifest's map computes,
as the engine does. delete_customer and cancel_payment_intent read the object first and
refuse (``changed_since``, naming each changed field) when it no longer holds what the
call left; ``ctx.overwrite`` (a person's decision) skips the read. The last test runs the
race through the engine: the step ends ``compensation_failed``, the change stays, and a
rollback after the change is undone completes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reversi_connector_stripe import StripeConnector
from reversi_connector_stripe.testing import CUSTOMER, FakeStripe, someone_changes
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import InvalidArgumentsError, ToolError
from reversi_core.journal import RollbackState
from reversi_core.manifest import evaluate_argument_map
from reversi_core.testing import FakeServer

pytestmark = pytest.mark.anyio

UNDO = CallContext(compensation=True, idempotency_key="reversi-run_t-1-undo")
OVERWRITE = CallContext(compensation=True, overwrite=True, idempotency_key="reversi-run_t-1-undo")
MANIFESTS = {m.name: m for m in StripeConnector.manifests()}


async def forward(stripe: StripeConnector, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = await stripe.call(tool, args)
    compensation = MANIFESTS[tool].compensation
    assert compensation is not None
    return compensation.tool, evaluate_argument_map(compensation, args, result)


def sent(server: FakeServer, since: int) -> list[str]:
    return [f"{r.method} {r.path}" for r in server.requests[since:]]


async def test_the_undos_are_given_what_the_call_left(stripe: StripeConnector) -> None:
    _, deleting = await forward(stripe, "stripe.create_customer", {"email": "ada@example.com"})
    assert {k: v for k, v in deleting.items() if k != "customer"} == {
        "if_email": "ada@example.com",
        "if_name": None,
        "if_description": None,
        "if_phone": None,
        "if_metadata": {},
    }
    _, canceling = await forward(stripe, "stripe.create_payment_intent", {"amount": 700, "currency": "eur"})
    assert {k: v for k, v in canceling.items() if k != "payment_intent"} == {
        "if_status": "requires_payment_method",
        "if_amount": 700,
        "if_currency": "eur",
        "if_customer": None,
        "if_description": None,
        "if_metadata": {},
    }


async def test_the_amount_precondition_is_a_strict_integer(
    stripe: StripeConnector, fake: FakeStripe, server: FakeServer
) -> None:
    undo, args = await forward(stripe, "stripe.create_payment_intent", {"amount": 700, "currency": "eur"})
    since = len(server.requests)
    for loose in ("700", 700.0, True):  # a text, a float or a bool would be taken as 700 (or 1)
        with pytest.raises(InvalidArgumentsError, match="if_amount"):
            await stripe.call(undo, {**args, "if_amount": loose}, UNDO)
    assert sent(server, since) == []  # nothing was read or canceled
    assert fake.payment_intents[args["payment_intent"]]["status"] == "requires_payment_method"
    assert (await stripe.call(undo, args, UNDO))["status"] == "canceled"


async def test_a_customer_someone_edited_is_not_deleted(
    stripe: StripeConnector, fake: FakeStripe, server: FakeServer
) -> None:
    undo, args = await forward(stripe, "stripe.create_customer", {"email": "ada@example.com", "metadata": {"a": "1"}})
    before = fake.update_customer(args["customer"], email="ada@lovelace.example", metadata={"vip": "yes"})
    since = len(server.requests)
    with pytest.raises(ToolError) as caught:
        await stripe.call(undo, args, UNDO)
    message = str(caught.value)
    assert caught.value.code == "changed_since"
    assert "the customer's email is now 'ada@lovelace.example' (the call left 'ada@example.com')" in message
    assert "the customer's metadata (keys vip)" in message
    assert "--overwrite STEP" in message
    assert sent(server, since) == [f"GET /v1/customers/{args['customer']}"]  # nothing deleted
    assert args["customer"] in fake.customers
    fake.restore(before)
    assert (await stripe.call(undo, args, UNDO))["deleted"] is True
    assert args["customer"] in fake.deleted_customers


async def test_a_field_the_call_left_empty_must_still_be_empty(stripe: StripeConnector, fake: FakeStripe) -> None:
    undo, args = await forward(stripe, "stripe.create_customer", {"email": "ada@example.com"})
    fake.update_customer(args["customer"], phone="+44 20 7946 0000")
    with pytest.raises(ToolError, match=r"the customer's phone is now '\+44 20 7946 0000' \(the call left empty\)"):
        await stripe.call(undo, args, UNDO)


async def test_overwrite_deletes_the_edited_customer_without_reading_it(
    stripe: StripeConnector, fake: FakeStripe, server: FakeServer
) -> None:
    undo, args = await forward(stripe, "stripe.create_customer", {"email": "ada@example.com"})
    fake.update_customer(args["customer"], name="Someone Else")
    since = len(server.requests)
    assert (await stripe.call(undo, args, OVERWRITE))["deleted"] is True
    assert sent(server, since) == [f"DELETE /v1/customers/{args['customer']}"]


async def test_a_customer_someone_deleted_is_already_undone(
    stripe: StripeConnector, fake: FakeStripe, server: FakeServer
) -> None:
    undo, args = await forward(stripe, "stripe.create_customer", {"email": "ada@example.com"})
    await stripe.call("stripe.delete_customer", {"customer": args["customer"]})
    since = len(server.requests)
    assert (await stripe.call(undo, args, UNDO))["deleted"] is False
    assert sent(server, since) == [f"GET /v1/customers/{args['customer']}"]  # its stub: nothing to delete


async def test_a_direct_delete_compares_nothing(stripe: StripeConnector, server: FakeServer) -> None:
    since = len(server.requests)
    assert (await stripe.call("stripe.delete_customer", {"customer": CUSTOMER}))["deleted"] is True
    assert sent(server, since) == [f"DELETE /v1/customers/{CUSTOMER}"]


async def test_a_payment_intent_someone_changed_is_not_canceled(
    stripe: StripeConnector, fake: FakeStripe, server: FakeServer
) -> None:
    undo, args = await forward(
        stripe, "stripe.create_payment_intent", {"amount": 1999, "currency": "usd", "customer": CUSTOMER}
    )
    before = fake.update_payment_intent(args["payment_intent"], amount=2499, description="with shipping")
    since = len(server.requests)
    with pytest.raises(ToolError) as caught:
        await stripe.call(undo, args, UNDO)
    message = str(caught.value)
    assert caught.value.code == "changed_since"
    assert "the payment intent's amount is now 2499 (the call left 1999)" in message
    assert "the payment intent's description is now 'with shipping' (the call left empty)" in message
    assert sent(server, since) == [f"GET /v1/payment_intents/{args['payment_intent']}"]
    assert fake.payment_intents[args["payment_intent"]]["status"] == "requires_payment_method"
    fake.restore(before)
    assert (await stripe.call(undo, args, UNDO))["canceled"] is True


async def test_an_intent_someone_authorized_is_not_canceled(stripe: StripeConnector, fake: FakeStripe) -> None:
    """Canceling it would release a hold on the payer's card that someone placed on purpose."""
    undo, args = await forward(stripe, "stripe.create_payment_intent", {"amount": 1999, "currency": "usd"})
    fake.authorize_payment_intent(args["payment_intent"])
    held = r"status is now 'requires_capture' \(the call left 'requires_payment_method'\)"
    with pytest.raises(ToolError, match=held):
        await stripe.call(undo, args, UNDO)
    assert fake.payment_intents[args["payment_intent"]]["status"] == "requires_capture"
    canceled = await stripe.call(undo, args, OVERWRITE)  # Stripe cancels a held payment
    assert (canceled["canceled"], canceled["status"]) == (True, "canceled")


async def test_a_succeeded_or_canceled_intent_is_told_apart_before_comparing(
    stripe: StripeConnector, fake: FakeStripe, server: FakeServer
) -> None:
    undo, args = await forward(stripe, "stripe.create_payment_intent", {"amount": 1999, "currency": "usd"})
    fake.succeed_payment_intent(args["payment_intent"])
    with pytest.raises(ToolError) as caught:
        await stripe.call(undo, args, UNDO)
    assert caught.value.code == "payment_intent_succeeded"
    undo, args = await forward(stripe, "stripe.create_payment_intent", {"amount": 1999, "currency": "usd"})
    await stripe.call("stripe.cancel_payment_intent", {"payment_intent": args["payment_intent"]})
    since = len(server.requests)
    assert (await stripe.call(undo, args, UNDO))["canceled"] is False
    assert sent(server, since) == [f"GET /v1/payment_intents/{args['payment_intent']}"]


@pytest.mark.parametrize("tool", ["stripe.create_customer", "stripe.create_payment_intent"])
async def test_the_race_through_the_engine(
    tool: str, stripe: StripeConnector, fake: FakeStripe, server: FakeServer, tmp_path: Path
) -> None:
    args = {"email": "ada@example.com"} if tool == "stripe.create_customer" else {"amount": 1999, "currency": "usd"}
    journal = SQLiteJournal.open(tmp_path)
    run = Run.start(journal, registry_for([stripe]), executor=executor_for([stripe]))
    seq, result = await run.call(tool, args)
    change = someone_changes(server, tool, args, result)
    changed = fake.snapshot()
    first = await run.rollback(compensate=compensator_for([stripe]))
    step = next(s for s in first.steps if s.seq == seq)
    assert not first.complete
    assert step.rollback_state is RollbackState.COMPENSATION_FAILED
    assert change.what in (step.rollback_reason or "")
    assert fake.snapshot() == changed
    change.revert()
    second = await run.rollback(compensate=compensator_for([stripe]))
    assert second.complete
    journal.close()
