"""OpenTelemetry spans (``_tracing.py``): a span per compensation and per gateway call,
with run, step, tool, effect and outcome and never an argument value (nor an exception's
message); a client's ``traceparent`` honoured and passed upstream; nothing imported
without it.

The helpers are tested on their own, then end to end: an MCP client in a session with
:func:`~reversi_core.mcp.gateway.serve_gateway` run in this process (so that its spans
reach the in-memory exporter), in front of ``reversi-connectors serve fs``, and the run
rolled back through ``reversi-connectors compensate`` as ``reversi rollback`` does.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.shared.message import SessionMessage
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reversi_core import Registry, Run
from reversi_core._tracing import call_span, end_span, inject, span, tracing
from reversi_core.compensator import CommandCompensator
from reversi_core.connector import compensator_for
from reversi_core.journal import open_journal
from reversi_core.mcp import gateway as gateway_module
from reversi_core.mcp._upstream import UpstreamConnection
from reversi_core.mcp._wire import encode_line
from reversi_core.mcp.gateway import GatewayConfig, load_manifest_dir, serve_gateway

SECRET_ARG = "value-that-must-not-be-an-attribute"
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    yield exporter
    provider.shutdown()


def test_without_a_provider_nothing_is_traced() -> None:
    assert tracing() is None  # the API's default proxy: no SDK configured
    meta: dict[str, Any] = {}
    inject(meta)
    assert meta == {}
    with span("x", {"a": 1}) as current:
        assert current is None


def test_a_rollback_emits_a_span_per_compensation(
    spans: InMemorySpanExporter, make_run: Callable[..., Run], mem: Any
) -> None:
    run = make_run(scope=["mem:write"])

    async def go() -> None:
        await run.call("mem.put", {"key": "a", "value": SECRET_ARG})
        await run.call("mem.put", {"key": "b", "value": SECRET_ARG})
        await run.rollback(compensate=compensator_for([mem]))

    anyio.run(go)
    done = [s for s in spans.get_finished_spans() if s.name == "reversi.compensate"]
    assert sorted(s.attributes["reversi.step"] for s in done) == [1, 2]
    for s in done:
        assert s.attributes["reversi.run"] == run.id
        assert s.attributes["reversi.outcome"] == "ran"
        assert s.attributes["reversi.effect"] == "reversible"
        assert SECRET_ARG not in repr(dict(s.attributes))


def test_a_compensation_out_of_time_is_a_failed_span(
    spans: InMemorySpanExporter, make_run: Callable[..., Run]
) -> None:
    run = make_run(scope=["mem:write"])

    async def too_slow(call: Any) -> dict[str, Any]:
        await anyio.sleep(30)
        return {}

    async def go() -> bool:
        await run.call("mem.put", {"key": "a", "value": SECRET_ARG})
        report = await run.rollback(compensate=too_slow, compensation_timeout=0.2)
        return report.complete

    assert not anyio.run(go)
    (done,) = spans.get_finished_spans()
    assert done.name == "reversi.compensate"
    assert done.attributes is not None
    assert done.attributes["reversi.outcome"] == "failed"
    assert done.attributes["error.type"] == "builtins.TimeoutError"
    assert done.status.status_code is trace.StatusCode.ERROR
    assert SECRET_ARG not in done.to_json()


def test_a_call_span_is_the_child_of_the_clients_traceparent_and_passes_it_upstream(
    spans: InMemorySpanExporter, make_run: Callable[..., Run]
) -> None:
    run = make_run(scope=["mem:write"])
    upstream_meta: dict[str, Any] = {}

    async def go() -> None:
        with call_span(run, "mem.put", {"traceparent": PARENT}) as traced:
            inject(upstream_meta)  # what UpstreamCall does for the upstream request
            outcome = await run.attempt("mem.put", {"key": "a", "value": SECRET_ARG})
            end_span(traced, outcome)

    anyio.run(go)
    (call,) = [s for s in spans.get_finished_spans() if s.name == "reversi.call"]
    assert format(call.context.trace_id, "032x") == PARENT.split("-")[1]
    assert format(call.parent.span_id, "016x") == PARENT.split("-")[2]
    attrs = dict(call.attributes)
    assert attrs == {
        "reversi.run": run.id,
        "reversi.tool": "mem.put",
        "reversi.effect": "reversible",
        "reversi.step": 1,
        "reversi.outcome": "succeeded",
    }
    assert upstream_meta["traceparent"].split("-")[1] == PARENT.split("-")[1]
    assert upstream_meta["traceparent"].split("-")[2] == format(call.context.span_id, "016x")


def test_without_opentelemetry_importable_the_engine_works_and_never_imports_it() -> None:
    code = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        import anyio
        sys.path.insert(0, sys.argv[1])
        from _memconnector import MemConnector
        from reversi_core import Run, registry_for, open_journal
        from reversi_core.connector import compensator_for, executor_for
        import tempfile
        mem = MemConnector()
        with open_journal(tempfile.mkdtemp()) as journal:
            run = Run.start(journal, registry_for([MemConnector]), executor=executor_for([mem]),
                            scope=["mem:write"])
            async def go():
                await run.call("mem.put", {"key": "a", "value": "v"})
                report = await run.rollback(compensate=compensator_for([mem]))
                assert report.complete
            anyio.run(go)
        assert not [m for m in sys.modules if m.startswith("opentelemetry")], "imported"
        print("ok")
        """
    )
    tests = str(Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", code, tests], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# -- through the gateway: a real MCP session, an fs upstream, then a rollback ----------

BIN = Path(sys.executable).parent
CONNECTORS = (
    str(BIN / "reversi-connectors")
    if (BIN / "reversi-connectors").exists()
    else "reversi-connectors"
)
SECRET_DIR = "secret-dir-4f1c9e"  # a path component: an argument value, never an attribute
SECRET_CONTENT = "sk_live_51HfakeCONTENTthatMustNeverLeave"  # the file's content, likewise
SECRET_OLD = "previous-content-7d2a"  # the overwritten file's bytes (in the backup)


def _hex(value: int, width: int) -> str:
    return format(value, f"0{width}x")


@asynccontextmanager
async def gateway_session(
    config: GatewayConfig, errlog: TextIO, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ClientSession]:
    """The MCP SDK's client in a session with :func:`serve_gateway`, run in this process.

    The gateway serves two pipes instead of this process's stdin/stdout (its
    ``stdio_fds`` is replaced by one yielding them), so that its spans reach this
    process's in-memory exporter; the upstream is a real child process.
    """
    to_gateway, client_out = os.pipe()
    client_in, from_gateway = os.pipe()

    @contextmanager
    def pipes() -> Iterator[tuple[int, int]]:
        yield to_gateway, from_gateway

    monkeypatch.setattr(gateway_module, "stdio_fds", pipes)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(client_in, "rb", buffering=0)
    )
    writer, _ = await loop.connect_write_pipe(
        asyncio.Protocol, os.fdopen(client_out, "wb", buffering=0)
    )
    incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_lines() -> None:
        async with incoming:
            while line := await reader.readline():
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                await incoming.send(SessionMessage(message))

    async def write_lines() -> None:
        async with outgoing:
            async for sent in outgoing:
                text = sent.message.model_dump_json(by_alias=True, exclude_unset=True)
                writer.write(text.encode() + b"\n")

    status: list[int] = []

    async def serve() -> None:
        status.append(await serve_gateway(config, errlog=errlog))

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        tg.start_soon(read_lines)
        tg.start_soon(write_lines)
        async with ClientSession(read_stream, write_stream) as client:
            await client.initialize()
            yield client
        writer.close()  # the client leaves: the gateway ends the session, then returns
    assert status == [0]


