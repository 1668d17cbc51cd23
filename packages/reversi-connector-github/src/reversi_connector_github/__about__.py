"""Version of the reversi-connector-github distribution (read by hatchling)."""

__version__ = "0.1.0"
