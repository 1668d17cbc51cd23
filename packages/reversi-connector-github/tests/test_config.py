"""Building the connector: environment, base URL (GitHub Enterprise Server), headers, client life."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from reversi_connector_github import API_VERSION, DEFAULT_BASE_URL, GithubConnector
from reversi_connector_github.testing import FakeGitHub, seed_example
from reversi_core.errors import ConfigurationError, ToolError
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer


def at(**more: Any) -> dict[str, Any]:
    return {"owner": "octo", "repo": "hello", **more}


def test_from_env_needs_github_token() -> None:
    for environ in ({}, {"GITHUB_TOKEN": ""}, {"GITHUB_TOKEN": "   "}):
        with pytest.raises(ConfigurationError, match="GITHUB_TOKEN"):
            GithubConnector.from_env(environ)


def test_from_env_reads_the_token_and_the_enterprise_base_url() -> None:
    plain = GithubConnector.from_env({"GITHUB_TOKEN": "ghp_env_token_0001"}, root=".")
    assert plain.base_url == DEFAULT_BASE_URL
    ghes = GithubConnector.from_env(
        {"GITHUB_TOKEN": "ghp_env_token_0001", "GITHUB_BASE_URL": "https://ghe.example.com/api/v3/"}
    )
    assert ghes.base_url == "https://ghe.example.com/api/v3"
    chosen = GithubConnector.from_env(
        {"GITHUB_TOKEN": "ghp_env_token_0001", "GITHUB_BASE_URL": "https://ignored.example"},
        base_url="https://ghe.other.example/api/v3",
        timeouts=Timeouts(connect=1, read=2, total=3),
        backup_dir="/ignored",
    )
    assert chosen.base_url == "https://ghe.other.example/api/v3"
    assert chosen.timeouts == Timeouts(connect=1, read=2, total=3)


@pytest.mark.parametrize(
    "base_url",
    [
        "ftp://api.github.com",
        "api.github.com",
        "https://user:hunter2secret@ghe.example.com/api/v3",
        "https://ghe.example.com/api/v3?x=1",
        "https://ghe.example.com/api/v3#frag",
        "",
    ],
)
def test_a_malformed_base_url_is_refused_without_repeating_it(base_url: str) -> None:
    with pytest.raises(ConfigurationError, match="base_url") as caught:
        GithubConnector("ghp_some_token_0001", base_url=base_url)
    assert "hunter2secret" not in str(caught.value)


@pytest.mark.parametrize("token", ["", "   ", "ghp_abc def", "ghp_abc\nX-Evil: 1"])
def test_a_malformed_token_is_refused_without_repeating_it(token: str) -> None:
    with pytest.raises(ConfigurationError, match="token") as caught:
        GithubConnector(token)
    if token.strip():
        assert token not in str(caught.value)


@pytest.mark.anyio
async def test_every_request_carries_the_token_the_media_type_and_the_api_version(
    github: GithubConnector, server: FakeServer, token: str
) -> None:
    await github.call("github.get_issue", at(issue_number=1))
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {token}"
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["x-github-api-version"] == API_VERSION == "2022-11-28"
    assert request.headers["user-agent"].startswith("reversi/")


@pytest.mark.anyio
async def test_an_enterprise_server_prefix_is_kept_in_every_request(token: str) -> None:
    fake = FakeGitHub(token=token, prefix="/api/v3")
    seed_example(fake)
    with FakeServer(fake) as server:
        github = GithubConnector(token, base_url=f"{server.url}/api/v3/")
        issue = await github.call("github.get_issue", at(issue_number=1))
        made = await github.call("github.create_branch", at(branch="b/1", from_branch="dev"))
        await github.call("github.delete_branch", at(branch="b/1"))
        await github.aclose()
        assert issue["title"] == "Crash on start"
        assert made["sha"] == fake.repo("octo", "hello").branches["dev"]
        assert [r.target.split("?")[0] for r in server.requests] == [
            "/api/v3/repos/octo/hello/issues/1",
            "/api/v3/repos/octo/hello/git/ref/heads/dev",
            "/api/v3/repos/octo/hello/git/refs",
            "/api/v3/repos/octo/hello/git/refs/heads/b/1",
        ]
        # without the prefix the same server has no such routes
        bare = GithubConnector(token, base_url=server.url)
        with pytest.raises(ToolError, match="HTTP 404"):
            await bare.call("github.get_issue", at(issue_number=1))
        await bare.aclose()


def test_the_client_is_made_in_the_first_call_and_again_after_close(
    fake: FakeGitHub, server: FakeServer
) -> None:
    github = GithubConnector(fake.token, base_url=server.url)
    assert github._http is None  # nothing is opened before the first call
    clients: list[object] = []

    async def one_call() -> None:
        await github.call("github.get_issue", at(issue_number=1))
        clients.append(github._http)
        await github.aclose()
        assert github._http is None
        await github.aclose()  # twice is fine

    anyio.run(one_call)
    anyio.run(one_call)  # a fresh client in a fresh loop
    assert len({id(c) for c in clients}) == 2
    assert len(server.requests) == 2


def test_a_client_left_open_by_an_ended_loop_is_replaced_not_reused() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json={"number": 1, "title": "t", "labels": []})

    github = GithubConnector(
        "ghp_mock_token_0001",
        base_url="https://ghe.example/api/v3",
        transport=httpx.MockTransport(answer),
    )
    clients: list[object] = []

    async def one_call() -> None:
        await github.call("github.get_issue", at(issue_number=1))
        clients.append(github._http)

    anyio.run(one_call)
    anyio.run(one_call)  # no aclose in between: the first loop's client must not be used
    assert clients[0] is not clients[1]
    assert seen == ["/api/v3/repos/octo/hello/issues/1"] * 2
    anyio.run(github.aclose)
