"""The token travels only in the Authorization header: never in a URL, body, result or error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reversi_connector_github import GithubConnector
from reversi_connector_github.testing import EXAMPLES, FAILURES, FakeGitHub
from reversi_core.errors import ReversiError
from reversi_core.testing import FakeRequest, FakeResponse, FakeServer, Fault

pytestmark = pytest.mark.anyio


async def prepared(github: GithubConnector, example: Any) -> dict[str, Any]:
    """The arguments of a fixture example (builders make their setup calls on ``github``)."""
    if not callable(example):
        return dict(example)

    class Ctx:
        handle = None
        connector = github

        def __init__(self) -> None:
            self.results: dict[str, dict[str, Any]] = {}

        async def call(self, tool: str, args: Any) -> dict[str, Any]:
            result = await github.call(tool, dict(args))
            self.results[tool] = result
            return result

    return dict(await example(Ctx()))


def assert_clean(server: FakeServer, token: str, texts: list[str]) -> None:
    for text in texts:
        assert token not in text
    assert server.requests
    for request in server.requests:
        assert token not in request.target
        assert token not in request.text
        assert request.headers["authorization"] == f"Bearer {token}"


async def test_no_example_or_failure_leaks_the_token(
    github: GithubConnector, server: FakeServer, token: str
) -> None:
    texts: list[str] = []
    failing = [
        (tool, [failure.args for failure in failures]) for tool, failures in FAILURES.items()
    ]
    for tool, examples in [*EXAMPLES.items(), *failing]:
        for example in examples:
            try:
                texts.append(json.dumps(await github.call(tool, await prepared(github, example))))
            except ReversiError as exc:
                texts.append(f"{exc} {getattr(exc, 'code', '')}")
    assert_clean(server, token, texts)


@pytest.mark.parametrize(
    "fault",
    [
        Fault.status(500, json={"message": "boom"}),
        Fault.status(401, json={"message": "Bad credentials"}),
        Fault.status(403, json={"message": "x"}, headers={"x-ratelimit-remaining": "0"}),
        Fault.drop_after_read(),
    ],
    ids=["500", "401", "403-rate", "drop"],
)
async def test_no_error_leaks_the_token(
    github: GithubConnector, server: FakeServer, token: str, fault: Fault
) -> None:
    texts = []
    server.faults.add(fault, times=None)
    for tool, examples in EXAMPLES.items():
        example = examples[0]
        if callable(example):
            continue
        with pytest.raises(ReversiError) as caught:
            await github.call(tool, dict(example))
        texts.append(f"{caught.value} {getattr(caught.value, 'code', '')}")
    server.faults.clear()
    assert_clean(server, token, texts)


class EchoingGitHub(FakeGitHub):
    """A GitHub that quotes the caller's Authorization header back (in errors and results)."""

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        header = request.headers.get("authorization", "")
        if request.method == "GET":
            return FakeResponse(
                200,
                json={"number": 1, "title": f"seen {header}", "labels": [{"name": header}]},
                headers={"x-echo": header},
            )
        return FakeResponse(422, json={"message": f"cannot accept {header}", "errors": [header]})


async def test_a_server_quoting_the_token_back_cannot_leak_it(token: str) -> None:
    fake = EchoingGitHub(token=token)
    with FakeServer(fake) as server:
        github = GithubConnector(token, base_url=server.url)
        result = await github.call(
            "github.get_issue", {"owner": "o", "repo": "r", "issue_number": 1}
        )
        assert token not in json.dumps(result)
        with pytest.raises(ReversiError) as caught:
            await github.call("github.create_issue", {"owner": "o", "repo": "r", "title": "t"})
        assert "HTTP 422" in str(caught.value)
        assert token not in str(caught.value)
        await github.aclose()
