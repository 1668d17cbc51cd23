"""The gateway: an MCP server (stdio) in front of an upstream MCP server it starts.

One downstream session is one :class:`~reversi_core.engine.Run`. A ``tools/call`` passes
through these modules, in this order, and its answer comes back the same way::

    client ──line──> _wire.LineReader ──> _downstream.Downstream (screened; raw or SDK)
      ──> Gateway.relay_call ──> Run.attempt (refusals, approval, journal)
      ──> _policy.UpstreamCall ──> _upstream.UpstreamConnection ──line──> upstream
    client <──line── _coding.call_tool_result <── Run.attempt's outcome <────┘

* :mod:`._wire`: JSON-RPC lines over pipes and the framing rules (every mistake answered);
* :mod:`._downstream`: the client's side; steady ``tools/call`` requests are served on a
  raw path of parsed JSON, the rest of the protocol by the MCP SDK's server;
* this module: the session (:class:`Gateway`, one run) and :func:`serve_gateway`;
* the engine (:meth:`reversi_core.engine.Run.attempt`) owns every refusal (unknown,
  withheld, outside the scope, invalid, denied approval, run rolled back) and the
  journal; :mod:`._approval` is its approver (elicitation, ``input_required``);
* :mod:`._policy`: forwarding the call and reading what the upstream's answer means;
* :mod:`._upstream`: the upstream process and its supervisor (restart after a failure);
* :mod:`._coding`: the outcome as the client's ``CallToolResult``;
* :mod:`._tools`: the manifests read and the tools listed or withheld (drift).

Every downstream result carries ``_meta`` ``reversi/run``, ``reversi/step`` (when a
step was journaled) and ``reversi/outcome`` (``succeeded``, ``failed``, ``uncertain`` or
``rejected``). See ``docs/gateway.md``, "How a call flows".
"""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

from ..__about__ import __version__
from .._tracing import call_span, end_span, tracing
from ..engine import CallOutcome, Run
from ..errors import EffectUncertainError, JournalError, ReversiError, ToolError
from ..journal import Durability, Journal, StepRecord, describe_location, open_journal
from ..journal._open import is_url
from ..manifest import Approval
from ..registry import Registry
from ._approval import Approvals, ConsoleQueue, client_name, declares_elicitation, modern
from ._coding import REASON_META, RUN_META, STEP_META, call_tool_result, unjournaled_result
from ._downstream import Downstream
from ._link import Link, Supervisor, make_upstream
from ._messages import PROG, say
from ._policy import UpstreamCall
from ._tools import ToolIndex, load_manifest_dir
from ._upstream import (
    DEFAULT_START_TIMEOUT,
    UpstreamClosed,
    UpstreamConnection,
    UpstreamError,
    spawn_upstream,
    stop_process,
)
from ._wire import DEFAULT_MAX_MESSAGE_BYTES, LineReader, connect_reader, connect_writer, stdio_fds

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_START_TIMEOUT",
    "REASON_META",
    "RUN_META",
    "STEP_META",
    "Gateway",
    "GatewayConfig",
    "UpstreamError",
    "load_manifest_dir",
    "open_writable_journal",
    "serve_gateway",
    "spawn_upstream",
]

DEFAULT_CALL_TIMEOUT = 120.0
"""Seconds the gateway waits for the upstream's answer to one call."""

READ_RECORDS_DELAY = 0.02
"""Seconds a read-only step's record may wait, after its answer, to be journaled in one
commit with others (:meth:`~reversi_core.engine.Run.defer_read_records`)."""


