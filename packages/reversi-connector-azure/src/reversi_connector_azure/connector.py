"""The ``azure`` connector: block blobs in Azure Blob Storage, every overwrite and delete undoable.

Five tools, the shape of the ``aws`` connector's: ``azure.get_blob`` and
``azure.list_blobs`` read; ``azure.put_blob`` and ``azure.delete_blob`` change a blob and
are undone by ``azure.restore_blob``.

ETags make every step exact
(https://learn.microsoft.com/en-us/rest/api/storageservices/specifying-conditional-headers-for-blob-service-operations):
the connector reads the blob's ETag (Get Blob Properties), copies exactly that version to
``.reversi-backups/<tie>-<uuid>`` with Copy Blob From URL (``x-ms-requires-sync: true``,
``x-ms-source-if-match``, target ``If-None-Match: *``), then writes (Put Blob, a block
blob) with ``If-Match`` on that ETag, or ``If-None-Match: *`` for a new blob, or deletes
with ``If-Match``. A writer who slipped in between gets the call refused (412, or 409
``BlobAlreadyExists``): nothing is overwritten. The result carries the ETag and
Content-MD5 the call produced; ``restore_blob`` compares the blob with them first and
writes back only conditionally on the ETag it read, so a later change by someone else is
never restored over, unless a person let that step overwrite it (``CallContext.overwrite``:
``reversi rollback RUN --overwrite STEP``, docs/engine.md).

Requests go to ``https://ACCOUNT.blob.core.windows.net`` (``AZURE_STORAGE_BLOB_ENDPOINT``
for another endpoint, Azurite's ``https://127.0.0.1:10000/devstoreaccount1``), HTTPS only,
with ``Authorization: Bearer <AZURE_STORAGE_TOKEN>`` (a Microsoft Entra token for
``https://storage.azure.com/``) and ``x-ms-version: 2023-11-03``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import email.utils
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx

from reversi_core.connector import CallContext, tool
from reversi_core.errors import ToolError
from reversi_core.http import BaseUrl, Bearer, HttpConnector, HttpResponse, Setting
from reversi_core.manifest import Compensation, Effect, Match, Requirement

from ._args import (
    MAX_BLOB_BYTES,
    DeleteBlobArgs,
    GetBlobArgs,
    ListBlobsArgs,
    PutBlobArgs,
    RestoreBlobArgs,
)
from ._errors import ERRORS, parse_xml
from ._names import BACKUP_PREFIX, backup_name, backup_of, blob_path, check_account
from ._results import (
    DeleteBlobResult,
    GetBlobResult,
    ListBlobsResult,
    PutBlobResult,
    RestoreBlobResult,
)

__all__ = ["API_VERSION", "MAX_BLOB_BYTES", "MAX_COPY_BYTES", "AzureConnector"]

API_VERSION = "2023-11-03"
"""The Blob service version sent in ``x-ms-version`` with every request."""

MAX_COPY_BYTES = 256 * 1024 * 1024
"""Copy Blob From URL copies at most 256 MiB synchronously; a larger blob cannot be backed up
(https://learn.microsoft.com/en-us/rest/api/storageservices/copy-blob-from-url)."""

_REST = "https://learn.microsoft.com/en-us/rest/api/storageservices"


def _check_endpoint(value: str) -> str:
    url = httpx.URL(value.strip())
    if url.scheme != "https":
        raise ValueError("the endpoint must be https://: a bearer token travels over HTTPS only")
    return value.strip()


class _BlobEndpoint(BaseUrl):
    """``https://ACCOUNT.blob.core.windows.net``, unless an endpoint is given."""

    def resolve(self, values: Mapping[str, str | None]) -> str | None:
        given = values.get(self.option)
        if given:
            return given.strip().rstrip("/")
        return f"https://{values['account']}.blob.core.windows.net"


@dataclasses.dataclass(frozen=True)
class _Props:
    """What Get Blob Properties says about a blob."""

    etag: str
    size: int
    blob_type: str | None
    content_type: str | None
    content_md5: str | None
    last_modified: str | None


@dataclasses.dataclass(frozen=True)
class _Page:
    """One List Blobs page: blobs (backups left out), BlobPrefix names, the next marker."""

    blobs: list[dict[str, Any]]
    prefixes: list[str]
    marker: str | None


_MAX_PROBE_PAGES = 10
"""Pages read under a prefix to learn whether it holds more than backups, before the prefix
is listed anyway (each page holds at most two entries, the backups being one)."""


def _on_written_blob(tool_name: str) -> Requirement:
    return Requirement(
        tool=tool_name,
        match=[
            Match(this="args.container", earlier="args.container"),
            Match(this="args.blob", earlier="args.blob"),
        ],
    )


_ON_A_BLOB_THE_RUN_WROTE = [
    _on_written_blob("azure.put_blob"),
    _on_written_blob("azure.delete_blob"),
]
"""A write or delete of a blob an earlier put_blob or delete_blob of the run changed."""

_RESTORE = Compensation(
    tool="azure.restore_blob",
    argument_map={
        "container": "args.container",
        "blob": "args.blob",
        "backup_blob": "result.backup_blob",
        "expected_etag": "result.etag",
        "expected_md5": "result.content_md5",
    },
    # one blob of the connector's account: the container and the name as given
    resources=["azure:{args.container}/{args.blob}"],
)


def _text(element: ET.Element, name: str) -> str | None:
    child = element.find(name)
    if child is None:
        return None
    text = child.text or ""
    if child.get("Encoded") == "true":
        text = urllib.parse.unquote(text)
    return text


class AzureConnector(HttpConnector):
    """Block blobs in Azure Blob Storage (see the module docstring).

    ``token`` (``AZURE_STORAGE_TOKEN``) is a Microsoft Entra access token whose audience
    is ``https://storage.azure.com/``; ``account`` (``AZURE_STORAGE_ACCOUNT``) the storage
    account; ``endpoint`` (``AZURE_STORAGE_BLOB_ENDPOINT``) another HTTPS endpoint, with
    the account in its path where the emulator wants it. Plus the kit's ``timeouts``,
    ``transport`` and ``verify``. Raises :class:`~reversi_core.errors.ConfigurationError`
    for a missing or malformed setting, or an endpoint that is not HTTPS.
    """

    name = "azure"
    settings = (
        Setting(
            "AZURE_STORAGE_TOKEN",
            "token",
            "a Microsoft Entra access token for https://storage.azure.com/",
            secret=True,
        ),
        Setting(
            "AZURE_STORAGE_ACCOUNT", "account", "the storage account's name", check=check_account
        ),
        Setting(
            "AZURE_STORAGE_BLOB_ENDPOINT",
            "endpoint",
            "another Blob service endpoint, such as Azurite's https://127.0.0.1:10000/devstoreaccount1",
            required=False,
            check=_check_endpoint,
        ),
    )
    base = _BlobEndpoint(None, option="endpoint")
    auth = Bearer("token")
    headers: ClassVar[Mapping[str, str]] = {"x-ms-version": API_VERSION}
    errors = ERRORS

    async def _send(
        self,
        ctx: CallContext,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        ok_statuses: tuple[int, ...] = (),
    ) -> HttpResponse:
        """One request with ``x-ms-date``, which every authorized request carries."""
        return await self.request(
            ctx,
            method,
            path,
            params=params,
            content=content,
            headers={"x-ms-date": email.utils.formatdate(usegmt=True), **(headers or {})},
            ok_statuses=ok_statuses,
        )

    # -- helpers ---------------------------------------------------------------------

    async def _props(self, ctx: CallContext, container: str, blob: str) -> _Props | None:
        """Get Blob Properties (https://learn.microsoft.com/en-us/rest/api/storageservices/get-blob-properties);
        None on 404 ``BlobNotFound``; a missing container is an error."""
        try:
            resp = await self._send(ctx, "HEAD", blob_path(container, blob))
        except ToolError as exc:
            if exc.status == 404 and exc.code == "not_found":
                return None
            raise
        etag = resp.headers.get("etag")
        size = resp.headers.get("content-length", "")
        if not etag or not size.isdigit():
            raise self.malformed("has no ETag or Content-Length", resp, wrote=False)
        return _Props(
            etag,
            int(size),
            resp.headers.get("x-ms-blob-type"),
            resp.headers.get("content-type"),
            resp.headers.get("content-md5"),
            resp.headers.get("last-modified"),
        )

    async def _list(self, ctx: CallContext, container: str, params: dict[str, Any]) -> _Page:
        """One List Blobs page, backups left out of its blobs (not of its prefixes)."""
        resp = await self._send(ctx, "GET", f"/{container}", params=params)
        root = parse_xml(resp.content)
        if root is None or root.tag != "EnumerationResults":
            raise self.malformed("is not an EnumerationResults", resp, wrote=False)
        page = _Page([], [], _text(root, "NextMarker") or None)
        for entry in root.find("Blobs") or []:
            name = _text(entry, "Name") or ""
            if entry.tag == "BlobPrefix":
                page.prefixes.append(name)
                continue
            if name.startswith(BACKUP_PREFIX):
                continue
            props = entry.find("Properties")
            size = (_text(props, "Content-Length") if props is not None else None) or "0"
            page.blobs.append(
                {
                    "blob": name,
                    "size": int(size) if size.isdigit() else 0,
                    "etag": _text(props, "Etag") if props is not None else None,
                    "last_modified": _text(props, "Last-Modified") if props is not None else None,
                }
            )
        return page

    async def _only_backups_under(self, ctx: CallContext, container: str, prefix: str) -> bool:
        """True when ``prefix``, a listing's BlobPrefix, holds nothing but backups.

        A prefix inside ``.reversi-backups/`` does. One that ``.reversi-backups/`` starts
        with (``.reversi-`` for the delimiter ``-``, ``.r`` for ``r``) may hold other blobs
        too: a List Blobs under it with the delimiter ``/`` rolls every backup up into the
        one BlobPrefix ``.reversi-backups/``, so any other entry is another blob.
        """
        if prefix.startswith(BACKUP_PREFIX):
            return True
        if not prefix or not BACKUP_PREFIX.startswith(prefix):
            return False
        params: dict[str, Any] = {
            "restype": "container",
            "comp": "list",
            "maxresults": 2,
            "prefix": prefix,
            "delimiter": "/",
        }
        for _ in range(_MAX_PROBE_PAGES):
            page = await self._list(ctx, container, params)
            if page.blobs or any(found != BACKUP_PREFIX for found in page.prefixes):
                return False
            if page.marker is None:
                return True
            params["marker"] = page.marker
        return False

    def _block_blob(self, container: str, blob: str, props: _Props) -> None:
        if props.blob_type not in (None, "BlockBlob"):
            raise ToolError(
                f"azure: {container}/{blob} is a {props.blob_type}; the connector writes and backs up "
                "block blobs only",
                code="not_block_blob",
            )

    async def _copy(
        self,
        ctx: CallContext,
        container: str,
        source: str,
        target: str,
        *,
        source_etag: str,
        conditions: Mapping[str, str],
    ) -> str:
        """Copy Blob From URL, synchronously, of ``source`` only if it still has ``source_etag``.

        https://learn.microsoft.com/en-us/rest/api/storageservices/copy-blob-from-url: the
        source is authorized with the same bearer token (``x-ms-copy-source-authorization``),
        ``conditions`` are the target's. Returns the copy's ETag.
        """
        headers = {
            "x-ms-copy-source": self.base_url + blob_path(container, source),
            "x-ms-copy-source-authorization": f"Bearer {self._values['token']}",
            "x-ms-requires-sync": "true",
            "x-ms-source-if-match": source_etag,
            **conditions,
        }
        resp = await self._send(ctx, "PUT", blob_path(container, target), headers=headers)
        status = resp.headers.get("x-ms-copy-status")
        etag = resp.headers.get("etag")
        if status != "success" or not etag:
            raise self.malformed(
                f"to a synchronous copy says x-ms-copy-status {status!r}", resp, wrote=True
            )
        return etag

    async def _backup(self, ctx: CallContext, container: str, blob: str, props: _Props) -> str:
        """Copy exactly the version ``props`` read to a fresh backup name; return that name."""
        if props.size > MAX_COPY_BYTES:
            raise ToolError(
                f"azure: {container}/{blob} is {props.size} bytes; Copy Blob From URL copies at most "
                f"{MAX_COPY_BYTES} bytes (256 MiB), so it cannot be backed up and is left alone",
                code="too_large",
            )
        saved = backup_name(blob)
        try:
            await self._copy(
                ctx,
                container,
                blob,
                saved,
                source_etag=props.etag,
                conditions={"If-None-Match": "*"},
            )
        except ToolError as exc:
            if exc.status not in (404, 412):
                raise
            raise ToolError(
                f"azure: {container}/{blob} changed after it was read (it no longer has ETag {props.etag}: "
                f"HTTP {exc.status} to the backup copy); nothing was backed up or written",
                status=exc.status,
                code="precondition_failed",
            ) from None
        return saved

    # -- the tools ---------------------------------------------------------------------

    @tool(
        effect=Effect.READ_ONLY,
        permission="azure:blob:read",
        input=GetBlobArgs,
        output=GetBlobResult,
    )
    async def get_blob(self, args: GetBlobArgs, ctx: CallContext) -> dict[str, Any]:
        """Read one blob (at most 5 MiB), as text or base64.

        Get Blob Properties for its size and ETag, then Get Blob with ``If-Match`` on that
        ETag (https://learn.microsoft.com/en-us/rest/api/storageservices/get-blob).
        Returns ``{"container", "blob", "content", "encoding", "size", "etag",
        "content_type", "last_modified"}``. Raises ``ToolError``: 404 ``not_found`` or
        ``no_such_container``; ``too_large``; ``not_text``; 412 ``precondition_failed``
        when it changed between the two requests; 403 ``forbidden``.
        """
        props = await self._props(ctx, args.container, args.blob)
        if props is None:
            raise ToolError(
                f"azure: HEAD {args.container}/{args.blob}: HTTP 404: no such blob",
                status=404,
                code="not_found",
            )
        if props.size > MAX_BLOB_BYTES:
            raise ToolError(
                f"azure: {args.container}/{args.blob} is {props.size} bytes; get_blob reads at most "
                f"{MAX_BLOB_BYTES} (5 MiB)",
                code="too_large",
            )
        resp = await self._send(
            ctx, "GET", blob_path(args.container, args.blob), headers={"If-Match": props.etag}
        )
        data = resp.content
        if args.encoding == "text":
            try:
                content = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ToolError(
                    f"azure: {args.container}/{args.blob} is not UTF-8 text; read it with encoding base64",
                    code="not_text",
                ) from None
        else:
            content = base64.b64encode(data).decode("ascii")
        return {
            "container": args.container,
            "blob": args.blob,
            "content": content,
            "encoding": args.encoding,
            "size": len(data),
            "etag": resp.headers.get("etag") or props.etag,
            "content_type": props.content_type,
            "last_modified": props.last_modified,
        }

    @tool(
        effect=Effect.READ_ONLY,
        permission="azure:blob:read",
        input=ListBlobsArgs,
        output=ListBlobsResult,
    )
    async def list_blobs(self, args: ListBlobsArgs, ctx: CallContext) -> dict[str, Any]:
        """List a container's blobs, a page at a time; backups are never listed.

        List Blobs (https://learn.microsoft.com/en-us/rest/api/storageservices/list-blobs)
        with ``prefix``, ``delimiter``, ``maxresults`` and ``marker``. Returns
        ``{"container", "prefix", "blobs": [{"blob", "size", "etag", "last_modified"}],
        "common_prefixes", "truncated", "next_marker"}``; names under ``.reversi-backups/``
        are left out, and so is a prefix that holds nothing but backups: one inside
        ``.reversi-backups/``, or one that name starts with (``.reversi-`` for the
        delimiter ``-``) once a second, small List Blobs under it finds no other blob.
        Raises ``ToolError``: 404 ``no_such_container``, 403 ``forbidden``.
        """
        params: dict[str, Any] = {
            "restype": "container",
            "comp": "list",
            "maxresults": args.max_results,
        }
        if args.prefix:
            params["prefix"] = args.prefix
        if args.delimiter is not None:
            params["delimiter"] = args.delimiter
        if args.marker is not None:
            params["marker"] = args.marker
        page = await self._list(ctx, args.container, params)
        prefixes = [
            prefix
            for prefix in page.prefixes
            if not await self._only_backups_under(ctx, args.container, prefix)
        ]
        return {
            "container": args.container,
            "prefix": args.prefix,
            "blobs": page.blobs,
            "common_prefixes": prefixes,
            "truncated": page.marker is not None,
            "next_marker": page.marker,
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="azure:blob:write",
        input=PutBlobArgs,
        output=PutBlobResult,
        compensation=_RESTORE,
        requires=_ON_A_BLOB_THE_RUN_WROTE,
    )
    async def put_blob(self, args: PutBlobArgs, ctx: CallContext) -> dict[str, Any]:
        """Write a block blob (at most 5 MiB); a blob it replaces is backed up first.

        Get Blob Properties; for an existing blob Copy Blob From URL of exactly that version
        to ``.reversi-backups/<tie>-<uuid>``; then Put Blob with ``If-Match`` on that version or
        ``If-None-Match: *`` for a new blob
        (https://learn.microsoft.com/en-us/rest/api/storageservices/put-blob). Returns
        ``{"container", "blob", "existed", "backup_blob", "etag", "content_md5", "size"}``.
        Raises ``ToolError``: 412 ``precondition_failed`` (or 409 ``already_exists`` for a
        new blob) when someone else changed it after it was read: nothing is
        overwritten, a backup made before may remain; ``not_block_blob``; 404
        ``no_such_container``; ``too_large`` (over 5 MiB to write, over 256 MiB to back
        up); ``invalid_content``; 403 ``forbidden``; ``EffectUncertainError`` when a
        write's answer was lost.
        """
        data = _decode(args.content, args.encoding)
        props = await self._props(ctx, args.container, args.blob)
        saved = None
        if props is not None:
            self._block_blob(args.container, args.blob, props)
            saved = await self._backup(ctx, args.container, args.blob, props)
            condition = {"If-Match": props.etag}
        else:
            condition = {"If-None-Match": "*"}
        content_type = args.content_type or (
            "text/plain; charset=utf-8" if args.encoding == "text" else "application/octet-stream"
        )
        try:
            resp = await self._send(
                ctx,
                "PUT",
                blob_path(args.container, args.blob),
                content=data,
                headers={
                    "x-ms-blob-type": "BlockBlob",
                    "x-ms-blob-content-type": content_type,
                    **condition,
                },
            )
        except ToolError as exc:
            if exc.status == 412 or exc.code == "already_exists":
                raise _raced(args.container, args.blob, props, saved, exc.status) from None
            raise
        etag = resp.headers.get("etag")
        md5 = resp.headers.get("content-md5")
        if not etag or not md5:
            raise self.malformed("to Put Blob has no ETag or Content-MD5", resp, wrote=True)
        return {
            "container": args.container,
            "blob": args.blob,
            "existed": props is not None,
            "backup_blob": saved,
            "etag": etag,
            "content_md5": md5,
            "size": len(data),
        }

    @tool(
        effect=Effect.REVERSIBLE,
        permission="azure:blob:write",
        input=DeleteBlobArgs,
        output=DeleteBlobResult,
        compensation=_RESTORE,
        requires=_ON_A_BLOB_THE_RUN_WROTE,
    )
    async def delete_blob(self, args: DeleteBlobArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a block blob after backing it up; a name that does not exist is left as it is.

        Get Blob Properties, Copy Blob From URL of exactly that version to a backup, then
        Delete Blob with ``If-Match`` on it
        (https://learn.microsoft.com/en-us/rest/api/storageservices/delete-blob). Returns
        ``{"container", "blob", "existed", "deleted", "backup_blob", "etag": null,
        "content_md5": null}``. Raises ``ToolError``: 412 ``precondition_failed`` when
        someone else changed (or deleted) it after it was read; 404 ``not_found`` when
        someone else deleted it meanwhile; ``not_block_blob``; 404
        ``no_such_container``; ``too_large`` over 256 MiB; 409 ``SnapshotsPresent`` for a
        blob with snapshots; 403 ``forbidden``; ``EffectUncertainError`` when a write's
        answer was lost.
        """
        props = await self._props(ctx, args.container, args.blob)
        if props is None:
            return _deleted(args, existed=False, saved=None)
        self._block_blob(args.container, args.blob, props)
        saved = await self._backup(ctx, args.container, args.blob, props)
        try:
            await self._send(
                ctx,
                "DELETE",
                blob_path(args.container, args.blob),
                headers={"If-Match": props.etag},
            )
        except ToolError as exc:
            if exc.status == 412:
                raise _raced(args.container, args.blob, props, saved, 412) from None
            if exc.status == 404:
                raise ToolError(
                    f"azure: {args.container}/{args.blob} was deleted by someone else after it was read "
                    f"(HTTP 404 to the conditional delete); nothing was deleted by this call (a backup of "
                    f"it remains at {saved})",
                    status=404,
                    code="not_found",
                ) from None
            raise
        return _deleted(args, existed=True, saved=saved)

    @tool(
        effect=Effect.IDEMPOTENT,
        permission="azure:blob:write",
        input=RestoreBlobArgs,
        output=RestoreBlobResult,
    )
    async def restore_blob(self, args: RestoreBlobArgs, ctx: CallContext) -> dict[str, Any]:
        """Put a blob back as it was before put_blob or delete_blob, unless someone changed it since.

        Reads the blob (Get Blob Properties) and compares it with what the undone call left:
        ``expected_etag`` (null: no blob), or another ETag with the very content that call
        wrote (``expected_md5``: a later step's undo rewrote it). With a ``backup_blob``,
        copies the backup back (Copy Blob From URL, target ``If-Match`` on the ETag just
        read, ``If-None-Match: *`` where the call left nothing,
        https://learn.microsoft.com/en-us/rest/api/storageservices/copy-blob-from-url);
        without one (the blob did not exist), deletes it (Delete Blob with ``If-Match``,
        https://learn.microsoft.com/en-us/rest/api/storageservices/delete-blob). A blob
        that already holds the backup's content (same size and Content-MD5), or is
        already gone, is left alone: running it again changes nothing. Neither a
        ``backup_blob`` nor an ``expected_etag`` means the call found no blob and left none
        (delete_blob of a missing name): it changed nothing, so nothing is done (action
        ``none``) whatever the name holds now, even with ``ctx.overwrite``: a blob someone
        made there since is theirs. Returns
        ``{"container", "blob", "action": "copied_back" | "deleted" | "none", "etag"}``.
        Raises ``ToolError`` with code ``changed_since`` (status 412 or 409 when the
        service refused the conditional request) naming what changed;
        ``wrong_backup``, before any request, for a backup made from another blob (a
        backup's name carries a digest of its blob's: see ``_names.backup_name``);
        ``backup_missing``; 403 ``forbidden``; ``EffectUncertainError`` when a write's
        answer was lost. When a person allowed this step to overwrite a later change
        (``ctx.overwrite``, ``reversi rollback RUN --overwrite STEP``; docs/engine.md),
        the comparison is skipped: the backup is copied back, or the blob deleted,
        whatever it holds now (still conditional on the ETag read).

        As a tool of its own, an agent's call with ``azure:blob:write`` can delete a blob
        through it: with no ``backup_blob`` and the blob's current ETag as
        ``expected_etag`` (or its Content-MD5 as ``expected_md5``), the blob goes, with no
        backup. (delete_blob, which the same permission allows, would back it up first.)
        """
        if args.backup_blob is not None and not backup_of(args.backup_blob, args.blob):
            raise ToolError(
                f"azure: {args.backup_blob} is the backup of another blob, not of "
                f"{args.container}/{args.blob}; nothing was restored (a backup is copied back "
                "only onto the blob it was made from)",
                code="wrong_backup",
            )
        now = await self._props(ctx, args.container, args.blob)
        if args.backup_blob is None and args.expected_etag is None:
            # The call found no blob and left none (delete_blob of a missing name): it changed
            # nothing, so there is nothing to undo, whatever the name holds now.
            return _restored(args, "none", now.etag if now is not None else None)
        if args.backup_blob is None:
            if now is None:
                return _restored(args, "none", None)
            if not ctx.overwrite and not _as_left(now, args):
                raise _changed(args, now)
            try:
                await self._send(
                    ctx,
                    "DELETE",
                    blob_path(args.container, args.blob),
                    headers={"If-Match": now.etag},
                )
            except ToolError as exc:
                if exc.status == 404:
                    return _restored(args, "none", None)
                if exc.status == 412:
                    raise _changed(args, None, refused=412) from None
                raise
            return _restored(args, "deleted", None)
        backup = await self._props(ctx, args.container, args.backup_blob)
        if backup is None:
            raise ToolError(
                f"azure: the backup {args.backup_blob} of {args.container}/{args.blob} is gone; nothing was "
                "restored (HTTP 404)",
                status=404,
                code="backup_missing",
            )
        if (
            now is not None
            and backup.content_md5 is not None
            and (now.content_md5, now.size) == (backup.content_md5, backup.size)
        ):
            return _restored(args, "none", now.etag)
        if not ctx.overwrite and not _as_left(now, args):
            raise _changed(args, now)
        condition = {"If-Match": now.etag} if now is not None else {"If-None-Match": "*"}
        try:
            etag = await self._copy(
                ctx,
                args.container,
                args.backup_blob,
                args.blob,
                source_etag=backup.etag,
                conditions=condition,
            )
        except ToolError as exc:
            if exc.status == 412 or exc.code == "already_exists":
                raise _changed(args, None, refused=exc.status) from None
            raise
        return _restored(args, "copied_back", etag)


# -- small pieces ----------------------------------------------------------------------


def _as_left(now: _Props | None, args: RestoreBlobArgs) -> bool:
    """True when the blob is as the undone call left it: that ETag, or (after a later step's
    undo rewrote it) another ETag with the very content the call wrote."""
    if args.expected_etag is None:
        return now is None
    if now is None:
        return False
    return now.etag == args.expected_etag or (
        args.expected_md5 is not None and now.content_md5 == args.expected_md5
    )


def _decode(content: str, encoding: str) -> bytes:
    if encoding == "text":
        data = content.encode("utf-8", "surrogatepass")
    else:
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise ToolError("azure: content is not valid base64", code="invalid_content") from None
    if len(data) > MAX_BLOB_BYTES:
        raise ToolError(
            f"azure: the content is {len(data)} bytes; put_blob writes at most {MAX_BLOB_BYTES} (5 MiB)",
            code="too_large",
        )
    return data


def _raced(
    container: str, blob: str, props: _Props | None, saved: str | None, status: int | None
) -> ToolError:
    read = f"it no longer has ETag {props.etag}" if props is not None else "it did not exist"
    left = f"; the backup made before, {saved}, remains" if saved else ""
    return ToolError(
        f"azure: {container}/{blob} was changed by someone else after it was read ({read}); Blob Storage "
        f"refused the conditional write (HTTP {status}) and nothing was overwritten{left}",
        status=status,
        code="precondition_failed",
    )


def _changed(args: RestoreBlobArgs, now: _Props | None, *, refused: int | None = None) -> ToolError:
    left = f"ETag {args.expected_etag}" if args.expected_etag is not None else "no blob"
    if refused is not None:
        said = f"Blob Storage refused the conditional restore (HTTP {refused})"
    else:
        said = f"it now holds ETag {now.etag}" if now is not None else "it now holds no blob"
    return ToolError(
        f"azure: the blob {args.container}/{args.blob} changed since the call being undone (that call left "
        f"{left}; {said}); it was not restored. The later change is kept: undo it and roll back again, "
        "or let the rollback overwrite it (reversi rollback RUN --overwrite STEP)",
        status=refused,
        code="changed_since",
    )


def _deleted(args: DeleteBlobArgs, *, existed: bool, saved: str | None) -> dict[str, Any]:
    return {
        "container": args.container,
        "blob": args.blob,
        "existed": existed,
        "deleted": existed,
        "backup_blob": saved,
        "etag": None,
        "content_md5": None,
    }


def _restored(args: RestoreBlobArgs, action: str, etag: str | None) -> dict[str, Any]:
    return {"container": args.container, "blob": args.blob, "action": action, "etag": etag}
