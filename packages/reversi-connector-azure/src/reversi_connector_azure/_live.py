"""The azure connector's live scenario (``nox -s live -- azure``; docs/connectors/azure.md).

In the container named by ``REVERSI_LIVE_AZURE_CONTAINER`` (a throwaway one: the token
needs only the data actions of docs/connectors/azure.md on it), under
``reversi-live/<suffix>/``, through the real engine: write a new note, write it again
(the first version is backed up by Copy Blob From URL), write a binary blob whose name
holds a space, ``+``, ``%``, ``?``, ``#``, ``//`` and non-ASCII characters, then delete
it (backed up too). Check that the container holds the second version of the note,
that the odd blob is gone, and that a listing of the container's top level shows no
``.reversi-backups/``. Roll the run back; then check that neither blob exists and
nothing is listed under the scenario's prefix. What stays behind, as after any rollback
(docs/connectors/azure.md, "What a rollback leaves"): the backups under
``.reversi-backups/``, which the account's lifecycle management rule deletes.
"""

from __future__ import annotations

import base64
from typing import Any

from reversi_core.errors import ToolError
from reversi_core.testing import LiveContext, LiveVariable

from ._names import BACKUP_PREFIX

__all__ = [
    "LIVE_CONTAINER_VARIABLE",
    "LIVE_SUMMARY",
    "LIVE_VARIABLES",
    "LIVE_VOLATILE",
    "live_scenario",
]

LIVE_CONTAINER_VARIABLE = "REVERSI_LIVE_AZURE_CONTAINER"
"""The throwaway container the live scenario works in."""

LIVE_VOLATILE = (r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",)
"""The backups' uuid4 (``.reversi-backups/<uuid>``), new on every run."""

_BYTES = bytes(range(256))  # every byte value once: not UTF-8, survives only exact handling


async def _gone(live: LiveContext, container: str, blob: str) -> bool:
    """True when get_blob answers 404 ``not_found`` for ``blob``."""
    try:
        await live.call("azure.get_blob", {"container": container, "blob": blob})
    except ToolError as exc:
        return exc.code == "not_found"
    return False


async def live_scenario(live: LiveContext) -> None:
    """A new blob, its overwrite, an odd blob written and deleted, then their rollback (module docstring)."""
    container = live.env[LIVE_CONTAINER_VARIABLE]
    prefix = f"reversi-live/{live.suffix}/"
    note = f"{prefix}note.txt"
    odd = f"{prefix}odd name +%?#//ünï.bin"
    at: dict[str, Any] = {"container": container}

    run = live.start_run()
    _, first = await run.call("azure.put_blob", {**at, "blob": note, "content": "first version\n"})
    live.check(first["existed"] is False and first["backup_blob"] is None, "a new blob to need no backup")
    _, second = await run.call("azure.put_blob", {**at, "blob": note, "content": "second version\n"})
    live.check(
        second["existed"] is True and str(second["backup_blob"]).startswith(BACKUP_PREFIX),
        "the overwrite to back up the first version",
    )
    payload = base64.b64encode(_BYTES).decode("ascii")
    await run.call(
        "azure.put_blob",
        {**at, "blob": odd, "content": payload, "encoding": "base64", "content_type": "application/octet-stream"},
    )
    read = await live.call("azure.get_blob", {**at, "blob": odd, "encoding": "base64"})
    live.check(read["content"] == payload, "the odd blob to hold exactly the bytes written")
    _, deleted = await run.call("azure.delete_blob", {**at, "blob": odd})
    live.check(deleted["deleted"] is True and deleted["backup_blob"], "the delete to back the blob up")

    seen = await live.call("azure.get_blob", {**at, "blob": note})
    live.check(seen["content"] == "second version\n", "the note to hold its second version")
    live.check(await _gone(live, container, odd), "the odd blob to be deleted")
    top = await live.call("azure.list_blobs", {**at, "delimiter": "/"})
    live.check(BACKUP_PREFIX not in top["common_prefixes"], "the backups to be hidden from listings")
    live.check("reversi-live/" in top["common_prefixes"], "the scenario's prefix to be listed")

    await live.rollback(run)

    live.check(await _gone(live, container, note), "the note to be gone after the rollback")
    live.check(await _gone(live, container, odd), "the odd blob to be gone after the rollback")
    left = await live.call("azure.list_blobs", {**at, "prefix": prefix})
    live.check(left["blobs"] == [], f"nothing to be left under {prefix}")


LIVE_SUMMARY = (
    "Writes a new blob in a throwaway container, overwrites it, writes and deletes a binary blob "
    "whose name has every awkward character, rolls the run back, and checks that both blobs "
    "are gone and that listings never show the backups."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(
        LIVE_CONTAINER_VARIABLE,
        "a throwaway container the token may read, write and delete blobs in",
    ),
    # the connector's own setting that shapes the requests (an endpoint's path, such as
    # Azurite's /devstoreaccount1): declared here as well, so that a recording keeps it and
    # its replay sends the paths the recording did
    LiveVariable(
        "AZURE_STORAGE_BLOB_ENDPOINT",
        "another Blob service endpoint, when the scenario runs against one (unset for Azure)",
        optional=True,
    ),
)
"""The variables the scenario reads besides the connector's own."""
