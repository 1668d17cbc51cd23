"""A fake Amazon S3 to test against, test transports, and the connector's certification opt-in.

:class:`FakeS3` is a :class:`reversi_core.testing.VendorFake` that models the part of the
S3 REST API the ``aws`` connector uses, written from the API reference (each route's
docstring cites its page): HeadBucket, ListObjectsV2, HeadObject, GetObject, PutObject,
CopyObject and DeleteObject, with S3's XML error bodies, its conditional requests
(``If-Match``, ``If-None-Match``, ``x-amz-copy-source-if-match``: 412
``PreconditionFailed``) and a real Signature Version 4 check. Serve it with
:class:`reversi_core.testing.FakeServer` and point the connector at it::

    from reversi_core.testing import FakeServer
    from reversi_connector_aws import AwsConnector
    from reversi_connector_aws.testing import ACCESS_KEY, SECRET_KEY, FakeS3

    fake = FakeS3(access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    fake.add_bucket("demo")
    with FakeServer(fake) as server:
        aws = AwsConnector(access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
                           region="us-east-1", endpoint_url=server.url)
        await aws.call("aws.put_object", {"bucket": "demo", "key": "a b", "content": "hi"})

Virtual-hosted style is served for ``Host: BUCKET.localhost``; :class:`LoopbackTransport`
sends every request to 127.0.0.1 whatever its host name, so a connector built with
``endpoint_url="http://localhost:PORT", addressing_style="virtual"`` reaches the fake
that way. :class:`InterposingTransport` runs a callback just before a chosen request
leaves: a second writer slipped into the gap between two of the connector's requests.

:func:`certification_fixture` opts the connector into the certification suite
(docs/certification-guide.md); every check applies. It also declares :data:`LIVE`, the
live scenario ``nox -s live -- aws`` runs against S3 itself.
"""

from __future__ import annotations

import base64
import dataclasses
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

from ._fake import FakeS3, S3Object
from ._keys import BACKUP_PREFIX, backup_key
from ._live import LIVE_BUCKET_VARIABLE, LIVE_SUMMARY, LIVE_VARIABLES, LIVE_VOLATILE, live_scenario
from .connector import AwsConnector

__all__ = [
    "ACCESS_KEY",
    "BUCKET",
    "DEPENDENCIES",
    "DOTTED_BUCKET",
    "EXAMPLES",
    "FAILURES",
    "LIMIT",
    "LIVE",
    "PATIENCE",
    "REGION",
    "SECRET_KEY",
    "FakeS3",
    "InterposingTransport",
    "LoopbackTransport",
    "S3Object",
    "certification_fixture",
    "concurrent_change",
    "seed_example",
    "without_backups",
]

ACCESS_KEY = "AKIAREVERSICERT00001"
"""The access key id the certification fixture gives the fake and the connector (made up)."""
SECRET_KEY = "reversiCertificationSecretKey0000000001"  # noqa: S105 - made up
"""Its secret key (made up)."""
REGION = "us-east-1"
"""The region the fake and the connector sign for."""
BUCKET = "reversi-demo"
"""The example bucket :func:`seed_example` makes."""
DOTTED_BUCKET = "reversi.dotted.example"
"""A bucket with dots in its name (addressed path style)."""
LIMIT = 0.5
"""Seconds the timeout check gives the connector to give up on a silent backend
(``call_timeout``: it builds the connector with ``build_with_timeout(server, LIMIT)``)."""
PATIENCE = 10.0
"""Seconds the connector built for every other check waits for an answer: they never
silence the backend, so this only has to outlast a slow request on a loaded machine."""
ODD_KEY = "odd keys/a b+c%d?e#f/ünï"
"""A seeded key with every character that a careless URL would get wrong."""
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG: binary content that is not UTF-8."""


class LoopbackTransport(httpx.AsyncHTTPTransport):
    """An httpx transport that connects to 127.0.0.1 whatever the URL's host (tests only).

    The ``Host`` header (and so the signature) keeps the name: a request for
    ``http://demo.localhost:PORT/k`` reaches a fake listening on ``127.0.0.1:PORT``.
    """

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(host="127.0.0.1")
        return await super().handle_async_request(request)


class InterposingTransport(httpx.AsyncHTTPTransport):
    """Runs ``action()`` once, just before the first request for which ``when(request)`` is true.

    A second writer slipped between two of the connector's requests: ``when`` picks
    the request (``lambda r: r.method == "PUT" and "x-amz-copy-source" not in r.headers``),
    ``action`` changes the backend directly. :attr:`fired` says whether it ran.
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


