"""The ``aws`` connector: objects in Amazon S3 buckets, every overwrite and delete undoable.

Five tools. Two read (``aws.get_object``, ``aws.list_objects``); two change a key and are
undone by the third, idempotent one: ``aws.put_object`` and ``aws.delete_object`` by
``aws.restore_object``.

How the undo works, and why it never overwrites someone else's change: before
``put_object`` replaces or ``delete_object`` removes an object, the connector reads the
object's ETag (``HeadObject``), copies exactly that version to
``.reversi-backups/<tie>-<uuid>`` in the same bucket (``CopyObject`` with
``x-amz-copy-source-if-match``), then writes or deletes conditionally on that same ETag
(``If-Match``), or on absence for a new key (``If-None-Match: *``). A writer who slips in
between is answered 412 by S3: nothing is overwritten and the call fails saying so. The
result carries the ETag the call left at the key; ``restore_object`` compares the key
with it first and copies the backup back (or deletes the key that did not exist) only
conditionally on it, so a change made by someone after the call is never restored over:
the compensation fails naming what changed, unless a person let that step overwrite it
(``CallContext.overwrite``: ``reversi rollback RUN --overwrite STEP``, docs/engine.md).

Requests are signed with botocore's ``S3SigV4Auth`` and go to
``https://BUCKET.s3.REGION.amazonaws.com`` (virtual-hosted style), to
``https://s3.REGION.amazonaws.com/BUCKET`` for a bucket name with a dot (path style: the
wildcard certificate does not cover dotted names), or to ``AWS_ENDPOINT_URL_S3``
(MinIO and the like, path style unless ``AWS_S3_ADDRESSING_STYLE=virtual``). See
https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import BaseUrl, HttpConnector, HttpResponse, Setting
from reversi_core.manifest import Compensation, Effect, Match, Requirement

from ._args import (
    MAX_OBJECT_BYTES,
    DeleteObjectArgs,
    GetObjectArgs,
    ListObjectsArgs,
    PutObjectArgs,
    RestoreObjectArgs,
)
from ._errors import ERRORS, local_name, parse_xml
from ._keys import BACKUP_PREFIX, backup_key, backup_of, copy_source, key_path
from ._results import (
    DeleteObjectResult,
    GetObjectResult,
    ListObjectsResult,
    PutObjectResult,
    RestoreObjectResult,
)
from ._sign import S3Signer

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ADDRESSING_STYLES", "MAX_COPY_BYTES", "MAX_OBJECT_BYTES", "AwsConnector"]

MAX_COPY_BYTES = 5 * 1024**3
"""CopyObject copies at most 5 GiB; a larger object cannot be backed up, so it is not touched
(https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html)."""

ADDRESSING_STYLES = ("auto", "virtual", "path")
"""``AWS_S3_ADDRESSING_STYLE``: ``auto`` is virtual-hosted on AWS for names without a dot,
path style for dotted names and for a custom endpoint."""

_S3_DOCS = "https://docs.aws.amazon.com/AmazonS3/latest/API"
_REGION = re.compile(r"^[a-z]{2}(-[a-z0-9]+)+-\d+$")


def _check_region(value: str) -> str:
    value = value.strip()
    if not _REGION.fullmatch(value):
        raise ValueError(f"{value!r} is not an AWS region name such as eu-west-1")
    return value


def _check_style(value: str) -> str:
    value = value.strip().lower()
    if value not in ADDRESSING_STYLES:
        raise ValueError(f"the addressing style is one of {', '.join(ADDRESSING_STYLES)}")
    return value


class _S3Endpoint(BaseUrl):
    """AWS's regional endpoint, ``https://s3.REGION.amazonaws.com``, unless one is given."""

    def resolve(self, values: Mapping[str, str | None]) -> str | None:
        given = values.get(self.option)
        if given:
            return given.strip().rstrip("/")
        return f"https://s3.{values['region']}.amazonaws.com"


@dataclasses.dataclass(frozen=True)
class _Head:
    """What HeadObject says about an object."""

    etag: str
    size: int
    content_type: str | None
    last_modified: str | None


@dataclasses.dataclass
class _Page:
    """One ListObjectsV2 page: objects (backups left out), common prefixes, the next token."""

    objects: list[dict[str, Any]]
    prefixes: list[str]
    truncated: bool = False
    token: str | None = None


