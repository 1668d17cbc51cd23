"""Second oracles of the fake: botocore's S3 model judges the requests, boto3 the answers.

(The third, moto's S3 server, runs the tool, race and addressing tests beside the fake:
the ``backend`` fixture of conftest.py.) Every request the connector sends in a scenario
over all five tools is checked against the S3 service model in botocore
(``_aws_oracle.problems``); boto3 pointed at the fake must read what the fake holds and
turn its refusals into the documented errors. Each oracle is shown to catch a drift made
on purpose: a doctored request, and a fake whose answers are spelled wrongly.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from _aws_oracle import problems
from botocore.config import Config
from botocore.exceptions import ClientError

from reversi_connector_aws import AwsConnector
from reversi_connector_aws.testing import ACCESS_KEY, REGION, SECRET_KEY, FakeS3
from reversi_core.http import Timeouts
from reversi_core.testing import FakeRequest, FakeResponse, FakeServer

BUCKET = "oracle-bucket"
KEYS = ["plain.txt", "a b+c%d?e#f", "a//b/./c/../d", "/lead", "ünï/日本"]


@pytest.fixture
def served() -> Iterator[tuple[FakeS3, FakeServer]]:
    fake = FakeS3(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)
    fake.add_bucket(BUCKET)
    with FakeServer(fake) as server:
        yield fake, server


def _connector(server: FakeServer) -> AwsConnector:
    return AwsConnector(
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        region=REGION,
        endpoint_url=server.url,
        timeouts=Timeouts(connect=2, read=5, total=10),
    )


def _s3(server: FakeServer) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=server.url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
        config=Config(s3={"addressing_style": "path"}),
    )


@pytest.mark.anyio
async def test_every_request_the_connector_sends_fits_the_s3_model(
    served: tuple[FakeS3, FakeServer],
) -> None:
    _fake, server = served
    aws = _connector(server)
    for key in KEYS:
        first = await aws.call("aws.put_object", {"bucket": BUCKET, "key": key, "content": "one"})
        second = await aws.call(
            "aws.put_object",
            {
                "bucket": BUCKET,
                "key": key,
                "content": base64.b64encode(b"\0two").decode(),
                "encoding": "base64",
                "content_type": "application/x-thing",
            },
        )
        await aws.call("aws.get_object", {"bucket": BUCKET, "key": key, "encoding": "base64"})
        await aws.call(
            "aws.restore_object",
            {
                "bucket": BUCKET,
                "key": key,
                "backup_key": second["backup_key"],
                "expected_etag": second["etag"],
            },
        )
        gone = await aws.call("aws.delete_object", {"bucket": BUCKET, "key": key})
        await aws.call(
            "aws.restore_object",
            {"bucket": BUCKET, "key": key, "backup_key": gone["backup_key"], "expected_etag": None},
        )
        assert first["backup_key"] is None
    page = await aws.call(
        "aws.list_objects", {"bucket": BUCKET, "prefix": "a", "delimiter": "/", "max_keys": 1}
    )
    await aws.call(
        "aws.list_objects",
        {"bucket": BUCKET, "continuation_token": page["next_continuation_token"]},
    )
    await aws.call("aws.delete_object", {"bucket": BUCKET, "key": "never-there"})
    await aws.aclose()
    seen = set()
    for request in server.requests:
        found = problems(request.method, request.target, request.headers, request.body)
        assert found == [], f"{request.method} {request.target}: {found}"
        seen.add((request.method, "x-amz-copy-source" in request.headers))
    assert seen == {
        ("HEAD", False),
        ("GET", False),
        ("PUT", False),
        ("PUT", True),
        ("DELETE", False),
    }


@pytest.mark.parametrize(
    ("method", "target", "headers", "why"),
    [
        (
            "PUT",
            "/b/k",
            {"x-amz-copy-source": "/b/s", "x-amz-copy-source-if-matches": '"e"'},
            "not in the model",
        ),
        ("DELETE", "/b/k", {"if-none-match": "*"}, "if-none-match is not in the model"),
        ("GET", "/b?list-type=2&maxkeys=3", {}, "query parameter maxkeys"),
        ("GET", "/b?list-type=2&max-keys=ten", {}, "not an integer"),
        ("GET", "/b?list-type=2&encoding-type=base64", {}, "not one of"),
        ("GET", "/b?list-type=1", {}, "the model fixes 2"),
        ("POST", "/b/k", {}, "no S3 operation"),
        ("PUT", "/b/k", {"x-amz-copy-source": ""}, "CopySource"),
    ],
)
def test_the_model_catches_a_request_that_drifted(
    method: str, target: str, headers: dict[str, str], why: str
) -> None:
    found = problems(method, target, headers, b"")
    assert any(why in problem for problem in found), found


def boto3_view(server: FakeServer) -> dict[str, str]:
    """``{key: ETag}`` of the bucket as boto3 reads it: listed, then each object's HEAD."""
    s3 = _s3(server)
    listed = s3.list_objects_v2(Bucket=BUCKET)  # botocore asks for url encoding and decodes
    view = {}
    for entry in listed.get("Contents", []):
        head = s3.head_object(Bucket=BUCKET, Key=entry["Key"])
        view[entry["Key"]] = head.get("ETag", "")
    return view


