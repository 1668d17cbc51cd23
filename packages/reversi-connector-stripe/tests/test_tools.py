"""Stripe's behaviours the connector and its fake implement, each tested on the wire."""

from __future__ import annotations

import dataclasses

import pytest

from reversi_connector_stripe import StripeConnector
from reversi_connector_stripe._form import flatten
from reversi_connector_stripe._wire import decode_form
from reversi_connector_stripe.connector import KEY_LIFETIME
from reversi_connector_stripe.testing import (
    CUSTOMER,
    OPEN_INTENT,
    PAID_INTENT,
    FakeStripe,
    certification_fixture,
)
from reversi_core import (
    CallContext,
    ConfigurationError,
    EffectUncertainError,
    InvalidArgumentsError,
    ToolError,
)
from reversi_core.testing import FakeServer, Fault

from .conftest import KEY, READ_ONLY_KEY, Clock

pytestmark = pytest.mark.anyio


# -- form encoding -------------------------------------------------------------------------


def test_nested_values_are_flattened_the_way_stripe_reads_them() -> None:
    body = flatten({"amount": 2000, "metadata": {"order": "6735", "a b": "x+y"}, "expand": ["customer"],
                    "confirm": False, "description": None})
    assert body == {"amount": "2000", "metadata[order]": "6735", "metadata[a b]": "x+y",
                    "expand[0]": "customer", "confirm": "false"}
    with pytest.raises(ValueError, match="cannot be spelled"):
        flatten({"metadata": {"a]b": "x"}})
    with pytest.raises(TypeError, match="float"):
        flatten({"amount": 19.99})


def test_the_fake_reads_form_bodies_back_independently() -> None:
    assert decode_form(b"metadata%5Bk%5D=v&amount=1&expand%5B%5D=a&expand%5B%5D=b&x%5B1%5D=q&x%5B0%5D=p") == {
        "metadata": {"k": "v"}, "amount": "1", "expand": ["a", "b"], "x": ["p", "q"]}
    with pytest.raises(ValueError, match="Invalid parameter name"):
        decode_form(b"a%5Bb=1")


# -- arguments -------------------------------------------------------------------------------


async def test_amounts_are_integers_in_the_smallest_unit(stripe: StripeConnector) -> None:
    for bad in (19.99, 20.0, "2000", True, 0, 100_000_000):
        with pytest.raises(InvalidArgumentsError, match="amount"):
            await stripe.call("stripe.create_payment_intent", {"amount": bad, "currency": "usd"})
    with pytest.raises(InvalidArgumentsError, match="three-decimal"):
        await stripe.call("stripe.create_payment_intent", {"amount": 1005, "currency": "kwd"})
    made = await stripe.call("stripe.create_payment_intent", {"amount": 1010, "currency": "kwd"})
    assert made["amount"] == 1010
    with pytest.raises(InvalidArgumentsError, match="currency"):
        await stripe.call("stripe.create_payment_intent", {"amount": 1000, "currency": "USD"})


async def test_ids_in_a_path_cannot_leave_their_segment(stripe: StripeConnector, server: FakeServer) -> None:
    for bad in ("cus_a/b", "cus_x?y=1", "cus_..", "cus_a#b", "cus_ é", "pi_123"):
        with pytest.raises(InvalidArgumentsError):
            await stripe.call("stripe.delete_customer", {"customer": bad})
    assert server.requests == []


async def test_metadata_follows_stripes_limits(stripe: StripeConnector) -> None:
    for metadata in ({f"k{i}": "v" for i in range(51)}, {"k" * 41: "v"}, {"k": "v" * 501}, {"a[b]": "v"}):
        with pytest.raises(InvalidArgumentsError, match="metadata"):
            await stripe.call("stripe.create_customer", {"metadata": metadata})


async def test_an_empty_metadata_value_is_not_stored_as_stripe_unsets_it(
    stripe: StripeConnector, fake: FakeStripe
) -> None:
    made = await stripe.call("stripe.create_customer", {"email": "e@example.com", "metadata": {"a": "", "b": "1"}})
    assert made["metadata"] == {"b": "1"}
    assert fake.customers[made["id"]]["metadata"] == {"b": "1"}
    intent = await stripe.call(
        "stripe.create_payment_intent", {"amount": 500, "currency": "usd", "metadata": {"gone": ""}}
    )
    assert fake.payment_intents[intent["id"]]["metadata"] == {}
    # the undo compares with what Stripe left, so the unset key is no change
    done = await stripe.call(
        "stripe.delete_customer",
        {"customer": made["id"], "if_email": "e@example.com", "if_metadata": made["metadata"]},
        CallContext(compensation=True),
    )
    assert done["deleted"] is True


