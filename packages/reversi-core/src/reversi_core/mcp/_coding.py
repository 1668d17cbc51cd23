"""Outcome coding: a :class:`~reversi_core.engine.CallOutcome` as the client's ``CallToolResult``.

:func:`call_tool_result` is the last step of a call through the gateway. A call that
succeeded is answered with the upstream's result as it came (content blocks, its
``structuredContent``, its ``_meta``), with Reversi's ``_meta`` keys added
(``reversi/outcome``, ``reversi/run``, ``reversi/step``); one whose result the journal
had to scrub of a registered secret is answered as journaled. Every other outcome is an
``isError`` result whose ``structuredContent.error.code`` names the kind of refusal or
failure (docs/gateway.md, "Refusals"), with a message saying what to do.
"""

from __future__ import annotations

import json
from typing import Any

from ..engine import CallOutcome
from ..errors import (
    ApprovalDenied,
    CallRejected,
    EffectUncertainError,
    InvalidArgumentsError,
    JournalError,
    PermissionDenied,
    RunClosedError,
    ToolError,
    ToolUnavailableError,
    UnknownToolError,
)
from ..redact import scrub
from ._policy import UpstreamCall
from .serve import OUTCOME_META

__all__ = ["REASON_META", "RUN_META", "STEP_META", "call_tool_result", "unjournaled_result"]

RUN_META = "reversi/run"
"""``_meta`` key of every downstream ``CallToolResult``: the run id."""

STEP_META = "reversi/step"
"""``_meta`` key of a downstream ``CallToolResult``: the step journaled for the call."""

REASON_META = "reversi/reason"
"""Optional ``_meta`` key of a downstream ``tools/call``: the agent's reason, journaled."""


def call_tool_result(outcome: CallOutcome, call: UpstreamCall | None) -> dict[str, Any]:
    """The ``CallToolResult`` (a JSON object) that answers ``outcome``.

    ``call`` is the upstream call that produced it, when the call was forwarded.
    """
    if outcome.error is None and outcome.result is not None:
        assert outcome.step is not None
        return _success(outcome.run_id, outcome.step, outcome.result, call)
    error = outcome.error
    run_id, step = outcome.run_id, outcome.step
    if isinstance(error, CallRejected):
        return _error(run_id, step, "rejected", _rejection(error), _rejection_message(error))
    if isinstance(error, RunClosedError):
        return _error(
            run_id,
            step,
            "rejected",
            {"type": "rejected", "code": "run_closed"},
            f"{error} (reconnect to the gateway to begin a new run)",
        )
    if isinstance(error, EffectUncertainError):
        hint = ""
        if step is not None and outcome.journal_error is None:
            hint = (
                f" Step {step} of run {run_id} is journaled uncertain: once you know whether "
                f"it took effect, record it with 'reversi resolve {run_id} {step} --applied' "
                "or '--not-applied'."
            )
        body = error.to_json()
        if outcome.journal_error is not None:
            body["code"] = "journal"
        return _error(run_id, step, "uncertain", body, f"{error}{hint}")
    if isinstance(error, ToolError):
        return _error(run_id, step, "failed", error.to_json(), str(error))
    # the journal failed before the call ran: nothing was executed
    return _error(
        run_id,
        None,
        "failed",
        {"type": "gateway_error", "code": "gateway"},
        f"the gateway could not journal this call, so it did not run it: {error}"
        if isinstance(error, JournalError)
        else f"the gateway could not serve this call: {error}",
    )


def unjournaled_result(error: JournalError) -> dict[str, Any]:
    """The ``CallToolResult`` of a call the gateway did not run because the session's run
    could not be journaled (the journal refused the run): no run, no step."""
    message = scrub(
        f"the gateway could not start this session's run in the journal, so it did not run "
        f"the call: {error}"
    )
    return {
        "content": [{"type": "text", "text": message}],
        "structuredContent": {
            "error": {"type": "gateway_error", "code": "journal", "message": message}
        },
        "isError": True,
        "_meta": {OUTCOME_META: "failed"},
    }


def _success(
    run_id: str, seq: int, result: dict[str, Any], call: UpstreamCall | None
) -> dict[str, Any]:
    raw = call.raw if call is not None else None
    structured = call.structured if call is not None else None
    if raw is not None and (result is structured or result == structured):
        # The upstream's answer as it came (content blocks included), plus our _meta.
        out = dict(raw)
        upstream_meta = raw.get("_meta")
        if type(upstream_meta) is dict:
            meta = {**upstream_meta, OUTCOME_META: "succeeded", RUN_META: run_id, STEP_META: seq}
        else:
            meta = {OUTCOME_META: "succeeded", RUN_META: run_id, STEP_META: seq}
        out["_meta"] = meta
        out["structuredContent"] = result
        out["isError"] = False
        if type(out.get("content")) is not list:
            out["content"] = [{"type": "text", "text": _result_text(result)}]
        return out
    # The engine scrubbed a secret out of the result: send what it journaled.
    return {
        "content": [{"type": "text", "text": _result_text(result)}],
        "structuredContent": result,
        "isError": False,
        "_meta": {OUTCOME_META: "succeeded", RUN_META: run_id, STEP_META: seq},
    }


def _error(
    run_id: str, step: int | None, outcome: str, error: dict[str, Any], message: str
) -> dict[str, Any]:
    message = scrub(message)
    body = dict(error)
    body["message"] = message
    meta: dict[str, Any] = {OUTCOME_META: outcome, RUN_META: run_id}
    if step is not None:
        meta[STEP_META] = step
    return {
        "content": [{"type": "text", "text": message}],
        "structuredContent": {"error": body},
        "isError": True,
        "_meta": meta,
    }


def _rejection(exc: CallRejected) -> dict[str, Any]:
    code = "rejected"
    body: dict[str, Any] = {"type": "rejected"}
    if isinstance(exc, UnknownToolError):
        code = "unknown_tool"
    elif isinstance(exc, ToolUnavailableError):
        code = exc.code
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
