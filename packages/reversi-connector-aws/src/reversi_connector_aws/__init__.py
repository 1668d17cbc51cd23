"""Reversi connector for Amazon S3: objects read, written and deleted, each change undoable.

The connector is :class:`AwsConnector`, registered in the ``reversi.connectors``
entry-point group as ``aws``; it reads ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION`` and, optionally, ``AWS_SESSION_TOKEN``, ``AWS_ENDPOINT_URL_S3`` and
``AWS_S3_ADDRESSING_STYLE``. Its tools are described in
:mod:`reversi_connector_aws.connector` and ``docs/connectors/aws.md``; a fake S3 to test
agents against is in :mod:`reversi_connector_aws.testing`.
"""

from .__about__ import __version__
from ._args import MAX_OBJECT_BYTES
from ._keys import BACKUP_PREFIX, key_path
from .connector import ADDRESSING_STYLES, MAX_COPY_BYTES, AwsConnector

__all__ = [
    "ADDRESSING_STYLES",
    "BACKUP_PREFIX",
    "MAX_COPY_BYTES",
    "MAX_OBJECT_BYTES",
    "AwsConnector",
    "__version__",
    "key_path",
]
