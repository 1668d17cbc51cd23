"""reversi console driven in headless Chromium (Debian's chromium and chromium-driver,
through selenium): list runs, open a timeline, approve a call a real gateway waits on
(its client cannot answer elicitations), roll back and see it complete, resolve an
uncertain step. A screenshot of the timeline goes to $REVERSI_ARTIFACTS_DIR, else
artifacts/ at the repository root. In a file of its own: one xdist worker, one browser.
The browser is never skipped: CI installs it (.ci/run, noxfile.py); without it the
tests fail saying so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memconnector import MemConnector
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from reversi_core import Run, registry_for
from reversi_core.connector import executor_for
from reversi_core.journal import open_journal

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
TOKEN = "browser-test-token-0123456789abcdef"


def _script(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else name


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session; fails (never skips) without one."""
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.fail(
            f"the console's browser tests need {CHROMIUM} and {CHROMEDRIVER}: "
            "apt-get install -y chromium chromium-driver (.ci/run does)",
            pytrace=False,
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="reversi-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _artifacts() -> Path:
    path = Path(os.environ.get("REVERSI_ARTIFACTS_DIR") or ROOT / "artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


class Stack:
    """A data directory, an fs root, a console subprocess and its address."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.data = tmp / "data"
        self.root = tmp / "root"
        self.root.mkdir()
        self.manifests = tmp / "manifests"
        self.manifests.mkdir()
        listed = subprocess.run(
            [_script("reversi-connectors"), "manifests", "fs", "--format", "json"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        manifests = json.loads(listed)
        for m in manifests:
            if m["name"] == "fs.write_file":
                m["approval"] = "always"
        (self.manifests / "fs.json").write_text(json.dumps(manifests))
        self.console: subprocess.Popen[str] | None = None
        self.url = ""

    def start_console(self) -> None:
        env = {**os.environ, "REVERSI_CONSOLE_TOKEN": TOKEN}
        self.console = subprocess.Popen(
            [
                _script("reversi"),
                "console",
                "--data",
                str(self.data),
                "--port",
                "0",
                "--compensator-cmd",
                f"{_script('reversi-connectors')} compensate --root {self.root}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        assert self.console.stdout is not None
        line = self.console.stdout.readline()
        assert "?token=" in line, (line, self.console.stderr.read() if self.console.poll() else "")
        self.url = line.split(": ", 1)[1].strip()

    def stop(self) -> None:
        if self.console is not None:
            self.console.terminate()
            self.console.communicate(timeout=10)  # waits, and closes its pipes


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    s = Stack(tmp_path)
    # an uncertain step, journaled by an in-process run, for the page to resolve
    mem = MemConnector()
    with open_journal(s.data) as journal:
        run = Run.start(journal, registry_for([MemConnector]), executor=executor_for([mem]))
        mem.fault("mem.put", "uncertain", message="connection reset mid-request")

        async def play() -> None:
            await run.call("mem.mkdir", {"path": "d"})
            await run.attempt("mem.put", {"key": "d/x", "value": "1"})

        anyio.run(play)
        s.uncertain_run = run.id  # type: ignore[attr-defined]
    s.start_console()
    try:
        yield s
    finally:
        s.stop()


def _gateway_calls(stack: Stack, outcome: dict[str, Any]) -> None:
    """An MCP client without elicitation: a write (needs approval) through the gateway."""
    params = StdioServerParameters(
        command=_script("reversi-gateway"),
        args=[
            "--manifests",
            str(stack.manifests),
            "--data",
            str(stack.data),
            "--upstream-cmd",
            _script("reversi-connectors"),
            "--upstream-arg",
            "serve",
            "--upstream-arg",
            "fs",
            "--upstream-arg",
            "--root",
            "--upstream-arg",
            str(stack.root),
            "--approval-timeout",
            "60",
        ],
        env=dict(os.environ),
    )

    async def client() -> None:
        with (stack.tmp / "gateway.err").open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as c,
            ):
                await c.initialize()
                await c.call_tool("fs.make_dir", {"path": "notes"})
                result = await c.call_tool(
                    "fs.write_file", {"path": "notes/a.txt", "content": "hi"}
                )
                outcome["error"] = result.is_error
                outcome["meta"] = result.meta

    anyio.run(client)


def _wait(browser: Any, css: str, text: str | None = None, timeout: float = 30) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, timeout)
    if text is not None:
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))
    return wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_the_console_in_a_browser(browser: Any, stack: Stack) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    outcome: dict[str, Any] = {}
    calls = threading.Thread(target=_gateway_calls, args=(stack, outcome), daemon=True)
    calls.start()
    browser.get(stack.url)
    assert "token=" not in browser.current_url  # the token left the address
    _wait(browser, "#runs")
    # approve the waiting call: the queue page reloads itself when it arrives
    browser.get(stack.url.split("?")[0] + "approvals")
    button = _wait(browser, "button[id^='approve-']", timeout=60)
    assert "notes/a.txt" in browser.find_element(By.CSS_SELECTOR, ".approval").text
    name = browser.find_element(By.CSS_SELECTOR, ".approval input[name='name']")
    name.clear()
    name.send_keys("ada")
    button.click()
    try:
        _wait(browser, "#decided", "ada")
    except Exception:
        raise AssertionError(browser.page_source[:3000]) from None
    calls.join(60)
    assert not calls.is_alive()
    assert outcome["error"] is False
    assert (stack.root / "notes" / "a.txt").read_text() == "hi"
    # the runs: both listed; open the gateway's timeline
    browser.get(stack.url.split("?")[0])
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs tr.run")
    assert len(rows) == 2
    gateway_run = next(r for r in rows if "reversi-gateway" in r.text)
    gateway_run.find_element(By.CSS_SELECTOR, "a").click()
    _wait(browser, "#steps")
    assert "fs.write_file" in browser.find_element(By.ID, "steps").text
    assert browser.find_elements(By.CSS_SELECTOR, "svg.graph .node")
    shot = _artifacts() / "console-timeline.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    # the plan, then a rollback to completion
    browser.find_element(By.ID, "plan-link").click()
    _wait(browser, "#plan-summary")
    browser.find_element(By.ID, "start-rollback").click()
    _wait(browser, "#outcome", "rollback complete")
    assert not (stack.root / "notes").exists()
    # resolve the other run's uncertain step
    browser.get(stack.url.split("?")[0] + f"runs/{stack.uncertain_run}")  # type: ignore[attr-defined]
    _wait(browser, "#uncertain")
    assert "connection reset mid-request" in browser.find_element(By.ID, "uncertain").text
    button = browser.find_element(By.CSS_SELECTOR, "button[id^='not-applied-']")
    button.click()
    # the old page has #steps too: wait for it to go, then for the new one's text
    WebDriverWait(browser, 30).until(ec.staleness_of(button))
    _wait(browser, "#steps", "uncertain → not applied")
    assert not browser.find_elements(By.ID, "uncertain")
    assert "uncertain → not applied" in browser.find_element(By.ID, "steps").text
