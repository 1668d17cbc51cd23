"""The azure tools on the fake and on Azurite: exact names, content, limits, backups, undo."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from _azure_backends import Backend

from reversi_connector_azure import BACKUP_PREFIX, MAX_BLOB_BYTES
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import InvalidArgumentsError, ToolError

pytestmark = pytest.mark.anyio

NOTHING_LEFT = {"expected_etag": None, "expected_md5": None}


def restore_args(result: dict[str, Any]) -> dict[str, Any]:
    """restore_object's arguments for a put_object or delete_object result, as its argument map makes them."""
    return {
        "container": result["container"],
        "blob": result["blob"],
        "backup_blob": result["backup_blob"],
        "expected_etag": result["etag"],
        "expected_md5": result["content_md5"],
    }


ODD_KEYS = [
    "a b",
    "a+b",
    "100%",
    "%41",
    "q?x=1",
    "h#frag",
    "a//b",
    "/leading",
    "//two",
    "ünïcødé/日本",
    "emoji-🙂",
    "~tilde*'()!$&,;=:@",
]


@pytest.mark.parametrize("key", ODD_KEYS)
async def test_every_tool_addresses_exactly_the_key_given(backend: Backend, key: str) -> None:
    azure = backend.connector()
    b = backend.container
    backend.write("decoy", b"not this one")
    made = await azure.call("azure.put_blob", {"container": b, "blob": key, "content": "v1"})
    assert backend.keys_now() == sorted(["decoy", key])
    assert backend.read(key) == b"v1"
    again = await azure.call("azure.put_blob", {"container": b, "blob": key, "content": "v2"})
    assert again["existed"]
    assert again["backup_blob"].startswith(BACKUP_PREFIX)
    assert backend.read(again["backup_blob"]) == b"v1"  # the copy source was exactly this key
    read = await azure.call("azure.get_blob", {"container": b, "blob": key})
    assert (read["blob"], read["content"], read["etag"]) == (key, "v2", again["etag"])
    listed = await azure.call("azure.list_blobs", {"container": b})
    assert sorted(o["blob"] for o in listed["blobs"]) == sorted(["decoy", key])
    gone = await azure.call("azure.delete_blob", {"container": b, "blob": key})
    assert gone["deleted"]
    assert backend.read(key) is None
    await azure.call("azure.restore_blob", restore_args(gone))
    assert backend.read(key) == b"v2"
    assert made["etag"] != again["etag"]


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("", "1 to 1024 characters"),
        ("x" * 1025, "1024"),
        ("line\nbreak", "control character"),
        (".", "ends with '.'"),
        ("..", "ends with '.'"),
        ("a/./b", "ends with '.'"),
        ("../x", "ends with '.'"),
        ("x/..", "ends with '.'"),
        ("end.", "ends with '.'"),
        ("dir./x", "ends with '.'"),
        ("trailing/", "end with '/'"),
        ("back\\slash", "backslash"),
        ("nul\x00", "control character"),
        (BACKUP_PREFIX + "00000000-0000-4000-8000-000000000000", "backups"),
        ("\ud800", "lone surrogate"),
    ],
)
async def test_names_the_store_cannot_hold_or_the_backups_are_refused_before_any_request(
    fake_backend: Backend, key: str, why: str
) -> None:
    azure = fake_backend.connector()
    for tool, extra in [
        ("azure.get_blob", {}),
        ("azure.put_blob", {"content": "x"}),
        ("azure.delete_blob", {}),
        (
            "azure.restore_blob",
            {
                "backup_blob": None,
                "expected_etag": None,
                "expected_md5": None,
            },
        ),
    ]:
        with pytest.raises(InvalidArgumentsError, match=why):
            await azure.call(tool, {"container": fake_backend.container, "blob": key, **extra})
    assert fake_backend.keys_now() == []


