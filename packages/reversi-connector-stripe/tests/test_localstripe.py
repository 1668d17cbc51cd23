"""The connector's behaviour tests run twice: against its fake and against localstripe.

localstripe (PyPI) is an independent fake Stripe server; it is served on 127.0.0.1 for
the whole session (``tests/_localstripe.py``). The tests here drive the connector the
same way on both backends and expect the same outcomes; where localstripe departs from
Stripe's documented behaviour (and from the fake), ``test_where_localstripe_differs``
pins each difference, and docs/connectors/stripe.md lists them. Every exchange with
either backend is also checked against Stripe's OpenAPI description: the fake's all
fit; localstripe's departures are exactly the documented ones.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest

from reversi_connector_stripe import API_VERSION, StripeConnector
from reversi_connector_stripe.testing import FakeStripe
from reversi_core import (
    CallContext,
    Run,
    SQLiteJournal,
    ToolError,
    compensator_for,
    executor_for,
    registry_for,
)
from reversi_core.testing import FakeServer

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import _openapi  # noqa: E402 - found only after the tests folder is put on sys.path above
from _localstripe import LocalStripe, RecordingTransport  # noqa: E402 - as above

pytestmark = pytest.mark.anyio

KEY = "sk_test_bothBackendsKey0123456789"
ODD = "a+b %2F c/d?e#f&g=h é ✓"

LOCALSTRIPE_MISSING = {
    "payment_intent": ["confirmation_method", "payment_method_types"],
    "charge": ["amount_captured", "billing_details", "disputed"],
}
"""Fields Stripe's description requires that localstripe's objects lack (it models an
older API version); docs/connectors/stripe.md lists them."""


class Backend(Protocol):
    name: str
    url: str

    def paid_intent(self, amount: int) -> str: ...
    def succeed(self, intent: str) -> None: ...
    def get(self, path: str) -> httpx.Response: ...
    def set_email(self, customer: str, email: str) -> None: ...


class OnFake:
    name = "fake"

    def __init__(self, fake: FakeStripe, server: FakeServer) -> None:
        self.fake, self.url = fake, server.url

    def paid_intent(self, amount: int) -> str:
        return str(self.fake.add_payment_intent(amount, "usd", succeeded=True)["id"])

    def succeed(self, intent: str) -> None:
        self.fake.succeed_payment_intent(intent)

    def get(self, path: str) -> httpx.Response:
        with httpx.Client(base_url=self.url, headers=_headers()) as client:
            return client.get(path)

    def set_email(self, customer: str, email: str) -> None:
        self.fake.update_customer(customer, email=email)


class OnLocalStripe:
    name = "localstripe"

    def __init__(self, server: LocalStripe) -> None:
        self.url = server.url

    def _card(self, client: httpx.Client) -> str:
        card = {"type": "card", "card[number]": "4242424242424242", "card[exp_month]": "12",
                "card[exp_year]": "2034", "card[cvc]": "123"}
        return str(client.post("/v1/payment_methods", data=card).json()["id"])

    def paid_intent(self, amount: int) -> str:
        with httpx.Client(base_url=self.url, headers=_headers()) as client:
            data = {"amount": str(amount), "currency": "usd", "payment_method": self._card(client),
                    "confirm": "true"}
            return str(client.post("/v1/payment_intents", data=data).json()["id"])

    def succeed(self, intent: str) -> None:
        with httpx.Client(base_url=self.url, headers=_headers()) as client:
            client.post(f"/v1/payment_intents/{intent}", data={"payment_method": self._card(client)})
            assert client.post(f"/v1/payment_intents/{intent}/confirm").status_code == 200

    def get(self, path: str) -> httpx.Response:
        with httpx.Client(base_url=self.url, headers=_headers()) as client:
            return client.get(path)

    def set_email(self, customer: str, email: str) -> None:
        """Stripe's update (https://docs.stripe.com/api/customers/update), sent to localstripe."""
        with httpx.Client(base_url=self.url, headers=_headers()) as client:
            assert client.post(f"/v1/customers/{customer}", data={"email": email}).status_code == 200


def _headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {KEY}", "Stripe-Version": API_VERSION}


@pytest.fixture(scope="session")
def localstripe() -> Iterator[LocalStripe]:
    server = LocalStripe().start()
    yield server
    server.close()


