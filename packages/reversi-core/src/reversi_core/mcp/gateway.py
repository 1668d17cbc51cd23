"""The gateway: an MCP server (stdio) in front of an upstream MCP server it starts.

One downstream session is one :class:`~reversi_core.engine.Run`. Every ``tools/call``
goes through :meth:`Run.call` (tool known, permission in scope, arguments valid,
approval, durable intent), is forwarded to the upstream over its own MCP session, and
its outcome is journaled before the answer goes back down::

    client -> Gateway.call_tool -> Run.call -> Upstream (MCP client) -> upstream server

What the gateway lists downstream: the upstream's tools that have a manifest, with MCP
annotations from the manifest's effect. An upstream tool whose input schema differs
from its manifest's (:func:`~reversi_core.registry.schema_hash`) is *drifted*: it is
reported on stderr at start and every call to it is refused until the manifests are
regenerated.

How the upstream's answers map onto step states (the upstream is expected to speak the
convention of :mod:`reversi_core.mcp.serve`):

* a result without ``isError``: ``succeeded``; the result is its ``structuredContent``
  (or ``{"content": <text>}`` when it has none);
* ``isError`` with ``_meta["reversi/outcome"] == "uncertain"``: ``uncertain``;
* ``isError`` with ``_meta["reversi/outcome"] == "failed"``: ``failed`` (nothing changed);
* ``isError`` without ``reversi/outcome`` (not a Reversi server): ``uncertain`` for a
  writing tool, ``failed`` for a read-only one;
* the upstream closes the connection (it died) or does not answer within the call
  timeout: ``uncertain`` for a writing tool, ``failed`` for a read-only one; the
  upstream is then restarted for the next call.

Every downstream result carries ``_meta`` ``reversi/run``, ``reversi/step`` (when a
step was journaled) and ``reversi/outcome`` (``succeeded``, ``failed``, ``uncertain`` or
``rejected``). See ``docs/gateway.md``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import secrets
import shlex
import signal
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO, cast

import anyio
import anyio.abc
import mcp_types as types
import yaml
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..__about__ import __version__
from ..connector import CallContext
from ..engine import ApprovalDecision, ApprovalRequest, Run
from ..errors import (
    ApprovalDenied,
    CallRejected,
    ConfigurationError,
    EffectUncertainError,
    InvalidArgumentsError,
    ManifestError,
    PermissionDenied,
    ReversiError,
    RunClosedError,
    ToolError,
    UnknownToolError,
)
from ..journal import Durability, Journal, SQLiteJournal
from ..manifest import Approval, Manifest
from ..redact import scrub, scrub_json
from ..registry import Registry, canonical_json, schema_hash
from .serve import IDEMPOTENCY_KEY_META, OUTCOME_META, RUN_ID_META, tool_annotations
from .serve import STEP_META as UPSTREAM_STEP_META

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "REASON_META",
    "RUN_META",
    "STEP_META",
    "Gateway",
    "GatewayConfig",
    "ToolIndex",
    "Upstream",
    "UpstreamError",
    "load_manifest_dir",
    "serve_gateway",
    "spawn_upstream",
]

RUN_META = "reversi/run"
"""``_meta`` key of every downstream ``CallToolResult``: the run id."""

STEP_META = "reversi/step"
"""``_meta`` key of a downstream ``CallToolResult``: the step journaled for the call."""

REASON_META = "reversi/reason"
"""Optional ``_meta`` key of a downstream ``tools/call``: the agent's reason, journaled."""

DRIFTED_META = "reversi/drifted"
"""``_meta`` key of a listed tool: true when calls to it are refused for drift."""

DEFAULT_CALL_TIMEOUT = 120.0
"""Seconds the gateway waits for the upstream's answer to one call."""

DEFAULT_START_TIMEOUT = 30.0
"""Seconds the upstream may take to start and answer ``initialize`` and ``tools/list``."""

MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")

PROG = "reversi-gateway"

_MAYBE = "the change may or may not have happened"


# -- manifests ---------------------------------------------------------------------


