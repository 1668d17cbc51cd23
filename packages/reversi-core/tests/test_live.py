"""Live-record mode (reversi_core.testing._live): scrubbing, the leak check, strict replays.

A small HTTP connector ("keyed": notes behind a token, in four auth schemes) is recorded
with vcrpy against a fake that echoes the credential back, in a body, a header and a
cookie, as a careless vendor would. The cassette must hold no form of it; the leak check
must catch each form in a file; a replay must pass offline and fail for a changed path,
body or query, for a request left out and for one added.
"""

from __future__ import annotations

import base64
import copy
import json
import uuid
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
import vcr
import yaml
from pydantic import BaseModel, ConfigDict

from reversi_core.connector import CallContext
from reversi_core.errors import EffectUncertainError, ToolError
from reversi_core.http import (
    AuthScheme,
    Basic,
    Bearer,
    HeaderToken,
    HttpConnector,
    RequestTool,
    Setting,
    Timeouts,
)
from reversi_core.manifest import Compensation, Effect
from reversi_core.testing import (
    SUFFIX_PLACEHOLDER,
    CassetteMismatch,
    CassetteRejected,
    CertificationFixture,
    FakeApp,
    FakeRequest,
    FakeResponse,
    FakeServer,
    Fault,
    LiveCheckFailed,
    LiveContext,
    LiveScenario,
    LiveVariable,
    MissingLiveVariables,
    Secret,
    cassette_problems,
    credential_headers,
    record_live,
    replay_cassette,
    resolve_variables,
    secret_forms,
    secrets_in,
)

TOKEN = "kt_live/Secret+Token=0123456789"
"""The credential: with '/', '+' and '=' so that its URL and form encodings differ from it."""
USER = "robot@example.com"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextArgs(_Model):
    text: str


class IdArgs(_Model):
    id: str


class NoteResult(_Model):
    id: str | None = None
    text: str | None = None


class DoneResult(_Model):
    id: str
    deleted: bool


class Keyed(HttpConnector):
    """Notes behind a token; a base URL that must be given; an idempotency header on writes."""

    name = "keyed"
    settings = (
        Setting("KEYED_TOKEN", "token", "a keyed API token", secret=True),
        Setting("KEYED_USER", "user", "the account's email"),
        Setting("KEYED_BASE_URL", "base_url", "the keyed API root"),
    )
    auth: ClassVar[AuthScheme | None] = Bearer("token")
    idempotency_header = "Idempotency-Key"
    default_timeouts = Timeouts(connect=2, read=2, total=2)

    create_note = RequestTool(
        "POST",
        "/notes",
        effect=Effect.REVERSIBLE,
        permission="keyed:write",
        input=TextArgs,
        output=NoteResult,
        compensation=Compensation(tool="keyed.delete_note", argument_map={"id": "result.id"}),
        summary="Make a note.",
        docs="https://keyed.example/docs/notes#create",
        body=lambda args: {"text": args.text, "kind": "plain", "pinned": False},
        keep={"id": "id", "text": "text"},
        required=("id",),
    )
    get_note = RequestTool(
        "GET",
        "/notes/{id}",
        effect=Effect.READ_ONLY,
        permission="keyed:read",
        input=IdArgs,
        output=NoteResult,
        summary="Read a note.",
        docs="https://keyed.example/docs/notes#get",
        keep={"id": "id", "text": "text"},
    )
    delete_note = RequestTool(
        "DELETE",
        "/notes/{id}",
        effect=Effect.IDEMPOTENT,
        permission="keyed:write",
        input=IdArgs,
        output=DoneResult,
        summary="Delete a note; one already gone (404) counts as done.",
        docs="https://keyed.example/docs/notes#delete",
        already_done=(404,),
        echo=("id",),
        done_field="deleted",
    )


class PrivateToken(Keyed):
    auth = HeaderToken("PRIVATE-TOKEN")


