"""The result model of every ``stripe`` tool: what a call returns, and what the journal keeps.

A result keeps the fields an agent and an undo need, never a payment intent's
``client_secret`` (Stripe asks that it be neither stored nor logged:
https://docs.stripe.com/api/payment_intents/object#payment_intent_object-client_secret).
Amounts are integers in the currency's smallest unit; times are UNIX seconds.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CancelPaymentIntentResult",
    "ChargeResult",
    "CustomerResult",
    "DeleteCustomerResult",
    "PaymentIntentResult",
    "RefundResult",
]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChargeResult(_Result):
    """What ``stripe.retrieve_charge`` returns."""

    id: str = Field(description="The charge's id.")
    amount: int = Field(description="The amount charged, in the currency's smallest unit.")
    amount_captured: int | None = Field(
        description="The amount captured, in the smallest unit (None where the API does not say)."
    )
    amount_refunded: int = Field(description="The amount refunded so far, in the smallest unit.")
    currency: str = Field(description="The three-letter currency code, lower case.")
    status: str = Field(description="succeeded, pending or failed.")
    paid: bool = Field(description="True when the charge succeeded or was authorized.")
    captured: bool = Field(description="True when the charge was captured.")
    refunded: bool = Field(description="True when the whole amount was refunded.")
    customer: str | None = Field(description="The customer's id, if any.")
    payment_intent: str | None = Field(description="The payment intent that made the charge, if any.")
    description: str | None = Field(description="The charge's description.")
    metadata: dict[str, str] = Field(description="The charge's metadata.")
    created: int = Field(description="When it was created, UNIX seconds.")
    livemode: bool = Field(description="True in live mode, false in test mode.")


class CustomerResult(_Result):
    """What ``stripe.create_customer`` returns."""

    id: str = Field(description="The new customer's id (cus_...), which the undo deletes.")
    email: str | None = Field(description="The customer's email address.")
    name: str | None = Field(description="The customer's name.")
    description: str | None = Field(description="The customer's description.")
    phone: str | None = Field(description="The customer's phone number.")
    metadata: dict[str, str] = Field(description="The customer's metadata.")
    created: int = Field(description="When it was created, UNIX seconds.")
    livemode: bool = Field(description="True in live mode, false in test mode.")


class DeleteCustomerResult(_Result):
    """What ``stripe.delete_customer`` returns."""

    customer: str = Field(description="The customer's id.")
    deleted: bool = Field(description="False when the customer was already gone (404).")


class PaymentIntentResult(_Result):
    """What ``stripe.create_payment_intent`` returns (without its client secret)."""

    id: str = Field(description="The new payment intent's id (pi_...), which the undo cancels.")
    amount: int = Field(description="The amount, in the currency's smallest unit.")
    currency: str = Field(description="The three-letter currency code, lower case.")
    status: str = Field(description="Its status; requires_payment_method for a new, unconfirmed one.")
    customer: str | None = Field(description="The customer's id, if any.")
    description: str | None = Field(description="Its description.")
    metadata: dict[str, str] = Field(description="Its metadata.")
    created: int = Field(description="When it was created, UNIX seconds.")
    livemode: bool = Field(description="True in live mode, false in test mode.")


class CancelPaymentIntentResult(_Result):
    """What ``stripe.cancel_payment_intent`` returns."""

    payment_intent: str = Field(description="The payment intent's id.")
    status: str = Field(description="canceled.")
    cancellation_reason: str | None = Field(description="The reason Stripe recorded, if any.")
    canceled: bool = Field(description="False when it had been canceled already.")


class RefundResult(_Result):
    """What ``stripe.create_refund`` returns."""

    id: str = Field(description="The refund's id (re_...).")
    amount: int = Field(description="The amount refunded, in the currency's smallest unit.")
    currency: str = Field(description="The three-letter currency code, lower case.")
    status: str | None = Field(description="pending, requires_action, succeeded, failed or canceled.")
    charge: str | None = Field(description="The refunded charge's id.")
    payment_intent: str | None = Field(description="The refunded payment intent's id, if any.")
    reason: str | None = Field(description="The reason given, if any.")
    metadata: dict[str, str] = Field(description="The refund's metadata.")
    created: int = Field(description="When it was created, UNIX seconds.")