def seed_example(fake: FakeS3) -> None:
    """Put the example state in ``fake``: bucket :data:`BUCKET` with a text note, a PNG and
    :data:`ODD_KEY`; bucket :data:`DOTTED_BUCKET` with one object."""
    fake.add_bucket(BUCKET)
    fake.put(BUCKET, "notes/hello.txt", "Hello from before the run.\n", "text/plain; charset=utf-8")
    fake.put(BUCKET, "images/pixel.png", PIXEL, "image/png")
    fake.put(BUCKET, ODD_KEY, "odd", "text/plain; charset=utf-8")
    fake.add_bucket(DOTTED_BUCKET)
    fake.put(DOTTED_BUCKET, "report.csv", "a,b\n1,2\n", "text/csv")


@contextmanager
def aws_backend(directory: Path | None = None) -> Iterator[FakeServer]:
    """A :class:`FakeS3` (credentials :data:`ACCESS_KEY`, :data:`SECRET_KEY`) on a fresh port."""
    with FakeServer(FakeS3(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)) as server:
        yield server


def _fake(server: FakeServer) -> FakeS3:
    app = server.app
    if not isinstance(app, FakeS3):
        raise TypeError(f"the server does not serve a FakeS3 but a {type(app).__name__}")
    return app


def _build_with_timeout(server: FakeServer, seconds: float) -> AwsConnector:
    return AwsConnector(
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        region=REGION,
        endpoint_url=server.url,
        timeouts=Timeouts(connect=seconds, read=seconds, total=seconds),
    )


def without_backups(fingerprint: Any) -> Any:
    """The fingerprint with every bucket's backups taken out (the shape is kept)."""
    for bucket in fingerprint["buckets"].values():
        bucket["backups"] = {}
    return fingerprint


BACKUPS_REMAIN = Residue(
    reason=f"the copy of the replaced or deleted object stays under {BACKUP_PREFIX} (it makes the "
    "restore repeatable); a lifecycle rule on that prefix expires it",
    normalise=without_backups,
)


def _at(key: str, **more: Any) -> dict[str, Any]:
    return {"bucket": BUCKET, "key": key, **more}


def _restore_args(result: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "bucket": result["bucket"],
        "key": result["key"],
        "backup_key": result["backup_key"],
        "expected_etag": result["etag"],
    }


