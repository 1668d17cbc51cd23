"""The second oracles beside the fake: Stripe's OpenAPI description and stripe-python.

1. Every request the connector sends to the fake, and every answer the fake gives, in
   the certification fixture's examples and failures and in the cases only Stripe's
   idempotency model and its refusals produce, is validated against Stripe's OpenAPI
   description for API version 2023-08-16 (``tests/_openapi.py``, openapi-core).
2. stripe-python (the ``stripe`` package), pointed at the fake, must parse its answers
   into its own types, and its errors into its own exception classes.

Each is shown to catch a fake changed on purpose to drift from Stripe, and (for the
description) a connector that sends what Stripe would refuse.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import stripe as stripe_sdk

from reversi_connector_stripe import API_VERSION, StripeConnector
from reversi_connector_stripe.testing import (
    CUSTOMER,
    EXAMPLES,
    FAILURES,
    OPEN_INTENT,
    PAID_CHARGE,
    PAID_INTENT,
    FakeStripe,
    seed_example,
)
from reversi_core import CallContext, EffectUncertainError, ToolError
from reversi_core.manifest import evaluate_argument_map
from reversi_core.testing import ExampleCalls, FakeRequest, FakeResponse, FakeServer, vendor_route

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import _openapi  # noqa: E402 - found only after the tests folder is put on sys.path above

from .conftest import KEY, READ_ONLY_KEY  # noqa: E402

pytestmark = pytest.mark.anyio

MANIFESTS = {m.name: m for m in StripeConnector.manifests()}


async def drive_everything(fake: FakeStripe, server: FakeServer) -> None:
    """Every example and failure of the fixture, then what only Stripe's rules produce."""
    connector = StripeConnector(KEY, base_url=fake.base_url(server))
    calls = ExampleCalls(server, connector)
    for tool, examples in EXAMPLES.items():
        for example in examples:
            await connector.call(tool, await calls.prepare(example))
    for tool, failures in FAILURES.items():
        for failure in failures:
            with pytest.raises(ToolError):
                await connector.call(tool, await calls.prepare(failure.args))
    undo = CallContext(compensation=True, idempotency_key="oracle-undo-1")
    for tool, args in (("stripe.create_customer", {"email": "u@example.com"}),
                       ("stripe.create_payment_intent", {"amount": 800, "currency": "usd"})):
        compensation = MANIFESTS[tool].compensation
        assert compensation is not None  # the undo as a rollback calls it: it reads first
        made = evaluate_argument_map(compensation, args, await connector.call(tool, args))
        await connector.call(compensation.tool, made, undo)
    key = CallContext(idempotency_key="oracle-key-1")
    await connector.call("stripe.create_customer", {"email": "a@example.com"}, key)
    await connector.call("stripe.create_customer", {"email": "a@example.com"}, key)  # replayed
    with pytest.raises(ToolError, match="idempotency_error"):
        await connector.call("stripe.create_customer", {"email": "b@example.com"}, key)
    with pytest.raises(ToolError, match="idempotency_error"):
        await connector.call("stripe.create_payment_intent", {"amount": 900, "currency": "usd"}, key)
    await connector.aclose()
    for bad_key, status in (("sk_test_notTheKey000000000001", 401), (READ_ONLY_KEY, 403)):
        other = StripeConnector(bad_key, base_url=fake.base_url(server))
        with pytest.raises(ToolError, match=f"HTTP {status}"):
            await other.call("stripe.create_customer", {"name": "x"})
        await other.aclose()
    fake.exhaust_rate_limit()
    limited = StripeConnector(KEY, base_url=fake.base_url(server))
    with pytest.raises(ToolError) as raised:
        await limited.call("stripe.retrieve_charge", {"charge": PAID_CHARGE})
    assert raised.value.code == "rate_limited"
    await limited.aclose()


