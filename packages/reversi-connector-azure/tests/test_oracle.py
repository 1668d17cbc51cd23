"""Second oracles of the fake: Microsoft's REST description and the azure-storage-blob SDK.

(Azurite runs the tool and race tests beside the fake: the ``backend`` fixture.) Every
request the connector sends over all five tools, and every answer the fake gives, is
checked against the Blob Storage description in ``vendor/azure`` (``_azure_oracle``);
``azure-storage-blob`` pointed at the fake must read what it holds and see its refusals
as the service's errors. A request, an answer and a fake drifted on purpose are caught.
"""

from __future__ import annotations

import base64
import dataclasses
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from _azure_oracle import operation_of, request_problems, response_problems
from azure.core import MatchConditions
from azure.core.credentials import AccessToken
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import BlobServiceClient

from reversi_connector_azure import AzureConnector
from reversi_connector_azure.testing import ACCOUNT, TOKEN, FakeBlobStorage
from reversi_core.http import Timeouts
from reversi_core.testing import FakeRequest, FakeResponse, FakeServer

CONTAINER = "oracle-container"
NAMES = ["plain.txt", "a b+c%d?e#f", "a//b/c", "/lead", "ünï/日本"]


@pytest.fixture
def served() -> Iterator[tuple[FakeBlobStorage, FakeServer]]:
    fake = FakeBlobStorage(token=TOKEN, account=ACCOUNT)
    fake.add_container(CONTAINER)
    with FakeServer(fake, tls=True) as server:
        yield fake, server


def _split(request: FakeRequest) -> tuple[str, dict[str, str]]:
    raw_path, _, raw_query = request.target.partition("?")
    path = urllib.parse.unquote(raw_path).removeprefix(f"/{ACCOUNT}")
    return path, dict(urllib.parse.parse_qsl(raw_query, keep_blank_values=True))


@pytest.mark.anyio
async def test_every_request_and_answer_fits_the_description(
    served: tuple[FakeBlobStorage, FakeServer],
) -> None:
    _, server = served
    azure = AzureConnector(
        token=TOKEN,
        account=ACCOUNT,
        endpoint=f"{server.url}/{ACCOUNT}",
        verify=server.client_ssl_context(),
        timeouts=Timeouts(connect=2, read=5, total=10),
    )

    def undo(result: dict[str, Any]) -> dict[str, Any]:
        return {
            "container": CONTAINER,
            "blob": result["blob"],
            "backup_blob": result["backup_blob"],
            "expected_etag": result["etag"],
            "expected_md5": result["content_md5"],
        }

    for name in NAMES:
        first = await azure.call(
            "azure.put_blob", {"container": CONTAINER, "blob": name, "content": "one"}
        )
        second = await azure.call(
            "azure.put_blob",
            {
                "container": CONTAINER,
                "blob": name,
                "encoding": "base64",
                "content": base64.b64encode(b"\0two").decode(),
            },
        )
        await azure.call(
            "azure.get_blob", {"container": CONTAINER, "blob": name, "encoding": "base64"}
        )
        await azure.call("azure.restore_blob", undo(second))
        gone = await azure.call("azure.delete_blob", {"container": CONTAINER, "blob": name})
        await azure.call("azure.restore_blob", undo(gone))
        await azure.call("azure.restore_blob", undo(first) | {"backup_blob": None})
    page = await azure.call(
        "azure.list_blobs",
        {"container": CONTAINER, "prefix": "a", "delimiter": "/", "max_results": 1},
    )
    await azure.call("azure.list_blobs", {"container": CONTAINER, "marker": page["next_marker"]})
    await azure.call("azure.delete_blob", {"container": CONTAINER, "blob": "never-there"})
    await azure.aclose()
    seen = set()
    for exchange in server.exchanges:
        request, answer = exchange.request, exchange.response
        path, query = _split(request)
        assert request_problems(request.method, path, query, request.headers) == [], request.target
        assert answer is not None
        _, body = answer.encode()
        assert (
            response_problems(
                request.method,
                path,
                query,
                request.headers,
                answer.status,
                answer.headers or {},
                body,
            )
            == []
        )
        found = operation_of(
            request.method, path, query, {k.lower(): v for k, v in request.headers.items()}
        )
        assert found is not None
        seen.add(found)
    assert len(seen) == 7  # list flat and hierarchy, get, head, delete, put, copy


