"""A fake Stripe API to test against, and the connector's certification opt-in.

:class:`FakeStripe` is a :class:`reversi_core.testing.VendorFake` that models the part of
Stripe's API the ``stripe`` connector uses, written from Stripe's API reference (each
route cites its page): customers, payment intents, charges and refunds as API version
2023-08-16 shapes them, Stripe's error bodies, form-encoded bodies with nested
``metadata[key]`` fields, and Stripe's idempotency contract (a saved answer per key,
``idempotency_error`` for a key reused with other parameters or on another endpoint,
keys pruned after 24 hours on a clock the test controls). Serve it with
:class:`reversi_core.testing.FakeServer` and point the connector at it::

    from reversi_core.testing import FakeServer
    from reversi_connector_stripe import StripeConnector
    from reversi_connector_stripe.testing import FakeStripe

    fake = FakeStripe(token="sk_test_0000000000000001")
    with FakeServer(fake) as server:
        stripe = StripeConnector("sk_test_0000000000000001", base_url=fake.base_url(server))
        made = await stripe.call("stripe.create_customer", {"email": "ada@example.com"})
        assert made["id"] in fake.customers

A test makes a payment intent succeed as a person confirming it would
(:meth:`FakeStripe.succeed_payment_intent`, or :meth:`FakeStripe.authorize_payment_intent`
for one waiting for capture), changes an object as someone outside the run would
(:meth:`FakeStripe.update_customer`, :meth:`FakeStripe.update_payment_intent`, put back
with :meth:`FakeStripe.restore`) and moves the fake's clock past a key's lifetime with
:meth:`FakeStripe.advance_clock`. Faults (a dropped connection, a 5xx,
a 401, a 403, a reply that never comes) are armed on the server (docs/fakes.md).

:func:`certification_fixture` opts the connector into the repository's certification
suite (docs/certification-guide.md); every check applies to stripe. Its
:func:`someone_changes` edits what a forward call made, through the fake, to show that
no undo overwrites a later change, and :data:`LIVE` is the live scenario ``nox -s live
-- stripe`` runs against Stripe's test mode.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reversi_core.http import Timeouts
from reversi_core.testing import (
    CertificationFixture,
    ConcurrentChange,
    Dependency,
    Example,
    ExampleContext,
    Failure,
    FakeServer,
    IdempotencyKeyIn,
    LiveScenario,
    Residue,
)

from ._fake import CANCELLABLE, MINIMUM_AMOUNTS, FakeStripe, StoredAnswer
from ._live import LIVE_SUMMARY, live_scenario
from .connector import StripeConnector

__all__ = [
    "CANCELLABLE",
    "CERTIFICATION_KEY",
    "CUSTOMER",
    "CUSTOMER_STUB_STAYS",
    "DEPENDENCIES",
    "EXAMPLES",
    "FAILURES",
    "INTENT_STAYS_CANCELED",
    "LIMIT",
    "LIVE",
    "MINIMUM_AMOUNTS",
    "OPEN_INTENT",
    "PAID_CHARGE",
    "PAID_INTENT",
    "PATIENCE",
    "REFUNDED_CHARGE",
    "REFUNDED_INTENT",
    "REPLAY_KEY",
    "FakeStripe",
    "StoredAnswer",
    "certification_fixture",
    "seed_example",
    "someone_changes",
    "stripe_backend",
]

CERTIFICATION_KEY = "sk_test_reversiCertification00000000000001"
"""The secret key the certification fixture gives the fake and the connector."""

CUSTOMER = "cus_SeededAda0000001"
"""A customer :func:`seed_example` puts in (ada@example.com)."""
PAID_INTENT = "pi_SeededPaid0000001"
"""A payment intent of 20.00 USD that succeeded; its charge is :data:`PAID_CHARGE`."""
PAID_CHARGE = "ch_SeededPaid0000001"
"""The charge of :data:`PAID_INTENT`, nothing of it refunded."""
OPEN_INTENT = "pi_SeededOpen0000001"
"""A payment intent of 15.00 USD waiting for a payment method (cancellable)."""
REFUNDED_INTENT = "pi_SeededRefunded001"
"""A payment intent of 10.00 USD that succeeded and was refunded in full since."""
REFUNDED_CHARGE = "ch_SeededRefunded001"
"""The charge of :data:`REFUNDED_INTENT`."""
LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""


def seed_example(fake: FakeStripe) -> None:
    """Put the example state in ``fake``: :data:`CUSTOMER`, :data:`PAID_INTENT` (with
    :data:`PAID_CHARGE`), :data:`OPEN_INTENT` and :data:`REFUNDED_INTENT` (with
    :data:`REFUNDED_CHARGE`, refunded in full)."""
    fake.add_customer(email="ada@example.com", name="Ada Lovelace", object_id=CUSTOMER)
    fake.add_payment_intent(
        2000, "usd", customer=CUSTOMER, succeeded=True, object_id=PAID_INTENT, charge_id=PAID_CHARGE
    )
    fake.add_payment_intent(1500, "usd", customer=CUSTOMER, object_id=OPEN_INTENT)
    fake.add_payment_intent(
        1000, "usd", succeeded=True, object_id=REFUNDED_INTENT, charge_id=REFUNDED_CHARGE
    )
    fake.refund_charge(REFUNDED_CHARGE)


@contextmanager
def stripe_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeStripe` (key :data:`CERTIFICATION_KEY`) served on a fresh port."""
    with FakeServer(FakeStripe(token=CERTIFICATION_KEY)) as server:
        yield server


