"""FakeGitHub speaks GitHub's wire format: statuses, error bodies, headers, token checks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from reversi_connector_github.testing import DOCS, FakeGitHub
from reversi_core.testing import FakeServer

pytestmark = pytest.mark.anyio

HEADERS = {"User-Agent": "test", "X-GitHub-Api-Version": "2022-11-28"}


@pytest.fixture
async def http(server: FakeServer, token: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=server.url, headers={**HEADERS, "Authorization": f"Bearer {token}"}
    ) as client:
        yield client


async def test_every_answer_carries_the_rate_limit_headers(
    http: httpx.AsyncClient, fake: FakeGitHub
) -> None:
    first = await http.get("/repos/octo/hello/issues/1")
    second = await http.get("/repos/octo/hello/issues/999")
    assert first.status_code == 200
    assert second.status_code == 404
    for resp, used in ((first, 1), (second, 2)):
        assert resp.headers["x-ratelimit-limit"] == "5000"
        assert resp.headers["x-ratelimit-remaining"] == str(5000 - used)
        assert resp.headers["x-ratelimit-used"] == str(used)
        assert resp.headers["x-ratelimit-resource"] == "core"
        assert int(resp.headers["x-ratelimit-reset"]) == fake.rate_reset
    fake.exhaust_rate_limit()
    limited = await http.get("/repos/octo/hello/issues/1")
    assert limited.status_code == 403
    assert limited.headers["x-ratelimit-remaining"] == "0"
    assert limited.json()["message"].startswith("API rate limit exceeded")


async def test_error_bodies_have_githubs_shape(http: httpx.AsyncClient) -> None:
    missing = await http.get("/repos/octo/hello/issues/999")
    assert missing.json() == {"message": "Not Found", "documentation_url": DOCS, "status": "404"}
    unrouted = await http.get("/nowhere")
    assert unrouted.status_code == 404
    assert unrouted.json()["message"] == "Not Found"
    invalid = await http.post("/repos/octo/hello/issues", json={"body": "no title"})
    assert invalid.status_code == 422
    assert invalid.json()["errors"] == [
        {"resource": "Issue", "field": "title", "code": "missing_field"}
    ]
    gone = await http.delete("/repos/octo/hello/git/refs/heads/never")
    assert (gone.status_code, gone.json()["message"]) == (422, "Reference does not exist")


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({"User-Agent": "t"}, 401, "Requires authentication"),
        (
            {"User-Agent": "t", "Authorization": "Bearer ghp_wrong_token_001"},
            401,
            "Bad credentials",
        ),
        ({"User-Agent": "t", "Authorization": "Basic abc"}, 401, "Bad credentials"),
        ({"User-Agent": ""}, 403, "User-Agent"),
        (
            {"User-Agent": "t", "X-GitHub-Api-Version": "1999-01-01", "Authorization": "Bearer x"},
            400,
            "X-GitHub-Api-Version",
        ),
    ],
)
async def test_requests_are_checked_before_any_route_runs(
    server: FakeServer, fake: FakeGitHub, headers: dict[str, str], status: int, message: str
) -> None:
    before = fake.snapshot()
    async with httpx.AsyncClient(base_url=server.url) as client:
        resp = await client.post("/repos/octo/hello/issues", json={"title": "x"}, headers=headers)
    assert resp.status_code == status
    assert message in resp.json()["message"]
    assert fake.snapshot() == before
    assert fake.rate_remaining == fake.rate_limit  # refused requests are not counted


async def test_the_token_scheme_may_be_token_or_bearer(server: FakeServer, token: str) -> None:
    async with httpx.AsyncClient(base_url=server.url, headers={"User-Agent": "t"}) as client:
        for scheme in ("Bearer", "token"):
            resp = await client.get(
                "/repos/octo/hello/issues/1", headers={"Authorization": f"{scheme} {token}"}
            )
            assert resp.status_code == 200


async def test_labels_are_created_when_unknown_and_removal_answers_the_rest(
    http: httpx.AsyncClient, fake: FakeGitHub
) -> None:
    added = await http.post("/repos/octo/hello/issues/1/labels", json={"labels": ["new one"]})
    assert [x["name"] for x in added.json()] == ["bug", "new one"]
    assert added.json()[1]["color"] == "ededed"
    bare = await http.post("/repos/octo/hello/issues/1/labels", json=["enhancement"])
    assert [x["name"] for x in bare.json()] == ["bug", "new one", "enhancement"]
    removed = await http.delete("/repos/octo/hello/issues/1/labels/new%20one")
    assert removed.status_code == 200
    assert [x["name"] for x in removed.json()] == ["bug", "enhancement"]
    again = await http.delete("/repos/octo/hello/issues/1/labels/new%20one")
    assert (again.status_code, again.json()["message"]) == (404, "Label does not exist")
    assert fake.repo("octo", "hello").label("new one") is not None


async def test_refs_follow_the_documented_answers(
    http: httpx.AsyncClient, fake: FakeGitHub
) -> None:
    sha = fake.repo("octo", "hello").branches["main"]
    found = await http.get("/repos/octo/hello/git/ref/heads/main")
    assert found.json()["object"] == {
        "type": "commit",
        "sha": sha,
        "url": found.json()["object"]["url"],
    }
    body: dict[str, Any] = {"ref": "refs/heads/x/y", "sha": sha}
    made = await http.post("/repos/octo/hello/git/refs", json=body)
    assert made.status_code == 201
    assert made.headers["location"].endswith("/git/refs/heads/x/y")
    taken = await http.post("/repos/octo/hello/git/refs", json=body)
    assert (taken.status_code, taken.json()["message"]) == (422, "Reference already exists")
    short = await http.post("/repos/octo/hello/git/refs", json={"ref": "x", "sha": sha})
    assert short.status_code == 422
    deleted = await http.delete("/repos/octo/hello/git/refs/heads/x/y")
    assert deleted.status_code == 204
    default = await http.delete("/repos/octo/hello/git/refs/heads/main")
    assert default.status_code == 422


def test_a_prefix_must_be_a_clean_path() -> None:
    for prefix in ("api/v3", "/api/v3/"):
        with pytest.raises(ValueError, match="prefix"):
            FakeGitHub(prefix=prefix)
