"""Version of the reversi-connector-gcp distribution (read by hatchling)."""

__version__ = "0.1.0"