class BasicAuth(Keyed):
    auth = Basic("user", "token")


class _QuerySigner(httpx.Auth):
    """Signs each request with the token in the query, as a presigned-URL vendor would."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.url = request.url.copy_merge_params({"signature": self.token})
        yield request


class QuerySigned(Keyed):
    auth = None

    def signer(self) -> httpx.Auth | None:
        return _QuerySigner(str(self._values["token"]))


class EchoNotes(FakeApp):
    """The notes API, answering with whatever credential it was sent: in the body, in a
    header and in a cookie (a vendor that echoes is what scrubbing must survive)."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: dict[str, str] = {}
        self.compressed_deletes = False  # answer deletes in an encoding vcrpy cannot decode
        self.add_route("POST", "/notes", self.create)
        self.add_route("GET", "/notes/{id}", self.read)
        self.add_route("DELETE", "/notes/{id}", self.delete)

    def _echo(
        self, request: FakeRequest, status: int, body: Mapping[str, Any] | None
    ) -> FakeResponse:
        sent = request.headers.get("authorization") or request.headers.get("private-token") or ""
        sent += request.query.get("signature", "")
        headers = {"X-Seen-Credential": sent, "Set-Cookie": f"session={TOKEN}; HttpOnly"}
        if body is None:
            return FakeResponse(status, headers=headers)
        return FakeResponse(status, json={**body, "seen": sent}, headers=headers)

    def create(self, request: FakeRequest) -> FakeResponse:
        ident = f"n{len(self.notes) + 1}"
        self.notes[ident] = request.json["text"]
        return self._echo(request, 201, {"id": ident, "text": self.notes[ident]})

    def read(self, request: FakeRequest) -> FakeResponse:
        ident = request.path_params["id"]
        if ident not in self.notes:
            return self._echo(request, 404, {"message": "no such note"})
        return self._echo(request, 200, {"id": ident, "text": self.notes[ident]})

    def delete(self, request: FakeRequest) -> FakeResponse:
        if self.notes.pop(request.path_params["id"], None) is None:
            return self._echo(request, 404, {"message": "no such note"})
        if self.compressed_deletes:
            return FakeResponse(204, headers={"Content-Encoding": "zstd"})
        return self._echo(request, 204, None)


async def note_scenario(live: LiveContext) -> None:
    """Make a note, read it back, roll back, check it is gone."""
    run = live.start_run()
    _, made = await run.call("keyed.create_note", {"text": live.name("note")})
    seen = await live.call("keyed.get_note", {"id": made["id"]})
    live.check(seen["text"] == live.name("note"), "the note to read back")
    await live.rollback(run)
    gone = await live.call("keyed.delete_note", {"id": made["id"]})
    live.check(gone["deleted"] is False, "the note to be gone after the rollback")


SCENARIO = LiveScenario(
    name="note",
    summary="Makes a note, reads it, rolls back and checks it is gone.",
    run=note_scenario,
    variables=(LiveVariable("KEYED_LIVE_FOLDER", "a folder to work in", default="inbox"),),
)


@pytest.fixture
def fake() -> EchoNotes:
    return EchoNotes()


@pytest.fixture
def server(fake: EchoNotes) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


def environ(server: FakeServer) -> dict[str, str]:
    return {"KEYED_TOKEN": TOKEN, "KEYED_USER": USER, "KEYED_BASE_URL": server.url}


async def record(
    cls: type[HttpConnector], server: FakeServer, tmp_path: Path, scenario: LiveScenario = SCENARIO
) -> Path:
    cassette = tmp_path / "cassettes" / f"{scenario.name}.yaml"
    await record_live(
        cls,
        scenario,
        environ(server),
        cassette,
        data_dir=tmp_path / "journal",
        against="the test backend",
        log=lambda _line: None,
    )
    return cassette


def every_form(*values: str) -> list[str]:
    return [form for value in values for form in secret_forms(value).values()]


