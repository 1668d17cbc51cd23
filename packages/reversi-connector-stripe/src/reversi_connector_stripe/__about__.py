"""Version of the reversi-connector-stripe distribution (read by hatchling)."""

__version__ = "0.1.0"