async def test_backups_are_hidden_from_listings_even_by_prefix_or_delimiter(
    backend: Backend,
) -> None:
    azure = backend.connector()
    b = backend.container
    backend.write("keep.txt", b"old")
    made = await azure.call(
        "azure.put_blob", {"container": b, "blob": "keep.txt", "content": "new"}
    )
    assert made["backup_blob"] in backend.keys_now()
    for args in [{}, {"prefix": ".reversi"}, {"prefix": BACKUP_PREFIX}, {"delimiter": "/"}]:
        listed = await azure.call("azure.list_blobs", {"container": b, **args})
        keys = [o["blob"] for o in listed["blobs"]]
        assert all(not k.startswith(BACKUP_PREFIX) for k in keys), args
        assert all(not p.startswith(BACKUP_PREFIX) for p in listed["common_prefixes"]), args
    listed = await azure.call("azure.list_blobs", {"container": b, "delimiter": "/"})
    assert [o["blob"] for o in listed["blobs"]] == ["keep.txt"]


@pytest.mark.parametrize(
    ("delimiter", "rolled_up"), [("-", ".reversi-"), ("r", ".r"), (".", ".")]
)
async def test_a_delimiter_inside_the_backup_prefix_rolls_up_no_backup(
    backend: Backend, delimiter: str, rolled_up: str
) -> None:
    """With a delimiter that occurs in ``.reversi-backups/``, the backups would come back as a
    BlobPrefix (``.reversi-``, ``.r``, ``.``): hidden while only backups are under it, listed
    once another blob is."""
    azure = backend.connector()
    b = backend.container
    backend.write("doc", b"old")
    await azure.call("azure.put_blob", {"container": b, "blob": "doc", "content": "new"})
    for prefix in ["", "."]:
        listed = await azure.call(
            "azure.list_blobs", {"container": b, "prefix": prefix, "delimiter": delimiter}
        )
        assert listed["common_prefixes"] == [], prefix
        assert [o["blob"] for o in listed["blobs"]] == ([] if prefix else ["doc"])
    backend.write(".reversi-notes", b"someone's own blob beside the backups")
    listed = await azure.call("azure.list_blobs", {"container": b, "delimiter": delimiter})
    assert listed["common_prefixes"] == [rolled_up]
    assert [o["blob"] for o in listed["blobs"]] == ["doc"]


async def _undo_of_a_new_doc(backend: Backend, etag: str) -> dict[str, Any]:
    """restore_blob as the undo of a put_blob that made ``doc`` with ``etag``."""
    return await backend.connector().call(
        "azure.restore_blob",
        {
            "container": backend.container,
            "blob": "doc",
            "backup_blob": None,
            "expected_etag": etag,
            "expected_md5": None,
        },
    )


@pytest.mark.parametrize(
    "etag", ['"0x8DC0"\r\nX-Evil: 1', '"0x8DC0"\n', '"0x\x00"', '"two words"', "", '"unclosed']
)
async def test_an_expected_etag_that_is_no_entity_tag_is_refused_before_any_request(
    fake_backend: Backend, etag: str
) -> None:
    """No CR, LF, control character or space reaches a header or an error message."""
    with pytest.raises(InvalidArgumentsError, match="expected_etag"):
        await _undo_of_a_new_doc(fake_backend, etag)
    assert fake_backend.keys_now() == []


@pytest.mark.parametrize("etag", ['"0x8DB1234567890AB"', 'W/"0x8DC0"', '"*"'])
async def test_an_expected_etag_spelled_as_the_service_spells_it_is_taken(
    fake_backend: Backend, etag: str
) -> None:
    fake_backend.write("doc", b"someone's")
    with pytest.raises(ToolError) as refused:
        await _undo_of_a_new_doc(fake_backend, etag)
    assert refused.value.code == "changed_since"
    assert f"that call left ETag {etag}" in str(refused.value)


async def test_restore_takes_only_backup_keys_the_connector_makes(fake_backend: Backend) -> None:
    azure = fake_backend.connector()
    for bad in ["other/key", ".reversi-backups/../x", ".reversi-backups/not-a-uuid"]:
        with pytest.raises(InvalidArgumentsError, match="backup blob"):
            await azure.call(
                "azure.restore_blob",
                {
                    "container": fake_backend.container,
                    "blob": "k",
                    "backup_blob": bad,
                    **NOTHING_LEFT,
                },
            )


