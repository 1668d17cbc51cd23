"""The aws connector's live scenario (``nox -s live -- aws``; docs/connectors/aws.md).

In the bucket named by ``REVERSI_LIVE_AWS_BUCKET`` (a throwaway one: the key needs only
the actions of docs/connectors/aws.md on it), under ``reversi-live/<suffix>/``, through
the real engine: write a new note, write it again (the first version is backed up),
write a binary object under a key with a space, ``+``, ``%``, ``?``, ``#``, a ``.``
segment and non-ASCII characters, then delete it (backed up too). Check that S3 holds
the second version of the note, that the odd key is gone, and that a listing of the
bucket's top level shows no ``.reversi-backups/``. Roll the run back; then check that
neither key exists and nothing is listed under the scenario's prefix. What stays behind,
as after any rollback (docs/connectors/aws.md, "What a rollback leaves"): the backups
under ``.reversi-backups/``, which the bucket's lifecycle rule expires.
"""

from __future__ import annotations

import base64
from typing import Any

from reversi_core.errors import ToolError
from reversi_core.testing import LiveContext, LiveVariable

from ._keys import BACKUP_PREFIX

__all__ = [
    "LIVE_BUCKET_VARIABLE",
    "LIVE_SUMMARY",
    "LIVE_VARIABLES",
    "LIVE_VOLATILE",
    "live_scenario",
]

LIVE_BUCKET_VARIABLE = "REVERSI_LIVE_AWS_BUCKET"
"""The throwaway bucket the live scenario works in."""

LIVE_VOLATILE = (r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",)
"""The backups' uuid4 (``.reversi-backups/<uuid>``), new on every run."""

_BYTES = bytes(range(256))  # every byte value once: not UTF-8, survives only exact handling


async def _gone(live: LiveContext, bucket: str, key: str) -> bool:
    """True when get_object answers 404 ``not_found`` for ``key``."""
    try:
        await live.call("aws.get_object", {"bucket": bucket, "key": key})
    except ToolError as exc:
        return exc.code == "not_found"
    return False


async def live_scenario(live: LiveContext) -> None:
    """A new key, its overwrite, an odd key written and deleted, then their rollback (module docstring)."""
    bucket = live.env[LIVE_BUCKET_VARIABLE]
    prefix = f"reversi-live/{live.suffix}/"
    note = f"{prefix}note.txt"
    odd = f"{prefix}odd name +%?#/./ünï.bin"
    at: dict[str, Any] = {"bucket": bucket}

    run = live.start_run()
    _, first = await run.call("aws.put_object", {**at, "key": note, "content": "first version\n"})
    live.check(first["existed"] is False and first["backup_key"] is None, "a new key to need no backup")
    _, second = await run.call("aws.put_object", {**at, "key": note, "content": "second version\n"})
    live.check(
        second["existed"] is True and str(second["backup_key"]).startswith(BACKUP_PREFIX),
        "the overwrite to back up the first version",
    )
    payload = base64.b64encode(_BYTES).decode("ascii")
    await run.call(
        "aws.put_object",
        {**at, "key": odd, "content": payload, "encoding": "base64", "content_type": "application/octet-stream"},
    )
    read = await live.call("aws.get_object", {**at, "key": odd, "encoding": "base64"})
    live.check(read["content"] == payload, "the odd key to hold exactly the bytes written")
    _, deleted = await run.call("aws.delete_object", {**at, "key": odd})
    live.check(deleted["deleted"] is True and deleted["backup_key"], "the delete to back the object up")

    seen = await live.call("aws.get_object", {**at, "key": note})
    live.check(seen["content"] == "second version\n", "the note to hold its second version")
    live.check(await _gone(live, bucket, odd), "the odd key to be deleted")
    top = await live.call("aws.list_objects", {**at, "delimiter": "/"})
    live.check(BACKUP_PREFIX not in top["common_prefixes"], "the backups to be hidden from listings")
    live.check("reversi-live/" in top["common_prefixes"], "the scenario's prefix to be listed")

    await live.rollback(run)

    live.check(await _gone(live, bucket, note), "the note to be gone after the rollback")
    live.check(await _gone(live, bucket, odd), "the odd key to be gone after the rollback")
    left = await live.call("aws.list_objects", {**at, "prefix": prefix})
    live.check(left["objects"] == [], f"nothing to be left under {prefix}")


LIVE_SUMMARY = (
    "Writes a new key in a throwaway bucket, overwrites it, writes and deletes a binary object "
    "under a key with every awkward character, rolls the run back, and checks that both keys "
    "are gone and that listings never show the backups."
)
"""What the scenario does, in a sentence (its LiveScenario's summary)."""

LIVE_VARIABLES = (
    LiveVariable(
        LIVE_BUCKET_VARIABLE,
        "a throwaway bucket the access key may read, write and delete objects in",
    ),
    # the connector's own settings that shape the requests: declared here as well, so that a
    # recording keeps them and its replay addresses the bucket as the recording did
    LiveVariable(
        "AWS_ENDPOINT_URL_S3",
        "an S3-compatible endpoint, when the scenario runs against one (unset for AWS)",
        optional=True,
    ),
    LiveVariable(
        "AWS_S3_ADDRESSING_STYLE", "auto, virtual or path", default="auto"
    ),
)
"""The variables the scenario reads besides the connector's own."""
