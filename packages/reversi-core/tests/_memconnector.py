"""An in-memory connector for the core tests, with a switch to make any tool misbehave.

Tools (permission in brackets):

- ``mem.put`` reversible [mem:write]: set a key; its result records the prior state and
  ``mem.restore`` puts it back. Requires the ``mem.mkdir`` step whose path holds the key.
- ``mem.guarded_put`` reversible, approval always [mem:write]: like ``put``.
- ``mem.bump`` compensable [mem:write]: add to a counter; ``mem.set_counter`` restores it.
- ``mem.mkdir`` reversible [mem:write]: make a directory; ``mem.rmdir`` removes it and
  refuses while the directory is not empty.
- ``mem.restore``, ``mem.set_counter``, ``mem.rmdir`` idempotent [mem:restore]: the
  compensations (their permission is used by nothing else, so the default scope lacks it).
- ``mem.delete`` idempotent [mem:delete]: delete a key (nothing undoes it).
- ``mem.publish`` irreversible, approval always [mem:publish].
- ``mem.get`` read_only [mem:read].

Faults (:meth:`MemConnector.fault`): ``tool_error``, ``uncertain``, ``unexpected``
(a ``RuntimeError``), ``hang``, ``interrupt`` (``KeyboardInterrupt``), ``bad_result``
(the tool runs and returns ``{}``, which the result models of the tools that return
fields refuse), optionally only for calls whose args contain ``when`` and only ``times``
times. ``hooks[tool]`` runs inside the tool before it acts.

The module is importable by a child process too: put its directory on ``sys.path``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict

from reversi_core import (
    CallContext,
    Compensation,
    CompensationCall,
    Connector,
    EffectUncertainError,
    Match,
    Requirement,
    ToolError,
    tool,
)
from reversi_core.manifest import Approval, Effect

FAULT_KINDS = ("tool_error", "uncertain", "unexpected", "hang", "interrupt", "bad_result")


class PutArgs(BaseModel):
    key: str
    value: str | None = None


class RestoreArgs(BaseModel):
    key: str
    previous: str | None = None
    existed: bool


class KeyArgs(BaseModel):
    key: str


class BumpArgs(BaseModel):
    name: str
    by: int = 1


class SetCounterArgs(BaseModel):
    name: str
    value: int


class PathArgs(BaseModel):
    path: str


class PublishArgs(BaseModel):
    message: str


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PutResult(_Result):
    previous: str | None
    existed: bool


class KeyResult(_Result):
    key: str


class BumpResult(_Result):
    before: int
    after: int


class PathResult(_Result):
    path: str


class IdResult(_Result):
    id: int


class GetResult(_Result):
    value: str | None
    exists: bool


class NoResult(_Result):
    """An empty result: ``{}``."""


@dataclass
class Fault:
    kind: str
    when: Mapping[str, Any] | None = None
    times: int | None = None
    message: str = "injected fault"

    def applies(self, args: Mapping[str, Any]) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        return self.when is None or all(args.get(k) == v for k, v in self.when.items())


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]
    ctx: CallContext


Hook = Callable[[dict[str, Any], CallContext], Awaitable[None] | None]

RESTORE = Compensation(
    tool="mem.restore",
    argument_map={"key": "args.key", "previous": "result.previous", "existed": "result.existed"},
)


class MemConnector(Connector):
    """See the module docstring."""

    name = "mem"

    def __init__(self) -> None:
        self.data: dict[str, str | None] = {}
        self.counters: dict[str, int] = {}
        self.dirs: set[str] = set()
        self.published: list[str] = []
        self.calls: list[Call] = []
        self.faults: dict[str, Fault] = {}
        self.hooks: dict[str, Hook] = {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> MemConnector:
        return cls()

    # -- test controls ---------------------------------------------------------------

    def fault(
        self,
        tool_name: str,
        kind: str,
        *,
        when: Mapping[str, Any] | None = None,
        times: int | None = None,
        message: str = "injected fault",
    ) -> None:
        """Make ``tool_name`` misbehave (see the module docstring)."""
        assert kind in FAULT_KINDS, kind
        self.faults[tool_name] = Fault(kind, dict(when) if when else None, times, message)

    def clear_faults(self) -> None:
        self.faults.clear()

    def calls_of(self, tool_name: str) -> list[Call]:
        return [c for c in self.calls if c.tool == tool_name]

    async def _enter(self, tool_name: str, args: BaseModel, ctx: CallContext) -> bool:
        """Record the call, run its hook and fault; True when the tool should return ``{}``."""
        data = args.model_dump()
        self.calls.append(Call(tool_name, data, ctx))
        hook = self.hooks.get(tool_name)
        if hook is not None:
            maybe = hook(data, ctx)
            if maybe is not None:
                await maybe
        fault = self.faults.get(tool_name)
        if fault is None or not fault.applies(data):
            return False
        if fault.times is not None:
            fault.times -= 1
        if fault.kind == "tool_error":
            raise ToolError(fault.message, status=409, code="injected")
        if fault.kind == "uncertain":
            raise EffectUncertainError(fault.message)
        if fault.kind == "unexpected":
            raise RuntimeError(fault.message)
        if fault.kind == "interrupt":
            raise KeyboardInterrupt(fault.message)
        if fault.kind == "hang":
            await anyio.sleep(3600)
        return fault.kind == "bad_result"

    # -- tools -----------------------------------------------------------------------

    def _put(self, args: PutArgs) -> dict[str, Any]:
        existed = args.key in self.data
        previous = self.data.get(args.key)
        self.data[args.key] = args.value
        return {"previous": previous, "existed": existed}

    @tool(
        effect=Effect.REVERSIBLE,
        permission="mem:write",
        input=PutArgs,
        output=PutResult,
        compensation=RESTORE,
        requires=[
            Requirement(
                tool="mem.mkdir",
                match=[Match(this="args.key", earlier="args.path", relation="within")],
            )
        ],
    )
    async def put(self, args: PutArgs, ctx: CallContext) -> dict[str, Any]:
        """Set a key."""
        bad = await self._enter("mem.put", args, ctx)
        result = self._put(args)
        return {} if bad else result

    @tool(
        effect=Effect.REVERSIBLE,
        permission="mem:write",
        input=PutArgs,
        output=PutResult,
        compensation=RESTORE,
        approval=Approval.ALWAYS,
    )
    async def guarded_put(self, args: PutArgs, ctx: CallContext) -> dict[str, Any]:
        """Set a key, after a person approved it."""
        bad = await self._enter("mem.guarded_put", args, ctx)
        result = self._put(args)
        return {} if bad else result

    @tool(effect=Effect.IDEMPOTENT, permission="mem:restore", input=RestoreArgs, output=KeyResult)
    async def restore(self, args: RestoreArgs, ctx: CallContext) -> dict[str, Any]:
        """Put a key back as it was."""
        if await self._enter("mem.restore", args, ctx):
            return {}
        if args.existed:
            self.data[args.key] = args.previous
        else:
            self.data.pop(args.key, None)
        return {"key": args.key}

    @tool(
        effect=Effect.COMPENSABLE,
        permission="mem:write",
        input=BumpArgs,
        output=BumpResult,
        compensation=Compensation(
            tool="mem.set_counter", argument_map={"name": "args.name", "value": "result.before"}
        ),
    )
    async def bump(self, args: BumpArgs, ctx: CallContext) -> dict[str, Any]:
        """Add to a counter."""
        bad = await self._enter("mem.bump", args, ctx)
        before = self.counters.get(args.name, 0)
        self.counters[args.name] = before + args.by
        return {} if bad else {"before": before, "after": before + args.by}

    @tool(effect=Effect.IDEMPOTENT, permission="mem:restore", input=SetCounterArgs, output=NoResult)
    async def set_counter(self, args: SetCounterArgs, ctx: CallContext) -> dict[str, Any]:
        """Set a counter."""
        if await self._enter("mem.set_counter", args, ctx):
            return {}
        self.counters[args.name] = args.value
        return {}

    @tool(
        effect=Effect.REVERSIBLE,
        permission="mem:write",
        input=PathArgs,
        output=PathResult,
        compensation=Compensation(tool="mem.rmdir", argument_map={"path": "args.path"}),
    )
    async def mkdir(self, args: PathArgs, ctx: CallContext) -> dict[str, Any]:
        """Make a directory."""
        bad = await self._enter("mem.mkdir", args, ctx)
        if args.path in self.dirs:
            raise ToolError(f"{args.path} exists", code="exists")
        self.dirs.add(args.path)
        return {} if bad else {"path": args.path}

    @tool(effect=Effect.IDEMPOTENT, permission="mem:restore", input=PathArgs, output=NoResult)
    async def rmdir(self, args: PathArgs, ctx: CallContext) -> dict[str, Any]:
        """Remove an empty directory."""
        if await self._enter("mem.rmdir", args, ctx):
            return {}
        if any(k.startswith(args.path + "/") for k in self.data):
            raise ToolError(f"{args.path} is not empty", code="not_empty")
        self.dirs.discard(args.path)
        return {}

    @tool(effect=Effect.IDEMPOTENT, permission="mem:delete", input=KeyArgs, output=NoResult)
    async def delete(self, args: KeyArgs, ctx: CallContext) -> dict[str, Any]:
        """Delete a key."""
        if await self._enter("mem.delete", args, ctx):
            return {}
        self.data.pop(args.key, None)
        return {}

    @tool(effect=Effect.IRREVERSIBLE, permission="mem:publish", input=PublishArgs, output=IdResult)
    async def publish(self, args: PublishArgs, ctx: CallContext) -> dict[str, Any]:
        """Publish a message to the world."""
        bad = await self._enter("mem.publish", args, ctx)
        self.published.append(args.message)
        return {} if bad else {"id": len(self.published)}

    @tool(effect=Effect.READ_ONLY, permission="mem:read", input=KeyArgs, output=GetResult)
    async def get(self, args: KeyArgs, ctx: CallContext) -> dict[str, Any]:
        """Read a key."""
        if await self._enter("mem.get", args, ctx):
            return {}
        return {"value": self.data.get(args.key), "exists": args.key in self.data}


def raw_executor(
    connector: MemConnector,
) -> Callable[[str, dict[str, Any], CallContext], Awaitable[dict[str, Any]]]:
    """An executor calling the tool method directly: its exceptions reach the engine unmapped."""

    async def execute(tool_name: str, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        spec = connector.tool_specs()[tool_name]
        method = getattr(connector, spec.method)
        result: dict[str, Any] = await method(spec.input.model_validate(args), ctx)
        return result

    return execute


def raw_compensator(
    connector: MemConnector,
) -> Callable[[CompensationCall], Awaitable[dict[str, Any]]]:
    """A compensator that calls the tool method directly (exceptions reach the engine unmapped)."""
    execute = raw_executor(connector)

    async def compensate(call: CompensationCall) -> dict[str, Any]:
        ctx = CallContext(
            run_id=call.run_id,
            step=call.step,
            idempotency_key=call.idempotency_key,
            compensation=True,
        )
        return await execute(call.tool, call.args, ctx)

    return compensate
