"""Reversi connector for Azure Blob Storage: block blobs read, written and deleted, each change undoable.

The connector is :class:`AzureConnector`, registered in the ``reversi.connectors``
entry-point group as ``azure``; it reads ``AZURE_STORAGE_TOKEN``, ``AZURE_STORAGE_ACCOUNT``
and, optionally, ``AZURE_STORAGE_BLOB_ENDPOINT``. Its tools are described in
:mod:`reversi_connector_azure.connector` and ``docs/connectors/azure.md``; a fake Blob
Storage to test agents against is in :mod:`reversi_connector_azure.testing`.
"""

from .__about__ import __version__
from ._args import MAX_BLOB_BYTES
from ._names import BACKUP_PREFIX, blob_path
from .connector import API_VERSION, MAX_COPY_BYTES, AzureConnector

__all__ = [
    "API_VERSION",
    "BACKUP_PREFIX",
    "MAX_BLOB_BYTES",
    "MAX_COPY_BYTES",
    "AzureConnector",
    "__version__",
    "blob_path",
]