def load_manifest_dir(directory: str | Path) -> Registry:
    """Read every ``*.json``, ``*.yaml`` and ``*.yml`` in ``directory`` into a registry.

    Each file holds a list of manifest objects (what ``reversi-connectors manifests
    NAME`` prints) or a single one. Raises :class:`ConfigurationError` for a missing or
    empty directory or an unreadable file, and :class:`ManifestError` (naming the tool
    and, in the problem, its file) for an invalid manifest set.
    """
    path = Path(directory)
    if not path.is_dir():
        raise ConfigurationError(f"--manifests {path}: not a directory")
    files = sorted(p for p in path.iterdir() if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    if not files:
        raise ConfigurationError(
            f"--manifests {path}: no *.json, *.yaml or *.yml files; write them with "
            f"'reversi-connectors manifests NAME > {path}/NAME.json'"
        )
    raw: list[Any] = []
    origin: dict[str, Path] = {}
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
            data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            problem = " ".join(str(exc).split())
            raise ConfigurationError(f"--manifests: cannot read {file}: {problem}") from None
        items = data if isinstance(data, list) else [data]
        for item in items:
            if not isinstance(item, dict):
                raise ConfigurationError(
                    f"--manifests: {file} must hold a list of manifest objects, "
                    f"found {type(item).__name__}"
                )
            name = item.get("name")
            if isinstance(name, str):
                origin.setdefault(name, file)
            raw.append(item)
    try:
        return Registry.from_manifests(raw)
    except ManifestError as exc:
        where = origin.get(exc.tool)
        suffix = f" (in {where})" if where is not None else ""
        raise ManifestError(exc.tool, f"{exc.problem}{suffix}") from None


# -- configuration -------------------------------------------------------------------


@dataclass(frozen=True)
class GatewayConfig:
    """Everything the gateway needs, as parsed by ``reversi-gateway``.

    ``scope`` ``None`` means the registry's default scope. ``pre_approved`` lists tools
    whose ``approval: always`` calls are approved in advance (``--approve TOOL``).
    """

    registry: Registry
    data_dir: Path
    upstream_command: str
    upstream_args: tuple[str, ...] = ()
    scope: frozenset[str] | None = None
    durability: Durability = Durability.PROCESS
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT
    pre_approved: frozenset[str] = frozenset()
    upstream_env: Mapping[str, str] | None = None

    @property
    def upstream_argv(self) -> list[str]:
        """The upstream command line."""
        return [self.upstream_command, *self.upstream_args]


def _say(message: str, stream: TextIO | None = None) -> None:
    print(f"{PROG}: {scrub(message)}", file=stream or sys.stderr, flush=True)


def _leaf_errors(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(_leaf_errors(inner))
        return out
    return [exc]


def _describe(exc: BaseException) -> str:
    parts = []
    for leaf in _leaf_errors(exc):
        text = str(leaf) or type(leaf).__name__
        known = isinstance(leaf, ReversiError | MCPError)
        parts.append(text if known else f"{type(leaf).__name__}: {text}")
    return "; ".join(parts)


# -- the upstream ------------------------------------------------------------------


class UpstreamError(ReversiError):
    """The upstream server could not be started or stopped answering."""


@dataclass
class UpstreamConnection:
    """One running upstream process and the client session over its stdio."""

    session: ClientSession
    tools: list[types.Tool]
    generation: int
    pid: int
    stop: anyio.Event = field(default_factory=anyio.Event)
    discarded: bool = False


def spawn_upstream(
    argv: list[str], env: Mapping[str, str] | None = None, errlog: TextIO | None = None
) -> subprocess.Popen[bytes]:
    """Start the upstream server with pipes on its stdin and stdout, in a session of its own.

    Its stderr goes to ``errlog`` (default: this process's stderr). Raises
    :class:`OSError` when the command cannot be run.
    """
    stderr: Any = None
    if errlog is not None:
        with suppress(AttributeError, OSError, ValueError):
            stderr = errlog.fileno()
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )


async def _stop_process(process: subprocess.Popen[bytes], grace: float) -> None:
    """Wait ``grace`` seconds for the process to exit on its own, then TERM, then KILL."""
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        deadline = anyio.current_time() + grace
        while process.poll() is None:
            if anyio.current_time() >= deadline:
                break
            await anyio.sleep(0.01)
        else:
            return


class Upstream:
    """The upstream MCP server: started on demand, restarted after it dies or hangs.

    Connections live in tasks of ``task_group`` (a client session's context must be
    entered and left in one task). :meth:`connection` returns the live one, starting a
    new process when there is none; :meth:`discard` retires one after a failure, and
    the next :meth:`connection` starts a fresh process. ``first`` is a process already
    started (the command line starts it before the slow imports, to save start-up time).
    """

    def __init__(
        self,
        argv: list[str],
        task_group: anyio.abc.TaskGroup,
        *,
        env: Mapping[str, str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        errlog: TextIO | None = None,
        first: subprocess.Popen[bytes] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.env = env
        self._tg = task_group
        self._start_timeout = start_timeout
        self._errlog = errlog or sys.stderr
        self._lock = anyio.Lock()
        self._current: UpstreamConnection | None = None
        self._generation = 0
        self._first = first
        self.on_connect: list[Callable[[UpstreamConnection], None]] = []

    @property
    def description(self) -> str:
        """The upstream command line, for messages."""
        return shlex.join(self.argv)

    async def connection(self) -> UpstreamConnection:
        """The live connection, started (or restarted) now if needed.

        Raises :class:`UpstreamError` when the upstream cannot be started.
        """
        current = self._current
        if current is not None and not current.discarded:
            return current
        async with self._lock:
            current = self._current
            if current is not None and not current.discarded:
                return current
            self._generation += 1
            try:
                process, self._first = self._first, None
                if process is None:
                    process = spawn_upstream(self.argv, self.env, self._errlog)
                conn: UpstreamConnection = await self._tg.start(
                    self._hold, self._generation, process
                )
            except Exception as exc:
                raise UpstreamError(
                    f"the upstream server ({self.description}) could not be started: "
                    f"{_describe(exc)}"
                ) from None
            self._current = conn
            for callback in self.on_connect:
                callback(conn)
            return conn

    def discard(self, conn: UpstreamConnection, why: str) -> None:
        """Retire ``conn`` (its process is stopped in the background); say why on stderr."""
        if conn.discarded:
            return
        conn.discarded = True
        conn.stop.set()
        if self._current is conn:
            self._current = None
        _say(
            f"upstream #{conn.generation} retired ({why}); a new one starts for the next call",
            self._errlog,
        )
        self._tg.start_soon(self._prestart)

    async def _prestart(self) -> None:
        try:
            await self.connection()
        except UpstreamError as exc:
            _say(str(exc), self._errlog)

    async def aclose(self) -> None:
        """Stop the live connection, if any."""
        if self._current is not None:
            self._current.discarded = True
            self._current.stop.set()
            self._current = None

    async def _hold(
        self,
        generation: int,
        process: subprocess.Popen[bytes],
        *,
        task_status: anyio.abc.TaskStatus[UpstreamConnection] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        started = False
        try:
            if process.stdout is None or process.stdin is None:
                raise UpstreamError("the upstream process has no pipes")
            async with (
                _line_streams(process.stdout, process.stdin) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(self._start_timeout):
                    await session.initialize()
                    tools = await _list_all_tools(session)
                conn = UpstreamConnection(session, tools, generation, process.pid)
                started = True
                task_status.started(conn)
                await conn.stop.wait()
        except Exception as exc:
            if not started:
                if any(isinstance(leaf, TimeoutError) for leaf in _leaf_errors(exc)):
                    raise UpstreamError(
                        f"no answer to initialize/tools/list within {self._start_timeout} s"
                    ) from None
                code = process.poll()
                if code is not None:
                    raise UpstreamError(f"it exited with status {code} before answering") from None
                raise
            _say(f"upstream #{generation} ended: {_describe(exc)}", self._errlog)
        finally:
            with anyio.CancelScope(shield=True):
                await _stop_process(process, _STOP_GRACE)


async def _list_all_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


# -- the tool index ----------------------------------------------------------------


@dataclass
class ToolIndex:
    """What the gateway serves, computed once per upstream (re)start.

    ``listed``: the downstream tool definitions; ``refusals``: tool name -> the reason
    every call to it is refused (drifted, or declared by a manifest but not offered by
    the upstream); ``drifted``: the drifted names; ``hidden``: upstream tools without a
    manifest; ``missing``: manifests without an upstream tool.
    """

    listed: list[types.Tool]
    refusals: dict[str, str]
    drifted: list[str]
    hidden: list[str]
    missing: list[str]

    @classmethod
    def build(cls, registry: Registry, upstream_tools: Iterable[types.Tool]) -> ToolIndex:
        """Match the upstream's tools against the manifests (see the class docstring)."""
        listed: list[types.Tool] = []
        refusals: dict[str, str] = {}
        drifted: list[str] = []
        hidden: list[str] = []
        offered: set[str] = set()
        for tool in upstream_tools:
            if tool.name not in registry:
                hidden.append(tool.name)
                continue
            manifest = registry.get(tool.name)
            offered.add(tool.name)
            upstream_hint = tool.annotations.open_world_hint if tool.annotations else None
            annotations = tool_annotations(
                manifest, open_world=True if upstream_hint is None else upstream_hint
            )
            meta = dict(tool.meta or {})
            meta.update(
                {
                    "reversi/effect": manifest.effect.value,
                    "reversi/permission": manifest.permission,
                    "reversi/approval": manifest.approval.value,
                }
            )
            description = tool.description or manifest.description or None
            if schema_hash(tool.input_schema) != schema_hash(manifest.input_schema):
                drifted.append(tool.name)
                refusals[tool.name] = (
                    f"{tool.name} is refused: the upstream's input schema for it differs from "
                    f"its manifest (the connector changed since the manifests were written). "
                    f"Regenerate them with 'reversi-connectors manifests {manifest.connector}' "
                    f"into the --manifests directory and restart reversi-gateway"
                )
                meta[DRIFTED_META] = True
                description = "[refused until the manifests are regenerated] " + (description or "")
            listed.append(
                tool.model_copy(
                    update={
                        "annotations": annotations,
                        "meta": meta,
                        "description": description,
                    }
                )
            )
        missing = sorted(n for n in registry.names if n not in offered)
        for name in missing:
            refusals[name] = (
                f"{name} is refused: it has a manifest but the upstream server does not offer it"
            )
        return cls(listed, refusals, sorted(drifted), sorted(hidden), missing)


# -- the gateway -------------------------------------------------------------------


@dataclass
class _CallState:
    """Per-call facts shared by the handler, the executor, the approver and the journal."""

    ctx: ServerRequestContext[Any]
    step: int | None = None
    answer: types.ElicitResult | None = None  # an approval answered by input_required


_CURRENT: ContextVar[_CallState | None] = ContextVar("reversi_gateway_call", default=None)


class _StepRecordingJournal:
    """Delegates to the real journal; remembers the step number of a rejected call."""

    def __init__(self, inner: Journal) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def record_rejected(
        self,
        run_id: str,
        tool: str,
        effect: str,
        permission: str,
        args: dict[str, Any],
        reason: str | None,
        error: str,
        approval: dict[str, Any] | None,
    ) -> int:
        seq = self._inner.record_rejected(
            run_id, tool, effect, permission, args, reason, error, approval
        )
        state = _CURRENT.get()
        if state is not None:
            state.step = seq
        return seq


_ELICIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve this call",
            "description": "Leave checked to let the call run; uncheck to refuse it.",
            "default": True,
        },
        "note": {
            "type": "string",
            "title": "Note (optional)",
            "description": "Kept in the journal with your answer.",
        },
    },
}


def _text(content: Iterable[Any]) -> str:
    return "\n".join(block.text for block in content if isinstance(block, types.TextContent))


def _client_name(ctx: ServerRequestContext[Any]) -> str:
    params = ctx.session.client_params
    if params is not None and params.client_info.name:
        return params.client_info.name
    return "the MCP client"


def _declares_elicitation(ctx: ServerRequestContext[Any]) -> bool:
    caps = ctx.session.client_capabilities
    if caps is None or caps.elicitation is None:
        return False
    return caps.elicitation.form is not None or caps.elicitation.url is None  # {} means form


def _modern(ctx: ServerRequestContext[Any]) -> bool:
    """True on a 2026-07-28 connection: the server asks by ``input_required`` results."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


_APPROVAL_INPUT = "reversi/approval"
"""Key of the approval elicitation in an ``InputRequiredResult`` (2026-07-28 clients)."""


class Gateway:
    """The downstream MCP server around one lazily started :class:`Run`."""

    def __init__(
        self,
        config: GatewayConfig,
        journal: Journal,
        upstream: Upstream,
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
        self._state_key = secrets.token_bytes(32)
        self._listing = types.ListToolsResult(tools=index.listed)
        upstream.on_connect.append(self._reindex)

    # -- the run ---------------------------------------------------------------------

    @property
    def run(self) -> Run | None:
        """The session's run, once the client initialized or called a tool."""
        return self._run

    def ensure_run(self, client: str | None = None) -> Run:
        """The session's run, journaled now if it is not yet."""
        if self._run is None:
            label = f"{client or 'MCP client'} via {PROG} -> {self.upstream.description}"
            self._run = Run.start(
                cast(Journal, _StepRecordingJournal(self.journal)),
                self.registry,
                scope=self.config.scope,
                executor=self._execute,
                approver=self._approve,
                label=label[:200],
            )
            _say(
                f"run {self._run.id} started (data {self.config.data_dir}); undo it with "
                f"'reversi rollback {self._run.id} --data {self.config.data_dir}'",
                self._errlog,
            )
        return self._run

    def _reindex(self, conn: UpstreamConnection) -> None:
        if conn.generation == 1:
            return  # the index the gateway was built with
        index = ToolIndex.build(self.registry, conn.tools)
        for name in index.drifted:
            if name not in self.index.drifted:
                _say(f"drifted after restart: {index.refusals[name]}", self._errlog)
        self.index.refusals = index.refusals
        self.index.drifted = index.drifted

    # -- the MCP server --------------------------------------------------------------

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
            on_call_tool=self._call_tool,
        )
        server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._initialized
        )
        server.middleware = []  # no tracing spans on the hot path
        return server

    async def _initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        self.ensure_run(_client_name(ctx))

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if self._run is None:  # a 2026-07-28 client sends no notifications/initialized
            self.ensure_run(_client_name(ctx))
        return self._listing

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        run = self._run or self.ensure_run(_client_name(ctx))
        name = params.name
        args = params.arguments if params.arguments is not None else {}
        meta = params.meta
        reason = meta.get(REASON_META) if meta else None
        if not isinstance(reason, str):
            reason = None
        state = _CallState(ctx)
        token = _CURRENT.set(state)
        try:
            refusal = self.index.refusals.get(name)
            if refusal is not None:
                return self._refuse_unserved(run, name, args, reason, refusal, state)
            if name in self._asks and _modern(ctx) and _declares_elicitation(ctx):
                state.answer = self._answer(params, run, name, args)
                if state.answer is None and self._would_ask(run, name, args):
                    return self._input_required(run, name, args, reason)
            try:
                seq, result = await run.call(name, args, reason=reason)
            except CallRejected as exc:
                return self._error(run, state, "rejected", _rejection(exc), _rejection_message(exc))
            except RunClosedError as exc:
                return self._error(
                    run,
                    state,
                    "rejected",
                    {"type": "rejected", "code": "run_closed"},
                    f"{exc} (reconnect to the gateway to begin a new run)",
                )
            except EffectUncertainError as exc:
                hint = ""
                if state.step is not None:
                    hint = (
                        f" Step {state.step} of run {run.id} is journaled uncertain: once you "
                        f"know whether it took effect, record it with "
                        f"'reversi resolve {run.id} {state.step} --applied' or '--not-applied'."
                    )
                return self._error(run, state, "uncertain", exc.to_json(), f"{exc}{hint}")
            except ToolError as exc:
                return self._error(run, state, "failed", exc.to_json(), str(exc))
            except ReversiError as exc:  # a journal failure: nothing we can promise
                return self._error(
                    run,
                    state,
                    "failed",
                    {"type": "gateway_error", "code": "gateway"},
                    f"the gateway could not journal this call: {exc}",
                )
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=_result_text(result))],
                structured_content=result,
                is_error=False,
                _meta={OUTCOME_META: "succeeded", RUN_META: run.id, STEP_META: seq},
            )
        finally:
            _CURRENT.reset(token)

    # -- approval on 2026-07-28 connections (multi-round-trip) ---------------------------

    def _state_for(self, run: Run, name: str, args: dict[str, Any]) -> str:
        body = canonical_json([run.id, name, args]).encode("utf-8")
        return hmac.new(self._state_key, body, hashlib.sha256).hexdigest()

    def _answer(
        self, params: types.CallToolRequestParams, run: Run, name: str, args: dict[str, Any]
    ) -> types.ElicitResult | None:
        """The client's answer to this very call's approval question, if it sent one."""
        answer = (params.input_responses or {}).get(_APPROVAL_INPUT)
        if not isinstance(answer, types.ElicitResult):
            return None
        state = params.request_state
        if state is None or not hmac.compare_digest(state, self._state_for(run, name, args)):
            return None  # an answer for another call (or arguments changed): ask again
        return answer

    def _would_ask(self, run: Run, name: str, args: dict[str, Any]) -> bool:
        """False when the engine would refuse the call before asking (scope, arguments)."""
        if self.registry.get(name).permission not in run.scope:
            return False
        try:
            self.registry.validate_arguments(name, args)
        except InvalidArgumentsError:
            return False
        return True

    def _input_required(
        self, run: Run, name: str, args: dict[str, Any], reason: str | None
    ) -> types.InputRequiredResult:
        question = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=_approval_message(self.registry.get(name), args, reason),
                requested_schema=_ELICIT_SCHEMA,
            )
        )
        return types.InputRequiredResult(
            input_requests={_APPROVAL_INPUT: question},
            request_state=self._state_for(run, name, args),
        )

    def _refuse_unserved(
        self,
        run: Run,
        name: str,
        args: dict[str, Any],
        reason: str | None,
        message: str,
        state: _CallState,
    ) -> types.CallToolResult:
        manifest = self.registry.get(name)
        state.step = self.journal.record_rejected(
            run.id,
            name,
            manifest.effect.value,
            manifest.permission,
            scrub_json(args),
            reason,
            message,
            None,
        )
        code = "drifted" if name in self.index.drifted else "not_offered"
        return self._error(run, state, "rejected", {"type": "rejected", "code": code}, message)

    def _error(
        self,
        run: Run,
        state: _CallState,
        outcome: str,
        error: dict[str, Any],
        message: str,
    ) -> types.CallToolResult:
        message = scrub(message)
        body = dict(error)
        body["message"] = message
        meta: dict[str, Any] = {OUTCOME_META: outcome, RUN_META: run.id}
        if state.step is not None:
            meta[STEP_META] = state.step
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)],
            structured_content={"error": body},
            is_error=True,
            _meta=meta,
        )

    # -- the executor ----------------------------------------------------------------

    async def _execute(self, tool: str, args: dict[str, Any], cctx: CallContext) -> dict[str, Any]:
        state = _CURRENT.get()
        if state is not None:
            state.step = cctx.step
        writes = self._writes.get(tool, True)
        try:
            conn = await self.upstream.connection()
        except UpstreamError as exc:
            raise ToolError(str(exc), code="upstream_unavailable") from None
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name=tool,
                arguments=args,
                _meta=cast(
                    types.RequestParamsMeta,
                    {
                        IDEMPOTENCY_KEY_META: cctx.idempotency_key,
                        RUN_ID_META: cctx.run_id,
                        UPSTREAM_STEP_META: cctx.step,
                    },
                ),
            )
        )
        timeout = self.config.call_timeout
        result: types.CallToolResult | None = None
        with anyio.move_on_after(timeout):
            try:
                result = await conn.session.send_request(request, types.CallToolResult)
            except MCPError as exc:
                self._upstream_error(conn, tool, writes, exc)
        if result is None:
            self.upstream.discard(conn, f"no answer to {tool} within {timeout:g} s")
            msg = f"the upstream server did not answer {tool} within {timeout:g} s (--call-timeout)"
            if writes:
                raise EffectUncertainError(f"{msg}; {_MAYBE}")
            raise ToolError(msg, code="timeout")
        return _outcome(tool, result, writes)

    def _upstream_error(
        self, conn: UpstreamConnection, tool: str, writes: bool, exc: MCPError
    ) -> None:
        if exc.code == CONNECTION_CLOSED:
            self.upstream.discard(conn, f"it closed the connection during {tool}")
            msg = f"the upstream server exited or closed the connection during {tool}"
            if writes:
                raise EffectUncertainError(f"{msg}; {_MAYBE}") from None
            raise ToolError(msg, code="upstream_closed") from None
        if exc.code in (INVALID_PARAMS, METHOD_NOT_FOUND, INVALID_REQUEST) or not writes:
            raise ToolError(
                f"the upstream server refused {tool}: {exc.message}", code=f"mcp_{exc.code}"
            ) from None
        raise EffectUncertainError(
            f"the upstream server answered {tool} with error {exc.code} ({exc.message}); {_MAYBE}"
        ) from None

    # -- approval --------------------------------------------------------------------

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        tool = request.tool
        if tool in self.config.pre_approved:
            return ApprovalDecision(
                True,
                by=f"{PROG} --approve {tool}",
                note="approved in advance on the gateway's command line",
            )
        state = _CURRENT.get()
        if state is None:
            return ApprovalDecision(False, by="the gateway", note="no client to ask")
        ctx = state.ctx
        client = _client_name(ctx)
        if state.answer is not None:
            return _decision(state.answer, client)
        if not (_declares_elicitation(ctx) and ctx.session.can_send_request):
            return ApprovalDecision(
                False,
                by="the gateway",
                note=(
                    f"{client} cannot be asked, as it did not declare the MCP elicitation capability; "
                    f"use a client that supports elicitation, or restart reversi-gateway with "
                    f"--approve {tool} to approve every call of it in advance"
                ),
            )
        try:
            answer = await ctx.session.elicit_form(
                _approval_message(request.manifest, request.args, request.reason),
                _ELICIT_SCHEMA,
                related_request_id=ctx.request_id,
            )
        except Exception as exc:
            return ApprovalDecision(
                False, by="the gateway", note=f"asking {client} failed: {_describe(exc)}"
            )
        return _decision(answer, client)