@pytest.mark.parametrize(
    ("method", "path", "query", "headers", "why"),
    [
        (
            "PUT",
            "/c/b",
            {},
            {"x-ms-version": "2023-11-03", "x-ms-blob-type": "AppendBlob"},
            "not one of",
        ),
        (
            "PUT",
            "/c/b",
            {},
            {
                "x-ms-version": "2023-11-03",
                "x-ms-copy-source": "https://x/y",
                "x-ms-requires-sync": "yes",
            },
            "not one of",
        ),
        (
            "PUT",
            "/c/b",
            {},
            {
                "x-ms-version": "2023-11-03",
                "x-ms-copy-source": "https://x/y",
                "x-ms-requires-sync": "true",
                "x-ms-source-if-matches": '"e"',
            },
            "x-ms-source-if-matches is not a parameter",
        ),
        (
            "DELETE",
            "/c/b",
            {},
            {"x-ms-blob-type": "BlockBlob", "x-ms-version": "2023-11-03"},
            "x-ms-blob-type is not a parameter",
        ),
        (
            "GET",
            "/c",
            {"restype": "container", "comp": "list", "maxresults": "0"},
            {"x-ms-version": "v"},
            "below",
        ),
        (
            "GET",
            "/c",
            {"restype": "container", "comp": "list", "max_results": "5"},
            {"x-ms-version": "v"},
            "max_results",
        ),
        ("HEAD", "/c/b", {}, {}, "x-ms-version is missing"),
    ],
)
def test_the_description_catches_a_request_that_drifted(
    method: str, path: str, query: dict[str, str], headers: dict[str, str], why: str
) -> None:
    assert any(why in p for p in request_problems(method, path, query, headers))


class DriftedFakeBlobStorage(FakeBlobStorage):
    """A fake drifted on purpose: listed blobs are ``<Item>`` and carry an invented element."""

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        answer = super().dispatch(request)
        if isinstance(answer.body, str) and "<EnumerationResults" in answer.body:
            drifted = answer.body.replace("<Blob>", "<Item><Colour>red</Colour>").replace(
                "</Blob>", "</Item>"
            )
            answer = dataclasses.replace(answer, body=drifted)
        return answer


class _Token:
    """A token credential for the SDK: the fake's bearer token."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken(TOKEN, int(time.time()) + 3600)


def _sdk(server: FakeServer) -> Any:
    return BlobServiceClient(
        f"{server.url}/{ACCOUNT}", credential=_Token(), connection_verify=str(server.ca_path)
    )


def test_the_sdk_reads_the_fake_and_gets_its_refusals_as_the_services(
    served: tuple[FakeBlobStorage, FakeServer],
) -> None:
    fake, server = served
    container = _sdk(server).get_container_client(CONTAINER)
    for name in NAMES:
        blob = container.get_blob_client(name)
        made = blob.upload_blob(b"data-" + name.encode(), overwrite=False)
        assert made["etag"] == fake.containers[CONTAINER][name].etag
        assert (
            blob.download_blob(
                etag=made["etag"], match_condition=MatchConditions.IfNotModified
            ).readall()
            == b"data-" + name.encode()
        )
        copy = container.get_blob_client(name + ".copy").start_copy_from_url(
            blob.url,
            requires_sync=True,
            source_authorization=f"Bearer {TOKEN}",
            source_etag=made["etag"],
            source_match_condition=MatchConditions.IfNotModified,
        )
        assert copy["copy_status"] == "success"
    listed = {b.name: b.etag for b in container.list_blobs()}
    assert listed == {n: b.etag for n, b in fake.containers[CONTAINER].items()}
    assert {p.name for p in container.walk_blobs(delimiter="/") if p.name.endswith("/")} == {
        "a/",
        "/",
        "ünï/",
    }
    first = container.get_blob_client(NAMES[0])
    with pytest.raises(ResourceExistsError):
        first.upload_blob(b"x", overwrite=False)
    with pytest.raises(ResourceModifiedError):
        first.delete_blob(etag='"0x1"', match_condition=MatchConditions.IfNotModified)
    with pytest.raises(ResourceNotFoundError) as missing:
        container.get_blob_client("missing").download_blob()
    assert missing.value.error_code == "BlobNotFound"
    with pytest.raises(ResourceNotFoundError) as no_container:
        _sdk(server).get_container_client("no-such-container").get_blob_client(
            "b"
        ).get_blob_properties()
    assert no_container.value.error_code == "ContainerNotFound"
    first.delete_blob(
        etag=fake.containers[CONTAINER][NAMES[0]].etag,
        match_condition=MatchConditions.IfNotModified,
    )
    assert NAMES[0] not in fake.containers[CONTAINER]


def test_a_fake_that_drifted_is_caught_by_the_sdk_and_the_description() -> None:
    fake = DriftedFakeBlobStorage(token=TOKEN, account=ACCOUNT)
    fake.add_container(CONTAINER)
    fake.put(CONTAINER, "k", b"v")
    with FakeServer(fake, tls=True) as server:
        listed = [b.name for b in _sdk(server).get_container_client(CONTAINER).list_blobs()]
        exchange = server.exchanges[-1]
    assert listed != ["k"]
    path, query = _split(exchange.request)
    assert exchange.response is not None
    _, body = exchange.response.encode()
    found = response_problems("GET", path, query, exchange.request.headers, 200, {}, body)
    assert any("element Item" in p for p in found)
