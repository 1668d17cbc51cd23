"""A fake Cloud Storage to test against, a test transport, and the connector's certification opt-in.

:class:`FakeGCS` is a :class:`reversi_core.testing.VendorFake` modelling the part of the
Cloud Storage JSON API the ``gcp`` connector uses, written from the API reference (each
route cites its page): objects get (and ``alt=media``), list, insert (media and
multipart uploads), delete and rewrite (looped on ``rewriteToken`` for large objects),
with generations and the preconditions Cloud Storage checks (``ifGenerationMatch``,
``ifSourceGenerationMatch``: 412 ``conditionNotMet``). Serve it with
:class:`reversi_core.testing.FakeServer`::

    from reversi_core.testing import FakeServer
    from reversi_connector_gcp import GcpConnector
    from reversi_connector_gcp.testing import TOKEN, FakeGCS

    fake = FakeGCS(token=TOKEN)
    fake.add_bucket("demo")
    with FakeServer(fake) as server:
        gcp = GcpConnector(token=TOKEN, base_url=server.url)
        await gcp.call("gcp.put_object", {"bucket": "demo", "key": "a b", "content": "hi"})

:class:`InterposingTransport` runs a callback just before a chosen request leaves: a
second writer slipped into the gap between two of the connector's requests.
:func:`certification_fixture` opts the connector into the certification suite; it also
declares :data:`LIVE`, the live scenario ``nox -s live -- gcp`` runs against Cloud
Storage itself.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from reversi_core.http import Timeouts
from reversi_core.testing import (
    CertificationFixture,
    ConcurrentChange,
    Dependency,
    Example,
    ExampleContext,
    Failure,
    FakeServer,
    LiveScenario,
    Residue,
)

from ._fake import FakeGCS, GcsObject, crc32c
from ._live import LIVE_BUCKET_VARIABLE, LIVE_SUMMARY, LIVE_VARIABLES, LIVE_VOLATILE, live_scenario
from ._names import BACKUP_PREFIX, backup_name
from .connector import GcpConnector

__all__ = [
    "BUCKET",
    "DEPENDENCIES",
    "EXAMPLES",
    "FAILURES",
    "LIMIT",
    "LIVE",
    "PATIENCE",
    "TOKEN",
    "FakeGCS",
    "GcsObject",
    "InterposingTransport",
    "certification_fixture",
    "concurrent_change",
    "crc32c",
    "seed_example",
    "without_backups",
]

TOKEN = "ya29.reversiCertificationToken0000000001"  # noqa: S105 - made up
"""The access token the certification fixture gives the fake and the connector."""
BUCKET = "reversi-demo"
"""The example bucket :func:`seed_example` makes."""
LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""
ODD_KEY = "odd names/a b+c%d?e#f/../ünï"
"""A seeded name with every character a careless URL would get wrong."""
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG: binary content that is not UTF-8."""


