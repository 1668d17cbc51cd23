"""What GitHub's refusals, rate limits and lost answers become."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from reversi_connector_github import GithubConnector, error_code_and_message, is_rate_limited
from reversi_connector_github.testing import SHA_FEATURE, FakeGitHub
from reversi_core.connector import CallContext
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.http import Timeouts
from reversi_core.testing import FakeServer, Fault


def at(**more: Any) -> dict[str, Any]:
    return {"owner": "octo", "repo": "hello", **more}


# -- rate limits are not permission refusals -------------------------------------------


@pytest.mark.anyio
async def test_an_exhausted_primary_rate_limit_is_rate_limited_not_forbidden(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    fake.exhaust_rate_limit()
    before = fake.snapshot()
    for tool, args in (
        ("github.get_issue", at(issue_number=1)),
        ("github.create_issue", at(title="x")),
    ):
        with pytest.raises(ToolError) as caught:
            await github.call(tool, args)
        assert caught.value.status == 403
        assert caught.value.code == "rate_limited"
        assert "HTTP 403" in str(caught.value)
        assert "limit resets at" in str(caught.value)
    assert fake.snapshot() == before
    fake.reset_rate_limit()
    assert (await github.call("github.get_issue", at(issue_number=1)))["number"] == 1


@pytest.mark.anyio
async def test_a_secondary_rate_limit_and_a_429_are_rate_limited(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    fake.secondary_rate_limit = True
    with pytest.raises(ToolError) as caught:
        await github.call("github.add_comment", at(issue_number=1, body="x"))
    assert (caught.value.status, caught.value.code) == (403, "rate_limited")
    assert "retry after 60 s" in str(caught.value)
    fake.secondary_rate_limit = False
    server.faults.add(Fault.status(429, json={"message": "Too Many Requests"}))
    with pytest.raises(ToolError) as caught:
        await github.call("github.get_issue", at(issue_number=1))
    assert (caught.value.status, caught.value.code) == (429, "rate_limited")


@pytest.mark.anyio
async def test_a_plain_403_is_a_permission_refusal(
    fake: FakeGitHub, server: FakeServer, read_only_token: str
) -> None:
    github = GithubConnector(read_only_token, base_url=server.url)
    assert (await github.call("github.get_issue", at(issue_number=1)))["number"] == 1
    with pytest.raises(ToolError, match="HTTP 403") as caught:
        await github.call("github.create_issue", at(title="x"))
    assert caught.value.code == "resource_not_accessible"
    assert read_only_token not in str(caught.value)
    server.faults.add(Fault.status(403, json={"message": "Must have admin rights to Repository."}))
    with pytest.raises(ToolError, match="HTTP 403") as caught:
        await github.call("github.delete_branch", at(branch="dev"))
    assert caught.value.code == "forbidden"
    await github.aclose()


@pytest.mark.anyio
async def test_a_wrong_token_is_401_bad_credentials_without_the_token(
    fake: FakeGitHub, server: FakeServer
) -> None:
    wrong = "ghp_wrongToken_000000000000000000000"
    github = GithubConnector(wrong, base_url=server.url)
    with pytest.raises(ToolError, match="HTTP 401") as caught:
        await github.call("github.get_issue", at(issue_number=1))
    assert caught.value.code == "bad_credentials"
    assert wrong not in str(caught.value)
    await github.aclose()


def test_rate_limit_detection_rules() -> None:
    assert is_rate_limited(429, {}, None)
    assert is_rate_limited(403, {"x-ratelimit-remaining": "0"}, "API rate limit exceeded")
    assert is_rate_limited(403, {"retry-after": "30"}, "slow down")
    assert is_rate_limited(403, {}, "You have exceeded a secondary rate limit.")
    assert not is_rate_limited(403, {"x-ratelimit-remaining": "12"}, "Forbidden")
    assert not is_rate_limited(401, {"x-ratelimit-remaining": "0"}, "Bad credentials")
    assert not is_rate_limited(404, {}, "Not Found")


@pytest.mark.parametrize(
    ("status", "headers", "body", "code", "message"),
    [
        (404, {}, {"message": "Not Found", "documentation_url": "x"}, "not_found", "Not Found"),
        (401, {}, {"message": "Bad credentials"}, "bad_credentials", "Bad credentials"),
        (
            422,
            {},
            {
                "message": "Validation Failed",
                "errors": [{"resource": "Issue", "field": "title", "code": "missing_field"}],
            },
            "validation_failed",
            "Validation Failed: Issue.title: missing_field",
        ),
        (
            422,
            {},
            {"message": "Validation Failed", "errors": ["labels must be strings"]},
            "validation_failed",
            "Validation Failed: labels must be strings",
        ),
        (422, {}, {"message": "Reference does not exist"}, "reference_not_found", None),
        (422, {}, {"message": "Reference already exists"}, "reference_exists", None),
        (410, {}, {"message": "Issues are disabled for this repo"}, "issues_disabled", None),
        (409, {}, {"message": "Git Repository is empty."}, "conflict", None),
        (502, {}, None, "server_error", None),
        (503, {}, "<html>", "server_error", None),
        (
            403,
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "0"},
            {"message": "API rate limit exceeded"},
            "rate_limited",
            "API rate limit exceeded (the core limit resets at 1970-01-01T00:00:00Z)",
        ),
        (
            429,
            {},
            {},
            "rate_limited",
            "rate limit exceeded (wait at least a minute before retrying)",
        ),
    ],
)
def test_error_bodies_map_to_codes(
    status: int, headers: dict[str, str], body: Any, code: str, message: str | None
) -> None:
    got_code, got_message = error_code_and_message(status, httpx.Headers(headers), body)
    assert got_code == code
    if message is not None:
        assert got_message == message


# -- lost answers ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_write_whose_answer_is_lost_is_uncertain_and_a_read_is_not(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    server.faults.add(Fault.drop_after_read(apply=True), method="POST", times=1)
    with pytest.raises(EffectUncertainError, match="may or may not"):
        await github.call("github.create_issue", at(title="lost reply"))
    assert fake.repo("octo", "hello").issues[3].title == "lost reply"  # it was applied
    server.faults.add(Fault.drop_after_read(), method="GET", times=1)
    with pytest.raises(ToolError) as caught:
        await github.call("github.get_issue", at(issue_number=1))
    assert caught.value.code == "connection_lost"


@pytest.mark.anyio
async def test_a_failed_read_before_a_write_is_a_plain_error(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    before = fake.snapshot()
    server.faults.add(Fault.drop_after_read(), method="GET", times=2)
    with pytest.raises(ToolError):
        await github.call("github.add_labels", at(issue_number=1, labels=["documentation"]))
    with pytest.raises(ToolError):
        await github.call("github.create_branch", at(branch="agent/x", from_branch="dev"))
    assert fake.snapshot() == before


@pytest.mark.anyio
async def test_a_silent_server_times_out_by_itself(fake: FakeGitHub, server: FakeServer) -> None:
    github = GithubConnector(
        fake.token, base_url=server.url, timeouts=Timeouts(connect=0.3, read=0.3, total=0.3)
    )
    server.faults.add(Fault.hang(seconds=10), times=None)
    with pytest.raises(EffectUncertainError):
        await github.call("github.create_branch", at(branch="agent/x", sha=SHA_FEATURE))
    with pytest.raises(ToolError) as caught:
        await github.call("github.get_issue", at(issue_number=1))
    assert caught.value.code == "timeout"
    server.faults.clear()
    await github.aclose()


@pytest.mark.anyio
async def test_a_caller_limit_lowers_the_http_limits(fake: FakeGitHub, server: FakeServer) -> None:
    github = GithubConnector(fake.token, base_url=server.url)  # 30 s read limit by default
    server.faults.add(Fault.hang(seconds=10), times=None)
    with pytest.raises(ToolError) as caught:
        await github.call("github.get_issue", at(issue_number=1), CallContext(timeout=0.3))
    assert caught.value.code == "timeout"
    server.faults.clear()
    await github.aclose()


@pytest.mark.anyio
async def test_an_accepted_write_whose_answer_cannot_be_read_is_uncertain() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=[])
        return httpx.Response(201, json={"unexpected": True})

    github = GithubConnector(
        "ghp_mock_token_0001", base_url="https://api.example", transport=httpx.MockTransport(answer)
    )
    for tool, args in (
        ("github.create_issue", at(title="x")),
        ("github.add_comment", at(issue_number=1, body="x")),
        ("github.add_labels", at(issue_number=1, labels=["x"])),
        ("github.create_branch", at(branch="x", sha=SHA_FEATURE)),
    ):
        with pytest.raises(EffectUncertainError, match="cannot be undone automatically"):
            await github.call(tool, args)
    await github.aclose()


@pytest.mark.anyio
async def test_a_read_whose_answer_cannot_be_read_is_a_plain_error() -> None:
    github = GithubConnector(
        "ghp_mock_token_0001",
        base_url="https://api.example",
        transport=httpx.MockTransport(
            lambda request: httpx.Response(200, json=["not", "an issue"])
        ),
    )
    with pytest.raises(ToolError) as caught:
        await github.call("github.get_issue", at(issue_number=1))
    assert caught.value.code == "invalid_response"
    await github.aclose()


@pytest.mark.anyio
async def test_the_rate_limit_header_alone_decides_a_403(
    github: GithubConnector, server: FakeServer
) -> None:
    """A 403 whose message says nothing of limits is a rate limit when the header says so."""
    neutral = {"message": "Forbidden", "documentation_url": "https://docs.github.com/rest"}
    server.faults.add(Fault.status(403, json=neutral, headers={"x-ratelimit-remaining": "0"}))
    with pytest.raises(ToolError) as caught:
        await github.call("github.get_issue", at(issue_number=1))
    assert (caught.value.status, caught.value.code) == (403, "rate_limited")
    server.faults.add(Fault.status(403, json=neutral, headers={"x-ratelimit-remaining": "12"}))
    with pytest.raises(ToolError) as caught:
        await github.call("github.get_issue", at(issue_number=1))
    assert caught.value.status == 403
    assert caught.value.code != "rate_limited"
