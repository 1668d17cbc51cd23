"""``reversi-connectors certify NAME|all``: the checklist, where each check is enforced, n/a reasons.

A throwaway connector package ``reversi_certdemo`` (with a ``.dist-info`` declaring its
entry point, exactly as an installed connector) is written to a temporary directory put
on ``sys.path``; its ``testing`` module opts in to certification. The ``note`` connector
of ``cli_fixture/`` has no ``testing`` module, so it stands for a connector that did not
opt in.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from reversi_core.cli.connectors import main
from reversi_core.testing import CHECK_INFO, CHECKS, SUITE_CHECKS_FILE, SUITE_TEST

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CLI_FIXTURE = HERE / "cli_fixture"

CONNECTOR = '''
from typing import Any
from pydantic import BaseModel
from reversi_core import CallContext, Connector, tool
from reversi_core.manifest import Effect


class Args(BaseModel):
    key: str


class KeyResult(BaseModel):
    key: str


class DemoConnector(Connector):
    name = "certdemo"

    @classmethod
    def from_env(cls, environ, **options):
        return cls()

    @tool(effect=Effect.READ_ONLY, permission="certdemo:read", input=Args, output=KeyResult)
    async def peek(self, args: Args, ctx: CallContext) -> dict[str, Any]:
        """Return the key."""
        return {"key": args.key}
'''

TESTING = """
from contextlib import contextmanager
from reversi_core.testing import CertificationFixture
from . import DemoConnector


@contextmanager
def backend(directory):
    yield {}


def certification_fixture():
    return CertificationFixture(
        backend=backend,
        build=lambda handle: DemoConnector(),
        fingerprint=lambda handle: dict(handle),
        examples={"certdemo.peek": [{"key": "k"}]},
        not_applicable={
            "retry": "the demo has no network between the tool and its effect",
            "redaction": "the demo connector holds no credential at all",
        },
    )
"""


def make_package(root: Path, testing: str | None) -> None:
    pkg = root / "reversi_certdemo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(CONNECTOR))
    if testing is not None:
        (pkg / "testing.py").write_text(textwrap.dedent(testing))
    info = root / "reversi_certdemo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: reversi-certdemo\nVersion: 0.1\n")
    points = "[reversi.connectors]\ncertdemo = reversi_certdemo:DemoConnector\n"
    if testing is not None:
        points += (
            "[reversi.certification]\ncertdemo = reversi_certdemo.testing:certification_fixture\n"
        )
    (info / "entry_points.txt").write_text(points)


def forget_package() -> None:
    """Drop the imported demo package, so the next test imports its own copy."""
    for name in [m for m in sys.modules if m.startswith("reversi_certdemo")]:
        del sys.modules[name]


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Install ``certdemo`` (with a fixture) on ``sys.path`` for this test."""
    make_package(tmp_path / "site", TESTING)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield tmp_path / "site"
    forget_package()


def checklist(out: str) -> list[tuple[str, str, str]]:
    """``(check id, check pointer, test id)`` for every numbered entry printed, in order."""
    found = re.findall(
        r"^\s*\d+\. .+ \((\w+)\)\n(?:\s+.*\n)*?\s+check:\s+(\S+)\n\s+test:\s+(\S+)$",
        out,
        re.MULTILINE,
    )
    return [(c, f, t) for c, f, t in found]


def test_certify_one_connector_prints_the_checks_and_its_reasons(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["certify", "certdemo"]) == 0
    out = capsys.readouterr().out
    entries = checklist(out)
    assert [c for c, _, _ in entries] == list(CHECKS)
    for check, pointer, test in entries:
        assert pointer == f"{SUITE_CHECKS_FILE}::check_{check}"
        assert test == f"{SUITE_TEST}[certdemo-{check}]"
        assert CHECK_INFO[check].title in out
    assert "fixture reversi_certdemo.testing:certification_fixture()" in out
    assert "n/a Retry: the demo has no network between the tool and its effect" in out
    assert "n/a Redaction: the demo connector holds no credential at all" in out
    assert "n/a Timeout" not in out