async def test_a_refund_names_exactly_one_target(stripe: StripeConnector) -> None:
    with pytest.raises(InvalidArgumentsError, match="exactly one"):
        await stripe.call("stripe.create_refund", {})
    with pytest.raises(InvalidArgumentsError, match="exactly one"):
        await stripe.call("stripe.create_refund", {"payment_intent": PAID_INTENT, "charge": "ch_x1"})


def test_the_key_must_be_a_secret_or_restricted_key() -> None:
    with pytest.raises(ConfigurationError, match="publishable key") as raised:
        StripeConnector("pk_test_publishable000000000000001")
    assert "pk_test_publishable" not in str(raised.value)
    assert StripeConnector.from_env({"STRIPE_SECRET_KEY": READ_ONLY_KEY}).base_url == "https://api.stripe.com"
    with pytest.raises(ConfigurationError, match="STRIPE_SECRET_KEY"):
        StripeConnector.from_env({})


# -- what goes on the wire ---------------------------------------------------------------------


async def test_every_post_carries_the_calls_key_and_nothing_else_does(
    stripe: StripeConnector, server: FakeServer
) -> None:
    def ctx(step: int) -> CallContext:
        return CallContext(run_id="run_1", step=step, idempotency_key=f"reversi-run_1-{step}")

    made = await stripe.call("stripe.create_customer", {"email": "w@example.com"}, ctx(4))
    await stripe.call("stripe.cancel_payment_intent", {"payment_intent": OPEN_INTENT}, ctx(5))
    await stripe.call("stripe.retrieve_charge", {"charge": "ch_SeededPaid0000001"}, ctx(6))
    await stripe.call("stripe.delete_customer", {"customer": made["id"]}, ctx(7))
    keys = [(r.method, r.headers.get("idempotency-key")) for r in server.requests]
    assert keys == [("POST", "reversi-run_1-4"), ("POST", "reversi-run_1-5"), ("GET", None), ("DELETE", None)]
    assert {r.headers["stripe-version"] for r in server.requests} == {"2023-08-16"}
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.requests)
    assert all(KEY not in r.target and KEY.encode() not in r.body for r in server.requests)
    assert server.requests[0].headers["content-type"] == "application/x-www-form-urlencoded"


async def test_results_leave_the_client_secret_out(stripe: StripeConnector, fake: FakeStripe) -> None:
    made = await stripe.call("stripe.create_payment_intent", {"amount": 900, "currency": "usd"})
    assert "client_secret" in fake.payment_intents[made["id"]]
    assert "client_secret" not in made
    assert "secret" not in str(made)


# -- Stripe's idempotency contract, in the fake ------------------------------------------------


async def test_the_same_key_and_parameters_get_the_stored_answer(
    stripe: StripeConnector, server: FakeServer, fake: FakeStripe
) -> None:
    ctx = CallContext(idempotency_key="k-1")
    first = await stripe.call("stripe.create_customer", {"email": "i@example.com"}, ctx)
    again = await stripe.call("stripe.create_customer", {"email": "i@example.com"}, ctx)
    assert first == again
    assert len(fake.customers) == 2
    assert server.exchanges[-1].response is not None
    assert server.exchanges[-1].response.headers is not None
    assert server.exchanges[-1].response.headers["Idempotent-Replayed"] == "true"


async def test_the_same_key_with_other_parameters_or_another_endpoint_is_refused(
    stripe: StripeConnector, fake: FakeStripe
) -> None:
    ctx = CallContext(idempotency_key="k-2")
    await stripe.call("stripe.create_customer", {"email": "i@example.com"}, ctx)
    for tool, args in (
        ("stripe.create_customer", {"email": "other@example.com"}),
        ("stripe.create_payment_intent", {"amount": 900, "currency": "usd"}),
    ):
        with pytest.raises(ToolError) as raised:
            await stripe.call(tool, args, ctx)
        assert (raised.value.status, raised.value.code) == (400, "idempotency_error")
    assert len(fake.customers) == 2
    assert len(fake.payment_intents) == 3