def test_boto3_reads_the_fake_and_gets_its_refusals_as_s3s(
    served: tuple[FakeS3, FakeServer],
) -> None:
    fake, server = served
    s3 = _s3(server)
    for key in KEYS:
        made = s3.put_object(Bucket=BUCKET, Key=key, Body=b"data-" + key.encode(), IfNoneMatch="*")
        assert fake.buckets[BUCKET][key].etag == made["ETag"]
        assert (
            s3.get_object(Bucket=BUCKET, Key=key, IfMatch=made["ETag"])["Body"].read()
            == b"data-" + key.encode()
        )
        copied = s3.copy_object(
            Bucket=BUCKET,
            Key=key + ".copy",
            CopySource={"Bucket": BUCKET, "Key": key},
            CopySourceIfMatch=made["ETag"],
        )
        assert copied["CopyObjectResult"]["ETag"] == made["ETag"]
    assert boto3_view(server) == {
        k: o["etag"] for k, o in fake.snapshot()["buckets"][BUCKET]["objects"].items()
    }
    refusals = [
        (
            lambda: s3.put_object(Bucket=BUCKET, Key=KEYS[0], Body=b"x", IfNoneMatch="*"),
            "PreconditionFailed",
        ),
        (
            lambda: s3.put_object(Bucket=BUCKET, Key=KEYS[0], Body=b"x", IfMatch='"nope"'),
            "PreconditionFailed",
        ),
        (
            lambda: s3.delete_object(Bucket=BUCKET, Key=KEYS[0], IfMatch='"nope"'),
            "PreconditionFailed",
        ),
        (
            lambda: s3.copy_object(
                Bucket=BUCKET,
                Key="t",
                CopySource={"Bucket": BUCKET, "Key": KEYS[0]},
                CopySourceIfMatch='"nope"',
            ),
            "PreconditionFailed",
        ),
        (lambda: s3.get_object(Bucket=BUCKET, Key="missing"), "NoSuchKey"),
        (lambda: s3.list_objects_v2(Bucket="no-such-bucket"), "NoSuchBucket"),
    ]
    for call, code in refusals:
        with pytest.raises(ClientError) as refused:
            call()
        assert refused.value.response["Error"]["Code"] == code
    s3.delete_object(Bucket=BUCKET, Key=KEYS[0], IfMatch=fake.buckets[BUCKET][KEYS[0]].etag)
    assert KEYS[0] not in fake.buckets[BUCKET]
    bad = boto3.client(
        "s3",
        endpoint_url=server.url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key="wrong" * 8,
        region_name=REGION,
    )
    with pytest.raises(ClientError) as forged:
        bad.list_objects_v2(Bucket=BUCKET)
    assert forged.value.response["Error"]["Code"] == "SignatureDoesNotMatch"


class DriftedFakeS3(FakeS3):
    """A fake drifted from S3 on purpose: listings say ``<Content>``, HEAD answers lose the ETag."""

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        answer = super().dispatch(request)
        if isinstance(answer.body, str):
            answer = dataclasses.replace(answer, body=answer.body.replace("Contents>", "Content>"))
        if request.method == "HEAD":
            headers = {k: v for k, v in (answer.headers or {}).items() if k.lower() != "etag"}
            answer = dataclasses.replace(answer, headers=headers)
        return answer


def test_boto3_catches_a_fake_that_drifted() -> None:
    fake = DriftedFakeS3(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)
    fake.add_bucket(BUCKET)
    fake.put(BUCKET, "k", b"v")
    with FakeServer(fake) as server:
        assert boto3_view(server) != {"k": fake.buckets[BUCKET]["k"].etag}
