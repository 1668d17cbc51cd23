"""The ``gcp`` connector: objects in Google Cloud Storage, every overwrite and delete undoable.

Five tools, the same shape as the ``aws`` connector's: ``gcp.get_object`` and
``gcp.list_objects`` read; ``gcp.put_object`` and ``gcp.delete_object`` change an object
and are undone by ``gcp.restore_object``.

Generations make every step exact (https://cloud.google.com/storage/docs/request-preconditions):
the connector reads the object's generation, copies exactly that generation to
``.reversi-backups/<tie>-<uuid>`` with ``rewriteTo`` (``sourceGeneration``, the target
``ifGenerationMatch=0``; looped on ``rewriteToken`` until done, so objects of any size
are backed up), then writes (a multipart upload) or deletes with ``ifGenerationMatch``
set to that generation, or ``0`` for a new object. Cloud Storage answers 412 to a
writer who slipped in between: nothing is overwritten. The result carries the
generation the call produced; ``restore_object`` compares the object with it first and
writes back only conditionally on it, so a later change by someone else is never
restored over, unless a person let that step overwrite it (``CallContext.overwrite``:
``reversi rollback RUN --overwrite STEP``, docs/engine.md).

Requests go to the JSON API at ``https://storage.googleapis.com`` (``GCP_STORAGE_URL``
for an emulator) with ``Authorization: Bearer <GCP_ACCESS_TOKEN>``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
from typing import Any

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import (
    BaseUrl,
    Bearer,
    ErrorTable,
    HttpConnector,
    HttpResponse,
    RateLimit,
    Setting,
    url_path,
)
from reversi_core.manifest import Compensation, Effect, Match, Requirement

from ._args import (
    MAX_OBJECT_BYTES,
    DeleteObjectArgs,
    GetObjectArgs,
    ListObjectsArgs,
    PutObjectArgs,
    RestoreObjectArgs,
)
from ._names import BACKUP_PREFIX, backup_name, backup_of
from ._results import (
    DeleteObjectResult,
    GetObjectResult,
    ListObjectsResult,
    PutObjectResult,
    RestoreObjectResult,
)

__all__ = ["DEFAULT_BASE_URL", "MAX_OBJECT_BYTES", "MAX_REWRITE_CALLS", "GcpConnector"]

DEFAULT_BASE_URL = "https://storage.googleapis.com"
"""The Cloud Storage JSON API's host (https://cloud.google.com/storage/docs/json_api)."""

MAX_REWRITE_CALLS = 10_000
"""rewriteTo calls one copy may take before the connector gives up (each moves up to about 1 GiB)."""

_OBJECTS = "https://cloud.google.com/storage/docs/json_api/v1/objects"


def _reason(body: Any) -> str:
    """The first ``errors[].reason`` of a Cloud Storage error body, as words for the message."""
    errors = (
        body.get("error", {}).get("errors")
        if isinstance(body, dict) and isinstance(body.get("error"), dict)
        else None
    )
    if (
        isinstance(errors, list)
        and errors
        and isinstance(errors[0], dict)
        and isinstance(errors[0].get("reason"), str)
    ):
        return f"reason {errors[0]['reason']}"
    return ""


ERRORS = ErrorTable(
    code_fields=(),
    message_fields=("error.message",),
    statuses={
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        409: "conflict",
        412: "precondition_failed",
    },
    details=_reason,
    rate_limit=RateLimit(statuses=frozenset({429}), retry_after=True),
)
"""Cloud Storage's errors (https://cloud.google.com/storage/docs/json_api/v1/status-codes): the
code comes from the status, since the emulators spell ``errors[].reason`` otherwise than the
service; the reason goes into the message."""


@dataclasses.dataclass(frozen=True)
class _Meta:
    """What objects.get says about an object."""

    generation: str
    size: int
    content_type: str | None
    updated: str | None
    md5: str | None
    crc32c: str | None

    def same_content(self, other: _Meta) -> bool:
        """True when both hold the same bytes, by the checksums Cloud Storage keeps."""
        return self.holds(other.crc32c, other.md5) and self.size == other.size

    def holds(self, crc32c: str | None, md5: str | None) -> bool:
        """True when this object's checksums are ``crc32c`` (and ``md5``, where both have one)."""
        if crc32c is None or self.crc32c != crc32c:
            return False
        return md5 is None or self.md5 is None or self.md5 == md5