@pytest.fixture(params=["fake", "localstripe"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "fake":
        fake = FakeStripe(token=KEY)
        with FakeServer(fake) as server:
            yield OnFake(fake, server)
    else:
        server = request.getfixturevalue("localstripe")
        server.reset()
        yield OnLocalStripe(server)


@pytest.fixture
def wire() -> RecordingTransport:
    return RecordingTransport()


@pytest.fixture
async def stripe(backend: Backend, wire: RecordingTransport) -> AsyncIterator[StripeConnector]:
    connector = StripeConnector(KEY, base_url=backend.url, transport=wire)
    yield connector
    await connector.aclose()
    problems = [
        p for e in wire.exchanges
        for p in _openapi.check(e.method, e.path, e.query, e.headers, e.body, e.status, e.answer)
    ]
    if backend.name == "fake":
        assert problems == []
    else:  # only the documented departures: answers with payment intents and charges
        assert all(
            ": answer 200" in p and p.split(":")[0].split(" ")[1].startswith(("/v1/payment_intents", "/v1/charges"))
            for p in problems
        ), problems


async def test_form_encoded_values_arrive_exactly_as_given(backend: Backend, stripe: StripeConnector) -> None:
    await round_trip(backend, stripe)


async def round_trip(backend: Backend, stripe: StripeConnector) -> None:
    """A customer's odd text and metadata, stored and read back as given."""
    made = await stripe.call(
        "stripe.create_customer", {"name": ODD, "description": "two  spaces", "metadata": {"odd key": ODD}}
    )
    assert made["name"] == ODD
    assert made["metadata"] == {"odd key": ODD}
    stored = backend.get(f"/v1/customers/{made['id']}").json()
    assert stored["name"] == ODD
    assert stored["description"] == "two  spaces"
    assert stored["metadata"] == {"odd key": ODD}
    intent = await stripe.call(
        "stripe.create_payment_intent", {"amount": 1999, "currency": "usd", "metadata": {"n": "1"}}
    )
    assert intent["amount"] == 1999
    assert intent["metadata"] == {"n": "1"}


async def test_a_payment_intent_is_canceled_once_and_a_second_cancel_succeeds(stripe: StripeConnector) -> None:
    customer = await stripe.call("stripe.create_customer", {"email": "p@example.com"})
    intent = await stripe.call(
        "stripe.create_payment_intent", {"amount": 2500, "currency": "usd", "customer": customer["id"]}
    )
    assert intent["status"] == "requires_payment_method"
    assert intent["customer"] == customer["id"]
    first = await stripe.call("stripe.cancel_payment_intent", {"payment_intent": intent["id"]})
    again = await stripe.call("stripe.cancel_payment_intent", {"payment_intent": intent["id"]})
    assert (first["status"], first["canceled"]) == ("canceled", True)
    assert (again["status"], again["canceled"]) == ("canceled", False)


async def test_a_deleted_customer_is_deleted_once(stripe: StripeConnector) -> None:
    customer = await stripe.call("stripe.create_customer", {"email": "d@example.com"})
    first = await stripe.call("stripe.delete_customer", {"customer": customer["id"]})
    again = await stripe.call("stripe.delete_customer", {"customer": customer["id"]})
    assert first["deleted"] is True
    assert again["deleted"] is False


async def test_a_refund_and_a_succeeded_intent_that_cannot_be_canceled(
    backend: Backend, stripe: StripeConnector
) -> None:
    intent = backend.paid_intent(3000)
    refund = await stripe.call("stripe.create_refund", {"payment_intent": intent, "amount": 500})
    assert (refund["amount"], refund["payment_intent"], refund["status"]) == (500, intent, "succeeded")
    charge = await stripe.call("stripe.retrieve_charge", {"charge": refund["charge"]})
    assert (charge["amount"], charge["amount_refunded"], charge["refunded"]) == (3000, 500, False)
    with pytest.raises(ToolError) as raised:
        await stripe.call("stripe.cancel_payment_intent", {"payment_intent": intent})
    assert raised.value.code == "payment_intent_succeeded"
    assert raised.value.status == 400
    assert "cannot be canceled" in str(raised.value)


async def test_a_rollback_cancels_the_intent_before_it_deletes_its_customer(
    backend: Backend, stripe: StripeConnector, wire: RecordingTransport, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([stripe]), executor=executor_for([stripe]))
        _, customer = await run.call("stripe.create_customer", {"email": "r@example.com"})
        step, intent = await run.call(
            "stripe.create_payment_intent", {"amount": 4000, "currency": "usd", "customer": customer["id"]}
        )
        assert journal.get_step(run.id, step).requires == [1]
        assert [s.compensation["resources"] for s in run.steps() if s.compensation] == [
            [f"stripe:customers/{customer['id']}"],
            [f"stripe:payment_intents/{intent['id']}"],
        ]
        sent = len(wire.exchanges)
        report = await run.rollback(compensate=compensator_for([stripe]))
    assert report.complete
    assert report.waves == [[step], [1]]  # two objects, but the customer waits for what requires it
    undo = [f"{e.method} {e.path}" for e in wire.exchanges[sent:]]
    assert undo == [  # each undo reads first: nobody changed the object since the call
        f"GET /v1/payment_intents/{intent['id']}",
        f"POST /v1/payment_intents/{intent['id']}/cancel",
        f"GET /v1/customers/{customer['id']}",
        f"DELETE /v1/customers/{customer['id']}",
    ]
    assert backend.get(f"/v1/payment_intents/{intent['id']}").json()["status"] == "canceled"


async def test_a_customer_someone_edited_since_is_kept_until_the_edit_is_undone(
    backend: Backend, stripe: StripeConnector, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([stripe]), executor=executor_for([stripe]))
        step, customer = await run.call("stripe.create_customer", {"email": "first@example.com"})
        backend.set_email(customer["id"], "second@example.com")  # a support agent's edit
        first = await run.rollback(compensate=compensator_for([stripe]))
        assert not first.complete
        (outstanding,) = first.outstanding
        assert (outstanding.step, outstanding.state) == (step, "compensation_failed")
        assert "the customer's email is now 'second@example.com'" in outstanding.reason
        assert backend.get(f"/v1/customers/{customer['id']}").json()["email"] == "second@example.com"
        backend.set_email(customer["id"], "first@example.com")
        assert (await run.rollback(compensate=compensator_for([stripe]))).complete
    stub = backend.get(f"/v1/customers/{customer['id']}")
    assert stub.status_code == 404 or stub.json().get("deleted") is True


async def test_a_succeeded_intent_fails_its_rollback_step_saying_why(
    backend: Backend, stripe: StripeConnector, tmp_path: Path
) -> None:
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([stripe]), executor=executor_for([stripe]))
        _, intent = await run.call("stripe.create_payment_intent", {"amount": 1200, "currency": "usd"})
        backend.succeed(intent["id"])  # a person confirmed it outside the agent
        report = await run.rollback(compensate=compensator_for([stripe]))
    assert not report.complete
    (outstanding,) = report.outstanding
    assert outstanding.state == "compensation_failed"
    assert "a succeeded payment intent cannot be canceled" in outstanding.reason


# -- where localstripe and Stripe (and the fake) part --------------------------------------


async def test_where_localstripe_differs(backend: Backend, stripe: StripeConnector) -> None:
    """Each difference docs/connectors/stripe.md lists, asserted both ways."""
    stripe_like = backend.name == "fake"
    key = CallContext(idempotency_key="both-backends-1")
    one = await stripe.call("stripe.create_customer", {"email": "k@example.com"}, key)
    two = await stripe.call("stripe.create_customer", {"email": "k@example.com"}, key)
    assert (one["id"] == two["id"]) is stripe_like  # localstripe ignores Idempotency-Key

    intent = backend.paid_intent(1000)
    over = {"payment_intent": intent, "amount": 5000}
    if stripe_like:
        with pytest.raises(ToolError) as raised:
            await stripe.call("stripe.create_refund", over)
        assert raised.value.code == "amount_too_large"
    else:
        assert (await stripe.call("stripe.create_refund", over))["amount"] == 5000  # over-refunded

    small = {"amount": 10, "currency": "usd"}
    if stripe_like:
        with pytest.raises(ToolError, match="amount_too_small"):
            await stripe.call("stripe.create_payment_intent", small)
    else:
        assert (await stripe.call("stripe.create_payment_intent", small))["amount"] == 10

    with pytest.raises(ToolError) as missing:
        await stripe.call("stripe.retrieve_charge", {"charge": "ch_Missing0000000001"})
    # the same code either way: localstripe's body names none, and the 404 stands for it
    assert (missing.value.status, missing.value.code) == (404, "resource_missing")
    body = backend.get("/v1/charges/ch_Missing0000000001").json()["error"]
    assert body.get("code") == ("resource_missing" if stripe_like else None)

    unset = await stripe.call("stripe.create_customer", {"email": "u@example.com", "metadata": {"a": "", "b": "1"}})
    # Stripe unsets a key posted empty (https://docs.stripe.com/metadata); localstripe keeps it
    assert unset["metadata"] == ({"b": "1"} if stripe_like else {"a": "", "b": "1"})

    await stripe.call("stripe.delete_customer", {"customer": one["id"]})
    stub = backend.get(f"/v1/customers/{one['id']}")
    assert (stub.status_code, stub.json().get("deleted")) == ((200, True) if stripe_like else (404, None))

    charge = backend.get(f"/v1/payment_intents/{intent}").json()
    shapes: dict[str, Any] = {"payment_intent": charge}
    latest = charge.get("latest_charge")
    charge_id = latest["id"] if isinstance(latest, dict) else latest
    shapes["charge"] = backend.get(f"/v1/charges/{charge_id}").json()
    schemas = _openapi.spec()["components"]["schemas"]
    for name, obj in shapes.items():
        lacks = sorted(set(schemas[name]["required"]) - set(obj))
        assert lacks == ([] if stripe_like else LOCALSTRIPE_MISSING[name]), name


class PlusAsSpaceFake(FakeStripe):
    """A fake that drifted: it keeps a customer's metadata with every ``+`` read as a space."""

    def _metadata(self, params: Any) -> dict[str, str]:
        return {k: v.replace("+", " ") for k, v in super()._metadata(params).items()}


async def test_the_shared_expectations_catch_a_drifted_fake() -> None:
    """What localstripe passes, a fake that mangles metadata fails (so the oracle has teeth)."""
    fake = PlusAsSpaceFake(token=KEY)
    with FakeServer(fake) as server:
        connector = StripeConnector(KEY, base_url=server.url)
        try:
            with pytest.raises(AssertionError):
                await round_trip(OnFake(fake, server), connector)
        finally:
            await connector.aclose()
