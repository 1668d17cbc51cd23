"""A fake __connector__ API to test against, and the connector's certification opt-in.

TEMPLATE: :class:`Fake__Connector__` serves the example notes API on 127.0.0.1 with
the kit's :class:`~reversi_core.testing.VendorFake` (tokens, rate limits, error bodies,
body parsing) and :class:`~reversi_core.testing.FakeServer` (a real HTTP server with
fault injection). Replace its routes with the vendor's, each citing the page it follows,
and model what the connector relies on: idempotency keys, preconditions, "already gone"
answers, pagination, the vendor's error bodies (see docs/fakes.md).

:data:`LIVE` is the connector's live scenario: ``nox -s live -- __connector__`` runs it
against the vendor itself and records it into ``tests/cassettes/note.yaml``, which the
package's contract tests replay. ``scripts/new_connector.py`` recorded a first cassette
against the fake; re-record it against the vendor once you hold credentials for a
throwaway account (docs/development.md, "Live scenarios").
"""

from __future__ import annotations

import copy
import hashlib
import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reversi_core.http import Timeouts
from reversi_core.testing import (
    CertificationFixture,
    ConcurrentChange,
    ExampleContext,
    Failure,
    FakeRequest,
    FakeResponse,
    FakeServer,
    LiveContext,
    LiveScenario,
    VendorFake,
    vendor_route,
)

from .connector import __Connector__Connector

__all__ = ["CERTIFICATION_TOKEN", "LIVE", "Fake__Connector__", "certification_fixture"]

CERTIFICATION_TOKEN = "__connector___certification-token-0123456789"  # noqa: S105 - made up
"""The token the certification fixture gives the fake and the connector."""

_DOCS = "https://api.__connector__.example/docs"
LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""


def etag(text: str) -> str:
    """The ETag the example API gives a note: a quoted digest of its text."""
    return '"' + hashlib.sha256(text.encode()).hexdigest()[:16] + '"'


class Fake__Connector__(VendorFake):
    """The example notes API: notes by id; errors as ``{"error": {"code", "message"}}``.

    Every answer with a note carries its ``ETag``; a DELETE whose ``If-Match`` is not the
    note's ETag is refused 412 (https://www.rfc-editor.org/rfc/rfc9110#name-if-match).
    """

    def __init__(self, *, token: str = CERTIFICATION_TOKEN, **kwargs: Any) -> None:
        super().__init__(token=token, **kwargs)
        self.notes: dict[str, str] = {}
        self._ids = (f"n{i}" for i in itertools.count(1))

    def error(self, status: int, message: str, *, code: str | None = None, **extra: Any) -> FakeResponse:
        return FakeResponse(status, json={"error": {"code": code or "error", "message": message}})

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.error(404, "No such note", code="not_found")

    def snapshot(self) -> dict[str, Any]:
        """The notes, as plain data (what certification fingerprints)."""
        with self.lock:
            return copy.deepcopy(self.notes)

    @vendor_route("GET", "/notes/{id}", docs=f"{_DOCS}/get-note")
    def get_note(self, request: FakeRequest) -> FakeResponse:
        ident = request.path_params["id"]
        if ident not in self.notes:
            return self.not_found(request)
        text = self.notes[ident]
        return FakeResponse(200, json={"id": ident, "text": text}, headers={"ETag": etag(text)})

    @vendor_route("POST", "/notes", docs=f"{_DOCS}/create-note", body="json")
    def create_note(self, request: FakeRequest) -> FakeResponse:
        text = request.json.get("text") if isinstance(request.json, dict) else None
        if not isinstance(text, str) or not text:
            return self.error(422, "text is required", code="invalid")
        ident = next(self._ids)
        self.notes[ident] = text
        return FakeResponse(201, json={"id": ident, "text": text}, headers={"ETag": etag(text)})

    @vendor_route("DELETE", "/notes/{id}", docs=f"{_DOCS}/delete-note")
    def delete_note(self, request: FakeRequest) -> FakeResponse:
        ident = request.path_params["id"]
        if ident not in self.notes:
            return self.not_found(request)
        wanted = request.headers.get("if-match")
        if wanted is not None and wanted != etag(self.notes[ident]):
            return self.error(412, "The note has changed", code="precondition_failed")
        del self.notes[ident]
        return FakeResponse(204)


@contextmanager
def _backend(directory: Path) -> Iterator[FakeServer]:
    with FakeServer(Fake__Connector__()) as server:
        yield server


def _fake(server: FakeServer) -> Fake__Connector__:
    assert isinstance(server.app, Fake__Connector__)
    return server.app


def _seed(server: FakeServer) -> None:
    _fake(server).notes["seeded"] = "a note that was there before the run"


def _build_with_timeout(server: FakeServer, seconds: float) -> __Connector__Connector:
    return __Connector__Connector(
        token=CERTIFICATION_TOKEN,
        base_url=server.url,
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


async def _existing_note(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    created = await ctx.call("__connector__.create_note", {"text": "to be deleted"})
    return {"id": created["id"], "etag": created["etag"]}


def _someone_edits(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange:
    """TEMPLATE: after the agent's call, a person changes what it made, in the vendor itself."""
    fake, ident = _fake(server), str(result["id"])
    with fake.lock:
        written = fake.notes[ident]
        fake.notes[ident] = written + " (and a person's edit)"

    def revert() -> None:
        with fake.lock:
            fake.notes[ident] = written

    return ConcurrentChange(what="the note's text", revert=revert)


async def _live_scenario(live: LiveContext) -> None:
    """TEMPLATE: create a throwaway object through the engine, roll back, check it is gone.

    Name every object with ``live.suffix`` (``live.name(...)``) so that two runs never
    collide, and check what the vendor holds with ``live.call`` (outside the journal).
    """
    text = live.name("A note of the live check", " ")
    run = live.start_run()
    _, created = await run.call("__connector__.create_note", {"text": text})
    seen = await live.call("__connector__.get_note", {"id": created["id"]})
    live.check(seen["text"] == text, "the note to read back as it was written")
    await live.rollback(run)
    gone = await live.call("__connector__.delete_note", {"id": created["id"]})
    live.check(gone["deleted"] is False, "the note to be gone after the rollback")


LIVE = LiveScenario(
    name="note",
    summary="Creates a note, reads it back, rolls the run back and checks that the note is gone.",
    run=_live_scenario,
)
"""The live scenario of ``__connector__`` (TEMPLATE: replace it with the vendor's objects)."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """How the certification suite drives the ``__connector__`` connector (every check applies)."""
    return CertificationFixture(
        backend=_backend,
        seed=_seed,
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples={
            "__connector__.get_note": [{"id": "seeded"}],
            "__connector__.create_note": [{"text": "hello"}],
            "__connector__.delete_note": [_existing_note, {"id": "never-existed"}],
        },
        failures={
            # each refusal with the code (and status) the vendor answers it with
            "__connector__.get_note": [Failure({"id": "missing"}, code="not_found", status=404)],
        },
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
        # TEMPLATE: change, through the backend, what each restoring tool produced; list in
        # restores_nothing (with why) a tool whose undo restores no prior state
        concurrent_change=_someone_edits,
        backend_summary="its fake of the example notes API, faults included",
        command_line=lambda server: (
            {"__CONNECTOR___TOKEN": CERTIFICATION_TOKEN, "__CONNECTOR___BASE_URL": server.url},
            [],
        ),
        live=LIVE,
    )