@dataclasses.dataclass(frozen=True)
class _Page:
    """One objects.list page: objects (backups left out), prefixes, the next page's token."""

    objects: list[dict[str, Any]]
    prefixes: list[str]
    token: str | None


_MAX_PROBE_PAGES = 10
"""Pages read under a prefix to learn whether it holds more than backups, before the prefix
is listed anyway (each page holds at most two entries, the backups being one)."""


def _on_written_key(tool_name: str) -> Requirement:
    return Requirement(
        tool=tool_name,
        match=[
            Match(this="args.bucket", earlier="args.bucket"),
            Match(this="args.key", earlier="args.key"),
        ],
    )


_ON_A_KEY_THE_RUN_WROTE = [_on_written_key("gcp.put_object"), _on_written_key("gcp.delete_object")]
"""A write or delete of an object an earlier put_object or delete_object of the run changed."""

_RESTORE = Compensation(
    tool="gcp.restore_object",
    argument_map={
        "bucket": "args.bucket",
        "key": "args.key",
        "backup_key": "result.backup_key",
        "expected_generation": "result.generation",
        "expected_crc32c": "result.crc32c",
        "expected_md5": "result.md5",
    },
    # one object: the bucket and the name as given (Cloud Storage compares names byte for byte)
    resources=["gcs:{args.bucket}/{args.key}"],
)


def _object_path(bucket: str, name: str) -> str:
    return url_path("/storage/v1/b/{bucket}/o/{name}", bucket=bucket, name=name)