@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
async def test_a_backup_is_restored_only_onto_the_blob_it_was_made_from(
    backend: Backend, overwrite: bool
) -> None:
    """restore_blob is a tool an agent can call: another blob's backup is refused, before any
    request, whatever ETag is given and even with a person's overwrite."""
    azure = backend.connector()
    c = backend.container
    backend.write("mine", b"mine, before")
    made = await azure.call(
        "azure.put_blob", {"container": c, "blob": "mine", "content": "mine, after"}
    )
    backend.write("victim", b"victim data")
    victim = await azure.call("azure.get_blob", {"container": c, "blob": "victim"})
    args = {
        "container": c,
        "blob": "victim",
        "backup_blob": made["backup_blob"],
        "expected_etag": victim["etag"],
        "expected_md5": None,
    }
    with pytest.raises(ToolError) as refused:
        await azure.call("azure.restore_blob", args, CallContext(overwrite=overwrite))
    assert refused.value.code == "wrong_backup"
    assert f"not of {c}/victim" in str(refused.value)
    assert backend.read("victim") == b"victim data"
    back = await azure.call(
        "azure.restore_blob",
        {
            **args,
            "blob": "mine",
            "expected_etag": made["etag"],
            "expected_md5": made["content_md5"],
        },
        CallContext(overwrite=overwrite),
    )
    assert back["action"] == "copied_back"
    assert backend.read("mine") == b"mine, before"


async def test_pages_of_a_listing_join_up(backend: Backend) -> None:
    azure = backend.connector()
    names = [f"p/{i:02d} x+y" for i in range(5)]
    for name in names:
        backend.write(name, b"x")
    seen: list[str] = []
    token = None
    for _ in range(5):
        args = {
            "container": backend.container,
            "max_results": 2,
            **({"marker": token} if token else {}),
        }
        page = await azure.call("azure.list_blobs", args)
        seen += [o["blob"] for o in page["blobs"]]
        token = page["next_marker"]
        if not page["truncated"]:
            break
    assert seen == names


async def test_text_and_base64_content(backend: Backend) -> None:
    azure = backend.connector()
    b = backend.container
    blob = bytes(range(256))
    await azure.call(
        "azure.put_blob",
        {
            "container": b,
            "blob": "bin",
            "content": base64.b64encode(blob).decode(),
            "encoding": "base64",
        },
    )
    assert backend.read("bin") == blob
    read = await azure.call("azure.get_blob", {"container": b, "blob": "bin", "encoding": "base64"})
    assert base64.b64decode(read["content"]) == blob
    assert read["size"] == 256
    with pytest.raises(ToolError) as refused:
        await azure.call("azure.get_blob", {"container": b, "blob": "bin"})
    assert refused.value.code == "not_text"
    await azure.call("azure.put_blob", {"container": b, "blob": "t", "content": "Grüße 🙂"})
    assert backend.read("t") == "Grüße 🙂".encode()
    text = await azure.call("azure.get_blob", {"container": b, "blob": "t"})
    assert text["content"] == "Grüße 🙂"
    assert text["content_type"].startswith("text/plain")
    with pytest.raises(ToolError) as bad:
        await azure.call(
            "azure.put_blob", {"container": b, "blob": "x", "content": "***", "encoding": "base64"}
        )
    assert bad.value.code == "invalid_content"


async def test_objects_over_5_mib_are_neither_written_nor_read(fake_backend: Backend) -> None:
    azure = fake_backend.connector()
    b = fake_backend.container
    big = base64.b64encode(b"\0" * (MAX_BLOB_BYTES + 1)).decode()
    with pytest.raises(ToolError) as refused:
        await azure.call(
            "azure.put_blob", {"container": b, "blob": "big", "content": big, "encoding": "base64"}
        )
    assert refused.value.code == "too_large"
    fake_backend.write("huge", b"\0" * (MAX_BLOB_BYTES + 1))
    with pytest.raises(ToolError) as too_big:
        await azure.call("azure.get_blob", {"container": b, "blob": "huge", "encoding": "base64"})
    assert too_big.value.code == "too_large"
    exactly = base64.b64encode(b"\1" * MAX_BLOB_BYTES).decode()
    made = await azure.call(
        "azure.put_blob", {"container": b, "blob": "max", "content": exactly, "encoding": "base64"}
    )
    assert made["size"] == MAX_BLOB_BYTES