def test_certify_prints_each_tool_the_concurrent_change_check_exempts_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exempt = TESTING.replace(
        "        not_applicable={",
        "        restores_nothing={'certdemo.peek': 'a peek changes nothing, so its undo restores "
        "nothing'},\n        not_applicable={",
    )
    assert exempt != TESTING
    make_package(tmp_path, exempt)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["certify", "certdemo"]) == 0
    finally:
        forget_package()
    out = capsys.readouterr().out
    line = "n/a Concurrent change for certdemo.peek: a peek changes nothing, so its undo restores"
    assert line in " ".join(out.split())


def test_certify_all_uses_a_placeholder_and_lists_every_connector(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["certify", "all"])
    out = capsys.readouterr().out
    entries = checklist(out)
    assert [c for c, _, _ in entries] == list(CHECKS)
    assert all(t.endswith(f"[<connector>-{c}]") for c, _, t in entries)
    assert "certdemo: fixture reversi_certdemo.testing" in out
    # other installed connectors (fs in the workspace) have fixtures too, so all is well
    assert status == 0, out


def test_the_printed_pointers_exist_in_the_repository(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (REPO / SUITE_CHECKS_FILE).is_file():
        # a reversi-core sdist without the repository: the pointers name repository files
        assert not (REPO / "certification").exists()
        return
    assert main(["certify", "certdemo"]) == 0
    defined = {
        node.name
        for node in ast.parse((REPO / SUITE_CHECKS_FILE).read_text()).body
        if isinstance(node, ast.AsyncFunctionDef)
    }
    test_file, _, test_name = SUITE_TEST.partition("::")
    assert f"async def {test_name}(" in (REPO / test_file).read_text()
    for _check, pointer, _test in checklist(capsys.readouterr().out):
        path, _, function = pointer.partition("::")
        assert (REPO / path).is_file()
        assert function in defined


def test_a_connector_without_a_fixture_is_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(CLI_FIXTURE))
    assert main(["certify", "note"]) == 1
    out = capsys.readouterr().out
    assert "connector 'note' has no certification fixture" in out
    assert 'entry point note = "<package>.testing:certification_fixture"' in out
    assert '[project.entry-points."reversi.certification"]' in out
    assert "every check would fail" in out
    assert len(checklist(out)) == len(CHECKS) == 13


def test_a_fixture_of_the_wrong_type_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_package(tmp_path, "def certification_fixture():\n    return {'not': 'a fixture'}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["certify", "certdemo"]) == 1
    finally:
        forget_package()
    out = capsys.readouterr().out
    assert "returned dict, not a CertificationFixture" in out


def test_unknown_connector_and_credential_flags_are_usage_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["certify", "no-such-connector"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("reversi-connectors: error: unknown connector 'no-such-connector'")
    assert len(err.strip().splitlines()) == 1
    assert main(["certify", "all", "--token", "abc"]) == 2
    assert "--token is not accepted" in capsys.readouterr().err


def test_the_console_script_prints_the_checklist(demo: Path) -> None:
    exe = shutil.which("reversi-connectors", path=str(Path(sys.executable).parent))
    exe = exe or shutil.which("reversi-connectors")
    assert exe, "console script reversi-connectors is not installed"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(demo), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [exe, "certify", "certdemo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert [c for c, _, _ in checklist(proc.stdout)] == list(CHECKS)
    assert "certification/test_certification.py::test_check[certdemo-manifest_drift]" in proc.stdout


def test_a_reader_that_goes_away_gets_no_error_line() -> None:
    """``reversi-connectors certify all | head -1``: the closed pipe is not an error message."""
    exe = shutil.which("reversi-connectors", path=str(Path(sys.executable).parent))
    exe = exe or shutil.which("reversi-connectors")
    assert exe, "reversi-connectors is not installed"
    proc = subprocess.Popen(
        [exe, "certify", "all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # before the child writes anything
    _, err = proc.communicate(timeout=60)
    assert err.decode() == ""
    assert proc.returncode == 1
