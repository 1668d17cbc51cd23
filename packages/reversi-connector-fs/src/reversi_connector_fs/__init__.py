"""Reversi connector for files under one root directory: every change can be undone.

The connector is :class:`FsConnector`, registered in the ``reversi.connectors``
entry-point group as ``fs``. Its tools, path rules and backup directory are described
in :mod:`reversi_connector_fs.connector` and in ``docs/connectors/fs.md``.
"""

from .__about__ import __version__
from .connector import DEFAULT_BACKUP_DIR, MAX_FILE_BYTES, MAX_LIST_ENTRIES, FsConnector

__all__ = ["DEFAULT_BACKUP_DIR", "MAX_FILE_BYTES", "MAX_LIST_ENTRIES", "FsConnector", "__version__"]
