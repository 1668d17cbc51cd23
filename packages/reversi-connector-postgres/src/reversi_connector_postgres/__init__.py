"""Reversi connector for PostgreSQL: rows inserted or updated by an agent can be put back.

The connector is :class:`PostgresConnector`, registered in the ``reversi.connectors``
entry-point group as ``postgres`` and configured by ``POSTGRES_URL``. Its tools,
privileges, limits and residue are described in :mod:`reversi_connector_postgres.connector`
and in ``docs/connectors/postgres.md``; :mod:`reversi_connector_postgres.testing` starts
throwaway PostgreSQL servers for tests and opts the connector in to certification.
"""

from .__about__ import __version__
from ._session import StatementLog
from ._sql import IDENTIFIER_PATTERN
from .connector import DEFAULT_TIMEOUT, MAX_ROWS, PostgresConnector

__all__ = [
    "DEFAULT_TIMEOUT",
    "IDENTIFIER_PATTERN",
    "MAX_ROWS",
    "PostgresConnector",
    "StatementLog",
    "__version__",
]
