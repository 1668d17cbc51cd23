"""Version of the reversi-connector-kubernetes distribution (read by hatchling)."""

__version__ = "0.1.0"
