"""Names that are not valid UTF-8: a JSON-safe spelling that every tool accepts back.

docs/connectors/fs.md, "Names that are not UTF-8": each byte that is not part of a UTF-8
character is spelled ``\\xHH`` and a backslash before ``x``, a backslash or such a byte
is doubled. These tests check the spelling both ways on arbitrary names, a whole run of
calls on such names with its rollback, and ``reversi-connectors serve fs`` answering a
listing of them (it used to die encoding the result).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from reversi_connector_fs._paths import from_spelling, spell
from reversi_core import (
    Run,
    SQLiteJournal,
    ToolError,
    compensator_for,
    executor_for,
    registry_for,
)

LATIN1 = b"caf\xe9.txt"  # a Latin-1 name: not UTF-8
LITERAL = b"a\\xe9.txt"  # a valid UTF-8 name that reads like the spelling of LATIN1
DIR = b"d\xff\xfe"


def put(path: bytes, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def listing(root: Path) -> dict[bytes, bytes | None]:
    """Every entry under ``root`` (the backups aside) by its bytes: contents or None."""
    out: dict[bytes, bytes | None] = {}
    top = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d != b".reversi-backups"]
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), top)] = None
        for name in filenames:
            full = os.path.join(dirpath, name)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, top)] = fh.read()
    return out


@given(st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\0" not in b))
def test_every_name_has_a_spelling_that_reads_back(raw: bytes) -> None:
    name = os.fsdecode(raw)
    spelled = spell(name)
    spelled.encode("utf-8")  # JSON-safe: plain Unicode text
    json.dumps(spelled, ensure_ascii=False).encode("utf-8")
    assert from_spelling(spelled) == name
    assert os.fsencode(from_spelling(spelled)) == raw


@given(st.text(min_size=1).filter(lambda t: "\\" not in t))
def test_a_utf8_name_without_a_backslash_is_spelled_as_itself(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return  # not a name a file system returns as valid UTF-8
    assert spell(text) == text


def test_the_spelling_tells_a_byte_from_a_backslash() -> None:
    assert spell(os.fsdecode(LATIN1)) == "caf\\xe9.txt"
    assert spell(os.fsdecode(LITERAL)) == "a\\\\xe9.txt"
    assert spell("a\\b") == "a\\b"  # a backslash before anything else stays single
    assert from_spelling("a\\b") == "a\\b"


@pytest.mark.anyio
async def test_non_utf8_names_round_trip_through_every_tool_and_roll_back(
    plain: Any, tmp_path: Path
) -> None:
    root = os.fsencode(plain.root)
    put(os.path.join(root, LATIN1), b"latin one")
    put(os.path.join(root, LITERAL), b"literal")
    before = listing(plain.root)
    fs = plain.fs
    with SQLiteJournal.open(tmp_path / "data") as journal:
        run = Run.start(journal, registry_for([fs]), executor=executor_for([fs]))
        _, listed = await run.call("fs.list_dir", {"path": "."})
        names = sorted(e["name"] for e in listed["entries"])
        assert names == ["a\\\\xe9.txt", "caf\\xe9.txt"]
        _, first = await run.call("fs.read_file", {"path": "caf\\xe9.txt"})
        _, second = await run.call("fs.read_file", {"path": "a\\\\xe9.txt"})
        assert (first["content"], second["content"]) == ("latin one", "literal")
        assert first["path"] == "caf\\xe9.txt"
        _, made = await run.call("fs.make_dir", {"path": "d\\xff\\xfe/sub"})
        assert made["created"] == ["d\\xff\\xfe", "d\\xff\\xfe/sub"]
        _, wrote = await run.call("fs.write_file", {"path": "caf\\xe9.txt", "content": "agent"})
        assert wrote["backup"] is not None
        json.dumps(wrote, ensure_ascii=False).encode("utf-8")
        await run.call(
            "fs.move_file", {"source": "caf\\xe9.txt", "destination": "d\\xff\\xfe/sub/x\\x80"}
        )
        await run.call("fs.delete_file", {"path": "a\\\\xe9.txt"})
        after = listing(plain.root)
        assert os.path.join(DIR, b"sub", b"x\x80") in after
        assert LATIN1 not in after
        assert LITERAL not in after
        for step in run.steps():  # every step, arguments and results, is plain JSON text
            json.dumps(step.to_json(), ensure_ascii=False).encode("utf-8")
        report = await run.rollback(compensate=compensator_for([fs]))
        assert report.complete, report.to_json()
    assert listing(plain.root) == before


@pytest.mark.anyio
async def test_a_lone_surrogate_is_refused_with_a_way_out(plain: Any) -> None:
    with pytest.raises(ToolError, match=r"write a byte that is not UTF-8 as \\xHH") as info:
        await plain.fs.call("fs.read_file", {"path": "caf\udce9.txt"})
    assert info.value.code == "path_refused"


@pytest.mark.anyio
async def test_serve_lists_and_reads_non_utf8_names(plain: Any) -> None:
    put(os.path.join(os.fsencode(plain.root), LATIN1), b"latin one")
    script = Path(sys.executable).parent / "reversi-connectors"
    command = str(script) if script.exists() else "reversi-connectors"
    params = StdioServerParameters(
        command=command, args=["serve", "fs", "--root", str(plain.root)], env=dict(os.environ)
    )
    with (plain.base / "serve.err").open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as client,
        ):
            with anyio.fail_after(30):
                await client.initialize()
                listed = await client.call_tool("fs.list_dir", {"path": "."})
                got = await client.call_tool("fs.read_file", {"path": "caf\\xe9.txt"})
    assert not listed.is_error
    assert listed.structured_content is not None
    assert [e["name"] for e in listed.structured_content["entries"]] == ["caf\\xe9.txt"]
    assert not got.is_error
    assert isinstance(got.content[0], types.TextContent)
    assert got.structured_content is not None
    assert got.structured_content["content"] == "latin one"
