"""Configuration, the bearer token on every request, and names in the URL."""

from __future__ import annotations

import httpx
import pytest

from reversi_connector_gcp import DEFAULT_BASE_URL, GcpConnector
from reversi_core.errors import ConfigurationError

TOKEN = "ya29.configTestToken000000000001"


def test_the_token_is_required_and_never_shown() -> None:
    with pytest.raises(ConfigurationError, match="GCP_ACCESS_TOKEN"):
        GcpConnector.from_env({})
    with pytest.raises(ConfigurationError) as refused:
        GcpConnector.from_env({"GCP_ACCESS_TOKEN": TOKEN, "GCP_STORAGE_URL": f"http://x:{TOKEN}@h"})
    assert TOKEN not in str(refused.value)


def test_the_api_host_defaults_to_cloud_storage_and_an_emulator_can_replace_it() -> None:
    assert GcpConnector.from_env({"GCP_ACCESS_TOKEN": TOKEN}).base_url == DEFAULT_BASE_URL
    emulated = GcpConnector.from_env(
        {"GCP_ACCESS_TOKEN": TOKEN, "GCP_STORAGE_URL": "http://127.0.0.1:4443/"}
    )
    assert emulated.base_url == "http://127.0.0.1:4443"


@pytest.mark.anyio
async def test_every_request_carries_the_bearer_token_and_the_name_as_one_encoded_segment() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "GET" and "alt" not in request.url.params:
            return httpx.Response(
                200, json={"name": "x", "generation": "7", "size": "1", "crc32c": "AAAAAA=="}
            )
        return httpx.Response(200, content=b"v")

    gcp = GcpConnector(token=TOKEN, transport=httpx.MockTransport(answer))
    await gcp.call("gcp.get_object", {"bucket": "bkt", "key": "a/../b c?#%"})
    assert [r.url.raw_path for r in seen] == [
        b"/storage/v1/b/bkt/o/a%2F..%2Fb%20c%3F%23%25",
        b"/storage/v1/b/bkt/o/a%2F..%2Fb%20c%3F%23%25?alt=media&generation=7",
    ]
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in seen)
    assert all(r.url.host == "storage.googleapis.com" for r in seen)
    await gcp.aclose()
