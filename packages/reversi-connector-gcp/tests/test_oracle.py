"""Second oracles of the fake: the storage v1 discovery document, and fake-gcs-server.

(fake-gcs-server runs the tool and race tests beside the fake: the ``backend`` fixture.)
Every request the connector sends over all five tools, and every JSON resource the fake
answers, is checked against Google's discovery document (``_gcp_oracle``); a request and
an answer drifted on purpose are caught.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterator

import pytest
from _gcp_oracle import method_of, request_problems, resource_problems

from reversi_connector_gcp import GcpConnector
from reversi_connector_gcp.testing import TOKEN, FakeGCS, crc32c
from reversi_core.errors import ToolError
from reversi_core.http import Timeouts
from reversi_core.testing import FakeRequest, FakeResponse, FakeServer

BUCKET = "oracle-bucket"
NAMES = ["plain.txt", "a b+c%d?e#f", "a//b/./c/../d", "/lead", "ünï/日本"]
RESPONSE_OF = {
    "objects.get": "Object",
    "objects.list": "Objects",
    "objects.insert": "Object",
    "objects.rewrite": "RewriteResponse",
}


@pytest.fixture
def served() -> Iterator[tuple[FakeGCS, FakeServer]]:
    fake = FakeGCS(token=TOKEN, rewrite_chunk=2)
    fake.add_bucket(BUCKET)
    with FakeServer(fake) as server:
        yield fake, server


async def _scenario(server: FakeServer) -> None:
    gcp = GcpConnector(
        token=TOKEN, base_url=server.url, timeouts=Timeouts(connect=2, read=5, total=10)
    )

    def undo(result: dict[str, object]) -> dict[str, object]:
        return {
            "bucket": BUCKET,
            "key": result["key"],
            "backup_key": result["backup_key"],
            "expected_generation": result["generation"],
            "expected_crc32c": result["crc32c"],
            "expected_md5": result["md5"],
        }

    for name in NAMES:
        first = await gcp.call("gcp.put_object", {"bucket": BUCKET, "key": name, "content": "one"})
        second = await gcp.call(
            "gcp.put_object",
            {
                "bucket": BUCKET,
                "key": name,
                "encoding": "base64",
                "content": base64.b64encode(b"\0two").decode(),
            },
        )
        await gcp.call("gcp.get_object", {"bucket": BUCKET, "key": name, "encoding": "base64"})
        await gcp.call("gcp.restore_object", undo(second))
        gone = await gcp.call("gcp.delete_object", {"bucket": BUCKET, "key": name})
        await gcp.call("gcp.restore_object", undo(gone))
        await gcp.call("gcp.restore_object", undo(first) | {"backup_key": None})
    page = await gcp.call(
        "gcp.list_objects", {"bucket": BUCKET, "prefix": "a", "delimiter": "/", "max_keys": 1}
    )
    await gcp.call(
        "gcp.list_objects",
        {"bucket": BUCKET, "continuation_token": page["next_continuation_token"]},
    )
    await gcp.call("gcp.delete_object", {"bucket": BUCKET, "key": "never-there"})
    await gcp.aclose()


@pytest.mark.anyio
async def test_every_request_and_every_resource_fits_the_discovery_document(
    served: tuple[FakeGCS, FakeServer],
) -> None:
    fake, server = served
    await _scenario(server)
    methods = set()

    for exchange in server.exchanges:
        request, answer = exchange.request, exchange.response
        assert request_problems(request.method, request.target) == [], request.target
        found = method_of(request.method, request.target.split("?", 1)[0])
        assert found is not None
        methods.add(found[0])
        ref = RESPONSE_OF.get(found[0])
        if ref and answer is not None and answer.status == 200 and answer.json is not None:
            assert resource_problems(ref, answer.json) == [], (request.target, answer.json)
    assert methods == {
        "objects.get",
        "objects.list",
        "objects.insert",
        "objects.delete",
        "objects.rewrite",
    }
    assert fake.rewrite_calls > len(NAMES) * 4  # the 2-byte chunks made every copy loop


@pytest.mark.parametrize(
    ("method", "target", "why"),
    [
        ("GET", "/storage/v1/b/b/o/k?ifGenerationMatch=latest", "not an int64"),
        ("GET", "/storage/v1/b/b/o/k?alt=raw", "not one of"),
        ("GET", "/storage/v1/b/b/o?maxResults=ten", "not an integer"),
        ("GET", "/storage/v1/b/b/o?max_results=10", "query parameter max_results is not declared"),
        ("POST", "/upload/storage/v1/b/b/o?uploadType=resumable-ish", "uploadType"),
        ("POST", "/storage/v1/b/b/o/k/rewriteTo/b/b", "no storage v1 objects method"),
        ("DELETE", "/storage/v1/b/b/o/k?ifGenerationMatch=1&ifMatch=1", "ifMatch is not declared"),
    ],
)
def test_the_document_catches_a_request_that_drifted(method: str, target: str, why: str) -> None:
    assert any(why in p for p in request_problems(method, target))


class DriftedFakeGCS(FakeGCS):
    """A fake drifted on purpose: generations as numbers, a made-up field on every object."""

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        answer = super().dispatch(request)
        if isinstance(answer.json, dict) and answer.json.get("kind") == "storage#object":
            body = {**answer.json, "generation": int(answer.json["generation"]), "checksum": "x"}
            answer = dataclasses.replace(answer, json=body)
        return answer


@pytest.mark.anyio
async def test_the_document_catches_a_fake_that_drifted() -> None:
    fake = DriftedFakeGCS(token=TOKEN)
    fake.add_bucket(BUCKET)
    fake.put(BUCKET, "k", b"v")
    with FakeServer(fake) as server:
        gcp = GcpConnector(token=TOKEN, base_url=server.url)
        with pytest.raises(ToolError, match="generation"):  # the connector refuses it too
            await gcp.call("gcp.get_object", {"bucket": BUCKET, "key": "k"})
        await gcp.aclose()
        answer = next(
            e.response for e in server.exchanges if e.response is not None and e.response.json
        )
    found = resource_problems("Object", answer.json)
    assert any("generation" in p for p in found)
    assert any("checksum" in p for p in found)


def test_the_fakes_checksums_are_cloud_storages() -> None:
    """CRC32C's check value (RFC 3720), and the base64 spelling of md5Hash and crc32c."""
    assert crc32c(b"123456789") == 0xE3069283
    fake = FakeGCS(token=TOKEN)
    fake.add_bucket(BUCKET)
    fake.put(BUCKET, "k", b"hello")
    resource = fake.resource(BUCKET, "k", fake.buckets[BUCKET]["k"])
    assert resource["md5Hash"] == "XUFAKrxLKna5cZ2REBfFkg=="
    assert resource["crc32c"] == base64.b64encode((0x9A71BB4C).to_bytes(4, "big")).decode()
    assert resource_problems("Object", json.loads(json.dumps(resource))) == []
