"""``reversi-connectors serve``: a real MCP stdio client against the served connector.

The fs connector is served when it is installed; the ``note`` test connector (in
``cli_fixture/``) covers the outcomes fs cannot produce on demand (uncertain, a bug).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters, stdio_client
from pydantic import BaseModel, ConfigDict

from reversi_core import (
    Compensation,
    Effect,
    EffectUncertainError,
    Manifest,
    ToolError,
    register_secret,
)
from reversi_core.errors import InvalidArgumentsError
from reversi_core.mcp.serve import (
    ERROR_SCHEMA,
    call_result,
    output_schema,
    tool_annotations,
    tool_definition,
)

FIXTURE = Path(__file__).resolve().parent / "cli_fixture"


def script(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"console script {name} is not installed (pip install -e packages/reversi-core)"
    return path


@asynccontextmanager
async def served(tmp_path: Path, *args: str) -> AsyncIterator[ClientSession]:
    env = {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(FIXTURE), os.environ.get("PYTHONPATH")]))
    }
    params = StdioServerParameters(
        command=script("reversi-connectors"), args=["serve", *args], env=env
    )
    with (tmp_path / "server-stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error
    assert isinstance(result.structured_content, dict)
    error = result.structured_content["error"]
    assert isinstance(error, dict)
    return error


# -- the fs connector ---------------------------------------------------------------------------


# -- every outcome, with the note test connector --------------------------------------------


@pytest.mark.anyio
async def test_note_outcomes_over_stdio(tmp_path: Path) -> None:
    async with served(tmp_path, "note", "--root", str(tmp_path)) as session:
        listing = await session.list_tools()
        tools = {t.name: t for t in listing.tools}
        schemas = {}
        for name, listed in tools.items():
            assert listed.output_schema is not None, name
            assert listed.output_schema["type"] == "object", name  # MCP: an object at the root
            Draft202012Validator.check_schema(listed.output_schema)
            schemas[name] = Draft202012Validator(listed.output_schema)
        answers: list[tuple[str, types.CallToolResult]] = []
        assert tools["note.create"].annotations is not None
        assert tools["note.create"].annotations.open_world_hint is False  # NoteConnector.open_world
        assert tools["note.publish"].meta is not None
        assert tools["note.publish"].meta["reversi/approval"] == "always"

        created = await session.call_tool(
            "note.create",
            {"name": "a", "text": "hello"},
            meta={"reversi/idempotency_key": "key-123"},
        )
        assert created.structured_content == {"name": "a", "created": True}
        assert created.meta == {"reversi/outcome": "succeeded"}
        assert (tmp_path / "last-key").read_text() == "key-123"

        read = await session.call_tool(
            "note.read", {"name": "a"}
        )  # validated against its outputSchema
        assert read.structured_content == {"name": "a", "text": "hello"}

        again = await session.call_tool("note.create", {"name": "a", "text": "x"})
        assert again.meta == {"reversi/outcome": "failed"}
        assert error_of(again) == {
            "type": "tool_error",
            "message": "note a exists",
            "status": 409,
            "code": "exists",
        }

        invalid = await session.call_tool("note.create", {"name": "Bad Name"})
        assert invalid.meta == {"reversi/outcome": "failed"}
        error = error_of(invalid)
        assert error["type"] == "rejected"
        assert error["code"] == "invalid_arguments"
        assert len(error["problems"]) == 2

        unknown = await session.call_tool("note.nothing", {})
        assert unknown.meta == {"reversi/outcome": "failed"}
        assert error_of(unknown)["code"] == "unknown_tool"

        flaky = await session.call_tool("note.flaky", {"name": "b", "text": "y"})
        assert flaky.meta == {"reversi/outcome": "uncertain"}
        assert error_of(flaky)["type"] == "uncertain"

        crash = await session.call_tool("note.crash", {"name": "c", "text": "z"})
        assert crash.meta == {"reversi/outcome": "uncertain"}
        assert "RuntimeError: boom" in error_of(crash)["message"]
        answers += [
            ("note.create", created),
            ("note.read", read),
            ("note.create", again),
            ("note.create", invalid),
            ("note.flaky", flaky),
            ("note.crash", crash),
        ]
    # Every answer, failures included, is what the tool's outputSchema describes (the
    # TypeScript SDK checks failed calls too); a failure is never taken for a result.
    result_branch = Draft202012Validator({**schemas["note.create"].schema["anyOf"][0], "$defs": {}})
    for name, answer in answers:
        errors = [e.message for e in schemas[name].iter_errors(answer.structured_content)]
        assert errors == [], (name, answer.structured_content)
        assert result_branch.is_valid(answer.structured_content) is (
            name == "note.create" and not answer.is_error
        )
    assert "Traceback" not in (tmp_path / "server-stderr.log").read_text()


# -- the mapping itself -------------------------------------------------------------------------


def manifest(effect: Effect, **extra: Any) -> Manifest:
    return Manifest(name="x.tool", description="d", effect=effect, permission="x:p", **extra)


@pytest.mark.parametrize(
    ("effect", "hints"),
    [
        (Effect.READ_ONLY, (True, False, True)),
        (Effect.IDEMPOTENT, (False, True, True)),
        (Effect.REVERSIBLE, (False, True, False)),
        (Effect.COMPENSABLE, (False, True, False)),
        (Effect.IRREVERSIBLE, (False, True, False)),
    ],
)
def test_annotations_follow_the_effect(effect: Effect, hints: tuple[bool, bool, bool]) -> None:
    a = tool_annotations(manifest(effect), open_world=True)
    assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint) == hints
    assert a.open_world_hint is True
    assert tool_annotations(manifest(effect), open_world=False).open_world_hint is False


def test_tool_definition_carries_the_declarations() -> None:
    m = manifest(
        Effect.REVERSIBLE,
        compensation=Compensation(
            tool="x.undo", argument_map={"id": "result.id"}, resources=["x:{result.id}"]
        ),
    )
    tool = tool_definition(m)
    dumped = tool.model_dump(by_alias=True, exclude_none=True)
    assert dumped["inputSchema"] == {"type": "object"}
    assert "outputSchema" not in dumped  # a hand-written manifest without output_schema
    assert dumped["_meta"]["reversi/compensation"] == {
        "tool": "x.undo",
        "argument_map": {"id": "result.id"},
        "resources": ["x:{result.id}"],
    }
    assert dumped["_meta"]["reversi/requires"] == []


def test_output_schema_is_the_result_or_the_error_with_the_results_defs_at_the_root() -> None:
    class Item(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: str

    class Listing(BaseModel):
        model_config = ConfigDict(extra="forbid")
        items: list[Item]

    m = manifest(Effect.READ_ONLY, output_schema=Listing.model_json_schema())
    schema = output_schema(m)
    assert schema is not None
    assert tool_definition(m).output_schema == schema
    assert schema["type"] == "object"
    assert set(schema["$defs"]) == {"Item"}
    assert schema["anyOf"][1] == ERROR_SCHEMA
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"items": [{"name": "a"}]})
    assert validator.is_valid(call_result(ToolError("no", status=404)).structured_content)
    assert validator.is_valid(call_result(EffectUncertainError("lost")).structured_content)
    assert not validator.is_valid({"items": [{"name": 1}]})  # the $ref still resolves
    assert not validator.is_valid({"items": [], "extra": True})  # closed stays closed
    assert not validator.is_valid({"error": {"message": "no type"}})


def test_results_and_errors_are_scrubbed() -> None:
    secret = "sk-test-5f2d9c0e7a"
    register_secret(secret)
    ok = call_result({"echo": f"token {secret}"})
    assert ok.structured_content == {"echo": "token [REDACTED]"}
    assert secret not in ok.model_dump_json()
    failed = call_result(ToolError(f"401 with {secret}", status=401, code="auth"))
    assert error_of(failed) == {
        "type": "tool_error",
        "message": "401 with [REDACTED]",
        "status": 401,
        "code": "auth",
    }
    uncertain = call_result(EffectUncertainError(f"timeout talking with {secret}"))
    assert uncertain.meta == {"reversi/outcome": "uncertain"}
    assert secret not in uncertain.model_dump_json()
    rejected = call_result(InvalidArgumentsError(f"bad {secret}", problems=[f"args.a: {secret}"]))
    assert secret not in rejected.model_dump_json()


def test_unexpected_errors_are_uncertain_only_for_writes() -> None:
    assert call_result(RuntimeError("x"), writes=True).meta == {"reversi/outcome": "uncertain"}
    read = call_result(RuntimeError("x"), writes=False)
    assert read.meta == {"reversi/outcome": "failed"}
    assert error_of(read)["code"] == "unexpected"
