"""The second oracle: every answer FakeGitHub gives the connector fits githubkit's models.

The connector is driven against the fake through every tool: the certification fixture's
EXAMPLES and FAILURES, more refusals (issues disabled, a missing repository, an empty
repository), and each tool refused for a wrong token, a read-only token, an exhausted
primary rate limit and a secondary rate limit. Every exchange is recorded on the wire
(``_github_oracle.RecordingTransport``) and checked against the model githubkit, generated
from GitHub's OpenAPI description for API version 2022-11-28, gives its route and status
(``_github_oracle.problems``). A fake changed on purpose to drift from GitHub fails, and
the failure names the route and the field. See docs/connectors/github.md ("The second
oracle").
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from githubkit_schemas.v2022_11_28.models import IssueComment

from reversi_connector_github import GithubConnector
from reversi_connector_github.testing import (
    EXAMPLES,
    FAILURES,
    NO_ISSUES_REPO,
    OWNER,
    REPO,
    SEEDED_COMMENT_ID,
    SHA_FEATURE,
    FakeGitHub,
    seed_example,
)
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.testing import Example, FakeRequest, FakeResponse, FakeServer

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _github_oracle import (  # noqa: E402 - found only after the tests folder is put on sys.path above
    ROUTES,
    Exchange,
    RecordingTransport,
    Route,
    problems,
    route_of,
)

TOKEN = "ghp_oracleToken_0123456789abcdefXYZ"
READ_ONLY_TOKEN = "ghp_oracleReadOnly_0123456789abcdefXYZ"
WRONG_TOKEN = "ghp_notKnownToTheFake_0123456789abcdef"

Call = tuple[str, Example]
Prepare = Callable[[FakeGitHub], None]


def _at(**more: Any) -> dict[str, Any]:
    return {"owner": OWNER, "repo": REPO, **more}


def _missing_repo(**more: Any) -> dict[str, Any]:
    return {"owner": OWNER, "repo": "missing", **more}


def _no_issues(**more: Any) -> dict[str, Any]:
    return {"owner": OWNER, "repo": NO_ISSUES_REPO, **more}


MORE_FAILURES: list[Call] = [
    ("github.add_comment", _no_issues(issue_number=1, body="x")),
    ("github.add_labels", _no_issues(issue_number=1, labels=["bug"])),
    ("github.close_issue", _no_issues(issue_number=1)),
    ("github.remove_labels", _no_issues(issue_number=1, labels=["bug"])),
    ("github.delete_comment", _missing_repo(comment_id=SEEDED_COMMENT_ID)),
    ("github.create_branch", _missing_repo(branch="agent/x", sha=SHA_FEATURE)),
    ("github.create_branch", _missing_repo(branch="agent/x", from_branch="main")),
    ("github.delete_branch", _missing_repo(branch="dev")),
]
"""Refusals the certification fixture does not make: 410 and 404 on the other routes."""


def _refused() -> list[Call]:
    """Each tool's main example, and a branch made from a branch (the one read of a ref)."""
    main = [(tool, examples[0]) for tool, examples in sorted(EXAMPLES.items())]
    return [*main, ("github.create_branch", _at(branch="agent/y", from_branch="dev"))]


def _empty_repository(fake: FakeGitHub) -> None:
    fake.repo(OWNER, REPO).commits.clear()


def _exhausted(fake: FakeGitHub) -> None:
    fake.exhaust_rate_limit()


def _secondary_limit(fake: FakeGitHub) -> None:
    fake.secondary_rate_limit = True


@dataclass
class _Context:
    """What the certification fixture's argument builders are given (ExampleContext)."""

    handle: FakeServer
    connector: GithubConnector
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def call(self, tool: str, args: Any) -> dict[str, Any]:
        result = await self.connector.call(tool, args)
        self.results[tool] = result
        return result


async def _run(
    calls: Sequence[Call],
    *,
    fake_class: type[FakeGitHub] = FakeGitHub,
    token: str = TOKEN,
    prepare: Prepare | None = None,
) -> list[Exchange]:
    """Make ``calls`` on a freshly seeded fake; return every exchange, refusals included."""
    fake = fake_class(token=TOKEN, read_only_tokens=[READ_ONLY_TOKEN])
    seed_example(fake)
    if prepare is not None:
        prepare(fake)
    exchanges: list[Exchange] = []
    with FakeServer(fake) as server:
        base_url = fake.base_url(server)
        connector = GithubConnector(
            token, base_url=base_url, transport=RecordingTransport(base_url, exchanges)
        )
        ctx = _Context(server, connector)
        try:
            for tool, example in calls:
                try:
                    args = await example(ctx) if callable(example) else example
                    await ctx.call(tool, args)
                except (ToolError, EffectUncertainError):
                    pass  # a refusal is an answer to check like any other
        finally:
            await connector.aclose()
    return exchanges


