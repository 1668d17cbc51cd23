"""The stripe connector's live scenario (``nox -s live -- stripe``; docs/connectors/stripe.md).

In Stripe's test mode only (a ``sk_test_`` or ``rk_test_`` key: the scenario refuses a
live-mode key before it sends anything), through the real engine: create a customer,
then an unconfirmed payment intent of 12.34 USD for it (the edge: the intent's undo must
run before the customer's); roll the run back; then check that the intent is canceled
and the customer gone (canceling and deleting them again answer "already done"). The
customer's email, name and metadata carry the live run's suffix. What stays behind, as
for any rollback (docs/connectors/stripe.md, "What a rollback leaves behind"): the
canceled payment intent and the deleted customer's id. No money moves: the intent is
never confirmed, and no refund is made (that needs a succeeded payment).
"""

from __future__ import annotations

from reversi_core.testing import LiveCheckFailed, LiveContext

__all__ = ["LIVE_AMOUNT", "LIVE_SUMMARY", "TEST_MODE_PREFIXES", "live_scenario"]

TEST_MODE_PREFIXES = ("sk_test_", "rk_test_")
"""The key prefixes of Stripe's test mode (https://docs.stripe.com/keys#test-live-modes)."""

LIVE_AMOUNT = 1234
"""The payment intent's amount, in cents of USD (never confirmed: no money moves)."""


async def live_scenario(live: LiveContext) -> None:
    """Customer and payment intent, then their rollback, checked on Stripe (module docstring)."""
    key = live.environ.get("STRIPE_SECRET_KEY", "")
    if not key.startswith(TEST_MODE_PREFIXES):
        raise LiveCheckFailed(
            "expected a test-mode key in STRIPE_SECRET_KEY (sk_test_... or rk_test_...): the "
            "live scenario creates customers and payment intents, and never runs in live mode"
        )
    tag = {"reversi_live": live.suffix}

    run = live.start_run()
    _, customer = await run.call(
        "stripe.create_customer",
        {
            "email": f"reversi-live-{live.suffix}@example.com",
            "name": live.name("Reversi live check", " "),
            "metadata": tag,
        },
    )
    live.check(customer["livemode"] is False, "the customer to be made in test mode")
    live.check(customer["metadata"] == tag, f"the customer to carry the metadata {tag}")
    live.log(f"created customer {customer['id']}")
    _, intent = await run.call(
        "stripe.create_payment_intent",
        {
            "amount": LIVE_AMOUNT,
            "currency": "usd",
            "customer": customer["id"],
            "description": live.name("Reversi live check", " "),
            "metadata": tag,
        },
    )
    live.check(
        intent["status"] == "requires_payment_method",
        f"payment intent {intent['id']} to wait for a payment method (unconfirmed)",
    )
    live.check(intent["customer"] == customer["id"], f"payment intent {intent['id']} to be the customer's")
    live.check(intent["amount"] == LIVE_AMOUNT, f"payment intent {intent['id']} to be of {LIVE_AMOUNT} cents")

    await live.rollback(run)

    again = await live.call("stripe.cancel_payment_intent", {"payment_intent": intent["id"]})
    live.check(again["canceled"] is False, f"payment intent {intent['id']} to be canceled already")
    gone = await live.call("stripe.delete_customer", {"customer": customer["id"]})
    live.check(gone["deleted"] is False, f"customer {customer['id']} to be deleted already")


LIVE_SUMMARY = (
    "In test mode, creates a customer and an unconfirmed payment intent for it, rolls the run "
    "back, and checks that the intent is canceled and the customer deleted."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""