def _decision(answer: types.ElicitResult, client: str) -> ApprovalDecision:
    """The approval decision an elicitation answer means."""
    by = f"the user via {client}"
    if answer.action != "accept":
        what = "declined" if answer.action == "decline" else "cancelled"
        return ApprovalDecision(False, by=by, note=what)
    content = answer.content or {}
    note = content.get("note")
    note_text = note if isinstance(note, str) and note.strip() else None
    if content.get("approve", True) is False:
        return ApprovalDecision(False, by=by, note=note_text or "answered no")
    return ApprovalDecision(True, by=by, note=note_text)


def _approval_message(manifest: Manifest, args: dict[str, Any], reason: str | None) -> str:
    shown = json.dumps(scrub_json(args), ensure_ascii=False, sort_keys=True)
    if len(shown) > 2000:
        shown = shown[:2000] + "…"
    kind = {
        "irreversible": "cannot be undone",
        "read_only": "changes nothing",
    }.get(manifest.effect.value, f"{manifest.effect.value}: Reversi can undo it")
    text = f"The agent wants to call {manifest.name} ({kind}) with {shown}."
    if reason:
        text += f" Its reason: {reason}"
    return text + " Allow it?"


def _rejection(exc: CallRejected) -> dict[str, Any]:
    code = "rejected"
    body: dict[str, Any] = {"type": "rejected"}
    if isinstance(exc, UnknownToolError):
        code = "unknown_tool"
    elif isinstance(exc, PermissionDenied):
        code = "permission_denied"
        body["permission"] = exc.permission
    elif isinstance(exc, InvalidArgumentsError):
        code = "invalid_arguments"
        body["problems"] = [scrub(p) for p in exc.problems]
    elif isinstance(exc, ApprovalDenied):
        code = "approval_denied"
    body["code"] = code
    return body


