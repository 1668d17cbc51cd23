"""FakeBlobStorage: the part of the Blob service REST API the azure connector uses, on the kit's vendor fake."""

from __future__ import annotations

import base64
import copy
import dataclasses
import email.utils
import hashlib
import itertools
import re
import time
import urllib.parse
from collections.abc import Iterable
from typing import Any
from xml.sax.saxutils import escape

from reversi_core.testing import BearerAuth, FakeRequest, FakeResponse, VendorFake, vendor_route

from ._names import BACKUP_PREFIX

__all__ = ["FakeBlob", "FakeBlobStorage"]

_REST = "https://learn.microsoft.com/en-us/rest/api/storageservices"
_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_etags = itertools.count(0x8DC0000_0000_0000)


@dataclasses.dataclass
class FakeBlob:
    """One stored blob: bytes, type, content type, and an ETag that changes on every write."""

    data: bytes
    content_type: str = "application/octet-stream"
    blob_type: str = "BlockBlob"
    etag: str = dataclasses.field(default_factory=lambda: f'"0x{next(_etags):X}"')
    last_modified: float = dataclasses.field(default_factory=time.time)

    @property
    def content_md5(self) -> str:
        return base64.b64encode(hashlib.md5(self.data, usedforsecurity=False).digest()).decode()


def _xml(status: int, body: str) -> FakeResponse:
    return FakeResponse(
        status,
        body='<?xml version="1.0" encoding="utf-8"?>' + body,
        headers={"Content-Type": "application/xml"},
    )


