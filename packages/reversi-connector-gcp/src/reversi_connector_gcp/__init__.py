"""Reversi connector for Google Cloud Storage: objects read, written and deleted, each change undoable.

The connector is :class:`GcpConnector`, registered in the ``reversi.connectors``
entry-point group as ``gcp``; it reads ``GCP_ACCESS_TOKEN`` (and, for an emulator,
``GCP_STORAGE_URL``). Its tools are described in :mod:`reversi_connector_gcp.connector`
and ``docs/connectors/gcp.md``; a fake Cloud Storage to test agents against is in
:mod:`reversi_connector_gcp.testing`.
"""

from .__about__ import __version__
from ._args import MAX_OBJECT_BYTES
from ._names import BACKUP_PREFIX
from .connector import DEFAULT_BASE_URL, MAX_REWRITE_CALLS, GcpConnector

__all__ = [
    "BACKUP_PREFIX",
    "DEFAULT_BASE_URL",
    "MAX_OBJECT_BYTES",
    "MAX_REWRITE_CALLS",
    "GcpConnector",
    "__version__",
]
