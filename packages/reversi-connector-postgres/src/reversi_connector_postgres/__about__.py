"""Version of the reversi-connector-postgres distribution (read by hatchling)."""

__version__ = "0.1.0"