# -- scrubbing -----------------------------------------------------------------------------

BASIC_VALUE = base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("cls", "placeholders"),
    [
        (Keyed, ["Bearer <KEYED_TOKEN>"]),
        (PrivateToken, ["<KEYED_TOKEN>"]),
        (BasicAuth, ["Basic <Authorization>"]),
        (QuerySigned, ["signature=<KEYED_TOKEN>"]),
    ],
    ids=["bearer", "private-token", "basic", "query-signature"],
)
async def test_a_recording_holds_no_form_of_the_credential(
    cls: type[HttpConnector],
    placeholders: list[str],
    fake: EchoNotes,
    server: FakeServer,
    tmp_path: Path,
) -> None:
    cassette = await record(cls, server, tmp_path)
    text = cassette.read_text()
    for form in every_form(TOKEN, BASIC_VALUE, f"Basic {BASIC_VALUE}"):
        assert form not in text
    for placeholder in placeholders:
        assert placeholder in text
    assert "session=" not in text  # the vendor's cookie is a credential of its own
    assert (
        cassette_problems(cassette, [Secret("KEYED_TOKEN", TOKEN)], headers=credential_headers(cls))
        == []
    )
    data = yaml.safe_load(text)
    assert len(data["interactions"]) == 4  # create, read, the rollback's delete, the delete again
    meta = data["metadata"]["reversi"]
    assert meta["scrubbed"][0] == "KEYED_TOKEN"
    # the required, non-secret settings and the scenario's variables, for the replay
    assert meta["variables"] == {
        "KEYED_USER": USER,
        "KEYED_BASE_URL": server.url,
        "KEYED_LIVE_FOLDER": "inbox",
    }
    assert fake.notes == {}  # the scenario rolled its note back
    report = await replay_cassette(cls, SCENARIO, cassette)
    assert report.exchanges == 4


@pytest.mark.anyio
async def test_the_runs_suffix_and_idempotency_keys_are_the_same_in_every_recording(
    server: FakeServer, tmp_path: Path
) -> None:
    first = await record(Keyed, server, tmp_path / "one")
    second = await record(Keyed, server, tmp_path / "two")
    keys = []
    for cassette in (first, second):
        data = yaml.safe_load(cassette.read_text())
        made = data["interactions"][0]["request"]
        assert json.loads(made["body"])["text"] == f"note-{SUFFIX_PLACEHOLDER}"
        keys.append([i["request"]["headers"].get("idempotency-key") for i in data["interactions"]])
    assert keys[0] == keys[1]
    run = f"run_live_{SUFFIX_PLACEHOLDER}_1"
    assert keys[0] == [
        [f"reversi-{run}-1"],  # the forward step
        None,  # a read carries no key
        [f"reversi-{run}-1-undo"],  # its compensation
        [f"reversi-live-{SUFFIX_PLACEHOLDER}-direct-2"],  # the scenario's own check
    ]


@pytest.mark.anyio
async def test_a_recording_whose_answers_cannot_be_checked_is_refused_and_the_old_cassette_kept(
    fake: EchoNotes, server: FakeServer, tmp_path: Path
) -> None:
    cassette = await record(Keyed, server, tmp_path)
    before = cassette.read_bytes()

    fake.compressed_deletes = True
    with pytest.raises(CassetteRejected) as refused:
        await record(Keyed, server, tmp_path)
    assert any("still ['zstd'] encoded" in p for p in refused.value.problems), (
        refused.value.problems
    )
    assert cassette.read_bytes() == before
    assert sorted(p.name for p in cassette.parent.iterdir()) == [cassette.name]


class _UserSigner(httpx.Auth):
    def __init__(self, user: str) -> None:
        self.user = user

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Token {self.user}"
        yield request


class WrongSecret(Keyed):
    """Declares KEYED_TOKEN secret but signs with KEYED_USER: the scrubbing aims wrong."""

    auth = None

    def signer(self) -> httpx.Auth | None:
        return _UserSigner(str(self.setting("user")))


