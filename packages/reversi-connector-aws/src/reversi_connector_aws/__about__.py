"""Version of the reversi-connector-aws distribution (read by hatchling)."""

__version__ = "0.1.0"