async def _restore_overwrite(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("aws.put_object", _at("notes/hello.txt", content="overwritten"))
    return _restore_args(made)


async def _restore_new(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("aws.put_object", _at("notes/brand-new.txt", content="new"))
    return _restore_args(made)


async def _restore_deleted(ctx: ExampleContext[Any]) -> Mapping[str, Any]:
    made = await ctx.call("aws.delete_object", _at(ODD_KEY))
    return _restore_args(made)


EXAMPLES: Mapping[str, list[Example]] = {
    "aws.get_object": [
        _at("notes/hello.txt"),
        _at("images/pixel.png", encoding="base64"),
        _at(ODD_KEY),
        {"bucket": DOTTED_BUCKET, "key": "report.csv"},
    ],
    "aws.list_objects": [
        {"bucket": BUCKET},
        {"bucket": BUCKET, "prefix": "notes/", "delimiter": "/"},
    ],
    "aws.put_object": [
        _at("notes/hello.txt", content="Rewritten by the agent.\n"),
        _at("notes/new.txt", content="A new note."),
        _at(
            "images/copy.png",
            content=base64.b64encode(PIXEL).decode(),
            encoding="base64",
            content_type="image/png",
        ),
        _at("../a//b/./c +%?#ü", content="exactly this key"),
        {"bucket": DOTTED_BUCKET, "key": "report.csv", "content": "c\n3\n"},
    ],
    "aws.delete_object": [
        _at("notes/hello.txt"),
        _at(ODD_KEY),
        {"bucket": DOTTED_BUCKET, "key": "report.csv"},
    ],
    "aws.restore_object": [
        _restore_overwrite,
        _restore_new,
        _restore_deleted,
        _at("notes/never-there.txt", backup_key=None, expected_etag=None),
    ],
}

DEPENDENCIES: list[Dependency] = [
    Dependency(
        "aws.put_object",
        _at("notes/new.txt", content="v1"),
        "aws.put_object",
        _at("notes/new.txt", content="v2"),
    ),
    Dependency(
        "aws.put_object",
        _at("notes/hello.txt", content="v1"),
        "aws.delete_object",
        _at("notes/hello.txt"),
    ),
    Dependency(
        "aws.delete_object",
        _at("notes/hello.txt"),
        "aws.put_object",
        _at("notes/hello.txt", content="again"),
    ),
]
"""A second write, or a delete, of a key the run already wrote: the earlier step waits for it."""

FAILURES: Mapping[str, list[Failure]] = {
    "aws.get_object": [
        Failure(_at("notes/missing.txt"), code="not_found", status=404),
        Failure({"bucket": "no-such-bucket", "key": "k"}, code="no_such_bucket", status=404),
        Failure(_at("images/pixel.png"), code="not_text"),
    ],
    "aws.list_objects": [Failure({"bucket": "no-such-bucket"}, code="no_such_bucket", status=404)],
    "aws.put_object": [
        Failure(
            {"bucket": "no-such-bucket", "key": "k", "content": "x"},
            code="no_such_bucket",
            status=404,
        ),
        Failure(_at("k.bin", content="not base64!", encoding="base64"), code="invalid_content"),
    ],
    "aws.delete_object": [
        Failure({"bucket": "no-such-bucket", "key": "k"}, code="no_such_bucket", status=404)
    ],
    "aws.restore_object": [
        Failure(
            _at(
                "notes/hello.txt",
                backup_key=backup_key("notes/hello.txt", uuid.UUID("00000000-0000-4000-8000-000000000000")),
                expected_etag=None,
            ),
            code="backup_missing",
            status=404,
        ),
        Failure(
            _at("notes/hello.txt", backup_key=None, expected_etag='"not-what-is-there"'),
            code="changed_since",
        ),
    ],
}
"""Calls S3 turns down, each with the code (and status) the connector answers."""


def concurrent_change(
    server: FakeServer, tool: str, args: Mapping[str, Any], result: Mapping[str, Any]
) -> ConcurrentChange | None:
    """Someone else changes, through the fake, the key a put_object or delete_object call wrote.

    Returns a ``ConcurrentChange`` whose ``what`` the compensation's refusal names and
    whose ``revert`` puts back what the call left (the person undoing their edit), or
    ``None`` for a tool whose undo restores nothing.
    """
    fake = _fake(server)
    bucket, key = args["bucket"], args["key"]
    if tool == "aws.put_object":
        with fake.lock:
            left = dataclasses.replace(fake.buckets[bucket][key])
        fake.put(bucket, key, b"someone else's later edit")

        def put_back() -> None:
            with fake.lock:
                fake.buckets[bucket][key] = left

        return ConcurrentChange(what=f"s3://{bucket}/{key} changed since the call", revert=put_back)
    if tool == "aws.delete_object":
        fake.put(bucket, key, b"someone else's new object")
        return ConcurrentChange(
            what=f"s3://{bucket}/{key} changed since the call",
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
"""aws's live scenario (:mod:`reversi_connector_aws._live`): ``nox -s live -- aws`` runs it
against S3; against the fake it works in :data:`BUCKET`."""


def certification_fixture() -> CertificationFixture[FakeServer]:
    """The aws connector's declaration for the certification suite (docs/certification-guide.md)."""
    return CertificationFixture(
        backend_summary="its fake of the S3 REST API (SigV4 checked, conditional requests), faults included",
        command_line=lambda server: (
            {
                "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL_S3": server.url,
            },
            [],
        ),
        backend=aws_backend,
        seed=lambda server: seed_example(_fake(server)),
        build=lambda server: _build_with_timeout(server, PATIENCE),
        build_with_timeout=_build_with_timeout,
        fingerprint=lambda server: _fake(server).snapshot(),
        examples=EXAMPLES,
        failures=FAILURES,
        dependencies=DEPENDENCIES,
        residue={"aws.put_object": BACKUPS_REMAIN, "aws.delete_object": BACKUPS_REMAIN},
        credential=ACCESS_KEY,
        call_timeout=LIMIT,
        concurrent_change=concurrent_change,
        restores_nothing={},
        live=LIVE,
    )
