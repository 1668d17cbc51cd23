"""``memo``: a small synthetic HTTP connector, its fake, its fixture, and broken variants of it.

The well-behaved :class:`MemoConnector` talks to a fake notes service through
:class:`reversi_core.http.HttpClient`; the fake is a :class:`reversi_core.testing.FakeApp`
served by a real :class:`reversi_core.testing.FakeServer`. It passes all thirteen checks
(``memo.tag_note`` declares ``requires`` on the ``memo.create_note`` that made the note;
``memo.delete_note`` and ``memo.restore_note`` send the ``ETag`` the forward call produced
in ``If-Match``, so a rollback never overwrites a note someone edited since), so it is
also a worked example of a fixture for an HTTP connector.

Each ``Broken*`` subclass gets exactly one thing wrong, the way a real connector might;
``test_selftest.py`` shows the check that must catch it failing.

:class:`MemoVendorCodes` stands for a connector whose vendor does not answer in HTTP
statuses (a database, a message broker): its refusals carry only the vendor's own code
(:data:`VENDOR_CODES`), which its fixture declares in ``error_codes``, the way the
postgres fixture declares SQLSTATEs.

The fake service (all routes need ``Authorization: Bearer <TOKEN>``, else 401) takes an
``Idempotency-Key`` header on writes, as Stripe does
(https://docs.stripe.com/api/idempotent_requests): a write repeated with a key it saw
gets the first answer again, without acting twice; the same key on a different request
is refused (422 ``idempotency_key_reused``). The connector sends the call's key on every
write, so its fixture lists every writing tool in ``sends_idempotency_key``. Routes:

Every answer carrying a note has its ``ETag`` (a strong validator of its text,
https://www.rfc-editor.org/rfc/rfc9110#name-etag); a write with ``If-Match`` whose tag
is not the note's current one is refused 412 ``precondition_failed``
(https://www.rfc-editor.org/rfc/rfc9110#name-if-match).

- ``GET /notes/{id}``: the note, or 404;
- ``POST /notes`` ``{"text"}``: 201 with the new note; 422 for an empty text;
- ``PATCH /notes/{id}`` ``{"text"}``: 200 with the note; 404; 412 (``If-Match``);
- ``DELETE /notes/{id}``: 204, or 404; 412 (``If-Match``);
- ``POST /notes/{id}/tags`` ``{"tag"}``: 201; 404 without the note; 422 when tagged already;
- ``DELETE /notes/{id}/tags/{tag}``: 204, or 404;
- ``POST /notes/{id}/views``: counts a view (only the broken reader calls it);
- ``POST /notes/query`` ``{"id"}``: the note, or 404: a read by POST, declared
  ``writes=False`` as a GraphQL query would be (only :class:`MemoReadsByPost` calls it).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, WithJsonSchema

from reversi_core import CallContext, Compensation, Connector, Match, Requirement, ToolError, tool
from reversi_core.http import HttpClient, Timeouts, url_path
from reversi_core.manifest import Effect
from reversi_core.testing import (
    WRITE_METHODS,
    CertificationFixture,
    ConcurrentChange,
    Dependency,
    ExampleContext,
    Failure,
    FakeApp,
    FakeRequest,
    FakeResponse,
    FakeServer,
    IdempotencyKeyIn,
)

TOKEN = "memo-certification-token-5f2a9c"
"""The credential the fixture gives every memo connector."""

LIMIT = 0.3
"""Seconds the timeout check gives the memo connectors (``call_timeout``) for an answer."""

PATIENCE = 10.0
"""Seconds every other check's memo connector waits for an answer: those checks never
silence the backend, and a CI worker stalled for longer than :data:`LIMIT` must not fail
them (as the connectors' own fixtures do)."""

KEY_HEADER = "Idempotency-Key"
"""The request header in which the memo service takes a write's idempotency key."""

VENDOR_CODES: Mapping[int, str] = {
    401: "MEMO-AUTH",
    403: "MEMO-DENIED",
    422: "MEMO-INVALID",
    503: "MEMO-BUSY",
}
"""The codes :class:`MemoVendorCodes` answers with instead of these HTTP statuses."""


# -- the fake service ------------------------------------------------------------------


class MemoApp(FakeApp):
    """The fake notes service; ``notes`` is its whole state."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: dict[str, dict[str, Any]] = {}
        self.answered: dict[str, tuple[tuple[str, str, bytes], FakeResponse]] = {}
        """The first answer to each idempotency key, with the request it answered."""
        self._ids = itertools.count(1)
        self.add_route("GET", "/notes/{id}", self.get_note)
        self.add_route("POST", "/notes", self.create_note)
        self.add_route("PATCH", "/notes/{id}", self.edit_note)
        self.add_route("DELETE", "/notes/{id}", self.delete_note)
        self.add_route("POST", "/notes/{id}/tags", self.add_tag)
        self.add_route("DELETE", "/notes/{id}/tags/{tag}", self.remove_tag)
        self.add_route("POST", "/notes/{id}/views", self.count_view)
        self.add_route("POST", "/notes/query", self.query_note, writes=False)

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return FakeResponse(401, json={"code": "unauthorized", "message": "Bad credentials"})
        key = request.headers.get(KEY_HEADER)
        if key is None or request.method not in WRITE_METHODS:
            return super().dispatch(request)
        sent = (request.method, request.path, request.body)
        with self.lock:
            if key in self.answered:
                first, answer = self.answered[key]
                if first != sent:
                    return FakeResponse(
                        422,
                        json={
                            "code": "idempotency_key_reused",
                            "message": "the key was used with another request",
                        },
                    )
                return answer
            answer = super().dispatch(request)
            # As Stripe keeps no result for a request that never began executing
            # (https://docs.stripe.com/api/idempotent_requests), a write refused by its
            # precondition leaves the key unused: the same request may be retried once
            # the note holds what If-Match expects.
            if answer.status < 500 and answer.status != 412:
                self.answered[key] = (sent, answer)
            return answer

    @staticmethod
    def missing() -> FakeResponse:
        return FakeResponse(404, json={"code": "not_found", "message": "Not Found"})

    @staticmethod
    def answer(status: int, note: dict[str, Any]) -> FakeResponse:
        return FakeResponse(status, json=note, headers={"ETag": etag_of(note["text"])})

    @staticmethod
    def stale(request: FakeRequest, note: dict[str, Any]) -> FakeResponse | None:
        """412 when the request's ``If-Match`` is not the note's current ETag, else ``None``."""
        wanted = request.headers.get("if-match")
        if wanted is None or wanted == etag_of(note["text"]):
            return None
        return FakeResponse(
            412, json={"code": "precondition_failed", "message": "the note has changed"}
        )

    def get_note(self, request: FakeRequest) -> FakeResponse:
        note = self.notes.get(request.path_params["id"])
        return self.answer(200, note) if note else self.missing()

    def create_note(self, request: FakeRequest) -> FakeResponse:
        text = (request.json or {}).get("text", "")
        if not text:
            return FakeResponse(422, json={"code": "invalid", "message": "text is empty"})
        note = {"id": f"n{next(self._ids)}", "text": text, "tags": [], "views": 0}
        self.notes[note["id"]] = note
        return self.answer(201, note)

    def edit_note(self, request: FakeRequest) -> FakeResponse:
        note = self.notes.get(request.path_params["id"])
        if note is None:
            return self.missing()
        text = (request.json or {}).get("text", "")
        if not text:
            return FakeResponse(422, json={"code": "invalid", "message": "text is empty"})
        refused = self.stale(request, note)
        if refused is not None:
            return refused
        note["text"] = text
        return self.answer(200, note)

    def delete_note(self, request: FakeRequest) -> FakeResponse:
        note = self.notes.get(request.path_params["id"])
        if note is None:
            return self.missing()
        refused = self.stale(request, note)
        if refused is not None:
            return refused
        del self.notes[note["id"]]
        return FakeResponse(204)

    def add_tag(self, request: FakeRequest) -> FakeResponse:
        note = self.notes.get(request.path_params["id"])
        if note is None:
            return self.missing()
        tag = (request.json or {}).get("tag", "")
        if tag in note["tags"]:
            return FakeResponse(422, json={"code": "exists", "message": f"already tagged {tag}"})
        note["tags"].append(tag)
        return FakeResponse(201, json={"id": note["id"], "tag": tag})

    def remove_tag(self, request: FakeRequest) -> FakeResponse:
        note = self.notes.get(request.path_params["id"])
        tag = request.path_params["tag"]
        if note is None or tag not in note["tags"]:
            return self.missing()
        note["tags"].remove(tag)
        return FakeResponse(204)

    def query_note(self, request: FakeRequest) -> FakeResponse:
        note = self.notes.get(str((request.json or {}).get("id")))
        return FakeResponse(200, json=note) if note else self.missing()

    def count_view(self, request: FakeRequest) -> FakeResponse:
        note = self.notes.get(request.path_params["id"])
        if note is None:
            return self.missing()
        note["views"] += 1
        return FakeResponse(200, json={"views": note["views"]})


def etag_of(text: str) -> str:
    """The note's strong ETag: a quoted digest of its text."""
    return '"' + hashlib.sha256(text.encode()).hexdigest()[:16] + '"'


# -- the connector ---------------------------------------------------------------------


class NoteId(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str


class NoteToDelete(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    etag: str | None = None


class NoteText(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    text: str


class NoteRestore(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    text: str
    etag: str | None = None


class NewNote(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str


class NoteTag(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    tag: str


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Note(_Result):
    """Result of memo.get_note: the note as the service keeps it."""

    id: str
    text: str
    tags: list[str]
    views: int


class Created(_Result):
    """Result of memo.create_note."""

    id: str
    etag: str


class Edited(_Result):
    """Result of memo.edit_note: the text it replaced, and the ETag of what it wrote."""

    id: str
    previous: str
    etag: str


class Restored(_Result):
    """Result of memo.restore_note."""

    id: str
    restored: bool


class Deleted(_Result):
    """Result of memo.delete_note."""

    id: str
    deleted: bool


class Tagged(_Result):
    """Result of memo.tag_note."""

    id: str
    tag: str


class Untagged(_Result):
    """Result of memo.untag_note."""

    id: str
    tag: str
    removed: bool


CREATED_HERE = Requirement(
    tool="memo.create_note", match=[Match(this="args.id", earlier="result.id")]
)

CREATE_UNDO = Compensation(
    tool="memo.delete_note", argument_map={"id": "result.id", "etag": "result.etag"}
)

EDIT_UNDO = Compensation(
    tool="memo.restore_note",
    argument_map={"id": "result.id", "text": "result.previous", "etag": "result.etag"},
)


class MemoConnector(Connector):
    """A well-behaved connector for the fake notes service."""

    name = "memo"
    credential_env = "MEMO_TOKEN"
    vendor_codes = False
    """Whether refusals carry the vendor's code instead of the HTTP status."""

    def __init__(self, base_url: str, token: str, timeouts: Timeouts | None = None) -> None:
        self.token = token
        self.http = HttpClient(
            base_url,
            vendor="memo",
            headers={"Authorization": f"Bearer {token}"},
            secrets=[token],
            timeouts=timeouts or Timeouts(connect=LIMIT, read=LIMIT, total=LIMIT),
            idempotency_header=KEY_HEADER,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> Connector:
        return cls(options["base_url"], environ["MEMO_TOKEN"])

    async def aclose(self) -> None:
        await self.http.aclose()

    def limits(self, ctx: CallContext) -> Timeouts:
        return self.http.timeouts.capped_at(ctx.timeout)

    @tool(effect=Effect.READ_ONLY, permission="memo:read", input=NoteId, output=Note)
    async def get_note(self, args: NoteId, ctx: CallContext) -> dict[str, Any]:
        """Read a note."""
        resp = await self.http.request(
            "GET", url_path("/notes/{id}", id=args.id), timeouts=self.limits(ctx)
        )
        return dict(resp.json or {})

    @staticmethod
    def if_match(etag: str | None, ctx: CallContext) -> dict[str, str]:
        """``If-Match`` with ``etag``, unless there is none or a person allowed an overwrite."""
        return {} if etag is None or ctx.overwrite else {"If-Match": etag}

    def changed(self, name: str, what: str) -> ToolError:
        """The refusal of a compensation whose note changed since the call (a 412)."""
        return ToolError(
            f"{name}: the note's text changed since the call (HTTP 412); {what}",
            status=412,
            code="changed_since",
        )

    @tool(
        effect=Effect.REVERSIBLE,
        permission="memo:write",
        input=NewNote,
        output=Created,
        compensation=CREATE_UNDO,
    )
    async def create_note(self, args: NewNote, ctx: CallContext) -> dict[str, Any]:
        """Create a note: ``{"id", "etag"}`` (the ETag of what it wrote)."""
        resp = await self.http.request(
            "POST",
            "/notes",
            json={"text": args.text},
            idempotency_key=ctx.idempotency_key,
            timeouts=self.limits(ctx),
        )
        return {"id": (resp.json or {})["id"], "etag": resp.headers["etag"]}

    @tool(effect=Effect.IDEMPOTENT, permission="memo:delete", input=NoteToDelete, output=Deleted)
    async def delete_note(self, args: NoteToDelete, ctx: CallContext) -> dict[str, Any]:
        """Delete a note; one already gone is success.

        With ``etag``, only while the note still has it (``If-Match``): a note edited
        since is refused with code ``changed_since``, unless ``ctx.overwrite``.
        """
        try:
            resp = await self.http.request(
                "DELETE",
                url_path("/notes/{id}", id=args.id),
                ok_statuses={404},
                headers=self.if_match(args.etag, ctx),
                idempotency_key=ctx.idempotency_key,
                timeouts=self.limits(ctx),
            )
        except ToolError as exc:
            if exc.status == 412:
                raise self.changed("memo.delete_note", "it was not deleted") from None
            raise
        return {"id": args.id, "deleted": resp.status != 404}

    @tool(
        effect=Effect.COMPENSABLE,
        permission="memo:write",
        input=NoteText,
        output=Edited,
        compensation=EDIT_UNDO,
        requires=[CREATED_HERE],
    )
    async def edit_note(self, args: NoteText, ctx: CallContext) -> dict[str, Any]:
        """Replace a note's text: ``{"id", "previous", "etag"}`` (the old text, the new ETag)."""
        path = url_path("/notes/{id}", id=args.id)
        read = await self.http.request("GET", path, timeouts=self.limits(ctx))
        resp = await self.http.request(
            "PATCH",
            path,
            json={"text": args.text},
            headers={"If-Match": read.headers["etag"]},
            idempotency_key=ctx.idempotency_key,
            timeouts=self.limits(ctx),
        )
        previous = (read.json or {})["text"]
        return {"id": args.id, "previous": previous, "etag": resp.headers["etag"]}

    @tool(effect=Effect.IDEMPOTENT, permission="memo:write", input=NoteRestore, output=Restored)
    async def restore_note(self, args: NoteRestore, ctx: CallContext) -> dict[str, Any]:
        """Put a note's old text back, only while it holds what the edit wrote (``etag``).

        A 412 with the old text already there is success (``restored`` false); with any
        other text, code ``changed_since``, unless ``ctx.overwrite``.
        """
        path = url_path("/notes/{id}", id=args.id)
        try:
            await self.http.request(
                "PATCH",
                path,
                json={"text": args.text},
                headers=self.if_match(args.etag, ctx),
                idempotency_key=ctx.idempotency_key,
                timeouts=self.limits(ctx),
            )
        except ToolError as exc:
            if exc.status != 412:
                raise
            now = await self.http.request("GET", path, timeouts=self.limits(ctx))
            if (now.json or {}).get("text") != args.text:
                raise self.changed("memo.restore_note", "nothing was restored") from None
            return {"id": args.id, "restored": False}
        return {"id": args.id, "restored": True}

    @tool(
        effect=Effect.REVERSIBLE,
        permission="memo:write",
        input=NoteTag,
        output=Tagged,
        compensation=Compensation(
            tool="memo.untag_note", argument_map={"id": "args.id", "tag": "args.tag"}
        ),
        requires=[CREATED_HERE],
    )
    async def tag_note(self, args: NoteTag, ctx: CallContext) -> dict[str, Any]:
        """Tag a note."""
        await self.http.request(
            "POST",
            url_path("/notes/{id}/tags", id=args.id),
            json={"tag": args.tag},
            idempotency_key=ctx.idempotency_key,
            timeouts=self.limits(ctx),
        )
        return {"id": args.id, "tag": args.tag}

    @tool(effect=Effect.IDEMPOTENT, permission="memo:delete", input=NoteTag, output=Untagged)
    async def untag_note(self, args: NoteTag, ctx: CallContext) -> dict[str, Any]:
        """Remove a tag; one already gone is success."""
        resp = await self.http.request(
            "DELETE",
            url_path("/notes/{id}/tags/{tag}", id=args.id, tag=args.tag),
            ok_statuses={404},
            idempotency_key=ctx.idempotency_key,
            timeouts=self.limits(ctx),
        )
        return {"id": args.id, "tag": args.tag, "removed": resp.status != 404}


# -- the fixture -----------------------------------------------------------------------


@contextmanager
def memo_backend(directory: Path) -> Iterator[FakeServer]:
    with FakeServer(MemoApp()) as server:
        yield server


def seed(server: FakeServer) -> None:
    app = server.app
    assert isinstance(app, MemoApp)
    app.notes["n0"] = {"id": "n0", "text": "seeded", "tags": ["old"], "views": 0}


def fingerprint(server: FakeServer) -> dict[str, Any]:
    app = server.app
    assert isinstance(app, MemoApp)
    with app.lock:
        return {"notes": copy.deepcopy(app.notes)}


async def _a_note(ctx: ExampleContext[FakeServer]) -> Mapping[str, Any]:
    made = await ctx.call("memo.create_note", {"text": "to delete"})
    return {"id": made["id"]}


async def _a_tag(ctx: ExampleContext[FakeServer]) -> Mapping[str, Any]:
    await ctx.call("memo.tag_note", {"id": "n0", "tag": "fresh"})
    return {"id": "n0", "tag": "fresh"}


async def _tag_the_new_note(ctx: ExampleContext[FakeServer]) -> Mapping[str, Any]:
    return {"id": ctx.results["memo.create_note"]["id"], "tag": "t"}


async def _edit_the_new_note(ctx: ExampleContext[FakeServer]) -> Mapping[str, Any]:
    return {"id": ctx.results["memo.create_note"]["id"], "text": "edited"}


async def _an_edit(ctx: ExampleContext[FakeServer]) -> Mapping[str, Any]:
    done = await ctx.call("memo.edit_note", {"id": "n0", "text": "edited"})
    return {"id": "n0", "text": done["previous"], "etag": done["etag"]}


def person_edits(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange:
    """Someone edits, in the service itself, the note that ``tool`` created or edited."""
    app = server.app
    assert isinstance(app, MemoApp)
    with app.lock:
        note = app.notes[str(result["id"])]
        produced = note["text"]
        note["text"] = produced + " (and a person's edit)"

    def revert() -> None:
        with app.lock:
            note["text"] = produced

    return ConcurrentChange(what="the note's text", revert=revert)


RESTORES_NOTHING: Mapping[str, str] = {
    "memo.tag_note": "its undo takes off only the tag this call put on: a tag is on a note or "
    "not, and one someone took off since is skipped, so there is no later edit to lose",
}
"""The memo tools whose compensation restores no prior state, and why."""


def memo_fixture(
    cls: type[MemoConnector] = MemoConnector, *, call_timeout: float = LIMIT
) -> CertificationFixture[FakeServer]:
    """The fixture of ``cls`` (the good connector or a broken variant) against the fake.

    A connector that answers in vendor codes (``cls.vendor_codes``) gets the fixture's
    ``error_codes`` declaring :data:`VENDOR_CODES`, and its failing examples expect
    those codes where the service's status has one.
    """

    def refused(args: Mapping[str, Any], code: str, status: int) -> Failure:
        if cls.vendor_codes and status in VENDOR_CODES:
            return Failure(args, code=VENDOR_CODES[status])
        return Failure(args, code=code, status=status)

    def build_with_timeout(server: FakeServer, seconds: float) -> MemoConnector:
        return cls(server.url, TOKEN, Timeouts(connect=seconds, read=seconds, total=seconds))

    return CertificationFixture(
        backend=memo_backend,
        seed=seed,
        build=lambda server: build_with_timeout(server, PATIENCE),
        build_with_timeout=build_with_timeout,
        fingerprint=fingerprint,
        examples={
            "memo.get_note": [{"id": "n0"}],
            "memo.create_note": [{"text": "hello"}],
            "memo.delete_note": [_a_note],
            "memo.edit_note": [{"id": "n0", "text": "edited"}],
            "memo.restore_note": [_an_edit],
            "memo.tag_note": [{"id": "n0", "tag": "new"}],
            "memo.untag_note": [_a_tag],
        },
        failures={
            "memo.get_note": [refused({"id": "missing"}, "not_found", 404)],
            "memo.create_note": [refused({"text": ""}, "invalid", 422)],
            "memo.edit_note": [refused({"id": "missing", "text": "x"}, "not_found", 404)],
            "memo.restore_note": [refused({"id": "missing", "text": "x"}, "not_found", 404)],
            "memo.tag_note": [
                refused({"id": "n0", "tag": "old"}, "exists", 422),
                refused({"id": "missing", "tag": "t"}, "not_found", 404),
            ],
        },
        dependencies=[
            Dependency("memo.create_note", {"text": "x"}, "memo.tag_note", _tag_the_new_note),
            Dependency("memo.create_note", {"text": "x"}, "memo.edit_note", _edit_the_new_note),
        ],
        credential=TOKEN,
        call_timeout=call_timeout,
        sends_idempotency_key=frozenset(
            {
                "memo.create_note",
                "memo.delete_note",
                "memo.edit_note",
                "memo.restore_note",
                "memo.tag_note",
                "memo.untag_note",
            }
        ),
        idempotency_key_in=IdempotencyKeyIn(header=KEY_HEADER),
        error_codes={st: {code} for st, code in VENDOR_CODES.items()} if cls.vendor_codes else {},
        concurrent_change=person_edits,
        restores_nothing=RESTORES_NOTHING,
    )


class MemoReadsByPost(MemoConnector):
    """A good connector whose reads are POSTs, as a GraphQL vendor's are.

    get_note reads through ``POST /notes/query``, and tag_note looks the note up there
    before it tags it; the fake declares that route ``writes=False``. Read-only checks
    must not count those POSTs as writes, and a writing tool's lost answer must land on
    its real write (the tag), not on the lookup before it.
    """

    async def _query(self, note_id: str, ctx: CallContext) -> dict[str, Any]:
        resp = await self.http.request(
            "POST", "/notes/query", json={"id": note_id}, write=False, timeouts=self.limits(ctx)
        )
        return dict(resp.json or {})

    @tool(effect=Effect.READ_ONLY, permission="memo:read", input=NoteId, output=Note)
    async def get_note(self, args: NoteId, ctx: CallContext) -> dict[str, Any]:
        """Read a note through the query route."""
        return await self._query(args.id, ctx)

    @tool(
        effect=Effect.REVERSIBLE,
        permission="memo:write",
        input=NoteTag,
        output=Tagged,
        compensation=Compensation(
            tool="memo.untag_note", argument_map={"id": "args.id", "tag": "args.tag"}
        ),
        requires=[CREATED_HERE],
    )
    async def tag_note(self, args: NoteTag, ctx: CallContext) -> dict[str, Any]:
        """Look the note up, then tag it."""
        await self._query(args.id, ctx)
        return await super().tag_note(args, ctx)


# -- broken variants: each gets one thing wrong ----------------------------------------


class BrokenReaderWrites(MemoConnector):
    """get_note is declared read_only but also records a view (a POST)."""

    @tool(effect=Effect.READ_ONLY, permission="memo:read", input=NoteId, output=Note)
    async def get_note(self, args: NoteId, ctx: CallContext) -> dict[str, Any]:
        """Read a note, and count the view."""
        await self.http.request("POST", url_path("/notes/{id}/views", id=args.id))
        return await super().get_note(args, ctx)


class LyingNote(Note):
    """The note, with a hand-written JSON Schema for ``views`` that says it is a string."""

    views: Annotated[int, WithJsonSchema({"type": "string"})]


class BrokenResultSchemaLies(MemoConnector):
    """get_note's result model tells MCP clients ``views`` is a string; it is an integer."""

    @tool(effect=Effect.READ_ONLY, permission="memo:read", input=NoteId, output=LyingNote)
    async def get_note(self, args: NoteId, ctx: CallContext) -> dict[str, Any]:
        """Read a note (its advertised result schema is wrong)."""
        return await super().get_note(args, ctx)


class BrokenSwallowsRefusal(MemoConnector):
    """create_note turns the service's refusal into a 'successful' result."""

    @tool(
        effect=Effect.REVERSIBLE,
        permission="memo:write",
        input=NewNote,
        output=Created,
        compensation=CREATE_UNDO,
    )
    async def create_note(self, args: NewNote, ctx: CallContext) -> dict[str, Any]:
        """Create a note, hiding errors."""
        try:
            return await super().create_note(args, ctx)
        except ToolError:
            return {"id": "", "etag": ""}


class BrokenRepeatFails(MemoConnector):
    """delete_note fails when the note is already gone, so a repeated undo fails."""

    @tool(effect=Effect.IDEMPOTENT, permission="memo:delete", input=NoteToDelete, output=Deleted)
    async def delete_note(self, args: NoteToDelete, ctx: CallContext) -> dict[str, Any]:
        """Delete a note (a missing one is an error)."""
        await self.http.request("DELETE", url_path("/notes/{id}", id=args.id))
        return {"id": args.id, "deleted": True}


class BrokenLosesUncertainty(MemoConnector):
    """create_note tells the HTTP layer its POST does not write, so a lost reply looks definite."""

    @tool(
        effect=Effect.REVERSIBLE,
        permission="memo:write",
        input=NewNote,
        output=Created,
        compensation=CREATE_UNDO,
    )
    async def create_note(self, args: NewNote, ctx: CallContext) -> dict[str, Any]:
        """Create a note (wrongly marked as not writing)."""
        resp = await self.http.request("POST", "/notes", json={"text": args.text}, write=False)
        return {"id": (resp.json or {})["id"], "etag": resp.headers["etag"]}


class BrokenUndoDoesNothing(MemoConnector):
    """delete_note reports success without asking the service to delete anything."""

    @tool(effect=Effect.IDEMPOTENT, permission="memo:delete", input=NoteToDelete, output=Deleted)
    async def delete_note(self, args: NoteToDelete, ctx: CallContext) -> dict[str, Any]:
        """Pretend to delete a note."""
        return {"id": args.id, "deleted": True}


class BrokenCompensationArgs(MemoConnector):
    """create_note's compensation maps an argument ``note`` that delete_note does not take."""

    @tool(
        effect=Effect.REVERSIBLE,
        permission="memo:write",
        input=NewNote,
        output=Created,
        compensation=Compensation(
            tool="memo.delete_note", argument_map={"note": "result.id", "etag": "result.etag"}
        ),
    )
    async def create_note(self, args: NewNote, ctx: CallContext) -> dict[str, Any]:
        """Create a note (with a wrong argument map)."""
        return await super().create_note(args, ctx)


class BrokenUndoIgnoresErrors(MemoConnector):
    """delete_note swallows every error, so a failed undo is reported as done."""

    @tool(effect=Effect.IDEMPOTENT, permission="memo:delete", input=NoteToDelete, output=Deleted)
    async def delete_note(self, args: NoteToDelete, ctx: CallContext) -> dict[str, Any]:
        """Delete a note, ignoring failures."""
        try:
            return await super().delete_note(args, ctx)
        except ToolError:
            return {"id": args.id, "deleted": False}


class BrokenHidesStatus(MemoConnector):
    """Every HTTP error is reported as a bare 'request failed', without its status."""

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: CallContext | None = None
    ) -> dict[str, Any]:
        try:
            return await super().call(name, args, ctx)
        except ToolError:
            raise ToolError(f"{name}: request failed", code="failed") from None


class BrokenNoTimeout(MemoConnector):
    """The HTTP client waits ten minutes for an answer and ignores the caller's limit."""

    def __init__(self, base_url: str, token: str, timeouts: Timeouts | None = None) -> None:
        super().__init__(base_url, token, Timeouts(connect=600, read=600, total=600))

    def limits(self, ctx: CallContext) -> Timeouts:
        return self.http.timeouts


class BrokenWriteIgnoresCallLimit(MemoConnector):
    """create_note waits as long as the client's defaults allow, whatever limit the call gives.

    Its reads honour the call's limit; only a connector built with long defaults and
    called with a short limit shows the write's wait.
    """

    @tool(
        effect=Effect.REVERSIBLE,
        permission="memo:write",
        input=NewNote,
        output=Created,
        compensation=CREATE_UNDO,
    )
    async def create_note(self, args: NewNote, ctx: CallContext) -> dict[str, Any]:
        """Create a note (with the client's default limits only)."""
        resp = await self.http.request(
            "POST", "/notes", json={"text": args.text}, idempotency_key=ctx.idempotency_key
        )
        return {"id": (resp.json or {})["id"], "etag": resp.headers["etag"]}


class BrokenFreshUndoKey(MemoConnector):
    """delete_note does not pass the call's idempotency key on: the HTTP layer makes a fresh one.

    Each attempt of an undo then reaches the service under a new key, so a retried
    rollback could act twice where the vendor deduplicates by key.
    """

    @tool(effect=Effect.IDEMPOTENT, permission="memo:delete", input=NoteToDelete, output=Deleted)
    async def delete_note(self, args: NoteToDelete, ctx: CallContext) -> dict[str, Any]:
        """Delete a note (under a key of the HTTP layer's making)."""
        return await super().delete_note(args, dataclasses.replace(ctx, idempotency_key=None))


class BrokenOneCodePerStatus(MemoConnector):
    """Every 422 is reported with the code ``invalid``: 'already tagged' reads as a malformed request."""

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: CallContext | None = None
    ) -> dict[str, Any]:
        try:
            return await super().call(name, args, ctx)
        except ToolError as exc:
            if exc.status != 422:
                raise
            raise ToolError(
                f"{name}: HTTP 422: the request was invalid", status=422, code="invalid"
            ) from None


class BrokenLeaksToken(MemoConnector):
    """Errors name the token "to help debugging"."""

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: CallContext | None = None
    ) -> dict[str, Any]:
        try:
            return await super().call(name, args, ctx)
        except ToolError as exc:
            raise ToolError(
                f"{exc} (sent with token {self.token})", status=exc.status, code=exc.code
            ) from None


class BrokenMissingEdge(MemoConnector):
    """tag_note's requires compares the note id with the earlier call's text: never equal."""

    @tool(
        effect=Effect.REVERSIBLE,
        permission="memo:write",
        input=NoteTag,
        output=Tagged,
        compensation=Compensation(
            tool="memo.untag_note", argument_map={"id": "args.id", "tag": "args.tag"}
        ),
        requires=[
            Requirement(tool="memo.create_note", match=[Match(this="args.id", earlier="args.text")])
        ],
    )
    async def tag_note(self, args: NoteTag, ctx: CallContext) -> dict[str, Any]:
        """Tag a note (with a requires that never matches)."""
        return await super().tag_note(args, ctx)


class BrokenEdgeOnNoField(MemoConnector):
    """tag_note's requires reads ``result.note_id``, a field create_note's result does not have."""

    @tool(
        effect=Effect.REVERSIBLE,
        permission="memo:write",
        input=NoteTag,
        output=Tagged,
        compensation=Compensation(
            tool="memo.untag_note", argument_map={"id": "args.id", "tag": "args.tag"}
        ),
        requires=[
            Requirement(
                tool="memo.create_note", match=[Match(this="args.id", earlier="result.note_id")]
            )
        ],
    )
    async def tag_note(self, args: NoteTag, ctx: CallContext) -> dict[str, Any]:
        """Tag a note (with a requires on a result field that does not exist)."""
        return await super().tag_note(args, ctx)


class BrokenSchemaDrifts(MemoConnector):
    """input_schemas() disagrees with the manifests for one tool."""

    @classmethod
    def input_schemas(cls) -> dict[str, dict[str, Any]]:
        schemas = super().input_schemas()
        schemas["memo.get_note"] = {
            **schemas["memo.get_note"],
            "properties": {**schemas["memo.get_note"]["properties"], "extra": {"type": "string"}},
        }
        return schemas


class BrokenRestoreOverwrites(MemoConnector):
    """restore_note never sends If-Match: a rollback writes the old text over a person's edit."""

    @tool(effect=Effect.IDEMPOTENT, permission="memo:write", input=NoteRestore, output=Restored)
    async def restore_note(self, args: NoteRestore, ctx: CallContext) -> dict[str, Any]:
        """Put a note's old text back, whatever it holds now."""
        return await super().restore_note(args, dataclasses.replace(ctx, overwrite=True))


class BrokenRefusalUnnamed(MemoConnector):
    """The undo tools refuse a changed note, but say only "HTTP 412": a person cannot tell what."""

    def changed(self, name: str, what: str) -> ToolError:
        return ToolError(f"{name}: HTTP 412", status=412, code="precondition_failed")


# -- a vendor that answers in codes, not HTTP statuses ---------------------------------


class MemoVendorCodes(MemoConnector):
    """Refusals carry only the vendor's code (``MEMO-DENIED`` for a 403...), named in the message."""

    vendor_codes = True
    answers: ClassVar[Mapping[int, str]] = VENDOR_CODES

    def refusal(self, name: str, code: str) -> ToolError:
        return ToolError(f"{name}: memo refused the call with {code}", code=code)

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: CallContext | None = None
    ) -> dict[str, Any]:
        try:
            return await super().call(name, args, ctx)
        except ToolError as exc:
            code = self.answers.get(exc.status) if exc.status is not None else None
            if code is None:
                raise
            raise self.refusal(name, code) from None


class BrokenCodeForDenial(MemoVendorCodes):
    """A 403 is answered with the code for a 401: a missing privilege looks like a bad login."""

    answers: ClassVar[Mapping[int, str]] = {**VENDOR_CODES, 403: VENDOR_CODES[401]}


class BrokenCodeUnnamed(MemoVendorCodes):
    """The right code, but the message does not say it: a reader cannot tell what happened."""

    def refusal(self, name: str, code: str) -> ToolError:
        return ToolError(f"{name}: memo refused the call", code=code)
