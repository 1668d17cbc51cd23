"""Backends for the aws tests: the package's fake S3, and moto's S3 server (auth checking on).

(Helpers only; conftest.py makes the fixtures.)

moto is started once per test session on 127.0.0.1 (``ThreadedMotoServer``), with its
request-auth checking on (``POST /moto-api/reset-auth``): every request must then be
signed by a known access key, and moto evaluates that key's IAM policy. The session
makes two IAM users: ``agent``, holding exactly the IAM actions docs/connectors/aws.md
lists, and ``reader``, holding only the read actions. Each test gets a bucket of its own.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import boto3

from reversi_connector_aws import AwsConnector
from reversi_connector_aws.testing import REGION, FakeS3
from reversi_core.http import Timeouts

AGENT_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket"]
"""The IAM actions docs/connectors/aws.md lists for the five tools together."""
READER_ACTIONS = ["s3:GetObject", "s3:ListBucket"]
"""The IAM actions of the two read tools."""

BUCKETS = (f"reversi-test-{n}" for n in itertools.count(1))


@dataclass
class Moto:
    """A running moto S3 with its IAM users' keys."""

    url: str
    agent: tuple[str, str]
    reader: tuple[str, str]
    admin: tuple[str, str]

    def s3(self, keys: tuple[str, str] | None = None) -> Any:
        """A boto3 S3 client on moto (the admin's keys by default): the test's other writer."""
        key, secret = keys or self.admin
        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=key,
            aws_secret_access_key=secret,
            region_name=REGION,
        )


def make_user(iam: Any, name: str, actions: list[str]) -> tuple[str, str]:
    iam.create_user(UserName=name)
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}],
    }
    iam.put_user_policy(UserName=name, PolicyName=f"{name}-s3", PolicyDocument=json.dumps(policy))
    made = iam.create_access_key(UserName=name)["AccessKey"]
    return made["AccessKeyId"], made["SecretAccessKey"]


@dataclass
class Backend:
    """One S3 for a test: the connector's view and another writer's."""

    name: str
    bucket: str
    url: str
    keys: tuple[str, str]
    fake: FakeS3 | None = None
    moto: Moto | None = None
    made: list[AwsConnector] = field(default_factory=list)

    def connector(self, *, keys: tuple[str, str] | None = None, **options: Any) -> AwsConnector:
        key, secret = keys or self.keys
        options.setdefault("endpoint_url", self.url)
        options.setdefault("timeouts", Timeouts(connect=2, read=5, total=10))
        made = AwsConnector(access_key_id=key, secret_access_key=secret, region=REGION, **options)
        self.made.append(made)
        return made

    async def aclose(self) -> None:
        """Close every connector :meth:`connector` made."""
        for made in self.made:
            await made.aclose()

    def write(self, key: str, data: bytes) -> None:
        """Another writer puts ``data`` at ``key``."""
        if self.fake is not None:
            self.fake.put(self.bucket, key, data)
        else:
            assert self.moto is not None
            self.moto.s3().put_object(Bucket=self.bucket, Key=key, Body=data)

    def remove(self, key: str) -> None:
        """Another writer deletes ``key``."""
        if self.fake is not None:
            self.fake.remove(self.bucket, key)
        else:
            assert self.moto is not None
            self.moto.s3().delete_object(Bucket=self.bucket, Key=key)

    def read(self, key: str) -> bytes | None:
        """The bytes at ``key`` now, or None."""
        if self.fake is not None:
            with self.fake.lock:
                obj = self.fake.buckets[self.bucket].get(key)
                return obj.data if obj is not None else None
        assert self.moto is not None
        try:
            body: bytes = self.moto.s3().get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except self.moto.s3().exceptions.NoSuchKey:
            return None
        return body

    def keys_now(self) -> list[str]:
        """Every key in the bucket, backups included, sorted."""
        if self.fake is not None:
            with self.fake.lock:
                return sorted(self.fake.buckets[self.bucket])
        assert self.moto is not None
        pages = self.moto.s3().get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))
