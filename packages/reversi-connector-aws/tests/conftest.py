"""Fixtures of the aws tests: the fake S3 per test, moto's S3 once per session (see _aws_backends)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import boto3
import httpx
import pytest
from moto.server import ThreadedMotoServer

from reversi_connector_aws.testing import ACCESS_KEY, REGION, SECRET_KEY, FakeS3
from reversi_core.testing import FakeServer

TESTS_DIR = Path(__file__).parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _aws_backends import (  # noqa: E402 - found only after the tests folder is put on sys.path above
    AGENT_ACTIONS,
    BUCKETS,
    READER_ACTIONS,
    Backend,
    Moto,
    make_user,
)


@pytest.fixture(scope="session")
def moto() -> Iterator[Moto]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        # auth checking on, after the 9 unauthenticated calls that make the IAM users
        httpx.post(f"{url}/moto-api/reset-auth", content=b"9").raise_for_status()
        iam = boto3.client(
            "iam",
            endpoint_url=url,
            aws_access_key_id="AKIABOOTSTRAP0000000",
            aws_secret_access_key="x" * 40,
            region_name=REGION,
        )
        yield Moto(
            url,
            agent=make_user(iam, "agent", AGENT_ACTIONS),
            reader=make_user(iam, "reader", READER_ACTIONS),
            admin=make_user(iam, "admin", ["s3:*"]),
        )
    finally:
        server.stop()


@pytest.fixture
def bucket() -> str:
    """A bucket name of this test's own."""
    return next(BUCKETS)


@pytest.fixture
async def fake_backend(bucket: str) -> AsyncIterator[Backend]:
    fake = FakeS3(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)
    fake.add_bucket(bucket)
    with FakeServer(fake) as server:
        backend = Backend("fake", bucket, server.url, (ACCESS_KEY, SECRET_KEY), fake=fake)
        yield backend
        await backend.aclose()


@pytest.fixture
async def moto_backend(moto: Moto, bucket: str) -> AsyncIterator[Backend]:
    moto.s3().create_bucket(Bucket=bucket)
    backend = Backend("moto", bucket, moto.url, moto.agent, moto=moto)
    yield backend
    await backend.aclose()


@pytest.fixture(params=["fake", "moto"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test that takes it runs on the fake and on moto."""
    found: Backend = request.getfixturevalue(f"{request.param}_backend")
    return found
