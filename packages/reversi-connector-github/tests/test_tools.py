"""Each github tool against the fake: what it does, what it refuses, and how its undo behaves."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from reversi_connector_github import GithubConnector
from reversi_connector_github.testing import (
    SEEDED_COMMENT_ID,
    SHA_DEV,
    SHA_FEATURE,
    FakeGitHub,
)
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.testing import FakeServer, Fault

pytestmark = pytest.mark.anyio


def at(**more: Any) -> dict[str, Any]:
    return {"owner": "octo", "repo": "hello", **more}


def writes(server: FakeServer) -> list[str]:
    return [f"{r.method} {r.path}" for r in server.requests if r.method != "GET"]


# -- get_issue -------------------------------------------------------------------------


async def test_get_issue_reads_without_writing(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    before = fake.snapshot()
    issue = await github.call("github.get_issue", at(issue_number=1))
    assert issue == {
        "owner": "octo",
        "repo": "hello",
        "number": 1,
        "title": "Crash on start",
        "body": "It crashes.",
        "state": "open",
        "state_reason": None,
        "labels": ["bug"],
        "comments": 1,
        "html_url": "https://github.com/octo/hello/issues/1",
        "is_pull_request": False,
    }
    closed = await github.call(
        "github.get_issue", {"owner": "OCTO", "repo": "Hello", "issue_number": 2}
    )
    assert (closed["state"], closed["state_reason"]) == ("closed", "completed")
    assert fake.snapshot() == before
    assert writes(server) == []


@pytest.mark.parametrize(
    ("args", "status", "code"),
    [
        (at(issue_number=999), 404, "not_found"),
        ({"owner": "octo", "repo": "missing", "issue_number": 1}, 404, "not_found"),
        ({"owner": "octo", "repo": "no-issues", "issue_number": 1}, 410, "issues_disabled"),
    ],
)
async def test_get_issue_failures_name_the_status(
    github: GithubConnector, args: dict[str, Any], status: int, code: str
) -> None:
    with pytest.raises(ToolError, match=f"HTTP {status}") as caught:
        await github.call("github.get_issue", args)
    assert (caught.value.status, caught.value.code) == (status, code)


# -- create_issue and close_issue ------------------------------------------------------


async def test_create_issue_opens_one_and_close_issue_undoes_it_idempotently(
    github: GithubConnector, fake: FakeGitHub
) -> None:
    made = await github.call(
        "github.create_issue", at(title="Agent found a bug", body="details", labels=["bug"])
    )
    assert made == {
        "owner": "octo",
        "repo": "hello",
        "number": 3,
        "title": "Agent found a bug",
        "state": "open",
        "html_url": "https://github.com/octo/hello/issues/3",
        "labels": ["bug"],
    }
    issue = fake.repo("octo", "hello").issues[3]
    assert (issue.title, issue.body, issue.origin) == ("Agent found a bug", "details", "api")
    first = await github.call("github.close_issue", at(issue_number=3))
    assert first == {
        "owner": "octo",
        "repo": "hello",
        "number": 3,
        "state": "closed",
        "state_reason": "not_planned",
    }
    once = fake.snapshot()
    assert await github.call("github.close_issue", at(issue_number=3)) == first
    assert fake.snapshot() == once
    assert (issue.state, issue.state_reason) == ("closed", "not_planned")


async def test_create_issue_with_an_unknown_label_makes_github_define_it(
    github: GithubConnector, fake: FakeGitHub
) -> None:
    made = await github.call("github.create_issue", at(title="t", labels=["needs-triage", "BUG"]))
    assert made["labels"] == ["needs-triage", "bug"]
    label = fake.repo("octo", "hello").label("needs-triage")
    assert label is not None
    assert label.auto_created
    assert label.color == "ededed"


@pytest.mark.parametrize(
    ("args", "status", "code", "words"),
    [
        ({"owner": "octo", "repo": "missing", "title": "x"}, 404, "not_found", "Not Found"),
        ({"owner": "octo", "repo": "no-issues", "title": "x"}, 410, "issues_disabled", "disabled"),
        (at(title="   "), 422, "validation_failed", "Issue.title: missing_field"),
    ],
)
async def test_create_issue_refusals_are_tool_errors_and_change_nothing(
    github: GithubConnector,
    fake: FakeGitHub,
    args: dict[str, Any],
    status: int,
    code: str,
    words: str,
) -> None:
    before = fake.snapshot()
    with pytest.raises(ToolError) as caught:
        await github.call("github.create_issue", args)
    assert (caught.value.status, caught.value.code) == (status, code)
    assert f"HTTP {status}" in str(caught.value)
    assert words in str(caught.value)
    assert fake.snapshot() == before


async def test_closing_a_missing_issue_is_an_error_not_a_success(github: GithubConnector) -> None:
    with pytest.raises(ToolError, match="HTTP 404") as caught:
        await github.call("github.close_issue", at(issue_number=999))
    assert caught.value.code == "not_found"


# -- comments --------------------------------------------------------------------------


async def test_add_comment_and_delete_comment_with_404_as_success(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    made = await github.call("github.add_comment", at(issue_number=1, body="Looking into it."))
    assert set(made) == {"owner", "repo", "issue_number", "id", "body_sha256", "html_url"}
    assert made["body_sha256"] == hashlib.sha256(b"Looking into it.").hexdigest()
    assert made["html_url"].endswith(f"/octo/hello/issues/1#issuecomment-{made['id']}")
    comments = fake.repo("octo", "hello").issues[1].comments
    assert [c.body for c in comments] == ["Seen it too.", "Looking into it."]
    first = await github.call("github.delete_comment", at(comment_id=made["id"]))
    assert first["deleted"] is True
    assert [c.id for c in comments] == [SEEDED_COMMENT_ID]
    again = await github.call("github.delete_comment", at(comment_id=made["id"]))
    assert again == {**first, "deleted": False}
    assert server.requests[-1].method == "DELETE"  # the 404 came from GitHub, not a shortcut
    assert [c.id for c in comments] == [SEEDED_COMMENT_ID]


async def test_add_comment_on_a_missing_issue_fails(github: GithubConnector) -> None:
    with pytest.raises(ToolError, match="HTTP 404"):
        await github.call("github.add_comment", at(issue_number=999, body="x"))


# -- labels ----------------------------------------------------------------------------


async def test_add_labels_reports_only_what_it_added_and_remove_labels_removes_only_that(
    github: GithubConnector, fake: FakeGitHub
) -> None:
    issue = fake.repo("octo", "hello").issues[1]
    assert issue.labels == ["bug"]
    made = await github.call(
        "github.add_labels", at(issue_number=1, labels=["Bug", "documentation", "needs-triage"])
    )
    assert made["added"] == ["documentation", "needs-triage"]
    assert made["already_present"] == ["Bug"]
    assert made["labels"] == ["bug", "documentation", "needs-triage"]
    # the undo the manifest maps: only result.added
    undone = await github.call("github.remove_labels", at(issue_number=1, labels=made["added"]))
    assert undone["removed"] == ["documentation", "needs-triage"]
    assert undone["absent"] == []
    assert issue.labels == ["bug"]  # the label that was there before stays
    again = await github.call("github.remove_labels", at(issue_number=1, labels=made["added"]))
    assert again["removed"] == []
    assert again["absent"] == ["documentation", "needs-triage"]
    assert issue.labels == ["bug"]
    # the label GitHub had to create stays defined in the repository (documented residue)
    assert fake.repo("octo", "hello").label("needs-triage") is not None


async def test_add_labels_that_are_all_present_sends_no_write(
    github: GithubConnector, server: FakeServer
) -> None:
    made = await github.call("github.add_labels", at(issue_number=1, labels=["BUG", "bug"]))
    assert made["added"] == []
    assert made["already_present"] == ["BUG"]
    assert writes(server) == []
    nothing = await github.call("github.remove_labels", at(issue_number=1, labels=[]))
    assert nothing["removed"] == []
    assert writes(server) == []


async def test_remove_labels_that_fails_midway_is_uncertain(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    await github.call(
        "github.add_labels", at(issue_number=1, labels=["documentation", "enhancement"])
    )
    server.faults.add(
        Fault.status(500), method="DELETE", path="/repos/{owner}/{repo}/issues/1/labels/enhancement"
    )
    with pytest.raises(EffectUncertainError, match="removed \\['documentation'\\]"):
        await github.call(
            "github.remove_labels", at(issue_number=1, labels=["documentation", "enhancement"])
        )
    done = await github.call(
        "github.remove_labels", at(issue_number=1, labels=["documentation", "enhancement"])
    )
    assert done["removed"] == ["enhancement"]
    assert done["absent"] == ["documentation"]
    assert fake.repo("octo", "hello").issues[1].labels == ["bug"]


async def test_a_first_label_refused_is_a_plain_error(
    github: GithubConnector, server: FakeServer
) -> None:
    server.faults.add(Fault.status(500), method="DELETE")
    with pytest.raises(ToolError, match="HTTP 500"):
        await github.call("github.remove_labels", at(issue_number=1, labels=["bug"]))


async def test_add_labels_on_a_missing_issue_fails_before_writing(
    github: GithubConnector, server: FakeServer
) -> None:
    with pytest.raises(ToolError, match="HTTP 404"):
        await github.call("github.add_labels", at(issue_number=999, labels=["bug"]))
    assert writes(server) == []


# -- branches --------------------------------------------------------------------------


async def test_create_branch_from_a_branch_or_a_sha_returns_the_sha(
    github: GithubConnector, fake: FakeGitHub
) -> None:
    branches = fake.repo("octo", "hello").branches
    from_dev = await github.call("github.create_branch", at(branch="agent/one", from_branch="dev"))
    assert from_dev == {
        "owner": "octo",
        "repo": "hello",
        "branch": "agent/one",
        "ref": "refs/heads/agent/one",
        "sha": SHA_DEV,
    }
    at_sha = await github.call("github.create_branch", at(branch="agent/two", sha=SHA_FEATURE))
    assert at_sha["sha"] == SHA_FEATURE
    assert branches["agent/one"] == SHA_DEV
    assert branches["agent/two"] == SHA_FEATURE


@pytest.mark.parametrize(
    ("args", "status", "code"),
    [
        (at(branch="dev", sha=SHA_FEATURE), 422, "reference_exists"),
        (at(branch="agent/x", sha="0" * 40), 422, "object_not_found"),
        (at(branch="agent/x", from_branch="nope"), 404, "not_found"),
        ({"owner": "octo", "repo": "missing", "branch": "x", "sha": SHA_DEV}, 404, "not_found"),
    ],
)
async def test_create_branch_refusals(
    github: GithubConnector, fake: FakeGitHub, args: dict[str, Any], status: int, code: str
) -> None:
    before = fake.snapshot()
    with pytest.raises(ToolError, match=f"HTTP {status}") as caught:
        await github.call("github.create_branch", args)
    assert (caught.value.status, caught.value.code) == (status, code)
    assert fake.snapshot() == before


async def test_delete_branch_treats_a_missing_branch_as_already_done(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    await github.call("github.create_branch", at(branch="agent/tmp", sha=SHA_FEATURE))
    first = await github.call("github.delete_branch", at(branch="agent/tmp"))
    assert first == {"owner": "octo", "repo": "hello", "branch": "agent/tmp", "deleted": True}
    assert "agent/tmp" not in fake.repo("octo", "hello").branches
    # GitHub answers 422 "Reference does not exist" for a ref that is gone
    again = await github.call("github.delete_branch", at(branch="agent/tmp"))
    assert again["deleted"] is False
    assert server.requests[-1].method == "DELETE"
    # and 404 for a repository it cannot find: also "gone" (see the docs for the caveat)
    missing = await github.call(
        "github.delete_branch", {"owner": "octo", "repo": "gone", "branch": "x"}
    )
    assert missing["deleted"] is False


async def test_delete_branch_refuses_other_422s(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    with pytest.raises(ToolError, match="HTTP 422") as caught:
        await github.call("github.delete_branch", at(branch="main"))
    assert caught.value.code == "validation_failed"
    assert "main" in fake.repo("octo", "hello").branches
    server.faults.add(Fault.status(422, json={"message": "Validation Failed", "errors": []}))
    with pytest.raises(ToolError, match="HTTP 422"):
        await github.call("github.delete_branch", at(branch="dev"))
    assert "dev" in fake.repo("octo", "hello").branches


async def test_add_labels_reads_every_page_of_an_issues_labels(
    github: GithubConnector, fake: FakeGitHub, server: FakeServer
) -> None:
    names = [f"area-{i:03d}" for i in range(150)]
    fake.add_repo("octo", "big", labels=dict.fromkeys(names, "cccccc"))
    fake.add_issue("octo", "big", "many labels", labels=names)
    made = await github.call(
        "github.add_labels",
        {"owner": "octo", "repo": "big", "issue_number": 1, "labels": ["AREA-149", "bug"]},
    )
    assert made["added"] == ["bug"]
    assert made["already_present"] == ["AREA-149"]
    pages = [r.query.get("page") for r in server.requests if r.method == "GET"]
    assert pages == ["1", "2"]


async def test_add_labels_refuses_to_guess_past_a_thousand_labels(
    github: GithubConnector, fake: FakeGitHub
) -> None:
    names = [f"l{i}" for i in range(1000)]
    fake.add_repo("octo", "huge", labels=dict.fromkeys(names, "cccccc"))
    fake.add_issue("octo", "huge", "too many", labels=names)
    with pytest.raises(ToolError) as caught:
        await github.call(
            "github.add_labels",
            {"owner": "octo", "repo": "huge", "issue_number": 1, "labels": ["x"]},
        )
    assert caught.value.code == "too_many_labels"
