"""Version of the reversi-connector-gitlab distribution (read by hatchling)."""

__version__ = "0.1.0"