class FakeBlobStorage(VendorFake):
    """A fake of the Blob service: Get Blob Properties, Get Blob, Put Blob (block blobs),
    Copy Blob From URL, Delete Blob and List Blobs, for one storage account.

    Served under ``/<account>`` (path-style, as Azurite serves), over HTTPS when the
    server is started with ``tls=True``. ``token`` may read and write (``Authorization:
    Bearer``), ``read_only_tokens`` only read (403 ``AuthorizationPermissionMismatch``);
    none or another token is 401 ``InvalidAuthenticationInfo``. Every request must carry
    ``x-ms-version`` (a date) and ``x-ms-date`` or ``Date`` (400
    ``MissingRequiredHeader``). Conditions are those the service documents
    (https://learn.microsoft.com/en-us/rest/api/storageservices/specifying-conditional-headers-for-blob-service-operations):
    ``If-Match`` (412 ``ConditionNotMet``), ``If-None-Match: *`` on a write (409
    ``BlobAlreadyExists``), ``x-ms-source-if-match`` on a copy (412
    ``SourceConditionNotMet``). Copy Blob From URL needs ``x-ms-requires-sync: true`` and,
    the source being private, ``x-ms-copy-source-authorization: Bearer <token>`` (403
    ``CannotVerifyCopySource`` without), and copies at most :attr:`max_copy` bytes.

    Not modelled: page and append blobs except as a :attr:`FakeBlob.blob_type` to refuse,
    snapshots, versions, soft delete, leases, tiers, metadata other than the content type,
    containers made through the API (:meth:`add_container` does it).
    """

    auth = BearerAuth()

    def __init__(
        self,
        *,
        token: str,
        account: str = "reversicert",
        read_only_tokens: Iterable[str] = (),
        max_copy: int = 256 * 1024 * 1024,
    ) -> None:
        super().__init__(token=token, read_only_tokens=read_only_tokens, prefix=f"/{account}")
        self.account = account
        self.max_copy = max_copy
        self.containers: dict[str, dict[str, FakeBlob]] = {}
        """Blobs by container, then by name (backups included)."""

    # -- the service's answers to what the kit checks ----------------------------------

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        """``<Error><Code/><Message/></Error>`` with ``x-ms-error-code``
        (https://learn.microsoft.com/en-us/rest/api/storageservices/status-and-error-codes2)."""
        name = code or "InternalError"
        answer = _xml(
            status, f"<Error><Code>{name}</Code><Message>{escape(message)}</Message></Error>"
        )
        return dataclasses.replace(
            answer, headers={**(answer.headers or {}), "x-ms-error-code": name}
        )

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.error(404, "The specified blob does not exist.", code="BlobNotFound")

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        return self.error(
            401, "Server failed to authenticate the request.", code="InvalidAuthenticationInfo"
        )

    def read_only(self, request: FakeRequest) -> FakeResponse:
        return self.error(
            403,
            "This request is not authorized to perform this operation using this permission.",
            code="AuthorizationPermissionMismatch",
        )

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        return self.error(503, "The server is busy.", code="ServerBusy")

    def precheck(self, request: FakeRequest) -> FakeResponse | None:
        version = request.headers.get("x-ms-version")
        if version is None or not _VERSION.fullmatch(version):
            return self.error(
                400,
                "An HTTP header that's mandatory for this request is not specified.",
                code="MissingRequiredHeader",
            )
        if not (request.headers.get("x-ms-date") or request.headers.get("date")):
            return self.error(400, "x-ms-date or Date is required.", code="MissingRequiredHeader")
        return None

    # -- set-up and inspection ---------------------------------------------------------

    def add_container(self, name: str) -> None:
        """Create an empty container."""
        with self.lock:
            self.containers.setdefault(name, {})

    def put(
        self,
        container: str,
        name: str,
        data: bytes | str,
        content_type: str = "application/octet-stream",
        blob_type: str = "BlockBlob",
    ) -> str:
        """Store a blob directly (a writer other than the connector); return its ETag."""
        with self.lock:
            raw = data.encode() if isinstance(data, str) else data
            self.containers[container][name] = FakeBlob(raw, content_type, blob_type)
            return self.containers[container][name].etag

    def remove(self, container: str, name: str) -> None:
        """Delete a blob directly (a writer other than the connector)."""
        with self.lock:
            self.containers[container].pop(name, None)

    def snapshot(self) -> dict[str, Any]:
        """``{"containers": {name: {"blobs": {name: {"md5", "size", "content_type", "type"}}, "backups": {...}}}}``.

        ETags are left out: a restore writes the old content under a new ETag.
        """
        with self.lock:
            out: dict[str, Any] = {}
            for container, blobs in sorted(self.containers.items()):
                entry: dict[str, Any] = {"blobs": {}, "backups": {}}
                for name, blob in sorted(blobs.items()):
                    side = "backups" if name.startswith(BACKUP_PREFIX) else "blobs"
                    entry[side][name] = {
                        "md5": blob.content_md5,
                        "size": len(blob.data),
                        "content_type": blob.content_type,
                        "type": blob.blob_type,
                    }
                out[container] = entry
            return copy.deepcopy({"containers": out})

    # -- helpers -----------------------------------------------------------------------

    def _container(self, request: FakeRequest) -> dict[str, FakeBlob] | FakeResponse:
        found = self.containers.get(request.path_params.get("container", ""))
        if found is None:
            return self.error(
                404, "The specified container does not exist.", code="ContainerNotFound"
            )
        return found

    def _conditions(
        self, request: FakeRequest, blob: FakeBlob | None, *, write: bool
    ) -> FakeResponse | None:
        if_match = request.headers.get("if-match")
        if if_match is not None and (blob is None or if_match.strip() not in ("*", blob.etag)):
            if blob is None and not write:
                return self.not_found(request)
            return self.error(
                412,
                "The condition specified using HTTP conditional header(s) is not met.",
                code="ConditionNotMet",
            )
        if_none = request.headers.get("if-none-match")
        if if_none is not None and blob is not None and if_none.strip() in ("*", blob.etag):
            if write and if_none.strip() == "*":
                return self.error(
                    409, "The specified blob already exists.", code="BlobAlreadyExists"
                )
            return self.error(
                412 if write else 304,
                "The condition specified using HTTP conditional header(s) is not met.",
                code="ConditionNotMet",
            )
        return None

    def _headers(self, blob: FakeBlob) -> dict[str, str]:
        return {
            "ETag": blob.etag,
            "Last-Modified": email.utils.formatdate(blob.last_modified, usegmt=True),
            "Content-Type": blob.content_type,
            "Content-MD5": blob.content_md5,
            "x-ms-blob-type": blob.blob_type,
        }

    # -- routes ------------------------------------------------------------------------

    @vendor_route("GET", "/{container}", docs=f"{_REST}/list-blobs")
    def list_blobs(self, request: FakeRequest) -> FakeResponse:
        """200 ``EnumerationResults``; 404 ``ContainerNotFound``; 400 for a bad marker."""
        query = request.query
        if query.get("restype") != "container" or query.get("comp") != "list":
            return self.error(
                400,
                "The value for one of the HTTP headers is not in the correct format.",
                code="InvalidQueryParameterValue",
            )
        found = self._container(request)
        if isinstance(found, FakeResponse):
            return found
        prefix = query.get("prefix", "")
        delimiter = query.get("delimiter") or None
        raw = query.get("maxresults", "5000")
        if not raw.isdigit() or not 0 < int(raw) <= 5000:
            return self.error(
                400, "maxresults is out of range.", code="OutOfRangeQueryParameterValue"
            )
        limit = int(raw)
        start = ""
        if "marker" in query:
            try:
                start = base64.urlsafe_b64decode(query["marker"].encode()).decode()
            except (ValueError, UnicodeDecodeError):
                return self.error(
                    400, "The marker is not valid.", code="InvalidQueryParameterValue"
                )
        entries: list[str] = []
        groups: set[str] = set()
        nxt = None
        for name in sorted(found):
            if not name.startswith(prefix) or (start and name < start):
                continue
            rest = name[len(prefix) :]
            group = (
                prefix + rest[: rest.index(delimiter) + len(delimiter)]
                if delimiter and delimiter in rest
                else None
            )
            if group is not None and group in groups:
                continue
            if len(entries) >= limit:
                nxt = name
                break
            if group is not None:
                groups.add(group)
                entries.append(f"<BlobPrefix><Name>{escape(group)}</Name></BlobPrefix>")
                continue
            blob = found[name]
            entries.append(
                f"<Blob><Name>{escape(name)}</Name><Properties>"
                f"<Last-Modified>{email.utils.formatdate(blob.last_modified, usegmt=True)}</Last-Modified>"
                f"<Etag>{escape(blob.etag)}</Etag><Content-Length>{len(blob.data)}</Content-Length>"
                f"<Content-Type>{escape(blob.content_type)}</Content-Type><Content-MD5>{blob.content_md5}</Content-MD5>"
                f"<BlobType>{blob.blob_type}</BlobType></Properties></Blob>"
            )
        marker = (
            f"<NextMarker>{base64.urlsafe_b64encode(nxt.encode()).decode()}</NextMarker>"
            if nxt
            else "<NextMarker />"
        )
        container = escape(request.path_params["container"])
        endpoint = f"https://{self.account}.blob.core.windows.net/"
        head = f'<EnumerationResults ServiceEndpoint="{endpoint}" ContainerName="{container}">'
        head += f"<Prefix>{escape(prefix)}</Prefix><MaxResults>{limit}</MaxResults>"
        if delimiter:
            head += f"<Delimiter>{escape(delimiter)}</Delimiter>"
        return _xml(
            200, head + "<Blobs>" + "".join(entries) + "</Blobs>" + marker + "</EnumerationResults>"
        )

    @vendor_route("HEAD", "/{container}/{blob:path}", docs=f"{_REST}/get-blob-properties")
    def get_blob_properties(self, request: FakeRequest) -> FakeResponse:
        """200 with ETag, Content-Length, Content-MD5, x-ms-blob-type; 404; 412 (no body: a HEAD)."""
        found = self._container(request)
        if isinstance(found, FakeResponse):
            return dataclasses.replace(found, body=b"")
        blob = found.get(request.path_params["blob"])
        if blob is None:
            return dataclasses.replace(self.not_found(request), body=b"")
        refused = self._conditions(request, blob, write=False)
        if refused is not None:
            return dataclasses.replace(refused, body=b"")
        return FakeResponse(200, body=blob.data, headers=self._headers(blob))

    @vendor_route("GET", "/{container}/{blob:path}", docs=f"{_REST}/get-blob")
    def get_blob(self, request: FakeRequest) -> FakeResponse:
        """200 with the bytes, or 206 with a part of them for ``x-ms-range``/``Range``
        (https://learn.microsoft.com/en-us/rest/api/storageservices/specifying-the-range-header-for-blob-service-operations);
        404; 412; 416 ``InvalidRange``."""
        found = self._container(request)
        if isinstance(found, FakeResponse):
            return found
        blob = found.get(request.path_params["blob"])
        if blob is None:
            return self.not_found(request)
        refused = self._conditions(request, blob, write=False)
        if refused is not None:
            return refused
        wanted = request.headers.get("x-ms-range") or request.headers.get("range")
        if wanted is None:
            return FakeResponse(200, body=blob.data, headers=self._headers(blob))
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted.strip())
        size = len(blob.data)
        if match is None or int(match[1]) >= size:
            return self.error(
                416,
                "The range specified is invalid for the current size of the resource.",
                code="InvalidRange",
            )
        first = int(match[1])
        last = min(int(match[2]) if match[2] else size - 1, size - 1)
        headers = {**self._headers(blob), "Content-Range": f"bytes {first}-{last}/{size}"}
        return FakeResponse(206, body=blob.data[first : last + 1], headers=headers)

    @vendor_route("PUT", "/{container}/{blob:path}", docs=f"{_REST}/put-blob")
    def put_blob(self, request: FakeRequest) -> FakeResponse:
        """Put Blob (201), or Copy Blob From URL with ``x-ms-copy-source``
        (https://learn.microsoft.com/en-us/rest/api/storageservices/copy-blob-from-url, 202):
        404; 409; 412; 400 for a blob type other than BlockBlob or a copy that is not synchronous."""
        found = self._container(request)
        if isinstance(found, FakeResponse):
            return found
        name = request.path_params["blob"]
        source = request.headers.get("x-ms-copy-source")
        if source is None and request.headers.get("x-ms-blob-type") != "BlockBlob":
            return self.error(
                400, "x-ms-blob-type must be BlockBlob here.", code="InvalidHeaderValue"
            )
        if name in found and found[name].blob_type != "BlockBlob":
            return self.error(
                409, "The blob type is invalid for this operation.", code="InvalidBlobType"
            )
        refused = self._conditions(request, found.get(name), write=True)
        if refused is not None:
            return refused
        if source is None:
            blob = FakeBlob(
                request.body,
                request.headers.get("x-ms-blob-content-type") or "application/octet-stream",
            )
            found[name] = blob
            return FakeResponse(
                201,
                headers={
                    "ETag": blob.etag,
                    "Content-MD5": blob.content_md5,
                    "Last-Modified": email.utils.formatdate(blob.last_modified, usegmt=True),
                },
            )
        return self._copy(request, found, name, source)

    def _copy(
        self, request: FakeRequest, found: dict[str, FakeBlob], name: str, source: str
    ) -> FakeResponse:
        if (
            request.headers.get("x-ms-requires-sync") or ""
        ).lower() != "true":  # the SDK sends "True"
            return self.error(
                400, "This fake serves synchronous copies only.", code="InvalidHeaderValue"
            )
        if request.headers.get("x-ms-copy-source-authorization") != f"Bearer {self.token}":
            return self.error(
                403,
                "Server failed to authenticate the request to the copy source.",
                code="CannotVerifyCopySource",
            )
        url = urllib.parse.urlsplit(source)
        host = request.headers.get("host", "")
        prefix = f"/{self.account}/"
        if url.scheme != "https" or url.netloc != host or not url.path.startswith(prefix):
            return self.error(
                403, "The copy source is not in this account.", code="CannotVerifyCopySource"
            )
        container, _, source_name = urllib.parse.unquote(url.path[len(prefix) :]).partition("/")
        original = self.containers.get(container, {}).get(source_name)
        if original is None:
            return self.error(
                404, "The specified blob does not exist.", code="CannotVerifyCopySource"
            )
        wanted = request.headers.get("x-ms-source-if-match")
        if wanted is not None and wanted.strip() != original.etag:
            return self.error(
                412,
                "The source condition specified using HTTP conditional header(s) is not met.",
                code="SourceConditionNotMet",
            )
        if original.blob_type != "BlockBlob":
            return self.error(
                409, "The source blob type is invalid for this operation.", code="InvalidBlobType"
            )
        if len(original.data) > self.max_copy:
            return self.error(
                409,
                "The source blob is larger than Copy Blob From URL copies.",
                code="CannotVerifyCopySource",
            )
        copied = FakeBlob(original.data, original.content_type)
        found[name] = copied
        return FakeResponse(
            202,
            headers={
                "ETag": copied.etag,
                "Last-Modified": email.utils.formatdate(copied.last_modified, usegmt=True),
                "x-ms-copy-id": f"copy-{copied.etag.strip(chr(34))}",
                "x-ms-copy-status": "success",
                "Content-MD5": copied.content_md5,
            },
        )

    @vendor_route("DELETE", "/{container}/{blob:path}", docs=f"{_REST}/delete-blob")
    def delete_blob(self, request: FakeRequest) -> FakeResponse:
        """202; 404 ``BlobNotFound``; 412 for ``If-Match``."""
        found = self._container(request)
        if isinstance(found, FakeResponse):
            return found
        name = request.path_params["blob"]
        blob = found.get(name)
        if blob is None:
            return self.not_found(request)
        refused = self._conditions(request, blob, write=True)
        if refused is not None:
            return refused
        del found[name]
        return FakeResponse(202)
