"""FakeS3: the part of the Amazon S3 REST API the aws connector uses, on the kit's vendor fake."""

from __future__ import annotations

import base64
import copy
import dataclasses
import hashlib
import hmac
import re
import time
import urllib.parse
from collections.abc import Iterable
from email.utils import formatdate
from typing import Any
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth  # type: ignore[import-untyped]
from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
from botocore.credentials import Credentials  # type: ignore[import-untyped]

from reversi_core.testing import FakeAuth, FakeRequest, FakeResponse, VendorFake, vendor_route

from ._keys import BACKUP_PREFIX

__all__ = ["FakeS3", "S3Object"]

_API = "https://docs.aws.amazon.com/AmazonS3/latest/API"
_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/s3/aws4_request,\s*"
    r"SignedHeaders=(?P<headers>[a-z0-9;-]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


@dataclasses.dataclass
class S3Object:
    """One stored object: its bytes, ETag (the quoted MD5, as S3 gives for a single PUT), type and time."""

    data: bytes
    content_type: str = "binary/octet-stream"
    last_modified: float = dataclasses.field(default_factory=time.time)

    @property
    def etag(self) -> str:
        return '"' + hashlib.md5(self.data, usedforsecurity=False).hexdigest() + '"'


class _AccessKeyId(FakeAuth):
    """The access key id named in a SigV4 ``Authorization`` header (the signature is checked later)."""

    def credential(self, request: FakeRequest) -> str | None:
        header = request.headers.get("authorization")
        if not header:
            return None
        found = _AUTH.match(header)
        return found["key"] if found else ""


def _xml(status: int, body: str, headers: dict[str, str] | None = None) -> FakeResponse:
    return FakeResponse(
        status,
        body='<?xml version="1.0" encoding="UTF-8"?>\n' + body,
        headers={"Content-Type": "application/xml", **(headers or {})},
    )


def _iso(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(stamp))