def _fake(server: FakeServer) -> FakeStripe:
    app = server.app
    if not isinstance(app, FakeStripe):
        raise TypeError(f"the server does not serve a FakeStripe but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> StripeConnector:
    return StripeConnector(
        CERTIFICATION_KEY,
        base_url=_fake(server).base_url(server),
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


async def _delete_new_customer(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("stripe.create_customer", {"email": "gone-soon@example.com"})
    return {"customer": made["id"]}


async def _cancel_new_intent(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("stripe.create_payment_intent", {"amount": 700, "currency": "eur"})
    return {"payment_intent": made["id"], "cancellation_reason": "abandoned"}


async def _cancel_canceled_intent(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    await ctx.call("stripe.cancel_payment_intent", {"payment_intent": OPEN_INTENT})
    return {"payment_intent": OPEN_INTENT}


async def _on_new_customer(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    customer = ctx.results["stripe.create_customer"]["id"]
    return {"amount": 2500, "currency": "usd", "customer": customer}


async def _refund_new_intent(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    intent = ctx.results["stripe.create_payment_intent"]["id"]
    _fake(ctx.handle).succeed_payment_intent(intent)  # a person confirmed it outside the agent
    return {"payment_intent": intent, "amount": 1000}


ODD_TEXT = "a+b %2F c/d?e#f&g=h é ✓"
"""A value with every character a form encoding could get wrong."""

EXAMPLES: Mapping[str, list[Example]] = {  # the first example of each tool is its main one
    "stripe.retrieve_charge": [{"charge": PAID_CHARGE}, {"charge": REFUNDED_CHARGE}],
    "stripe.create_customer": [
        {
            "email": "grace@example.com",
            "name": "Grace Hopper",
            "metadata": {"source": "agent", "odd key": ODD_TEXT},
        },
        {"description": ODD_TEXT},
    ],
    "stripe.create_payment_intent": [
        {"amount": 1999, "currency": "usd", "customer": CUSTOMER, "metadata": {"order": "6735"}},
        {"amount": 500, "currency": "jpy", "description": ODD_TEXT},
    ],
    "stripe.create_refund": [
        {"payment_intent": PAID_INTENT, "amount": 500, "reason": "requested_by_customer"},
        {"charge": PAID_CHARGE, "metadata": {"ticket": "T-1"}},
    ],
    "stripe.delete_customer": [
        {"customer": CUSTOMER},
        _delete_new_customer,
        {"customer": "cus_NeverThere000001"},
    ],
    "stripe.cancel_payment_intent": [
        {"payment_intent": OPEN_INTENT},
        _cancel_new_intent,
        _cancel_canceled_intent,
    ],
}

FAILURES: Mapping[str, list[Failure]] = {
    "stripe.retrieve_charge": [
        Failure({"charge": "ch_Missing0000000001"}, code="resource_missing", status=404)
    ],
    "stripe.create_payment_intent": [
        Failure({"amount": 20, "currency": "usd"}, code="amount_too_small", status=400),
        Failure(
            {"amount": 2000, "currency": "usd", "customer": "cus_Missing000000001"},
            code="resource_missing",
            status=404,
        ),
    ],
    "stripe.create_refund": [
        Failure({"payment_intent": REFUNDED_INTENT}, code="charge_already_refunded", status=400),
        Failure({"payment_intent": PAID_INTENT, "amount": 2001}, code="amount_too_large", status=400),
        Failure({"payment_intent": OPEN_INTENT}, code="invalid_request_error", status=400),
        Failure({"charge": "ch_Missing0000000001"}, code="resource_missing", status=404),
    ],
    "stripe.cancel_payment_intent": [
        Failure({"payment_intent": PAID_INTENT}, code="payment_intent_succeeded", status=400),
        Failure({"payment_intent": "pi_Missing0000000001"}, code="resource_missing", status=404),
    ],
}
"""Calls Stripe turns down, each with the status and code the connector must answer with."""

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "stripe.create_customer",
        {"email": "payer@example.com"},
        "stripe.create_payment_intent",
        _on_new_customer,
    ),
    Dependency(
        "stripe.create_payment_intent",
        {"amount": 3000, "currency": "usd"},
        "stripe.create_refund",
        _refund_new_intent,
    ),
]


def _without_new_deleted_customers(fingerprint: Any) -> Any:
    fingerprint["deleted_customers"] = {
        cid: origin for cid, origin in fingerprint["deleted_customers"].items() if origin != "api"
    }
    return fingerprint


def _without_new_canceled_intents(fingerprint: Any) -> Any:
    fingerprint["payment_intents"] = {
        pid: intent
        for pid, intent in fingerprint["payment_intents"].items()
        if not (intent["origin"] == "api" and intent["status"] == "canceled")
    }
    return fingerprint


CUSTOMER_STUB_STAYS = Residue(
    reason="Stripe keeps a deleted customer's id: retrieving it answers {id, deleted: true}; its "
    "data and saved payment methods are gone",
    normalise=_without_new_deleted_customers,
)
"""create_customer's residue: the deleted stub of a customer the run created."""

INTENT_STAYS_CANCELED = Residue(
    reason="Stripe cannot delete a payment intent, so the undo cancels it: it stays listed, "
    "status canceled",
    normalise=_without_new_canceled_intents,
)
"""create_payment_intent's residue: payment intents the run created, now canceled."""

def someone_changes(server: FakeServer, tool: str, args: Any, result: Any) -> ConcurrentChange:
    """Change, through the fake, what ``tool``'s call made, as someone outside the run would.

    ``stripe.create_customer``: a support agent changes the customer's email.
    ``stripe.create_payment_intent``: the shop raises the payment intent's amount. The
    change's ``revert`` puts the object back as the call left it. Raises ``ValueError``
    for another tool.
    """
    fake = _fake(server)
    if tool == "stripe.create_customer":
        before = fake.update_customer(result["id"], email="changed-by-support@example.com")
        return ConcurrentChange(what="the customer's email", revert=lambda: fake.restore(before))
    if tool == "stripe.create_payment_intent":
        before = fake.update_payment_intent(result["id"], amount=int(result["amount"]) + 500)
        return ConcurrentChange(what="the payment intent's amount", revert=lambda: fake.restore(before))
    raise ValueError(f"no concurrent change is defined for {tool}")


REPLAY_KEY = "sk_test_reversiReplayCredential0000000001"
"""The key a replay of the live scenario's cassette builds the connector with (it must look
like a test-mode secret key; the recording's own key was scrubbed)."""

LIVE = LiveScenario(
    name="customer-and-payment-intent",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    replay_env={"STRIPE_SECRET_KEY": REPLAY_KEY},
)
"""stripe's live scenario (:mod:`reversi_connector_stripe._live`): ``nox -s live -- stripe``
runs it against Stripe's test mode; against the fake it needs no variable of its own."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The stripe connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of Stripe's API (idempotency keys included), faults included",
        command_line=lambda server: (
            {"STRIPE_SECRET_KEY": CERTIFICATION_KEY, "STRIPE_BASE_URL": _fake(server).base_url(server)},
            [],
        ),
        backend=stripe_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={
            "stripe.create_customer": CUSTOMER_STUB_STAYS,
            "stripe.create_payment_intent": INTENT_STAYS_CANCELED,
        },
        credential=CERTIFICATION_KEY,
        call_timeout=LIMIT,
        sends_idempotency_key=frozenset(
            {
                "stripe.create_customer",
                "stripe.create_payment_intent",
                "stripe.create_refund",
                "stripe.cancel_payment_intent",
            }
        ),
        idempotency_key_in=IdempotencyKeyIn(header="Idempotency-Key"),
        concurrent_change=someone_changes,
        live=LIVE,
    )
