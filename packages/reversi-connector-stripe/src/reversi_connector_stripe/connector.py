"""The ``stripe`` connector: customers, payment intents, refunds and charges through Stripe's API.

Six tools. ``stripe.retrieve_charge`` reads; ``stripe.create_customer`` is undone by
``stripe.delete_customer`` and ``stripe.create_payment_intent`` by
``stripe.cancel_payment_intent`` (both idempotent); ``stripe.create_refund`` moves money
back and cannot be recalled, so it is irreversible and a person approves every call.

Every request goes to ``https://api.stripe.com`` (or ``STRIPE_BASE_URL``) with
``Authorization: Bearer <STRIPE_SECRET_KEY>`` and ``Stripe-Version: 2023-08-16``, the
API version the tools were written for (https://docs.stripe.com/api/versioning).
Bodies are form-encoded, nested values as ``metadata[key]=value``
(:func:`reversi_connector_stripe._form.flatten`); amounts are integers in the
currency's smallest unit.

Idempotency as Stripe defines it (https://docs.stripe.com/api/idempotent_requests):
every ``POST`` carries an ``Idempotency-Key``, the step's own key for a forward call
made by a run and the compensation key for an undo (they differ, so a forward call and
its undo never share one; a direct call outside a run gets a fresh random key). Stripe
answers a repeat of the same request with the same key with the first answer, which is
what makes a retried rollback safe and lets ``reversi resolve RUN STEP --replay``
settle an uncertain write (:data:`REPLAY`). Stripe says a key on ``GET`` or ``DELETE``
has no effect and should not be sent, so the connector sends none there.

A compensation never overwrites a change someone made after the call. Stripe takes no
precondition on a write (no ETag, no version), so each undo reads the object first and
compares it with what the forward call left (:func:`reversi_connector_stripe._args.preconditions`):
``stripe.delete_customer`` deletes a customer only while its email, name, description,
phone and metadata are as ``create_customer`` left them, and
``stripe.cancel_payment_intent`` cancels an intent only while its status, amount,
currency, customer, description and metadata are as ``create_payment_intent`` left them
(otherwise ``ToolError`` code ``changed_since`` naming what changed, unless
``CallContext.overwrite``). Between the read and the write there is a window of one
request in which a change still goes unseen.

A write whose answer was lost or did not come in time is
:class:`~reversi_core.errors.EffectUncertainError`; every refusal is a
:class:`~reversi_core.errors.ToolError` naming the HTTP status and Stripe's code
(:data:`reversi_connector_stripe._errors.ERRORS`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import (
    BaseUrl,
    Bearer,
    HttpConnector,
    HttpResponse,
    RequestTool,
    Setting,
    Timeouts,
    url_path,
)
from reversi_core.manifest import Compensation, Effect, Match, Replay, Requirement

from ._args import (
    CancelPaymentIntentArgs,
    CreateCustomerArgs,
    CreatePaymentIntentArgs,
    CreateRefundArgs,
    DeleteCustomerArgs,
    RetrieveChargeArgs,
    preconditions,
)
from ._errors import ERRORS, IDEMPOTENCY_ERROR
from ._form import flatten
from ._results import (
    CancelPaymentIntentResult,
    ChargeResult,
    CustomerResult,
    DeleteCustomerResult,
    PaymentIntentResult,
    RefundResult,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["API_VERSION", "DEFAULT_BASE_URL", "KEY_LIFETIME", "REPLAY", "StripeConnector"]

DEFAULT_BASE_URL = "https://api.stripe.com"
"""Stripe's API root."""

API_VERSION = "2023-08-16"
"""The API version sent in ``Stripe-Version`` with every request (that of the OpenAPI
description the tests validate against)."""

KEY_LIFETIME = 24 * 3600.0
"""Seconds Stripe keeps an idempotency key before it may prune it and treat a repeat as new."""

REPLAY = Replay(window=KEY_LIFETIME - 3600.0)
"""The tools whose every write is one ``POST`` with the call's key can be replayed for 23
hours: Stripe keeps a key at least 24, and the hour left over covers a clock that is off
and the time the first request took to reach Stripe."""

_KEY_HELP = "a Stripe secret key (sk_...) or restricted key (rk_...)"

_CANCELLABLE = (
    "requires_payment_method",
    "requires_capture",
    "requires_confirmation",
    "requires_action",
    "processing",
)
"""The statuses from which Stripe cancels a payment intent
(https://docs.stripe.com/api/payment_intents/cancel)."""


