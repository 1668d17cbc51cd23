"""Version of the reversi-connector-linear distribution (read by hatchling)."""

__version__ = "0.1.0"
