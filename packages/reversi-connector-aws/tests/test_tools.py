"""The aws tools on the fake and on moto: exact keys, content, limits, backups, undo."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from _aws_backends import Backend

from reversi_connector_aws import BACKUP_PREFIX, MAX_OBJECT_BYTES
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import InvalidArgumentsError, ToolError

pytestmark = pytest.mark.anyio

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
    ".",
    "/leading",
    "//two",
    "ünïcødé/日本",
    "emoji-🙂",
    "trailing/",
    "~tilde*'()!$&,;=:@",
]


@pytest.mark.parametrize("key", ODD_KEYS)
async def test_every_tool_addresses_exactly_the_key_given(backend: Backend, key: str) -> None:
    aws = backend.connector()
    b = backend.bucket
    backend.write("decoy", b"not this one")
    made = await aws.call("aws.put_object", {"bucket": b, "key": key, "content": "v1"})
    assert backend.keys_now() == sorted(["decoy", key])
    assert backend.read(key) == b"v1"
    again = await aws.call("aws.put_object", {"bucket": b, "key": key, "content": "v2"})
    assert again["existed"]
    assert again["backup_key"].startswith(BACKUP_PREFIX)
    assert backend.read(again["backup_key"]) == b"v1"  # the copy source was exactly this key
    read = await aws.call("aws.get_object", {"bucket": b, "key": key})
    assert (read["key"], read["content"], read["etag"]) == (key, "v2", again["etag"])
    listed = await aws.call("aws.list_objects", {"bucket": b})
    assert sorted(o["key"] for o in listed["objects"]) == sorted(["decoy", key])
    gone = await aws.call("aws.delete_object", {"bucket": b, "key": key})
    assert gone["deleted"]
    assert backend.read(key) is None
    await aws.call(
        "aws.restore_object",
        {"bucket": b, "key": key, "backup_key": gone["backup_key"], "expected_etag": None},
    )
    assert backend.read(key) == b"v2"
    assert made["etag"] != again["etag"]


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("", "1 to 1024 bytes"),
        ("x" * 1025, "1 to 1024 bytes"),
        ("é" * 513, "1 to 1024 bytes"),
        ("line\nbreak", "control character"),
        ("nul\x00", "control character"),
        (BACKUP_PREFIX + "00000000-0000-4000-8000-000000000000", "backups"),
        ("\ud800", "lone surrogate"),
    ],
)
async def test_keys_s3_cannot_hold_or_the_backups_are_refused_before_any_request(
    fake_backend: Backend, key: str, why: str
) -> None:
    aws = fake_backend.connector()
    for tool, extra in [
        ("aws.get_object", {}),
        ("aws.put_object", {"content": "x"}),
        ("aws.delete_object", {}),
        ("aws.restore_object", {"backup_key": None, "expected_etag": None}),
    ]:
        with pytest.raises(InvalidArgumentsError, match=why):
            await aws.call(tool, {"bucket": fake_backend.bucket, "key": key, **extra})
    assert fake_backend.keys_now() == []


async def test_backups_are_hidden_from_listings_even_by_prefix_or_delimiter(
    backend: Backend,
) -> None:
    aws = backend.connector()
    b = backend.bucket
    backend.write("keep.txt", b"old")
    made = await aws.call("aws.put_object", {"bucket": b, "key": "keep.txt", "content": "new"})
    assert made["backup_key"] in backend.keys_now()
    for args in [{}, {"prefix": ".reversi"}, {"prefix": BACKUP_PREFIX}, {"delimiter": "/"}]:
        listed = await aws.call("aws.list_objects", {"bucket": b, **args})
        keys = [o["key"] for o in listed["objects"]]
        assert all(not k.startswith(BACKUP_PREFIX) for k in keys), args
        assert all(not p.startswith(BACKUP_PREFIX) for p in listed["common_prefixes"]), args
    listed = await aws.call("aws.list_objects", {"bucket": b, "delimiter": "/"})
    assert [o["key"] for o in listed["objects"]] == ["keep.txt"]


@pytest.mark.parametrize(
    ("delimiter", "rolled_up"), [("-", ".reversi-"), ("r", ".r"), (".", ".")]
)
async def test_a_delimiter_inside_the_backup_prefix_rolls_up_no_backup(
    backend: Backend, delimiter: str, rolled_up: str
) -> None:
    """With a delimiter that occurs in ``.reversi-backups/``, the backups would come back as a
    common prefix (``.reversi-``, ``.r``, ``.``): hidden while only backups are under it,
    listed once another key is."""
    aws = backend.connector()
    b = backend.bucket
    backend.write("doc", b"old")
    await aws.call("aws.put_object", {"bucket": b, "key": "doc", "content": "new"})
    for prefix in ["", "."]:
        listed = await aws.call(
            "aws.list_objects", {"bucket": b, "prefix": prefix, "delimiter": delimiter}
        )
        assert listed["common_prefixes"] == [], prefix
        assert [o["key"] for o in listed["objects"]] == ([] if prefix else ["doc"])
    backend.write(".reversi-notes", b"someone's own key beside the backups")
    listed = await aws.call("aws.list_objects", {"bucket": b, "delimiter": delimiter})
    assert listed["common_prefixes"] == [rolled_up]
    assert [o["key"] for o in listed["objects"]] == ["doc"]


@pytest.mark.parametrize("etag", ['"d41d8c"\r\nX-Evil: 1', '"d41d8c"\n', '"\x00"', '"two words"', ""])
async def test_an_expected_etag_with_a_space_or_control_character_is_refused(
    fake_backend: Backend, etag: str
) -> None:
    """Visible ASCII only: no CR, LF, space or control character reaches an error message."""
    aws = fake_backend.connector()
    with pytest.raises(InvalidArgumentsError, match="expected_etag"):
        await aws.call(
            "aws.restore_object",
            {"bucket": fake_backend.bucket, "key": "doc", "backup_key": None, "expected_etag": etag},
        )
    assert fake_backend.keys_now() == []


async def test_restore_takes_only_backup_keys_the_connector_makes(fake_backend: Backend) -> None:
    aws = fake_backend.connector()
    for bad in ["other/key", ".reversi-backups/../x", ".reversi-backups/not-a-uuid"]:
        with pytest.raises(InvalidArgumentsError, match="backup key"):
            await aws.call(
                "aws.restore_object",
                {
                    "bucket": fake_backend.bucket,
                    "key": "k",
                    "backup_key": bad,
                    "expected_etag": None,
                },
            )


@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
async def test_a_backup_is_restored_only_onto_the_key_it_was_made_from(
    backend: Backend, overwrite: bool
) -> None:
    """restore_object is a tool an agent can call: another key's backup is refused, before any
    request, whatever ETag is given and even with a person's overwrite."""
    aws = backend.connector()
    b = backend.bucket
    backend.write("mine", b"mine, before")
    made = await aws.call("aws.put_object", {"bucket": b, "key": "mine", "content": "mine, after"})
    backend.write("victim", b"victim data")
    victim = await aws.call("aws.get_object", {"bucket": b, "key": "victim"})
    args = {
        "bucket": b,
        "key": "victim",
        "backup_key": made["backup_key"],
        "expected_etag": victim["etag"],
    }
    with pytest.raises(ToolError) as refused:
        await aws.call("aws.restore_object", args, CallContext(overwrite=overwrite))
    assert refused.value.code == "wrong_backup"
    assert f"not of s3://{b}/victim" in str(refused.value)
    assert backend.read("victim") == b"victim data"
    back = await aws.call(
        "aws.restore_object",
        {**args, "key": "mine", "expected_etag": made["etag"]},
        CallContext(overwrite=overwrite),
    )
    assert back["action"] == "copied_back"
    assert backend.read("mine") == b"mine, before"


