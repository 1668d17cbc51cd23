"""OpenTelemetry spans (``_tracing.py``): a span per compensation and per gateway call,
with run, step, tool, effect and outcome and never an argument value; a client's
``traceparent`` honoured and passed upstream; nothing imported without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reversi_core import Run
from reversi_core._tracing import inject, span, tracing
from reversi_core.connector import compensator_for
from reversi_core.mcp.gateway import call_span, end_span

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
    from pathlib import Path

    tests = str(Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", code, tests], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