_MAX_PROBE_PAGES = 10
"""Pages read under a common prefix to learn whether it holds more than backups, before the
prefix is listed anyway (each page holds at most two entries, the backups being one)."""


def _same_etag(a: str | None, b: str | None) -> bool:
    """ETags compared as S3 spells them, quotes (and a weak ``W/``) aside."""
    if a is None or b is None:
        return a is b
    return a.removeprefix("W/").strip('"') == b.removeprefix("W/").strip('"')


def _on_written_key(tool_name: str) -> Requirement:
    return Requirement(
        tool=tool_name,
        match=[
            Match(this="args.bucket", earlier="args.bucket"),
            Match(this="args.key", earlier="args.key"),
        ],
    )


_ON_A_KEY_THE_RUN_WROTE = [_on_written_key("aws.put_object"), _on_written_key("aws.delete_object")]
"""A write or delete of a key an earlier put_object or delete_object of the run changed:
its undo must run first, since it restores what the earlier step left."""

_RESTORE = Compensation(
    tool="aws.restore_object",
    argument_map={
        "bucket": "args.bucket",
        "key": "args.key",
        "backup_key": "result.backup_key",
        "expected_etag": "result.etag",
    },
    # one object: the bucket and the key as given (S3 compares keys byte for byte)
    resources=["s3:{args.bucket}/{args.key}"],
)


def _child_text(element: ET.Element, name: str) -> str | None:
    for child in element:
        if local_name(child.tag) == name:
            return child.text or ""
    return None


