"""Shared by the console's tests: a console app over a journal, logged in."""

from __future__ import annotations

import re
from typing import Any

from starlette.testclient import TestClient

from reversi_core.console import ConsoleConfig, create_app
from reversi_core.journal import Journal

TOKEN = "console-test-token-0123456789"


def console_client(journal: Journal, location: str, **config: Any) -> TestClient:
    """A TestClient of a console over ``journal``, not logged in yet."""
    app = create_app(ConsoleConfig(journal=journal, location=location, token=TOKEN, **config))
    return TestClient(app, base_url="http://testserver")


def log_in(client: TestClient) -> None:
    answer = client.get(f"/?token={TOKEN}", follow_redirects=False)
    assert answer.status_code == 303, answer.text


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)
