"""The __name__ connector for Reversi."""

from .__about__ import __version__
from .connector import __Class__Connector

__all__ = ["__Class__Connector", "__version__"]