async def test_keys_expire_after_24_hours_on_the_tests_clock(
    stripe: StripeConnector, fake: FakeStripe, clock: Clock
) -> None:
    ctx = CallContext(idempotency_key="k-3")
    first = await stripe.call("stripe.create_customer", {"email": "e@example.com"}, ctx)
    clock.now += KEY_LIFETIME - 60
    assert (await stripe.call("stripe.create_customer", {"email": "e@example.com"}, ctx)) == first
    clock.now += 120
    later = await stripe.call("stripe.create_customer", {"email": "e@example.com"}, ctx)
    assert later["id"] != first["id"]
    assert len(fake.customers) == 3


async def test_a_refusal_by_validation_is_not_saved_and_one_after_it_is(
    stripe: StripeConnector, fake: FakeStripe, off_description: list[str]
) -> None:
    off_description.append("POST /v1/payment_intents")  # without its required amount
    ctx = CallContext(idempotency_key="k-4")
    fake.keys.clear()
    with pytest.raises(ToolError, match="parameter_missing"):
        await stripe.request(ctx, "POST", "/v1/payment_intents", data={"currency": "usd"})
    assert fake.keys == {}
    with pytest.raises(ToolError, match="amount_too_small"):
        await stripe.call("stripe.create_payment_intent", {"amount": 20, "currency": "usd"}, ctx)
    assert list(fake.keys) == ["k-4"]
    with pytest.raises(ToolError, match="amount_too_small"):  # the saved answer, again
        await stripe.call("stripe.create_payment_intent", {"amount": 20, "currency": "usd"}, ctx)
    with pytest.raises(ToolError, match="idempotency_error"):
        await stripe.call("stripe.create_payment_intent", {"amount": 2000, "currency": "usd"}, ctx)


async def test_a_key_longer_than_255_characters_is_refused(stripe: StripeConnector) -> None:
    with pytest.raises(ToolError, match="255"):
        await stripe.call("stripe.create_customer", {}, CallContext(idempotency_key="k" * 256))


# -- refusals ------------------------------------------------------------------------------------


async def test_a_lost_answer_on_a_write_is_uncertain_a_5xx_is_a_failure(
    stripe: StripeConnector, server: FakeServer
) -> None:
    server.faults.add(Fault.drop_after_read(apply=True), method="POST")
    with pytest.raises(EffectUncertainError):
        await stripe.call("stripe.create_customer", {"email": "l@example.com"})
    server.faults.add(Fault.status(503), method="POST")
    with pytest.raises(ToolError, match="HTTP 503"):
        await stripe.call("stripe.create_customer", {"email": "l@example.com"})


async def test_a_restricted_key_without_write_is_refused_with_403(fake: FakeStripe, server: FakeServer) -> None:
    restricted = StripeConnector(READ_ONLY_KEY, base_url=server.url)
    try:
        assert (await restricted.call("stripe.retrieve_charge", {"charge": "ch_SeededPaid0000001"}))["paid"]
        with pytest.raises(ToolError) as raised:
            await restricted.call("stripe.create_customer", {"email": "r@example.com"})
    finally:
        await restricted.aclose()
    assert raised.value.status == 403
    assert READ_ONLY_KEY not in str(raised.value)


async def test_a_rate_limit_has_its_own_code(stripe: StripeConnector, fake: FakeStripe) -> None:
    fake.exhaust_rate_limit()
    with pytest.raises(ToolError) as raised:
        await stripe.call("stripe.create_customer", {})
    assert raised.value.code == "rate_limited"
    assert raised.value.status == 429


async def test_deleting_the_seeded_customer_leaves_its_stub(stripe: StripeConnector, fake: FakeStripe) -> None:
    assert (await stripe.call("stripe.delete_customer", {"customer": CUSTOMER}))["deleted"] is True
    assert fake.deleted_customers[CUSTOMER] == {"id": CUSTOMER, "object": "customer", "deleted": True}


# -- declarations ----------------------------------------------------------------------------


def test_the_fixture_declares_the_keyed_tools() -> None:
    fixture = certification_fixture()
    posts = {m.name for m in StripeConnector.manifests() if m.replay is not None}
    assert fixture.sends_idempotency_key == posts
    assert "stripe.delete_customer" not in posts  # a DELETE carries no key: not replayable
    assert dataclasses.asdict(fixture.idempotency_key_in) == {"header": "Idempotency-Key", "field": None}  # type: ignore[arg-type]
