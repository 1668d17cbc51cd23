"""The RBAC rules each tool needs, and a minimal Role that grants them.

Kubernetes authorizes every request by its verb (``get``, ``list``, ``create``,
``patch``, ``delete``...), API group and resource, subresources included
(``deployments/scale``); see
https://kubernetes.io/docs/reference/access-authn-authz/rbac/ and
https://kubernetes.io/docs/reference/access-authn-authz/authorization/#determine-the-request-verb.
:data:`RBAC` lists, per tool, the rules its requests need; :func:`role` turns a set of
tools into a ``Role`` manifest. The fake (:class:`reversi_connector_kubernetes.testing.FakeKubernetes`)
authorizes tokens by the same rules, so the package's tests check that each tool works
with exactly its rules and fails without any one of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RBAC", "Rule", "role"]


@dataclass(frozen=True)
class Rule:
    """One RBAC rule: ``verbs`` on ``resource`` (``"deployments/scale"``) of ``api_group``
    (``""`` for the core group, ``"apps"``)."""

    api_group: str
    resource: str
    verbs: frozenset[str]

    def allows(self, api_group: str, resource: str, verb: str) -> bool:
        """Whether this rule grants ``verb`` on ``resource`` of ``api_group``."""
        return api_group == self.api_group and resource == self.resource and verb in self.verbs


def _rule(group: str, resource: str, *verbs: str) -> Rule:
    return Rule(group, resource, frozenset(verbs))


RBAC: Mapping[str, tuple[Rule, ...]] = {
    "kubernetes.get_deployment": (_rule("apps", "deployments", "get"),),
    "kubernetes.list_pods": (_rule("", "pods", "list"),),
    "kubernetes.scale_deployment": (_rule("apps", "deployments/scale", "get", "patch"),),
    "kubernetes.restore_replicas": (_rule("apps", "deployments/scale", "get", "patch"),),
    "kubernetes.create_configmap": (_rule("", "configmaps", "create"),),
    "kubernetes.delete_configmap": (_rule("", "configmaps", "get", "delete"),),
    "kubernetes.rollout_restart": (_rule("apps", "deployments", "get", "patch"),),
    "kubernetes.delete_pod": (_rule("", "pods", "delete"),),
}
"""The rules each tool's requests need, by tool."""


def role(
    tools: Iterable[str] | None = None, *, name: str = "reversi-agent", namespace: str = "default"
) -> dict[str, Any]:
    """A ``Role`` (rbac.authorization.k8s.io/v1) granting what ``tools`` need (default: every tool).

    Rules of the same group and resource are merged; groups, resources and verbs are
    sorted, so the manifest is stable. Raises ``KeyError`` for a tool that is not one of
    this connector's.
    """
    chosen = list(RBAC) if tools is None else list(tools)
    merged: dict[tuple[str, str], set[str]] = {}
    for tool in chosen:
        for rule in RBAC[tool]:
            merged.setdefault((rule.api_group, rule.resource), set()).update(rule.verbs)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": [
            {"apiGroups": [group], "resources": [resource], "verbs": sorted(verbs)}
            for (group, resource), verbs in sorted(merged.items())
        ],
    }
