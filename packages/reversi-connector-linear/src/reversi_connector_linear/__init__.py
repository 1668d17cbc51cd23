"""The linear connector for Reversi."""

from .__about__ import __version__
from .connector import LinearConnector

__all__ = ["LinearConnector", "__version__"]