async def _drive() -> dict[str, list[Exchange]]:
    connector: list[Exchange] = []
    failing = {tool: [f.args for f in failures] for tool, failures in FAILURES.items()}
    for examples in (EXAMPLES, failing):
        # a tool's examples in turn on one backend (certification gives each its own; these
        # examples do not get in each other's way, and one backend per tool saves seconds)
        for tool, args in sorted(examples.items()):
            connector += await _run([(tool, example) for example in args])
    connector += await _run(MORE_FAILURES)
    connector += await _run(
        [("github.create_branch", _at(branch="agent/x", sha=SHA_FEATURE))],
        prepare=_empty_repository,
    )
    connector += await _run(_refused(), token=WRONG_TOKEN)
    connector += await _run(_refused(), token=READ_ONLY_TOKEN)
    connector += await _run(_refused(), prepare=_exhausted)
    connector += await _run(_refused(), prepare=_secondary_limit)
    return {"connector": connector}


@pytest.fixture(scope="module")
def exchanges() -> dict[str, list[Exchange]]:
    """Every exchange of the drive, by who made it ("connector")."""
    return anyio.run(_drive)


def test_every_answer_the_fake_gives_fits_githubkits_model_of_its_route(
    exchanges: dict[str, list[Exchange]],
) -> None:
    every = [e for made in exchanges.values() for e in made]
    found = Counter(problem for exchange in every for problem in problems(exchange))
    assert not found, "FakeGitHub's answers drift from GitHub's description:\n" + "\n".join(
        f"{problem} [x{count}]" for problem, count in sorted(found.items())
    )
    checked = {found[0] for found in map(route_of, every) if found is not None}
    assert checked == set(ROUTES)  # and every route's answers were among them


def _statuses(made: Sequence[Exchange]) -> dict[Route, set[int]]:
    seen: dict[Route, set[int]] = {}
    for exchange in made:
        found = route_of(exchange)
        if found is not None:
            seen.setdefault(found[0], set()).add(exchange.status)
    return seen


def test_every_route_the_connector_calls_was_checked_on_success_and_refusal(
    exchanges: dict[str, list[Exchange]],
) -> None:
    unrouted = [str(e) for e in exchanges["connector"] if route_of(e) is None]
    assert unrouted == [], "the connector called routes the oracle has no model for"
    seen = _statuses(exchanges["connector"])
    assert set(seen) == set(ROUTES), {str(r) for r in set(ROUTES) ^ set(seen)}
    for route, statuses in seen.items():
        assert route.ok in statuses, f"{route}: no success answer was checked"
        assert any(s >= 400 for s in statuses), f"{route}: no error answer was checked"
        # a read-only token or a rate limit reaches every route; a wrong token only the
        # first request of each tool (add_labels' write comes after a read that fails)
        assert 403 in statuses, f"{route}: no refusal for a token or a rate limit was checked"
    errors = {s for statuses in seen.values() for s in statuses if s >= 400}
    assert {401, 403, 404, 409, 410, 422} <= errors


def _first(made: Sequence[Exchange], method: str, template: str, status: int) -> Exchange:
    route = _route(method, template)
    return next(
        e for e in made if (found := route_of(e)) and found[0] is route and e.status == status
    )


def test_the_oracle_refuses_what_githubs_description_does_not_allow(
    exchanges: dict[str, list[Exchange]],
) -> None:
    made = exchanges["connector"]
    issue = "/repos/{owner}/{repo}/issues/{issue_number}"
    created = _first(made, "POST", "/repos/{owner}/{repo}/issues", 201)
    deleted = _first(made, "DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}", 204)
    read = _first(made, "GET", issue, 200)
    assert problems(created) == problems(deleted) == problems(read) == []

    unknown = dataclasses.replace(read, path="/repos/octo/hello/pulls/1")
    assert problems(unknown) == [
        "GET /repos/octo/hello/pulls/1 -> 200: no route of the oracle "
        "(add it to ROUTES with githubkit's models)"
    ]
    assert problems(dataclasses.replace(created, status=200)) == [
        "POST /repos/{owner}/{repo}/issues -> 200: the documented success status is 201"
    ]
    assert problems(dataclasses.replace(deleted, body=b"{}")) == [
        "DELETE /repos/{owner}/{repo}/issues/comments/{comment_id} -> 204: a 204 with a body"
    ]
    # the request side: githubkit checks what the connector sent against the description
    untitled = dataclasses.replace(created, request_body=b'{"labels": "bug"}')
    assert [p for p in problems(untitled) if "request body" in p] == [
        "POST /repos/{owner}/{repo}/issues: githubkit refuses the connector's request body: "
        "title: Field required; labels: Input should be a valid list (got 'bug')"
    ]
    # a table that disagrees with githubkit (another model, operation or error model) is
    # caught by the replay through githubkit's client
    wrong = dataclasses.replace(_route("GET", issue), model=IssueComment)
    assert (
        f"{wrong} -> 200: githubkit parses it as Issue, not the IssueComment ROUTES names"
        in problems(read, routes=[wrong])
    )
    elsewhere = dataclasses.replace(_route("GET", issue), operation="issues.list_labels_on_issue")
    assert problems(read, routes=[elsewhere]) == [
        f"{elsewhere}: githubkit's issues.list_labels_on_issue sent GET "
        "/repos/octo/hello/issues/1/labels, not GET /repos/octo/hello/issues/1"
    ]
    missing = _first(made, "GET", issue, 404)
    undeclared = dataclasses.replace(_route("GET", issue), errors={})
    assert problems(missing, routes=[undeclared]) == [
        f"{undeclared} -> 404: githubkit declares BasicError for it; "
        "add it to the route's errors in ROUTES"
    ]


