"""A fake Blob Storage to test against, a test transport, and the connector's certification opt-in.

:class:`FakeBlobStorage` is a :class:`reversi_core.testing.VendorFake` modelling the part
of the Blob service REST API the ``azure`` connector uses, written from the REST
reference (each route cites its page): Get Blob Properties, Get Blob, Put Blob, Copy Blob
From URL, Delete Blob and List Blobs, with ``x-ms-error-code`` and XML errors, ETags that
change on every write, and the conditions the service checks. Serve it over HTTPS
(bearer tokens travel over HTTPS only)::

    from reversi_core.testing import FakeServer
    from reversi_connector_azure import AzureConnector
    from reversi_connector_azure.testing import ACCOUNT, TOKEN, FakeBlobStorage

    fake = FakeBlobStorage(token=TOKEN, account=ACCOUNT)
    fake.add_container("demo")
    with FakeServer(fake, tls=True) as server:
        azure = AzureConnector(token=TOKEN, account=ACCOUNT, endpoint=f"{server.url}/{ACCOUNT}",
                               verify=server.client_ssl_context())
        await azure.call("azure.put_blob", {"container": "demo", "blob": "a b", "content": "hi"})

:class:`InterposingTransport` runs a callback just before a chosen request leaves (a
second writer in a gap). :func:`certification_fixture` opts the connector into the
certification suite; it also declares :data:`LIVE`, the live scenario ``nox -s live --
azure`` runs against Blob Storage itself.
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

from ._fake import FakeBlob, FakeBlobStorage
from ._live import (
    LIVE_CONTAINER_VARIABLE,
    LIVE_SUMMARY,
    LIVE_VARIABLES,
    LIVE_VOLATILE,
    live_scenario,
)
from ._names import BACKUP_PREFIX, backup_name
from .connector import AzureConnector

__all__ = [
    "ACCOUNT",
    "CONTAINER",
    "DEPENDENCIES",
    "EXAMPLES",
    "FAILURES",
    "LIMIT",
    "LIVE",
    "PATIENCE",
    "TOKEN",
    "FakeBlob",
    "FakeBlobStorage",
    "InterposingTransport",
    "certification_fixture",
    "concurrent_change",
    "seed_example",
    "without_backups",
]

TOKEN = "eyJ0eXAiOiJKV1QifQ.reversiCertificationToken.0000000001"  # noqa: S105 - made up
"""The bearer token the certification fixture gives the fake and the connector."""
ACCOUNT = "reversicert"
"""The storage account the fake serves."""
CONTAINER = "reversi-demo"
"""The example container :func:`seed_example` makes."""
LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""
ODD_BLOB = "odd names/a b+c%d?e#f//ünï"
"""A seeded name with every character a careless URL would get wrong."""
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG: binary content that is not UTF-8."""


class InterposingTransport(httpx.AsyncHTTPTransport):
    """Runs ``action()`` once, just before the first request for which ``when(request)`` is true."""

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


def seed_example(fake: FakeBlobStorage) -> None:
    """Container :data:`CONTAINER` with a text note, a PNG, :data:`ODD_BLOB` and an append blob."""
    fake.add_container(CONTAINER)
    fake.put(
        CONTAINER, "notes/hello.txt", "Hello from before the run.\n", "text/plain; charset=utf-8"
    )
    fake.put(CONTAINER, "images/pixel.png", PIXEL, "image/png")
    fake.put(CONTAINER, ODD_BLOB, "odd", "text/plain; charset=utf-8")
    fake.put(CONTAINER, "logs/app.log", "line 1\n", "text/plain", blob_type="AppendBlob")