@pytest.mark.anyio
async def test_a_recording_where_the_declared_credential_was_never_sent_is_refused(
    server: FakeServer, tmp_path: Path
) -> None:
    with pytest.raises(CassetteRejected) as refused:
        await record(WrongSecret, server, tmp_path)
    assert any("no recorded request carried KEYED_TOKEN" in p for p in refused.value.problems), (
        refused.value.problems
    )
    assert not (tmp_path / "cassettes" / "note.yaml").exists()


async def failing_scenario(live: LiveContext) -> None:
    run = live.start_run()
    await run.call("keyed.create_note", {"text": live.name("left behind?")})
    raise LiveCheckFailed("expected something the vendor does not hold")


@pytest.mark.anyio
async def test_a_failed_scenario_is_rolled_back_and_records_nothing(
    fake: EchoNotes, server: FakeServer, tmp_path: Path
) -> None:
    failing = LiveScenario(name="note", summary="Fails after making a note.", run=failing_scenario)
    lines: list[str] = []
    with pytest.raises(LiveCheckFailed):
        await record_live(
            Keyed,
            failing,
            environ(server),
            tmp_path / "cassettes" / "note.yaml",
            data_dir=tmp_path / "journal",
            against="the test backend",
            log=lines.append,
        )
    assert fake.notes == {}  # the cleanup rolled the note back
    assert any("cleanup: rolled back run_live_" in line for line in lines), lines
    assert list((tmp_path / "cassettes").iterdir()) == []


def test_missing_variables_are_named_with_their_help_never_a_value() -> None:
    with pytest.raises(MissingLiveVariables) as missing:
        resolve_variables(Keyed, SCENARIO, {"KEYED_USER": USER, "KEYED_LIVE_FOLDER": " "})
    assert [v.env for v in missing.value.missing] == ["KEYED_TOKEN", "KEYED_BASE_URL"]
    text = str(missing.value)
    assert "KEYED_TOKEN: a keyed API token" in text
    assert "KEYED_LIVE_FOLDER: a folder to work in (default: inbox)" in text  # optional, listed
    assert USER not in text
    given = {"KEYED_TOKEN": TOKEN, "KEYED_USER": USER, "KEYED_BASE_URL": "https://k.example"}
    assert resolve_variables(Keyed, SCENARIO, given) == {"KEYED_LIVE_FOLDER": "inbox"}


def test_the_credentials_of_each_auth_scheme() -> None:
    env = {"KEYED_TOKEN": TOKEN, "KEYED_USER": USER, "KEYED_BASE_URL": "https://k.example"}
    assert secrets_in(Keyed, env) == [Secret("KEYED_TOKEN", TOKEN)]
    assert secrets_in(PrivateToken, env) == [Secret("KEYED_TOKEN", TOKEN)]
    # basic: the base64 of user:token holds no credential whole, so it is one of its own
    assert secrets_in(BasicAuth, env) == [
        Secret("KEYED_TOKEN", TOKEN),
        Secret("Authorization", BASIC_VALUE),
    ]
    assert credential_headers(PrivateToken) >= {"private-token", "authorization", "cookie"}


# -- the leak check ---------------------------------------------------------------------------


def cassette_with(
    tmp_path: Path,
    *,
    uri: str = "https://k.example/notes",
    body: str = "",
    headers: Mapping[str, list[str]] | None = None,
    answer: str = "{}",
    answer_headers: Mapping[str, list[str]] | None = None,
) -> Path:
    data = {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": uri,
                    "body": body,
                    "headers": dict(headers or {"authorization": ["Bearer <KEYED_TOKEN>"]}),
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": dict(answer_headers or {}),
                    "body": {"string": answer},
                },
            }
        ],
        "version": 1,
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


SECRETS = [Secret("KEYED_TOKEN", TOKEN)]


