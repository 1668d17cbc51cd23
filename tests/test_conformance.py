"""The MCP conformance suite's server scenarios against ``reversi-gateway --listen``.

``@modelcontextprotocol/conformance`` (npm, Node 22) connects to the gateway as an MCP
client and runs every server scenario (``--suite all``); the gateway fronts
``conformance_upstream.py`` (the tools the scenarios call) over stdio, with
``--tool-namespace conformance``. The suite cannot send a bearer token, so
``_authproxy.AuthProxy`` adds it. Each scenario's result must be the one docs/gateway.md
("Conformance") gives it, and the table must name every scenario the suite has.

CI installs the tools before the tests (noxfile.py, session ``tests``)::

    npm install --prefix .ci/node node@22 @modelcontextprotocol/conformance@0.1.16

and points ``$REVERSI_NODE_BIN`` at ``.ci/node/node_modules/.bin``; without the variable
the tests look there under the repository root, and fail saying how to install them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
for folder in (HERE, REPO / "packages" / "reversi-core" / "tests"):  # the helpers below
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
from _authproxy import AuthProxy  # noqa: E402 - found on the path set just above
from _httpgw import GatewayProcess, new_token  # noqa: E402 - as above

NPM_INSTALL = "npm install --prefix .ci/node node@22 @modelcontextprotocol/conformance@0.1.16"
GATEWAY_MD = (REPO / "docs" / "gateway.md").read_text(encoding="utf-8")

FAILS_BECAUSE = {
    "not supported": {
        "tools-call-with-progress": "No progress notifications received",
        "tools-call-with-logging": "Method not found",
        "tools-call-sampling": "did not request sampling",
        "tools-call-elicitation": "did not request elicitation",
        "elicitation-sep1034-defaults": "did not request elicitation",
        "elicitation-sep1330-enums": "did not request elicitation",
    },
    "does not apply": {"*": "Method not found"},
}
"""What the suite says of a scenario that fails for the reason the docs give."""


def node_bin() -> Path:
    """``.ci/node/node_modules/.bin`` (or ``$REVERSI_NODE_BIN``), with node 22 and the suite."""
    configured = os.environ.get("REVERSI_NODE_BIN")
    folder = Path(configured) if configured else REPO / ".ci" / "node" / "node_modules" / ".bin"
    for tool in ("conformance", "node"):
        if not (folder / tool).exists():
            pytest.fail(f"{folder / tool} is not installed: run `{NPM_INSTALL}` in {REPO}")
    version = subprocess.run(
        [str(folder / "node"), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 22:
        pytest.fail(f"{folder / 'node'} is {version}; the suite needs Node 22: {NPM_INSTALL}")
    return folder


def documented() -> dict[str, tuple[str, str]]:
    """``{scenario: (result, why)}`` from the table of docs/gateway.md, "Conformance"."""
    section = GATEWAY_MD.split("## Conformance", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(
        r"^\| `([a-z0-9-]+)` \| ([^|]+) \|\s*([^|]*?)\s*\|$", section, flags=re.MULTILINE
    )
    return {name: (result.strip(), why.strip()) for name, result, why in rows}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, str]]]:
    """Every server scenario's checks, from one run of the suite against the gateway."""
    folder = node_bin()
    tmp = tmp_path_factory.mktemp("conformance")
    manifests = tmp / "manifests"
    manifests.mkdir()
    upstream = HERE / "conformance_upstream.py"
    printed = subprocess.run(
        [sys.executable, str(upstream), "manifests"], capture_output=True, text=True, check=True
    )
    (manifests / "conformance.json").write_text(printed.stdout)
    argv = ["--manifests", str(manifests), "--data", str(tmp / "data")]
    argv += ["--tool-namespace", "conformance", "--upstream-cmd", sys.executable]
    argv += ["--upstream-arg", str(upstream), "--upstream-arg", "serve"]
    gateway = GatewayProcess(argv, tmp / "gateway.err", token=new_token())
    proxy = AuthProxy(gateway.url, gateway.token).start()
    out = tmp / "results"
    try:
        run = subprocess.run(
            [
                str(folder / "conformance"),
                "server",
                "--url",
                proxy.url,
                "--suite",
                "all",
                "--output-dir",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"},
        )
    finally:
        proxy.stop()
        gateway.stop()
    found: dict[str, list[dict[str, str]]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        name = re.sub(r"-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name).removeprefix("server-")
        found[name] = json.loads(checks.read_text())
    assert found, f"the suite wrote no results:\n{run.stdout}\n{run.stderr}"
    assert gateway.token not in gateway.stderr()
    # the calls went through the engine: journaled under the manifests' names
    from reversi_core import SQLiteJournal

    with SQLiteJournal.open(tmp / "data", create=False) as journal:
        tools = {s.tool for r in journal.list_runs() for s in journal.list_steps(r.id)}
    assert "conformance.test_simple_text" in tools
    assert all(t.startswith("conformance.") for t in tools)
    return found


def test_the_docs_list_every_scenario_of_the_suite(
    results: dict[str, list[dict[str, str]]],
) -> None:
    folder = node_bin()
    listed = subprocess.run(
        [str(folder / "conformance"), "list", "--server"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"},
    ).stdout
    scenarios = set(re.findall(r"^\s*- ([a-z0-9-]+)", listed, flags=re.MULTILINE))
    assert scenarios, listed
    assert set(results) == scenarios  # --suite all ran every one
    table = documented()
    assert set(table) == scenarios, (
        f"undocumented: {sorted(scenarios - set(table))}; "
        f"not in the suite: {sorted(set(table) - scenarios)}"
    )
    for name, (result, why) in table.items():
        assert result in ("pass", "pass, with 2 warnings", "not supported", "does not apply"), name
        if result != "pass":
            assert why, f"{name}: a scenario that does not pass says why"


def test_each_scenario_has_the_documented_result(
    results: dict[str, list[dict[str, str]]],
) -> None:
    wrong = []
    for name, (result, _) in documented().items():
        checks = results[name]
        statuses = [c["status"] for c in checks]
        failures = [
            c.get("errorMessage") or c.get("description", "")
            for c in checks
            if c["status"] == "FAILURE"
        ]
        if result.startswith("pass"):
            warnings = statuses.count("WARNING")
            expected = int(result.split("with ")[1].split()[0]) if "with" in result else 0
            if failures or warnings != expected:
                wrong.append(f"{name}: documented {result!r}, got {statuses} {failures}")
            continue
        reasons = FAILS_BECAUSE[result]
        reason = reasons.get(name, reasons.get("*", ""))
        if not failures or not all(reason in f for f in failures):
            wrong.append(f"{name}: documented {result!r} ({reason!r}), got {statuses} {failures}")
    assert not wrong, "\n".join(wrong)
