"""Version of the reversi-connector-azure distribution (read by hatchling)."""

__version__ = "0.1.0"
