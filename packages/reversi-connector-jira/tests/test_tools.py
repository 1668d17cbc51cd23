"""Each jira tool against the fake: what it sends, what it does, what it refuses, how its undo behaves."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from reversi_connector_jira import JiraConnector
from reversi_connector_jira.testing import FakeJira
from reversi_core import registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import (
    ConfigurationError,
    EffectUncertainError,
    InvalidArgumentsError,
    ToolError,
)
from reversi_core.manifest import evaluate_argument_map
from reversi_core.testing import FakeServer, Fault

pytestmark = pytest.mark.anyio

TO_DO, IN_PROGRESS, IN_REVIEW, DONE = "10000", "3", "10001", "10002"
UNDO = CallContext(idempotency_key="reversi-run-1-undo", compensation=True)
OVERWRITE = CallContext(idempotency_key="reversi-run-1-undo", compensation=True, overwrite=True)


def status_of(fake: FakeJira, ref: str) -> str:
    issue = fake.find_issue(ref)
    assert issue is not None
    return str(issue["status"])


# -- configuration and requests ------------------------------------------------------------


def test_the_base_url_email_and_token_are_required() -> None:
    complete = {
        "JIRA_BASE_URL": "https://yourco.atlassian.net",
        "JIRA_EMAIL": "a@b.c",
        "JIRA_API_TOKEN": "tok_0123456789",
    }
    assert JiraConnector.credential_env == "JIRA_API_TOKEN"
    assert JiraConnector.from_env(complete).base_url == "https://yourco.atlassian.net"
    for missing in complete:
        with pytest.raises(ConfigurationError, match=missing):
            JiraConnector.from_env({k: v for k, v in complete.items() if k != missing})


async def test_requests_use_basic_auth_under_rest_api_3(
    jira: JiraConnector, server: FakeServer, token: str
) -> None:
    await jira.call("jira.get_issue", {"issue": "PROJ-1"})
    request = server.requests[-1]
    assert request.path == "/rest/api/3/issue/PROJ-1"
    scheme, _, blob = request.headers["authorization"].partition(" ")
    assert scheme == "Basic"
    assert base64.b64decode(blob).decode() == f"tester@reversi.example:{token}"
    assert token not in request.target


async def test_get_issue_reads_fields_and_the_description_as_text(
    jira: JiraConnector, fake: FakeJira
) -> None:
    made = await jira.call(
        "jira.create_issue", {"project": "PROJ", "summary": "S", "description": "a\nb\n\nc"}
    )
    issue = await jira.call("jira.get_issue", {"issue": made["key"]})
    assert issue["description"] == "a\nb\n\nc"
    assert (issue["status"], issue["status_id"], issue["issue_type"], issue["project"]) == (
        "To Do",
        TO_DO,
        "Task",
        "PROJ",
    )
    parent = await jira.call("jira.get_issue", {"issue": "PROJ-2"})
    assert parent["subtasks"] == ["PROJ-3"]
    assert (await jira.call("jira.get_issue", {"issue": "PROJ-3"}))["parent"] == "PROJ-2"


async def test_descriptions_and_comments_are_sent_as_adf(
    jira: JiraConnector, fake: FakeJira, server: FakeServer
) -> None:
    made = await jira.call(
        "jira.create_issue", {"project": "PROJ", "summary": "S", "description": "x\n\ny"}
    )
    sent = server.requests[-1].json["fields"]["description"]
    assert sent["type"] == "doc"
    assert len(sent["content"]) == 2
    comment = await jira.call("jira.add_comment", {"issue": made["key"], "body": "one\ntwo"})
    assert fake.comments[comment["id"]]["body"]["content"][0]["content"][1] == {"type": "hardBreak"}


@pytest.mark.parametrize(
    "args",
    [
        {"issue": "PROJ-1/../../x"},
        {"issue": "PROJ-1?fields=x"},
        {"issue": "PROJ 1"},
        {"issue": "1#x"},
    ],
)
async def test_an_issue_that_could_change_the_path_is_refused_before_any_request(
    jira: JiraConnector, server: FakeServer, args: dict[str, Any]
) -> None:
    with pytest.raises(InvalidArgumentsError):
        await jira.call("jira.get_issue", args)
    assert server.requests == []


async def test_errors_name_the_status_and_jiras_messages(
    jira: JiraConnector, fake: FakeJira
) -> None:
    with pytest.raises(ToolError) as missing:
        await jira.call("jira.get_issue", {"issue": "PROJ-404"})
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    assert "Issue does not exist" in str(missing.value)
    with pytest.raises(ToolError) as blank:
        await jira.call("jira.create_issue", {"project": "PROJ", "summary": " "})
    assert "summary: You must specify a summary" in str(blank.value)
    fake.exhaust_rate_limit()
    with pytest.raises(ToolError) as limited:
        await jira.call("jira.get_issue", {"issue": "PROJ-1"})
    assert limited.value.code == "rate_limited"
    assert "retry after 30 s" in str(limited.value)


async def test_a_read_only_account_reads_and_may_not_write(server: FakeServer) -> None:
    reader = JiraConnector(server.url, "reader@reversi.example", "ATATT3xReader_0123456789")
    assert (await reader.call("jira.get_issue", {"issue": "PROJ-1"}))["key"] == "PROJ-1"
    with pytest.raises(ToolError) as caught:
        await reader.call("jira.add_comment", {"issue": "PROJ-1", "body": "x"})
    assert (caught.value.status, caught.value.code) == (400, "bad_request")  # Jira's 400 here
    with pytest.raises(ToolError) as creating:
        await reader.call("jira.create_issue", {"project": "PROJ", "summary": "x"})
    assert (creating.value.status, creating.value.code) == (403, "forbidden")
    await reader.aclose()


# -- transitions -----------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["Start Progress", "start progress", "11", "In Progress"])
async def test_a_transition_by_id_by_name_or_by_its_target_status(
    jira: JiraConnector, fake: FakeJira, given: str
) -> None:
    moved = await jira.call("jira.transition_issue", {"issue": "PROJ-1", "transition": given})
    assert moved == {
        "issue": "PROJ-1",
        "transition_id": "11",
        "transition_name": "Start Progress",
        "previous_status": "To Do",
        "previous_status_id": TO_DO,
        "status": "In Progress",
        "status_id": IN_PROGRESS,
    }
    assert status_of(fake, "PROJ-1") == IN_PROGRESS


async def test_an_ambiguous_or_unknown_transition_is_refused_listing_the_choices(
    jira: JiraConnector, fake: FakeJira, server: FakeServer
) -> None:
    with pytest.raises(ToolError) as ambiguous:
        await jira.call("jira.transition_issue", {"issue": "PROJ-2", "transition": "done"})
    assert ambiguous.value.code == "ambiguous_transition"
    assert "'Done' → 'Done' (id 41)" in str(ambiguous.value)
    assert "'Resolve' → 'Done' (id 42)" in str(ambiguous.value)
    with pytest.raises(ToolError) as unknown:
        await jira.call("jira.transition_issue", {"issue": "PROJ-1", "transition": "Teleport"})
    assert unknown.value.code == "transition_not_found"
    assert "'Start Progress' → 'In Progress' (id 11)" in str(unknown.value)
    assert [r.method for r in server.requests] == ["GET", "GET", "GET", "GET"]  # nothing was run
    assert status_of(fake, "PROJ-2") == IN_PROGRESS


async def test_a_lost_transition_answer_is_uncertain_and_its_reads_are_not_faulted(
    jira: JiraConnector, fake: FakeJira, server: FakeServer
) -> None:
    server.faults.add(Fault.drop_after_read(apply=True), writes=True, times=None)
    with pytest.raises(EffectUncertainError):
        await jira.call("jira.transition_issue", {"issue": "PROJ-1", "transition": "11"})
    assert status_of(fake, "PROJ-1") == IN_PROGRESS


async def test_restore_status_goes_back_and_a_second_run_changes_nothing(
    jira: JiraConnector, fake: FakeJira
) -> None:
    moved = await jira.call("jira.transition_issue", {"issue": "PROJ-2", "transition": "Review"})
    undo = {
        "issue": "PROJ-2",
        "status_id": moved["previous_status_id"],
        "status": moved["previous_status"],
        "expected_status_id": moved["status_id"],
        "expected_status": moved["status"],
    }
    first = await jira.call("jira.restore_status", undo)
    assert (first["restored"], first["transition_id"], status_of(fake, "PROJ-2")) == (
        True,
        "51",
        IN_PROGRESS,
    )
    history = list(fake.find_issue("PROJ-2")["history"])  # type: ignore[index]
    assert [(h["from"], h["to"]) for h in history] == [
        (IN_PROGRESS, IN_REVIEW),
        (IN_REVIEW, IN_PROGRESS),
    ]
    again = await jira.call("jira.restore_status", undo)
    assert (again["restored"], again["transition_id"]) == (False, None)
    assert fake.find_issue("PROJ-2")["history"] == history  # type: ignore[index]


async def test_restore_status_fails_clearly_when_the_workflow_has_no_way_back(
    jira: JiraConnector, fake: FakeJira
) -> None:
    moved = await jira.call("jira.transition_issue", {"issue": "PROJ-2", "transition": "Resolve"})
    with pytest.raises(ToolError) as caught:
        await jira.call(
            "jira.restore_status",
            {
                "issue": "PROJ-2",
                "status_id": moved["previous_status_id"],
                "status": moved["previous_status"],
                "expected_status_id": moved["status_id"],
                "expected_status": moved["status"],
            },
        )
    assert caught.value.code == "no_way_back"
    text = str(caught.value)
    assert "no workflow transition from 'Done' leads back to 'In Progress'" in text
    assert "'Reopen' → 'To Do' (id 61)" in text
    assert "'Archive' → 'Archived' (id 71)" in text
    assert status_of(fake, "PROJ-2") == DONE


# -- deleting -----------------------------------------------------------------------------------


async def test_delete_issue_refuses_an_issue_with_subtasks(
    jira: JiraConnector, fake: FakeJira, server: FakeServer
) -> None:
    with pytest.raises(ToolError) as caught:
        await jira.call("jira.delete_issue", {"issue": "PROJ-2"})
    assert (caught.value.status, caught.value.code) == (400, "has_subtasks")
    assert "it has subtasks" in str(caught.value)
    assert fake.find_issue("PROJ-2") is not None
    assert "deleteSubtasks" not in server.requests[-1].target
    assert (await jira.call("jira.delete_issue", {"issue": "PROJ-3"}))["deleted"] is True
    assert (await jira.call("jira.delete_issue", {"issue": "PROJ-2"}))["deleted"] is True
    assert (await jira.call("jira.delete_issue", {"issue": "PROJ-2"}))["deleted"] is False


@pytest.mark.parametrize(
    ("messages", "code"),
    [
        (["The issue 'PROJ-1' has subtasks.  You must specify the 'deleteSubtasks' ..."], "has_subtasks"),
        (["Issue key 'PROJ-1' is not valid for this operation."], "bad_request"),
        ([], "bad_request"),
    ],
)
async def test_only_jiras_subtasks_refusal_is_labelled_has_subtasks(
    jira: JiraConnector, server: FakeServer, messages: list[str], code: str
) -> None:
    answer = {"errorMessages": messages, "errors": {}}
    server.faults.add(Fault.status(400, json=answer), method="DELETE", times=1)
    with pytest.raises(ToolError) as caught:
        await jira.call("jira.delete_issue", {"issue": "PROJ-1"})
    assert (caught.value.status, caught.value.code) == (400, code)
    assert ("it has subtasks" in str(caught.value)) is (code == "has_subtasks")
    for message in messages:
        assert message in str(caught.value)  # Jira's own words are kept


async def test_delete_comment_of_a_comment_gone_is_done(
    jira: JiraConnector, fake: FakeJira
) -> None:
    made = await jira.call("jira.add_comment", {"issue": "PROJ-1", "body": "x"})
    assert (await jira.call("jira.delete_comment", {"issue": "PROJ-1", "comment_id": made["id"]}))[
        "deleted"
    ] is True
    assert made["id"] not in fake.comments
    assert (await jira.call("jira.delete_comment", {"issue": "PROJ-1", "comment_id": made["id"]}))[
        "deleted"
    ] is False


def undo_of(tool: str, args: dict[str, Any], made: dict[str, Any]) -> dict[str, Any]:
    """The arguments a rollback gives ``tool``'s compensation, from its manifest's map."""
    [manifest] = [m for m in JiraConnector.manifests() if m.name == tool]
    assert manifest.compensation is not None
    return evaluate_argument_map(manifest.compensation, args, made)


async def test_a_comment_someone_edited_is_not_deleted_until_it_reads_as_posted(
    jira: JiraConnector, fake: FakeJira, server: FakeServer
) -> None:
    args = {"issue": "PROJ-1", "body": "Looking into it.\r\nLine two.\n\n\nSecond paragraph."}
    made = await jira.call("jira.add_comment", args)
    assert made["body"] == args["body"]
    undo = undo_of("jira.add_comment", args, made)
    assert undo == {"issue": "PROJ-1", "comment_id": made["id"], "expected_body": args["body"]}
    posted = fake.comments[made["id"]]["body"]
    fake.edit_comment(made["id"], "Redacted by an admin.")
    with pytest.raises(ToolError) as caught:
        await jira.call("jira.delete_comment", undo, UNDO)
    assert caught.value.code == "changed_since"
    assert "the comment's body changed since the call" in str(caught.value)
    assert "--overwrite STEP" in str(caught.value)
    assert made["id"] in fake.comments  # the edit stands
    fake.restore_comment(made["id"], posted)
    sent = len(server.requests)
    assert (await jira.call("jira.delete_comment", undo, UNDO))["deleted"] is True
    assert [r.method for r in server.requests[sent:]] == ["GET", "DELETE"]
    assert (await jira.call("jira.delete_comment", undo, UNDO))["deleted"] is False  # 404: done


async def test_an_overwrite_deletes_the_edited_comment_without_reading_it(
    jira: JiraConnector, fake: FakeJira, server: FakeServer
) -> None:
    made = await jira.call("jira.add_comment", {"issue": "PROJ-1", "body": "x"})
    fake.edit_comment(made["id"], "y")
    sent = len(server.requests)
    undo = {"issue": "PROJ-1", "comment_id": made["id"], "expected_body": "x"}
    assert (await jira.call("jira.delete_comment", undo, OVERWRITE))["deleted"] is True
    assert [r.method for r in server.requests[sent:]] == ["DELETE"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("comment", "it has 1 comment someone added since"),
        ("summary", "its summary is no longer the one the call set"),
        ("description", "its description is no longer the one the call set"),
    ],
)
async def test_an_issue_someone_changed_is_not_deleted(
    jira: JiraConnector, fake: FakeJira, change: str, words: str
) -> None:
    args = {"project": "PROJ", "summary": "Found", "description": "Steps:\n1. run"}
    made = await jira.call("jira.create_issue", args)
    undo = undo_of("jira.create_issue", args, made)
    assert undo == {
        "issue": made["id"],
        "expected_summary": "Found",
        "expected_description": "Steps:\n1. run",
    }
    issue = fake.find_issue(made["id"])
    assert issue is not None
    if change == "comment":
        fake.add_comment(made["id"], "Same here.")
    elif change == "summary":
        issue["summary"] = "Found, and triaged"
    else:
        issue["description"] = None
    with pytest.raises(ToolError) as caught:
        await jira.call("jira.delete_issue", undo, UNDO)
    assert caught.value.code == "changed_since"
    assert words in str(caught.value)
    assert fake.find_issue(made["id"]) is not None  # their work is not deleted
    assert (await jira.call("jira.delete_issue", undo, OVERWRITE))["deleted"] is True
    assert fake.find_issue(made["id"]) is None


async def test_an_unchanged_issue_is_deleted_after_one_read(
    jira: JiraConnector, fake: FakeJira, server: FakeServer
) -> None:
    made = await jira.call("jira.create_issue", {"project": "PROJ", "summary": "Plain"})
    assert made["description"] is None
    undo = {"issue": made["id"], "expected_summary": "Plain", "expected_description": None}
    sent = len(server.requests)
    assert (await jira.call("jira.delete_issue", undo, UNDO))["deleted"] is True
    assert [r.method for r in server.requests[sent:]] == ["GET", "DELETE"]
    assert "fields=summary%2Cdescription%2Ccomment" in server.requests[sent].target
    assert (await jira.call("jira.delete_issue", undo, UNDO))["deleted"] is False  # 404: done


def test_the_delete_permission_stays_out_of_the_agents_default_scope() -> None:
    registry = registry_for([JiraConnector("https://x.atlassian.net", "a@b.c", "tok_0123456789")])
    scope = registry.default_scope()
    assert "jira:issues:delete" not in scope
    assert {
        "jira:issues:read",
        "jira:issues:write",
        "jira:comments:write",
        "jira:issues:transition",
    } <= scope