async def test_a_blob_over_256_mib_is_not_touched_since_copy_blob_from_url_cannot_back_it_up(
    fake_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reversi_connector_azure.connector as module

    monkeypatch.setattr(
        module, "MAX_COPY_BYTES", 10
    )  # an 11-byte blob stands for a 256 MiB + 1 one
    fake_backend.write("big", b"eleven byte")
    azure = fake_backend.connector()
    for tool, extra in [("azure.put_blob", {"content": "x"}), ("azure.delete_blob", {})]:
        with pytest.raises(ToolError) as refused:
            await azure.call(tool, {"container": fake_backend.container, "blob": "big", **extra})
        assert refused.value.code == "too_large"
        assert "Copy Blob From URL copies at most" in str(refused.value)
    assert fake_backend.keys_now() == ["big"]


async def test_only_block_blobs_are_written_or_deleted(fake_backend: Backend) -> None:
    assert fake_backend.fake is not None
    fake_backend.fake.put(fake_backend.container, "log", b"line\n", blob_type="AppendBlob")
    azure = fake_backend.connector()
    for tool, extra in [("azure.put_blob", {"content": "x"}), ("azure.delete_blob", {})]:
        with pytest.raises(ToolError) as refused:
            await azure.call(tool, {"container": fake_backend.container, "blob": "log", **extra})
        assert refused.value.code == "not_block_blob"
    assert fake_backend.read("log") == b"line\n"
    assert fake_backend.keys_now() == ["log"]
    read = await azure.call("azure.get_blob", {"container": fake_backend.container, "blob": "log"})
    assert read["content"] == "line\n"


async def test_deleting_a_key_that_does_not_exist_changes_nothing_and_its_undo_neither(
    backend: Backend,
) -> None:
    azure = backend.connector()
    gone = await azure.call("azure.delete_blob", {"container": backend.container, "blob": "never"})
    assert (gone["existed"], gone["deleted"], gone["backup_blob"]) == (False, False, None)
    undone = await azure.call(
        "azure.restore_blob",
        {"container": backend.container, "blob": "never", "backup_blob": None, **NOTHING_LEFT},
    )
    assert undone["action"] == "none"
    assert backend.keys_now() == []


async def test_a_run_is_rolled_back_newest_first_through_the_engine(
    backend: Backend, tmp_path: Path
) -> None:
    """Two writes and a delete of one key, and a new key: the edges and the resources order the undo."""
    azure = backend.connector()
    b = backend.container
    backend.write("doc", b"original")
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([azure]), executor=executor_for([azure]))
    first, _ = await run.call("azure.put_blob", {"container": b, "blob": "doc", "content": "one"})
    second, _ = await run.call("azure.put_blob", {"container": b, "blob": "doc", "content": "two"})
    third, _ = await run.call("azure.delete_blob", {"container": b, "blob": "doc"})
    made, _ = await run.call("azure.put_blob", {"container": b, "blob": "new", "content": "made"})
    edges = {(step.seq, earlier) for step in run.steps() for earlier in step.requires}
    assert {(second, first), (third, second)} <= edges
    touched = {step.seq: (step.compensation or {}).get("resources") for step in run.steps()}
    assert touched == {
        first: ["azure:" + b + "/doc"],
        second: ["azure:" + b + "/doc"],
        third: ["azure:" + b + "/doc"],
        made: ["azure:" + b + "/new"],
    }
    report = await run.rollback(compensate=compensator_for([azure]))
    assert report.complete
    # the new key's undo beside the newest change of the other; that key's, newest first
    assert report.waves == [[made, third], [second], [first]]
    assert backend.read("doc") == b"original"
    assert backend.read("new") is None
    assert [k for k in backend.keys_now() if not k.startswith(BACKUP_PREFIX)] == ["doc"]
    again = await run.rollback(compensate=compensator_for([azure]))
    assert again.complete
    journal.close()
