"""Version of the reversi-connector-fs distribution (read by hatchling)."""

__version__ = "0.1.0"