@dataclass(frozen=True)
class GatewayConfig:
    """Everything the gateway needs, as parsed by ``reversi-gateway``.

    ``journal`` is the journal's location, as :func:`~reversi_core.journal.open_journal`
    takes it: a data directory or a ``postgresql://`` URL (never shown: it may carry a
    password). ``scope`` ``None`` means the registry's default scope. ``pre_approved`` lists tools
    whose ``approval: always`` calls are approved in advance (``--approve TOOL``).
    Timeouts are in seconds; ``max_message_bytes`` is the longest line accepted from
    the client. ``upstream_url`` (with its credentials in ``upstream_headers`` and the
    CA bundle ``upstream_ca_file``) replaces the upstream command: streamable HTTP.
    ``tool_namespace`` ``NS`` serves an upstream whose tool names have no connector
    prefix: its tool ``T`` (so named to the client too) is the manifests' ``NS.T``.
    ``approval_timeout`` (seconds; ``--approval-timeout``) makes a call whose client
    cannot be asked wait that long for a decision on ``reversi console``.
    """

    registry: Registry
    journal: str
    upstream_command: str = ""
    upstream_args: tuple[str, ...] = ()
    scope: frozenset[str] | None = None
    durability: Durability = Durability.PROCESS
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT
    pre_approved: frozenset[str] = frozenset()
    upstream_env: Mapping[str, str] | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    upstream_url: str | None = None
    upstream_headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    upstream_ca_file: str | None = None
    tool_namespace: str | None = None
    approval_timeout: float | None = None

    @property
    def upstream_argv(self) -> list[str]:
        """The upstream command line."""
        return [self.upstream_command, *self.upstream_args]


def started_message(run_id: str, journal: str) -> str:
    """What the gateway says when its run starts: where it is journaled, how to undo it.

    A data directory is named as given; a URL by its host, port and database only, and
    the command to undo the run says ``--journal URL`` (the URL is never printed).
    """
    if is_url(journal):
        return (
            f"run {run_id} started (journal {describe_location(journal)}); undo it with "
            f"'reversi rollback {run_id} --journal URL', URL being this gateway's journal URL"
        )
    return f"run {run_id} started (data {journal}); undo it with 'reversi rollback {run_id} --data {journal}'"


