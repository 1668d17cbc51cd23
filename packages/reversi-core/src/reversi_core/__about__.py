"""Version of the reversi-core distribution (read by hatchling)."""

__version__ = "0.1.0"
