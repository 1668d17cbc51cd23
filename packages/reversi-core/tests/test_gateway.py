"""reversi-gateway, driven as a subprocess with the mcp stdio client.

The upstream here is ``box``: a tiny connector written for these tests (the script in
``BOX_SCRIPT``), served by :func:`reversi_core.mcp.serve.serve_stdio` exactly as
``reversi-connectors serve`` serves an installed connector. Its files live in a root
directory; a write's text can ask it to misbehave:

* ``!fail``: a definite failure (ToolError), nothing written;
* ``!uncertain``: writes, then reports an uncertain outcome;
* ``!die``: writes, then the upstream process exits mid-call;
* ``!hang``: never answers (writes a marker file ``hang.json`` with its pid and its
  parent's, the gateway's, first).

The same script is the compensator process (``box.py compensate ROOT``) and prints the
manifests (``box.py manifests``). The fs end-to-end test is ``test_gateway_fs.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from reversi_core import SQLiteJournal, StepState
from reversi_core.journal import StepRecord

BIN = Path(sys.executable).parent


def _script(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else name


GATEWAY = _script("reversi-gateway")
REVERSI = _script("reversi")

BOX_SCRIPT = '''
"""The box connector: files under a root; text starting with '!' misbehaves."""
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from reversi_core import (
    CallContext, Compensation, CompensationCall, Connector, EffectUncertainError, ToolError, tool,
)
from reversi_core.manifest import Approval, Effect


class WriteArgs(BaseModel):
    name: str
    text: str


class RestoreArgs(BaseModel):
    name: str
    previous: str | None = None
    existed: bool


class NameArgs(BaseModel):
    name: str


class PublishArgs(BaseModel):
    message: str


class WriteResult(BaseModel):
    previous: str | None
    existed: bool


class NameResult(BaseModel):
    name: str


class TextResult(BaseModel):
    text: str


class PublishResult(BaseModel):
    published: str


RESTORE = Compensation(tool="box.restore", argument_map={
    "name": "args.name", "previous": "result.previous", "existed": "result.existed"})


class Box(Connector):
    name = "box"
    open_world = False

    def __init__(self, root: str) -> None:
        self.root = Path(root)

    @classmethod
    def from_env(cls, environ, **options):
        return cls(options["root"])

    async def _write(self, args: WriteArgs) -> dict[str, Any]:
        if args.text == "!fail":
            raise ToolError("the box is full", status=507, code="full")
        path = self.root / args.name
        existed = path.exists()
        previous = path.read_text() if existed else None
        if args.text == "!hang":
            marker = {"upstream": os.getpid(), "gateway": os.getppid()}
            (self.root.parent / "hang.json").write_text(json.dumps(marker))
            await anyio.sleep(3600)
        path.write_text(args.text)
        if args.text == "!uncertain":
            raise EffectUncertainError("the disk did not confirm the write")
        if args.text == "!die":
            os._exit(3)
        return {"previous": previous, "existed": existed}

    @tool(effect=Effect.REVERSIBLE, permission="box:write", input=WriteArgs, output=WriteResult,
          compensation=RESTORE)
    async def write(self, args: WriteArgs, ctx: CallContext) -> dict[str, Any]:
        """Write a file."""
        return await self._write(args)

    @tool(effect=Effect.REVERSIBLE, permission="box:write", input=WriteArgs, output=WriteResult,
          compensation=RESTORE, approval=Approval.ALWAYS)
    async def guarded_write(self, args: WriteArgs, ctx: CallContext) -> dict[str, Any]:
        """Write a file, once a person approved it."""
        return await self._write(args)

    @tool(effect=Effect.IDEMPOTENT, permission="box:restore", input=RestoreArgs, output=NameResult)
    async def restore(self, args: RestoreArgs, ctx: CallContext) -> dict[str, Any]:
        """Put a file back as it was."""
        path = self.root / args.name
        if args.existed:
            path.write_text(args.previous or "")
        elif path.exists():
            path.unlink()
        return {"name": args.name}

    @tool(effect=Effect.READ_ONLY, permission="box:read", input=NameArgs, output=TextResult)
    async def read(self, args: NameArgs, ctx: CallContext) -> dict[str, Any]:
        """Read a file."""
        if args.name == "!hang":
            await anyio.sleep(3600)
        path = self.root / args.name
        if not path.exists():
            raise ToolError(f"no file {args.name}", code="not_found")
        return {"text": path.read_text()}

    @tool(effect=Effect.READ_ONLY, permission="box:read", input=NameArgs, output=TextResult)
    async def peek(self, args: NameArgs, ctx: CallContext) -> dict[str, Any]:
        """Read a file (the tests leave this one without a manifest)."""
        return {"text": (self.root / args.name).read_text()}

    @tool(effect=Effect.IRREVERSIBLE, permission="box:publish", input=PublishArgs,
          output=PublishResult)
    async def publish(self, args: PublishArgs, ctx: CallContext) -> dict[str, Any]:
        """Publish a message (cannot be undone)."""
        return {"published": args.message}


async def serve_plain(box: Box) -> None:
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from reversi_core.mcp.serve import tool_definition

    # It answers in text only, so it declares no output schema (MCP: a tool that declares
    # one must answer with structuredContent that matches it).
    tools = [tool_definition(m).model_copy(update={"output_schema": None})
             for m in box.manifests()]

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params):
        try:
            result = await box.call(params.name, params.arguments or {})
        except Exception as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))],
                                        is_error=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(result))])

    server = Server("plain", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> int:
    command = sys.argv[1]
    if command == "manifests":
        print(json.dumps([m.to_json() for m in Box.manifests()], indent=2))
        return 0
    box = Box(sys.argv[2])
    if command == "serve":
        from reversi_core.mcp.serve import serve_stdio
        (box.root.parent / "upstream.pid").write_text(str(os.getpid()))
        anyio.run(serve_stdio, box)
        return 0
    if command == "plain":  # an MCP server that does not speak Reversi's outcome convention
        anyio.run(serve_plain, box)
        return 0
    if command == "compensate":
        call = CompensationCall.from_json(json.load(sys.stdin))
        try:
            result = anyio.run(box.call, call.tool, call.args)
        except Exception as exc:
            print(f"{call.tool} failed: {exc}", file=sys.stderr)
            return 1
        print(json.dumps(result))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
'''


# -- fixtures ------------------------------------------------------------------------


class Box:
    """Paths of one test's box upstream: the script, its root, manifests and data."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.script = tmp / "box.py"
        self.script.write_text(textwrap.dedent(BOX_SCRIPT))
        self.root = tmp / "root"
        self.root.mkdir()
        self.manifests = tmp / "manifests"
        self.manifests.mkdir()
        self.data = tmp / "data"
        out = subprocess.run(
            [sys.executable, str(self.script), "manifests"],
            check=True,
            capture_output=True,
            text=True,
        )
        self.all_manifests: list[dict[str, Any]] = json.loads(out.stdout)
        # box.peek stays without a manifest: the gateway must hide it
        self.write_manifests([m for m in self.all_manifests if m["name"] != "box.peek"])
        self.errlogs: list[Path] = []

    def write_manifests(self, manifests: list[dict[str, Any]]) -> None:
        for old in self.manifests.iterdir():
            old.unlink()
        (self.manifests / "box.json").write_text(json.dumps(manifests, indent=2))

    def argv(self, *extra: str) -> list[str]:
        return [
            "--manifests",
            str(self.manifests),
            "--data",
            str(self.data),
            "--upstream-cmd",
            sys.executable,
            "--upstream-arg",
            str(self.script),
            "--upstream-arg",
            "serve",
            "--upstream-arg",
            str(self.root),
            *extra,
        ]

    def compensator(self) -> str:
        return f"{sys.executable} {self.script} compensate {self.root}"

    def stderr(self) -> str:
        return "".join(p.read_text() for p in self.errlogs)

    def steps(self, run_id: str) -> list[StepRecord]:
        with SQLiteJournal.open(self.data, create=False) as journal:
            return journal.list_steps(run_id)


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return Box(tmp_path)


Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]


