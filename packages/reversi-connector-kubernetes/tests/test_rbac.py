"""RBAC: each tool works with exactly the rules RBAC lists for it, and fails without any one verb.

The fake authorizes a granted token as the API server's RBAC authorizer does, by verb, API
group and resource (subresources included). Each tool's examples (prepared with an admin
token) run with a token holding only that tool's rules; then, for every verb of those
rules, with a token lacking it: some example must then be refused with 403 ``forbidden``.
The Role on the docs page is the one :func:`role` makes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from reversi_connector_kubernetes import RBAC, KubernetesConnector, Rule, role
from reversi_connector_kubernetes.testing import EXAMPLES, FakeKubernetes, seed_example
from reversi_core.errors import ToolError
from reversi_core.testing import ExampleCalls, FakeServer

ADMIN = "kube-rbacAdminToken-0123456789abcdef"
AGENT = "kube-rbacAgentToken-0123456789abcdef"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "connectors" / "kubernetes.md"


async def _outcomes(tool: str, rules: tuple[Rule, ...]) -> list[ToolError | None]:
    """Each example of ``tool`` run with a token holding ``rules``: ``None`` or its ToolError."""
    found: list[ToolError | None] = []
    for example in EXAMPLES[tool]:
        fake = FakeKubernetes(token=ADMIN, grants={AGENT: rules})
        seed_example(fake)
        with FakeServer(fake, tls=True) as server:
            admin = KubernetesConnector(api_server=server.url, token=ADMIN, ca_cert=server.ca_path)
            agent = KubernetesConnector(api_server=server.url, token=AGENT, ca_cert=server.ca_path)
            args = await ExampleCalls(server, admin).prepare(example)
            try:
                await agent.call(tool, args)
                found.append(None)
            except ToolError as exc:
                found.append(exc)
            await admin.aclose()
            await agent.aclose()
    return found


@pytest.mark.anyio
@pytest.mark.parametrize("tool", sorted(RBAC))
async def test_each_tool_needs_exactly_its_rules(tool: str) -> None:
    assert await _outcomes(tool, RBAC[tool]) == [None] * len(EXAMPLES[tool])
    for index, rule in enumerate(RBAC[tool]):
        for verb in sorted(rule.verbs):
            fewer = dataclasses.replace(rule, verbs=rule.verbs - {verb})
            rules = (*RBAC[tool][:index], fewer, *RBAC[tool][index + 1 :])
            refused = [e for e in await _outcomes(tool, rules) if e is not None]
            assert refused, f"{tool} works without {verb} on {rule.resource}"
            assert all((e.status, e.code) == (403, "forbidden") for e in refused), refused
            assert any(f'cannot {verb} resource "{rule.resource}"' in str(e) for e in refused)


def test_every_tool_has_its_rules() -> None:
    assert set(RBAC) == set(KubernetesConnector.tool_specs())


def test_the_docs_page_shows_the_role_that_grants_every_tool() -> None:
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("<!-- rbac:role -->", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    documents = list(yaml.safe_load_all(block))
    assert documents[0] == role()
    binding: dict[str, Any] = documents[1]
    assert binding["kind"] == "RoleBinding"
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role()["metadata"]["name"]}
