"""Each gitlab tool against FakeGitLab: what it sends, what it returns, how GitLab's answers map."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from reversi_connector_gitlab import CHANGED_SINCE, GitlabConnector
from reversi_connector_gitlab._errors import ERRORS
from reversi_connector_gitlab.testing import (
    BOT_NOTE_ID,
    DOCS_PROJECT,
    NESTED,
    NOTE_ID,
    PROJECT,
    PROJECT_ID,
    SHA_DEV,
    SHA_FEATURE,
    FakeGitLab,
)
from reversi_core.connector import CallContext
from reversi_core.errors import (
    ConfigurationError,
    EffectUncertainError,
    InvalidArgumentsError,
    ToolError,
)
from reversi_core.testing import FakeServer, Fault

pytestmark = pytest.mark.anyio

TOKEN = "glpat-testSecretToken-0123456789abcdef"  # conftest's
READ_ONLY_TOKEN = "glpat-readApiOnlyToken-0123456789abc"  # conftest's
UNDO = CallContext(idempotency_key="reversi-run-1-undo", compensation=True)


def at(**more: Any) -> dict[str, Any]:
    return {"project": PROJECT, **more}


# -- where requests go -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, "https://gitlab.com/api/v4"),
        ("https://gitlab.example.com", "https://gitlab.example.com/api/v4"),
        ("https://gitlab.example.com/", "https://gitlab.example.com/api/v4"),
        ("https://example.com/gitlab", "https://example.com/gitlab/api/v4"),
        ("https://gitlab.example.com/api/v4", "https://gitlab.example.com/api/v4"),
        ("http://127.0.0.1:8080/api/v4/", "http://127.0.0.1:8080/api/v4"),
    ],
)
def test_api_v4_is_added_to_a_self_hosted_root(given: str | None, expected: str) -> None:
    assert GitlabConnector(TOKEN, base_url=given).base_url == expected
    env = {"GITLAB_TOKEN": TOKEN, **({"GITLAB_BASE_URL": given} if given else {})}
    assert GitlabConnector.from_env(env).base_url == expected


def test_the_token_is_required_and_never_shown() -> None:
    with pytest.raises(ConfigurationError, match="GITLAB_TOKEN"):
        GitlabConnector.from_env({})
    with pytest.raises(ConfigurationError) as caught:
        GitlabConnector.from_env({"GITLAB_TOKEN": TOKEN, "GITLAB_BASE_URL": f"https://u:{TOKEN}@h"})
    assert TOKEN not in str(caught.value)


async def test_the_token_travels_in_private_token_only(
    gitlab: GitlabConnector, server: FakeServer
) -> None:
    await gitlab.call("gitlab.get_issue", at(issue_iid=1))
    request = server.requests[-1]
    assert request.headers["private-token"] == TOKEN
    assert "authorization" not in {k.lower() for k in request.headers}
    assert TOKEN not in request.target
    assert TOKEN not in request.text


@pytest.mark.parametrize(
    ("project", "target"),
    [
        (PROJECT_ID, "/api/v4/projects/42/issues/1"),
        ("42", "/api/v4/projects/42/issues/1"),
        (PROJECT, "/api/v4/projects/acme%2Fbackend/issues/1"),
        ("ACME/Backend", "/api/v4/projects/ACME%2FBackend/issues/1"),
    ],
)
async def test_a_project_is_an_id_or_a_full_path_encoded_as_one_segment(
    gitlab: GitlabConnector, server: FakeServer, project: int | str, target: str
) -> None:
    read = await gitlab.call("gitlab.get_issue", {"project": project, "issue_iid": 1})
    assert read["project"] == project
    assert read["title"] == "Crash on start"
    assert server.requests[-1].target == target


async def test_a_nested_path_and_a_branch_with_slashes_are_one_segment_each(
    gitlab: GitlabConnector, server: FakeServer
) -> None:
    await gitlab.call("gitlab.get_issue", {"project": NESTED, "issue_iid": 1})
    assert server.requests[-1].target == "/api/v4/projects/acme%2Fplatform%2Finfra/issues/1"
    made = await gitlab.call("gitlab.create_branch", at(branch="agent/fix/42", ref="main"))
    await gitlab.call(
        "gitlab.delete_branch", at(branch="agent/fix/42", expected_sha=made["sha"]), UNDO
    )
    assert [r.target for r in server.requests[-2:]] == [
        "/api/v4/projects/acme%2Fbackend/repository/branches/agent%2Ffix%2F42"
    ] * 2


@pytest.mark.parametrize(
    "project",
    [
        "backend",  # no namespace
        "acme/../admin",
        "acme/./backend",
        "acme//backend",
        "acme/backend?private=true",
        "acme/backend#x",
        "acme/back end",
        "acme/backend.git",
        "acme/-backend",
        "acme/backend/",
        "0",
        -1,
        True,
        "acme%2Fbackend",  # already encoded: it would be encoded twice
        "\u0664\u0662",  # ARABIC-INDIC 42: str.isdigit() takes it, GitLab reads it as a path
        "\uff14\uff12",  # FULLWIDTH 42
        "acme/backend\n",  # a regular expression's "$" matches before a final newline
        "acme\n/backend",
    ],
)
async def test_a_project_that_could_change_the_path_is_refused_before_any_request(
    gitlab: GitlabConnector, server: FakeServer, project: Any
) -> None:
    with pytest.raises(InvalidArgumentsError):
        await gitlab.call("gitlab.get_issue", {"project": project, "issue_iid": 1})
    assert server.requests == []


def arabic_indic(number: int) -> str:
    """``number`` in ARABIC-INDIC digits, which str.isdigit() and int() take as digits."""
    return "".join(chr(0x660 + int(d)) for d in str(number))


@pytest.mark.parametrize("where", ["project", "issue", "note"])
async def test_the_fake_reads_ids_in_ascii_digits_only(
    fake: FakeGitLab, server: FakeServer, where: str
) -> None:
    ids = {"project": PROJECT_ID, "issue": 1, "note": BOT_NOTE_ID}

    def path(**written: str) -> str:
        shown = {k: written.get(k, str(v)) for k, v in ids.items()}
        return f"/projects/{shown['project']}/issues/{shown['issue']}/notes/{shown['note']}"

    async with httpx.AsyncClient(base_url=f"{fake.base_url(server)}/api/v4") as client:
        read = await client.get(path(), headers={"PRIVATE-TOKEN": TOKEN})
        other = path(**{where: arabic_indic(ids[where])})
        answer = await client.get(other, headers={"PRIVATE-TOKEN": TOKEN})
    assert read.status_code == 200
    assert answer.status_code == 404
    expected = "404 Project Not Found" if where == "project" else "404 Not found"
    assert answer.json() == {"message": expected}


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("gitlab.create_branch", at(branch="../main", ref="main")),
        ("gitlab.create_branch", at(branch="a b", ref="main")),
        ("gitlab.create_branch", at(branch="refs/heads/x", ref="main")),
        ("gitlab.create_branch", at(branch="x", ref="main?x")),
        ("gitlab.delete_branch", at(branch="x.lock")),
        ("gitlab.delete_branch", at(branch="x", expected_sha="abc")),
        ("gitlab.create_issue", at(title="x", labels=["a,b"])),
        ("gitlab.create_issue", at(title="x", description="Found it.\n/close")),
        ("gitlab.add_note", at(issue_iid=1, body="/label ~bug")),
        ("gitlab.add_note", at(issue_iid=1, body="  /assign @alice please")),
        # GitLab matches command names case-insensitively, strips every carriage return and
        # allows whitespace after the name (lib/gitlab/quick_actions/extractor.rb)
        ("gitlab.add_note", at(issue_iid=1, body="/Close")),
        ("gitlab.add_note", at(issue_iid=1, body="/CLOSE")),
        ("gitlab.add_note", at(issue_iid=1, body="hello\r\n/close\r\nbye")),
        ("gitlab.add_note", at(issue_iid=1, body="/close\r")),
        ("gitlab.add_note", at(issue_iid=1, body="/clo\rse")),
        ("gitlab.add_note", at(issue_iid=1, body="/close \t")),
        ("gitlab.add_note", at(issue_iid=1, body="/close\t\nbye")),
        ("gitlab.add_note", at(issue_iid=1, body="/Label ~bug")),
        ("gitlab.add_note", at(issue_iid=1, body="/copy_metadata #2")),
        ("gitlab.add_note", at(issue_iid=1, body="/h1")),
        ("gitlab.create_issue", at(title="x", description="Found it.\r\n/CLOSE\r\n")),
        ("gitlab.add_note", at(issue_iid=0, body="x")),
    ],
)
async def test_arguments_gitlab_would_misread_are_refused_before_any_request(
    gitlab: GitlabConnector, server: FakeServer, tool: str, args: dict[str, Any]
) -> None:
    with pytest.raises(InvalidArgumentsError):
        await gitlab.call(tool, args)
    assert server.requests == []


async def test_text_that_only_mentions_a_slash_command_is_posted(
    gitlab: GitlabConnector, fake: FakeGitLab
) -> None:
    body = "Paths: /usr/bin/python and `/close` in a code span; 50/50.\r\n/Users/alice/notes"
    made = await gitlab.call("gitlab.add_note", at(issue_iid=1, body=body))
    assert made["body"] == body
    assert fake.project(PROJECT).issues[1].note(made["id"]) is not None


# -- issues and notes ------------------------------------------------------------------------


async def test_create_issue_sends_labels_comma_separated_and_returns_the_iid(
    gitlab: GitlabConnector, fake: FakeGitLab, server: FakeServer
) -> None:
    made = await gitlab.call(
        "gitlab.create_issue", at(title="Flaky", labels=["bug", "needs-triage", "bug"])
    )
    assert made["iid"] == 3
    assert made["state"] == "opened"
    assert made["labels"] == ["bug", "needs-triage"]
    assert server.requests[-1].json == {"title": "Flaky", "labels": "bug,needs-triage"}
    assert fake.project(PROJECT).labels["needs-triage"] is True  # GitLab made it


async def test_close_issue_closes_once_and_again_changes_nothing(
    gitlab: GitlabConnector, fake: FakeGitLab, server: FakeServer
) -> None:
    assert await gitlab.call("gitlab.close_issue", at(issue_iid=1), UNDO) == {
        "project": PROJECT,
        "iid": 1,
        "state": "closed",
    }
    assert server.requests[-1].json == {"state_event": "close"}
    after = fake.snapshot()
    assert [
        n["body"] for n in after["projects"][PROJECT]["issues"]["1"]["notes"] if n["system"]
    ] == ["closed"]
    await gitlab.call("gitlab.close_issue", at(issue_iid=1), UNDO)
    assert fake.snapshot() == after


async def test_a_note_is_deleted_only_while_it_reads_as_the_call_left_it(
    gitlab: GitlabConnector, fake: FakeGitLab
) -> None:
    made = await gitlab.call("gitlab.add_note", at(issue_iid=1, body="Looking into it."))
    fake.edit_note(
        PROJECT_ID, 1, made["id"], "Looking into it. (Maintainer: this is a duplicate of #9)"
    )
    undo = at(issue_iid=1, note_id=made["id"], expected_body=made["body"])
    with pytest.raises(ToolError) as caught:
        await gitlab.call("gitlab.delete_note", undo, UNDO)
    assert caught.value.code == CHANGED_SINCE
    assert "the note's body" in str(caught.value)
    assert fake.project(PROJECT).issues[1].note(made["id"]) is not None  # the edit survived
    fake.edit_note(PROJECT_ID, 1, made["id"], made["body"])
    assert (await gitlab.call("gitlab.delete_note", undo, UNDO))["deleted"] is True
    assert (await gitlab.call("gitlab.delete_note", undo, UNDO))["deleted"] is False  # 404: done


async def test_delete_note_without_an_expected_body_deletes_without_reading(
    gitlab: GitlabConnector, fake: FakeGitLab, server: FakeServer
) -> None:
    done = await gitlab.call("gitlab.delete_note", at(issue_iid=1, note_id=BOT_NOTE_ID), UNDO)
    assert done == {"project": PROJECT, "issue_iid": 1, "note_id": BOT_NOTE_ID, "deleted": True}
    assert [r.method for r in server.requests] == ["DELETE"]


async def test_someone_elses_note_is_refused_by_gitlab(gitlab: GitlabConnector) -> None:
    with pytest.raises(ToolError) as caught:
        await gitlab.call("gitlab.delete_note", at(issue_iid=1, note_id=NOTE_ID), UNDO)
    assert (caught.value.status, caught.value.code) == (403, "forbidden")


# -- branches --------------------------------------------------------------------------------


async def test_create_branch_returns_the_commit_it_started_at(
    gitlab: GitlabConnector, fake: FakeGitLab
) -> None:
    made = await gitlab.call("gitlab.create_branch", at(branch="agent/a", ref="dev"))
    assert made == {
        "project": PROJECT,
        "branch": "agent/a",
        "ref": "dev",
        "sha": SHA_DEV,
        "protected": False,
        "web_url": "https://gitlab.example.com/acme/backend/-/tree/agent/a",
    }
    assert fake.project(PROJECT).branches["agent/a"] == SHA_DEV


async def test_a_branch_someone_pushed_to_is_not_deleted(
    gitlab: GitlabConnector, fake: FakeGitLab
) -> None:
    made = await gitlab.call("gitlab.create_branch", at(branch="agent/b", ref=SHA_FEATURE))
    pushed = fake.push(PROJECT_ID, "agent/b", "a colleague's fix")
    undo = at(branch="agent/b", expected_sha=made["sha"])
    with pytest.raises(ToolError) as caught:
        await gitlab.call("gitlab.delete_branch", undo, UNDO)
    assert caught.value.code == CHANGED_SINCE
    assert f"the branch's head moved from {SHA_FEATURE[:12]} to {pushed[:12]}" in str(caught.value)
    assert fake.project(PROJECT).branches["agent/b"] == pushed
    fake.add_branch(PROJECT_ID, "agent/b", made["sha"])
    assert (await gitlab.call("gitlab.delete_branch", undo, UNDO))["deleted"] is True
    assert (await gitlab.call("gitlab.delete_branch", undo, UNDO))["deleted"] is False  # 404: done


# -- a 404 is "already gone" only for the note or the branch itself --------------------------


async def test_a_note_gone_is_told_from_its_issue_gone_by_reading_the_issue(
    gitlab: GitlabConnector, fake: FakeGitLab, server: FakeServer
) -> None:
    """GitLab answers a missing note and a missing (or hidden) issue alike: 404 Not found."""
    made = await gitlab.call("gitlab.add_note", at(issue_iid=1, body="Looking into it."))
    undo = at(issue_iid=1, note_id=made["id"], expected_body=made["body"])
    issues = fake.project(PROJECT).issues
    with fake.lock:
        hidden = issues.pop(1)  # the token can no longer see the issue: its note still stands
    for args in (undo, {**undo, "expected_body": None}):
        server.clear_requests()
        with pytest.raises(ToolError) as caught:
            await gitlab.call("gitlab.delete_note", args, UNDO)
        assert (caught.value.status, caught.value.code) == (404, "not_found")
        assert f"note {made['id']} may still stand" in str(caught.value)
        assert server.requests[-1].target == "/api/v4/projects/acme%2Fbackend/issues/1"
    with fake.lock:
        issues[1] = hidden
    assert hidden.note(made["id"]) is not None
    assert (await gitlab.call("gitlab.delete_note", undo, UNDO))["deleted"] is True
    server.clear_requests()
    assert (await gitlab.call("gitlab.delete_note", undo, UNDO))["deleted"] is False
    assert [(r.method, r.target.rsplit("/", 2)[-2:]) for r in server.requests] == [
        ("GET", ["notes", str(made["id"])]),
        ("GET", ["issues", "1"]),  # the issue is there: the note is what is gone
    ]


async def test_a_project_the_token_cannot_see_is_not_a_note_or_branch_already_gone(
    gitlab: GitlabConnector, fake: FakeGitLab
) -> None:
    note = await gitlab.call("gitlab.add_note", at(issue_iid=1, body="Looking into it."))
    branch = await gitlab.call("gitlab.create_branch", at(branch="agent/d", ref="main"))
    undos = [
        ("gitlab.delete_note", at(issue_iid=1, note_id=note["id"], expected_body=note["body"])),
        ("gitlab.delete_note", at(issue_iid=1, note_id=note["id"])),
        ("gitlab.delete_branch", at(branch="agent/d", expected_sha=branch["sha"])),
        ("gitlab.delete_branch", at(branch="agent/d")),
    ]
    with fake.lock:
        hidden = fake.projects.pop(PROJECT_ID)  # GitLab answers a hidden project as a missing one
    for tool, args in undos:
        with pytest.raises(ToolError) as caught:
            await gitlab.call(tool, args, UNDO)
        assert (caught.value.status, caught.value.code) == (404, "project_not_found"), tool
        assert "may still stand" in str(caught.value)
    with fake.lock:
        fake.projects[PROJECT_ID] = hidden
    assert hidden.issues[1].note(note["id"]) is not None
    assert "agent/d" in hidden.branches
    for tool, args in undos[::2]:
        assert (await gitlab.call(tool, args, UNDO))["deleted"] is True


@pytest.mark.parametrize(
    ("tool", "args", "method", "answer", "gone"),
    [
        # GitLab's answer for a note that exists but that the token cannot read
        (
            "gitlab.delete_note",
            at(issue_iid=1, note_id=BOT_NOTE_ID, expected_body="x"),
            "GET",
            {"message": "404 Note Not Found"},
            False,
        ),
        # the notes route found no readable issue
        (
            "gitlab.delete_note",
            at(issue_iid=1, note_id=BOT_NOTE_ID),
            "DELETE",
            {"message": "404 Issue Not Found"},
            False,
        ),
        # a route GitLab does not have (a proxy, a wrong base URL): not the branch's answer
        ("gitlab.delete_branch", at(branch="dev"), "DELETE", {"error": "404 Not Found"}, False),
        # the branch found, then deleted by someone else before this delete ran
        ("gitlab.delete_branch", at(branch="dev"), "DELETE", {"message": "No such branch"}, True),
    ],
)
async def test_only_gitlabs_404_for_the_object_itself_counts_as_already_gone(
    gitlab: GitlabConnector,
    server: FakeServer,
    tool: str,
    args: dict[str, Any],
    method: str,
    answer: dict[str, Any],
    gone: bool,
) -> None:
    server.faults.add(Fault.status(404, json=answer), method=method, times=1)
    if gone:
        assert (await gitlab.call(tool, args, UNDO))["deleted"] is False
        return
    with pytest.raises(ToolError) as caught:
        await gitlab.call(tool, args, UNDO)
    assert caught.value.status == 404
    assert "may still stand" in str(caught.value)


async def test_a_protected_branch_refusal_names_the_role_needed(
    gitlab: GitlabConnector, fake: FakeGitLab
) -> None:
    with pytest.raises(ToolError) as caught:
        await gitlab.call("gitlab.delete_branch", at(branch="release"), UNDO)
    assert (caught.value.status, caught.value.code) == (400, "protected_branch")
    assert "takes the Maintainer role" in str(caught.value)
    assert "release" in fake.project(PROJECT).branches
    fake.project(PROJECT).role = "maintainer"
    assert (await gitlab.call("gitlab.delete_branch", at(branch="release"), UNDO))[
        "deleted"
    ] is True


async def test_a_reporter_cannot_create_a_branch(gitlab: GitlabConnector) -> None:
    with pytest.raises(ToolError) as caught:
        await gitlab.call(
            "gitlab.create_branch", {"project": DOCS_PROJECT, "branch": "x", "ref": "main"}
        )
    assert (caught.value.status, caught.value.code) == (403, "forbidden")


# -- GitLab's two error shapes, scopes, rate limits, lost answers -----------------------------


async def test_a_read_api_token_reads_and_its_writes_are_insufficient_scope(
    fake: FakeGitLab, server: FakeServer
) -> None:
    reader = GitlabConnector(READ_ONLY_TOKEN, base_url=fake.base_url(server))
    assert (await reader.call("gitlab.get_issue", at(issue_iid=1)))["iid"] == 1
    with pytest.raises(ToolError) as caught:
        await reader.call("gitlab.create_issue", at(title="x"))
    assert (caught.value.status, caught.value.code) == (403, "insufficient_scope")
    assert "requires higher privileges" in str(caught.value)
    assert READ_ONLY_TOKEN not in str(caught.value)
    await reader.aclose()


@pytest.mark.parametrize(
    ("status", "body", "code", "words"),
    [
        (404, {"message": "404 Project Not Found"}, "project_not_found", "404 Project Not Found"),
        (404, {"error": "404 Not Found"}, "not_found", "404 Not Found"),
        (400, {"error": "title is missing"}, "bad_request", "title is missing"),
        (
            400,
            {"message": {"title": ["can't be blank", "is too short"]}},
            "validation_failed",
            "title: can't be blank, is too short",
        ),
        (401, {"message": "401 Unauthorized"}, "unauthorized", "401 Unauthorized"),
        (
            401,
            {
                "error": "invalid_token",
                "error_description": "Token is expired. You can either do re-authorization or token refresh.",
            },
            "invalid_token",
            "Token is expired",
        ),
        (
            403,
            {
                "error": "insufficient_scope",
                "error_description": "The request requires higher privileges than provided by the access token.",
                "scope": "api",
            },
            "insufficient_scope",
            "higher privileges",
        ),
        (403, {"message": "403 Forbidden"}, "forbidden", "403 Forbidden"),
        (400, {"message": "Branch already exists"}, "branch_exists", "Branch already exists"),
        (400, {"message": "Invalid reference name: nope"}, "invalid_reference", "nope"),
        (
            500,
            {"message": "500 Internal Server Error"},
            "server_error",
            "500 Internal Server Error",
        ),
    ],
)
def test_both_gitlab_error_shapes_give_a_code_and_a_message(
    status: int, body: Any, code: str, words: str
) -> None:
    got_code, message = ERRORS.classify(status, httpx.Headers({}), body)
    assert got_code == code
    assert message is not None
    assert words in message


async def test_a_rate_limit_says_when_to_try_again(
    gitlab: GitlabConnector, fake: FakeGitLab, server: FakeServer
) -> None:
    fake.rate_limit = 100
    fake.exhaust_rate_limit()
    with pytest.raises(ToolError) as caught:
        await gitlab.call("gitlab.create_issue", at(title="x"))
    assert (caught.value.status, caught.value.code) == (429, "rate_limited")
    assert "retry after 60 s" in str(caught.value)
    assert len(server.requests) == 1


async def test_a_lost_answer_to_a_write_is_uncertain_and_not_sent_again(
    gitlab: GitlabConnector, fake: FakeGitLab, server: FakeServer
) -> None:
    server.faults.add(Fault.drop_after_read(apply=True), method="POST")
    with pytest.raises(EffectUncertainError):
        await gitlab.call("gitlab.create_issue", at(title="exactly once"))
    assert [r.method for r in server.requests] == ["POST"]
    assert [i.title for i in fake.project(PROJECT).issues.values()].count("exactly once") == 1


async def test_an_answer_without_the_branchs_commit_is_uncertain(
    gitlab: GitlabConnector, server: FakeServer
) -> None:
    server.faults.add(Fault.status(201, json={"name": "agent/c"}, apply=True), method="POST")
    with pytest.raises(EffectUncertainError, match="names no commit"):
        await gitlab.call("gitlab.create_branch", at(branch="agent/c", ref="main"))
