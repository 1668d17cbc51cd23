"""Version of the reversi-connector-jira distribution (read by hatchling)."""

__version__ = "0.1.0"
