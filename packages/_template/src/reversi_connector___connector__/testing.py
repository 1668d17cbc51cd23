"""Test helpers for the ``__connector__`` connector, and its opt-in to the certification suite.

TEMPLATE: the backend here is the in-memory note store of the example tools. When the
connector talks to a real service, replace it with a fake of the vendor's API built on
:mod:`reversi_core.testing` (``FakeServer`` and ``FakeApp``: a real HTTP server on
127.0.0.1 with fault injection), citing the vendor's documentation page for each
endpoint, and drop the ``not_applicable`` entries that stop being true (see
docs/certification-guide.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reversi_core.testing import (
    CertificationFixture,
    ConcurrentChange,
    ExampleContext,
    Failure,
    NotApplicable,
)

from .connector import __Connector__Connector

__all__ = ["NOT_APPLICABLE", "NO_LIVE_SCENARIO", "NoteStore", "certification_fixture"]

NOT_APPLICABLE: Mapping[str, str] = {
    "retry": "the example notes live in memory: no transport can drop a connection",
    "permission_denial": "the example notes have no service that answers 401 or 403",
    "timeout": "the example notes live in memory: nothing can leave a call waiting",
    "redaction": "the example connector holds no credential",
}
"""Checks that do not apply to the in-memory example, each with its reason."""

NO_LIVE_SCENARIO = NotApplicable(
    "the example notes live in memory: there is no service to run a live scenario against"
)
"""TEMPLATE: why ``nox -s live -- __connector__`` has nothing to run. Once the connector
talks to a real backend, declare a ``reversi_core.testing.LiveScenario`` instead (with
``record=False`` unless it speaks HTTP: see docs/development.md, "Live scenarios")."""


class NoteStore(dict[str, str]):
    """The example backend: notes by id, with a switch that makes deletes fail."""

    broken = False

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        """Remove a note; raises ``OSError`` while :attr:`broken` is set (fault injection)."""
        if self.broken:
            raise OSError("the note store refused the delete (injected fault)")
        return super().pop(key, *default)


@contextmanager
def _backend(directory: Path) -> Iterator[NoteStore]:
    yield NoteStore()


def _seed(store: NoteStore) -> None:
    store["seeded"] = "a note that was there before the run"


@contextmanager
def _undo_fault(store: NoteStore, tool: str, args: Mapping[str, Any]) -> Iterator[None]:
    store.broken = True
    try:
        yield
    finally:
        store.broken = False


async def _existing_note(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    created = await ctx.call("__connector__.create_note", {"text": "to be deleted"})
    return {"id": created["id"], "text": created["text"]}


def _someone_edits(
    store: NoteStore, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange:
    """TEMPLATE: after the agent's call, a person changes what it made, in the backend itself."""
    ident = str(result["id"])
    written = store[ident]
    store[ident] = written + " (and a person's edit)"

    def revert() -> None:
        store[ident] = written

    return ConcurrentChange(what="the note's text", revert=revert)


def certification_fixture() -> CertificationFixture[NoteStore]:
    """How the certification suite drives the ``__connector__`` connector."""
    return CertificationFixture(
        backend=_backend,
        seed=_seed,
        build=lambda store: __Connector__Connector(notes=store),
        fingerprint=lambda store: dict(store),
        examples={
            "__connector__.get_note": [{"id": "seeded"}],
            "__connector__.create_note": [{"text": "hello"}],
            "__connector__.delete_note": [_existing_note, {"id": "never-existed"}],
        },
        failures={
            # each refusal with the code (and status) the vendor answers it with
            "__connector__.get_note": [Failure({"id": "missing"}, code="not_found", status=404)],
        },
        residue={},
        undo_fault=_undo_fault,
        # TEMPLATE: change, through the backend, what each restoring tool produced; list in
        # restores_nothing (with why) a tool whose undo restores no prior state
        concurrent_change=_someone_edits,
        not_applicable=NOT_APPLICABLE,
        live=NO_LIVE_SCENARIO,
    )
