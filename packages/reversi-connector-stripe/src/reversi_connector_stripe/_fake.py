"""FakeStripe: the part of Stripe's API the connector uses, on the kit's vendor fake.

Objects are shaped as API version 2023-08-16 answers them (the version of the OpenAPI
description the tests validate every answer against). Each route cites the page of
Stripe's API reference it was written from.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import random
import string
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from reversi_core.testing import (
    BearerAuth,
    FakeRequest,
    FakeResponse,
    FakeServer,
    VendorFake,
    vendor_route,
)

from ._wire import StripeFakeError, decode_form, error_body
from .connector import API_VERSION, KEY_LIFETIME

__all__ = [
    "CANCELLABLE",
    "MINIMUM_AMOUNTS",
    "FakeStripe",
    "StoredAnswer",
]

CANCELLABLE = frozenset(
    {"requires_payment_method", "requires_capture", "requires_confirmation", "requires_action", "processing"}
)
"""Statuses from which Stripe cancels a payment intent (https://docs.stripe.com/api/payment_intents/cancel)."""

MINIMUM_AMOUNTS = {"usd": 50, "eur": 50, "gbp": 30, "jpy": 50, "cad": 50, "aud": 50, "chf": 50}
"""The smallest amount Stripe charges per currency, in its smallest unit
(https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts); 50 for others."""

MAXIMUM_AMOUNT = 99_999_999
"""The largest amount Stripe takes (eight digits)."""

_CUSTOMER_FIELDS = ("email", "name", "description", "phone")
_INTENT_FIELDS = ("amount", "currency", "customer", "description", "metadata",
                  "payment_method_types", "capture_method")
_REFUND_FIELDS = ("payment_intent", "charge", "amount", "reason", "metadata")
_ID_ALPHABET = string.ascii_letters + string.digits

R = TypeVar("R", bound=Callable[..., FakeResponse])


@dataclasses.dataclass(frozen=True)
class StoredAnswer:
    """What Stripe saved under an idempotency key: the request it answered, and the answer."""

    endpoint: str
    params: dict[str, Any]
    response: FakeResponse
    at: float


def _idempotent(handler: R) -> R:
    """Run a ``POST`` route under Stripe's idempotency rules (see :meth:`FakeStripe.idempotently`)."""

    @functools.wraps(handler)
    def run(self: FakeStripe, request: FakeRequest) -> FakeResponse:
        return self.idempotently(request, lambda params: handler(self, request, params))

    return run  # type: ignore[return-value]


def _plain(handler: Callable[..., FakeResponse]) -> Callable[[FakeStripe, FakeRequest], FakeResponse]:
    """Run a ``GET`` or ``DELETE`` route; Stripe ignores an idempotency key on those."""

    @functools.wraps(handler)
    def run(self: FakeStripe, request: FakeRequest) -> FakeResponse:
        try:
            return handler(self, request)
        except StripeFakeError as exc:
            return exc.response

    return run


class FakeStripe(VendorFake):
    """A fake of Stripe's customers, payment intents, charges and refunds.

    ``token`` is the secret key that may read and write; ``read_only_tokens`` are
    restricted keys that may only read (a write gets Stripe's 403 permission answer). A
    request without a key, or with another, gets 401
    (https://docs.stripe.com/api/authentication). A ``Stripe-Version`` other than
    2023-08-16 gets 400: the fake speaks that version only
    (https://docs.stripe.com/api/versioning).

    Idempotency as Stripe defines it (https://docs.stripe.com/api/idempotent_requests):
    a ``POST`` with an ``Idempotency-Key`` is saved with its parameters and answer once
    the endpoint began to run; a repeat with the same key and the same parameters on
    the same endpoint gets the saved answer again (with ``Idempotent-Replayed: true``)
    and changes nothing; the same key with other parameters, or on another endpoint, is
    refused with 400 ``idempotency_error``; a request refused by parameter validation is
    not saved. Keys are pruned once :data:`~reversi_connector_stripe.connector.KEY_LIFETIME`
    (24 hours) old, on the fake's clock: :attr:`clock` (UNIX seconds, ``time.time`` by
    default) plus whatever :meth:`advance_clock` added; after that a repeat is carried
    out as a new request. A key on ``GET`` or ``DELETE`` has no effect. Keys longer than
    255 characters are refused.

    State lives in :attr:`customers`, :attr:`payment_intents`, :attr:`charges`,
    :attr:`refunds` (Stripe's JSON objects) and :attr:`keys` (the saved answers); take
    :attr:`lock` to read or change them while requests may be in flight. Not modelled:
    payment methods and confirmation (a test makes a payment intent succeed with
    :meth:`succeed_payment_intent`, as a person confirming it outside the agent would),
    lists and pagination, expansion, webhooks, Connect, two requests with one key at
    the same moment (Stripe's 409; the fake answers one request at a time).
    """

    auth = BearerAuth()

    def __init__(
        self,
        *,
        token: str,
        read_only_tokens: Iterable[str] = (),
        rate_limit: int | None = None,
        clock: Callable[[], float] = time.time,
        seed: int = 0,
    ) -> None:
        super().__init__(token=token, read_only_tokens=read_only_tokens, rate_limit=rate_limit)
        self.clock = clock
        self.clock_offset = 0.0
        self.customers: dict[str, dict[str, Any]] = {}
        self.deleted_customers: dict[str, dict[str, Any]] = {}
        self.payment_intents: dict[str, dict[str, Any]] = {}
        self.charges: dict[str, dict[str, Any]] = {}
        self.refunds: dict[str, dict[str, Any]] = {}
        self.keys: dict[str, StoredAnswer] = {}
        self.origin: dict[str, str] = {}
        """``{object id: "api" | "seed"}``: made through a request, or by a test."""
        self._random = random.Random(seed)  # noqa: S311 - ids of a fake, repeatable by seed

    # -- the vendor's answers ----------------------------------------------------------

    def error(self, status: int, message: str, *, code: str | None = None, **extra: Any) -> FakeResponse:
        """Stripe's error body (https://docs.stripe.com/api/errors)."""
        kind = str(extra.pop("type", "invalid_request_error"))
        return FakeResponse(status, json=error_body(kind, message, code=code, **extra))

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.error(404, f"Unrecognized request URL ({request.method}: {request.path}).")

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        if not presented:
            return self.error(
                401,
                "You did not provide an API key. You need to provide your API key in the "
                "Authorization header, using Bearer auth (e.g. 'Authorization: Bearer "
                "YOUR_SECRET_KEY').",
            )
        return self.error(401, f"Invalid API Key provided: {_masked(request)}")

    def read_only(self, request: FakeRequest) -> FakeResponse:
        return self.error(
            403,
            f"The provided key '{_masked(request)}' does not have the required permissions for "
            "this endpoint on account 'acct_fake'. Having the 'rak_write' permission would allow "
            "this request to continue.",
        )

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        return self.error(
            429,
            "Request rate limit exceeded. Learn more about rate limits here "
            "https://stripe.com/docs/rate-limits.",
            code="rate_limit",
        )

    def malformed_body(self, request: FakeRequest, problem: str) -> FakeResponse:
        return self.error(400, "Invalid request body: it is not form-encoded.")

    def precheck(self, request: FakeRequest) -> FakeResponse | None:
        version = request.headers.get("stripe-version")
        if version is not None and version != API_VERSION:
            return self.error(
                400,
                f"Invalid Stripe API version: {version}. This fake answers as version "
                f"{API_VERSION} only.",
            )
        return None

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        answer = super().dispatch(request)
        return dataclasses.replace(
            answer,
            headers={**(answer.headers or {}), "Request-Id": f"req_{self._token(14)}"},
        )

    # -- the clock and the keys --------------------------------------------------------

    def now(self) -> float:
        """The fake's time, UNIX seconds: :attr:`clock` plus what :meth:`advance_clock` added."""
        return self.clock() + self.clock_offset

    def advance_clock(self, seconds: float) -> None:
        """Move the fake's clock forward by ``seconds`` (keys older than 24 hours are pruned)."""
        with self.lock:
            self.clock_offset += seconds

    def idempotently(
        self, request: FakeRequest, run: Callable[[dict[str, Any]], FakeResponse]
    ) -> FakeResponse:
        """Answer a ``POST`` under Stripe's idempotency rules (see the class docstring).

        ``run(params)`` carries the request out with its decoded parameters; a
        :class:`StripeFakeError` it raises is its answer, saved when its ``saved`` says so.
        """
        try:
            params = decode_form(request.body)
        except (UnicodeDecodeError, ValueError) as exc:
            return self.error(400, str(exc))
        key = request.headers.get("idempotency-key")
        if key is None:
            return self._carried_out(run, params)[0]
        if len(key) > 255 or not key.strip():
            return self.error(
                400,
                "Idempotency-Key must be between 1 and 255 characters long.",
                param="Idempotency-Key",
            )
        self._prune()
        endpoint = f"{request.method} {request.path}"
        stored = self.keys.get(key)
        if stored is not None:
            if stored.endpoint != endpoint:
                return self.error(
                    400,
                    "Keys for idempotent requests can only be used for the same endpoint they "
                    f"were first used for ('{stored.endpoint}' vs '{endpoint}'). Try using a key "
                    f"other than '{key}' if you meant to execute a different request.",
                    type="idempotency_error",
                )
            if stored.params != params:
                return self.error(
                    400,
                    "Keys for idempotent requests can only be used with the same parameters "
                    f"they were first used with. Try using a key other than '{key}' if you "
                    "meant to execute a different request.",
                    type="idempotency_error",
                )
            return _with_headers(
                stored.response, {"Idempotency-Key": key, "Idempotent-Replayed": "true"}
            )
        answer, saved = self._carried_out(run, params)
        if saved:
            self.keys[key] = StoredAnswer(endpoint, copy.deepcopy(params), answer, self.now())
        return _with_headers(answer, {"Idempotency-Key": key})

    def _carried_out(
        self, run: Callable[[dict[str, Any]], FakeResponse], params: dict[str, Any]
    ) -> tuple[FakeResponse, bool]:
        try:
            return run(params), True
        except StripeFakeError as exc:
            return exc.response, exc.saved

    def _prune(self) -> None:
        cutoff = self.now() - KEY_LIFETIME
        for key in [k for k, v in self.keys.items() if v.at <= cutoff]:
            del self.keys[key]

    # -- helpers for routes ------------------------------------------------------------

    def _token(self, length: int) -> str:
        return "".join(self._random.choice(_ID_ALPHABET) for _ in range(length))

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{self._token(24)}"

    def _invalid(self, message: str, *, code: str, param: str | None = None) -> StripeFakeError:
        """A parameter the endpoint refuses before it runs (not saved under the key)."""
        return StripeFakeError(self.error(400, message, code=code, param=param), saved=False)

    def _refused(self, status: int, message: str, *, code: str | None = None, **more: Any) -> StripeFakeError:
        """A refusal once the endpoint ran (saved under the key, as Stripe saves it)."""
        return StripeFakeError(self.error(status, message, code=code, **more), saved=True)

    def _missing(self, what: str, object_id: str, param: str) -> StripeFakeError:
        return self._refused(404, f"No such {what}: '{object_id}'", code="resource_missing", param=param)

    def _only(self, params: Mapping[str, Any], allowed: Iterable[str]) -> None:
        unknown = sorted(set(params) - set(allowed) - {"expand"})
        if unknown:
            raise self._invalid(
                f"Received unknown parameter: {unknown[0]}", code="parameter_unknown", param=unknown[0]
            )

    def _text(self, params: Mapping[str, Any], name: str, limit: int) -> str | None:
        value = params.get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self._invalid(f"Invalid string: {name}", code="parameter_invalid_string", param=name)
        if len(value) > limit:
            raise self._invalid(
                f"Invalid string: {value[:20]}...; must be at most {limit} characters",
                code="parameter_invalid_string",
                param=name,
            )
        return value

    def _integer(self, params: Mapping[str, Any], name: str, *, required: bool) -> int | None:
        value = params.get(name)
        if value is None:
            if required:
                raise self._invalid(f"Missing required param: {name}.", code="parameter_missing", param=name)
            return None
        if not isinstance(value, str) or not value.isdigit():
            raise self._invalid(f"Invalid integer: {value}", code="parameter_invalid_integer", param=name)
        return int(value)

    def _metadata(self, params: Mapping[str, Any]) -> dict[str, str]:
        """The metadata a create stores: Stripe's limits checked, keys given ``""`` left out.

        An empty value unsets its key (https://docs.stripe.com/metadata: "unset individual
        keys by posting an empty value"), so on a new object it is never stored.
        """
        value = params.get("metadata")
        if value is None or value == "":
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self._invalid("Invalid hash", code="parameter_invalid_string", param="metadata")
        if len(value) > 50:
            raise self._invalid(
                "Invalid metadata: metadata cannot have more than 50 keys", code="parameter_invalid_string",
                param="metadata",
            )
        for key, item in value.items():
            if len(key) > 40:
                raise self._invalid(
                    "Invalid metadata: keys must be at most 40 characters", code="parameter_invalid_string",
                    param=f"metadata[{key}]",
                )
            if len(item) > 500:
                raise self._invalid(
                    "Invalid metadata: values must be at most 500 characters",
                    code="parameter_invalid_string", param=f"metadata[{key}]",
                )
        return {key: item for key, item in value.items() if item != ""}

    def _customer_obj(self, customer_id: str) -> dict[str, Any]:
        found = self.customers.get(customer_id)
        if found is None:
            raise self._missing("customer", customer_id, "id")
        return found

    def _intent_obj(self, intent_id: str, param: str = "intent") -> dict[str, Any]:
        found = self.payment_intents.get(intent_id)
        if found is None:
            raise self._missing("payment_intent", intent_id, param)
        return found

    # -- customers ---------------------------------------------------------------------

    @vendor_route("POST", "/v1/customers", docs="https://docs.stripe.com/api/customers/create", body="form")
    @_idempotent
    def create_customer(self, request: FakeRequest, params: dict[str, Any]) -> FakeResponse:
        self._only(params, (*_CUSTOMER_FIELDS, "metadata"))
        limits = {"email": 512, "name": 256, "description": 5000, "phone": 20}
        fields = {name: self._text(params, name, limits[name]) for name in _CUSTOMER_FIELDS}
        metadata = self._metadata(params)
        customer = self._add_customer(fields, metadata, origin="api")
        return FakeResponse(200, json=copy.deepcopy(customer))

    @vendor_route("GET", "/v1/customers/{customer}", docs="https://docs.stripe.com/api/customers/retrieve")
    @_plain
    def retrieve_customer(self, request: FakeRequest) -> FakeResponse:
        customer_id = request.path_params["customer"]
        stub = self.deleted_customers.get(customer_id)
        if stub is not None:
            return FakeResponse(200, json=copy.deepcopy(stub))
        return FakeResponse(200, json=copy.deepcopy(self._customer_obj(customer_id)))

    @vendor_route("DELETE", "/v1/customers/{customer}", docs="https://docs.stripe.com/api/customers/delete")
    @_plain
    def delete_customer(self, request: FakeRequest) -> FakeResponse:
        customer_id = request.path_params["customer"]
        self._customer_obj(customer_id)  # 404 resource_missing, deleted or never there
        del self.customers[customer_id]
        stub = {"id": customer_id, "object": "customer", "deleted": True}
        self.deleted_customers[customer_id] = stub
        return FakeResponse(200, json=copy.deepcopy(stub))

    # -- payment intents ---------------------------------------------------------------

    @vendor_route(
        "POST", "/v1/payment_intents", docs="https://docs.stripe.com/api/payment_intents/create", body="form"
    )
    @_idempotent
    def create_payment_intent(self, request: FakeRequest, params: dict[str, Any]) -> FakeResponse:
        self._only(params, _INTENT_FIELDS)
        amount = self._integer(params, "amount", required=True)
        assert amount is not None
        currency = params.get("currency")
        if currency is None:
            raise self._invalid("Missing required param: currency.", code="parameter_missing", param="currency")
        if not isinstance(currency, str) or len(currency) != 3 or not currency.isalpha():
            raise self._invalid(f"Invalid currency: {currency}", code="parameter_invalid_string", param="currency")
        currency = currency.lower()
        minimum = MINIMUM_AMOUNTS.get(currency, 50)
        if amount < minimum:
            raise self._refused(
                400, f"Amount must be at least {minimum} {currency} in its smallest unit",
                code="amount_too_small", param="amount",
            )
        if amount > MAXIMUM_AMOUNT:
            raise self._refused(
                400, f"Amount must be no more than {MAXIMUM_AMOUNT} {currency} in its smallest unit",
                code="amount_too_large", param="amount",
            )
        description = self._text(params, "description", 1000)
        metadata = self._metadata(params)
        customer = params.get("customer")
        if customer is not None and customer not in self.customers:
            raise self._missing("customer", str(customer), "customer")
        capture = params.get("capture_method", "automatic")
        methods = params.get("payment_method_types") or ["card"]
        intent = self._add_intent(
            amount, currency, customer=customer, description=description, metadata=metadata,
            capture_method=capture, payment_method_types=list(methods), origin="api",
        )
        return FakeResponse(200, json=copy.deepcopy(intent))

    @vendor_route(
        "GET", "/v1/payment_intents/{intent}", docs="https://docs.stripe.com/api/payment_intents/retrieve"
    )
    @_plain
    def retrieve_payment_intent(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(200, json=copy.deepcopy(self._intent_obj(request.path_params["intent"])))

    @vendor_route(
        "POST",
        "/v1/payment_intents/{intent}/cancel",
        docs="https://docs.stripe.com/api/payment_intents/cancel",
        body="form",
    )
    @_idempotent
    def cancel_payment_intent(self, request: FakeRequest, params: dict[str, Any]) -> FakeResponse:
        self._only(params, ("cancellation_reason",))
        reason = params.get("cancellation_reason")
        if reason is not None and reason not in ("duplicate", "fraudulent", "requested_by_customer", "abandoned"):
            raise self._invalid(
                "Invalid cancellation_reason: must be one of duplicate, fraudulent, "
                "requested_by_customer, or abandoned",
                code="parameter_invalid_string", param="cancellation_reason",
            )
        intent = self._intent_obj(request.path_params["intent"])
        if intent["status"] not in CANCELLABLE:
            raise self._refused(
                400,
                f"You cannot cancel this PaymentIntent because it has a status of {intent['status']}. "
                "Only a PaymentIntent with one of the following statuses may be canceled: "
                "requires_payment_method, requires_capture, requires_confirmation, requires_action, "
                "processing.",
                code="payment_intent_unexpected_state",
                payment_intent=copy.deepcopy(intent),
            )
        intent.update(status="canceled", canceled_at=int(self.now()), cancellation_reason=reason)
        return FakeResponse(200, json=copy.deepcopy(intent))

    # -- charges and refunds -----------------------------------------------------------

    @vendor_route("GET", "/v1/charges/{charge}", docs="https://docs.stripe.com/api/charges/retrieve")
    @_plain
    def retrieve_charge(self, request: FakeRequest) -> FakeResponse:
        charge_id = request.path_params["charge"]
        found = self.charges.get(charge_id)
        if found is None:
            raise self._missing("charge", charge_id, "id")
        return FakeResponse(200, json=copy.deepcopy(found))

    @vendor_route("POST", "/v1/refunds", docs="https://docs.stripe.com/api/refunds/create", body="form")
    @_idempotent
    def create_refund(self, request: FakeRequest, params: dict[str, Any]) -> FakeResponse:
        self._only(params, _REFUND_FIELDS)
        amount = self._integer(params, "amount", required=False)
        reason = params.get("reason")
        if reason is not None and reason not in ("duplicate", "fraudulent", "requested_by_customer"):
            raise self._invalid(
                "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer",
                code="parameter_invalid_string", param="reason",
            )
        metadata = self._metadata(params)
        intent_id, charge_id = params.get("payment_intent"), params.get("charge")
        if intent_id is None and charge_id is None:
            raise self._invalid(
                "One of the following params should be provided for this request: payment_intent or charge.",
                code="parameter_missing",
            )
        if intent_id is not None:
            intent = self._intent_obj(str(intent_id), "payment_intent")
            charge_id = intent.get("latest_charge")
            if intent["status"] != "succeeded" or charge_id is None:
                raise self._refused(
                    400,
                    f"This PaymentIntent ({intent_id}) does not have a successful charge to refund.",
                )
        charge = self.charges.get(str(charge_id))
        if charge is None:
            raise self._missing("charge", str(charge_id), "charge")
        left = charge["amount"] - charge["amount_refunded"]
        if left <= 0:
            raise self._refused(
                400, f"Charge {charge['id']} has already been refunded.", code="charge_already_refunded"
            )
        amount = left if amount is None else amount
        if amount > left:
            raise self._refused(
                400,
                f"Refund amount ({amount}) is greater than unrefunded amount on charge ({left})",
                code="amount_too_large", param="amount",
            )
        if amount < 1:
            raise self._invalid("Invalid positive integer", code="parameter_invalid_integer", param="amount")
        refund = self._add_refund(charge, amount, reason, metadata, origin="api")
        return FakeResponse(200, json=copy.deepcopy(refund))

    @vendor_route("GET", "/v1/refunds/{refund}", docs="https://docs.stripe.com/api/refunds/retrieve")
    @_plain
    def retrieve_refund(self, request: FakeRequest) -> FakeResponse:
        refund_id = request.path_params["refund"]
        found = self.refunds.get(refund_id)
        if found is None:
            raise self._missing("refund", refund_id, "id")
        return FakeResponse(200, json=copy.deepcopy(found))

    # -- making objects (routes and tests alike) ---------------------------------------

    def _add_customer(
        self,
        fields: Mapping[str, str | None],
        metadata: Mapping[str, str],
        *,
        origin: str,
        object_id: str | None = None,
    ) -> dict[str, Any]:
        customer_id = object_id or self._new_id("cus")
        customer: dict[str, Any] = {
            "id": customer_id,
            "object": "customer",
            "address": None,
            "balance": 0,
            "created": int(self.now()),
            "currency": None,
            "default_source": None,
            "delinquent": False,
            "description": fields.get("description"),
            "discount": None,
            "email": fields.get("email"),
            "invoice_prefix": self._token(8).upper(),
            "invoice_settings": {
                "custom_fields": None,
                "default_payment_method": None,
                "footer": None,
                "rendering_options": None,
            },
            "livemode": False,
            "metadata": dict(metadata),
            "name": fields.get("name"),
            "next_invoice_sequence": 1,
            "phone": fields.get("phone"),
            "preferred_locales": [],
            "shipping": None,
            "tax_exempt": "none",
            "test_clock": None,
        }
        self.customers[customer_id] = customer
        self.origin[customer_id] = origin
        return customer

    def _add_intent(
        self,
        amount: int,
        currency: str,
        *,
        customer: str | None,
        description: str | None,
        metadata: Mapping[str, str],
        capture_method: str = "automatic",
        payment_method_types: list[str] | None = None,
        origin: str,
        object_id: str | None = None,
    ) -> dict[str, Any]:
        intent_id = object_id or self._new_id("pi")
        intent = {
            "id": intent_id,
            "object": "payment_intent",
            "amount": amount,
            "amount_capturable": 0,
            "amount_details": {"tip": {}},
            "amount_received": 0,
            "application": None,
            "application_fee_amount": None,
            "automatic_payment_methods": {"allow_redirects": "always", "enabled": True},
            "canceled_at": None,
            "cancellation_reason": None,
            "capture_method": capture_method,
            "client_secret": f"{intent_id}_secret_{self._token(25)}",
            "confirmation_method": "automatic",
            "created": int(self.now()),
            "currency": currency,
            "customer": customer,
            "description": description,
            "invoice": None,
            "last_payment_error": None,
            "latest_charge": None,
            "livemode": False,
            "metadata": dict(metadata),
            "next_action": None,
            "on_behalf_of": None,
            "payment_method": None,
            "payment_method_options": {},
            "payment_method_types": payment_method_types or ["card"],
            "processing": None,
            "receipt_email": None,
            "review": None,
            "setup_future_usage": None,
            "shipping": None,
            "statement_descriptor": None,
            "statement_descriptor_suffix": None,
            "status": "requires_payment_method",
            "transfer_data": None,
            "transfer_group": None,
        }
        self.payment_intents[intent_id] = intent
        self.origin[intent_id] = origin
        return intent

    def _add_charge(
        self,
        amount: int,
        currency: str,
        *,
        customer: str | None,
        payment_intent: str | None,
        object_id: str | None = None,
    ) -> dict[str, Any]:
        charge_id = object_id or self._new_id("ch")
        charge = {
            "id": charge_id,
            "object": "charge",
            "amount": amount,
            "amount_captured": amount,
            "amount_refunded": 0,
            "application": None,
            "application_fee": None,
            "application_fee_amount": None,
            "balance_transaction": f"txn_{self._token(24)}",
            "billing_details": {
                "address": {
                    "city": None, "country": None, "line1": None, "line2": None,
                    "postal_code": None, "state": None,
                },
                "email": None,
                "name": None,
                "phone": None,
            },
            "calculated_statement_descriptor": "REVERSI FAKE",
            "captured": True,
            "created": int(self.now()),
            "currency": currency,
            "customer": customer,
            "description": None,
            "disputed": False,
            "failure_balance_transaction": None,
            "failure_code": None,
            "failure_message": None,
            "fraud_details": {},
            "invoice": None,
            "livemode": False,
            "metadata": {},
            "on_behalf_of": None,
            "outcome": None,
            "paid": True,
            "payment_intent": payment_intent,
            "payment_method": f"pm_{self._token(24)}",
            "payment_method_details": None,
            "receipt_email": None,
            "receipt_number": None,
            "receipt_url": None,
            "refunded": False,
            "review": None,
            "shipping": None,
            "source_transfer": None,
            "statement_descriptor": None,
            "statement_descriptor_suffix": None,
            "status": "succeeded",
            "transfer_data": None,
            "transfer_group": None,
        }
        self.charges[charge_id] = charge
        self.origin[charge_id] = "seed"
        return charge

    def refund_charge(self, charge_id: str, amount: int | None = None) -> dict[str, Any]:
        """Refund a charge as someone outside the run would (the whole rest by default)."""
        with self.lock:
            charge = self.charges[charge_id]
            rest = charge["amount"] - charge["amount_refunded"]
            return self._add_refund(charge, rest if amount is None else amount, None, {}, origin="seed")

    def _add_refund(
        self,
        charge: dict[str, Any],
        amount: int,
        reason: str | None,
        metadata: Mapping[str, str],
        *,
        origin: str,
    ) -> dict[str, Any]:
        refund_id = self._new_id("re")
        refund = {
            "id": refund_id,
            "object": "refund",
            "amount": amount,
            "balance_transaction": f"txn_{self._token(24)}",
            "charge": charge["id"],
            "created": int(self.now()),
            "currency": charge["currency"],
            "metadata": dict(metadata),
            "payment_intent": charge["payment_intent"],
            "reason": reason,
            "receipt_number": None,
            "source_transfer_reversal": None,
            "status": "succeeded",
            "transfer_reversal": None,
        }
        charge["amount_refunded"] += amount
        charge["refunded"] = charge["amount_refunded"] >= charge["amount"]
        self.refunds[refund_id] = refund
        self.origin[refund_id] = origin
        return refund

    # -- for tests: seeding, and what a person does outside the agent ------------------

    def base_url(self, server: FakeServer) -> str:
        """The connector's ``base_url`` for this fake served by ``server``."""
        return server.url

    def add_customer(
        self,
        *,
        email: str | None = None,
        name: str | None = None,
        metadata: Mapping[str, str] | None = None,
        object_id: str | None = None,
    ) -> dict[str, Any]:
        """Put a customer in (as if made before the run) and return its Stripe object.

        ``object_id`` gives it that id (``cus_...``) instead of a new one.
        """
        with self.lock:
            return self._add_customer(
                {"email": email, "name": name}, metadata or {}, origin="seed", object_id=object_id
            )

    def add_payment_intent(
        self,
        amount: int,
        currency: str = "usd",
        *,
        customer: str | None = None,
        succeeded: bool = False,
        object_id: str | None = None,
        charge_id: str | None = None,
    ) -> dict[str, Any]:
        """Put a payment intent in (unconfirmed, or ``succeeded`` with its charge) and return it.

        ``object_id`` and ``charge_id`` give the intent and its charge those ids.
        """
        with self.lock:
            intent = self._add_intent(
                amount, currency, customer=customer, description=None, metadata={}, origin="seed",
                object_id=object_id,
            )
            if succeeded:
                self._succeed(intent, charge_id)
            return intent

    def succeed_payment_intent(self, intent_id: str) -> dict[str, Any]:
        """What a person confirming the intent outside the agent brings about: it succeeds.

        Makes its charge (captured, paid) and sets ``status`` ``succeeded``,
        ``amount_received`` and ``latest_charge``. Raises ``KeyError`` for an unknown id
        and ``ValueError`` for an intent that is not waiting for a payment.
        """
        with self.lock:
            intent = self.payment_intents[intent_id]
            if intent["status"] not in ("requires_payment_method", "requires_confirmation", "requires_action"):
                raise ValueError(f"{intent_id} is {intent['status']}: it cannot succeed now")
            self._succeed(intent)
            return intent

    def update_customer(self, customer_id: str, **fields: Any) -> dict[str, Any]:
        """Change a customer as someone outside the run would, as Stripe's update does it.

        ``fields`` are ``email``, ``name``, ``description``, ``phone`` (``None`` empties one)
        and ``metadata``, merged into the customer's as Stripe merges it (a key given ``""``
        is removed) (https://docs.stripe.com/api/customers/update). Returns the customer's
        object as it was before, to put it back with :meth:`restore`. Raises ``KeyError``
        for an unknown id or field.
        """
        with self.lock:
            return self._update(self.customers[customer_id], _CUSTOMER_FIELDS, fields)

    def update_payment_intent(self, intent_id: str, **fields: Any) -> dict[str, Any]:
        """Change a payment intent as someone outside the run would (Stripe's update).

        ``fields`` are ``amount``, ``currency``, ``customer``, ``description`` and
        ``metadata`` (merged, as :meth:`update_customer` does)
        (https://docs.stripe.com/api/payment_intents/update). Returns the intent's object as
        it was before, for :meth:`restore`. Raises ``KeyError`` for an unknown id or field.
        """
        with self.lock:
            return self._update(
                self.payment_intents[intent_id], ("amount", "currency", "customer", "description"), fields
            )

    def authorize_payment_intent(self, intent_id: str) -> dict[str, Any]:
        """What a person confirming an intent with manual capture brings about: its card is
        authorized and the intent waits for capture (``status`` ``requires_capture``,
        ``amount_capturable`` its amount) (https://docs.stripe.com/payments/place-a-hold-on-a-payment-method).

        Returns the intent's object as it was before, for :meth:`restore`. Raises ``KeyError``
        for an unknown id and ``ValueError`` for an intent that is not waiting for a payment.
        """
        with self.lock:
            intent = self.payment_intents[intent_id]
            if intent["status"] not in ("requires_payment_method", "requires_confirmation"):
                raise ValueError(f"{intent_id} is {intent['status']}: it cannot be authorized now")
            before = copy.deepcopy(intent)
            intent.update(
                status="requires_capture",
                capture_method="manual",
                amount_capturable=intent["amount"],
                payment_method=f"pm_{self._token(24)}",
            )
            return before

    def restore(self, before: Mapping[str, Any]) -> None:
        """Put back an object as :meth:`update_customer`, :meth:`update_payment_intent` or
        :meth:`authorize_payment_intent` returned it (the person undoing their change)."""
        with self.lock:
            table = self.customers if before["object"] == "customer" else self.payment_intents
            table[before["id"]] = copy.deepcopy(dict(before))

    @staticmethod
    def _update(obj: dict[str, Any], names: Iterable[str], fields: Mapping[str, Any]) -> dict[str, Any]:
        before = copy.deepcopy(obj)
        unknown = set(fields) - {*names, "metadata"}
        if unknown:
            raise KeyError(f"not a field this fake updates: {', '.join(sorted(unknown))}")
        for name, value in fields.items():
            if name == "metadata":
                merged = {**obj["metadata"], **value}
                obj["metadata"] = {k: v for k, v in merged.items() if v != ""}
            else:
                obj[name] = value
        return before

    def _succeed(self, intent: dict[str, Any], charge_id: str | None = None) -> None:
        charge = self._add_charge(
            intent["amount"],
            intent["currency"],
            customer=intent["customer"],
            payment_intent=intent["id"],
            object_id=charge_id,
        )
        intent.update(
            status="succeeded",
            amount_received=intent["amount"],
            latest_charge=charge["id"],
            payment_method=charge["payment_method"],
        )

    def snapshot(self) -> dict[str, Any]:
        """The state the tools touch, as plain JSON data (what certification fingerprints).

        ``{"customers": {id: {"email", "name", "description", "phone", "metadata",
        "origin"}}, "deleted_customers": {id: origin}, "payment_intents": {id: {"amount",
        "currency", "status", "customer", "description", "metadata", "cancellation_reason",
        "origin"}}, "charges": {id: {"amount", "amount_refunded", "refunded"}}, "refunds":
        {id: {"amount", "charge", "payment_intent", "reason", "metadata", "origin"}}}``. Ids
        are as Stripe gave them; timestamps and saved idempotent answers are left out.
        """
        with self.lock:
            return copy.deepcopy(
                {
                    "customers": {
                        cid: {**{k: c[k] for k in (*_CUSTOMER_FIELDS, "metadata")}, "origin": self.origin[cid]}
                        for cid, c in sorted(self.customers.items())
                    },
                    "deleted_customers": {cid: self.origin[cid] for cid in sorted(self.deleted_customers)},
                    "payment_intents": {
                        pid: {
                            **{
                                k: p[k]
                                for k in ("amount", "currency", "status", "customer", "description",
                                          "metadata", "cancellation_reason")
                            },
                            "origin": self.origin[pid],
                        }
                        for pid, p in sorted(self.payment_intents.items())
                    },
                    "charges": {
                        cid: {k: c[k] for k in ("amount", "amount_refunded", "refunded")}
                        for cid, c in sorted(self.charges.items())
                    },
                    "refunds": {
                        rid: {
                            **{k: r[k] for k in ("amount", "charge", "payment_intent", "reason", "metadata")},
                            "origin": self.origin[rid],
                        }
                        for rid, r in sorted(self.refunds.items())
                    },
                }
            )


def _with_headers(answer: FakeResponse, headers: Mapping[str, str]) -> FakeResponse:
    return dataclasses.replace(answer, headers={**(answer.headers or {}), **headers})


def _masked(request: FakeRequest) -> str:
    """The presented key as Stripe shows it in an error: its first 8 and last 4 characters."""
    _scheme, _, key = (request.headers.get("authorization") or "").partition(" ")
    key = key.strip()
    if len(key) <= 12:
        return "*" * len(key)
    return key[:8] + "*" * (len(key) - 12) + key[-4:]
