"""OpenTelemetry spans for calls and compensations, only when a tracer provider is configured.

Nothing here imports OpenTelemetry. :func:`tracing` finds ``opentelemetry.trace`` only if
something in the process imported it already (an SDK set up by
``opentelemetry-instrument`` from the standard ``OTEL_*`` variables, or by the embedding
program, https://opentelemetry.io/docs/zero-code/python/configuration/) and a tracer
provider other than the API's default proxy is set: otherwise every helper is a no-op
that costs a dictionary lookup. Attributes name the run, step, tool, effect and outcome,
never an argument value (nor an exception's message, which may quote one). A W3C
``traceparent`` (``tracestate``) in a carrier (an MCP request's ``_meta``) makes the
span its child (:func:`span`), and :func:`inject` writes the current span's into the
upstream request's ``_meta``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._outcome import CallOutcome
    from .engine import Run

__all__ = [
    "FAILED_OUTCOMES",
    "TRACER_NAME",
    "call_span",
    "end_span",
    "inject",
    "set_outcome",
    "span",
    "tracing",
]

TRACER_NAME = "reversi"


def tracing() -> Any | None:
    """The ``opentelemetry.trace`` module when spans would be recorded, else ``None``."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if type(provider).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider"):
        return None
    return trace


@contextmanager
def span(
    name: str, attributes: Mapping[str, Any], carrier: Mapping[str, Any] | None = None
) -> Iterator[Any | None]:
    """A current span named ``name`` (``None`` when not tracing), child of the context
    in ``carrier`` (``traceparent``) when there is one. Attribute values that are ``None``
    are left out; set more on the yielded span (``span.set_attribute``).

    An exception leaving the block is re-raised and marks the span as failed by its type
    alone (status ``ERROR`` described by the class name, attribute ``error.type`` its
    qualified name): no exception event, no message, no traceback, since a message can
    quote an argument value (the fs connector's quotes the path). OpenTelemetry's default
    records both (https://opentelemetry.io/docs/specs/otel/trace/exceptions/)."""
    trace = tracing()
    if trace is None:
        yield None
        return
    from opentelemetry import propagate  # imported already: the API is loaded

    context = None
    if carrier and isinstance(carrier.get("traceparent"), str):
        context = propagate.extract({k: v for k, v in carrier.items() if isinstance(v, str)})
    tracer = trace.get_tracer(TRACER_NAME)
    clean = {k: v for k, v in attributes.items() if v is not None}
    with tracer.start_as_current_span(
        name,
        context=context,
        attributes=clean,
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except Exception as exc:
            kind = type(exc)
            current.set_attribute("error.type", f"{kind.__module__}.{kind.__qualname__}")
            current.set_status(trace.StatusCode.ERROR, kind.__name__)
            raise


FAILED_OUTCOMES = frozenset({"failed", "uncertain"})
"""The outcomes of a call whose span has status ``ERROR``: it did not (or may not) succeed.
A call refused by policy (``rejected``) is the gateway working as configured: ``UNSET``."""


def set_outcome(current: Any, outcome: str) -> None:
    """Put a call's ``outcome`` (its step's state, or ``rejected``) on its span, and for a
    :data:`FAILED_OUTCOMES` one the status ``ERROR`` described by the outcome alone: never
    the tool's error text, which can quote an argument value."""
    current.set_attribute("reversi.outcome", outcome)
    trace = sys.modules.get("opentelemetry.trace")
    if outcome in FAILED_OUTCOMES and trace is not None:
        current.set_status(trace.StatusCode.ERROR, outcome)


def inject(meta: dict[str, Any]) -> None:
    """Write the current span's ``traceparent`` (and ``tracestate``) into ``meta``; no-op
    when not tracing."""
    if tracing() is None:
        return
    from opentelemetry import propagate

    propagate.inject(meta)


def call_span(run: Run, name: str, meta: Mapping[str, Any] | None) -> Any:
    """The call's OpenTelemetry span (:func:`span`), child of the client's
    ``traceparent`` in ``meta``; attributes run, tool, effect (never an argument).
    ``run`` is the :class:`~reversi_core.engine.Run` the call belongs to, ``name`` the tool."""
    manifest = run.registry.get(name) if name in run.registry else None
    attributes = {
        "reversi.run": run.id,
        "reversi.tool": name,
        "reversi.effect": manifest.effect.value if manifest else None,
    }
    return span("reversi.call", attributes, meta)


def end_span(traced: Any, outcome: CallOutcome) -> None:
    """Put the call's step and outcome on its span (when tracing); a failed or uncertain
    call's span gets status ``ERROR`` (:func:`set_outcome`)."""
    if traced is None:
        return
    if outcome.step is not None:
        traced.set_attribute("reversi.step", outcome.step)
    set_outcome(traced, outcome.state.value if outcome.state is not None else "rejected")
