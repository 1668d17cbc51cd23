"""The gcp tools on the fake and on fake-gcs-server: exact names, content, limits, backups, undo."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from _gcp_backends import Backend

from reversi_connector_gcp import BACKUP_PREFIX, MAX_OBJECT_BYTES
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import InvalidArgumentsError, ToolError

pytestmark = pytest.mark.anyio

NOTHING_LEFT = {"expected_generation": None, "expected_crc32c": None, "expected_md5": None}


def restore_args(result: dict[str, Any]) -> dict[str, Any]:
    """restore_object's arguments for a put_object or delete_object result, as its argument map makes them."""
    return {
        "bucket": result["bucket"],
        "key": result["key"],
        "backup_key": result["backup_key"],
        "expected_generation": result["generation"],
        "expected_crc32c": result["crc32c"],
        "expected_md5": result["md5"],
    }


ODD_KEYS = [
    "a b",
    "a+b",
    "100%",
    "%41",
    "q?x=1",
    "h#frag",
    "a//b",
    "a/./b",
    "../x",
    "x/..",
    "/leading",
    "//two",
    "ünïcødé/日本",
    "emoji-🙂",
    "trailing/",
    "~tilde*'()!$&,;=:@",
]


@pytest.mark.parametrize("key", ODD_KEYS)
async def test_every_tool_addresses_exactly_the_key_given(backend: Backend, key: str) -> None:
    gcp = backend.connector()
    b = backend.bucket
    backend.write("decoy", b"not this one")
    made = await gcp.call("gcp.put_object", {"bucket": b, "key": key, "content": "v1"})
    assert backend.keys_now() == sorted(["decoy", key])
    assert backend.read(key) == b"v1"
    again = await gcp.call("gcp.put_object", {"bucket": b, "key": key, "content": "v2"})
    assert again["existed"]
    assert again["backup_key"].startswith(BACKUP_PREFIX)
    assert backend.read(again["backup_key"]) == b"v1"  # the copy source was exactly this key
    read = await gcp.call("gcp.get_object", {"bucket": b, "key": key})
    assert (read["key"], read["content"], read["generation"]) == (key, "v2", again["generation"])
    listed = await gcp.call("gcp.list_objects", {"bucket": b})
    assert sorted(o["key"] for o in listed["objects"]) == sorted(["decoy", key])
    gone = await gcp.call("gcp.delete_object", {"bucket": b, "key": key})
    assert gone["deleted"]
    assert backend.read(key) is None
    await gcp.call("gcp.restore_object", restore_args(gone))
    assert backend.read(key) == b"v2"
    assert made["generation"] != again["generation"]


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("", "1 to 1024 bytes"),
        ("x" * 1025, "1 to 1024 bytes"),
        ("é" * 513, "1 to 1024 bytes"),
        ("line\nbreak", "control character"),
        (".", "'.' and '..'"),
        ("..", "'.' and '..'"),
        (".well-known/acme-challenge/x", "acme-challenge"),
        ("nul\x00", "control character"),
        (BACKUP_PREFIX + "00000000-0000-4000-8000-000000000000", "backups"),
        ("\ud800", "lone surrogate"),
    ],
)
async def test_names_the_store_cannot_hold_or_the_backups_are_refused_before_any_request(
    fake_backend: Backend, key: str, why: str
) -> None:
    gcp = fake_backend.connector()
    for tool, extra in [
        ("gcp.get_object", {}),
        ("gcp.put_object", {"content": "x"}),
        ("gcp.delete_object", {}),
        (
            "gcp.restore_object",
            {
                "backup_key": None,
                "expected_generation": None,
                "expected_crc32c": None,
                "expected_md5": None,
            },
        ),
    ]:
        with pytest.raises(InvalidArgumentsError, match=why):
            await gcp.call(tool, {"bucket": fake_backend.bucket, "key": key, **extra})
    assert fake_backend.keys_now() == []


async def test_backups_are_hidden_from_listings_even_by_prefix_or_delimiter(
    backend: Backend,
) -> None:
    gcp = backend.connector()
    b = backend.bucket
    backend.write("keep.txt", b"old")
    made = await gcp.call("gcp.put_object", {"bucket": b, "key": "keep.txt", "content": "new"})
    assert made["backup_key"] in backend.keys_now()
    for args in [{}, {"prefix": ".reversi"}, {"prefix": BACKUP_PREFIX}, {"delimiter": "/"}]:
        listed = await gcp.call("gcp.list_objects", {"bucket": b, **args})
        keys = [o["key"] for o in listed["objects"]]
        assert all(not k.startswith(BACKUP_PREFIX) for k in keys), args
        assert all(not p.startswith(BACKUP_PREFIX) for p in listed["common_prefixes"]), args
    listed = await gcp.call("gcp.list_objects", {"bucket": b, "delimiter": "/"})
    assert [o["key"] for o in listed["objects"]] == ["keep.txt"]