@pytest.mark.parametrize(
    ("form", "where"),
    [
        ("raw", "body"),
        ("URL-encoded", "uri"),
        ("URL-encoded, / kept", "uri"),
        ("URL-encoded (lower-case hex)", "body"),
        ("base64", "answer"),
        ("base64 unpadded", "answer"),
    ],
)
def test_the_leak_check_finds_each_form_of_a_secret_and_names_only_its_label(
    tmp_path: Path, form: str, where: str
) -> None:
    shown = secret_forms(TOKEN)[form]
    place = {
        "uri": {"uri": f"https://k.example/notes?key={shown}"},
        "body": {"body": f"token={shown}"},
        "answer": {"answer": json.dumps({"echo": shown})},
    }[where]
    path = cassette_with(tmp_path, **place)
    problems = cassette_problems(path, SECRETS)
    assert any(
        p.startswith(f"KEYED_TOKEN ({form}) in cassette.interactions[0]") for p in problems
    ), problems
    assert all(TOKEN not in p and shown not in p for p in problems)
    assert cassette_problems(cassette_with(tmp_path), SECRETS) == []


def test_the_leak_check_decodes_basic_auth_and_wants_placeholders_in_credential_headers(
    tmp_path: Path,
) -> None:
    basic = cassette_with(tmp_path, headers={"authorization": [f"Basic {BASIC_VALUE}"]})
    problems = cassette_problems(basic, SECRETS)
    where = "cassette.interactions[0].request.headers.authorization[0]"
    assert f"KEYED_TOKEN (inside a basic-auth value) in {where}" in problems
    unknown = cassette_with(tmp_path, headers={"private-token": ["some-other-token"]})
    assert cassette_problems(unknown, SECRETS, headers=frozenset({"private-token"})) == [
        "interactions[0].request.headers.private-token holds a value that is not a placeholder"
    ]


def test_the_leak_check_refuses_a_compressed_answer_and_a_file_that_is_not_plain_data(
    tmp_path: Path,
) -> None:
    gzipped = cassette_with(tmp_path, answer_headers={"Content-Encoding": ["gzip"]})
    assert cassette_problems(gzipped, SECRETS) == [
        "interactions[0].response is still ['gzip'] encoded: its body cannot be checked for credentials"
    ]
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text("interactions: !!python/object:os.system {}\n")
    assert "is not plain YAML data" in cassette_problems(tagged, SECRETS)[0]


# -- strict replays ---------------------------------------------------------------------------


def _retarget(tool: RequestTool, **changes: Any) -> RequestTool:
    changed = copy.copy(tool)
    for name, value in changes.items():
        setattr(changed, name, value)
    return changed


class OtherPath(Keyed):
    delete_note = _retarget(Keyed.delete_note, path="/notes/{id}/delete")


class OtherBody(Keyed):
    create_note = _retarget(
        Keyed.create_note, body=lambda args: {"text": args.text, "kind": "rich", "pinned": False}
    )


class ReorderedBody(Keyed):
    create_note = _retarget(
        Keyed.create_note, body=lambda args: {"pinned": False, "kind": "plain", "text": args.text}
    )


@pytest.fixture
async def cassette(server: FakeServer, tmp_path: Path) -> Path:
    return await record(Keyed, server, tmp_path)


@pytest.mark.anyio
async def test_a_replay_needs_no_network_and_ignores_json_key_order(
    cassette: Path, server: FakeServer
) -> None:
    server.close()  # nothing listens any more
    report = await replay_cassette(Keyed, SCENARIO, cassette)
    assert report.sent == ["POST /notes", "GET /notes/n1", "DELETE /notes/n1", "DELETE /notes/n1"]
    assert (
        await replay_cassette(Keyed, SCENARIO, cassette, connector_class=ReorderedBody)
    ).exchanges == 4


