"""Where requests go (virtual-hosted, path style, a custom endpoint), how they are signed, configuration."""

from __future__ import annotations

import httpx
import pytest
from _aws_backends import Backend

from reversi_connector_aws import AwsConnector
from reversi_connector_aws.testing import LoopbackTransport
from reversi_core.errors import ConfigurationError, ToolError

pytestmark = pytest.mark.anyio

KEY, SECRET, TOKEN = (
    "AKIAADDRESSING000001",
    "addressingSecretKey00000000000000000001",
    "sessionTokenValue0001",
)


def recording(seen: list[httpx.Request]) -> httpx.MockTransport:
    """A transport that answers like S3 for a new key and records every request."""

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "HEAD":
            return httpx.Response(404)
        return httpx.Response(200, headers={"ETag": '"e1"'})

    return httpx.MockTransport(answer)


def aws_with(transport: httpx.AsyncBaseTransport, **options: str) -> AwsConnector:
    return AwsConnector(
        access_key_id=KEY,
        secret_access_key=SECRET,
        region="eu-west-1",
        session_token=TOKEN,
        transport=transport,
        **options,
    )


@pytest.mark.parametrize(
    ("bucket", "options", "url"),
    [
        ("my-bucket", {}, "https://my-bucket.s3.eu-west-1.amazonaws.com/dir/a%20b"),
        ("my.dotted.bucket", {}, "https://s3.eu-west-1.amazonaws.com/my.dotted.bucket/dir/a%20b"),
        (
            "my-bucket",
            {"addressing_style": "path"},
            "https://s3.eu-west-1.amazonaws.com/my-bucket/dir/a%20b",
        ),
        (
            "my-bucket",
            {"endpoint_url": "http://minio.internal:9000"},
            "http://minio.internal:9000/my-bucket/dir/a%20b",
        ),
        (
            "my-bucket",
            {"endpoint_url": "http://minio.internal:9000", "addressing_style": "virtual"},
            "http://my-bucket.minio.internal:9000/dir/a%20b",
        ),
    ],
)
async def test_requests_go_to_the_bucket_virtual_host_or_path_style(
    bucket: str, options: dict[str, str], url: str
) -> None:
    seen: list[httpx.Request] = []
    aws = aws_with(recording(seen), **options)
    await aws.call("aws.put_object", {"bucket": bucket, "key": "dir/a b", "content": "x"})
    assert [str(r.url) for r in seen] == [url, url]
    signed = seen[-1].headers
    assert signed["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY}/")
    assert "/eu-west-1/s3/aws4_request" in signed["authorization"]
    assert {
        "host",
        "if-none-match",
        "x-amz-content-sha256",
        "x-amz-date",
        "x-amz-security-token",
    } <= set(signed["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";"))
    assert signed["x-amz-security-token"] == TOKEN
    assert SECRET not in str(seen[-1].headers)
    assert SECRET not in str(seen[-1].url)
    await aws.aclose()


async def test_virtual_hosted_requests_reach_the_fake_and_moto(backend: Backend) -> None:
    port = httpx.URL(backend.url).port
    aws = backend.connector(
        endpoint_url=f"http://localhost:{port}",
        addressing_style="virtual",
        transport=LoopbackTransport(),
    )
    made = await aws.call(
        "aws.put_object", {"bucket": backend.bucket, "key": "/lead/a b+c", "content": "v"}
    )
    assert backend.read("/lead/a b+c") == b"v"
    listed = await aws.call("aws.list_objects", {"bucket": backend.bucket})
    assert [o["key"] for o in listed["objects"]] == ["/lead/a b+c"]
    await aws.call(
        "aws.restore_object",
        {
            "bucket": backend.bucket,
            "key": "/lead/a b+c",
            "backup_key": None,
            "expected_etag": made["etag"],
        },
    )
    assert backend.keys_now() == []


async def test_a_wrong_secret_is_refused_by_the_signature_check(backend: Backend) -> None:
    aws = backend.connector(keys=(backend.keys[0], "wrong" * 8))
    with pytest.raises(ToolError) as refused:
        await aws.call("aws.list_objects", {"bucket": backend.bucket})
    assert (refused.value.status, refused.value.code) == (403, "unauthorized")
    assert "wrong" * 8 not in str(refused.value)


async def test_a_reader_cannot_write(backend: Backend) -> None:
    keys = (
        backend.moto.reader
        if backend.moto is not None
        else ("AKIAREADONLY00000001", "readOnlySecret000000000000000000000001")
    )
    if backend.fake is not None:
        backend.fake.read_only_tokens = frozenset({keys[0]})
        backend.fake.secrets[keys[0]] = keys[1]
    backend.write("doc", b"v")
    aws = backend.connector(keys=keys)
    assert (await aws.call("aws.get_object", {"bucket": backend.bucket, "key": "doc"}))[
        "content"
    ] == "v"
    with pytest.raises(ToolError) as refused:
        await aws.call("aws.delete_object", {"bucket": backend.bucket, "key": "doc"})
    assert (refused.value.status, refused.value.code) == (403, "forbidden")
    assert backend.keys_now() == ["doc"]


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "eu-west-1"}, "AWS_ACCESS_KEY_ID"),
        ({"AWS_ACCESS_KEY_ID": KEY, "AWS_REGION": "eu-west-1"}, "AWS_SECRET_ACCESS_KEY"),
        ({"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET}, "AWS_REGION"),
        (
            {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "Europe"},
            "AWS_REGION",
        ),
        (
            {
                "AWS_ACCESS_KEY_ID": KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET,
                "AWS_REGION": "eu-west-1",
                "AWS_S3_ADDRESSING_STYLE": "sideways",
            },
            "AWS_S3_ADDRESSING_STYLE",
        ),
        (
            {
                "AWS_ACCESS_KEY_ID": KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET,
                "AWS_REGION": "eu-west-1",
                "AWS_ENDPOINT_URL_S3": "http://u:p@minio:9000",
            },
            "credentials",
        ),
    ],
)
def test_configuration_errors_name_the_variable_and_never_the_secret(
    env: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        AwsConnector.from_env(env)
    assert named in str(refused.value)
    assert SECRET not in str(refused.value)


def test_the_endpoint_and_style_come_from_the_environment() -> None:
    aws = AwsConnector.from_env(
        {
            "AWS_ACCESS_KEY_ID": KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": "eu-west-1",
            "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000/",
            "AWS_S3_ADDRESSING_STYLE": "PATH",
        }
    )
    assert aws.base_url == "http://127.0.0.1:9000"
    assert aws.setting("addressing_style") == "path"
    default = AwsConnector.from_env(
        {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "ap-south-1"}
    )
    assert default.base_url == "https://s3.ap-south-1.amazonaws.com"
