"""Version of the reversi-connector-gcalendar distribution (read by hatchling)."""

__version__ = "0.1.0"