class FakeS3(VendorFake):
    """A fake of S3's object API: HeadBucket, ListObjectsV2, Head/Get/Put/Copy/DeleteObject.

    ``access_key``/``secret_key`` (and ``session_token``, when set) are the credentials
    it accepts: every request must carry a valid Signature Version 4 ``Authorization``
    header for them (checked with botocore's own ``S3SigV4Auth``, the payload's SHA-256
    included) or it is refused 403 ``SignatureDoesNotMatch``; an unknown access key gets
    403 ``InvalidAccessKeyId``, none at all 403 ``AccessDenied``. ``read_only_keys`` may
    only read. ``region`` is the one signatures must name.

    Buckets are addressed path style (``/BUCKET/KEY``) and, for a ``Host`` of
    ``BUCKET.<virtual_host>`` (default ``localhost``), virtual-hosted style.
    Preconditions are those S3 documents: ``If-Match``/``If-None-Match`` on GET, HEAD,
    PUT (a write or a copy's target) and ``If-Match`` on DELETE, and
    ``x-amz-copy-source-if-match`` on a copy's source, each answered 412
    ``PreconditionFailed``
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-requests.html).
    ETags are the quoted MD5 of the content, so a copy keeps its source's ETag.

    Not modelled: versioning, multipart uploads, storage classes, ACLs and policies,
    metadata other than Content-Type, checksums other than the payload's SHA-256,
    ``Range``, and bucket creation through the API (:meth:`add_bucket` does it).
    """

    auth = _AccessKeyId()

    def __init__(
        self,
        *,
        access_key: str,
        secret_key: str,
        session_token: str | None = None,
        region: str = "us-east-1",
        read_only_keys: Iterable[tuple[str, str]] = (),
        virtual_host: str = "localhost",
    ) -> None:
        read_only = dict(read_only_keys)
        super().__init__(token=access_key, read_only_tokens=read_only)
        self.secrets = {access_key: secret_key, **read_only}
        self.session_token = session_token
        self.region = region
        self.virtual_host = virtual_host
        self.buckets: dict[str, dict[str, S3Object]] = {}
        """Objects by bucket, then by key (backups included)."""
        self._signed: FakeRequest | None = None

    # -- S3's answers to what the kit checks -------------------------------------------

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        """S3's error body: ``<Error><Code/><Message/>...</Error>``
        (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html)."""
        fields = "".join(f"<{k}>{escape(str(v))}</{k}>" for k, v in extra.items())
        return _xml(
            status,
            f"<Error><Code>{code or 'InternalError'}</Code><Message>{escape(message)}</Message>{fields}"
            "<RequestId>FAKE</RequestId></Error>",
        )

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.error(404, "The specified key does not exist.", code="NoSuchKey")

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        if not presented:
            return self.error(403, "Access Denied", code="AccessDenied")
        return self.error(
            403,
            "The AWS Access Key Id you provided does not exist in our records.",
            code="InvalidAccessKeyId",
        )

    def read_only(self, request: FakeRequest) -> FakeResponse:
        return self.error(403, "Access Denied", code="AccessDenied")

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        return self.error(503, "Please reduce your request rate.", code="SlowDown")

    def gate(self, request: FakeRequest, *, writes: bool, credential: str) -> FakeResponse | None:
        """The signature, its payload hash and the session token, checked as S3 does
        (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html)."""
        signed = self._signed or request
        problem = self._signature_problem(signed, credential)
        if problem is not None:
            return self.error(403, problem, code="SignatureDoesNotMatch")
        if (
            self.session_token is not None
            and signed.headers.get("x-amz-security-token") != self.session_token
        ):
            return self.error(
                403, "The security token included in the request is invalid.", code="InvalidToken"
            )
        return None

    def _signature_problem(self, request: FakeRequest, access_key: str) -> str | None:
        found = _AUTH.match(request.headers.get("authorization", ""))
        stamp = request.headers.get("x-amz-date", "")
        if found is None or not stamp.startswith(found["date"]) or found["region"] != self.region:
            return "The authorization header is malformed or names another date or region."
        claimed = request.headers.get("x-amz-content-sha256", "")
        if claimed != hashlib.sha256(request.body).hexdigest() and not (
            claimed == _EMPTY_SHA256 and not request.body
        ):
            return "The provided 'x-amz-content-sha256' header does not match what was computed."
        names = found["headers"].split(";")
        if "host" not in names or any(n not in request.headers for n in names):
            return "A signed header is missing."
        aws = AWSRequest(
            method=request.method,
            url=f"http://{request.headers['host']}{request.target}",
            data=request.body,
            headers={name: request.headers[name] for name in names},
        )
        aws.context["timestamp"] = stamp
        signer = S3SigV4Auth(
            Credentials(access_key, self.secrets[access_key], self.session_token), "s3", self.region
        )
        expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws)
        if not hmac.compare_digest(expected, found["signature"]):
            return "The request signature we calculated does not match the signature you provided."
        return None

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        """Virtual-hosted requests (``Host: BUCKET.<virtual_host>``) are answered as path style."""
        with self.lock:
            self._signed = request
            try:
                return super().dispatch(self._path_style(request))
            finally:
                self._signed = None

    def _path_style(self, request: FakeRequest) -> FakeRequest:
        host = request.headers.get("host", "").rsplit(":", 1)[0]
        suffix = "." + self.virtual_host
        if not host.endswith(suffix):
            return request
        bucket = host[: -len(suffix)]
        raw_path, sep, query = request.target.partition("?")
        target = f"/{bucket}" + ("" if raw_path == "/" else raw_path) + sep + query
        found = self.match(request.method, target.split("?", 1)[0])
        return dataclasses.replace(
            request,
            target=target,
            path=urllib.parse.unquote(target.split("?", 1)[0]),
            path_params=found[1] if found else {},
        )

    # -- set-up and inspection ---------------------------------------------------------

    def add_bucket(self, name: str) -> None:
        """Create an empty bucket."""
        with self.lock:
            self.buckets.setdefault(name, {})

    def put(
        self, bucket: str, key: str, data: bytes | str, content_type: str = "binary/octet-stream"
    ) -> str:
        """Store an object directly (a writer other than the connector); return its ETag."""
        with self.lock:
            raw = data.encode() if isinstance(data, str) else data
            self.buckets[bucket][key] = S3Object(raw, content_type)
            return self.buckets[bucket][key].etag

    def remove(self, bucket: str, key: str) -> None:
        """Delete an object directly (a writer other than the connector)."""
        with self.lock:
            self.buckets[bucket].pop(key, None)

    def snapshot(self) -> dict[str, Any]:
        """``{"buckets": {name: {"objects": {key: {"etag", "size", "content_type"}}, "backups":
        {key: {...}}}}}``, backups (keys under ``.reversi-backups/``) apart."""
        with self.lock:
            out: dict[str, Any] = {}
            for name, objects in sorted(self.buckets.items()):
                entry: dict[str, Any] = {"objects": {}, "backups": {}}
                for key, obj in sorted(objects.items()):
                    side = "backups" if key.startswith(BACKUP_PREFIX) else "objects"
                    entry[side][key] = {
                        "etag": obj.etag,
                        "size": len(obj.data),
                        "content_type": obj.content_type,
                    }
                out[name] = entry
            return copy.deepcopy({"buckets": out})

    # -- helpers -----------------------------------------------------------------------

    def _bucket(self, request: FakeRequest) -> dict[str, S3Object] | FakeResponse:
        found = self.buckets.get(request.path_params.get("bucket", ""))
        if found is None:
            return self.error(404, "The specified bucket does not exist", code="NoSuchBucket")
        return found

    def _precondition(
        self, request: FakeRequest, obj: S3Object | None, *, write: bool
    ) -> FakeResponse | None:
        """``If-Match`` and ``If-None-Match`` against the object now at the key."""
        if_match = request.headers.get("if-match")
        if if_match is not None:
            if obj is None:
                return self.not_found(request)
            if if_match.strip() not in ("*", obj.etag):
                return self._failed("If-Match")
        if_none = request.headers.get("if-none-match")
        if if_none is not None and obj is not None and if_none.strip() in ("*", obj.etag):
            if not write:
                return FakeResponse(304)
            return self._failed("If-None-Match")
        return None

    def _failed(self, condition: str) -> FakeResponse:
        return self.error(
            412,
            "At least one of the pre-conditions you specified did not hold",
            code="PreconditionFailed",
            Condition=condition,
        )

    def _object_headers(self, obj: S3Object) -> dict[str, str]:
        return {
            "ETag": obj.etag,
            "Content-Type": obj.content_type,
            "Last-Modified": formatdate(obj.last_modified, usegmt=True),
        }

    # -- buckets -----------------------------------------------------------------------

    @vendor_route("HEAD", "/{bucket}", docs=f"{_API}/API_HeadBucket.html")
    def head_bucket(self, request: FakeRequest) -> FakeResponse:
        """200, 404 (no body: a HEAD answer has none)."""
        found = self._bucket(request)
        return found if isinstance(found, FakeResponse) else FakeResponse(200)

    @vendor_route("GET", "/{bucket}", docs=f"{_API}/API_ListObjectsV2.html")
    def list_objects_v2(self, request: FakeRequest) -> FakeResponse:
        """200 ``ListBucketResult``; 404 ``NoSuchBucket``; 400 for a bad ``max-keys`` or token."""
        found = self._bucket(request)
        if isinstance(found, FakeResponse):
            return found
        query = request.query
        if query.get("list-type") != "2":
            return self.error(400, "this fake serves ListObjectsV2 only", code="InvalidArgument")
        prefix = query.get("prefix", "")
        delimiter = query.get("delimiter") or None
        raw_max = query.get("max-keys", "1000")
        if not raw_max.isdigit():
            return self.error(
                400,
                "Provided max-keys not an integer or within integer range",
                code="InvalidArgument",
            )
        max_keys = min(int(raw_max), 1000)
        start = ""
        token = query.get("continuation-token")
        if token is not None:
            try:
                start = base64.urlsafe_b64decode(token.encode()).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                return self.error(
                    400, "The continuation token provided is incorrect", code="InvalidArgument"
                )
        url = query.get("encoding-type") == "url"

        def spell(text: str) -> str:
            return escape(urllib.parse.quote_plus(text, safe="/") if url else text)

        entries: list[tuple[str, str]] = []  # (sort key, xml)
        seen_prefixes: set[str] = set()
        last = ""
        truncated = False
        for key in sorted(found, key=lambda k: k.encode("utf-8")):
            if not key.startswith(prefix) or (start and key.encode() <= start.encode()):
                continue
            if delimiter is not None and delimiter in key[len(prefix) :]:
                group = key[: len(prefix) + key[len(prefix) :].index(delimiter) + len(delimiter)]
                if group in seen_prefixes:
                    last = key
                    continue
                if len(entries) >= max_keys:
                    truncated = True
                    break
                seen_prefixes.add(group)
                entries.append(
                    (group, f"<CommonPrefixes><Prefix>{spell(group)}</Prefix></CommonPrefixes>")
                )
                last = key
                continue
            if len(entries) >= max_keys:
                truncated = True
                break
            obj = found[key]
            entries.append(
                (
                    key,
                    f"<Contents><Key>{spell(key)}</Key><LastModified>{_iso(obj.last_modified)}</LastModified>"
                    f"<ETag>{escape(obj.etag)}</ETag><Size>{len(obj.data)}</Size>"
                    "<StorageClass>STANDARD</StorageClass></Contents>",
                )
            )
            last = key
        body = "".join(xml for _, xml in entries)
        nxt = ""
        if truncated:
            nxt = f"<NextContinuationToken>{base64.urlsafe_b64encode(last.encode()).decode()}</NextContinuationToken>"
        head = (
            f'<ListBucketResult xmlns="{_NS}"><Name>{request.path_params["bucket"]}</Name>'
            f"<Prefix>{spell(prefix)}</Prefix><KeyCount>{len(entries)}</KeyCount><MaxKeys>{max_keys}</MaxKeys>"
            f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>{nxt}"
        )
        if url:
            head += "<EncodingType>url</EncodingType>"
        return _xml(200, head + body + "</ListBucketResult>")

    # -- objects -----------------------------------------------------------------------

    @vendor_route("HEAD", "/{bucket}/{key:path}", docs=f"{_API}/API_HeadObject.html")
    def head_object(self, request: FakeRequest) -> FakeResponse:
        """200 with ETag and Content-Length; 404; 412/304 for its conditions."""
        found = self._bucket(request)
        if isinstance(found, FakeResponse):
            return FakeResponse(404)
        obj = found.get(request.path_params["key"])
        if obj is None:
            return FakeResponse(404)
        refused = self._precondition(request, obj, write=False)
        if refused is not None:
            return FakeResponse(refused.status)
        return FakeResponse(200, body=obj.data, headers=self._object_headers(obj))

    @vendor_route("GET", "/{bucket}/{key:path}", docs=f"{_API}/API_GetObject.html")
    def get_object(self, request: FakeRequest) -> FakeResponse:
        """200 with the bytes; 404 ``NoSuchKey``/``NoSuchBucket``; 412/304 for its conditions."""
        found = self._bucket(request)
        if isinstance(found, FakeResponse):
            return found
        obj = found.get(request.path_params["key"])
        if obj is None:
            return self.not_found(request)
        refused = self._precondition(request, obj, write=False)
        if refused is not None:
            return refused
        return FakeResponse(200, body=obj.data, headers=self._object_headers(obj))

    @vendor_route("PUT", "/{bucket}/{key:path}", docs=f"{_API}/API_PutObject.html")
    def put_object(self, request: FakeRequest) -> FakeResponse:
        """PutObject, or CopyObject with ``x-amz-copy-source``
        (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html): 200; 404;
        412 for the target's or the source's condition."""
        found = self._bucket(request)
        if isinstance(found, FakeResponse):
            return found
        key = request.path_params["key"]
        refused = self._precondition(request, found.get(key), write=True)
        if refused is not None:
            return refused
        source = request.headers.get("x-amz-copy-source")
        if source is None:
            obj = S3Object(
                request.body, request.headers.get("content-type") or "binary/octet-stream"
            )
            found[key] = obj
            return FakeResponse(200, headers={"ETag": obj.etag})
        bucket_name, _, source_key = urllib.parse.unquote(source.removeprefix("/")).partition("/")
        source_bucket = self.buckets.get(bucket_name)
        if source_bucket is None:
            return self.error(404, "The specified bucket does not exist", code="NoSuchBucket")
        original = source_bucket.get(source_key)
        if original is None:
            return self.not_found(request)
        wanted = request.headers.get("x-amz-copy-source-if-match")
        if wanted is not None and wanted.strip() != original.etag:
            return self._failed("x-amz-copy-source-If-Match")
        if source_bucket is found and source_key == key:
            return self.error(
                400,
                "This copy request is illegal because it is trying to copy an object to itself "
                "without changing the object's metadata.",
                code="InvalidRequest",
            )
        copied = S3Object(original.data, original.content_type)
        found[key] = copied
        return _xml(
            200,
            f'<CopyObjectResult xmlns="{_NS}"><ETag>{escape(copied.etag)}</ETag>'
            f"<LastModified>{_iso(copied.last_modified)}</LastModified></CopyObjectResult>",
        )

    @vendor_route("DELETE", "/{bucket}/{key:path}", docs=f"{_API}/API_DeleteObject.html")
    def delete_object(self, request: FakeRequest) -> FakeResponse:
        """204 (also for a missing key without a condition); 404 with ``If-Match`` on a missing key; 412."""
        found = self._bucket(request)
        if isinstance(found, FakeResponse):
            return found
        key = request.path_params["key"]
        refused = self._precondition(request, found.get(key), write=True)
        if refused is not None:
            return refused
        found.pop(key, None)
        return FakeResponse(204)