class AwsConnector(HttpConnector):
    """Objects in Amazon S3 (see the module docstring).

    Options (and variables): ``access_key_id`` (``AWS_ACCESS_KEY_ID``),
    ``secret_access_key`` (``AWS_SECRET_ACCESS_KEY``), ``region`` (``AWS_REGION``), the
    optional ``session_token`` (``AWS_SESSION_TOKEN``, for temporary credentials),
    ``endpoint_url`` (``AWS_ENDPOINT_URL_S3``: an S3-compatible endpoint such as MinIO's
    ``http://127.0.0.1:9000``) and ``addressing_style`` (``AWS_S3_ADDRESSING_STYLE``:
    ``auto``, ``virtual`` or ``path``); plus the kit's ``timeouts``, ``transport`` and
    ``verify``. Raises :class:`~reversi_core.errors.ConfigurationError` naming the
    variable of a missing or malformed setting, never showing a secret.
    """

    name = "aws"
    settings = (
        Setting("AWS_ACCESS_KEY_ID", "access_key_id", "an IAM access key id", secret=True),
        Setting(
            "AWS_SECRET_ACCESS_KEY", "secret_access_key", "the access key's secret", secret=True
        ),
        Setting(
            "AWS_REGION", "region", "the bucket's region, such as eu-west-1", check=_check_region
        ),
        Setting(
            "AWS_SESSION_TOKEN",
            "session_token",
            "the session token of temporary credentials",
            secret=True,
            required=False,
        ),
        Setting(
            "AWS_ENDPOINT_URL_S3",
            "endpoint_url",
            "an S3-compatible endpoint (MinIO and the like), such as http://127.0.0.1:9000",
            required=False,
        ),
        Setting(
            "AWS_S3_ADDRESSING_STYLE",
            "addressing_style",
            "auto, virtual or path",
            required=False,
            default="auto",
            check=_check_style,
        ),
    )
    base = _S3Endpoint(None, option="endpoint_url")
    auth = None
    errors = ERRORS

    def signer(self) -> httpx.Auth:
        """botocore's ``S3SigV4Auth`` for the configured region, wrapped as an ``httpx.Auth``."""
        return S3Signer(
            str(self._values["access_key_id"]),
            str(self._values["secret_access_key"]),
            self._values["session_token"],
            str(self._values["region"]),
        )

    # -- addressing ------------------------------------------------------------------

    def _virtual(self, bucket: str) -> bool:
        style = self._values["addressing_style"]
        if style == "path":
            return False
        if style == "virtual":
            return True
        return self._values["endpoint_url"] is None and "." not in bucket

    def _where(self, bucket: str, key: str | None) -> tuple[str | None, str]:
        """``(API root for this request, or None for the connector's, path)``."""
        tail = key_path(key) if key is not None else "/"
        if not self._virtual(bucket):
            return None, f"/{bucket}" + (tail if key is not None else "")
        url = httpx.URL(self.base_url)
        host = f"{bucket}.{url.host}" + (f":{url.port}" if url.port else "")
        return f"{url.scheme}://{host}{url.path.rstrip('/')}", tail

    async def _send(
        self,
        ctx: CallContext,
        method: str,
        bucket: str,
        key: str | None,
        *,
        params: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        ok_statuses: Sequence[int] = (),
    ) -> HttpResponse:
        root, path = self._where(bucket, key)
        return await self.request(
            ctx,
            method,
            path,
            params=params,
            content=content,
            headers=headers,
            ok_statuses=ok_statuses,
            base_url=root,
        )

    # -- reading helpers ---------------------------------------------------------------

    async def _head(self, ctx: CallContext, bucket: str, key: str) -> _Head | None:
        """HeadObject (https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html); None on 404."""
        resp = await self._send(ctx, "HEAD", bucket, key, ok_statuses=(404,))
        if resp.status == 404:
            return None
        etag = resp.headers.get("etag")
        size = resp.headers.get("content-length", "")
        if not etag or not size.isdigit():
            raise self.malformed("has no ETag or Content-Length", resp, wrote=False)
        return _Head(
            etag, int(size), resp.headers.get("content-type"), resp.headers.get("last-modified")
        )

    async def _missing(self, ctx: CallContext, bucket: str, key: str) -> ToolError:
        """The error for a key HeadObject did not find: is it the bucket that is missing?

        A one-entry ListObjectsV2 (the action ``s3:ListBucket`` the tools need anyway,
        https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html) answers
        404 ``NoSuchBucket`` for a missing bucket; a HEAD answer has no body to say so.
        """
        params = {"list-type": "2", "max-keys": "1", "prefix": key, "encoding-type": "url"}
        try:
            await self._send(ctx, "GET", bucket, None, params=params)
        except ToolError as exc:
            if exc.status == 404:
                return ToolError(str(exc), status=404, code="no_such_bucket")
            raise
        return ToolError(
            f"aws: HEAD s3://{bucket}/{key}: HTTP 404: no such key", status=404, code="not_found"
        )

    async def _list(self, ctx: CallContext, bucket: str, params: Mapping[str, Any]) -> _Page:
        """One ListObjectsV2 page, backups left out of its objects (not of its prefixes)."""
        resp = await self._send(ctx, "GET", bucket, None, params=params)
        root = parse_xml(resp.content)
        if root is None or local_name(root.tag) != "ListBucketResult":
            raise self.malformed("is not a ListBucketResult", resp, wrote=False)
        page = _Page([], [])
        for child in root:
            kind = local_name(child.tag)
            if kind == "Contents":
                key = urllib.parse.unquote_plus(_child_text(child, "Key") or "")
                if key.startswith(BACKUP_PREFIX):
                    continue
                size = _child_text(child, "Size") or "0"
                page.objects.append(
                    {
                        "key": key,
                        "size": int(size) if size.isdigit() else 0,
                        "etag": _child_text(child, "ETag"),
                        "last_modified": _child_text(child, "LastModified"),
                    }
                )
            elif kind == "CommonPrefixes":
                page.prefixes.append(urllib.parse.unquote_plus(_child_text(child, "Prefix") or ""))
        page.truncated = (_child_text(root, "IsTruncated") or "").lower() == "true"
        if page.truncated:
            page.token = _child_text(root, "NextContinuationToken")
        return page

    async def _only_backups_under(self, ctx: CallContext, bucket: str, prefix: str) -> bool:
        """True when ``prefix``, a listing's common prefix, holds nothing but backups.

        A prefix inside ``.reversi-backups/`` does. One that ``.reversi-backups/`` starts
        with (``.reversi-`` for the delimiter ``-``, ``.r`` for ``r``) may hold other keys
        too: a ListObjectsV2 under it with the delimiter ``/`` rolls every backup up into
        the one entry ``.reversi-backups/``, so any other entry is another key.
        """
        if prefix.startswith(BACKUP_PREFIX):
            return True
        if not prefix or not BACKUP_PREFIX.startswith(prefix):
            return False
        params: dict[str, Any] = {
            "list-type": "2",
            "encoding-type": "url",
            "max-keys": 2,
            "prefix": prefix,
            "delimiter": "/",
        }
        for _ in range(_MAX_PROBE_PAGES):
            page = await self._list(ctx, bucket, params)
            if page.objects or any(found != BACKUP_PREFIX for found in page.prefixes):
                return False
            if not page.truncated:
                return True
            if not page.token:
                return False
            params["continuation-token"] = page.token
        return False

    def _check_copyable(self, bucket: str, key: str, head: _Head) -> None:
        if head.size > MAX_COPY_BYTES:
            raise ToolError(
                f"aws: s3://{bucket}/{key} is {head.size} bytes; CopyObject copies at most "
                f"{MAX_COPY_BYTES} bytes (5 GiB), so it cannot be backed up and is left alone",
                code="too_large",
            )

    async def _copy(
        self,
        ctx: CallContext,
        bucket: str,
        source: str,
        target: str,
        *,
        source_etag: str,
        conditions: Mapping[str, str],
    ) -> str:
        """CopyObject ``source`` to ``target`` in ``bucket``, only if ``source`` still has ``source_etag``.

        ``conditions`` are the target's (``If-Match``/``If-None-Match``). Returns the new
        copy's ETag. https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html:
        an error while copying may come back inside a 200 answer, and is an error here.
        """
        headers = {
            "x-amz-copy-source": copy_source(bucket, source),
            "x-amz-copy-source-if-match": source_etag,
            **conditions,
        }
        resp = await self._send(ctx, "PUT", bucket, target, headers=headers)
        root = parse_xml(resp.content)
        if root is not None and local_name(root.tag) == "Error":
            code = _child_text(root, "Code") or "copy_failed"
            message = _child_text(root, "Message") or ""
            raise ToolError(
                f"aws: PUT copy of s3://{bucket}/{source} to {target} failed inside a 200 answer: "
                f"{code}: {message}",
                status=resp.status,
                code="copy_failed",
            )
        etag = _child_text(root, "ETag") if root is not None else None
        if not etag:
            raise self.malformed("to a copy names no ETag", resp, wrote=True)
        return etag

    async def _backup(self, ctx: CallContext, bucket: str, key: str, head: _Head) -> str:
        """Copy exactly the version ``head`` read to a fresh backup key; return that key."""
        self._check_copyable(bucket, key, head)
        saved = backup_key(key)
        try:
            await self._copy(
                ctx, bucket, key, saved, source_etag=head.etag, conditions={"If-None-Match": "*"}
            )
        except ToolError as exc:
            if exc.status != 412:
                raise
            raise ToolError(
                f"aws: s3://{bucket}/{key} changed after it was read (it no longer has ETag "
                f"{head.etag}: HTTP 412 to the backup copy); nothing was backed up or written",
                status=412,
                code="precondition_failed",
            ) from None
        return saved

    # -- the tools ---------------------------------------------------------------------

    @tool(
        effect=Effect.READ_ONLY,
        permission="aws:s3:read",
        input=GetObjectArgs,
        output=GetObjectResult,
    )
    async def get_object(self, args: GetObjectArgs, ctx: CallContext) -> dict[str, Any]:
        """Read one object (at most 5 MiB), as text or base64.

        HeadObject first (https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html)
        for its size and ETag, then GetObject with ``If-Match`` on that ETag
        (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html), so the
        content and the ETag returned belong together. Returns ``{"bucket", "key",
        "content", "encoding", "size", "etag", "content_type", "last_modified"}``. Raises
        ``ToolError``: 404 ``not_found`` or ``no_such_bucket``; ``too_large`` over 5 MiB;
        ``not_text`` for content that is not UTF-8 with ``encoding`` ``text``; 412
        ``precondition_failed`` when the object changed between the two requests; 403
        ``forbidden``; 401 ``unauthorized`` for refused credentials.
        """
        head = await self._head(ctx, args.bucket, args.key)
        if head is None:
            raise await self._missing(ctx, args.bucket, args.key)
        if head.size > MAX_OBJECT_BYTES:
            raise ToolError(
                f"aws: s3://{args.bucket}/{args.key} is {head.size} bytes; get_object reads at "
                f"most {MAX_OBJECT_BYTES} (5 MiB)",
                code="too_large",
            )
        resp = await self._send(ctx, "GET", args.bucket, args.key, headers={"If-Match": head.etag})
        data = resp.content
        if args.encoding == "text":
            try:
                content = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ToolError(
                    f"aws: s3://{args.bucket}/{args.key} is not UTF-8 text; read it with encoding base64",
                    code="not_text",
                ) from None
        else:
            content = base64.b64encode(data).decode("ascii")
        return {
            "bucket": args.bucket,
            "key": args.key,
            "content": content,
            "encoding": args.encoding,
            "size": len(data),
            "etag": resp.headers.get("etag") or head.etag,
            "content_type": resp.headers.get("content-type"),
            "last_modified": resp.headers.get("last-modified"),
        }

    @tool(
        effect=Effect.READ_ONLY,
        permission="aws:s3:read",
        input=ListObjectsArgs,
        output=ListObjectsResult,
    )
    async def list_objects(self, args: ListObjectsArgs, ctx: CallContext) -> dict[str, Any]:
        """List a bucket's objects, a page of up to 1000 at a time; backups are never listed.

        ListObjectsV2 with ``encoding-type=url``, so that every key comes back exactly
        (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html). Returns
        ``{"bucket", "prefix", "objects": [{"key", "size", "etag", "last_modified"}],
        "common_prefixes", "truncated", "next_continuation_token"}``; keys under
        ``.reversi-backups/`` are left out (a page may then hold fewer than ``max_keys``),
        and so is a common prefix that holds nothing but backups: one inside
        ``.reversi-backups/``, or one that name starts with (``.reversi-`` for the
        delimiter ``-``) once a second, small ListObjectsV2 under it finds no other key.
        Raises ``ToolError``: 404 ``no_such_bucket``, 403 ``forbidden``, 400 for a bad
        continuation token.
        """
        params: dict[str, Any] = {
            "list-type": "2",
            "encoding-type": "url",
            "max-keys": args.max_keys,
        }
        if args.prefix:
            params["prefix"] = args.prefix
        if args.delimiter is not None:
            params["delimiter"] = args.delimiter
        if args.continuation_token is not None:
            params["continuation-token"] = args.continuation_token
        page = await self._list(ctx, args.bucket, params)
        prefixes = [
            prefix
            for prefix in page.prefixes
            if not await self._only_backups_under(ctx, args.bucket, prefix)
        ]
        return {
            "bucket": args.bucket,
            "prefix": args.prefix,
            "objects": page.objects,
            "common_prefixes": prefixes,
            "truncated": page.truncated,
            "next_continuation_token": page.token,
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="aws:s3:write",
        input=PutObjectArgs,
        output=PutObjectResult,
        compensation=_RESTORE,
        requires=_ON_A_KEY_THE_RUN_WROTE,
    )
    async def put_object(self, args: PutObjectArgs, ctx: CallContext) -> dict[str, Any]:
        """Write an object (at most 5 MiB); an object it replaces is backed up first.

        HeadObject, then for an existing key CopyObject of exactly the version read to
        ``.reversi-backups/<tie>-<uuid>`` (``x-amz-copy-source-if-match``), then PutObject with
        ``If-Match`` on that version, or ``If-None-Match: *`` for a new key
        (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html,
        https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html).
        Returns ``{"bucket", "key", "existed", "backup_key", "etag", "size"}``, ``etag``
        being what this write produced. Raises ``ToolError``: 412 ``precondition_failed``
        when someone else changed the key after it was read (nothing is overwritten; a
        backup made before may remain), 409 ``conflict`` for a concurrent conditional
        write, 404 ``no_such_bucket``, ``too_large`` (over 5 MiB to write, over 5 GiB to
        back up), ``invalid_content`` for base64 that does not decode, 403
        ``forbidden``; ``EffectUncertainError`` when a write's answer was lost.
        """
        data = self._decode(args)
        head = await self._head(ctx, args.bucket, args.key)
        saved = None
        if head is not None:
            saved = await self._backup(ctx, args.bucket, args.key, head)
            condition = {"If-Match": head.etag}
        else:
            condition = {"If-None-Match": "*"}
        content_type = args.content_type or (
            "text/plain; charset=utf-8" if args.encoding == "text" else "application/octet-stream"
        )
        try:
            resp = await self._send(
                ctx,
                "PUT",
                args.bucket,
                args.key,
                content=data,
                headers={"Content-Type": content_type, **condition},
            )
        except ToolError as exc:
            if exc.status != 412:
                raise
            raise self._raced(args.bucket, args.key, head, saved) from None
        etag = resp.headers.get("etag")
        if not etag:
            raise self.malformed("to PutObject has no ETag", resp, wrote=True)
        return {
            "bucket": args.bucket,
            "key": args.key,
            "existed": head is not None,
            "backup_key": saved,
            "etag": etag,
            "size": len(data),
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="aws:s3:write",
        input=DeleteObjectArgs,
        output=DeleteObjectResult,
        compensation=_RESTORE,
        requires=_ON_A_KEY_THE_RUN_WROTE,
    )
    async def delete_object(self, args: DeleteObjectArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete an object after backing it up; a key that does not exist is left as it is.

        HeadObject, CopyObject of exactly the version read to ``.reversi-backups/<tie>-<uuid>``,
        then DeleteObject with ``If-Match`` on that version
        (https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html). Returns
        ``{"bucket", "key", "existed", "deleted", "backup_key", "etag": null}``. Raises
        ``ToolError``: 412 ``precondition_failed`` when someone else changed the object
        after it was read (it is not deleted), 404 ``not_found`` when someone else
        deleted it meanwhile, 404 ``no_such_bucket``, ``too_large`` over 5 GiB, 403
        ``forbidden``; ``EffectUncertainError`` when a write's answer was lost.
        """
        head = await self._head(ctx, args.bucket, args.key)
        if head is None:
            missing = await self._missing(ctx, args.bucket, args.key)
            if missing.code == "no_such_bucket":
                raise missing
            return {
                "bucket": args.bucket,
                "key": args.key,
                "existed": False,
                "deleted": False,
                "backup_key": None,
                "etag": None,
            }
        saved = await self._backup(ctx, args.bucket, args.key, head)
        try:
            await self._send(ctx, "DELETE", args.bucket, args.key, headers={"If-Match": head.etag})
        except ToolError as exc:
            if exc.status == 412:
                raise self._raced(args.bucket, args.key, head, saved) from None
            if exc.status == 404:
                raise ToolError(
                    f"aws: s3://{args.bucket}/{args.key} was deleted by someone else after it was "
                    f"read (HTTP 404 to the conditional delete); nothing was deleted by this call "
                    f"(a backup of it remains at {saved})",
                    status=404,
                    code="not_found",
                ) from None
            raise
        return {
            "bucket": args.bucket,
            "key": args.key,
            "existed": True,
            "deleted": True,
            "backup_key": saved,
            "etag": None,
        }

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="aws:s3:write",
        input=RestoreObjectArgs,
        output=RestoreObjectResult,
    )
    async def restore_object(self, args: RestoreObjectArgs, ctx: CallContext) -> dict[str, Any]:
        """Put a key back as it was before put_object or delete_object, unless someone changed it since.

        Reads the key (HeadObject) and compares it with ``expected_etag``, what the undone
        call left there (null: no object). The write that follows is conditional on the
        ETag read. With a ``backup_key``, copies the backup back (CopyObject with
        ``If-Match``, or ``If-None-Match: *`` where the key holds nothing,
        https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html); without one
        (the key did not exist), deletes the key (DeleteObject with ``If-Match``,
        https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html). A key that
        already matches the backup (or is already gone) is left alone: running it again
        changes nothing. Neither a ``backup_key`` nor an ``expected_etag`` means the call
        found no object and left none (delete_object of a missing key): it changed
        nothing, so nothing is done (action ``none``) whatever the key holds now, even
        with ``ctx.overwrite``: an object someone made there since is theirs. When a person
        allowed this step to overwrite a later change (``ctx.overwrite``, ``reversi
        rollback RUN --overwrite STEP``; docs/engine.md), the comparison is skipped: the
        backup is copied back, or the key deleted, whatever the key holds now (still
        conditional on what was read, so a change made during the restore is not
        overwritten unseen). Returns
        ``{"bucket", "key", "action": "copied_back" | "deleted" | "none", "etag"}``. Raises
        ``ToolError`` with code ``changed_since`` (412 when S3 refused the conditional
        request) naming the key's ETag now and the one expected, when someone else
        changed the key since the call; ``wrong_backup``, before any request, for a backup
        made from another key (a backup's name carries a digest of its key: see
        ``_keys.backup_key``); ``backup_missing`` when the backup is gone; 403
        ``forbidden``; ``EffectUncertainError`` when a write's answer was lost.

        As a tool of its own, an agent's call with ``aws:s3:write`` can delete a key
        through it: with no ``backup_key`` and the key's current ETag as
        ``expected_etag``, the key goes, with no backup. (delete_object, which the same
        permission allows, would back it up first.)
        """
        if args.backup_key is not None and not backup_of(args.backup_key, args.key):
            raise ToolError(
                f"aws: {args.backup_key} is the backup of another key, not of "
                f"s3://{args.bucket}/{args.key}; nothing was restored (a backup is copied back "
                "only onto the key it was made from)",
                code="wrong_backup",
            )
        now = await self._head(ctx, args.bucket, args.key)
        current = now.etag if now is not None else None
        insist = ctx.overwrite
        if args.backup_key is None and args.expected_etag is None:
            # The call found no object and left none (delete_object of a missing key): it
            # changed nothing, so there is nothing to undo, whatever the key holds now.
            return self._restored(args, "none", current)
        if args.backup_key is None:
            if now is None:
                return self._restored(args, "none", None)
            if not insist and not _same_etag(current, args.expected_etag):
                raise self._changed(args, current)
            try:
                await self._send(
                    ctx, "DELETE", args.bucket, args.key, headers={"If-Match": now.etag}
                )
            except ToolError as exc:
                if exc.status == 404:
                    return self._restored(args, "none", None)
                if exc.status == 412:
                    raise self._changed(args, None, refused=True) from None
                raise
            return self._restored(args, "deleted", None)
        backup = await self._head(ctx, args.bucket, args.backup_key)
        if backup is None:
            raise ToolError(
                f"aws: the backup {args.backup_key} of s3://{args.bucket}/{args.key} is gone; "
                "nothing was restored (HTTP 404)",
                status=404,
                code="backup_missing",
            )
        if now is not None and _same_etag(current, backup.etag):
            return self._restored(args, "none", current)
        if not insist and not _same_etag(current, args.expected_etag):
            raise self._changed(args, current)
        condition = {"If-Match": now.etag} if now is not None else {"If-None-Match": "*"}
        try:
            etag = await self._copy(
                ctx,
                args.bucket,
                args.backup_key,
                args.key,
                source_etag=backup.etag,
                conditions=condition,
            )
        except ToolError as exc:
            if exc.status != 412:
                raise
            raise self._changed(args, None, refused=True) from None
        return self._restored(args, "copied_back", etag)

    # -- small pieces --------------------------------------------------------------------

    def _decode(self, args: PutObjectArgs) -> bytes:
        if args.encoding == "text":
            data = args.content.encode("utf-8", "surrogatepass")
        else:
            try:
                data = base64.b64decode(args.content, validate=True)
            except (binascii.Error, ValueError):
                raise ToolError(
                    "aws: content is not valid base64", code="invalid_content"
                ) from None
        if len(data) > MAX_OBJECT_BYTES:
            raise ToolError(
                f"aws: the content is {len(data)} bytes; put_object writes at most {MAX_OBJECT_BYTES} (5 MiB)",
                code="too_large",
            )
        return data

    def _raced(self, bucket: str, key: str, head: _Head | None, saved: str | None) -> ToolError:
        read = f"it no longer has ETag {head.etag}" if head is not None else "it did not exist"
        left = f"; the backup made before, {saved}, remains" if saved else ""
        return ToolError(
            f"aws: s3://{bucket}/{key} was changed by someone else after it was read ({read}); "
            f"S3 refused the conditional write (HTTP 412) and nothing was overwritten{left}",
            status=412,
            code="precondition_failed",
        )

    def _changed(
        self, args: RestoreObjectArgs, current: str | None, *, refused: bool = False
    ) -> ToolError:
        left = f"ETag {args.expected_etag}" if args.expected_etag is not None else "no object"
        if refused:
            now = "S3 refused the conditional restore (HTTP 412)"
        else:
            now = (
                f"it now holds ETag {current}" if current is not None else "it now holds no object"
            )
        return ToolError(
            f"aws: the object s3://{args.bucket}/{args.key} changed since the call being undone "
            f"(that call left {left}; {now}); it was not restored. The later change is kept: "
            "undo it and roll back again, or let the rollback overwrite it (reversi rollback "
            "RUN --overwrite STEP)",
            status=412 if refused else None,
            code="changed_since",
        )

    def _restored(self, args: RestoreObjectArgs, action: str, etag: str | None) -> dict[str, Any]:
        return {"bucket": args.bucket, "key": args.key, "action": action, "etag": etag}