async def test_pages_of_a_listing_join_up(backend: Backend) -> None:
    aws = backend.connector()
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
        page = await aws.call("aws.list_objects", args)
        seen += [o["key"] for o in page["objects"]]
        token = page["next_continuation_token"]
        if not page["truncated"]:
            break
    assert seen == names


async def test_text_and_base64_content(backend: Backend) -> None:
    aws = backend.connector()
    b = backend.bucket
    blob = bytes(range(256))
    await aws.call(
        "aws.put_object",
        {
            "bucket": b,
            "key": "bin",
            "content": base64.b64encode(blob).decode(),
            "encoding": "base64",
        },
    )
    assert backend.read("bin") == blob
    read = await aws.call("aws.get_object", {"bucket": b, "key": "bin", "encoding": "base64"})
    assert base64.b64decode(read["content"]) == blob
    assert read["size"] == 256
    with pytest.raises(ToolError) as refused:
        await aws.call("aws.get_object", {"bucket": b, "key": "bin"})
    assert refused.value.code == "not_text"
    await aws.call("aws.put_object", {"bucket": b, "key": "t", "content": "Grüße 🙂"})
    assert backend.read("t") == "Grüße 🙂".encode()
    text = await aws.call("aws.get_object", {"bucket": b, "key": "t"})
    assert text["content"] == "Grüße 🙂"
    assert text["content_type"].startswith("text/plain")
    with pytest.raises(ToolError) as bad:
        await aws.call(
            "aws.put_object", {"bucket": b, "key": "x", "content": "***", "encoding": "base64"}
        )
    assert bad.value.code == "invalid_content"