async def test_every_request_and_answer_fits_stripes_openapi_description(
    fake: FakeStripe, server: FakeServer
) -> None:
    await drive_everything(fake, server)
    checked, problems = _openapi.server_problems(server)
    assert problems == []
    operations = {(e.request.method, _openapi._operation(e.request.method, e.request.path)[0])  # type: ignore[index]
                  for e in server.exchanges}
    assert operations >= {
        ("GET", "/v1/charges/{charge}"),
        ("POST", "/v1/customers"),
        ("GET", "/v1/customers/{customer}"),
        ("DELETE", "/v1/customers/{customer}"),
        ("POST", "/v1/payment_intents"),
        ("GET", "/v1/payment_intents/{intent}"),
        ("POST", "/v1/payment_intents/{intent}/cancel"),
        ("POST", "/v1/refunds"),
    }
    statuses = {e.response.status for e in server.exchanges if e.response is not None}
    assert {200, 400, 401, 403, 404, 429} <= statuses
    assert checked >= 35


def test_the_fakes_other_answers_fit_too(fake: FakeStripe, server: FakeServer) -> None:
    """What the connector never asks for but a user's agent may: a deleted customer, a refund."""
    import httpx

    auth = {"Authorization": f"Bearer {KEY}", "Stripe-Version": API_VERSION}
    with httpx.Client(base_url=server.url, headers=auth) as client:
        client.delete(f"/v1/customers/{CUSTOMER}")
        client.get(f"/v1/customers/{CUSTOMER}")  # {id, object, deleted: true}
        made = client.post("/v1/refunds", data={"payment_intent": PAID_INTENT}).json()
        client.get(f"/v1/refunds/{made['id']}")
        client.get("/v1/refunds/re_Missing000000001")
    checked, problems = _openapi.server_problems(server)
    assert checked == 5
    assert problems == []


# -- the description catches drift -------------------------------------------------------


class DriftedFake(FakeStripe):
    """A fake whose customer says it is a ``client`` and whose errors lose their envelope."""

    @vendor_route("POST", "/v1/customers", docs="https://docs.stripe.com/api/customers/create", body="form")
    def create_customer(self, request: FakeRequest) -> FakeResponse:
        answer = super().create_customer(request)
        body = copy.deepcopy(answer.json)
        body["object"] = "client"
        return dataclasses.replace(answer, json=body)

    def error(self, status: int, message: str, *, code: str | None = None, **extra: Any) -> FakeResponse:
        return FakeResponse(status, json={"message": message, "code": code})


@pytest.fixture
def drifted() -> Iterator[tuple[DriftedFake, FakeServer]]:
    fake = DriftedFake(token=KEY)
    seed_example(fake)
    with FakeServer(fake) as server:
        yield fake, server


async def test_the_description_catches_a_drifted_fake(drifted: tuple[DriftedFake, FakeServer]) -> None:
    fake, server = drifted
    connector = StripeConnector(KEY, base_url=fake.base_url(server))
    try:
        await connector.call("stripe.create_customer", {"email": "d@example.com"})
        with pytest.raises(ToolError):
            await connector.call("stripe.retrieve_charge", {"charge": "ch_Missing0000000001"})
    finally:
        await connector.aclose()
    _, problems = _openapi.server_problems(server)
    assert any(p.startswith("POST /v1/customers: answer 200") and "client" in p for p in problems), problems
    assert any(p.startswith("GET /v1/charges/ch_Missing0000000001: answer 404") for p in problems), problems


class SloppyConnector(StripeConnector):
    """Sends the amount as a decimal and a parameter Stripe does not know."""

    async def sloppy(self) -> None:
        ctx = CallContext(idempotency_key="sloppy-1")
        for body in ({"amount": "19.99", "currency": "usd"}, {"amount": "1999", "currency": "usd", "amonut": "1"}):
            with pytest.raises((ToolError, EffectUncertainError)):
                await self.request(ctx, "POST", "/v1/payment_intents", data=body)
            ctx = CallContext(idempotency_key="sloppy-2")


async def test_the_description_catches_a_request_stripe_would_refuse() -> None:
    fake = FakeStripe(token=KEY)  # its own server: conftest's checks every exchange of its own
    seed_example(fake)
    with FakeServer(fake) as server:
        connector = SloppyConnector(KEY, base_url=fake.base_url(server))
        await connector.sloppy()
        await connector.aclose()
    _, problems = _openapi.server_problems(server)
    assert len([p for p in problems if p.startswith("POST /v1/payment_intents: request")]) == 2, problems


