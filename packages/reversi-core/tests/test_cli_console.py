"""``reversi console`` as a command: what it refuses before serving anything (``main()``),
and, as a real process on a free port of 127.0.0.1, the address it prints, which carries
the token and opens the page, while a journal URL's password is printed nowhere."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reversi_core.cli.console import TOKEN_ENV
from reversi_core.cli.reversi import main
from reversi_core.journal import open_journal

SHORT_TOKEN = "tiny-tok-1234"
GIVEN_TOKEN = "a-console-token-of-the-environment-42"


def script(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"console script {name} is not installed (pip install -e packages/reversi-core)"
    return path


def error_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    assert lines[0].startswith("reversi: error: "), lines[0]
    return lines[0]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data directory with a journal and one run; no console token or journal in the env."""
    for name in (TOKEN_ENV, "REVERSI_JOURNAL", "REVERSI_DATA"):
        monkeypatch.delenv(name, raising=False)
    with open_journal(tmp_path / "data") as journal:
        journal.create_run("run_console", ["x:y"], "for the console")
    return tmp_path / "data"


# -- refused before anything listens (main) ---------------------------------------------


def test_a_host_that_is_not_loopback_needs_allow_remote(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for host in ("192.0.2.10", "0.0.0.0", "::"):
        assert main(["console", "--data", str(data), "--host", host, "--port", "0"]) == 2
        line = error_line(capsys.readouterr().err)
        assert f"--host {host} is not a loopback address" in line
        assert "pass --allow-remote" in line
    # with --allow-remote the host is taken: 192.0.2.10 (TEST-NET-1) is no address of this
    # machine, so binding it fails, which shows the check let it through and nothing listens
    argv = ["console", "--data", str(data), "--host", "192.0.2.10", "--port", "0"]
    assert main([*argv, "--allow-remote"]) == 2
    assert "cannot listen on 192.0.2.10:0" in error_line(capsys.readouterr().err)


def test_a_short_token_in_the_environment_is_refused_without_being_shown(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, SHORT_TOKEN)
    assert main(["console", "--data", str(data), "--port", "0"]) == 2
    captured = capsys.readouterr()
    line = error_line(captured.err)
    assert f"${TOKEN_ENV} is too short: give at least 16 characters" in line
    assert SHORT_TOKEN not in captured.err + captured.out
    assert captured.out == ""  # no address printed


def test_a_password_of_a_journal_url_is_not_echoed_when_it_cannot_be_reached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Port 1 of 127.0.0.1 refuses: the error names the journal without its password."""
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    monkeypatch.setenv("REVERSI_JOURNAL", "postgresql://annika-user:pw-not-echoed-7@127.0.0.1:1/j")
    status = main(["console", "--port", "0"])
    captured = capsys.readouterr()
    assert status == 3
    assert "postgresql://127.0.0.1:1/j" in error_line(captured.err)
    assert "pw-not-echoed-7" not in captured.err + captured.out
    assert "annika-user" not in captured.err


# -- a real console process ----------------------------------------------------------------


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Console:
    """``reversi console ... --port 0`` started with ``env``; ``url`` is what it printed."""

    def __init__(
        self, args: list[str], env: dict[str, str], *, sigint_ignored: bool = False
    ) -> None:
        # sigint_ignored: as a background job of a shell without job control starts it
        # (SIGINT's disposition is inherited ignored, and Python then keeps it so)
        self.proc = subprocess.Popen(
            [script("reversi"), "console", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
            preexec_fn=_ignore_sigint if sigint_ignored else None,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        self.first_line = self.proc.stdout.readline() if ready else ""
        if not self.first_line.startswith("reversi console: http://"):
            _, err = self.stop()
            pytest.fail(f"the console printed no address: {self.first_line!r} {err!r}")
        self.url = self.first_line.split(": ", 1)[1].strip()

    def stop(self) -> tuple[str, str]:
        """Stop it; return the rest of its stdout and its stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.communicate(timeout=15)


@pytest.fixture
def started() -> Iterator[list[Console]]:
    """The consoles a test starts, stopped after it however it ends."""
    consoles: list[Console] = []
    yield consoles
    for c in consoles:
        c.stop()


def env_of(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (TOKEN_ENV, "REVERSI_JOURNAL", "REVERSI_DATA")
    }
    return {**env, **extra}


def test_the_printed_address_carries_a_new_token_that_opens_the_page(
    data: Path, started: list[Console]
) -> None:
    console = Console(["--data", str(data)], env_of())
    started.append(console)
    address = urllib.parse.urlsplit(console.url)
    assert address.hostname == "127.0.0.1"
    assert address.port
    assert address.port > 0  # the free port it took, not 0
    [token] = urllib.parse.parse_qs(address.query)["token"]
    assert len(token) >= 16
    base = f"http://127.0.0.1:{address.port}"
    with httpx.Client(base_url=base, timeout=30) as anonymous:
        assert anonymous.get("/").status_code == 401
        assert anonymous.get("/?token=not-the-token-at-all").status_code == 401
    with httpx.Client(base_url=base, timeout=30) as client:
        first = client.get(console.url, follow_redirects=False)
        assert first.status_code == 303
        assert first.headers["location"] == "/"  # the token leaves the address
        page = client.get("/")  # with the cookie the first visit set
        assert page.status_code == 200
        assert "run_console" in page.text
        assert token not in page.text
    # a second console has a token of its own: the first one's does not open it
    other = Console(["--data", str(data)], env_of())
    started.append(other)
    other_port = urllib.parse.urlsplit(other.url).port
    with httpx.Client(base_url=f"http://127.0.0.1:{other_port}", timeout=30) as client:
        assert client.get(f"/?token={token}", follow_redirects=False).status_code == 401
    out, err = console.stop()
    assert token not in out + err  # printed once, in the address


def test_a_journal_url_with_a_password_is_served_and_its_password_printed_nowhere(
    pg_location: str, started: list[Console]
) -> None:
    password = urllib.parse.urlsplit(pg_location).password
    assert password, "the session's PostgreSQL URL carries the superuser's password"
    with open_journal(pg_location) as journal:
        journal.create_run("run_on_pg", ["x:y"], None)
    console = Console([], env_of(REVERSI_JOURNAL=pg_location, **{TOKEN_ENV: GIVEN_TOKEN}))
    started.append(console)
    assert console.url.endswith(f"/?token={GIVEN_TOKEN}")  # the token of the environment
    with httpx.Client(timeout=30) as client:
        assert client.get(console.url, follow_redirects=False).status_code == 303
        base = console.url.split("?", 1)[0].rstrip("/")
        pages = [client.get(base + path) for path in ("/", "/runs/run_on_pg", "/approvals")]
    assert [p.status_code for p in pages] == [200, 200, 200]
    assert "run_on_pg" in pages[0].text
    out, err = console.stop()
    for text in [console.first_line, out, err, *(p.text for p in pages)]:
        assert password not in text
        assert urllib.parse.quote(password, safe="") not in text


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["default", "inherited-ignored"])
def test_sigint_stops_the_console_with_status_130(data: Path, sigint_ignored: bool) -> None:
    """uvicorn handles the SIGINT; the status is 130 whatever SIGINT's disposition was at
    start (ignored, the console exited 0: uvicorn re-raises the signal into SIG_IGN)."""
    console = Console(["--data", str(data)], env_of(), sigint_ignored=sigint_ignored)
    # serving (its address is printed just before uvicorn starts and takes over the signals)
    first = httpx.get(console.url, timeout=30, follow_redirects=False)
    assert first.status_code == 303, first.text
    console.proc.send_signal(signal.SIGINT)
    console.proc.wait(timeout=30)
    _, err = console.stop()
    assert console.proc.returncode == 130, err
    assert "interrupted" in err