def _rejection_message(exc: CallRejected) -> str:
    if isinstance(exc, PermissionDenied):
        return (
            f"{exc}; to grant it, restart reversi-gateway with --scope {exc.permission} "
            "(--scope lists exactly what is granted: repeat it for every permission the agent "
            "needs)"
        )
    if isinstance(exc, UnknownToolError):
        return f"{exc}; the gateway serves only the upstream tools that have a manifest"
    return str(exc)


def _result_text(result: dict[str, Any]) -> str:
    if set(result) == {"content"} and isinstance(result["content"], str):
        return result["content"]
    return json.dumps(result, ensure_ascii=False)


def _outcome(tool: str, result: types.CallToolResult, writes: bool) -> dict[str, Any]:
    """Map the upstream's ``CallToolResult`` to a JSON result or a raised error.

    ``_meta["reversi/outcome"]`` decides an error: ``failed`` is definite (ToolError),
    ``uncertain`` is not (EffectUncertainError). An error without it did not come from a
    Reversi server, which cannot be trusted to have changed nothing: for a writing tool
    it is uncertain, for a read-only one failed.
    """
    if result.is_error:
        meta = result.meta or {}
        structured = result.structured_content
        error = structured.get("error") if isinstance(structured, dict) else None
        error = error if isinstance(error, dict) else {}
        message = error.get("message")
        if not isinstance(message, str) or not message:
            message = _text(result.content) or f"{tool} failed (the upstream gave no message)"
        outcome = meta.get(OUTCOME_META)
        if outcome == "uncertain" or (outcome != "failed" and writes):
            if outcome != "uncertain":
                message += (
                    " (the upstream does not say whether anything changed: it sets no "
                    "_meta['reversi/outcome'])"
                )
            raise EffectUncertainError(message)
        status = error.get("status")
        code = error.get("code")
        raise ToolError(
            message,
            status=status if isinstance(status, int) and not isinstance(status, bool) else None,
            code=code if isinstance(code, str) else None,
        )
    if isinstance(result.structured_content, dict):
        return result.structured_content
    return {"content": _text(result.content)}