class Gateway:
    """The downstream MCP server around one lazily started :class:`Run`.

    :meth:`relay_call` serves a ``tools/call`` given as parsed JSON; :meth:`build_server`
    is the SDK server for the rest of the protocol, whose ``tools/call`` handler serves
    the calls that need a person's approval. Both hand the call to :meth:`Run.attempt`
    with an :class:`~._policy.UpstreamCall` as its executor, and answer with
    :func:`~._coding.call_tool_result`.
    """

    def __init__(
        self,
        config: GatewayConfig,
        journal: Journal,
        upstream: Supervisor,
        index: ToolIndex,
        *,
        errlog: TextIO | None = None,
    ) -> None:
        self.config = config
        self.registry = config.registry
        self.journal = journal
        self.upstream = upstream
        self.index = index
        self._errlog = errlog or sys.stderr
        self._run: Run | None = None
        self._writes = {m.name: m.writes for m in self.registry}
        self._asks = {m.name for m in self.registry if m.approval is Approval.ALWAYS}
        self._asks -= config.pre_approved
        # --tool-namespace NS: the upstream's (and the client's) tool T is the manifests' NS.T
        self._prefix = f"{config.tool_namespace}." if config.tool_namespace else ""
        console = None
        if config.approval_timeout is not None:
            console = ConsoleQueue(
                journal, config.approval_timeout, say=lambda line: say(line, self._errlog)
            )
        self._approvals = Approvals(self.registry, config.pre_approved, console)
        self._listing = types.ListToolsResult(tools=index.listed)
        # by the names the client calls them (the manifests' without the namespace)
        self._inline = frozenset(
            m.name.removeprefix(self._prefix)
            for m in self.registry
            if m.approval is not Approval.ALWAYS and m.name.startswith(self._prefix)
        )
        upstream.on_connect.append(self._reindex)

    @property
    def asks(self) -> frozenset[str]:
        """Tools whose calls need a person's approval (served through the SDK), by the
        names the client calls them."""
        return frozenset(n.removeprefix(self._prefix) for n in self._asks)

    @property
    def inline(self) -> frozenset[str]:
        """Tools that need nobody's approval (:meth:`relay_now` serves them), by the names
        the client calls them."""
        return self._inline

    # -- the run ---------------------------------------------------------------------

    @property
    def run(self) -> Run | None:
        """The session's run, once the client initialized or called a tool."""
        return self._run

    def ensure_run(self, client: str | None = None) -> Run:
        """The session's run, journaled now if it is not yet."""
        if self._run is None:
            self._run = self.start_run(client)
        return self._run

    def start_run(self, client: str | None, how: str = "") -> Run:
        """Journal a new run for ``client`` (``how``: the connection, for its label) and
        say its id on stderr."""
        label = f"{client or 'MCP client'}{how} via {PROG} -> {self.upstream.description}"
        run = Run.start(
            self.journal,
            self.registry,
            scope=self.config.scope,
            approver=self._approvals.in_advance,
            label=label[:200],
        )
        run.withheld = self.index.withheld
        run.defer_read_records(READ_RECORDS_DELAY, self._lost_record)
        say(started_message(run.id, self.config.journal), self._errlog)
        return run

    def run_for(self, ctx: ServerRequestContext[Any]) -> Run:
        """The run a request the SDK serves belongs to: over stdio, the session's one run."""
        return self._run or self.ensure_run(client_name(ctx))

    def _reindex(self, conn: Link) -> None:
        if conn.generation == 1:
            return  # the index the gateway was built with
        index = ToolIndex.build(self.registry, conn.tools, self.config.tool_namespace)
        for name in index.drifted:
            if name not in self.index.drifted:
                say(f"drifted after restart: {index.withheld[name].reason}", self._errlog)
        self.index.withheld = index.withheld
        self.index.drifted = index.drifted
        if self._run is not None:
            self._run.withheld = index.withheld

    # -- the call --------------------------------------------------------------------

    def _upstream_call(self, name: str) -> UpstreamCall:
        wire = name.removeprefix(self._prefix) if self._prefix else None
        return UpstreamCall(
            self.upstream, self._writes.get(name, True), self.config.call_timeout, wire
        )

    def _lost_record(self, step: StepRecord, error: JournalError) -> None:
        say(f"error: {step.tool}: step {step.seq}: {error}", self._errlog)

    def _log_lost(self, outcome: CallOutcome) -> None:
        if outcome.journal_error is not None and outcome.error is None:
            # a read answered before its outcome could be journaled
            say(
                f"error: {outcome.tool}: step {outcome.step}: {outcome.journal_error}", self._errlog
            )

    async def relay_call(
        self,
        name: str,
        args: dict[str, Any],
        meta: dict[str, Any],
        client: str,
        reply: Callable[[dict[str, Any]], None],
        *,
        run: Run | None = None,
    ) -> None:
        """Serve one ``tools/call`` from its parsed JSON; ``reply`` gets its result, once.

        The caller made sure that no person needs to be asked (``name`` not in
        :attr:`asks`) and that ``args`` and ``meta`` are objects. ``run`` is the run
        the call belongs to (over HTTP, its session's); by default the session's one
        run, begun now for ``client`` if there is none yet. A read-only tool's
        result is passed to ``reply`` as soon as the upstream answered, before the step
        is journaled (docs/engine.md, CALL-4); any other, once its outcome is journaled.
        """
        if run is None:
            try:
                run = self._run or self.ensure_run(client)
            except JournalError as exc:
                self.journal_failed(exc)
                reply(unjournaled_result(exc))
                return
        if self._prefix:
            name = self._prefix + name
        reason = meta.get(REASON_META)
        call = self._upstream_call(name)
        with call_span(run, name, meta) as traced:
            outcome = await run.attempt(
                name,
                args,
                reason=reason if type(reason) is str else None,
                execute=call,
                answer=lambda done: reply(call_tool_result(done, call)),
            )
            end_span(traced, outcome)
        self._log_lost(outcome)

    def relay_now(
        self,
        name: str,
        args: dict[str, Any],
        meta: dict[str, Any],
        client: str,
        reply: Callable[[dict[str, Any]], None],
        fail: Callable[[Exception], None],
    ) -> Callable[[str], None] | None:
        """Serve a call of a tool in :attr:`inline` without a task, or return None.

        The same call as :meth:`relay_call` (``name`` as the client calls it; the
        namespace, when there is one, is added here), made from the event loop's
        callbacks: the run's checks, a write's intent (CALL-3) and the request to the
        upstream now, and from the callback that reads the upstream's answer a read's
        ``reply`` and then its record (CALL-4), or a write's outcome committed and then
        its ``reply`` (CALL-6, JNL-2). ``fail`` is told an exception that escaped there
        (a bug), so that the call is answered all the same; one raised now propagates.
        Returns a function that cancels the call (its argument says why; the upstream
        is told and the step journaled: a read ``failed``, a write ``uncertain``;
        ``reply`` is not called), or ``None``, doing nothing, when the call is left to
        :meth:`relay_call`: no live upstream connection (it starts one), an upstream
        over HTTP (its link is awaited), or OpenTelemetry tracing (the call's span is a
        context around the awaited call).
        """
        conn = self.upstream.live
        if type(conn) is not UpstreamConnection or tracing() is not None:
            return None
        run = self._run
        if run is None:
            try:
                run = self.ensure_run(client)
            except JournalError as exc:
                self.journal_failed(exc)
                reply(unjournaled_result(exc))
                return _answered
        if self._prefix:
            name = self._prefix + name
        reason = meta.get(REASON_META)
        begun = run.begin_call(name, args, reason=reason if type(reason) is str else None)
        if isinstance(begun, CallOutcome):  # refused, or the run takes no calls
            reply(call_tool_result(begun, None))
            return _answered
        call = self._upstream_call(name)

        def answer(outcome: CallOutcome) -> None:
            reply(call_tool_result(outcome, call))

        def done(result: dict[str, Any] | None, error: Exception | None) -> None:
            try:
                if error is None:
                    assert result is not None
                    self._log_lost(begun.succeeded(result, answer))
                else:
                    self._log_lost(begun.failed(error, answer, call.timeout))
            except Exception as exc:
                fail(exc)

        try:
            rid = call.send(conn, name, args, begun.key, run.id, begun.seq, done)
        except UpstreamClosed as closed:  # gone since it was live: as awaited (a write uncertain)
            try:
                call.settle(conn, name, None, closed)
            except (ToolError, EffectUncertainError) as exc:
                done(None, exc)
            return _answered

        def cancel(why: str) -> None:
            conn.cancel_request(rid)
            begun.abandon(asyncio.CancelledError(why))

        return cancel

    # -- the MCP server (everything but the raw tools/call path) -------------------------

    def build_server(self) -> Server[Any]:
        """The low-level MCP server (not yet running)."""
        server: Server[Any] = Server(
            "reversi-gateway",
            version=__version__,
            instructions=(
                "Every tool call is journaled by Reversi and can be rolled back. A refused or "
                "failed call says why; _meta['reversi/outcome'] is succeeded, failed, uncertain "
                "or rejected, and _meta['reversi/run'] / ['reversi/step'] name the journal entry."
            ),
            on_list_tools=self._list_tools,
        )
        server.add_request_handler("tools/call", types.CallToolRequestParams, self._call_tool)
        server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._initialized
        )
        server.middleware = []  # no tracing spans
        return server

    def journal_failed(self, error: JournalError) -> None:
        """Say, in one line on stderr, that the session's run could not be journaled."""
        say(f"error: the run could not be started in the journal: {error}", self._errlog)

    async def _initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        try:
            self.run_for(ctx)
        except JournalError as exc:  # a notification has no answer: the next call says it
            self.journal_failed(exc)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if self._run is None:  # a 2026-07-28 client sends no notifications/initialized
            try:
                self.ensure_run(client_name(ctx))
            except JournalError as exc:  # the listing needs no run: a call will say it
                self.journal_failed(exc)
        return self._listing

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any] | types.InputRequiredResult:
        """A ``tools/call`` the SDK parsed: one that may need approval, or an odd one."""
        try:
            run = self.run_for(ctx)
        except JournalError as exc:
            self.journal_failed(exc)
            result = unjournaled_result(exc)
            if modern(ctx):
                result["resultType"] = "complete"
            return result
        name = self._prefix + params.name
        args = params.arguments if params.arguments is not None else {}
        meta = params.meta
        reason = meta.get(REASON_META) if meta else None
        if not isinstance(reason, str):
            reason = None
        answer = None
        if (
            name in self._asks
            and name not in self.index.withheld
            and modern(ctx)
            and declares_elicitation(ctx)
        ):
            answer = self._approvals.answer_in(params, run.id, name, args)
            if answer is None and self._approvals.would_ask(run.scope, name, args):
                return self._approvals.input_required(run.id, name, args, reason)
        call = self._upstream_call(name)
        with call_span(run, name, meta) as traced:
            outcome = await run.attempt(
                name,
                args,
                reason=reason,
                execute=call,
                approver=self._approvals.approver(ctx, answer),
            )
            end_span(traced, outcome)
        self._log_lost(outcome)
        result = call_tool_result(outcome, call)
        if modern(ctx):
            result["resultType"] = "complete"  # required of a dict at 2026-07-28
        return result


