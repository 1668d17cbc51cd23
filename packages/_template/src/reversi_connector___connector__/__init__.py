"""The __connector__ connector for Reversi."""

from .__about__ import __version__
from .connector import __Connector__Connector

__all__ = ["__Connector__Connector", "__version__"]
