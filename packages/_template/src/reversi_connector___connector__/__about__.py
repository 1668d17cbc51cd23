"""Version of the reversi-connector-__connector__ distribution (read by hatchling)."""

__version__ = "0.1.0"
