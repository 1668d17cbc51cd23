"""Reversi connector for GitHub: issues, comments, labels and branches, each change undoable.

The connector is :class:`GithubConnector`, registered in the ``reversi.connectors``
entry-point group as ``github``; it reads ``GITHUB_TOKEN`` (and, for GitHub Enterprise
Server, ``GITHUB_BASE_URL``). Its tools and their limits are described in
:mod:`reversi_connector_github.connector` and ``docs/connectors/github.md``; a fake
GitHub to test agents against is in :mod:`reversi_connector_github.testing`.
"""

from .__about__ import __version__
from ._errors import error_code_and_message, github_error_code, is_rate_limited
from .connector import API_VERSION, DEFAULT_BASE_URL, MEDIA_TYPE, GithubConnector

__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "MEDIA_TYPE",
    "GithubConnector",
    "__version__",
    "error_code_and_message",
    "github_error_code",
    "is_rate_limited",
]
