"""Reversi connector for GitLab: issues, notes and branches, each change undoable.

The connector is :class:`GitlabConnector`, registered in the ``reversi.connectors``
entry-point group as ``gitlab``; it reads ``GITLAB_TOKEN`` (and, for a self-hosted
instance, ``GITLAB_BASE_URL``, its root: ``/api/v4`` is added). Its tools and their
limits are described in :mod:`reversi_connector_gitlab.connector` and
``docs/connectors/gitlab.md``; a fake GitLab to test agents against is in
:mod:`reversi_connector_gitlab.testing`.
"""

from .__about__ import __version__
from ._errors import ERRORS, PROTECTED_BRANCH_ROLE
from .connector import API_SUFFIX, CHANGED_SINCE, DEFAULT_BASE_URL, GitlabConnector

__all__ = [
    "API_SUFFIX",
    "CHANGED_SINCE",
    "DEFAULT_BASE_URL",
    "ERRORS",
    "PROTECTED_BRANCH_ROLE",
    "GitlabConnector",
    "__version__",
]