@pytest.mark.parametrize(
    ("delimiter", "rolled_up"), [("-", ".reversi-"), ("r", ".r"), (".", ".")]
)
async def test_a_delimiter_inside_the_backup_prefix_rolls_up_no_backup(
    backend: Backend, delimiter: str, rolled_up: str
) -> None:
    """With a delimiter that occurs in ``.reversi-backups/``, the backups would come back as a
    common prefix (``.reversi-``, ``.r``, ``.``): hidden while only backups are under it,
    listed once another object is."""
    gcp = backend.connector()
    b = backend.bucket
    backend.write("doc", b"old")
    await gcp.call("gcp.put_object", {"bucket": b, "key": "doc", "content": "new"})
    for prefix in ["", "."]:
        listed = await gcp.call(
            "gcp.list_objects", {"bucket": b, "prefix": prefix, "delimiter": delimiter}
        )
        assert listed["common_prefixes"] == [], prefix
        assert [o["key"] for o in listed["objects"]] == ([] if prefix else ["doc"])
    backend.write(".reversi-notes", b"someone's own object beside the backups")
    listed = await gcp.call("gcp.list_objects", {"bucket": b, "delimiter": delimiter})
    assert listed["common_prefixes"] == [rolled_up]
    assert [o["key"] for o in listed["objects"]] == ["doc"]


async def test_restore_takes_only_backup_keys_the_connector_makes(fake_backend: Backend) -> None:
    gcp = fake_backend.connector()
    for bad in ["other/key", ".reversi-backups/../x", ".reversi-backups/not-a-uuid"]:
        with pytest.raises(InvalidArgumentsError, match="backup key"):
            await gcp.call(
                "gcp.restore_object",
                {
                    "bucket": fake_backend.bucket,
                    "key": "k",
                    "backup_key": bad,
                    **NOTHING_LEFT,
                },
            )


@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
async def test_a_backup_is_restored_only_onto_the_object_it_was_made_from(
    backend: Backend, overwrite: bool
) -> None:
    """restore_object is a tool an agent can call: another object's backup is refused, before
    any request, whatever generation is given and even with a person's overwrite."""
    gcp = backend.connector()
    b = backend.bucket
    backend.write("mine", b"mine, before")
    made = await gcp.call("gcp.put_object", {"bucket": b, "key": "mine", "content": "mine, after"})
    backend.write("victim", b"victim data")
    victim = await gcp.call("gcp.get_object", {"bucket": b, "key": "victim"})
    args = {
        "bucket": b,
        "key": "victim",
        "backup_key": made["backup_key"],
        "expected_generation": victim["generation"],
        "expected_crc32c": None,
        "expected_md5": None,
    }
    with pytest.raises(ToolError) as refused:
        await gcp.call("gcp.restore_object", args, CallContext(overwrite=overwrite))
    assert refused.value.code == "wrong_backup"
    assert f"not of gs://{b}/victim" in str(refused.value)
    assert backend.read("victim") == b"victim data"
    back = await gcp.call(
        "gcp.restore_object",
        {
            **args,
            "key": "mine",
            "expected_generation": made["generation"],
            "expected_crc32c": made["crc32c"],
            "expected_md5": made["md5"],
        },
        CallContext(overwrite=overwrite),
    )
    assert back["action"] == "copied_back"
    assert backend.read("mine") == b"mine, before"


async def test_pages_of_a_listing_join_up(backend: Backend) -> None:
    gcp = backend.connector()
    names = [f"p/{i:02d} x+y" for i in range(5)]
    for name in names:
        backend.write(name, b"x")
    seen: list[str] = []
    token = None
    for _ in range(5):
        args = {
            "bucket": backend.bucket,
            "max_keys": 2,
            **({"continuation_token": token} if token else {}),
        }
        page = await gcp.call("gcp.list_objects", args)
        seen += [o["key"] for o in page["objects"]]
        token = page["next_continuation_token"]
        if not page["truncated"]:
            break
    assert seen == names


async def test_text_and_base64_content(backend: Backend) -> None:
    gcp = backend.connector()
    b = backend.bucket
    blob = bytes(range(256))
    await gcp.call(
        "gcp.put_object",
        {
            "bucket": b,
            "key": "bin",
            "content": base64.b64encode(blob).decode(),
            "encoding": "base64",
        },
    )
    assert backend.read("bin") == blob
    read = await gcp.call("gcp.get_object", {"bucket": b, "key": "bin", "encoding": "base64"})
    assert base64.b64decode(read["content"]) == blob
    assert read["size"] == 256
    with pytest.raises(ToolError) as refused:
        await gcp.call("gcp.get_object", {"bucket": b, "key": "bin"})
    assert refused.value.code == "not_text"
    await gcp.call("gcp.put_object", {"bucket": b, "key": "t", "content": "Grüße 🙂"})
    assert backend.read("t") == "Grüße 🙂".encode()
    text = await gcp.call("gcp.get_object", {"bucket": b, "key": "t"})
    assert text["content"] == "Grüße 🙂"
    assert text["content_type"].startswith("text/plain")
    with pytest.raises(ToolError) as bad:
        await gcp.call(
            "gcp.put_object", {"bucket": b, "key": "x", "content": "***", "encoding": "base64"}
        )
    assert bad.value.code == "invalid_content"


