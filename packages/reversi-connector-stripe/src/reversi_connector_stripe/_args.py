"""The input model of every ``stripe`` tool (closed: an unknown argument is refused).

Identifiers that go into a URL path are Stripe object ids, checked by their prefix and
alphabet (``cus_``, ``pi_``, ``ch_``/``py_`` followed by letters and digits), so that no
value can add a path segment, a query or a fragment. Amounts are integers in the
currency's smallest unit (cents for ``usd``, yen for the zero-decimal ``jpy``), never
floats (https://docs.stripe.com/currencies#zero-decimal); three-decimal currencies
take amounts whose last digit is 0 (https://docs.stripe.com/currencies#three-decimal).
Metadata follows Stripe's limits: at most 50 keys, keys of up to 40 characters without
square brackets, values of up to 500 characters (https://docs.stripe.com/api/metadata).

The undo tools take ``if_<field>`` preconditions: what the forward call left in each
field of the object. Stripe offers no precondition of its own (no ETag, no version), so
the tool reads the object first and refuses when a field given no longer holds that
value (null: the field must still be empty); a field left out is not compared
(:func:`preconditions`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, model_validator

__all__ = [
    "THREE_DECIMAL_CURRENCIES",
    "CancelPaymentIntentArgs",
    "CreateCustomerArgs",
    "CreatePaymentIntentArgs",
    "CreateRefundArgs",
    "DeleteCustomerArgs",
    "RetrieveChargeArgs",
    "preconditions",
]

THREE_DECIMAL_CURRENCIES = frozenset({"bhd", "jod", "kwd", "omr", "tnd"})
"""Currencies whose amounts Stripe takes in thousandths, rounded to a multiple of 10."""

CUSTOMER_ID = r"^cus_[A-Za-z0-9]{1,250}$"
PAYMENT_INTENT_ID = r"^pi_[A-Za-z0-9]{1,250}$"
CHARGE_ID = r"^(ch|py)_[A-Za-z0-9]{1,250}$"

MetadataKey = Annotated[str, StringConstraints(min_length=1, max_length=40, pattern=r"^[^\[\]]+$")]
MetadataValue = Annotated[str, StringConstraints(max_length=500)]
Metadata = Annotated[
    dict[MetadataKey, MetadataValue],
    Field(
        max_length=50,
        description="Key-value pairs stored on the object (at most 50 keys; keys up to 40 "
        "characters without '[' or ']', values up to 500 characters). Sent as "
        "metadata[key]=value.",
    ),
]
Amount = Annotated[
    int,
    Field(
        strict=True,
        ge=1,
        le=99_999_999,
        description="An integer amount in the currency's smallest unit: 1999 is 19.99 USD, "
        "500 is 500 JPY (a zero-decimal currency). Never a decimal number.",
    ),
]
Currency = Annotated[
    str,
    Field(
        pattern=r"^[a-z]{3}$",
        description="A three-letter ISO 4217 currency code in lower case, such as 'usd'.",
    ),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrieveChargeArgs(_Args):
    """Input of ``stripe.retrieve_charge``."""

    charge: str = Field(pattern=CHARGE_ID, description="The charge's id (ch_... or py_...).")


class CreateCustomerArgs(_Args):
    """Input of ``stripe.create_customer``; every field is optional, as in Stripe."""

    email: str | None = Field(default=None, max_length=512, description="The customer's email address.")
    name: str | None = Field(default=None, max_length=256, description="The customer's full name or business name.")
    description: str | None = Field(
        default=None, max_length=5000, description="An arbitrary string shown in the Dashboard."
    )
    phone: str | None = Field(default=None, max_length=20, description="The customer's phone number.")
    metadata: Metadata | None = None


def _unless_changed(what: str) -> Any:
    return Field(
        default=None,
        description=f"Act only while {what} is still this value (null: still empty); left "
        "out, not compared. A rollback passes what the forward call left.",
    )


def preconditions(args: BaseModel) -> dict[str, Any]:
    """``{field: value}`` of the ``if_<field>`` arguments given, null ones included."""
    return {
        name.removeprefix("if_"): getattr(args, name)
        for name in sorted(args.model_fields_set)
        if name.startswith("if_")
    }


class DeleteCustomerArgs(_Args):
    """Input of ``stripe.delete_customer``: the customer, and what it must still hold."""

    customer: str = Field(pattern=CUSTOMER_ID, description="The customer's id (cus_...).")
    if_email: str | None = _unless_changed("the customer's email")
    if_name: str | None = _unless_changed("the customer's name")
    if_description: str | None = _unless_changed("the customer's description")
    if_phone: str | None = _unless_changed("the customer's phone")
    if_metadata: dict[str, str] | None = _unless_changed("the customer's metadata")


class CreatePaymentIntentArgs(_Args):
    """Input of ``stripe.create_payment_intent``: an unconfirmed payment intent."""

    amount: Amount
    currency: Currency
    customer: str | None = Field(
        default=None,
        pattern=CUSTOMER_ID,
        description="The id of the customer the payment belongs to (cus_...), if any.",
    )
    description: str | None = Field(
        default=None, max_length=1000, description="An arbitrary string attached to the payment."
    )
    metadata: Metadata | None = None

    @model_validator(mode="after")
    def _three_decimal(self) -> CreatePaymentIntentArgs:
        _check_three_decimal(self.amount, self.currency)
        return self


class CancelPaymentIntentArgs(_Args):
    """Input of ``stripe.cancel_payment_intent``."""

    payment_intent: str = Field(pattern=PAYMENT_INTENT_ID, description="The payment intent's id (pi_...).")
    cancellation_reason: Literal["duplicate", "fraudulent", "requested_by_customer", "abandoned"] | None = (
        Field(default=None, description="Why it is canceled, as Stripe records it.")
    )
    if_status: str | None = _unless_changed("the payment intent's status")
    if_amount: StrictInt | None = _unless_changed("the payment intent's amount")
    if_currency: str | None = _unless_changed("the payment intent's currency")
    if_customer: str | None = _unless_changed("the payment intent's customer")
    if_description: str | None = _unless_changed("the payment intent's description")
    if_metadata: dict[str, str] | None = _unless_changed("the payment intent's metadata")


class CreateRefundArgs(_Args):
    """Input of ``stripe.create_refund``: a refund of a payment intent or of a charge."""

    payment_intent: str | None = Field(
        default=None, pattern=PAYMENT_INTENT_ID, description="The payment intent to refund (pi_...)."
    )
    charge: str | None = Field(
        default=None, pattern=CHARGE_ID, description="The charge to refund (ch_...), instead of a payment intent."
    )
    amount: Amount | None = Field(
        default=None,
        description="How much to refund, an integer in the currency's smallest unit; the whole "
        "remaining amount when left out.",
    )
    reason: Literal["duplicate", "fraudulent", "requested_by_customer"] | None = Field(
        default=None, description="Why the money goes back, as Stripe records it."
    )
    metadata: Metadata | None = None

    @model_validator(mode="after")
    def _one_target(self) -> CreateRefundArgs:
        if (self.payment_intent is None) == (self.charge is None):
            raise ValueError("give exactly one of payment_intent and charge")
        return self


def _check_three_decimal(amount: int, currency: str) -> None:
    if currency in THREE_DECIMAL_CURRENCIES and amount % 10:
        raise ValueError(
            f"{currency} is a three-decimal currency: Stripe takes its amounts rounded to a "
            "multiple of 10 (https://docs.stripe.com/currencies#three-decimal)"
        )
