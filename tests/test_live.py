"""scripts/live.py, what ``nox -s live -- NAME`` runs: without credentials, for fs, on the fake."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import yaml

from reversi_connector_github import GithubConnector
from reversi_connector_github.testing import CERTIFICATION_TOKEN, LIVE, FakeGitHub, seed_example
from reversi_core.journal import SQLiteJournal, StepState
from reversi_core.testing import FakeServer, replay_cassette, secret_forms

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "live.py"


def live(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """scripts/live.py with none of the connectors' variables from this process."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "POSTGRES_", "REVERSI_LIVE_", "PG"))
    }
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_without_credentials_it_names_the_variables_and_fails(tmp_path: Path) -> None:
    proc = live("github", "--cassettes", str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    needed, _, optional = proc.stderr.partition("optional:")
    assert "GITHUB_TOKEN: a GitHub token" in needed
    assert "REVERSI_LIVE_GITHUB_REPO: owner/repo of a throwaway repository" in needed
    assert "GITHUB_BASE_URL" in optional
    assert "REVERSI_LIVE_GITHUB_BRANCH" in optional
    assert "(default: main)" in optional
    assert list(tmp_path.iterdir()) == []  # nothing recorded, nothing left
    half = live("github", "--cassettes", str(tmp_path), GITHUB_TOKEN="ghp_someTokenValue1234")
    assert half.returncode == 2
    assert "REVERSI_LIVE_GITHUB_REPO" in half.stderr.partition("optional:")[0]
    assert "GITHUB_TOKEN:" not in half.stderr.partition("optional:")[0]
    assert "ghp_someTokenValue1234" not in half.stdout + half.stderr
    pg = live("postgres")
    assert pg.returncode == 2
    assert "POSTGRES_URL" in pg.stderr


def test_fs_has_nothing_live_to_run() -> None:
    proc = live("fs")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("fs: nothing live to run: fs works on a local directory")


def test_an_unknown_connector_is_refused() -> None:
    proc = live("nosuch")
    assert proc.returncode == 2
    assert "no connector named 'nosuch' is installed" in proc.stderr


def test_github_recorded_against_its_fake_holds_no_credential_and_replays(tmp_path: Path) -> None:
    proc = live("github", "--test-backend", "--cassettes", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cassette = tmp_path / f"{LIVE.name}.yaml"
    text = cassette.read_text()
    recorded = len(yaml.safe_load(text)["interactions"])
    assert recorded > 10  # the four calls, the reads they need, the four undos
    assert (
        f"recorded {recorded} exchanges into {cassette}: free of every form of GITHUB_TOKEN"
        in proc.stdout
    )
    for form in secret_forms(CERTIFICATION_TOKEN).values():
        assert form not in text
    assert text.count("Bearer <GITHUB_TOKEN>") == recorded  # every request, scrubbed
    assert sorted(p.name for p in tmp_path.iterdir()) == [cassette.name]  # no partial file left
    report = anyio.run(replay_cassette, GithubConnector, LIVE, cassette)
    assert report.exchanges == recorded


def test_against_the_vendor_the_environment_names_it_records_or_keeps_the_journal(
    tmp_path: Path,
) -> None:
    """The maintainer's path, with a fake GitHub standing in for api.github.com: the
    variables alone say where to go. A scenario that fails writes no cassette and
    keeps its journal."""
    token = "ghp_maintainersOwnToken_0123456789abcd"
    fake = FakeGitHub(token=token)
    seed_example(fake)
    with FakeServer(fake) as server:
        env = {
            "GITHUB_TOKEN": token,
            "GITHUB_BASE_URL": fake.base_url(server),
            "REVERSI_LIVE_GITHUB_REPO": "octo/hello",
        }
        done = live("github", "--cassettes", str(tmp_path / "ok"), **env)
        refused = live(
            "github", "--cassettes", str(tmp_path / "bad"), **{**env, "GITHUB_TOKEN": "ghp_revoked_000000"}
        )
    assert done.returncode == 0, done.stdout + done.stderr
    cassette = tmp_path / "ok" / f"{LIVE.name}.yaml"
    meta = yaml.safe_load(cassette.read_text())["metadata"]["reversi"]
    assert meta["recorded_against"] == "the vendor"
    assert meta["variables"] == {
        "REVERSI_LIVE_GITHUB_REPO": "octo/hello",
        "REVERSI_LIVE_GITHUB_BRANCH": "main",
    }
    assert token not in cassette.read_text()
    assert token not in done.stdout + done.stderr
    assert refused.returncode == 1
    assert "the live scenario failed: ToolError: github: POST /repos/octo/hello/issues failed: HTTP 401" in (
        refused.stderr
    )
    kept = Path(refused.stderr.split("its journal is kept in ", 1)[1].split(" ", 1)[0])
    try:
        with SQLiteJournal.open(kept, create=False) as journal:
            (run,) = journal.list_runs()
            assert [(s.tool, s.state) for s in journal.list_steps(run.id)] == [
                ("github.create_issue", StepState.FAILED)
            ]
    finally:
        shutil.rmtree(kept.parent)
    assert not (tmp_path / "bad").exists() or list((tmp_path / "bad").iterdir()) == []


def test_the_live_session_is_never_part_of_a_default_or_ci_run() -> None:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    live_session = next(
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "live"
    )
    decorator = live_session.decorator_list[0]
    assert isinstance(decorator, ast.Call)
    options = {k.arg: k.value for k in decorator.keywords}
    assert isinstance(options["default"], ast.Constant)
    assert options["default"].value is False
    ci = (ROOT / ".ci" / "run").read_text()
    assert "nox -s lint tests build install_only" in ci
    assert "live" not in ci