# -- serving -----------------------------------------------------------------------


async def _serve_stdio(gateway: Gateway, errlog: TextIO) -> int:
    """Serve the client on this process's stdin/stdout until it leaves; the count of
    messages refused for breaking the framing rules."""
    server = gateway.build_server()
    to_sdk, sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
    sdk_out, from_sdk = anyio.create_memory_object_stream[SessionMessage](0)
    limit = gateway.config.max_message_bytes
    down = Downstream(gateway, server, to_sdk, errlog, limit)
    with stdio_fds() as (in_fd, out_fd):
        out = down.out = await connect_writer(out_fd, lambda: down.on_end(None))
        try:
            stop_reading = await connect_reader(
                in_fd, LineReader(down.on_line, down.on_end, down.on_oversized, limit)
            )
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(down.pump, from_sdk)
                    await server.run(sdk_in, sdk_out, server.create_initialization_options())
                await down.finish()
            finally:
                stop_reading()
        finally:
            out.close()
    return down.refused


def open_writable_journal(config: GatewayConfig) -> Journal:
    """The gateway's journal, open, once it is known it can be written
    (:meth:`~reversi_core.journal.Journal.check_writable`): a gateway that could journal
    nothing refuses to start. Raises :class:`~reversi_core.errors.ReversiError`
    (:class:`~reversi_core.errors.JournalError` and its kin) saying why, in one line."""
    journal = open_journal(config.journal, durability=config.durability)
    try:
        journal.check_writable()
    except BaseException:
        journal.close()
        raise
    return journal