class InterposingTransport(httpx.AsyncHTTPTransport):
    """Runs ``action()`` once, just before the first request for which ``when(request)`` is true.

    A second writer slipped between two of the connector's requests; :attr:`fired` says
    whether it ran.
    """

    def __init__(
        self, when: Callable[[httpx.Request], bool], action: Callable[[], None], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._when = when
        self._action = action
        self.fired = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not self.fired and self._when(request):
            self.fired = True
            self._action()
        return await super().handle_async_request(request)


def seed_example(fake: FakeGCS) -> None:
    """Bucket :data:`BUCKET` with a text note, a PNG and :data:`ODD_KEY`."""
    fake.add_bucket(BUCKET)
    fake.put(BUCKET, "notes/hello.txt", "Hello from before the run.\n", "text/plain; charset=utf-8")
    fake.put(BUCKET, "images/pixel.png", PIXEL, "image/png")
    fake.put(BUCKET, ODD_KEY, "odd", "text/plain; charset=utf-8")


@contextmanager
def gcp_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeGCS` (token :data:`TOKEN`) on a fresh port, rewriting 64 bytes a call
    (so the seeded objects take several rewrite calls)."""
    with FakeServer(FakeGCS(token=TOKEN, rewrite_chunk=64)) as server:
        yield server


def _fake(server: FakeServer) -> FakeGCS:
    app = server.app
    if not isinstance(app, FakeGCS):
        raise TypeError(f"the server does not serve a FakeGCS but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> GcpConnector:
    return GcpConnector(
        token=TOKEN,
        base_url=server.url,
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


def without_backups(fingerprint: Any) -> Any:
    """The fingerprint with every bucket's backups taken out (the shape is kept)."""
    for bucket in fingerprint["buckets"].values():
        bucket["backups"] = {}
    return fingerprint


BACKUPS_REMAIN = Residue(
    reason=f"the copy of the replaced or deleted object stays under {BACKUP_PREFIX} (it makes the "
    "restore repeatable); a lifecycle rule on that prefix deletes it",
    normalise=without_backups,
)


def _at(key: str, **more: Any) -> dict[str, Any]:
    return {"bucket": BUCKET, "key": key, **more}


def _restore_args(result: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "bucket": result["bucket"],
        "key": result["key"],
        "backup_key": result["backup_key"],
        "expected_generation": result["generation"],
        "expected_crc32c": result["crc32c"],
        "expected_md5": result["md5"],
    }


async def _restore_overwrite(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _restore_args(
        await ctx.call("gcp.put_object", _at("notes/hello.txt", content="overwritten"))
    )


async def _restore_new(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _restore_args(
        await ctx.call("gcp.put_object", _at("notes/brand-new.txt", content="new"))
    )


async def _restore_deleted(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _restore_args(await ctx.call("gcp.delete_object", _at(ODD_KEY)))


EXAMPLES: Mapping[str, list[Example]] = {
    "gcp.get_object": [
        _at("notes/hello.txt"),
        _at("images/pixel.png", encoding="base64"),
        _at(ODD_KEY),
    ],
    "gcp.list_objects": [
        {"bucket": BUCKET},
        {"bucket": BUCKET, "prefix": "notes/", "delimiter": "/"},
    ],
    "gcp.put_object": [
        _at("notes/hello.txt", content="Rewritten by the agent.\n"),
        _at("notes/new.txt", content="A new note."),
        _at(
            "images/copy.png",
            content=base64.b64encode(PIXEL).decode(),
            encoding="base64",
            content_type="image/png",
        ),
        _at("../a//b/./c +%?#ü", content="exactly this name"),
    ],
    "gcp.delete_object": [_at("notes/hello.txt"), _at(ODD_KEY)],
    "gcp.restore_object": [
        _restore_overwrite,
        _restore_new,
        _restore_deleted,
        _at(
            "notes/never-there.txt",
            backup_key=None,
            expected_generation=None,
            expected_crc32c=None,
            expected_md5=None,
        ),
    ],
}

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "gcp.put_object",
        _at("notes/new.txt", content="v1"),
        "gcp.put_object",
        _at("notes/new.txt", content="v2"),
    ),
    Dependency(
        "gcp.put_object",
        _at("notes/hello.txt", content="v1"),
        "gcp.delete_object",
        _at("notes/hello.txt"),
    ),
    Dependency(
        "gcp.delete_object",
        _at("notes/hello.txt"),
        "gcp.put_object",
        _at("notes/hello.txt", content="again"),
    ),
]
"""A second write, or a delete, of an object the run already wrote: the earlier step waits for it."""

FAILURES: Mapping[str, list[Failure]] = {
    "gcp.get_object": [
        Failure(_at("notes/missing.txt"), code="not_found", status=404),
        Failure({"bucket": "no-such-bucket", "key": "k"}, code="no_such_bucket", status=404),
        Failure(_at("images/pixel.png"), code="not_text"),
    ],
    "gcp.list_objects": [Failure({"bucket": "no-such-bucket"}, code="no_such_bucket", status=404)],
    "gcp.put_object": [
        Failure(
            {"bucket": "no-such-bucket", "key": "k", "content": "x"},
            code="no_such_bucket",
            status=404,
        ),
        Failure(_at("k.bin", content="not base64!", encoding="base64"), code="invalid_content"),
    ],
    "gcp.delete_object": [
        Failure({"bucket": "no-such-bucket", "key": "k"}, code="no_such_bucket", status=404)
    ],
    "gcp.restore_object": [
        Failure(
            _at(
                "notes/hello.txt",
                backup_key=backup_name(
                    "notes/hello.txt", uuid.UUID("00000000-0000-4000-8000-000000000000")
                ),
                expected_generation=None,
                expected_crc32c=None,
                expected_md5=None,
            ),
            code="backup_missing",
            status=404,
        ),
        Failure(
            _at(
                "notes/hello.txt",
                backup_key=None,
                expected_generation="1",
                expected_crc32c="AAAAAA==",
                expected_md5=None,
            ),
            code="changed_since",
        ),
    ],
}
"""Calls Cloud Storage turns down, each with the code (and status) the connector answers."""


def concurrent_change(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange | None:
    """Someone else changes, through the fake, the object a put_object or delete_object call wrote.

    ``revert`` puts back exactly what the call left (the same generation), as a person
    undoing their edit would by restoring it; ``None`` for a tool whose undo restores nothing.
    """
    fake = _fake(server)
    bucket, key = args["bucket"], args["key"]
    if tool == "gcp.put_object":
        with fake.lock:
            left = fake.buckets[bucket][key]
        fake.put(bucket, key, b"someone else's later edit")

        def put_back() -> None:
            with fake.lock:
                fake.buckets[bucket][key] = left

        return ConcurrentChange(what=f"gs://{bucket}/{key} changed since the call", revert=put_back)
    if tool == "gcp.delete_object":
        fake.put(bucket, key, b"someone else's new object")
        return ConcurrentChange(
            what=f"gs://{bucket}/{key} changed since the call",
            revert=lambda: fake.remove(bucket, key),
        )
    return None


LIVE = LiveScenario(
    name="put-overwrite-delete",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {LIVE_BUCKET_VARIABLE: BUCKET},
    volatile=LIVE_VOLATILE,
)
"""gcp's live scenario (:mod:`reversi_connector_gcp._live`): ``nox -s live -- gcp`` runs it
against Cloud Storage; against the fake it works in :data:`BUCKET`."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The gcp connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of the Cloud Storage JSON API (generations, preconditions), faults included",
        command_line=lambda server: (
            {"GCP_ACCESS_TOKEN": TOKEN, "GCP_STORAGE_URL": server.url},
            [],
        ),
        backend=gcp_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={"gcp.put_object": BACKUPS_REMAIN, "gcp.delete_object": BACKUPS_REMAIN},
        credential=TOKEN,
        call_timeout=LIMIT,
        concurrent_change=concurrent_change,
        restores_nothing={},
        live=LIVE,
    )
