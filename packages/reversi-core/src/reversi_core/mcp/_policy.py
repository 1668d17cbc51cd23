"""Call policy: forwarding one ``tools/call`` to the upstream and reading what it means.

:class:`UpstreamCall` is the engine's executor for one call (``Run.attempt(execute=...)``):
it sends the request with the step's idempotency key, run and step in ``_meta``, waits up
to the call timeout, and turns the upstream's answer into a JSON result or the error the
step's state follows from (docs/gateway.md, "Failures"):

* a result without ``isError``: the result (its ``structuredContent``, or
  ``{"content": <text>}``);
* ``isError`` with ``_meta["reversi/outcome"]`` ``"uncertain"``: EffectUncertainError;
  ``"failed"``: ToolError; neither (not a Reversi server): uncertain for a writing tool,
  failed for a read-only one;
* a JSON-RPC error refusing the request (invalid params, unknown method): ToolError;
  another one on a writing tool: EffectUncertainError;
* the upstream closing its pipes (over HTTP: the connection dropping before the
  answer), or no answer in time: uncertain for a writing tool, failed for a read-only
  one; that upstream is retired and a new one started;
* a request that never reached the upstream (:class:`~._link.UpstreamNotSent`: over
  HTTP, no connection, TLS or the credentials refused): failed.

It keeps the upstream's result as it came (:attr:`UpstreamCall.raw`), so that the answer
to the client can be that result with Reversi's ``_meta`` added.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from mcp_types import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND

from .._tracing import inject
from ..connector import CallContext
from ..errors import EffectUncertainError, ToolError
from ._link import Supervisor, UpstreamNotSent
from ._upstream import UpstreamClosed, UpstreamConnection, UpstreamError
from .serve import IDEMPOTENCY_KEY_META, OUTCOME_META, RUN_ID_META
from .serve import STEP_META as UPSTREAM_STEP_META

__all__ = ["UpstreamCall", "map_result", "upstream_error"]

_MAYBE = "the change may or may not have happened"


class UpstreamCall:
    """One ``tools/call`` forwarded to the upstream (see the module docstring).

    Call it as an :data:`~reversi_core.engine.Executor`. ``writes`` says whether the
    tool may change something; ``timeout`` is the call timeout in seconds; ``wire`` is
    the tool's name at the upstream when it is not the manifest's (``--tool-namespace``).
    After it
    returned, :attr:`raw` is the upstream's ``CallToolResult`` as parsed JSON and
    :attr:`structured` the JSON result handed to the engine.
    """

    __slots__ = ("raw", "structured", "timeout", "upstream", "wire", "writes")

    def __init__(
        self, upstream: Supervisor, writes: bool, timeout: float, wire: str | None = None
    ) -> None:
        self.upstream = upstream
        self.wire = wire
        self.writes = writes
        self.timeout = timeout
        self.raw: dict[str, Any] | None = None
        self.structured: dict[str, Any] | None = None

    async def __call__(self, tool: str, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        """Forward the call; return its JSON result or raise ToolError / EffectUncertainError."""
        conn = self.upstream.live
        if conn is None:
            try:
                conn = await self.upstream.connection()
            except UpstreamError as exc:
                raise ToolError(str(exc), code="upstream_unavailable") from None
        params = self._params(tool, args, ctx.idempotency_key, ctx.run_id, ctx.step)
        inject(params["_meta"])  # the call's span, as the upstream's parent (when tracing)
        try:
            answer = await conn.request("tools/call", params, self.timeout)
        except (UpstreamClosed, UpstreamNotSent, TimeoutError) as exc:
            return self.settle(conn, tool, None, exc)
        return self.settle(conn, tool, answer, None)

    def send(
        self,
        conn: UpstreamConnection,
        tool: str,
        args: dict[str, Any],
        key: str,
        run_id: str,
        step: int,
        done: Callable[[dict[str, Any] | None, Exception | None], None],
    ) -> int:
        """Forward the call on the live stdio connection ``conn`` without waiting (no
        task), with the step's idempotency ``key``, ``run_id`` and ``step`` in its
        ``_meta`` and the tool's upstream name (:attr:`wire`).

        ``done`` is told, once, from the event loop's callback that read the answer (or
        saw the upstream go, or the timeout expire): ``(result, None)`` with the JSON
        result, or ``(None, error)`` with the ToolError / EffectUncertainError that
        :meth:`__call__` would raise. Returns the request id, for
        :meth:`UpstreamConnection.cancel_request`. Raises :class:`UpstreamClosed` when
        ``conn`` is closed already. No ``traceparent`` is written: the gateway serves a
        call this way only when it is not tracing.
        """

        def on_answer(answer: dict[str, Any] | None, error: BaseException | None) -> None:
            try:
                result = self.settle(conn, tool, answer, error)
            except (ToolError, EffectUncertainError) as exc:
                done(None, exc)
                return
            done(result, None)

        params = self._params(tool, args, key, run_id, step)
        return conn.send_request("tools/call", params, on_answer, self.timeout)

    def _params(
        self, tool: str, args: dict[str, Any], key: str | None, run_id: str | None, step: int | None
    ) -> dict[str, Any]:
        return {
            "_meta": {IDEMPOTENCY_KEY_META: key, RUN_ID_META: run_id, UPSTREAM_STEP_META: step},
            "name": self.wire or tool,
            "arguments": args,
        }

    def settle(
        self,
        conn: Any,
        tool: str,
        answer: dict[str, Any] | None,
        error: BaseException | None,
    ) -> dict[str, Any]:
        """What the upstream's answer to the call on link ``conn`` (or ``error``:
        :class:`UpstreamClosed`, :class:`UpstreamNotSent`, :class:`TimeoutError`) means:
        the JSON result, or ToolError / EffectUncertainError raised. A connection that
        closed, could not send or did not answer in time is retired."""
        writes = self.writes
        if isinstance(error, UpstreamClosed):
            self.upstream.discard(conn, f"it closed the connection during {tool}")
            msg = f"the upstream server exited or closed the connection during {tool}"
            if writes:
                raise EffectUncertainError(f"{msg}; {_MAYBE}") from None
            raise ToolError(msg, code="upstream_closed") from None
        if isinstance(error, UpstreamNotSent):  # nothing reached the upstream: nothing happened
            self.upstream.discard(conn, f"{tool} could not be sent")
            raise ToolError(
                f"{tool} could not be sent to the upstream server: {error}",
                code="upstream_unavailable",
            ) from None
        if error is not None:  # TimeoutError
            timeout = self.timeout
            self.upstream.discard(conn, f"no answer to {tool} within {timeout:g} s")
            msg = f"the upstream server did not answer {tool} within {timeout:g} s (--call-timeout)"
            if writes:
                raise EffectUncertainError(f"{msg}; {_MAYBE}") from None
            raise ToolError(msg, code="timeout") from None
        assert answer is not None
        if "error" in answer:
            upstream_error(tool, writes, answer["error"])
        result = answer.get("result")
        structured = map_result(tool, result, writes)
        self.raw = cast(dict[str, Any], result)
        self.structured = structured
        return structured


def upstream_error(tool: str, writes: bool, error: Any) -> None:
    """Raise what a JSON-RPC error answer to ``tools/call`` means for the step."""
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        message = json.dumps(error)
    if code in (INVALID_PARAMS, METHOD_NOT_FOUND, INVALID_REQUEST) or not writes:
        raise ToolError(f"the upstream server refused {tool}: {message}", code=f"mcp_{code}")
    raise EffectUncertainError(
        f"the upstream server answered {tool} with error {code} ({message}); {_MAYBE}"
    )


def map_result(tool: str, result: Any, writes: bool) -> dict[str, Any]:
    """Map the upstream's ``CallToolResult`` (parsed JSON) to a JSON result or a raised error.

    ``_meta["reversi/outcome"]`` decides an error: ``failed`` is definite (ToolError),
    ``uncertain`` is not (EffectUncertainError). An error without it did not come from a
    Reversi server, which cannot be trusted to have changed nothing: for a writing tool
    it is uncertain, for a read-only one failed. An answer that is not a result object
    at all is treated the same way.
    """
    if type(result) is not dict:
        what = f"the upstream server's answer to {tool} is not a tool result"
        if writes:
            raise EffectUncertainError(f"{what}; {_MAYBE}")
        raise ToolError(what, code="bad_result")
    structured = result.get("structuredContent")
    if result.get("isError") is True:
        meta = result.get("_meta")
        meta = meta if type(meta) is dict else {}
        error = structured.get("error") if type(structured) is dict else None
        error = error if type(error) is dict else {}
        message = error.get("message")
        if not isinstance(message, str) or not message:
            message = (
                text_of(result.get("content")) or f"{tool} failed (the upstream gave no message)"
            )
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
    if type(structured) is dict:
        return structured
    return {"content": text_of(result.get("content"))}


def text_of(content: Any) -> str:
    """The text blocks of a raw ``content`` list, joined by newlines."""
    if type(content) is not list:
        return ""
    return "\n".join(
        block["text"]
        for block in content
        if type(block) is dict and block.get("type") == "text" and type(block.get("text")) is str
    )