@pytest.mark.anyio
async def test_a_replay_fails_for_a_changed_path(cassette: Path) -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(Keyed, SCENARIO, cassette, connector_class=OtherPath)
    problems = failed.value.problems
    assert problems[0].startswith(
        "the connector sent DELETE /notes/n1/delete, which the cassette does not hold "
        "(closest recorded: DELETE /notes/n1, differing in path"
    ), problems
    assert "the connector never sent DELETE /notes/n1 (recorded exchange 3)" in problems


@pytest.mark.anyio
async def test_a_replay_fails_for_a_changed_body_field(cassette: Path) -> None:
    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(Keyed, SCENARIO, cassette, connector_class=OtherBody)
    first = failed.value.problems[0]
    assert first.startswith("the connector sent POST /notes, which the cassette does not hold"), (
        first
    )
    assert "body:" in first
    assert '"rich"' in first
    assert '"plain"' in first
    assert "the connector never sent POST /notes (recorded exchange 1)" in failed.value.problems


class NoRead(Keyed):
    """get_note answers from memory: the read the scenario checks with is never sent."""

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: CallContext | None = None
    ) -> dict[str, Any]:
        if name == "keyed.get_note":
            return {"id": args["id"], "text": f"note-{SUFFIX_PLACEHOLDER}"}
        return await super().call(name, args, ctx)


class ExtraRead(Keyed):
    """Reads the note once more before deleting it: a request the cassette never saw."""

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: CallContext | None = None
    ) -> dict[str, Any]:
        if name == "keyed.delete_note":
            await super().call("keyed.get_note", {"id": args["id"]}, ctx)
        return await super().call(name, args, ctx)


@pytest.mark.anyio
async def test_a_replay_fails_for_a_request_left_out_and_for_one_added(cassette: Path) -> None:
    with pytest.raises(CassetteMismatch) as missing:
        await replay_cassette(Keyed, SCENARIO, cassette, connector_class=NoRead)
    assert missing.value.problems == [
        "the connector never sent GET /notes/n1 (recorded exchange 2)"
    ]
    with pytest.raises(CassetteMismatch) as extra:
        await replay_cassette(Keyed, SCENARIO, cassette, connector_class=ExtraRead)
    assert extra.value.problems[0].startswith(
        "the connector sent GET /notes/n1, which the cassette does not hold"
    ), extra.value.problems


@pytest.mark.anyio
async def test_a_replay_fails_for_a_changed_query(server: FakeServer, tmp_path: Path) -> None:
    cassette = await record(QuerySigned, server, tmp_path)
    assert (await replay_cassette(QuerySigned, SCENARIO, cassette)).exchanges == 4

    class OtherSignature(QuerySigned):
        def signer(self) -> httpx.Auth | None:
            return _QuerySigner("another-signature")

    with pytest.raises(CassetteMismatch) as failed:
        await replay_cassette(QuerySigned, SCENARIO, cassette, connector_class=OtherSignature)
    assert "differing in query" in failed.value.problems[0], failed.value.problems


class _NonceSigner(httpx.Auth):
    """Puts a fresh random nonce in each request's query, as some signing schemes do."""

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.url = request.url.copy_merge_params({"nonce": str(uuid.uuid4())})
        yield request


class MakesUpNames(Keyed):
    """Sends a uuid4 it makes up itself in every query and in the body of a new note."""

    create_note = _retarget(
        Keyed.create_note,
        body=lambda args: {
            "text": args.text,
            "kind": "plain",
            "pinned": False,
            "tag": str(uuid.uuid4()),
        },
    )

    def signer(self) -> httpx.Auth | None:
        return _NonceSigner()


UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