class GcpConnector(HttpConnector):
    """Objects in Google Cloud Storage (see the module docstring).

    ``token`` (``GCP_ACCESS_TOKEN``) is an OAuth 2.0 access token with the scope
    ``https://www.googleapis.com/auth/devstorage.read_write`` (``read_only`` for the
    read tools); ``base_url`` (``GCP_STORAGE_URL``) replaces the API host, for an
    emulator. Plus the kit's ``timeouts``, ``transport`` and ``verify``. Raises
    :class:`~reversi_core.errors.ConfigurationError` for a missing or malformed setting.
    """

    name = "gcp"
    settings = (
        Setting(
            "GCP_ACCESS_TOKEN", "token", "an OAuth 2.0 access token for Cloud Storage", secret=True
        ),
        Setting(
            "GCP_STORAGE_URL",
            "base_url",
            "the JSON API's host, for an emulator such as http://127.0.0.1:4443",
            required=False,
        ),
    )
    base = BaseUrl(DEFAULT_BASE_URL)
    auth = Bearer("token")
    errors = ERRORS

    # -- helpers ---------------------------------------------------------------------

    def _meta_of(self, resp: HttpResponse, *, wrote: bool) -> _Meta:
        found = self.expect_object(resp, "object resource", wrote=wrote)
        generation = found.get("generation")
        size = str(found.get("size", ""))
        if not isinstance(generation, str) or not generation.isdigit() or not size.isdigit():
            raise self.malformed("has no generation or size", resp, wrote=wrote)
        return _Meta(
            generation,
            int(size),
            found.get("contentType"),
            found.get("updated"),
            found.get("md5Hash"),
            found.get("crc32c"),
        )

    async def _meta(self, ctx: CallContext, bucket: str, name: str) -> _Meta | None:
        """objects.get (https://cloud.google.com/storage/docs/json_api/v1/objects/get); None on 404."""
        resp = await self.request(ctx, "GET", _object_path(bucket, name), ok_statuses=(404,))
        if resp.status == 404:
            return None
        return self._meta_of(resp, wrote=False)

    async def _missing(self, ctx: CallContext, bucket: str, name: str) -> ToolError:
        """The error for an object objects.get did not find, telling a missing bucket apart
        with a one-entry objects.list (the permission storage.objects.list the tools need anyway)."""
        try:
            await self.request(
                ctx,
                "GET",
                url_path("/storage/v1/b/{bucket}/o", bucket=bucket),
                params={"maxResults": 1, "prefix": name},
            )
        except ToolError as exc:
            if exc.status == 404:
                return ToolError(str(exc), status=404, code="no_such_bucket")
            raise
        return ToolError(
            f"gcp: GET gs://{bucket}/{name}: HTTP 404: no such object", status=404, code="not_found"
        )

    async def _list(self, ctx: CallContext, bucket: str, params: dict[str, Any]) -> _Page:
        """One objects.list page, backups left out of its items (not of its prefixes)."""
        try:
            resp = await self.request(
                ctx, "GET", url_path("/storage/v1/b/{bucket}/o", bucket=bucket), params=params
            )
        except ToolError as exc:
            raise _bucket_missing(exc) from None
        answer = self.expect_object(resp, "object list", wrote=False)
        objects = []
        for item in answer.get("items") or []:
            name = item.get("name") if isinstance(item, dict) else None
            if not isinstance(name, str) or name.startswith(BACKUP_PREFIX):
                continue
            size = str(item.get("size", "0"))
            objects.append(
                {
                    "key": name,
                    "size": int(size) if size.isdigit() else 0,
                    "generation": item.get("generation"),
                    "updated": item.get("updated"),
                }
            )
        prefixes = [p for p in answer.get("prefixes") or [] if isinstance(p, str)]
        token = answer.get("nextPageToken")
        return _Page(objects, prefixes, token if isinstance(token, str) and token else None)

    async def _only_backups_under(self, ctx: CallContext, bucket: str, prefix: str) -> bool:
        """True when ``prefix``, a listing's common prefix, holds nothing but backups.

        A prefix inside ``.reversi-backups/`` does. One that ``.reversi-backups/`` starts
        with (``.reversi-`` for the delimiter ``-``, ``.r`` for ``r``) may hold other
        objects too: an objects.list under it with the delimiter ``/`` rolls every backup
        up into the one prefix ``.reversi-backups/``, so any other entry is another object.
        """
        if prefix.startswith(BACKUP_PREFIX):
            return True
        if not prefix or not BACKUP_PREFIX.startswith(prefix):
            return False
        params: dict[str, Any] = {"maxResults": 2, "prefix": prefix, "delimiter": "/"}
        for _ in range(_MAX_PROBE_PAGES):
            page = await self._list(ctx, bucket, params)
            if page.objects or any(found != BACKUP_PREFIX for found in page.prefixes):
                return False
            if page.token is None:
                return True
            params["pageToken"] = page.token
        return False

    async def _rewrite(
        self,
        ctx: CallContext,
        bucket: str,
        source: str,
        target: str,
        *,
        generation: str,
        if_generation: str,
    ) -> str:
        """objects.rewrite of exactly ``generation`` of ``source`` to ``target``, looped until done.

        https://cloud.google.com/storage/docs/json_api/v1/objects/rewrite: every call
        carries the same ``sourceGeneration`` and ``ifGenerationMatch``, and the
        ``rewriteToken`` of the previous answer. Returns the copy's generation.
        """
        path = url_path(
            "/storage/v1/b/{sb}/o/{so}/rewriteTo/b/{db}/o/{do}",
            sb=bucket,
            so=source,
            db=bucket,
            do=target,
        )
        params: dict[str, Any] = {
            "sourceGeneration": generation,
            "ifGenerationMatch": if_generation,
        }
        for _ in range(MAX_REWRITE_CALLS):
            resp = await self.request(ctx, "POST", path, params=params, json={})
            answer = self.expect_object(resp, "rewrite response", wrote=True)
            if answer.get("done") is True:
                resource = answer.get("resource")
                made = resource.get("generation") if isinstance(resource, dict) else None
                if not isinstance(made, str):
                    raise self.malformed(
                        "to a finished rewrite names no generation", resp, wrote=True
                    )
                return made
            token = answer.get("rewriteToken")
            if not isinstance(token, str) or not token:
                raise self.malformed(
                    "to an unfinished rewrite has no rewriteToken", resp, wrote=True
                )
            params["rewriteToken"] = token
        raise ToolError(
            f"gcp: the copy of gs://{bucket}/{source} did not finish in {MAX_REWRITE_CALLS} rewrite calls",
            code="copy_unfinished",
        )

    async def _backup(self, ctx: CallContext, bucket: str, name: str, meta: _Meta) -> str:
        """Copy exactly the generation read to a fresh backup name; return that name."""
        saved = backup_name(name)
        try:
            await self._rewrite(
                ctx, bucket, name, saved, generation=meta.generation, if_generation="0"
            )
        except ToolError as exc:
            if exc.status not in (404, 412):
                raise
            raise ToolError(
                f"gcp: gs://{bucket}/{name} changed after it was read (generation {meta.generation} "
                f"is gone: HTTP {exc.status} to the backup copy); nothing was backed up or written",
                status=exc.status,
                code="precondition_failed",
            ) from None
        return saved

    async def _upload(
        self,
        ctx: CallContext,
        bucket: str,
        name: str,
        data: bytes,
        content_type: str,
        if_generation: str,
    ) -> HttpResponse:
        """A multipart upload (objects.insert, https://cloud.google.com/storage/docs/uploading-objects)
        with ``ifGenerationMatch``: the name travels in the JSON part, never in the URL."""
        boundary = _boundary(data)
        meta = json.dumps({"name": name, "contentType": content_type})
        body = (
            (
                f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{meta}\r\n"
                f"--{boundary}\r\nContent-Type: {content_type}\r\n\r\n"
            ).encode()
            + data
            + f"\r\n--{boundary}--\r\n".encode()
        )
        return await self.request(
            ctx,
            "POST",
            url_path("/upload/storage/v1/b/{bucket}/o", bucket=bucket),
            params={"uploadType": "multipart", "ifGenerationMatch": if_generation},
            content=body,
            headers={"Content-Type": f"multipart/related; boundary={boundary}"},
        )

    # -- the tools ---------------------------------------------------------------------

    @tool(
        effect=Effect.READ_ONLY,
        permission="gcp:storage:read",
        input=GetObjectArgs,
        output=GetObjectResult,
    )
    async def get_object(self, args: GetObjectArgs, ctx: CallContext) -> dict[str, Any]:
        """Read one object (at most 5 MiB), as text or base64.

        objects.get for its generation and size, then ``alt=media`` of exactly that
        generation (https://cloud.google.com/storage/docs/json_api/v1/objects/get).
        Returns ``{"bucket", "key", "content", "encoding", "size", "generation",
        "content_type", "updated"}``. Raises ``ToolError``: 404 ``not_found`` or
        ``no_such_bucket`` (404 ``not_found`` too when it was replaced between the two
        requests); ``too_large`` over 5 MiB; ``not_text``; 403 ``forbidden``; 401
        ``unauthorized``.
        """
        meta = await self._meta(ctx, args.bucket, args.key)
        if meta is None:
            raise await self._missing(ctx, args.bucket, args.key)
        if meta.size > MAX_OBJECT_BYTES:
            raise ToolError(
                f"gcp: gs://{args.bucket}/{args.key} is {meta.size} bytes; get_object reads at most "
                f"{MAX_OBJECT_BYTES} (5 MiB)",
                code="too_large",
            )
        resp = await self.request(
            ctx,
            "GET",
            _object_path(args.bucket, args.key),
            params={"alt": "media", "generation": meta.generation},
        )
        data = resp.content
        if args.encoding == "text":
            try:
                content = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ToolError(
                    f"gcp: gs://{args.bucket}/{args.key} is not UTF-8 text; read it with encoding base64",
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
            "generation": meta.generation,
            "content_type": meta.content_type,
            "updated": meta.updated,
        }

    @tool(
        effect=Effect.READ_ONLY,
        permission="gcp:storage:read",
        input=ListObjectsArgs,
        output=ListObjectsResult,
    )
    async def list_objects(self, args: ListObjectsArgs, ctx: CallContext) -> dict[str, Any]:
        """List a bucket's objects, a page of up to 1000 at a time; backups are never listed.

        objects.list (https://cloud.google.com/storage/docs/json_api/v1/objects/list)
        with ``prefix``, ``delimiter``, ``maxResults`` and ``pageToken``. Returns
        ``{"bucket", "prefix", "objects": [{"key", "size", "generation", "updated"}],
        "common_prefixes", "truncated", "next_continuation_token"}``; names under
        ``.reversi-backups/`` are left out, and so is a prefix that holds nothing but
        backups: one inside ``.reversi-backups/``, or one that name starts with
        (``.reversi-`` for the delimiter ``-``) once a second, small objects.list under
        it finds no other object. Raises ``ToolError``: 404 ``no_such_bucket``,
        403 ``forbidden``, 400 for a bad page token.
        """
        params: dict[str, Any] = {"maxResults": args.max_keys}
        if args.prefix:
            params["prefix"] = args.prefix
        if args.delimiter is not None:
            params["delimiter"] = args.delimiter
        if args.continuation_token is not None:
            params["pageToken"] = args.continuation_token
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
            "truncated": page.token is not None,
            "next_continuation_token": page.token,
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="gcp:storage:write",
        input=PutObjectArgs,
        output=PutObjectResult,
        compensation=_RESTORE,
        requires=_ON_A_KEY_THE_RUN_WROTE,
    )
    async def put_object(self, args: PutObjectArgs, ctx: CallContext) -> dict[str, Any]:
        """Write an object (at most 5 MiB); an object it replaces is backed up first.

        objects.get, then for an existing object objects.rewrite of exactly that
        generation to ``.reversi-backups/<tie>-<uuid>``, then a multipart upload with
        ``ifGenerationMatch`` on that generation, or ``0`` for a new object
        (https://cloud.google.com/storage/docs/json_api/v1/objects/insert,
        https://cloud.google.com/storage/docs/request-preconditions). Returns
        ``{"bucket", "key", "existed", "backup_key", "generation", "size"}``. Raises
        ``ToolError``: 412 ``precondition_failed`` when someone else changed the object
        after it was read (nothing is overwritten; a backup made before may remain), 404
        ``no_such_bucket``, ``too_large``, ``invalid_content``, 403
        ``forbidden``; ``EffectUncertainError`` when a write's answer was lost.
        """
        data = _decode(args.content, args.encoding)
        meta = await self._meta(ctx, args.bucket, args.key)
        saved = await self._backup(ctx, args.bucket, args.key, meta) if meta is not None else None
        content_type = args.content_type or (
            "text/plain; charset=utf-8" if args.encoding == "text" else "application/octet-stream"
        )
        try:
            resp = await self._upload(
                ctx,
                args.bucket,
                args.key,
                data,
                content_type,
                meta.generation if meta is not None else "0",
            )
        except ToolError as exc:
            if exc.status != 412:
                raise _bucket_missing(exc) from None
            raise _raced(args.bucket, args.key, meta, saved) from None
        made = self._meta_of(resp, wrote=True)
        if made.crc32c is None:
            raise self.malformed("to the upload has no crc32c", resp, wrote=True)
        return {
            "bucket": args.bucket,
            "key": args.key,
            "existed": meta is not None,
            "backup_key": saved,
            "generation": made.generation,
            "crc32c": made.crc32c,
            "md5": made.md5,
            "size": len(data),
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="gcp:storage:write",
        input=DeleteObjectArgs,
        output=DeleteObjectResult,
        compensation=_RESTORE,
        requires=_ON_A_KEY_THE_RUN_WROTE,
    )
    async def delete_object(self, args: DeleteObjectArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete an object after backing it up; a name that does not exist is left as it is.

        objects.get, objects.rewrite of exactly that generation to a backup, then
        objects.delete with ``ifGenerationMatch`` on it
        (https://cloud.google.com/storage/docs/json_api/v1/objects/delete). Returns
        ``{"bucket", "key", "existed", "deleted", "backup_key", "generation": null}``.
        Raises ``ToolError``: 412 ``precondition_failed`` when someone else changed it
        after it was read (it is not deleted), 404 ``not_found`` when someone else
        deleted it meanwhile, 404 ``no_such_bucket``, 403 ``forbidden``;
        ``EffectUncertainError`` when a write's answer was lost.
        """
        meta = await self._meta(ctx, args.bucket, args.key)
        if meta is None:
            missing = await self._missing(ctx, args.bucket, args.key)
            if missing.code == "no_such_bucket":
                raise missing
            return _deleted(args.bucket, args.key, existed=False, saved=None)
        saved = await self._backup(ctx, args.bucket, args.key, meta)
        try:
            await self.request(
                ctx,
                "DELETE",
                _object_path(args.bucket, args.key),
                params={"ifGenerationMatch": meta.generation},
            )
        except ToolError as exc:
            if exc.status == 412:
                raise _raced(args.bucket, args.key, meta, saved) from None
            if exc.status == 404:
                raise ToolError(
                    f"gcp: gs://{args.bucket}/{args.key} was deleted by someone else after it was read "
                    f"(HTTP 404 to the conditional delete); nothing was deleted by this call (a backup "
                    f"of it remains at {saved})",
                    status=404,
                    code="not_found",
                ) from None
            raise
        return _deleted(args.bucket, args.key, existed=True, saved=saved)

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="gcp:storage:write",
        input=RestoreObjectArgs,
        output=RestoreObjectResult,
    )
    async def restore_object(self, args: RestoreObjectArgs, ctx: CallContext) -> dict[str, Any]:
        """Put an object back as it was before put_object or delete_object, unless someone changed it since.

        Reads the object (objects.get) and compares it with what the undone call left:
        ``expected_generation`` (null: no object), or another generation holding exactly
        the content that call wrote (``expected_crc32c``, ``expected_md5``: a later step's
        undo rewrote it). The write that follows is conditional on the generation read. With a
        ``backup_key``, copies the backup back (objects.rewrite with ``ifGenerationMatch``
        on that generation, ``0`` where the call left nothing,
        https://cloud.google.com/storage/docs/json_api/v1/objects/rewrite); without one
        (the object did not exist), deletes it (objects.delete with ``ifGenerationMatch``,
        https://cloud.google.com/storage/docs/json_api/v1/objects/delete). An object that
        already holds the backup's content (same size, CRC32C and MD5), or is already
        gone, is left alone: running it again changes nothing. Neither a ``backup_key``
        nor an ``expected_generation`` means the call found no object and left none
        (delete_object of a missing name): it changed nothing, so nothing is done (action
        ``none``) whatever the name holds now, even with ``ctx.overwrite``: an object
        someone made there since is theirs. Returns ``{"bucket",
        "key", "action": "copied_back" | "deleted" | "none", "generation"}``. Raises
        ``ToolError`` with code ``changed_since`` (status 412 when Cloud Storage
        refused the conditional request) naming the generation now and the one expected;
        ``wrong_backup``, before any request, for a backup made from another object (a
        backup's name carries a digest of its object's: see ``_names.backup_name``);
        ``backup_missing`` when the backup is gone; 403 ``forbidden``;
        ``EffectUncertainError`` when a write's answer was lost. When a person allowed
        this step to overwrite a later change (``ctx.overwrite``, ``reversi rollback RUN
        --overwrite STEP``; docs/engine.md), the comparison is skipped: the backup is
        copied back, or the object deleted, whatever it holds now (still conditional on
        the generation read).

        As a tool of its own, an agent's call with ``gcp:storage:write`` can delete an
        object through it: with no ``backup_key`` and the object's current generation as
        ``expected_generation`` (or its checksums as ``expected_crc32c``/``expected_md5``),
        the object goes, with no backup. (delete_object, which the same permission
        allows, would back it up first.)
        """
        if args.backup_key is not None and not backup_of(args.backup_key, args.key):
            raise ToolError(
                f"gcp: {args.backup_key} is the backup of another object, not of "
                f"gs://{args.bucket}/{args.key}; nothing was restored (a backup is copied back "
                "only onto the object it was made from)",
                code="wrong_backup",
            )
        now = await self._meta(ctx, args.bucket, args.key)
        current = now.generation if now is not None else None
        if args.backup_key is None and args.expected_generation is None:
            # The call found no object and left none (delete_object of a missing name): it
            # changed nothing, so there is nothing to undo, whatever the name holds now.
            return _restored(args, "none", current)
        if args.backup_key is None:
            if now is None:
                return _restored(args, "none", None)
            if not ctx.overwrite and not _as_left(now, args):
                raise _changed(args, current)
            try:
                await self.request(
                    ctx,
                    "DELETE",
                    _object_path(args.bucket, args.key),
                    params={"ifGenerationMatch": now.generation},
                )
            except ToolError as exc:
                if exc.status == 404:
                    return _restored(args, "none", None)
                if exc.status == 412:
                    raise _changed(args, None, refused=True) from None
                raise
            return _restored(args, "deleted", None)
        backup = await self._meta(ctx, args.bucket, args.backup_key)
        if backup is None:
            raise ToolError(
                f"gcp: the backup {args.backup_key} of gs://{args.bucket}/{args.key} is gone; nothing "
                "was restored (HTTP 404)",
                status=404,
                code="backup_missing",
            )
        if now is not None and now.same_content(backup):
            return _restored(args, "none", current)
        if not ctx.overwrite and not _as_left(now, args):
            raise _changed(args, current)
        try:
            made = await self._rewrite(
                ctx,
                args.bucket,
                args.backup_key,
                args.key,
                generation=backup.generation,
                if_generation=current or "0",
            )
        except ToolError as exc:
            if exc.status != 412:
                raise
            raise _changed(args, None, refused=True) from None
        return _restored(args, "copied_back", made)


# -- small pieces ----------------------------------------------------------------------


def _as_left(now: _Meta | None, args: RestoreObjectArgs) -> bool:
    """True when the object is as the undone call left it: that generation, or (after a later
    step's undo rewrote it) another generation with the very content the call wrote."""
    if args.expected_generation is None:
        return now is None
    if now is None:
        return False
    return now.generation == args.expected_generation or now.holds(
        args.expected_crc32c, args.expected_md5
    )


def _boundary(data: bytes) -> str:
    """A multipart boundary that ``data`` does not contain, derived from it (the same bytes
    make the same request, as a recorded exchange is replayed)."""
    for attempt in range(1_000):
        digest = hashlib.sha256(attempt.to_bytes(2, "big") + data).hexdigest()[:32]
        boundary = f"reversi-{digest}"
        if boundary.encode() not in data:
            return boundary
    raise ToolError("gcp: no multipart boundary is absent from the content", code="invalid_content")


def _decode(content: str, encoding: str) -> bytes:
    if encoding == "text":
        data = content.encode("utf-8", "surrogatepass")
    else:
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise ToolError("gcp: content is not valid base64", code="invalid_content") from None
    if len(data) > MAX_OBJECT_BYTES:
        raise ToolError(
            f"gcp: the content is {len(data)} bytes; put_object writes at most {MAX_OBJECT_BYTES} (5 MiB)",
            code="too_large",
        )
    return data


def _bucket_missing(exc: ToolError) -> ToolError:
    """A 404 from a request on the bucket itself (a listing, an upload): the bucket is missing."""
    if exc.status == 404:
        return ToolError(str(exc), status=404, code="no_such_bucket")
    return exc


def _raced(bucket: str, name: str, meta: _Meta | None, saved: str | None) -> ToolError:
    read = (
        f"it no longer has generation {meta.generation}" if meta is not None else "it did not exist"
    )
    left = f"; the backup made before, {saved}, remains" if saved else ""
    return ToolError(
        f"gcp: gs://{bucket}/{name} was changed by someone else after it was read ({read}); Cloud "
        f"Storage refused the conditional write (HTTP 412) and nothing was overwritten{left}",
        status=412,
        code="precondition_failed",
    )


def _changed(args: RestoreObjectArgs, current: str | None, *, refused: bool = False) -> ToolError:
    left = (
        f"generation {args.expected_generation}"
        if args.expected_generation is not None
        else "no object"
    )
    if refused:
        now = "Cloud Storage refused the conditional restore (HTTP 412)"
    else:
        now = (
            f"it now holds generation {current}"
            if current is not None
            else "it now holds no object"
        )
    return ToolError(
        f"gcp: the object gs://{args.bucket}/{args.key} changed since the call being undone (that call "
        f"left {left}; {now}); it was not restored. The later change is kept: undo it and roll "
        "back again, or let the rollback overwrite it (reversi rollback RUN --overwrite STEP)",
        status=412 if refused else None,
        code="changed_since",
    )


def _deleted(bucket: str, name: str, *, existed: bool, saved: str | None) -> dict[str, Any]:
    return {
        "bucket": bucket,
        "key": name,
        "existed": existed,
        "deleted": existed,
        "backup_key": saved,
        "generation": None,
        "crc32c": None,
        "md5": None,
    }


def _restored(args: RestoreObjectArgs, action: str, generation: str | None) -> dict[str, Any]:
    return {"bucket": args.bucket, "key": args.key, "action": action, "generation": generation}