# -- stripe-python parses the fake's answers --------------------------------------------


def sdk_client(fake: FakeStripe, server: FakeServer, key: str = KEY) -> stripe_sdk.StripeClient:
    return stripe_sdk.StripeClient(
        key,
        base_addresses={"api": fake.base_url(server)},
        stripe_version=API_VERSION,
        max_network_retries=0,
    )


def drive_the_sdk(client: stripe_sdk.StripeClient) -> dict[str, Any]:
    """Every object and error kind the fake answers, through stripe-python's own types."""
    v1 = client.v1
    customer = v1.customers.create(params={"email": "sdk@example.com", "metadata": {"k": "v"}})
    intent = v1.payment_intents.create(params={"amount": 2000, "currency": "usd", "customer": customer.id})
    canceled = v1.payment_intents.cancel(intent.id)
    charge = v1.charges.retrieve(PAID_CHARGE)
    refund = v1.refunds.create(params={"payment_intent": PAID_INTENT, "amount": 100})
    gone = v1.customers.delete(customer.id)
    stub = v1.customers.retrieve(customer.id)
    errors: dict[str, Any] = {}
    for name, call in (
        ("missing", lambda: v1.charges.retrieve("ch_Missing0000000001")),
        ("succeeded", lambda: v1.payment_intents.cancel(PAID_INTENT)),
        ("too_small", lambda: v1.payment_intents.create(params={"amount": 10, "currency": "usd"})),
        (
            "reused_key",
            lambda: v1.customers.create(params={"name": "other"}, options={"idempotency_key": "sdk-1"}),
        ),
    ):
        if name == "reused_key":
            v1.customers.create(params={"name": "first"}, options={"idempotency_key": "sdk-1"})
        try:
            call()
        except stripe_sdk.StripeError as exc:
            errors[name] = exc
    return {
        "customer": customer, "intent": intent, "canceled": canceled, "charge": charge,
        "refund": refund, "gone": gone, "stub": stub, "errors": errors,
        "open": v1.payment_intents.retrieve(OPEN_INTENT),
    }


async def test_stripe_python_parses_the_fakes_answers(fake: FakeStripe, server: FakeServer) -> None:
    got = await anyio.to_thread.run_sync(drive_the_sdk, sdk_client(fake, server))
    assert isinstance(got["customer"], stripe_sdk.Customer)
    assert got["customer"].metadata["k"] == "v"
    assert isinstance(got["intent"], stripe_sdk.PaymentIntent)
    assert got["intent"].status == "requires_payment_method"
    assert got["canceled"].status == "canceled"
    assert isinstance(got["charge"], stripe_sdk.Charge)
    assert got["charge"].amount == 2000
    assert isinstance(got["refund"], stripe_sdk.Refund)
    assert got["refund"].amount == 100
    assert got["gone"].deleted is True
    assert got["stub"].deleted is True
    assert got["open"].amount == 1500
    errors = got["errors"]
    assert isinstance(errors["missing"], stripe_sdk.InvalidRequestError)
    assert errors["missing"].code == "resource_missing"
    assert errors["missing"].http_status == 404
    assert errors["succeeded"].code == "payment_intent_unexpected_state"
    assert errors["too_small"].code == "amount_too_small"
    assert errors["too_small"].param == "amount"
    assert isinstance(errors["reused_key"], stripe_sdk.IdempotencyError)


def test_stripe_python_catches_a_drifted_fake(drifted: tuple[DriftedFake, FakeServer]) -> None:
    fake, server = drifted
    v1 = sdk_client(fake, server).v1
    customer = v1.customers.create(params={"email": "d@example.com"})
    assert not isinstance(customer, stripe_sdk.Customer)  # an unknown object: not a customer
    with pytest.raises(stripe_sdk.APIError) as raised:  # no error envelope: not an invalid request
        v1.charges.retrieve("ch_Missing0000000001")
    assert not isinstance(raised.value, stripe_sdk.InvalidRequestError)
