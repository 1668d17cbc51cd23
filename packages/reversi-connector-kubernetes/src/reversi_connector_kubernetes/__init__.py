"""Reversi connector for Kubernetes: deployments scaled and restarted, pods, config maps.

The connector is :class:`KubernetesConnector`, registered in the ``reversi.connectors``
entry-point group as ``kubernetes``; it reads ``KUBE_API_SERVER``, ``KUBE_TOKEN`` and,
optionally, ``KUBE_CA_CERT``. Its tools and their limits are described in
:mod:`reversi_connector_kubernetes.connector` and ``docs/connectors/kubernetes.md``; the
RBAC rules each tool needs are :data:`RBAC` (:func:`role` makes a Role of them); a fake
API server to test agents against is in :mod:`reversi_connector_kubernetes.testing`.
"""

from .__about__ import __version__
from ._errors import ERRORS, reason_code
from ._rbac import RBAC, Rule, role
from .connector import (
    CHANGED_SINCE,
    MERGE_PATCH,
    RESTARTED_AT,
    STRATEGIC_MERGE_PATCH,
    KubernetesConnector,
    content_hash,
)

__all__ = [
    "CHANGED_SINCE",
    "ERRORS",
    "MERGE_PATCH",
    "RBAC",
    "RESTARTED_AT",
    "STRATEGIC_MERGE_PATCH",
    "KubernetesConnector",
    "Rule",
    "__version__",
    "content_hash",
    "reason_code",
    "role",
]
