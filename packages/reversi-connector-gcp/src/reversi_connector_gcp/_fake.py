"""FakeGCS: the part of the Cloud Storage JSON API the gcp connector uses, on the kit's vendor fake."""

from __future__ import annotations

import base64
import copy
import dataclasses
import functools
import hashlib
import itertools
import json
import re
import time
from typing import Any

from reversi_core.testing import BearerAuth, FakeRequest, FakeResponse, VendorFake, vendor_route

from ._names import BACKUP_PREFIX

__all__ = ["FakeGCS", "GcsObject", "crc32c"]

_API = "https://cloud.google.com/storage/docs/json_api/v1/objects"


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli) of ``data``, the checksum Cloud Storage keeps for every object.

    Computed by ``google-crc32c`` (Google's C implementation) when it is installed, in pure
    Python otherwise (about a second per MiB).
    """
    try:
        import google_crc32c  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return _crc32c_python(data)
    return int(google_crc32c.value(data))


def _crc32c_python(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_generations = itertools.count(int(time.time() * 1_000_000))


@dataclasses.dataclass
class GcsObject:
    """One stored object: bytes, content type, generation (a fresh one on every write)."""

    data: bytes
    content_type: str = "application/octet-stream"
    generation: int = dataclasses.field(default_factory=lambda: next(_generations))
    updated: float = dataclasses.field(default_factory=time.time)

    @functools.cached_property
    def md5(self) -> str:
        """The base64 MD5 of the bytes, as ``md5Hash`` spells it."""
        return base64.b64encode(hashlib.md5(self.data, usedforsecurity=False).digest()).decode()

    @functools.cached_property
    def crc32c(self) -> str:
        """The base64 big-endian CRC32C of the bytes, as ``crc32c`` spells it."""
        return base64.b64encode(crc32c(self.data).to_bytes(4, "big")).decode()


def _rfc3339(stamp: float) -> str:
    return (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp)) + f".{int(stamp * 1000) % 1000:03d}Z"
    )


class FakeGCS(VendorFake):
    """A fake of Cloud Storage's JSON API: objects get (and ``alt=media``), list, insert
    (media and multipart uploads), delete and rewrite.

    ``token`` may read and write, ``read_only_tokens`` only read (403). Generations are
    real: each write makes a new one, and every precondition the connector relies on is
    checked as Cloud Storage documents it
    (https://cloud.google.com/storage/docs/request-preconditions): ``ifGenerationMatch``
    on insert, delete and rewrite (``0``: the object must not exist),
    ``ifSourceGenerationMatch`` on rewrite, each answered 412 ``conditionNotMet``;
    ``generation`` and ``sourceGeneration`` select a generation, 404 when it is not the
    live one (no versioning). A rewrite of more than :attr:`rewrite_chunk` bytes takes
    several calls (``done: false`` and a ``rewriteToken``), as large copies do.

    Not modelled: versioning, ACLs and IAM, metadata other than ``contentType``,
    resumable uploads, composite objects, soft delete, bucket creation through the API.
    """

    auth = BearerAuth()

    def __init__(
        self,
        *,
        token: str,
        read_only_tokens: tuple[str, ...] = (),
        rewrite_chunk: int = 1024 * 1024,
    ) -> None:
        super().__init__(token=token, read_only_tokens=read_only_tokens)
        self.buckets: dict[str, dict[str, GcsObject]] = {}
        """Objects by bucket, then by name (backups included)."""
        self.rewrite_chunk = rewrite_chunk
        self.rewrite_calls = 0
        """rewriteTo requests served (the connector loops on unfinished ones)."""
        self._rewrites: dict[str, int] = {}

    # -- Cloud Storage's answers to what the kit checks --------------------------------

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        """``{"error": {"code", "message", "errors": [{"domain", "reason", "message"}]}}``
        (https://cloud.google.com/storage/docs/json_api/v1/status-codes)."""
        reason = code or "backendError"
        return FakeResponse(
            status,
            json={
                "error": {
                    "code": status,
                    "message": message,
                    "errors": [{"domain": "global", "reason": reason, "message": message}],
                }
            },
        )

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return self.error(404, "No such object.", code="notFound")

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        if not presented:
            return self.error(
                401, "Anonymous caller does not have storage.objects.get access.", code="required"
            )
        return self.error(401, "Invalid Credentials", code="authError")

    def read_only(self, request: FakeRequest) -> FakeResponse:
        return self.error(
            403, "The caller does not have storage.objects.create access.", code="forbidden"
        )

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        return self.error(
            429, "The rate of change requests to the object is too high.", code="rateLimitExceeded"
        )

    # -- set-up and inspection ---------------------------------------------------------

    def add_bucket(self, name: str) -> None:
        """Create an empty bucket."""
        with self.lock:
            self.buckets.setdefault(name, {})

    def put(
        self,
        bucket: str,
        name: str,
        data: bytes | str,
        content_type: str = "application/octet-stream",
    ) -> str:
        """Store an object directly (a writer other than the connector); return its generation."""
        with self.lock:
            raw = data.encode() if isinstance(data, str) else data
            self.buckets[bucket][name] = GcsObject(raw, content_type)
            return str(self.buckets[bucket][name].generation)

    def remove(self, bucket: str, name: str) -> None:
        """Delete an object directly (a writer other than the connector)."""
        with self.lock:
            self.buckets[bucket].pop(name, None)

    def snapshot(self) -> dict[str, Any]:
        """``{"buckets": {name: {"objects": {name: {"md5", "size", "content_type"}}, "backups": {...}}}}``.

        Generations are left out: a restore writes the old content under a new generation.
        """
        with self.lock:
            out: dict[str, Any] = {}
            for bucket, objects in sorted(self.buckets.items()):
                entry: dict[str, Any] = {"objects": {}, "backups": {}}
                for name, obj in sorted(objects.items()):
                    side = "backups" if name.startswith(BACKUP_PREFIX) else "objects"
                    entry[side][name] = {
                        "md5": obj.md5,
                        "size": len(obj.data),
                        "content_type": obj.content_type,
                    }
                out[bucket] = entry
            return copy.deepcopy({"buckets": out})

    # -- helpers -----------------------------------------------------------------------

    def resource(self, bucket: str, name: str, obj: GcsObject) -> dict[str, Any]:
        """The object resource (https://cloud.google.com/storage/docs/json_api/v1/objects#resource)."""
        return {
            "kind": "storage#object",
            "id": f"{bucket}/{name}/{obj.generation}",
            "name": name,
            "bucket": bucket,
            "generation": str(obj.generation),
            "metageneration": "1",
            "contentType": obj.content_type,
            "size": str(len(obj.data)),
            "md5Hash": obj.md5,
            "crc32c": obj.crc32c,
            "etag": obj.md5,
            "storageClass": "STANDARD",
            "timeCreated": _rfc3339(obj.updated),
            "updated": _rfc3339(obj.updated),
        }

    def _bucket(
        self, request: FakeRequest, param: str = "bucket"
    ) -> dict[str, GcsObject] | FakeResponse:
        found = self.buckets.get(request.path_params.get(param, ""))
        if found is None:
            return self.error(404, "The specified bucket does not exist.", code="notFound")
        return found

    def _condition(
        self, request: FakeRequest, obj: GcsObject | None, name: str = "ifGenerationMatch"
    ) -> FakeResponse | None:
        wanted = request.query.get(name)
        if wanted is None:
            return None
        if not wanted.isdigit():
            return self.error(400, f"Invalid argument {name}.", code="invalid")
        live = obj.generation if obj is not None else 0
        if int(wanted) != live:
            return self.error(
                412,
                "At least one of the pre-conditions you specified did not hold.",
                code="conditionNotMet",
            )
        return None

    def _selected(self, request: FakeRequest, obj: GcsObject | None, name: str) -> bool:
        """False when ``name`` (``generation``/``sourceGeneration``) selects a generation that is not live."""
        wanted = request.query.get(name)
        return wanted is None or (obj is not None and wanted == str(obj.generation))

    # -- routes ------------------------------------------------------------------------

    @vendor_route("GET", "/storage/v1/b/{bucket}/o", docs=f"{_API}/list")
    def list_objects(self, request: FakeRequest) -> FakeResponse:
        """200 ``storage#objects`` with ``items``, ``prefixes``, ``nextPageToken``; 404; 400."""
        found = self._bucket(request)
        if isinstance(found, FakeResponse):
            return found
        query = request.query
        prefix = query.get("prefix", "")
        delimiter = query.get("delimiter") or None
        raw_max = query.get("maxResults", "1000")
        if not raw_max.isdigit():
            return self.error(400, "Invalid value for maxResults.", code="invalid")
        limit = min(int(raw_max), 1000) or 1000
        start = ""
        if "pageToken" in query:
            try:
                start = base64.urlsafe_b64decode(query["pageToken"].encode()).decode()
            except (ValueError, UnicodeDecodeError):
                return self.error(400, "Invalid page token.", code="invalid")
        items: list[dict[str, Any]] = []
        prefixes: list[str] = []
        last = None
        truncated = False
        for name in sorted(found, key=lambda n: n.encode("utf-8")):
            if not name.startswith(prefix) or (start and name.encode() <= start.encode()):
                continue
            if len(items) + len(prefixes) >= limit:
                truncated = True
                break
            rest = name[len(prefix) :]
            if delimiter is not None and delimiter in rest:
                group = prefix + rest[: rest.index(delimiter) + len(delimiter)]
                if group not in prefixes:
                    prefixes.append(group)
                last = name
                continue
            items.append(self.resource(request.path_params["bucket"], name, found[name]))
            last = name
        body: dict[str, Any] = {"kind": "storage#objects"}
        if items:
            body["items"] = items
        if prefixes:
            body["prefixes"] = prefixes
        if truncated and last is not None:
            body["nextPageToken"] = base64.urlsafe_b64encode(last.encode()).decode()
        return FakeResponse(200, json=body)

    @vendor_route("GET", "/storage/v1/b/{bucket}/o/{object}", docs=f"{_API}/get")
    def get_object(self, request: FakeRequest) -> FakeResponse:
        """200 the resource, or with ``alt=media`` the bytes; 404; 412."""
        found = self._bucket(request)
        if isinstance(found, FakeResponse):
            return found
        obj = found.get(request.path_params["object"])
        if obj is None or not self._selected(request, obj, "generation"):
            return self.not_found(request)
        refused = self._condition(request, obj)
        if refused is not None:
            return refused
        if request.query.get("alt") == "media":
            return FakeResponse(
                200,
                body=obj.data,
                headers={
                    "Content-Type": obj.content_type,
                    "X-Goog-Generation": str(obj.generation),
                },
            )
        return FakeResponse(
            200,
            json=self.resource(request.path_params["bucket"], request.path_params["object"], obj),
        )

    @vendor_route("DELETE", "/storage/v1/b/{bucket}/o/{object}", docs=f"{_API}/delete")
    def delete_object(self, request: FakeRequest) -> FakeResponse:
        """204; 404; 412 for ``ifGenerationMatch``."""
        found = self._bucket(request)
        if isinstance(found, FakeResponse):
            return found
        name = request.path_params["object"]
        obj = found.get(name)
        if obj is None or not self._selected(request, obj, "generation"):
            return self.not_found(request)
        refused = self._condition(request, obj)
        if refused is not None:
            return refused
        del found[name]
        return FakeResponse(204)

    @vendor_route("POST", "/upload/storage/v1/b/{bucket}/o", docs=f"{_API}/insert", writes=True)
    def insert_object(self, request: FakeRequest) -> FakeResponse:
        """Media (``name`` in the query) and multipart uploads
        (https://cloud.google.com/storage/docs/uploading-objects): 200 the resource; 400; 404; 412."""
        found = self._bucket(request)
        if isinstance(found, FakeResponse):
            return found
        kind = request.query.get("uploadType")
        if kind == "media":
            name = request.query.get("name", "")
            data, content_type = (
                request.body,
                request.headers.get("content-type") or "application/octet-stream",
            )
        elif kind == "multipart":
            parsed = self._multipart(request)
            if isinstance(parsed, FakeResponse):
                return parsed
            name, data, content_type = parsed
        else:
            return self.error(
                400, "Upload requests must include an uploadType URL parameter.", code="invalid"
            )
        if not name:
            return self.error(400, "Required", code="required")
        refused = self._condition(request, found.get(name))
        if refused is not None:
            return refused
        obj = GcsObject(data, content_type)
        found[name] = obj
        return FakeResponse(200, json=self.resource(request.path_params["bucket"], name, obj))

    def _multipart(self, request: FakeRequest) -> tuple[str, bytes, str] | FakeResponse:
        """The two parts of a ``multipart/related`` upload: JSON metadata, then the media (RFC 2387)."""
        header = request.headers.get("content-type", "")
        found = re.search(r'boundary="?([^";]+)"?', header)
        if not header.startswith("multipart/related") or found is None:
            return self.error(
                400, "A multipart upload must be multipart/related with a boundary.", code="invalid"
            )
        delimiter = b"--" + found[1].encode()
        pieces = request.body.split(delimiter)
        if len(pieces) != 4 or not pieces[3].startswith(b"--"):
            return self.error(
                400, "A multipart upload has a metadata part and a media part.", code="invalid"
            )
        parts = []
        for piece in pieces[1:3]:
            head, sep, content = piece.removeprefix(b"\r\n").partition(b"\r\n\r\n")
            if not sep or not content.endswith(b"\r\n"):
                return self.error(
                    400, "A part of the multipart upload is malformed.", code="invalid"
                )
            parts.append((head.decode("latin-1").lower(), content[:-2]))
        try:
            meta = json.loads(parts[0][1])
        except ValueError:
            return self.error(400, "The metadata part is not JSON.", code="parseError")
        if not isinstance(meta, dict):
            return self.error(400, "The metadata part is not a JSON object.", code="parseError")
        media_type = re.search(r"content-type:\s*([^\r\n]+)", parts[1][0])
        content_type = meta.get("contentType") or (
            media_type[1].strip() if media_type else "application/octet-stream"
        )
        return str(meta.get("name", "")), parts[1][1], str(content_type)

    @vendor_route(
        "POST",
        "/storage/v1/b/{sourceBucket}/o/{sourceObject}/rewriteTo/b/{destinationBucket}/o/{destinationObject}",
        docs=f"{_API}/rewrite",
    )
    def rewrite_object(self, request: FakeRequest) -> FakeResponse:
        """200 ``storage#rewriteResponse`` (``done`` false with a ``rewriteToken`` until the last
        call); 404 for a missing source or ``sourceGeneration`` not live; 412."""
        self.rewrite_calls += 1
        source_bucket = self._bucket(request, "sourceBucket")
        if isinstance(source_bucket, FakeResponse):
            return source_bucket
        target_bucket = self._bucket(request, "destinationBucket")
        if isinstance(target_bucket, FakeResponse):
            return target_bucket
        source = source_bucket.get(request.path_params["sourceObject"])
        if source is None or not self._selected(request, source, "sourceGeneration"):
            return self.not_found(request)
        for refused in (
            self._condition(request, source, "ifSourceGenerationMatch"),
            self._condition(request, target_bucket.get(request.path_params["destinationObject"])),
        ):
            if refused is not None:
                return refused
        token = request.query.get("rewriteToken")
        done_bytes = self._rewrites.pop(token, 0) if token else 0
        done_bytes += self.rewrite_chunk
        size = len(source.data)
        if done_bytes < size:
            token = f"rw{len(self._rewrites)}-{done_bytes}-{source.generation}"
            self._rewrites[token] = done_bytes
            return FakeResponse(
                200,
                json={
                    "kind": "storage#rewriteResponse",
                    "totalBytesRewritten": str(done_bytes),
                    "objectSize": str(size),
                    "done": False,
                    "rewriteToken": token,
                },
            )
        copied = GcsObject(source.data, source.content_type)
        name = request.path_params["destinationObject"]
        target_bucket[name] = copied
        return FakeResponse(
            200,
            json={
                "kind": "storage#rewriteResponse",
                "totalBytesRewritten": str(size),
                "objectSize": str(size),
                "done": True,
                "resource": self.resource(request.path_params["destinationBucket"], name, copied),
            },
        )
