"""The gcalendar connector for Reversi."""

from .__about__ import __version__
from .connector import GcalendarConnector

__all__ = ["GcalendarConnector", "__version__"]