def _secret_key(value: str) -> str:
    if not value.startswith(("sk_", "rk_")):
        raise ValueError(
            "is not a Stripe secret or restricted key (sk_... or rk_...); a publishable key "
            "(pk_...) cannot make these calls"
        )
    return value


def _on_customer_created_here() -> Requirement:
    """This call works on a customer that an earlier create_customer of the run made."""
    return Requirement(
        tool="stripe.create_customer", match=[Match(this="args.customer", earlier="result.id")]
    )


def _on_payment_intent_created_here() -> Requirement:
    """This call refunds a payment intent that an earlier create_payment_intent of the run made."""
    return Requirement(
        tool="stripe.create_payment_intent",
        match=[Match(this="args.payment_intent", earlier="result.id")],
    )


# -- shaping answers -----------------------------------------------------------------


def _id_of(value: Any) -> str | None:
    """An id, or an expanded object's id (Stripe's expandable fields)."""
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) else None


def _shaper(
    what: str, fields: tuple[str, ...], ids: tuple[str, ...] = (), *, wrote: bool
) -> Callable[[StripeConnector, Any, HttpResponse], dict[str, Any]]:
    """The result of a tool answering one Stripe object: ``id``, ``fields`` as Stripe gave
    them, ``ids`` (expandable fields) as ids, ``metadata`` as text. After a write, an
    answer without the object's id is uncertain (the undo needs it)."""

    def shape(stripe: StripeConnector, args: Any, resp: HttpResponse) -> dict[str, Any]:
        obj = stripe.expect_object(resp, what, wrote=wrote)
        result: dict[str, Any] = {"id": stripe.expect_field(obj, "id", resp, wrote=wrote)}
        for name in fields:
            result[name] = _id_of(obj.get(name)) if name in ids else obj.get(name)
        value = obj.get("metadata")
        result["metadata"] = {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
        return result

    return shape


_charge = _shaper(
    "charge",
    ("amount", "amount_captured", "amount_refunded", "currency", "status", "paid", "captured",
     "refunded", "customer", "payment_intent", "description", "created", "livemode"),
    ids=("customer", "payment_intent"),
    wrote=False,
)
_customer = _shaper(
    "customer", ("email", "name", "description", "phone", "created", "livemode"), wrote=True
)
_payment_intent = _shaper(
    "payment intent",
    ("amount", "currency", "status", "customer", "description", "created", "livemode"),
    ids=("customer",),
    wrote=True,
)
_refund = _shaper(
    "refund",
    ("amount", "currency", "status", "charge", "payment_intent", "reason", "created"),
    ids=("charge", "payment_intent"),
    wrote=True,
)


def _preconditions_from_result(*fields: str) -> dict[str, str]:
    """The undo's ``if_<field>`` arguments, each mapped from the forward call's result."""
    return {f"if_{name}": f"result.{name}" for name in fields}


_CUSTOMER_KEPT = ("email", "name", "description", "phone", "metadata")
"""The customer's fields create_customer sets, which its undo checks are unchanged."""
_INTENT_KEPT = ("status", "amount", "currency", "customer", "description", "metadata")
"""The payment intent's fields, as create_payment_intent left them, its undo checks."""


def _shown(value: Any) -> str:
    text = "empty" if value is None else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _differences(what: str, obj: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """How ``obj`` differs from ``expected``: one phrase per field, naming it as ``what``'s."""
    found: list[str] = []
    for name, wanted in expected.items():
        value = _id_of(obj.get(name)) if name == "customer" else obj.get(name)
        if name == "metadata":
            now = value if isinstance(value, dict) else {}
            before = wanted or {}
            if now != before:
                keys = sorted(k for k in {*now, *before} if now.get(k) != before.get(k))
                found.append(f"{what}'s metadata (keys {', '.join(keys)})")
        elif value != wanted:
            found.append(f"{what}'s {name} is now {_shown(value)} (the call left {_shown(wanted)})")
    return found


def _changed_since(tool: str, obj_id: str, changes: list[str]) -> ToolError:
    """The refusal of an undo whose object someone changed after the call."""
    return ToolError(
        f"{tool}: {obj_id} was changed since the call: {'; '.join(changes)}. It is kept as it is: "
        "undo that change and roll back again, or let the rollback overwrite it (reversi "
        "rollback RUN --overwrite STEP; docs/engine.md)",
        code="changed_since",
    )


def _form_body(args: BaseModel) -> dict[str, str]:
    """The tool's arguments as Stripe's form fields (``None`` left out, hashes nested)."""
    return flatten(args.model_dump(exclude_none=True))


# -- the connector ---------------------------------------------------------------------


class StripeConnector(HttpConnector):
    """Stripe customers, payment intents, refunds and charges (see the module docstring).

    ``api_key`` is a Stripe secret key (``sk_live_...``, ``sk_test_...``) or, better, a
    restricted key (``rk_...``) holding only the permissions of docs/connectors/stripe.md,
    sent as ``Authorization: Bearer <api_key>``. ``base_url`` replaces
    ``https://api.stripe.com`` (a fake, in tests). ``timeouts`` are the per-request
    limits in seconds (default ``Timeouts(connect=5, read=30, total=60)``), lowered to
    the caller's limit on each call; ``transport`` replaces the network transport (tests).

    Raises :class:`~reversi_core.errors.ConfigurationError` for a key that is empty,
    holds whitespace or is not a secret or restricted key, and for a malformed
    ``base_url``; no message repeats the key.
    """

    name = "stripe"
    settings = (
        Setting("STRIPE_SECRET_KEY", "api_key", _KEY_HELP, secret=True, check=_secret_key),
        Setting(
            "STRIPE_BASE_URL",
            "base_url",
            "another root for Stripe's API (a fake, in tests)",
            required=False,
        ),
    )
    base = BaseUrl(DEFAULT_BASE_URL)
    auth = Bearer("api_key")
    headers: ClassVar[dict[str, str]] = {"Stripe-Version": API_VERSION}
    errors = ERRORS
    idempotency_header = "Idempotency-Key"
    idempotency_methods = frozenset({"POST"})

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        timeouts: Timeouts | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(api_key=api_key, base_url=base_url, timeouts=timeouts, transport=transport)

    def replay_settles(self, error: ToolError) -> bool:
        """As :meth:`HttpConnector.replay_settles`, and never Stripe's ``idempotency_error``.

        That answer means the key was first used with other parameters or on another
        endpoint (https://docs.stripe.com/api/idempotent_requests): the first request did
        reach Stripe, and may have taken effect.
        """
        return error.code != IDEMPOTENCY_ERROR and super().replay_settles(error)

    # -- reading ---------------------------------------------------------------------

    retrieve_charge = RequestTool(
        "GET",
        "/v1/charges/{charge}",
        effect=Effect.READ_ONLY,
        permission="stripe:charges:read",
        input=RetrieveChargeArgs,
        output=ChargeResult,
        summary="Read a charge: its amount, how much was captured and refunded, its status.",
        docs="https://docs.stripe.com/api/charges/retrieve",
        details="404 ``resource_missing`` for an unknown charge.",
        keep=_charge,
    )

    # -- changing --------------------------------------------------------------------

    create_customer = RequestTool(
        "POST",
        "/v1/customers",
        effect=Effect.REVERSIBLE,
        permission="stripe:customers:write",
        input=CreateCustomerArgs,
        output=CustomerResult,
        compensation=Compensation(
            tool="stripe.delete_customer",
            argument_map={"customer": "result.id", **_preconditions_from_result(*_CUSTOMER_KEPT)},
            resources=["stripe:customers/{result.id}"],
        ),
        replay=REPLAY,
        summary="Create a customer; undone by deleting that customer, and only that one.",
        docs="https://docs.stripe.com/api/customers/create",
        details="The undo deletes the customer this call created (its id from the result), "
        "never another, and only while its email, name, description, phone and metadata are "
        "as this call left them. 400 ``parameter_invalid_string_blank`` and the like for a bad field; "
        "an answer without the customer's id is uncertain.",
        body=_form_body,
        form=True,
        keep=_customer,
    )

    create_payment_intent = RequestTool(
        "POST",
        "/v1/payment_intents",
        effect=Effect.REVERSIBLE,
        permission="stripe:payments:write",
        input=CreatePaymentIntentArgs,
        output=PaymentIntentResult,
        compensation=Compensation(
            tool="stripe.cancel_payment_intent",
            argument_map={"payment_intent": "result.id", **_preconditions_from_result(*_INTENT_KEPT)},
            resources=["stripe:payment_intents/{result.id}"],
        ),
        requires=[_on_customer_created_here()],
        replay=REPLAY,
        summary="Create an unconfirmed payment intent; undone by canceling it.",
        docs="https://docs.stripe.com/api/payment_intents/create",
        details="The intent is never confirmed here (confirm it outside the agent): once it "
        "has succeeded it cannot be canceled, and a rollback then fails that step saying so; "
        "the undo also refuses an intent whose status, amount, currency, customer, "
        "description or metadata someone changed since. "
        "The result leaves out the client secret. 400 ``amount_too_small`` below the "
        "currency's minimum (50 cents for usd), 404 ``resource_missing`` for an unknown "
        "customer.",
        body=_form_body,
        form=True,
        keep=_payment_intent,
    )

    create_refund = RequestTool(
        "POST",
        "/v1/refunds",
        effect=Effect.IRREVERSIBLE,
        permission="stripe:refund:write",
        input=CreateRefundArgs,
        output=RefundResult,
        requires=[_on_payment_intent_created_here()],
        replay=REPLAY,
        summary="Refund a payment intent or a charge, wholly or in part; irreversible, a person "
        "approves each call.",
        docs="https://docs.stripe.com/api/refunds/create",
        details="Money that went back cannot be recalled, so a rollback lists the refund as "
        "unrecoverable. 400 ``charge_already_refunded`` when nothing is left to refund, 400 "
        "``amount_too_large`` beyond what is left, 404 ``resource_missing`` for an unknown "
        "payment intent or charge.",
        body=_form_body,
        form=True,
        keep=_refund,
    )

    # -- compensations -----------------------------------------------------------------

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="stripe:customers:write",
        input=DeleteCustomerArgs,
        output=DeleteCustomerResult,
    )
    async def delete_customer(self, args: DeleteCustomerArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a customer for good, only while it holds what the call left; one gone counts as success.

        ``DELETE /v1/customers/{customer}`` (https://docs.stripe.com/api/customers/delete).
        Stripe cannot restore a deleted customer; its saved payment methods go with it and
        its subscriptions are canceled. With ``if_<field>`` arguments (a rollback passes
        what ``create_customer`` left) the customer is read first
        (``GET /v1/customers/{customer}``, https://docs.stripe.com/api/customers/retrieve)
        and kept when one of those fields changed since: ``ToolError`` code
        ``changed_since`` naming each (``ctx.overwrite`` skips the comparison). A customer
        gone already (404 ``resource_missing``, or retrieved as ``deleted: true``) is
        success with ``deleted`` false. Returns ``{"customer", "deleted"}``. Carries no
        idempotency key: Stripe says a key has no effect on a ``DELETE``, which is
        idempotent by itself. Raises ``ToolError`` naming the status (401, 403,
        ``rate_limited``, 5xx) and ``EffectUncertainError`` when the deletion's answer was
        lost or did not come in time.
        """
        path = url_path("/v1/customers/{customer}", customer=args.customer)
        gone = {"customer": args.customer, "deleted": False}
        expected = preconditions(args)
        if expected and not ctx.overwrite:
            resp = await self.request(ctx, "GET", path, ok_statuses=frozenset({404}))
            if resp.status == 404:
                return gone
            customer = self.expect_object(resp, "customer", wrote=False)
            if customer.get("deleted") is True:
                return gone
            changes = _differences("the customer", customer, expected)
            if changes:
                raise _changed_since("stripe.delete_customer", f"customer {args.customer}", changes)
        resp = await self.request(ctx, "DELETE", path, ok_statuses=frozenset({404}))
        return gone if resp.status == 404 else {"customer": args.customer, "deleted": True}

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="stripe:payments:write",
        input=CancelPaymentIntentArgs,
        output=CancelPaymentIntentResult,
        replay=REPLAY,
    )
    async def cancel_payment_intent(
        self, args: CancelPaymentIntentArgs, ctx: CallContext
    ) -> dict[str, Any]:
        """Cancel a payment intent; one canceled already counts as success, a succeeded one fails.

        ``POST /v1/payment_intents/{intent}/cancel``
        (https://docs.stripe.com/api/payment_intents/cancel), with the call's idempotency
        key. With ``if_<field>`` arguments (a rollback passes what
        ``create_payment_intent`` left) the intent is read first
        (``GET /v1/payment_intents/{intent}``) and kept when its status, amount,
        currency, customer, description or metadata changed since (someone confirmed,
        authorized or edited it): ``ToolError`` code ``changed_since`` naming each
        (``ctx.overwrite`` skips the comparison). Stripe cancels an
        intent that requires a payment method, confirmation, an action or capture, or is
        processing; it answers any other with 400
        ``payment_intent_unexpected_state``; after any 400 the intent is read
        (``GET /v1/payment_intents/{intent}``,
        https://docs.stripe.com/api/payment_intents/retrieve): canceled already is
        success (``canceled`` false). A succeeded intent cannot be canceled: the money was
        taken, and only a refund gives it back; that is a ``ToolError`` with code
        ``payment_intent_succeeded`` saying so, and a rollback reports the step
        ``compensation_failed`` with that reason. Returns ``{"payment_intent", "status",
        "cancellation_reason", "canceled"}``. Raises ``ToolError`` naming the status (404
        ``resource_missing``, 401, 403, ``rate_limited``, 5xx) and
        ``EffectUncertainError`` when the answer was lost or did not come in time.
        """
        expected = preconditions(args)
        if expected and not ctx.overwrite:
            intent = await self._read_intent(ctx, args.payment_intent)
            settled = _canceled_already(args, intent)
            if settled is not None:
                return settled
            changes = _differences("the payment intent", intent, expected)
            if changes:
                raise _changed_since(
                    "stripe.cancel_payment_intent", f"payment intent {args.payment_intent}", changes
                )
        path = url_path("/v1/payment_intents/{intent}/cancel", intent=args.payment_intent)
        body = flatten({"cancellation_reason": args.cancellation_reason})
        try:
            resp = await self.request(ctx, "POST", path, data=body)
        except ToolError as exc:
            if exc.status != 400:
                raise
            return await self._not_cancellable(ctx, args, exc)
        intent = self.expect_object(resp, "payment intent", wrote=True)
        return {
            "payment_intent": self.expect_field(intent, "id", resp, wrote=True),
            "status": intent.get("status") or "canceled",
            "cancellation_reason": intent.get("cancellation_reason"),
            "canceled": True,
        }

    async def _not_cancellable(
        self, ctx: CallContext, args: CancelPaymentIntentArgs, refusal: ToolError
    ) -> dict[str, Any]:
        """After Stripe refused to cancel (400): success if it is canceled already, else why not.

        Stripe's refusal for a wrong state is ``payment_intent_unexpected_state``; the
        intent's status is read whatever the 400 said, and an intent still in a
        cancellable state gets Stripe's own refusal back (a bad ``cancellation_reason``).
        """
        intent = await self._read_intent(ctx, args.payment_intent)
        settled = _canceled_already(args, intent)
        if settled is not None:
            return settled
        status = intent.get("status")
        if status in _CANCELLABLE:
            raise refusal
        raise ToolError(
            f"stripe: payment intent {args.payment_intent} is {status}, which Stripe does not "
            f"cancel (it cancels only one that is {', '.join(_CANCELLABLE)}): {refusal}",
            status=400,
            code="payment_intent_unexpected_state",
        )

    async def _read_intent(self, ctx: CallContext, intent_id: str) -> dict[str, Any]:
        """``GET /v1/payment_intents/{intent}`` (https://docs.stripe.com/api/payment_intents/retrieve)."""
        resp = await self.request(
            ctx, "GET", url_path("/v1/payment_intents/{intent}", intent=intent_id)
        )
        return self.expect_object(resp, "payment intent", wrote=False)


def _canceled_already(args: CancelPaymentIntentArgs, intent: Mapping[str, Any]) -> dict[str, Any] | None:
    """The result for an intent canceled already, ``None`` for one still open; a succeeded one raises.

    A succeeded intent cannot be canceled (``ToolError`` code ``payment_intent_succeeded``).
    """
    status = intent.get("status")
    if status == "succeeded":
        raise ToolError(
            f"stripe: payment intent {args.payment_intent} has succeeded, and a succeeded "
            "payment intent cannot be canceled (HTTP 400): the money was taken. Refund it "
            "with stripe.create_refund if it must go back (a person approves each refund)",
            status=400,
            code="payment_intent_succeeded",
        )
    if status != "canceled":
        return None
    return {
        "payment_intent": args.payment_intent,
        "status": "canceled",
        "cancellation_reason": intent.get("cancellation_reason"),
        "canceled": False,
    }
