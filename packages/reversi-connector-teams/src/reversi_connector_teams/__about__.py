"""Version of the reversi-connector-teams distribution (read by hatchling)."""

__version__ = "0.1.0"