# -- a fake that drifted from GitHub fails the oracle ---------------------------------


def _route(method: str, template: str) -> Route:
    return next(r for r in ROUTES if (r.method, r.template) == (method, template))


def _drifted(route: Route, status: int, change: Callable[[Any], Any]) -> type[FakeGitHub]:
    """A FakeGitHub whose answers with ``status`` on ``route`` pass through ``change``."""

    class Drifted(FakeGitHub):
        def dispatch(self, request: FakeRequest) -> FakeResponse:
            response = super().dispatch(request)
            if (
                request.method == route.method
                and route.pattern.fullmatch(request.target.split("?")[0])
                and response.status == status
                and response.json is not None
            ):
                return dataclasses.replace(response, json=change(copy.deepcopy(response.json)))
            return response

    return Drifted


def _without(key: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(body: dict[str, Any]) -> dict[str, Any]:
        del body[key]
        return body

    return change


def _number_as_text(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "number": str(body["number"])}


def _list_as_object(body: list[Any]) -> dict[str, Any]:
    return {"labels": body}


DRIFTS = [
    pytest.param(
        ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", 201, _without("id")),
        ("github.add_comment", _at(issue_number=1, body="Seen.")),
        ["IssueComment (strict): id: Field required", "IssueComment (githubkit): id:"],
        id="comment-without-id",
    ),
    pytest.param(
        ("GET", "/repos/{owner}/{repo}/issues/{issue_number}", 200, _number_as_text),
        ("github.get_issue", _at(issue_number=1)),
        ["Issue (strict): number: Input should be a valid integer"],
        id="number-as-string",
    ),
    pytest.param(
        ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/labels", 200, _list_as_object),
        ("github.add_labels", _at(issue_number=1, labels=["enhancement"])),
        ["list[Label] (strict): (body): Input should be a valid array"],
        id="label-list-as-object",
    ),
    pytest.param(
        ("POST", "/repos/{owner}/{repo}/git/refs", 422, _without("documentation_url")),
        ("github.create_branch", _at(branch="dev", sha=SHA_FEATURE)),
        ["ValidationError (strict): documentation_url: Field required"],
        id="validation-error-without-documentation-url",
    ),
]


@pytest.mark.parametrize(("drift", "call", "expected"), DRIFTS)
def test_a_fake_that_drifted_fails_the_oracle_naming_route_and_field(
    drift: tuple[str, str, int, Callable[[Any], Any]], call: Call, expected: list[str]
) -> None:
    method, template, status, change = drift
    route = _route(method, template)
    faithful = anyio.run(lambda: _run([call]))
    drifted = anyio.run(lambda: _run([call], fake_class=_drifted(route, status, change)))
    assert [p for e in faithful for p in problems(e)] == []
    found = [p for e in drifted for p in problems(e)]
    assert found, f"the oracle accepted a drifted {route} -> {status}"
    assert all(p.startswith(f"{route} -> {status}: ") for p in found), found
    for fragment in expected:
        assert any(fragment in p for p in found), (fragment, found)


def test_githubkit_alone_would_coerce_a_number_sent_as_text() -> None:
    """Why the oracle also validates strictly: githubkit's own parse is lax."""
    route = _route("GET", "/repos/{owner}/{repo}/issues/{issue_number}")
    drifted = anyio.run(
        lambda: _run(
            [("github.get_issue", _at(issue_number=1))],
            fake_class=_drifted(route, 200, _number_as_text),
        )
    )
    found = [p for e in drifted for p in problems(e)]
    assert [p for p in found if "(strict)" in p] != []
    assert [p for p in found if "(githubkit)" in p] == []