async def test_objects_over_5_mib_are_neither_written_nor_read(fake_backend: Backend) -> None:
    gcp = fake_backend.connector()
    b = fake_backend.bucket
    big = base64.b64encode(b"\0" * (MAX_OBJECT_BYTES + 1)).decode()
    with pytest.raises(ToolError) as refused:
        await gcp.call(
            "gcp.put_object", {"bucket": b, "key": "big", "content": big, "encoding": "base64"}
        )
    assert refused.value.code == "too_large"
    fake_backend.write("huge", b"\0" * (MAX_OBJECT_BYTES + 1))
    with pytest.raises(ToolError) as too_big:
        await gcp.call("gcp.get_object", {"bucket": b, "key": "huge", "encoding": "base64"})
    assert too_big.value.code == "too_large"
    exactly = base64.b64encode(b"\1" * MAX_OBJECT_BYTES).decode()
    made = await gcp.call(
        "gcp.put_object", {"bucket": b, "key": "max", "content": exactly, "encoding": "base64"}
    )
    assert made["size"] == MAX_OBJECT_BYTES


async def test_a_backup_of_a_large_object_loops_on_the_rewrite_token(fake_backend: Backend) -> None:
    """The fake rewrites 4 bytes a call here: a 64-byte object takes 16 calls, all with the same preconditions."""
    fake = fake_backend.fake
    assert fake is not None
    fake.rewrite_chunk = 4
    fake_backend.write("big", bytes(range(64)))
    gcp = fake_backend.connector()
    made = await gcp.call(
        "gcp.put_object", {"bucket": fake_backend.bucket, "key": "big", "content": "small now"}
    )
    assert fake.rewrite_calls == 16
    assert fake_backend.read(made["backup_key"]) == bytes(range(64))
    await gcp.call("gcp.restore_object", restore_args(made))
    assert fake_backend.read("big") == bytes(range(64))
    assert fake.rewrite_calls == 32


async def test_deleting_a_key_that_does_not_exist_changes_nothing_and_its_undo_neither(
    backend: Backend,
) -> None:
    gcp = backend.connector()
    gone = await gcp.call("gcp.delete_object", {"bucket": backend.bucket, "key": "never"})
    assert (gone["existed"], gone["deleted"], gone["backup_key"]) == (False, False, None)
    undone = await gcp.call(
        "gcp.restore_object",
        {"bucket": backend.bucket, "key": "never", "backup_key": None, **NOTHING_LEFT},
    )
    assert undone["action"] == "none"
    assert backend.keys_now() == []


async def test_a_run_is_rolled_back_newest_first_through_the_engine(
    backend: Backend, tmp_path: Path
) -> None:
    """Two writes and a delete of one key, and a new key: the edges and the resources order the undo."""
    gcp = backend.connector()
    b = backend.bucket
    backend.write("doc", b"original")
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([gcp]), executor=executor_for([gcp]))
    first, _ = await run.call("gcp.put_object", {"bucket": b, "key": "doc", "content": "one"})
    second, _ = await run.call("gcp.put_object", {"bucket": b, "key": "doc", "content": "two"})
    third, _ = await run.call("gcp.delete_object", {"bucket": b, "key": "doc"})
    made, _ = await run.call("gcp.put_object", {"bucket": b, "key": "new", "content": "made"})
    edges = {(step.seq, earlier) for step in run.steps() for earlier in step.requires}
    assert {(second, first), (third, second)} <= edges
    touched = {step.seq: (step.compensation or {}).get("resources") for step in run.steps()}
    assert touched == {
        first: ["gcs:" + b + "/doc"],
        second: ["gcs:" + b + "/doc"],
        third: ["gcs:" + b + "/doc"],
        made: ["gcs:" + b + "/new"],
    }
    report = await run.rollback(compensate=compensator_for([gcp]))
    assert report.complete
    # the new key's undo beside the newest change of the other; that key's, newest first
    assert report.waves == [[made, third], [second], [first]]
    assert backend.read("doc") == b"original"
    assert backend.read("new") is None
    assert [k for k in backend.keys_now() if not k.startswith(BACKUP_PREFIX)] == ["doc"]
    again = await run.rollback(compensate=compensator_for([gcp]))
    assert again.complete
    journal.close()