@pytest.fixture
def upstream_sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every message the gateway writes to its upstream's stdin, as parsed JSON."""
    sent: list[dict[str, Any]] = []
    original = UpstreamConnection._send

    def record(self: UpstreamConnection, message: dict[str, Any]) -> None:
        sent.append(json.loads(encode_line(message)))
        original(self, message)

    monkeypatch.setattr(UpstreamConnection, "_send", record)
    return sent


def _leaks(finished: Any) -> list[str]:
    """The secret argument values found anywhere in a span: name, attributes, events,
    links, status description (its whole JSON form)."""
    text = finished.to_json()
    return [s for s in (SECRET_DIR, SECRET_CONTENT, SECRET_OLD) if s in text]


@pytest.mark.slow
def test_a_gateway_session_traces_each_call_and_its_rollback_each_compensation(
    spans: InMemorySpanExporter,
    upstream_sent: list[dict[str, Any]],
    location: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "root"
    (root / SECRET_DIR).mkdir(parents=True)
    (root / "old.txt").write_text(SECRET_OLD)
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    listed = subprocess.run(
        [CONNECTORS, "manifests", "fs", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (manifests / "fs.json").write_text(listed.stdout)
    config = GatewayConfig(
        registry=load_manifest_dir(manifests),
        journal=location,
        upstream_command=CONNECTORS,
        upstream_args=("serve", "fs", "--root", str(root)),
    )
    secret_path = f"{SECRET_DIR}/notes.txt"
    results: list[types.CallToolResult] = []

    async def session() -> None:
        with (tmp_path / "gateway.err").open("w") as err:
            async with gateway_session(config, err, monkeypatch) as client:
                results.append(
                    await client.call_tool(
                        "fs.write_file",
                        {"path": secret_path, "content": SECRET_CONTENT},
                        meta={"traceparent": PARENT},
                    )
                )
                # no traceparent: a span of its own trace, not the previous call's
                results.append(
                    await client.call_tool("fs.write_file", {"path": "old.txt", "content": "new"})
                )

    anyio.run(session)
    for result in results:
        assert not result.is_error, result.content
        assert result.meta is not None
        assert result.meta["reversi/outcome"] == "succeeded"
    assert (root / secret_path).read_text() == SECRET_CONTENT
    run_id = results[0].meta["reversi/run"] if results[0].meta else None
    assert run_id is not None

    calls = [s for s in spans.get_finished_spans() if s.name == "reversi.call"]
    assert len(calls) == 2, [s.name for s in spans.get_finished_spans()]
    child = [s for s in calls if _hex(s.context.trace_id, 32) == PARENT.split("-")[1]]
    assert len(child) == 1, "exactly one call span is in the client's trace"
    (first,) = child
    (second,) = [s for s in calls if s is not first]
    assert first.parent is not None
    assert first.parent.is_remote
    assert _hex(first.parent.trace_id, 32) == PARENT.split("-")[1]
    assert _hex(first.parent.span_id, 16) == PARENT.split("-")[2]
    assert second.parent is None  # a root span: the first call's context did not linger
    for step, current in ((1, first), (2, second)):
        assert dict(current.attributes or {}) == {
            "reversi.run": run_id,
            "reversi.tool": "fs.write_file",
            "reversi.effect": "reversible",
            "reversi.step": step,
            "reversi.outcome": "succeeded",
        }
        assert not current.events
        assert current.status.description is None
        assert _leaks(current) == []

    # what the upstream was sent: each call's own span as its parent, in its request's _meta
    to_upstream = [m for m in upstream_sent if m.get("method") == "tools/call"]
    assert [m["params"]["arguments"]["path"] for m in to_upstream] == [secret_path, "old.txt"]
    for message, current in zip(to_upstream, (first, second), strict=True):
        version, trace_id, parent_id, _flags = message["params"]["_meta"]["traceparent"].split("-")
        assert version == "00"
        assert trace_id == _hex(current.context.trace_id, 32)
        assert parent_id == _hex(current.context.span_id, 16)

    # the rollback, as `reversi rollback RUN --compensator-cmd ...` runs it; first with
    # the new file changed after the call, so that its compensation fails with a message
    # that quotes its path (fs refuses to delete a change it did not make)
    compensator = CommandCompensator([CONNECTORS, "compensate", "--root", str(root)])

    async def undo() -> bool:
        with open_journal(location) as journal:
            report = await Run.open(journal, Registry({}), run_id).rollback(compensate=compensator)
        return report.complete

    def compensations() -> dict[int, Any]:
        done = spans.get_finished_spans()
        assert [s.name for s in done] == ["reversi.compensate"] * len(done)
        by_step = {s.attributes["reversi.step"]: s for s in done if s.attributes}
        assert len(by_step) == len(done), "one span per compensation"
        spans.clear()
        return by_step

    def check(current: Any, step: int, outcome: str) -> None:
        attrs = dict(current.attributes or {})
        assert attrs.pop("error.type", None) == (
            None if outcome == "ran" else "reversi_core.errors.ToolError"
        )
        assert attrs == {
            "reversi.run": run_id,
            "reversi.step": step,
            "reversi.tool": "fs.restore_file",
            "reversi.effect": "reversible",
            "reversi.outcome": outcome,
        }
        assert not current.events  # no exception event: its message quotes the path
        assert _leaks(current) == []

    spans.clear()
    (root / secret_path).write_text("changed after the call")
    assert not anyio.run(undo)
    first_try = compensations()
    assert sorted(first_try) == [1, 2]
    check(first_try[1], 1, "failed")
    assert first_try[1].status.status_code is trace.StatusCode.ERROR
    assert first_try[1].status.description == "ToolError"
    check(first_try[2], 2, "ran")
    assert first_try[2].status.status_code is trace.StatusCode.UNSET
    assert (root / "old.txt").read_text() == SECRET_OLD

    # the later change undone, the rollback again: step 1 only (step 2 is compensated)
    (root / secret_path).write_text(SECRET_CONTENT)
    assert anyio.run(undo)
    assert not (root / secret_path).exists()
    second_try = compensations()
    assert sorted(second_try) == [1]
    check(second_try[1], 1, "ran")


def test_an_exception_leaving_a_span_is_named_by_its_type_never_its_message(
    spans: InMemorySpanExporter,
) -> None:
    with pytest.raises(KeyError), span("reversi.call", {"reversi.tool": "mem.put"}):
        raise KeyError(SECRET_ARG)  # a message that quotes an argument value
    (done,) = spans.get_finished_spans()
    assert done.status.status_code is trace.StatusCode.ERROR
    assert done.status.description == "KeyError"
    assert dict(done.attributes or {}) == {
        "reversi.tool": "mem.put",
        "error.type": "builtins.KeyError",
    }
    assert not done.events
    assert SECRET_ARG not in done.to_json()


@pytest.mark.parametrize(
    ("fault", "outcome"), [("tool_error", "failed"), ("uncertain", "uncertain")]
)
def test_a_call_that_fails_has_status_error_named_by_its_outcome_alone(
    spans: InMemorySpanExporter, make_run: Callable[..., Run], mem: Any, fault: str, outcome: str
) -> None:
    """A failed (or uncertain) call's span is ``ERROR``, described by the outcome, with
    neither the tool's error text nor an argument value anywhere on the span."""
    run = make_run(scope=["mem:write"])
    mem.fault("mem.put", fault, message=f"could not write {SECRET_ARG}")

    async def go() -> None:
        with call_span(run, "mem.put", None) as traced:
            end_span(traced, await run.attempt("mem.put", {"key": "a", "value": SECRET_ARG}))
        with call_span(run, "mem.put", None) as traced:  # refused by policy: not an error
            end_span(traced, await run.attempt("mem.delete", {"key": "a"}))

    anyio.run(go)
    failed, refused = [s for s in spans.get_finished_spans() if s.name == "reversi.call"]
    assert failed.status.status_code is trace.StatusCode.ERROR
    assert failed.status.description == outcome
    assert dict(failed.attributes)["reversi.outcome"] == outcome
    assert not failed.events
    assert SECRET_ARG not in repr((dict(failed.attributes), failed.status.description))
    assert dict(refused.attributes)["reversi.outcome"] == "rejected"
    assert refused.status.status_code is trace.StatusCode.UNSET