@asynccontextmanager
async def session(
    box: Box,
    *extra: str,
    elicit: Elicit | None = None,
    name: str = "gateway-test",
    launcher: str | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session with ``reversi-gateway`` in front of ``box``.

    ``launcher``: Python source run with ``python -c`` in place of the console script
    (it patches something, then calls the gateway's ``main``).
    """
    errlog = box.tmp / f"gateway-{len(box.errlogs)}.err"
    box.errlogs.append(errlog)
    command, args = GATEWAY, box.argv(*extra)
    if launcher is not None:
        command, args = sys.executable, ["-c", launcher, *args]
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(
                read,
                write,
                elicitation_callback=elicit,
                client_info=types.Implementation(name=name, version="1"),
            ) as client,
        ):
            await client.initialize()
            yield client


def meta(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None
    return result.meta


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def step(box: Box, result: types.CallToolResult) -> StepRecord:
    m = meta(result)
    steps = {s.seq: s for s in box.steps(m["reversi/run"])}
    return steps[m["reversi/step"]]


# -- listing -------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.req("GW-1")
async def test_lists_only_tools_with_manifests_with_annotations(box: Box) -> None:
    async with session(box) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {
        "box.write",
        "box.guarded_write",
        "box.restore",
        "box.read",
        "box.publish",
    }
    write = tools["box.write"].annotations
    assert write is not None
    assert (write.read_only_hint, write.destructive_hint, write.idempotent_hint) == (
        False,
        True,
        False,
    )
    assert write.open_world_hint is False  # the upstream's own hint (box is a closed domain)
    read = tools["box.read"].annotations
    assert read is not None
    assert (read.read_only_hint, read.destructive_hint, read.idempotent_hint) == (True, False, True)
    restore = tools["box.restore"].annotations
    assert restore is not None
    assert restore.idempotent_hint is True
    assert tools["box.write"].meta is not None
    assert tools["box.write"].meta["reversi/effect"] == "reversible"
    assert tools["box.write"].meta["reversi/permission"] == "box:write"
    assert "hidden (no manifest): box.peek" in box.stderr()


@pytest.mark.anyio
@pytest.mark.req("GW-1", "CALL-1")
async def test_refusals_are_explained_and_journaled_rejected(box: Box) -> None:
    async with session(box) as client:
        hidden = await client.call_tool("box.peek", {"name": "a"})
        unknown = await client.call_tool("nope.tool", {})
        invalid = await client.call_tool("box.write", {"name": "a"})
        # the default scope leaves out compensations (idempotent) and irreversible tools
        restore = await client.call_tool("box.restore", {"name": "a", "existed": False})
        publish = await client.call_tool("box.publish", {"message": "hi"})
    for result, name in ((hidden, "box.peek"), (unknown, "nope.tool")):
        assert f"unknown tool {name!r}" in text(result)
        assert result.structured_content["error"]["code"] == "unknown_tool"
    assert "'text' is a required property" in text(invalid)
    assert invalid.structured_content["error"]["code"] == "invalid_arguments"
    assert "box:restore" in text(restore)
    assert "box:publish" in text(publish)
    results = {
        "box.peek": hidden,
        "nope.tool": unknown,
        "box.write": invalid,
        "box.restore": restore,
        "box.publish": publish,
    }
    for name, result in results.items():
        assert result.is_error
        assert meta(result)["reversi/outcome"] == "rejected"
        record = step(box, result)
        assert record.state is StepState.REJECTED
        assert record.tool == name
    assert [meta(r)["reversi/step"] for r in results.values()] == [1, 2, 3, 4, 5]
    assert not (box.root / "a").exists()


@pytest.mark.anyio
@pytest.mark.req("GW-2")
async def test_drifted_tool_is_reported_listed_and_refused(box: Box) -> None:
    manifests = [m for m in box.all_manifests if m["name"] != "box.peek"]
    for m in manifests:
        if m["name"] == "box.write":
            m["input_schema"]["properties"]["mode"] = {"type": "string"}  # an old manifest
    box.write_manifests(manifests)
    async with session(box) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        refused = await client.call_tool("box.write", {"name": "a", "text": "x"})
        fine = await client.call_tool("box.read", {"name": "missing"})
    assert tools["box.write"].meta is not None
    assert tools["box.write"].meta["reversi/drifted"] is True
    assert "drifted: box.write" in box.stderr()
    assert refused.is_error
    assert "reversi-connectors manifests box" in text(refused)
    assert step(box, refused).state is StepState.REJECTED
    assert not (box.root / "a").exists()
    assert meta(fine)["reversi/outcome"] == "failed"  # other tools still go through


# -- calls ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_write_and_read_through_the_gateway(box: Box) -> None:
    async with session(box) as client:
        first = await client.call_tool("box.write", {"name": "a.txt", "text": "one"})
        second = await client.call_tool(
            "box.write", {"name": "a.txt", "text": "two"}, meta={"reversi/reason": "fix the typo"}
        )
        read = await client.call_tool("box.read", {"name": "a.txt"})
    assert not first.is_error
    assert not read.is_error
    assert first.structured_content == {"previous": None, "existed": False}
    assert second.structured_content == {"previous": "one", "existed": True}
    assert read.structured_content == {"text": "two"}
    assert json.loads(text(read)) == {"text": "two"}
    run_id = meta(first)["reversi/run"]
    assert {meta(r)["reversi/run"] for r in (first, second, read)} == {run_id}
    assert [meta(r)["reversi/step"] for r in (first, second, read)] == [1, 2, 3]
    assert all(meta(r)["reversi/outcome"] == "succeeded" for r in (first, second, read))
    assert (box.root / "a.txt").read_text() == "two"
    steps = box.steps(run_id)
    assert [s.state for s in steps] == [StepState.SUCCEEDED] * 3
    assert steps[1].reason == "fix the typo"
    assert steps[1].compensation == {
        "tool": "box.restore",
        "args": {"name": "a.txt", "previous": "one", "existed": True},
    }
    assert f"run {run_id} started" in box.stderr()


@pytest.mark.anyio
async def test_one_run_per_session_created_when_the_client_initializes(box: Box) -> None:
    async with session(box) as client:
        await client.list_tools()
    async with session(box) as client:
        result = await client.call_tool("box.read", {"name": "x"})
    with SQLiteJournal.open(box.data, create=False) as journal:
        runs = journal.list_runs()
    assert len(runs) == 2
    assert meta(result)["reversi/run"] in {r.id for r in runs}
    assert all(r.label and "gateway-test via reversi-gateway" in r.label for r in runs)


@pytest.mark.anyio
async def test_a_credential_on_the_upstream_command_line_stays_out_of_the_run_label(
    box: Box,
) -> None:
    # credentials belong in the environment; one written on the upstream's command line
    # anyway must not be kept in the journal and shown by `reversi runs` and `reversi show`
    # (the label keeps 200 characters: short paths, so that the arguments fit in them)
    short = Path(tempfile.mkdtemp(prefix="rv", dir="/tmp"))
    try:
        (short / "b.py").symlink_to(box.script)
        (short / "r").symlink_to(box.root)
        token = "ghp_" + uuid.uuid4().hex
        password = "pw-" + uuid.uuid4().hex
        argv = box.argv()
        at = argv.index("--upstream-cmd") + 1
        upstream = [str(short / "b.py"), "serve", str(short / "r"), "--token", token]
        upstream.append(f"postgresql://app:{password}@db:5432/app")
        argv[at + 1 :] = [w for word in upstream for w in ("--upstream-arg", word)]
        params = StdioServerParameters(command=GATEWAY, args=argv, env=dict(os.environ))
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            result = await client.call_tool("box.read", {"name": "x"})
        with SQLiteJournal.open(box.data, create=False) as journal:
            (run,) = journal.list_runs()
    finally:
        shutil.rmtree(short)
    assert run.id == meta(result)["reversi/run"]
    assert run.label is not None
    assert len(run.label) < 200, run.label
    assert token not in run.label, run.label
    assert password not in run.label, run.label
    # what is not a credential stays readable, so the label still says what ran
    assert "--token '[REDACTED]'" in run.label, run.label
    assert "postgresql://app:[REDACTED]@db:5432/app" in run.label, run.label


def test_a_missing_manifests_directory_is_refused_before_the_upstream_starts(box: Box) -> None:
    marker = box.tmp / "started"
    argv = box.argv()
    argv[argv.index("--manifests") + 1] = str(box.tmp / "no-such-dir")
    at = argv.index("--upstream-cmd") + 1
    argv[at + 1 :] = ["--upstream-arg", "-c", "--upstream-arg", f"open({str(marker)!r}, 'w')"]
    proc = subprocess.run([GATEWAY, *argv], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "no-such-dir: does not exist" in proc.stderr
    assert not marker.exists()  # the upstream was never started


@pytest.mark.anyio
async def test_scope_refusal_names_the_missing_permission(box: Box) -> None:
    async with session(box, "--scope", "box:read") as client:
        refused = await client.call_tool("box.write", {"name": "a", "text": "x"})
        allowed = await client.call_tool("box.read", {"name": "a"})
    assert refused.is_error
    assert "box:write" in text(refused)
    assert "--scope box:write" in text(refused)
    assert refused.structured_content["error"]["permission"] == "box:write"
    assert step(box, refused).state is StepState.REJECTED
    assert meta(allowed)["reversi/outcome"] == "failed"  # no such file, but it ran
    assert not (box.root / "a").exists()


@pytest.mark.anyio
@pytest.mark.req("GW-3")
async def test_upstream_failure_and_uncertain_outcome(box: Box) -> None:
    async with session(box) as client:
        failed = await client.call_tool("box.write", {"name": "a", "text": "!fail"})
        uncertain = await client.call_tool("box.write", {"name": "b", "text": "!uncertain"})
    assert meta(failed)["reversi/outcome"] == "failed"
    assert "the box is full" in text(failed)
    assert failed.structured_content["error"]["code"] == "full"
    assert step(box, failed).state is StepState.FAILED
    assert meta(uncertain)["reversi/outcome"] == "uncertain"
    run_id = meta(uncertain)["reversi/run"]
    assert f"reversi resolve {run_id} 2 --applied" in text(uncertain)
    record = step(box, uncertain)
    assert record.state is StepState.UNCERTAIN
    assert "did not confirm" in (record.error or "")


@pytest.mark.anyio
@pytest.mark.req("GW-3")
async def test_an_upstream_error_without_reversi_outcome_is_uncertain_for_a_write(box: Box) -> None:
    argv = box.argv()
    argv[argv.index("serve")] = "plain"
    params = StdioServerParameters(command=GATEWAY, args=argv, env=dict(os.environ))
    with (box.tmp / "plain.err").open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            write_error = await client.call_tool("box.write", {"name": "a", "text": "!fail"})
            read_error = await client.call_tool("box.read", {"name": "missing"})
            fine = await client.call_tool("box.write", {"name": "b", "text": "ok"})
    assert meta(write_error)["reversi/outcome"] == "uncertain"
    assert "the box is full" in text(write_error)
    assert "reversi/outcome" in text(write_error)
    assert step(box, write_error).state is StepState.UNCERTAIN
    assert meta(read_error)["reversi/outcome"] == "failed"
    assert step(box, read_error).state is StepState.FAILED
    assert fine.structured_content == {"content": '{"previous": null, "existed": false}'}
    assert step(box, fine).result == {"content": '{"previous": null, "existed": false}'}


@pytest.mark.anyio
@pytest.mark.req("GW-3")
async def test_upstream_dying_mid_call_is_uncertain_and_the_next_call_works(box: Box) -> None:
    async with session(box) as client:
        died = await client.call_tool("box.write", {"name": "a", "text": "!die"})
        after = await client.call_tool("box.write", {"name": "b", "text": "fine"})
        read = await client.call_tool("box.read", {"name": "a"})
    assert meta(died)["reversi/outcome"] == "uncertain"
    assert "exited or closed the connection" in text(died)
    assert step(box, died).state is StepState.UNCERTAIN
    assert meta(after)["reversi/outcome"] == "succeeded"
    assert step(box, after).state is StepState.SUCCEEDED
    assert read.structured_content == {"text": "!die"}  # the write did happen: hence uncertain
    assert "retired" in box.stderr()


@pytest.mark.anyio
@pytest.mark.req("GW-3")
async def test_no_answer_within_the_call_timeout(box: Box) -> None:
    async with session(box, "--call-timeout", "1") as client:
        started = time.monotonic()
        hung_write = await client.call_tool("box.write", {"name": "a", "text": "!hang"})
        assert time.monotonic() - started < 10
        hung_read = await client.call_tool("box.read", {"name": "!hang"})
        after = await client.call_tool("box.write", {"name": "b", "text": "fine"})
    assert meta(hung_write)["reversi/outcome"] == "uncertain"
    assert "did not answer box.write within 1 s" in text(hung_write)
    assert step(box, hung_write).state is StepState.UNCERTAIN
    assert meta(hung_read)["reversi/outcome"] == "failed"  # a read changes nothing
    assert step(box, hung_read).state is StepState.FAILED
    assert meta(after)["reversi/outcome"] == "succeeded"
    assert (box.root / "b").read_text() == "fine"
    marker = json.loads((box.tmp / "hang.json").read_text())
    with suppress(ProcessLookupError):
        os.kill(marker["upstream"], signal.SIGKILL)


# -- the raw JSON-RPC path ------------------------------------------------------------


class Wire:
    """``reversi-gateway`` in front of ``box``, spoken to in raw JSON-RPC lines."""

    def __init__(self, box: Box, *extra: str) -> None:
        errlog = box.tmp / f"wire-{len(box.errlogs)}.err"
        box.errlogs.append(errlog)
        with errlog.open("w") as err:
            self.proc = subprocess.Popen(
                [GATEWAY, *box.argv(*extra)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        self._pending = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float = 30.0) -> dict[str, Any] | None:
        """The next message, or None when none comes within ``timeout`` seconds.

        Reads the pipe's descriptor itself: several answers can arrive in one chunk, and
        a buffered ``readline`` would hide the rest from ``select``.
        """
        import select

        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return json.loads(line) if line.strip() else None

    def call(self, rid: int, tool: str, args: dict[str, Any]) -> None:
        params = {"name": tool, "arguments": args}
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})

    def initialize(self) -> None:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "wire", "version": "1"},
        }
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params})
        answer = self.recv()
        assert answer is not None
        assert "result" in answer, answer
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)


@pytest.fixture
def wire(box: Box) -> Iterator[Wire]:
    opened = Wire(box)
    yield opened
    if opened.proc.poll() is None:
        opened.proc.kill()
        opened.proc.wait()
    for pipe in (opened.proc.stdin, opened.proc.stdout):
        if pipe is not None:
            with suppress(OSError):
                pipe.close()
    marker = box.tmp / "hang.json"
    if marker.exists():
        with suppress(ProcessLookupError):
            os.kill(json.loads(marker.read_text())["upstream"], signal.SIGKILL)


def test_calls_run_side_by_side_and_a_cancelled_one_is_journaled(box: Box, wire: Wire) -> None:
    wire.initialize()
    wire.call(1, "box.write", {"name": "h", "text": "!hang"})
    wait_for_file(box.tmp / "hang.json")
    for i in range(5):  # answered while the first call hangs
        wire.call(10 + i, "box.write", {"name": f"c{i}", "text": str(i)})
    answers = [wire.recv() for _ in range(5)]
    assert sorted(a["id"] for a in answers if a) == [10, 11, 12, 13, 14]
    assert all(a and a["result"]["_meta"]["reversi/outcome"] == "succeeded" for a in answers)
    cancel = {"requestId": 1, "reason": "the user gave up"}
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    wire.call(20, "box.read", {"name": "c3"})
    after = wire.recv()
    assert after is not None
    assert after["id"] == 20  # no answer for the cancelled call
    assert after["result"]["structuredContent"] == {"text": "3"}
    run_id = after["result"]["_meta"]["reversi/run"]
    assert wire.close() == 0
    steps = box.steps(run_id)
    assert steps[0].tool == "box.write"
    assert steps[0].state is StepState.UNCERTAIN  # a write cut short may have happened
    assert "the client cancelled the call" in (steps[0].error or "")
    assert [s.state for s in steps[1:]] == [StepState.SUCCEEDED] * 6


@pytest.mark.req("CALL-4")
def test_a_read_the_client_cancels_is_journaled_failed_and_not_answered(
    box: Box, wire: Wire
) -> None:
    # reads are served from the event loop's callbacks, without a task (docs/gateway.md)
    wire.initialize()
    wire.call(1, "box.read", {"name": "!hang"})
    time.sleep(0.5)  # the read hangs in the upstream
    cancel = {"requestId": 1, "reason": "the user gave up"}
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    wire.call(2, "box.write", {"name": "a", "text": "one"})
    answers = [wire.recv()]
    wire.call(3, "box.read", {"name": "a"})
    answers.append(wire.recv())
    assert [a and a["id"] for a in answers] == [2, 3]  # none for the cancelled read
    assert answers[1]
    assert answers[1]["result"]["structuredContent"] == {"text": "one"}
    assert wire.recv(timeout=0.2) is None
    run_id = answers[1]["result"]["_meta"]["reversi/run"]
    assert wire.close() == 0
    steps = box.steps(run_id)
    assert [(s.seq, s.state) for s in steps] == [
        (1, StepState.FAILED),  # a read changes nothing: never uncertain
        (2, StepState.SUCCEEDED),
        (3, StepState.SUCCEEDED),
    ]
    assert steps[0].error == "unexpected error: CancelledError: the client cancelled the call"


def test_a_call_in_flight_when_the_client_leaves_is_journaled(box: Box, wire: Wire) -> None:
    wire.initialize()
    wire.call(1, "box.read", {"name": "!hang"})
    time.sleep(0.5)
    assert wire.proc.stdin is not None
    wire.proc.stdin.close()
    answer = wire.recv()
    assert answer is not None
    assert answer["error"]["message"] == "Connection closed"
    assert wire.proc.wait(timeout=60) == 0
    with SQLiteJournal.open(box.data, create=False) as journal:
        (run,) = journal.list_runs()
        (read,) = journal.list_steps(run.id)
    assert read.state is StepState.FAILED  # a read changes nothing
    assert "the client closed the connection" in (read.error or "")


def test_requests_the_raw_path_does_not_take_get_the_sdk_answers(wire: Wire) -> None:
    wire.call(1, "box.read", {"name": "a"})  # before the handshake
    assert (wire.recv() or {}).get("error", {}).get("code") == -32602
    wire.initialize()
    wire.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "box.read", "arguments": ["a"]},
        }
    )
    assert (wire.recv() or {}).get("error", {}).get("code") == -32602
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": "box.read", "arguments": {"name": "a"}, "_meta": envelope}
    wire.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params})
    assert (wire.recv() or {}).get("error", {}).get("code") == -32600  # not on this connection
    wire.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {}}})
    assert (wire.recv() or {}).get("error", {}).get("code") == -32602
    wire.call(5, "box.write", {"name": "a", "text": "fine"})
    fine = wire.recv()
    assert fine is not None
    assert fine["result"]["_meta"]["reversi/outcome"] == "succeeded"
    assert fine["result"]["_meta"]["reversi/step"] == 1
    assert wire.close() == 0


JOURNAL_FAILS_LAUNCHER = """
import sqlite3
import sys
from reversi_core.errors import JournalError
from reversi_core.journal._deferred import DeferredSteps
from reversi_core.journal.sqlite import SQLiteJournal

def fail(self, *args, **kwargs):
    raise JournalError("disk full (injected by the test)")

def fail_deferred(c, items, *heads):  # the reads' records, written after their answers
    raise sqlite3.OperationalError("disk full (injected by the test)")

SQLiteJournal.finish_step = fail
SQLiteJournal.record_step = fail
DeferredSteps.write = staticmethod(fail_deferred)
from reversi_core.cli.gateway import main
sys.exit(main())
"""


@pytest.mark.anyio
async def test_an_outcome_that_cannot_be_journaled(box: Box) -> None:
    async with session(box, launcher=JOURNAL_FAILS_LAUNCHER) as client:
        wrote = await client.call_tool("box.write", {"name": "a.txt", "text": "one"})
        read = await client.call_tool("box.read", {"name": "a.txt"})
    # the write ran: its outcome is unknown to the journal, so it is uncertain, not failed
    assert (box.root / "a.txt").read_text() == "one"
    assert wrote.is_error
    assert meta(wrote)["reversi/outcome"] == "uncertain"
    assert meta(wrote)["reversi/step"] == 1
    assert "was carried out, but its outcome could not be journaled" in text(wrote)
    assert "disk full (injected by the test)" in text(wrote)
    # the read was answered before it was to be journaled; the lost record is logged
    assert not read.is_error
    assert read.structured_content == {"text": "one"}
    [lost] = [line for line in box.stderr().splitlines() if "error: box.read" in line]
    assert lost.startswith("reversi-gateway: error: box.read: step 2: journal ")
    assert lost.endswith("OperationalError: disk full (injected by the test)")
    states = {s.seq: s.state for s in box.steps(meta(wrote)["reversi/run"])}
    assert states == {1: StepState.UNCERTAIN}  # found on reopen; the read's record is lost


@pytest.mark.req("CALL-4")
def test_a_read_is_answered_once_and_its_outcome_journaled_after(box: Box, wire: Wire) -> None:
    # A read's answer leaves before its outcome is journaled (docs/performance.md): each
    # read must still get exactly one answer and a complete journal row.
    wire.initialize()
    wire.call(1, "box.write", {"name": "a", "text": "one"})
    assert (wire.recv() or {})["result"]["_meta"]["reversi/outcome"] == "succeeded"
    for rid in range(2, 12):
        wire.call(rid, "box.read", {"name": "a"})
        answer = wire.recv()
        assert answer is not None
        assert answer["id"] == rid
        assert answer["result"]["structuredContent"] == {"text": "one"}
        assert answer["result"]["_meta"]["reversi/step"] == rid
    wire.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    assert wire.recv() == {"jsonrpc": "2.0", "id": "p", "result": {}}  # no second answers
    assert wire.recv(timeout=0.2) is None
    assert wire.close() == 0
    with SQLiteJournal.open(box.data, create=False) as journal:
        (run,) = journal.list_runs()
        steps = journal.list_steps(run.id)
    assert [s.state for s in steps] == [StepState.SUCCEEDED] * 11
    assert all(s.result == {"text": "one"} for s in steps[1:])


def test_an_upstream_that_died_between_calls_is_replaced_first(box: Box, wire: Wire) -> None:
    wire.initialize()
    wire.call(1, "box.write", {"name": "a", "text": "one"})
    assert (wire.recv() or {})["result"]["_meta"]["reversi/outcome"] == "succeeded"
    pid = int((box.tmp / "upstream.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:  # until the gateway noticed (and reaped it)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    wire.call(2, "box.write", {"name": "b", "text": "two"})
    answer = wire.recv()
    assert answer is not None
    assert answer["result"]["_meta"]["reversi/outcome"] == "succeeded"  # never sent to the dead one
    assert (box.root / "b").read_text() == "two"
    assert int((box.tmp / "upstream.pid").read_text()) != pid
    assert wire.close() == 0
    assert "retired (it exited)" in box.stderr()


@pytest.mark.anyio
async def test_a_2026_client_is_served_on_the_raw_path(box: Box) -> None:
    from mcp.client.client import Client

    errlog = box.tmp / "modern-raw.err"
    box.errlogs.append(errlog)
    params = StdioServerParameters(command=GATEWAY, args=box.argv(), env=dict(os.environ))
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err)) as client:
            assert client.protocol_version == "2026-07-28"
            first = await client.call_tool(
                "box.write", {"name": "m", "text": "modern"}, meta={"reversi/reason": "a test"}
            )
            read = await client.call_tool("box.read", {"name": "m"})
            missing = await client.call_tool("box.read", {"name": "nothing"})
    assert first.structured_content == {"previous": None, "existed": False}
    assert read.structured_content == {"text": "modern"}
    assert meta(missing)["reversi/outcome"] == "failed"
    assert meta(first)["io.modelcontextprotocol/serverInfo"]["name"] == "reversi-gateway"
    run_id = meta(first)["reversi/run"]
    steps = box.steps(run_id)
    assert [s.state for s in steps] == [StepState.SUCCEEDED] * 2 + [StepState.FAILED]
    assert steps[0].reason == "a test"
    with SQLiteJournal.open(box.data, create=False) as journal:
        (run,) = journal.list_runs()
    assert run.label is not None
    assert run.label.startswith("mcp via reversi-gateway")


def test_stdio_that_is_not_a_pipe(box: Box) -> None:
    requests = box.tmp / "requests.jsonl"
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "file", "version": "1"},
    }
    call = {"name": "box.read", "arguments": {"name": "a"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
    ]
    requests.write_text("".join(json.dumps(m) + "\n" for m in lines))
    answers = box.tmp / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            [GATEWAY, *box.argv()], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=60
        )
    assert done.returncode == 0, done.stderr
    lines_out = answers.read_text().splitlines()
    got = {m["id"]: m for m in map(json.loads, lines_out)}
    assert sorted(got) == [1, 2]
    assert len(lines_out) == 2  # one answer each (in any order)
    assert got[1]["result"]["serverInfo"]["name"] == "reversi-gateway"
    # the end of the file ends the session at once: the call is answered, not served
    assert got[2]["error"]["message"] == "Connection closed"


# -- approval ------------------------------------------------------------------------


def answering(result: types.ElicitResult, seen: list[str]) -> Elicit:
    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        seen.append(params.message)
        return result

    return elicit


@pytest.mark.anyio
async def test_approval_by_elicitation_accepted(box: Box) -> None:
    seen: list[str] = []
    accept = answering(
        types.ElicitResult(action="accept", content={"approve": True, "note": "ok by me"}), seen
    )
    async with session(box, elicit=accept, name="desk") as client:
        result = await client.call_tool(
            "box.guarded_write",
            {"name": "g", "text": "approved"},
            meta={"reversi/reason": "needed"},
        )
    assert meta(result)["reversi/outcome"] == "succeeded"
    assert (box.root / "g").read_text() == "approved"
    assert len(seen) == 1
    assert "box.guarded_write" in seen[0]
    assert "needed" in seen[0]
    record = step(box, result)
    assert record.approval == {"approved": True, "by": "the user via desk", "note": "ok by me"}


@pytest.mark.anyio
async def test_approval_by_elicitation_denied(box: Box) -> None:
    answers = [
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
        types.ElicitResult(action="accept", content={"approve": False, "note": "not now"}),
    ]
    seen: list[str] = []

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        return answers[len(seen) - 1]

    async with session(box, elicit=elicit) as client:
        results = [
            await client.call_tool("box.guarded_write", {"name": "g", "text": "no"})
            for _ in answers
        ]
    assert len(seen) == 3
    notes = []
    for result in results:
        assert result.is_error
        assert meta(result)["reversi/outcome"] == "rejected"
        assert "needs approval" in text(result)
        assert result.structured_content["error"]["code"] == "approval_denied"
        record = step(box, result)
        assert record.state is StepState.REJECTED
        assert record.approval is not None
        assert record.approval["approved"] is False
        notes.append(record.approval["note"])
    assert notes == ["declined", "cancelled", "not now"]
    assert not (box.root / "g").exists()


@pytest.mark.anyio
async def test_approval_without_elicitation_capability_is_refused_with_a_way_out(box: Box) -> None:
    async with session(box) as client:
        result = await client.call_tool("box.guarded_write", {"name": "g", "text": "no"})
    assert result.is_error
    assert "elicitation" in text(result)
    assert "--approve box.guarded_write" in text(result)
    record = step(box, result)
    assert record.state is StepState.REJECTED
    assert record.approval is not None
    assert record.approval["approved"] is False
    assert not (box.root / "g").exists()


@pytest.mark.anyio
async def test_approval_given_in_advance_on_the_command_line(box: Box) -> None:
    async with session(box, "--approve", "box.guarded_write") as client:
        result = await client.call_tool("box.guarded_write", {"name": "g", "text": "yes"})
    assert meta(result)["reversi/outcome"] == "succeeded"
    record = step(box, result)
    assert record.approval is not None
    assert record.approval["approved"] is True
    assert "--approve" in record.approval["by"]


@pytest.mark.anyio
async def test_approval_on_a_2026_connection_goes_through_input_required(box: Box) -> None:
    from mcp.client.client import Client

    answers = [
        types.ElicitResult(action="accept", content={"approve": True, "note": "go"}),
        types.ElicitResult(action="decline"),
    ]
    seen: list[str] = []

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        return answers[len(seen) - 1]

    errlog = box.tmp / "modern.err"
    box.errlogs.append(errlog)
    params = StdioServerParameters(command=GATEWAY, args=box.argv(), env=dict(os.environ))
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err), elicitation_callback=elicit) as client:
            assert (
                client.protocol_version == "2026-07-28"
            )  # no initialize: requests carry an envelope
            accepted = await client.call_tool("box.guarded_write", {"name": "g", "text": "yes"})
            declined = await client.call_tool("box.guarded_write", {"name": "h", "text": "no"})
            # refused by scope before anyone is asked
            publish = await client.call_tool("box.publish", {"message": "hi"})
    assert len(seen) == 2
    assert meta(accepted)["reversi/outcome"] == "succeeded"
    assert (box.root / "g").read_text() == "yes"
    assert step(box, accepted).approval == {
        "approved": True,
        "by": "the user via mcp",
        "note": "go",
    }
    assert meta(declined)["reversi/outcome"] == "rejected"
    record = step(box, declined)
    assert record.approval is not None
    assert record.approval["note"] == "declined"
    assert not (box.root / "h").exists()
    assert "box:publish" in text(publish)
    assert [s.seq for s in box.steps(meta(accepted)["reversi/run"])] == [1, 2, 3]


# -- start-up errors -------------------------------------------------------------------


def test_command_line_defaults_match_the_library(tmp_path: Path) -> None:
    from reversi_core.cli import gateway as cli
    from reversi_core.mcp import gateway as lib

    assert cli.DEFAULT_CALL_TIMEOUT == lib.DEFAULT_CALL_TIMEOUT
    assert cli.DEFAULT_START_TIMEOUT == lib.DEFAULT_START_TIMEOUT
    assert cli.DEFAULT_MAX_MESSAGE_BYTES == lib.DEFAULT_MAX_MESSAGE_BYTES
    from reversi_core.cli import connectors

    serve = connectors.build_parser().parse_args(["serve", "fs"])
    assert serve.max_message_bytes == lib.DEFAULT_MAX_MESSAGE_BYTES
    args = cli.parse_args(
        [
            "--manifests",
            str(tmp_path),  # checked to be a directory before the upstream starts
            "--upstream-cmd",
            "srv",
            "--upstream-arg",
            "--root",
            "--upstream-arg",
            "-x",
            "--scope",
            "a:b",
        ]
    )
    assert args.upstream_arg == ["--root", "-x"]
    assert args.scope == ["a:b"]


def _run_gateway(
    box: Box, *extra: str, argv: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GATEWAY, *(argv if argv is not None else box.argv(*extra))],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ("no_compensation", "box.write: effect reversible needs a compensation"),
        ("bad_json", "cannot read"),
        ("empty", "no *.json, *.yaml or *.yml files"),
        ("not_a_list", "must hold a list of manifest objects"),
    ],
)
def test_invalid_manifests_stop_the_gateway_with_status_2(
    box: Box, change: str, needle: str
) -> None:
    target = box.manifests / "box.json"
    if change == "no_compensation":
        manifests = [dict(m) for m in box.all_manifests]
        for m in manifests:
            if m["name"] == "box.write":
                m["compensation"] = None
        box.write_manifests(manifests)
    elif change == "bad_json":
        target.write_text("[{")
    elif change == "empty":
        target.unlink()
    else:
        target.write_text(json.dumps([1, 2]))
    done = _run_gateway(box)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("reversi-gateway: error:")
    assert needle in lines[0]
    if change == "no_compensation":
        assert "box.json" in lines[0]


def test_yaml_manifests_are_read(box: Box) -> None:
    import yaml

    (box.manifests / "box.json").unlink()
    (box.manifests / "box.yaml").write_text(yaml.safe_dump(box.all_manifests))
    done = _run_gateway(box, "--scope", "box:nothing")
    assert done.returncode == 2
    assert "--scope box:nothing: no manifest needs this permission" in done.stderr


def test_bad_command_line_values_exit_2(box: Box) -> None:
    assert "does not ask for approval" in _run_gateway(box, "--approve", "box.write").stderr
    assert "no manifest declares" in _run_gateway(box, "--approve", "box.nothing").stderr
    assert _run_gateway(box, "--call-timeout", "0").returncode == 2
    assert _run_gateway(box, argv=["--manifests", str(box.manifests)]).returncode == 2


def test_an_upstream_that_cannot_start_exits_1(box: Box) -> None:
    argv = box.argv()
    argv[argv.index("--upstream-cmd") + 1] = str(box.tmp / "no-such-server")
    done = _run_gateway(box, argv=argv)
    assert done.returncode == 1
    assert "could not be started" in done.stderr


# -- crashes, resolution and rollback --------------------------------------------------


def wait_for_file(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear within {timeout} s"
        time.sleep(0.01)


def _reversi(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REVERSI, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.anyio
@pytest.mark.req("GW-4", "JNL-1")
async def test_gateway_killed_mid_call_leaves_an_uncertain_step(box: Box) -> None:
    marker = box.tmp / "hang.json"
    outcome: dict[str, Any] = {}
    async with session(box) as client:
        done = await client.call_tool("box.write", {"name": "a", "text": "kept"})
        run_id = meta(done)["reversi/run"]

        async def hang() -> None:
            try:
                outcome["result"] = await client.call_tool(
                    "box.write", {"name": "b", "text": "!hang"}
                )
            except Exception as exc:  # the gateway is gone: the connection closes
                outcome["error"] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(hang)
            await anyio.to_thread.run_sync(wait_for_file, marker)
            pids = json.loads(marker.read_text())
            os.kill(pids["gateway"], signal.SIGKILL)
    with suppress(ProcessLookupError):
        os.kill(pids["upstream"], signal.SIGKILL)
    assert "error" in outcome
    steps = box.steps(run_id)  # opening the journal turns the orphaned pending step uncertain
    assert [s.state for s in steps] == [StepState.SUCCEEDED, StepState.UNCERTAIN]
    assert "stopped before recording" in (steps[1].error or "")

    shown = _reversi("show", run_id, "--data", str(box.data))
    assert shown.returncode == 0, shown.stderr
    assert "uncertain" in shown.stdout
    incomplete = _reversi(
        "rollback", run_id, "--data", str(box.data), "--compensator-cmd", box.compensator()
    )
    assert incomplete.returncode == 1, incomplete.stdout + incomplete.stderr
    resolved = _reversi("resolve", run_id, "2", "--not-applied", "--data", str(box.data))
    assert resolved.returncode == 0, resolved.stderr
    complete = _reversi(
        "rollback", run_id, "--data", str(box.data), "--compensator-cmd", box.compensator()
    )
    assert complete.returncode == 0, complete.stdout + complete.stderr
    assert not (box.root / "a").exists()


@pytest.mark.anyio
@pytest.mark.req("CALL-10")
async def test_rollback_of_a_gateway_run_and_calls_after_it(box: Box) -> None:
    (box.root / "kept.txt").write_text("original")
    async with session(box) as client:
        first = await client.call_tool("box.write", {"name": "kept.txt", "text": "changed"})
        await client.call_tool("box.write", {"name": "new.txt", "text": "new"})
        run_id = meta(first)["reversi/run"]
        rolled = _reversi(
            "rollback", run_id, "--data", str(box.data), "--compensator-cmd", box.compensator()
        )
        assert rolled.returncode == 0, rolled.stdout + rolled.stderr
        after = await client.call_tool("box.write", {"name": "late.txt", "text": "late"})
    assert (box.root / "kept.txt").read_text() == "original"
    assert not (box.root / "new.txt").exists()
    assert after.is_error
    assert "rolled back" in text(after)
    assert not (box.root / "late.txt").exists()
    again = _reversi(
        "rollback", run_id, "--data", str(box.data), "--compensator-cmd", box.compensator()
    )
    assert again.returncode == 0


@pytest.mark.anyio
@pytest.mark.req("GW-2", "CALL-10")
async def test_after_a_rollback_a_drifted_tool_is_refused_as_rolled_back_not_journaled(
    box: Box,
) -> None:
    # The bug of issue 10: a drifted tool was refused by a path of its own that journaled a
    # new rejected step in the rolled-back run and answered "drifted".
    manifests = [m for m in box.all_manifests if m["name"] != "box.peek"]
    for m in manifests:
        if m["name"] == "box.write":
            m["input_schema"]["properties"]["mode"] = {"type": "string"}
    box.write_manifests(manifests)
    async with session(box) as client:
        drifted_before = await client.call_tool("box.write", {"name": "a", "text": "x"})
        run_id = meta(drifted_before)["reversi/run"]
        assert drifted_before.structured_content["error"]["code"] == "drifted"
        rolled = _reversi(
            "rollback", run_id, "--data", str(box.data), "--compensator-cmd", box.compensator()
        )
        assert rolled.returncode == 0, rolled.stdout + rolled.stderr
        drifted = await client.call_tool("box.write", {"name": "a", "text": "x"})
        other = await client.call_tool("box.read", {"name": "a"})
    for result in (drifted, other):
        assert result.is_error
        assert "rolled back" in text(result)
        assert result.structured_content["error"]["code"] == "run_closed"
        assert "reversi/step" not in meta(result)
    assert [s.seq for s in box.steps(run_id)] == [1]  # only the refusal before the rollback


@pytest.mark.anyio
@pytest.mark.req("JNL-5")
async def test_a_gateway_and_a_rollback_share_the_data_directory(box: Box) -> None:
    async with session(box) as client:
        earlier = await client.call_tool("box.write", {"name": "old.txt", "text": "old"})
    old_run = meta(earlier)["reversi/run"]
    outcome: dict[str, subprocess.CompletedProcess[str]] = {}

    def rollback() -> None:
        outcome["rollback"] = _reversi(
            "rollback", old_run, "--data", str(box.data), "--compensator-cmd", box.compensator()
        )

    results: list[types.CallToolResult] = []
    async with session(box) as client, anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, rollback)
        while "rollback" not in outcome or len(results) < 20:  # calls all through the rollback
            i = len(results)
            results.append(
                await client.call_tool("box.write", {"name": f"n{i}.txt", "text": str(i)})
            )
    done = outcome["rollback"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(meta(r)["reversi/outcome"] == "succeeded" for r in results)
    assert not (box.root / "old.txt").exists()
    expected = sorted(f"n{i}.txt" for i in range(len(results)))
    assert sorted(p.name for p in box.root.iterdir()) == expected