async def test_objects_over_5_mib_are_neither_written_nor_read(fake_backend: Backend) -> None:
    aws = fake_backend.connector()
    b = fake_backend.bucket
    big = base64.b64encode(b"\0" * (MAX_OBJECT_BYTES + 1)).decode()
    with pytest.raises(ToolError) as refused:
        await aws.call(
            "aws.put_object", {"bucket": b, "key": "big", "content": big, "encoding": "base64"}
        )
    assert refused.value.code == "too_large"
    fake_backend.write("huge", b"\0" * (MAX_OBJECT_BYTES + 1))
    with pytest.raises(ToolError) as too_big:
        await aws.call("aws.get_object", {"bucket": b, "key": "huge", "encoding": "base64"})
    assert too_big.value.code == "too_large"
    exactly = base64.b64encode(b"\1" * MAX_OBJECT_BYTES).decode()
    made = await aws.call(
        "aws.put_object", {"bucket": b, "key": "max", "content": exactly, "encoding": "base64"}
    )
    assert made["size"] == MAX_OBJECT_BYTES


async def test_an_object_over_5_gib_is_not_touched_since_copyobject_cannot_back_it_up(
    fake_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reversi_connector_aws.connector as module

    monkeypatch.setattr(
        module, "MAX_COPY_BYTES", 10
    )  # an 11-byte object stands for a 5 GiB + 1 one
    fake_backend.write("big", b"eleven byte")
    aws = fake_backend.connector()
    for tool, extra in [("aws.put_object", {"content": "x"}), ("aws.delete_object", {})]:
        with pytest.raises(ToolError) as refused:
            await aws.call(tool, {"bucket": fake_backend.bucket, "key": "big", **extra})
        assert refused.value.code == "too_large"
        assert "CopyObject copies at most" in str(refused.value)
    assert fake_backend.keys_now() == ["big"]


async def test_deleting_a_key_that_does_not_exist_changes_nothing_and_its_undo_neither(
    backend: Backend,
) -> None:
    aws = backend.connector()
    gone = await aws.call("aws.delete_object", {"bucket": backend.bucket, "key": "never"})
    assert (gone["existed"], gone["deleted"], gone["backup_key"]) == (False, False, None)
    undone = await aws.call(
        "aws.restore_object",
        {"bucket": backend.bucket, "key": "never", "backup_key": None, "expected_etag": None},
    )
    assert undone["action"] == "none"
    assert backend.keys_now() == []


async def test_a_run_is_rolled_back_newest_first_through_the_engine(
    backend: Backend, tmp_path: Path
) -> None:
    """Two writes and a delete of one key, and a new key: the edges and the resources order the undo."""
    aws = backend.connector()
    b = backend.bucket
    backend.write("doc", b"original")
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([aws]), executor=executor_for([aws]))
    first, _ = await run.call("aws.put_object", {"bucket": b, "key": "doc", "content": "one"})
    second, _ = await run.call("aws.put_object", {"bucket": b, "key": "doc", "content": "two"})
    third, _ = await run.call("aws.delete_object", {"bucket": b, "key": "doc"})
    made, _ = await run.call("aws.put_object", {"bucket": b, "key": "new", "content": "made"})
    edges = {(step.seq, earlier) for step in run.steps() for earlier in step.requires}
    assert {(second, first), (third, second)} <= edges
    touched = {step.seq: (step.compensation or {}).get("resources") for step in run.steps()}
    assert touched == {
        first: ["s3:" + b + "/doc"],
        second: ["s3:" + b + "/doc"],
        third: ["s3:" + b + "/doc"],
        made: ["s3:" + b + "/new"],
    }
    report = await run.rollback(compensate=compensator_for([aws]))
    assert report.complete
    # the new key's undo beside the newest change of the other; that key's, newest first
    assert report.waves == [[made, third], [second], [first]]
    assert backend.read("doc") == b"original"
    assert backend.read("new") is None
    assert [k for k in backend.keys_now() if not k.startswith(BACKUP_PREFIX)] == ["doc"]
    again = await run.rollback(compensate=compensator_for([aws]))
    assert again.complete
    journal.close()
