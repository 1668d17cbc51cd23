"""``reversi-connectors``: manifests, credential flags, unknown connectors, compensate.

The ``note`` and ``vault`` test connectors live in ``cli_fixture/`` and are registered
through a ``.dist-info`` there, exactly as an installed connector is.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
import yaml

from reversi_core import Registry
from reversi_core.cli.connectors import main

FIXTURE = Path(__file__).resolve().parent / "cli_fixture"
FIELDS = [
    "name",
    "description",
    "effect",
    "permission",
    "approval",
    "compensation",
    "requires",
    "replay",
    "input_schema",
    "output_schema",
]


@pytest.fixture
def fixture_path(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Register the test connectors in this process and for child processes; return the env."""
    monkeypatch.syspath_prepend(str(FIXTURE))
    monkeypatch.delenv("VAULT_TOKEN", raising=False)
    env = {k: v for k, v in os.environ.items() if k != "VAULT_TOKEN"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FIXTURE), os.environ.get("PYTHONPATH")]))
    return env


def script(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"console script {name} is not installed (pip install -e packages/reversi-core)"
    return path


def run_cli(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script("reversi-connectors"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def one_error_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    return lines[0]


# -- manifests ---------------------------------------------------------------------------------


def test_manifests_json_round_trips_into_a_registry(
    fixture_path: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", "note", "--format", "json"]) == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert [m["name"] for m in data] == [
        "note.crash",
        "note.create",
        "note.delete",
        "note.flaky",
        "note.publish",
        "note.read",
    ]
    for m in data:
        assert list(m) == FIELDS
    by_name = {m["name"]: m for m in data}
    assert by_name["note.create"]["compensation"] == {
        "tool": "note.delete",
        "argument_map": {"name": "args.name"},
        "resources": ["note:{args.name}"],
    }
    assert by_name["note.flaky"]["compensation"]["resources"] is None  # declares none
    assert by_name["note.delete"]["compensation"] is None
    assert by_name["note.publish"]["approval"] == "always"
    assert by_name["note.read"]["output_schema"]["required"] == ["name", "text"]
    assert by_name["note.create"]["output_schema"]["additionalProperties"] is False
    registry = Registry.from_manifests(data)
    assert registry.get("note.create").effect.value == "reversible"


def test_manifests_default_format_is_json(
    fixture_path: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", "vault"]) == 0
    assert [m["name"] for m in json.loads(capsys.readouterr().out)] == ["vault.put", "vault.remove"]


def test_manifests_all_yaml_needs_no_credentials(
    fixture_path: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert "VAULT_TOKEN" not in os.environ
    assert main(["manifests", "all", "--format", "yaml"]) == 0
    text = capsys.readouterr().out
    data = yaml.safe_load(text)
    names = [m["name"] for m in data]
    assert {"note.create", "vault.put", "vault.remove"} <= set(names)
    assert list(data[0])[: len(FIELDS)] == FIELDS  # field order kept (sort_keys=False)
    Registry.from_manifests(data)


def test_manifests_console_script_yaml(fixture_path: dict[str, str]) -> None:
    proc = run_cli(fixture_path, "manifests", "note", "--format", "yaml")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    data = yaml.safe_load(proc.stdout)
    assert Registry.from_manifests(data).get("note.flaky").compensation is not None


def test_manifests_of_an_unknown_connector_lists_installed_ones(
    fixture_path: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = one_error_line(captured.err)
    assert line.startswith("reversi-connectors: error: unknown connector 'nope'")
    assert "installed:" in line
    assert "note" in line
    assert "vault" in line


def test_serve_of_an_unknown_connector_fails_in_one_line(fixture_path: dict[str, str]) -> None:
    proc = run_cli(fixture_path, "serve", "nope")
    assert proc.returncode == 2
    assert "unknown connector 'nope'" in one_error_line(proc.stderr)
    assert proc.stdout == ""


def test_bad_format_is_a_usage_error(
    fixture_path: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", "note", "--format", "toml"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("reversi-connectors: error:")
    assert "toml" in line


def test_help_lists_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "exit status" in out
    assert "serve" in out
    assert "compensate" in out


# -- credentials are never flags ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["serve", "vault", "--token", "s3cr3t-value"], ["VAULT_TOKEN"]),
        (["serve", "vault", "--token=s3cr3t-value"], ["VAULT_TOKEN"]),
        (["manifests", "vault", "--api-key", "s3cr3t-value"], ["VAULT_TOKEN"]),
        (["serve", "--password", "s3cr3t-value", "vault"], ["VAULT_TOKEN"]),
        (["compensate", "--secret", "s3cr3t-value"], ["VAULT_TOKEN"]),
        (["serve", "note", "--vault-token", "s3cr3t-value"], ["takes no credentials"]),
        (["serve", "nope", "--token", "s3cr3t-value"], ["credential variable"]),
    ],
)
def test_credential_flags_are_refused_naming_the_variable(
    fixture_path: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    names: list[str],
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert "is not accepted" in line
    assert "environment" in line
    for name in names:
        assert name in line
    assert "s3cr3t-value" not in captured.err + captured.out


def test_token_flag_refused_by_the_console_script(fixture_path: dict[str, str]) -> None:
    proc = run_cli(fixture_path, "serve", "vault", "--token", "abc123")
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert "--token is not accepted" in line
    assert "set VAULT_TOKEN" in line
    assert "Traceback" not in proc.stderr


# -- compensate ------------------------------------------------------------------------------


def call(tool: str, args: dict[str, Any], key: str = "reversi-run_x-3-undo") -> str:
    return json.dumps(
        {"tool": tool, "args": args, "idempotency_key": key, "run_id": "run_x", "step": 3}
    )


def test_compensate_success_prints_the_result(fixture_path: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("hello")
    proc = run_cli(
        fixture_path,
        "compensate",
        "--root",
        str(tmp_path),
        stdin=call("note.delete", {"name": "a"}, key="reversi-run_x-3-undo"),
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"name": "a", "deleted": True}
    assert not (tmp_path / "notes" / "a.txt").exists()
    assert (tmp_path / "last-key").read_text() == "reversi-run_x-3-undo"


def test_compensate_in_process(
    fixture_path: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(call("note.delete", {"name": "gone"})))
    assert main(["compensate", "--root", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "gone", "deleted": False}


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        ("{not json", "stdin is not valid JSON"),
        ("", "stdin is not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"tool": "note.delete"}', "args: missing"),
        (
            '{"tool": "note.delete", "args": {}, "idempotency_key": "k", "run_id": "r", '
            '"step": "3"}',
            "step: expected int",
        ),
    ],
)
def test_compensate_refuses_malformed_input(
    fixture_path: dict[str, str], tmp_path: Path, stdin: str, expected: str
) -> None:
    proc = run_cli(fixture_path, "compensate", "--root", str(tmp_path), stdin=stdin)
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert line.startswith("reversi-connectors: error:")
    assert expected in line
    assert proc.stdout == ""


def test_compensation_failure_reason_is_the_last_stderr_line(
    fixture_path: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / ".locked").write_text("")
    proc = run_cli(
        fixture_path,
        "compensate",
        "--root",
        str(tmp_path),
        stdin=call("note.delete", {"name": "a"}),
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == "note store is locked (remove .locked)"
    assert proc.stdout == ""


def test_compensation_failure_is_scrubbed(fixture_path: dict[str, str], tmp_path: Path) -> None:
    env = dict(fixture_path, VAULT_TOKEN="vault-token-0123456789")
    proc = run_cli(
        env,
        "compensate",
        "--root",
        str(tmp_path),
        stdin=call("vault.remove", {"name": "forbidden"}),
    )
    assert proc.returncode == 1
    last = proc.stderr.splitlines()[-1]
    assert last == "403 Forbidden for token [REDACTED]"
    assert "vault-token-0123456789" not in proc.stderr + proc.stdout


def test_compensation_for_a_connector_without_its_credential(
    fixture_path: dict[str, str], tmp_path: Path
) -> None:
    proc = run_cli(
        fixture_path,
        "compensate",
        "--root",
        str(tmp_path),
        stdin=call("vault.remove", {"name": "x"}),
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "vault.remove: VAULT_TOKEN is not set; the vault connector is enabled only when it is"
    )


def test_compensation_with_the_credential_set_succeeds(
    fixture_path: dict[str, str], tmp_path: Path
) -> None:
    env = dict(fixture_path, VAULT_TOKEN="vault-token-0123456789")
    proc = run_cli(
        env, "compensate", "--root", str(tmp_path), stdin=call("vault.remove", {"name": "x"})
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"name": "x", "removed": True}


def test_compensation_with_arguments_the_tool_refuses(
    fixture_path: dict[str, str], tmp_path: Path
) -> None:
    proc = run_cli(
        fixture_path,
        "compensate",
        "--root",
        str(tmp_path),
        stdin=call("note.delete", {"name": "Not Valid"}),
    )
    assert proc.returncode == 1
    assert "invalid arguments for note.delete" in proc.stderr.splitlines()[-1]


def _serve_on(stdin: int, stderr: int, env: dict[str, str], root: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [script("reversi-connectors"), "serve", "note", "--root", str(root)],
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=env,
    )


def _drain(leader: int) -> str:
    said = b""
    with suppress(OSError):  # EIO once the terminal's other end is closed and drained
        while chunk := os.read(leader, 4096):
            said += chunk
    return said.decode()


def test_serve_says_what_it_is_on_a_terminal_only(
    fixture_path: dict[str, str], tmp_path: Path
) -> None:
    import pty

    # typed into by a person: stdin and stderr are the terminal
    leader, follower = pty.openpty()
    try:
        proc = _serve_on(follower, follower, fixture_path, tmp_path)
        os.write(leader, b"\x04")  # Ctrl-D at the start of a line: the end of input
        assert proc.wait(timeout=60) == 0
        os.close(follower)
        text = _drain(leader)
    finally:
        os.close(leader)
    assert "serving the note connector over MCP on stdin/stdout" in text
    assert "Ctrl-D" in text
    assert "Ctrl-C" in text
    # started by a client (reversi-gateway run from a terminal passes its stderr on): stdin
    # is the client's pipe, so nobody is typing and there is nothing to say
    leader, follower = pty.openpty()
    try:
        proc = _serve_on(subprocess.DEVNULL, follower, fixture_path, tmp_path)
        assert proc.wait(timeout=60) == 0
        os.close(follower)
        assert _drain(leader) == ""
    finally:
        os.close(leader)
    log = tmp_path / "stderr.log"
    with log.open("wb") as err:
        assert _serve_on(subprocess.DEVNULL, err.fileno(), fixture_path, tmp_path).wait(60) == 0
    assert log.read_text() == ""  # a client's pipe gets no banner
