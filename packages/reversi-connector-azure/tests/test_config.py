"""Configuration: the account, an HTTPS endpoint only, the headers of every request."""

from __future__ import annotations

import httpx
import pytest

from reversi_connector_azure import API_VERSION, AzureConnector
from reversi_core.errors import ConfigurationError

TOKEN = "eyJ0eXAiOiJKV1QifQ.configTestToken.000000001"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"AZURE_STORAGE_ACCOUNT": "acct"}, "AZURE_STORAGE_TOKEN"),
        ({"AZURE_STORAGE_TOKEN": TOKEN}, "AZURE_STORAGE_ACCOUNT"),
        (
            {"AZURE_STORAGE_TOKEN": TOKEN, "AZURE_STORAGE_ACCOUNT": "Not_An_Account"},
            "AZURE_STORAGE_ACCOUNT",
        ),
        (
            {
                "AZURE_STORAGE_TOKEN": TOKEN,
                "AZURE_STORAGE_ACCOUNT": "acct",
                "AZURE_STORAGE_BLOB_ENDPOINT": "http://127.0.0.1:10000/devstoreaccount1",
            },
            "HTTPS only",
        ),
    ],
)
def test_configuration_errors_name_the_variable_and_never_the_token(
    env: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        AzureConnector.from_env(env)
    assert named in str(refused.value)
    assert TOKEN not in str(refused.value)


def test_the_endpoint_is_the_accounts_unless_one_is_given() -> None:
    assert AzureConnector.from_env(
        {"AZURE_STORAGE_TOKEN": TOKEN, "AZURE_STORAGE_ACCOUNT": "acct"}
    ).base_url == ("https://acct.blob.core.windows.net")
    other = AzureConnector.from_env(
        {
            "AZURE_STORAGE_TOKEN": TOKEN,
            "AZURE_STORAGE_ACCOUNT": "acct",
            "AZURE_STORAGE_BLOB_ENDPOINT": "https://127.0.0.1:10000/devstoreaccount1/",
        }
    )
    assert other.base_url == "https://127.0.0.1:10000/devstoreaccount1"


@pytest.mark.anyio
async def test_every_request_carries_the_token_the_version_and_a_date() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "HEAD":
            return httpx.Response(404, headers={"x-ms-error-code": "BlobNotFound"})
        return httpx.Response(
            201, headers={"ETag": '"0x1"', "Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="}
        )

    azure = AzureConnector(token=TOKEN, account="acct", transport=httpx.MockTransport(answer))
    await azure.call("azure.put_blob", {"container": "ctr", "blob": "/a b+c#?", "content": "x"})
    assert [str(r.url) for r in seen] == [
        "https://acct.blob.core.windows.net/ctr/%2Fa%20b%2Bc%23%3F"
    ] * 2
    for request in seen:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["x-ms-version"] == API_VERSION
        assert request.headers["x-ms-date"].endswith("GMT")
    assert seen[1].headers["x-ms-blob-type"] == "BlockBlob"
    assert seen[1].headers["if-none-match"] == "*"
    await azure.aclose()