# -- transports --------------------------------------------------------------------


_LINE_LIMIT = 1 << 30
"""Longest JSON-RPC line read from a pipe (the asyncio reader's buffer limit)."""

_STOP_GRACE = 2.0
"""Seconds an upstream gets to exit after its stdin closes (and again after SIGTERM)."""

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@asynccontextmanager
async def _line_streams(read_file: IO[bytes], write_file: IO[bytes]) -> AsyncIterator[Streams]:
    """JSON-RPC messages, one per line, over two pipes watched by the event loop.

    No thread per message (the SDK's stdio transports read and write through worker
    threads, which costs about a millisecond per hop). The pipes are closed on exit;
    when the peer goes away the read stream ends, so pending requests fail as closed.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    in_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), read_file
    )
    try:
        out_transport, out_protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, write_file
        )
    except BaseException:
        in_transport.close()
        raise
    writer = asyncio.StreamWriter(out_transport, out_protocol, None, loop)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_lines() -> None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with read_send:
                while True:
                    try:
                        line = await reader.readline()
                    except (OSError, ValueError) as exc:  # a line past the limit, a read error
                        await read_send.send(exc)
                        return
                    if not line:
                        return
                    if not line.strip():
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError as exc:
                        await read_send.send(exc)
                        continue
                    await read_send.send(SessionMessage(message))

    async def write_lines() -> None:
        try:
            async with write_recv:
                async for item in write_recv:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    writer.write(data.encode("utf-8") + b"\n")
                    await writer.drain()
        except (ConnectionError, OSError):
            read_send.close()  # the peer is gone: end the session's read side too

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_lines)
            tg.start_soon(write_lines)
            try:
                yield read_recv, write_send
            finally:
                tg.cancel_scope.cancel()
    finally:
        for stream in (write_send, read_recv, read_send, write_recv):
            stream.close()
        out_transport.close()
        in_transport.close()


def _watchable_stdio() -> bool:
    """True when stdin and stdout are pipes or sockets (what the event loop can watch)."""
    try:
        modes = (os.fstat(0).st_mode, os.fstat(1).st_mode)
    except OSError:
        return False
    return all(stat.S_ISFIFO(m) or stat.S_ISSOCK(m) for m in modes)


@asynccontextmanager
async def _pipe_stdio() -> AsyncIterator[Streams]:
    """Serve MCP over this process's stdin/stdout with :func:`_line_streams`.

    The wire moves to private descriptors; meanwhile fd 0 reads the null device and fd 1
    writes to stderr, so stray output cannot corrupt it (as the SDK's ``stdio_server``
    does). Both are restored on exit.
    """
    in_fd, out_fd = os.dup(0), os.dup(1)
    saved = (os.dup(0), os.dup(1))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    try:
        async with _line_streams(
            os.fdopen(in_fd, "rb", buffering=0), os.fdopen(out_fd, "wb", buffering=0)
        ) as streams:
            yield streams
    finally:
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)
        os.close(saved[0])
        os.close(saved[1])


# -- serving -----------------------------------------------------------------------


async def serve_gateway(
    config: GatewayConfig,
    upstream_process: subprocess.Popen[bytes] | None = None,
    *,
    errlog: TextIO | None = None,
) -> int:
    """Run the gateway on this process's stdin/stdout until the client leaves.

    Starts the upstream (or adopts ``upstream_process``, already started with
    :func:`spawn_upstream`) and reports on ``errlog`` what is served, hidden and
    drifted. Returns the exit status: 0 after a normal end, 1 when the upstream cannot
    be started, 2 when the journal cannot be opened.
    """
    err = errlog or sys.stderr
    try:
        journal = SQLiteJournal.open(config.data_dir, durability=config.durability)
    except ReversiError as exc:
        if upstream_process is not None:
            await _stop_process(upstream_process, 0.0)
        _say(f"error: {exc}", err)
        return 2
    try:
        async with anyio.create_task_group() as tg:
            upstream = Upstream(
                config.upstream_argv,
                tg,
                env=config.upstream_env,
                start_timeout=config.start_timeout,
                errlog=err,
                first=upstream_process,
            )
            try:
                conn = await upstream.connection()
            except UpstreamError as exc:
                _say(f"error: {exc}", err)
                return 1
            index = ToolIndex.build(config.registry, conn.tools)
            _report(index, upstream, err)
            gateway = Gateway(config, journal, upstream, index, errlog=err)
            server = gateway.build_server()
            transport = _pipe_stdio() if _watchable_stdio() else stdio_server()
            async with transport as (read, write):
                await server.run(read, write, server.create_initialization_options())
            await upstream.aclose()
    finally:
        journal.close()
    return 0


def _report(index: ToolIndex, upstream: Upstream, err: TextIO) -> None:
    names = [t.name for t in index.listed]
    shown = ", ".join(names) or "none"
    _say(f"serving {len(names)} tool(s) of {upstream.description}: {shown}", err)
    if index.hidden:
        _say(f"hidden (no manifest): {', '.join(index.hidden)}", err)
    if index.missing:
        _say(f"manifests the upstream does not offer (refused): {', '.join(index.missing)}", err)
    for name in index.drifted:
        _say(f"drifted: {index.refusals[name]}", err)
