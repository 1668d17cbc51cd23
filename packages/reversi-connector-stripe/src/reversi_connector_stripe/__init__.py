"""Reversi connector for Stripe: customers, payment intents, refunds and charges, with undo."""

from .__about__ import __version__
from .connector import API_VERSION, REPLAY, StripeConnector

__all__ = ["API_VERSION", "REPLAY", "StripeConnector", "__version__"]
