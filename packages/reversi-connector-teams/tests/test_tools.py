"""What the teams tools do against FakeGraph: requests sent, answers read, refusals reported."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from _teams_support import APP_TOKEN, SCOPELESS_TOKEN, TOKEN, connector_for

from reversi_connector_teams import POST_NEEDS_DELEGATION, TeamsConnector
from reversi_connector_teams._args import MAX_BODY_BYTES, PostMessageArgs, encode_body
from reversi_connector_teams.testing import (
    APP_ONLY_POST,
    DELETED_ID,
    GENERAL,
    RANDOM,
    RELEASES,
    TEAM_ID,
    WELCOME_ID,
    FakeGraph,
)
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.errors import EffectUncertainError, InvalidArgumentsError, ToolError
from reversi_core.testing import FakeRequest, FakeResponse, FakeServer, Fault

pytestmark = pytest.mark.anyio


def _in(channel: str = GENERAL, **more: object) -> dict[str, object]:
    return {"team_id": TEAM_ID, "channel_id": channel, **more}


def _softdelete(message_id: str, channel: str = GENERAL) -> str:
    return f"/v1.0/teams/{TEAM_ID}/channels/{channel}/messages/{message_id}/softDelete"


# -- list_channels ------------------------------------------------------------------------


async def test_list_channels_follows_every_next_link(
    teams: TeamsConnector, server: FakeServer
) -> None:
    listed = await teams.call("teams.list_channels", {"team_id": TEAM_ID})
    assert [c["id"] for c in listed["channels"]] == [GENERAL, RELEASES, RANDOM]
    assert listed["channels"][0] == {
        "id": GENERAL,
        "display_name": "General",
        "description": "Everything about the platform",
        "membership_type": "standard",
        "web_url": listed["channels"][0]["web_url"],
    }
    assert listed["channels"][2]["membership_type"] == "private"
    targets = [r.target for r in server.requests]
    assert targets == [
        f"/v1.0/teams/{TEAM_ID}/channels",
        f"/v1.0/teams/{TEAM_ID}/channels?%24skiptoken=2",
    ]


class _ForeignNextLink(FakeGraph):
    def dispatch(self, request: FakeRequest) -> FakeResponse:
        answer = super().dispatch(request)
        if isinstance(answer.json, dict) and "@odata.nextLink" in answer.json:
            link = answer.json["@odata.nextLink"].replace("127.0.0.1", "graph.attacker.example")
            return dataclasses.replace(answer, json={**answer.json, "@odata.nextLink": link})
        return answer


async def test_a_next_link_to_another_host_is_not_followed() -> None:
    fake = _ForeignNextLink(token=TOKEN, channel_page_size=1)
    fake.add_team(TEAM_ID, "Platform")
    fake.add_channel(TEAM_ID, GENERAL, "General")
    fake.add_channel(TEAM_ID, RELEASES, "Releases")
    with FakeServer(fake) as server:
        teams = connector_for(fake, server)
        with pytest.raises(ToolError) as caught:
            await teams.call("teams.list_channels", {"team_id": TEAM_ID})
        await teams.aclose()
        assert len(server.requests) == 1  # the token went nowhere else
    assert caught.value.code == "invalid_response"
    assert "outside the configured base URL" in str(caught.value)


async def test_an_endless_channel_list_is_refused_after_twenty_pages() -> None:
    fake = FakeGraph(token=TOKEN, channel_page_size=1)
    fake.add_team(TEAM_ID, "Platform")
    for n in range(25):
        fake.add_channel(TEAM_ID, f"19:c{n:02d}@thread.tacv2", f"Channel {n}")
    with FakeServer(fake) as server:
        teams = connector_for(fake, server)
        with pytest.raises(ToolError) as caught:
            await teams.call("teams.list_channels", {"team_id": TEAM_ID})
        await teams.aclose()
        assert len(server.requests) == 20
    assert caught.value.code == "too_many_pages"


async def test_an_unknown_team_is_graphs_404(teams: TeamsConnector) -> None:
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.list_channels", {"team_id": "00000000-0000-0000-0000-000000000000"})
    assert (caught.value.status, caught.value.code) == (404, "NotFound")
    assert "No team found" in str(caught.value)


@pytest.mark.parametrize(
    "channel",
    ["19:x/../y@thread.tacv2", "19:x?$select=id", "19:x#frag", "19:x y", "19:x%2F", ""],
)
async def test_a_channel_id_that_could_change_the_path_is_refused_before_sending(
    teams: TeamsConnector, server: FakeServer, channel: str
) -> None:
    with pytest.raises(InvalidArgumentsError):
        await teams.call("teams.post_message", _in(channel, content="x"))
    assert server.requests == []


async def test_the_channel_id_is_encoded_once_into_the_path(
    teams: TeamsConnector, server: FakeServer
) -> None:
    await teams.call("teams.post_message", _in(content="hi"))
    (request,) = server.requests
    assert request.target == (
        f"/v1.0/teams/{TEAM_ID}/channels/19%3A561fbdbbfca848a484f0a6f00ce9dbbd%40thread.tacv2/messages"
    )


# -- post_message -------------------------------------------------------------------------


async def test_a_text_message_is_posted_with_a_text_body(
    teams: TeamsConnector, fake: FakeGraph, server: FakeServer
) -> None:
    posted = await teams.call("teams.post_message", _in(content="Build 42 is green."))
    assert server.requests[-1].json == {"body": {"contentType": "text", "content": "Build 42 is green."}}
    message = fake.message(TEAM_ID, GENERAL, posted["id"])
    assert (message.content, message.content_type, message.origin) == ("Build 42 is green.", "text", "api")
    assert posted["team_id"] == TEAM_ID
    assert posted["channel_id"] == GENERAL
    assert posted["content_type"] == "text"
    assert posted["web_url"].startswith("https://teams.microsoft.com/l/message/")
    assert posted["created_date_time"].endswith("Z")


async def test_an_html_message_keeps_its_markup_subject_and_importance(
    teams: TeamsConnector, fake: FakeGraph, server: FakeServer
) -> None:
    html = '<p>Release <b>1.4</b>: <a href="https://example.com/r">notes</a> &amp; more</p>'
    posted = await teams.call(
        "teams.post_message",
        _in(RELEASES, content=html, content_type="html", subject="Release 1.4", importance="urgent"),
    )
    assert server.requests[-1].json == {
        "body": {"contentType": "html", "content": html},
        "subject": "Release 1.4",
        "importance": "urgent",
    }
    message = fake.message(TEAM_ID, RELEASES, posted["id"])
    assert (message.content, message.content_type, message.subject, message.importance) == (
        html,
        "html",
        "Release 1.4",
        "urgent",
    )


async def test_an_application_token_is_refused_with_graphs_answer_and_the_delegated_hint(
    fake: FakeGraph, server: FakeServer
) -> None:
    teams = connector_for(fake, server, APP_TOKEN)
    listed = await teams.call("teams.list_channels", {"team_id": TEAM_ID})  # it may read
    assert len(listed["channels"]) == 3
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.post_message", _in(content="hi"))
    await teams.aclose()
    assert (caught.value.status, caught.value.code) == (401, "Unauthorized")
    assert APP_ONLY_POST in str(caught.value)  # Graph's own words
    assert POST_NEEDS_DELEGATION in str(caught.value)
    assert APP_TOKEN not in str(caught.value)
    assert not any(m.origin == "api" for m in fake.teams[TEAM_ID].channels[GENERAL].messages.values())


async def test_a_delegated_token_without_the_permission_gets_the_hint_too(
    fake: FakeGraph, server: FakeServer
) -> None:
    teams = connector_for(fake, server, SCOPELESS_TOKEN)
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.post_message", _in(content="hi"))
    await teams.aclose()
    assert (caught.value.status, caught.value.code) == (403, "Forbidden")
    assert "API requires one of 'ChannelMessage.Send" in str(caught.value)
    assert POST_NEEDS_DELEGATION in str(caught.value)


async def test_a_bad_token_is_not_told_to_be_delegated(fake: FakeGraph, server: FakeServer) -> None:
    teams = connector_for(fake, server, "eyJ0eXAiOiJKV1QifQ.expired.0123456789")
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.post_message", _in(content="hi"))
    await teams.aclose()
    assert (caught.value.status, caught.value.code) == (401, "InvalidAuthenticationToken")
    assert POST_NEEDS_DELEGATION not in str(caught.value)


async def test_a_blank_message_is_refused_before_any_request(teams: TeamsConnector, server: FakeServer) -> None:
    for blank in (" \n ", "\t", "\u3000"):  # Graph answers such a body 400
        with pytest.raises(InvalidArgumentsError, match="content"):
            await teams.call("teams.post_message", _in(content=blank))
    registry = registry_for([teams])
    with pytest.raises(InvalidArgumentsError, match="content"):  # the engine's schema check too
        registry.validate_arguments("teams.post_message", _in(content="   "))
    assert server.requests == []
    assert (await teams.call("teams.post_message", _in(content=" a ")))["id"]


async def test_the_size_limit_counts_the_utf8_bytes_of_the_body_as_sent(
    teams: TeamsConnector, server: FakeServer
) -> None:
    def size(args: dict[str, str]) -> int:
        return len(encode_body(PostMessageArgs.model_validate(_in(**{"content": "x", **args})).chat_message()))

    overhead = size({"content": "x"}) - 1
    ascii_fit = "a" * (MAX_BODY_BYTES - overhead)
    assert size({"content": ascii_fit}) == MAX_BODY_BYTES
    posted = await teams.call("teams.post_message", _in(content=ascii_fit))
    assert len(server.requests[-1].body) == MAX_BODY_BYTES  # what was counted is what was sent
    assert posted["id"]
    sent = len(server.requests)
    # 10,000 characters, far under 28,000, but three bytes each in UTF-8
    for too_big in ("€" * 10_000, ascii_fit + "a", '"' * 14_001):  # a quote takes two bytes as JSON
        with pytest.raises(InvalidArgumentsError, match="bytes as sent"):
            await teams.call("teams.post_message", _in(content=too_big))
    with pytest.raises(InvalidArgumentsError, match="bytes as sent"):  # the subject counts too
        await teams.call("teams.post_message", _in(content=ascii_fit[:-5], subject="Subject"))
    assert len(server.requests) == sent


async def test_a_lost_answer_to_a_post_is_uncertain_and_the_message_exists(
    teams: TeamsConnector, fake: FakeGraph, server: FakeServer
) -> None:
    server.faults.add(Fault.drop_after_read(apply=True), method="POST", times=1)
    with pytest.raises(EffectUncertainError):
        await teams.call("teams.post_message", _in(content="maybe"))
    assert [m.content for m in fake.teams[TEAM_ID].channels[GENERAL].messages.values()][-1] == "maybe"


async def test_an_accepted_post_whose_answer_lacks_the_id_is_uncertain(
    teams: TeamsConnector, server: FakeServer
) -> None:
    server.faults.add(Fault.status(201, json={"body": {"content": "x"}}, apply=True), times=1)
    with pytest.raises(EffectUncertainError) as caught:
        await teams.call("teams.post_message", _in(content="x"))
    assert "cannot be undone automatically" in str(caught.value)


# -- throttling ---------------------------------------------------------------------------


async def test_throttling_is_a_rate_limit_saying_when_to_retry(
    teams: TeamsConnector, fake: FakeGraph
) -> None:
    fake.exhaust_rate_limit()
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.post_message", _in(content="x"))
    assert (caught.value.status, caught.value.code) == (429, "rate_limited")
    assert "retry after 10 s" in str(caught.value)


async def test_a_503_with_retry_after_is_a_rate_limit_and_one_without_is_not(
    teams: TeamsConnector, server: FakeServer
) -> None:
    busy = {"error": {"code": "ServiceNotAvailable", "message": "Service busy"}}
    server.faults.add(Fault.status(503, json=busy, headers={"Retry-After": "3"}), times=1)
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.list_channels", {"team_id": TEAM_ID})
    assert (caught.value.status, caught.value.code) == (503, "rate_limited")
    server.faults.add(Fault.status(503, json=busy), times=1)
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.list_channels", {"team_id": TEAM_ID})
    assert (caught.value.status, caught.value.code) == (503, "ServiceNotAvailable")


# -- delete_message -----------------------------------------------------------------------


async def test_delete_soft_deletes_and_a_second_delete_succeeds(
    teams: TeamsConnector, fake: FakeGraph, server: FakeServer
) -> None:
    args = _in(message_id=WELCOME_ID)
    first = await teams.call("teams.delete_message", args)
    assert first == {**args, "already_deleted": False}
    assert fake.message(TEAM_ID, GENERAL, WELCOME_ID).deleted is not None
    assert server.requests[-1].body == b""  # softDelete takes no body
    assert server.requests[-1].target == _softdelete(WELCOME_ID).replace(":", "%3A").replace("@", "%40")
    assert [r.method for r in server.requests] == ["GET", "POST"]
    again = await teams.call("teams.delete_message", args)
    assert again == {**args, "already_deleted": True}  # the read before the softDelete tells
    assert [r.method for r in server.requests] == ["GET", "POST", "GET"]  # nothing sent again


async def test_a_message_seeded_soft_deleted_is_reported_already_deleted(
    teams: TeamsConnector, server: FakeServer
) -> None:
    done = await teams.call("teams.delete_message", _in(message_id=DELETED_ID))
    assert done["already_deleted"] is True
    assert [r.method for r in server.requests] == ["GET"]


async def test_a_404_for_a_message_already_soft_deleted_is_success(
    teams: TeamsConnector, server: FakeServer
) -> None:
    gone = {"error": {"code": "NotFound", "message": "Message was deleted."}}
    # soft-deleted by someone between the read and the softDelete, which Graph answers 404
    server.faults.add(Fault.status(404, json=gone, apply=True), path=_softdelete(WELCOME_ID), times=1)
    done = await teams.call("teams.delete_message", _in(message_id=WELCOME_ID))
    assert done["already_deleted"] is True
    assert [r.method for r in server.requests] == ["GET", "POST", "GET"]  # read back to be sure


async def test_a_404_for_a_message_that_stands_is_an_error(
    teams: TeamsConnector, fake: FakeGraph, server: FakeServer
) -> None:
    gone = {"error": {"code": "NotFound", "message": "Not found."}}
    server.faults.add(Fault.status(404, json=gone), path=_softdelete(WELCOME_ID), times=1)
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.delete_message", _in(message_id=WELCOME_ID))
    assert (caught.value.status, caught.value.code) == (404, "NotFound")
    assert fake.message(TEAM_ID, GENERAL, WELCOME_ID).deleted is None


async def test_deleting_a_message_that_never_existed_is_graphs_404(teams: TeamsConnector) -> None:
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.delete_message", _in(message_id="42"))
    assert (caught.value.status, caught.value.code) == (404, "NotFound")


async def test_a_delegated_token_without_readwrite_cannot_delete(
    fake: FakeGraph, server: FakeServer
) -> None:
    teams = connector_for(fake, server, SCOPELESS_TOKEN)
    with pytest.raises(ToolError) as caught:
        await teams.call("teams.delete_message", _in(message_id=WELCOME_ID))
    await teams.aclose()
    assert (caught.value.status, caught.value.code) == (403, "Forbidden")
    assert "ChannelMessage.ReadWrite" in str(caught.value)


# -- through the engine -------------------------------------------------------------------


async def test_a_run_that_posted_is_rolled_back_to_a_soft_deleted_placeholder(
    tmp_path: Path, fake: FakeGraph, server: FakeServer
) -> None:
    teams = connector_for(fake, server)
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([teams]), executor=executor_for([teams]))
    first, posted = await run.call("teams.post_message", _in(RELEASES, content="Deploying now"))
    second, other = await run.call("teams.post_message", _in(content="Also here"))
    report = await run.rollback(compensate=compensator_for([teams]))
    assert report.complete
    assert [s.compensation["resources"] for s in run.steps() if s.compensation] == [
        [f"teams:{TEAM_ID}/{RELEASES}/messages/{posted['id']}"],
        [f"teams:{TEAM_ID}/{GENERAL}/messages/{other['id']}"],
    ]
    assert report.waves == [[second, first]]  # two messages: undone at once
    message = fake.message(TEAM_ID, RELEASES, posted["id"])
    assert message.deleted is not None  # the placeholder stays: Graph cannot purge it
    assert fake.message(TEAM_ID, GENERAL, other["id"]).deleted is not None
    deleted = [r.path for r in server.requests if r.path.endswith("/softDelete")]
    assert sorted(deleted) == sorted([_softdelete(posted["id"], RELEASES), _softdelete(other["id"])])
    assert TOKEN not in (tmp_path / "data").joinpath("journal.sqlite3").read_bytes().decode(
        "latin-1"
    )
    await teams.aclose()
    journal.close()
