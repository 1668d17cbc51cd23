"""A fake backend whose compensations must come in the right order, for the parallel rollback tests.

The backend holds one stack of tokens per resource name. ``stk.push`` puts a token on a
stack and is undone by ``stk.pop``, which takes the token off only when it is on top:
a pop that finds its token buried under another (a wrong order) fails and leaves the
stack as it was, so a scheduler that reorders pops of one stack ends in another state
than the sequential rollback. A pop that starts while another pop of the same stack is
in flight (which no correct rollback does) fails too, and is recorded in
:attr:`StackBackend.violations`. ``after`` names an earlier token the push depends on: a
``requires`` edge to the step that pushed it, and the backend refuses to pop a token
while a token pushed after it still stands.

Tools:

- ``stk.push`` reversible: resources ``stk:{args.res}``;
- ``stk.push_any`` reversible: the same, with no resources declared (so it may touch
  anything, and its compensation runs alone);
- ``stk.pop`` idempotent: the compensation of both;
- ``stk.peek`` read-only.

Faults are per token: :attr:`StackBackend.fail_pops` (the pop raises a ``ToolError``),
and :attr:`StackBackend.forward` (``"fail"``: the push is refused; ``"uncertain"``: it
pushes, then raises ``EffectUncertainError``; ``"lost"``: it raises
``EffectUncertainError`` without pushing).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
from pydantic import BaseModel, ConfigDict

from reversi_core import (
    CallContext,
    Compensation,
    Connector,
    EffectUncertainError,
    Match,
    Requirement,
    ToolError,
    tool,
)
from reversi_core.manifest import Effect


class PushArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    res: str
    token: str
    after: str | None = None


class PopArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    res: str
    token: str


class PeekArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    res: str


class PushResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    res: str
    depth: int


class PopResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    popped: bool


class PeekResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top: str | None


@dataclass
class StackBackend:
    """The stacks, the faults and what went wrong (see the module docstring)."""

    stacks: dict[str, list[str]] = field(default_factory=dict)
    after: dict[str, str | None] = field(default_factory=dict)
    fail_pops: set[str] = field(default_factory=set)
    forward: dict[str, str] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    busy: set[str] = field(default_factory=set)
    pops: list[str] = field(default_factory=list)
    most_at_once: int = 0

    def state(self) -> dict[str, list[str]]:
        """The stacks, without the empty ones."""
        return {res: list(tokens) for res, tokens in sorted(self.stacks.items()) if tokens}


def _pauses(token: str) -> int:
    """How many times a pop lets other tasks run: varied, but the same for a token every time."""
    return zlib.crc32(token.encode()) % 4


_DEPENDS = [
    Requirement(tool=t, match=[Match(this="args.after", earlier="args.token")])
    for t in ("stk.push", "stk.push_any")
]


class StackConnector(Connector):
    """See the module docstring."""

    name = "stk"

    def __init__(self, backend: StackBackend | None = None) -> None:
        self.backend = backend or StackBackend()

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> StackConnector:
        return cls()

    def _push(self, args: PushArgs) -> dict[str, Any]:
        b = self.backend
        fault = b.forward.get(args.token)
        if fault == "fail":
            raise ToolError(f"push of {args.token} refused", code="injected")
        if fault == "lost":
            raise EffectUncertainError(f"push of {args.token}: the answer was lost")
        b.stacks.setdefault(args.res, []).append(args.token)
        b.after[args.token] = args.after
        if fault == "uncertain":
            raise EffectUncertainError(f"push of {args.token}: the answer was lost after it")
        return {"res": args.res, "depth": len(b.stacks[args.res])}

    @tool(
        effect=Effect.REVERSIBLE,
        permission="stk:write",
        input=PushArgs,
        output=PushResult,
        compensation=Compensation(
            tool="stk.pop",
            argument_map={"res": "args.res", "token": "args.token"},
            resources=["stk:{args.res}"],
        ),
        requires=_DEPENDS,
    )
    async def push(self, args: PushArgs, ctx: CallContext) -> dict[str, Any]:
        """Push a token on the stack of a resource."""
        return self._push(args)

    @tool(
        effect=Effect.REVERSIBLE,
        permission="stk:write",
        input=PushArgs,
        output=PushResult,
        compensation=Compensation(
            tool="stk.pop", argument_map={"res": "args.res", "token": "args.token"}
        ),
        requires=_DEPENDS,
    )
    async def push_any(self, args: PushArgs, ctx: CallContext) -> dict[str, Any]:
        """Push a token; the compensation declares no resources."""
        return self._push(args)

    @tool(effect=Effect.IDEMPOTENT, permission="stk:pop", input=PopArgs, output=PopResult)
    async def pop(self, args: PopArgs, ctx: CallContext) -> dict[str, Any]:
        """Take a token off its stack; refused when it is not on top."""
        b = self.backend
        if args.res in b.busy:
            b.violations.append(f"pop of {args.token} while another pop of {args.res} ran")
            raise ToolError(f"{args.res} is busy", code="concurrent")
        b.busy.add(args.res)
        b.most_at_once = max(b.most_at_once, len(b.busy))
        try:
            for _ in range(_pauses(args.token)):
                await anyio.lowlevel.checkpoint()
            if args.token in b.fail_pops:
                raise ToolError(f"pop of {args.token} refused", code="injected")
            stack = b.stacks.get(args.res, [])
            if args.token not in stack:
                return {"popped": False}  # popped already, or never pushed: nothing to do
            standing = [t for t, a in b.after.items() if a == args.token and _live(b, t)]
            if standing:
                raise ToolError(f"{standing} depend on {args.token}", code="depended_on")
            if stack[-1] != args.token:
                raise ToolError(
                    f"{args.token} is under {stack[-1]} on {args.res}", code="out_of_order"
                )
            stack.pop()
            b.pops.append(args.token)
            return {"popped": True}
        finally:
            b.busy.discard(args.res)

    @tool(effect=Effect.READ_ONLY, permission="stk:read", input=PeekArgs, output=PeekResult)
    async def peek(self, args: PeekArgs, ctx: CallContext) -> dict[str, Any]:
        """The token on top of a stack."""
        stack = self.backend.stacks.get(args.res) or [None]
        return {"top": stack[-1]}


def _live(b: StackBackend, token: str) -> bool:
    return any(token in tokens for tokens in b.stacks.values())
