"""A fake gcalendar API to test against, and the connector's certification opt-in.

TEMPLATE: :class:`FakeGcalendar` serves the example notes API on 127.0.0.1 with
the kit's :class:`~reversi_core.testing.VendorFake` (tokens, rate limits, error bodies,
body parsing) and :class:`~reversi_core.testing.FakeServer` (a real HTTP server with
fault injection). Replace its routes with the vendor's, each citing the page it follows,
and model what the connector relies on: idempotency keys, preconditions, "already gone"
answers, pagination, the vendor's error bodies (see docs/fakes.md).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reversi_core.http import Timeouts
from reversi_core.testing import (
    CertificationFixture,
    ExampleContext,
    Failure,
    FakeRequest,
    FakeResponse,
    FakeServer,
    VendorFake,
    vendor_route,
)

from .connector import GcalendarConnector

__all__ = ["CERTIFICATION_TOKEN", "FakeGcalendar", "certification_fixture"]

CERTIFICATION_TOKEN = "gcalendar_certification-token-0123456789"  # noqa: S105 - made up
"""The token the certification fixture gives the fake and the connector."""

_DOCS = "https://api.gcalendar.example/docs"
LIMIT = 0.5
"""Seconds the connectors built by the certification fixture wait for an answer."""


class FakeGcalendar(VendorFake):
    """The example notes API: notes by id; errors as ``{"error": {"code", "message"}}``."""

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
        return FakeResponse(200, json={"id": ident, "text": self.notes[ident]})

    @vendor_route("POST", "/notes", docs=f"{_DOCS}/create-note", body="json")
    def create_note(self, request: FakeRequest) -> FakeResponse:
        text = request.json.get("text") if isinstance(request.json, dict) else None
        if not isinstance(text, str) or not text:
            return self.error(422, "text is required", code="invalid")
        ident = next(self._ids)
        self.notes[ident] = text
        return FakeResponse(201, json={"id": ident, "text": text})

    @vendor_route("DELETE", "/notes/{id}", docs=f"{_DOCS}/delete-note")
    def delete_note(self, request: FakeRequest) -> FakeResponse:
        if self.notes.pop(request.path_params["id"], None) is None:
            return self.not_found(request)
        return FakeResponse(204)


@contextmanager
def _backend(directory: Path) -> Iterator[FakeServer]:
    with FakeServer(FakeGcalendar()) as server:
        yield server


def _fake(server: FakeServer) -> FakeGcalendar:
    assert isinstance(server.app, FakeGcalendar)
    return server.app


def _seed(server: FakeServer) -> None:
    _fake(server).notes["seeded"] = "a note that was there before the run"


def _build_with_timeout(server: FakeServer, seconds: float) -> GcalendarConnector:
    return GcalendarConnector(
        token=CERTIFICATION_TOKEN,
        base_url=server.url,
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


async def _existing_note(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    created = await ctx.call("gcalendar.create_note", {"text": "to be deleted"})
    return {"id": created["id"]}


def certification_fixture() -> CertificationFixture[FakeServer]:
    """How the certification suite drives the ``gcalendar`` connector (every check applies)."""
    return CertificationFixture(
        backend=_backend,
        seed=_seed,
        build=lambda server: _build_with_timeout(server, LIMIT),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples={
            "gcalendar.get_note": [{"id": "seeded"}],
            "gcalendar.create_note": [{"text": "hello"}],
            "gcalendar.delete_note": [_existing_note, {"id": "never-existed"}],
        },
        failures={
            # each refusal with the code (and status) the vendor answers it with
            "gcalendar.get_note": [Failure({"id": "missing"}, code="not_found", status=404)],
        },
        credential=CERTIFICATION_TOKEN,
        call_timeout=LIMIT,
        backend_summary="its fake of the example notes API, faults included",
        command_line=lambda server: (
            {"GCALENDAR_TOKEN": CERTIFICATION_TOKEN, "GCALENDAR_BASE_URL": server.url},
            [],
        ),
    )