async def serve_gateway(
    config: GatewayConfig,
    upstream_process: subprocess.Popen[bytes] | None = None,
    *,
    errlog: TextIO | None = None,
) -> int:
    """Run the gateway on this process's stdin/stdout until the client leaves.

    Starts the upstream (or adopts ``upstream_process``, already started with
    :func:`spawn_upstream`) and reports on ``errlog`` what is served, hidden and
    drifted. Returns the exit status: 0 after a normal end (messages refused for breaking
    the framing rules are counted on ``errlog`` when the session ends), 1 when the
    upstream cannot be started, 2 when the journal cannot be opened or written
    (:func:`open_writable_journal`).
    """
    err = errlog or sys.stderr
    try:
        journal = open_writable_journal(config)
    except ReversiError as exc:
        if upstream_process is not None:
            await stop_process(upstream_process, 0.0)
        say(f"error: {exc}", err)
        return 2
    try:
        async with anyio.create_task_group() as tg:
            upstream = make_upstream(config, tg, err, upstream_process)
            try:
                conn = await upstream.connection()
            except UpstreamError as exc:
                say(f"error: {exc}", err)
                return 1
            index = ToolIndex.build(config.registry, conn.tools, config.tool_namespace)
            _report(index, upstream, err)
            gateway = Gateway(config, journal, upstream, index, errlog=err)
            refused = await _serve_stdio(gateway, err)
            await upstream.aclose()
    finally:
        journal.close()
    ended = "the session ended: the client closed the connection"
    if refused:
        ended += (
            f"; {refused} message(s) from it were refused for breaking the framing rules (above)"
        )
    say(ended, err)
    return 0


def _answered(why: str) -> None:
    """The cancel function of a call answered at once: there is nothing left to cancel."""


def _report(index: ToolIndex, upstream: Supervisor, err: TextIO) -> None:
    names = [t.name for t in index.listed]
    shown = ", ".join(names) or "none"
    say(f"serving {len(names)} tool(s) of {upstream.description}: {shown}", err)
    if index.hidden:
        say(f"hidden (no manifest): {', '.join(index.hidden)}", err)
    if index.missing:
        say(f"manifests the upstream does not offer (refused): {', '.join(index.missing)}", err)
    for name in index.drifted:
        say(f"drifted: {index.withheld[name].reason}", err)