@contextmanager
def azure_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeBlobStorage` (token :data:`TOKEN`, account :data:`ACCOUNT`) over HTTPS on a fresh port."""
    with FakeServer(FakeBlobStorage(token=TOKEN, account=ACCOUNT), tls=True) as server:
        yield server


def _fake(server: FakeServer) -> FakeBlobStorage:
    app = server.app
    if not isinstance(app, FakeBlobStorage):
        raise TypeError(f"the server does not serve a FakeBlobStorage but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> AzureConnector:
    return AzureConnector(
        token=TOKEN,
        account=ACCOUNT,
        endpoint=f"{server.url}/{ACCOUNT}",
        verify=server.client_ssl_context(),
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


def without_backups(fingerprint: Any) -> Any:
    """The fingerprint with every container's backups taken out (the shape is kept)."""
    for container in fingerprint["containers"].values():
        container["backups"] = {}
    return fingerprint


BACKUPS_REMAIN = Residue(
    reason=f"the copy of the replaced or deleted blob stays under {BACKUP_PREFIX} (it makes the "
    "restore repeatable); a lifecycle management rule on that prefix deletes it",
    normalise=without_backups,
)


def _at(blob: str, **more: Any) -> dict[str, Any]:
    return {"container": CONTAINER, "blob": blob, **more}


def _restore_args(result: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "container": result["container"],
        "blob": result["blob"],
        "backup_blob": result["backup_blob"],
        "expected_etag": result["etag"],
        "expected_md5": result["content_md5"],
    }


async def _restore_overwrite(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _restore_args(
        await ctx.call("azure.put_blob", _at("notes/hello.txt", content="overwritten"))
    )


async def _restore_new(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _restore_args(
        await ctx.call("azure.put_blob", _at("notes/brand-new.txt", content="new"))
    )


async def _restore_deleted(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    return _restore_args(await ctx.call("azure.delete_blob", _at(ODD_BLOB)))


NOTHING_LEFT = {"backup_blob": None, "expected_etag": None, "expected_md5": None}

EXAMPLES: Mapping[str, list[Example]] = {
    "azure.get_blob": [
        _at("notes/hello.txt"),
        _at("images/pixel.png", encoding="base64"),
        _at(ODD_BLOB),
    ],
    "azure.list_blobs": [
        {"container": CONTAINER},
        {"container": CONTAINER, "prefix": "notes/", "delimiter": "/"},
    ],
    "azure.put_blob": [
        _at("notes/hello.txt", content="Rewritten by the agent.\n"),
        _at("notes/new.txt", content="A new note."),
        _at(
            "images/copy.png",
            content=base64.b64encode(PIXEL).decode(),
            encoding="base64",
            content_type="image/png",
        ),
        _at("/a//b c+%?#ü", content="exactly this name"),
    ],
    "azure.delete_blob": [_at("notes/hello.txt"), _at(ODD_BLOB)],
    "azure.restore_blob": [
        _restore_overwrite,
        _restore_new,
        _restore_deleted,
        _at("notes/never-there.txt", **NOTHING_LEFT),
    ],
}

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "azure.put_blob",
        _at("notes/new.txt", content="v1"),
        "azure.put_blob",
        _at("notes/new.txt", content="v2"),
    ),
    Dependency(
        "azure.put_blob",
        _at("notes/hello.txt", content="v1"),
        "azure.delete_blob",
        _at("notes/hello.txt"),
    ),
    Dependency(
        "azure.delete_blob",
        _at("notes/hello.txt"),
        "azure.put_blob",
        _at("notes/hello.txt", content="again"),
    ),
]
"""A second write, or a delete, of a blob the run already wrote: the earlier step waits for it."""

FAILURES: Mapping[str, list[Failure]] = {
    "azure.get_blob": [
        Failure(_at("notes/missing.txt"), code="not_found", status=404),
        Failure(
            {"container": "no-such-container", "blob": "k"}, code="no_such_container", status=404
        ),
        Failure(_at("images/pixel.png"), code="not_text"),
    ],
    "azure.list_blobs": [
        Failure({"container": "no-such-container"}, code="no_such_container", status=404)
    ],
    "azure.put_blob": [
        Failure(
            {"container": "no-such-container", "blob": "k", "content": "x"},
            code="no_such_container",
            status=404,
        ),
        Failure(_at("logs/app.log", content="x"), code="not_block_blob"),
        Failure(_at("k.bin", content="not base64!", encoding="base64"), code="invalid_content"),
    ],
    "azure.delete_blob": [
        Failure(
            {"container": "no-such-container", "blob": "k"}, code="no_such_container", status=404
        ),
        Failure(_at("logs/app.log"), code="not_block_blob"),
    ],
    "azure.restore_blob": [
        Failure(
            _at(
                "notes/hello.txt",
                backup_blob=backup_name(
                    "notes/hello.txt", uuid.UUID("00000000-0000-4000-8000-000000000000")
                ),
                expected_etag=None,
                expected_md5=None,
            ),
            code="backup_missing",
            status=404,
        ),
        Failure(
            _at("notes/hello.txt", backup_blob=None, expected_etag='"0x1"', expected_md5=None),
            code="changed_since",
        ),
    ],
}
"""Calls Blob Storage turns down, each with the code (and status) the connector answers."""


def concurrent_change(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange | None:
    """Someone else changes, through the fake, the blob a put_blob or delete_blob call wrote.

    ``revert`` puts back exactly what the call left (the same ETag); ``None`` for a tool
    whose undo restores nothing.
    """
    fake = _fake(server)
    container, blob = args["container"], args["blob"]
    if tool == "azure.put_blob":
        with fake.lock:
            left = fake.containers[container][blob]
        fake.put(container, blob, b"someone else's later edit")

        def put_back() -> None:
            with fake.lock:
                fake.containers[container][blob] = left

        return ConcurrentChange(what=f"{container}/{blob} changed since the call", revert=put_back)
    if tool == "azure.delete_blob":
        fake.put(container, blob, b"someone else's new blob")
        return ConcurrentChange(
            what=f"{container}/{blob} changed since the call",
            revert=lambda: fake.remove(container, blob),
        )
    return None


LIVE = LiveScenario(
    name="put-overwrite-delete",
    summary=LIVE_SUMMARY,
    run=live_scenario,
    variables=LIVE_VARIABLES,
    test_env=lambda server: {LIVE_CONTAINER_VARIABLE: CONTAINER},
    volatile=LIVE_VOLATILE,
)
"""azure's live scenario (:mod:`reversi_connector_azure._live`): ``nox -s live -- azure``
runs it against Blob Storage; against the fake it works in :data:`CONTAINER`."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The azure connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of the Blob service REST API over HTTPS (ETags, conditions), faults included",
        command_line=lambda server: (
            {
                "AZURE_STORAGE_TOKEN": TOKEN,
                "AZURE_STORAGE_ACCOUNT": ACCOUNT,
                "AZURE_STORAGE_BLOB_ENDPOINT": f"{server.url}/{ACCOUNT}",
                "SSL_CERT_FILE": str(server.ca_path),
            },
            [],
        ),
        backend=azure_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={"azure.put_blob": BACKUPS_REMAIN, "azure.delete_blob": BACKUPS_REMAIN},
        credential=TOKEN,
        call_timeout=LIMIT,
        concurrent_change=concurrent_change,
        restores_nothing={},
        live=LIVE,
    )