@pytest.mark.anyio
async def test_what_the_connector_makes_up_matches_only_where_declared_volatile(
    server: FakeServer, tmp_path: Path
) -> None:
    steady = LiveScenario(
        name="note", summary="The note scenario.", run=note_scenario, volatile=(UUID4,)
    )
    cassette = await record(MakesUpNames, server, tmp_path, steady)  # recording replays once too
    assert (await replay_cassette(MakesUpNames, steady, cassette)).exchanges == 4
    with pytest.raises(CassetteMismatch) as strict:  # the same cassette, nothing declared
        await replay_cassette(MakesUpNames, SCENARIO, cassette)
    assert "differing in query" in strict.value.problems[0], strict.value.problems

    class OtherTagField(MakesUpNames):
        create_note = _retarget(
            MakesUpNames.create_note,
            body=lambda args: {
                "text": args.text,
                "kind": "plain",
                "pinned": False,
                "label": str(uuid.uuid4()),
            },
        )

    with pytest.raises(CassetteMismatch) as changed:  # only the values are volatile, not the rest
        await replay_cassette(MakesUpNames, steady, cassette, connector_class=OtherTagField)
    assert "differing in body" in changed.value.problems[0], changed.value.problems


@pytest.mark.anyio
async def test_a_cassette_of_another_scenario_is_refused(cassette: Path) -> None:
    other = LiveScenario(name="other", summary="Another scenario.", run=note_scenario)
    with pytest.raises(CassetteMismatch, match="not a cassette of the live scenario 'other'"):
        await replay_cassette(Keyed, other, cassette)


# -- vcrpy and our HTTP client ----------------------------------------------------------------


@pytest.mark.anyio
async def test_recording_keeps_the_meaning_of_a_lost_answer(
    fake: EchoNotes, server: FakeServer, tmp_path: Path
) -> None:
    """vcrpy patches httpx's async transport; our client still learns from httpcore's trace
    events whether a request left: a write dropped after it was read is uncertain, a
    refused connection is a definite connect failure."""
    keyed = Keyed.from_env(environ(server))
    with vcr.VCR(record_mode="all").use_cassette(str(tmp_path / "c.yaml")) as recording:
        server.faults.add(Fault.drop_after_read(), times=1)
        with pytest.raises(EffectUncertainError):
            await keyed.call("keyed.create_note", {"text": "lost"})
        made = await keyed.call("keyed.create_note", {"text": "kept"})
        assert made["id"]
        assert len(recording) == 1  # the lost exchange has no answer to record
    await keyed.aclose()
    refused = Keyed.from_env({**environ(server), "KEYED_BASE_URL": "http://127.0.0.1:9"})
    with (
        vcr.VCR(record_mode="all").use_cassette(str(tmp_path / "d.yaml")),
        pytest.raises(ToolError) as failed,
    ):
        await refused.call("keyed.create_note", {"text": "never sent"})
    assert failed.value.code == "connect"
    await refused.aclose()


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="lower-case letters"):
        LiveScenario(name="Notes", summary="x", run=note_scenario)
    with pytest.raises(ValueError, match="needs a summary"):
        LiveScenario(name="notes", summary=" ", run=note_scenario)
    with pytest.raises(ValueError, match="upper-case name"):
        LiveVariable("lower", "help")
    with pytest.raises(ValueError, match="twice"):
        LiveScenario(
            name="notes",
            summary="s",
            run=note_scenario,
            variables=(LiveVariable("A_B", "x"), LiveVariable("A_B", "y")),
        )
    with pytest.raises(ValueError, match="does not compile"):
        LiveScenario(name="notes", summary="s", run=note_scenario, volatile=("[0-9",))
    with pytest.raises(ValueError, match="matches the empty string"):
        LiveScenario(name="notes", summary="s", run=note_scenario, volatile=("[0-9a-f]*",))
    with pytest.raises(ValueError, match="live must be a LiveScenario or a NotApplicable"):
        CertificationFixture(
            backend=lambda d: None,  # type: ignore[arg-type,return-value]
            build=lambda h: None,  # type: ignore[arg-type,return-value]
            fingerprint=lambda h: None,
            examples={},
            live="not a scenario",  # type: ignore[arg-type]
        )
