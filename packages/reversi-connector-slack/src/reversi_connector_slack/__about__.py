"""Version of the reversi-connector-slack distribution (read by hatchling)."""

__version__ = "0.1.0"
