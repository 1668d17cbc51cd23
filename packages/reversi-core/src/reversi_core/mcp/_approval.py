"""Approval: asking a person, through the MCP client, before an ``approval: always`` call.

:class:`Approvals` is the gateway's approver. On a connection opened with the
``initialize`` handshake it asks with an ``elicitation/create`` request in the middle of
the call; on a 2026-07-28 connection it answers the call with an ``input_required``
result holding the same form, and takes the answer of the call sent again, bound to that
exact call (run, tool and arguments) by an HMAC in ``requestState``. ``--approve TOOL``
approves a tool's calls in advance. With ``--approval-timeout SECONDS``, a call whose
client cannot be asked (no elicitation capability, or no client at all) waits instead for
a person's decision on ``reversi console``: :class:`ConsoleQueue` journals an approval
request bound to the call's run, tool and arguments (``journal/_approvals.py``) and
polls the journal for the decision, every :data:`POLL_INTERVAL` seconds, until the
limit. Every decision reaches the engine as an
:class:`~reversi_core.engine.ApprovalDecision`, which it journals with the step.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..engine import ApprovalDecision, ApprovalRequest, Approver
from ..errors import InvalidArgumentsError
from ..journal import Journal
from ..journal._approvals import ApprovalState, approvals_of, args_hash
from ..manifest import Manifest
from ..redact import scrub_json
from ..registry import Registry, canonical_json
from ._messages import PROG, describe

__all__ = [
    "APPROVAL_INPUT",
    "ELICIT_SCHEMA",
    "POLL_INTERVAL",
    "Approvals",
    "ConsoleQueue",
    "client_name",
    "declares_elicitation",
    "modern",
]

ELICIT_SCHEMA: dict[str, Any] = {
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

POLL_INTERVAL = 0.25
"""Seconds between two reads of the journal while a call waits for the console."""

APPROVAL_INPUT = "reversi/approval"
"""Key of the approval elicitation in an ``InputRequiredResult`` (2026-07-28 clients)."""


class ConsoleQueue:
    """Calls waiting in the journal for a person's decision on ``reversi console``.

    ``timeout`` is how long one call waits, in seconds; ``interval`` the seconds between
    two reads of the journal; ``say`` is told (one line) what waits and how to decide.
    """

    def __init__(
        self,
        journal: Journal,
        timeout: float,
        *,
        interval: float = POLL_INTERVAL,
        say: Any = None,
    ) -> None:
        self._queue = approvals_of(journal)
        self.timeout = timeout
        self.interval = interval
        self._say = say

    async def wait(self, request: ApprovalRequest, client: str) -> ApprovalDecision:
        """Journal a request for this exact call and wait for its decision (or the limit).

        A decision is taken only for the hash of this call's arguments; a request nobody
        decided in time is marked expired and the call refused. Cancelling the call marks
        it expired as well.
        """
        digest = args_hash(request.args)
        record = self._queue.request_approval(
            request.run_id,
            request.tool,
            request.args,
            request.reason,
            requested_by=f"{PROG} for {client}",
            timeout=self.timeout,
        )
        if self._say is not None:
            self._say(
                f"approval {record.id}: {request.tool} waits up to {self.timeout:g} s for a "
                "decision on reversi console"
            )
        decided = None
        try:
            with anyio.move_on_after(self.timeout + 2 * self.interval):
                while True:
                    current = self._queue.get_approval(record.id)
                    if current.state in (ApprovalState.APPROVED, ApprovalState.REFUSED):
                        decided = current
                        break
                    if current.current_state() is ApprovalState.EXPIRED:
                        break
                    await anyio.sleep(self.interval)
        finally:
            if decided is None:
                # a plain call: runs even when the call was cancelled
                late = self._queue.expire_approval(record.id)  # unless decided meanwhile
                if late.state in (ApprovalState.APPROVED, ApprovalState.REFUSED):
                    decided = late
        if decided is None:
            return ApprovalDecision(
                False,
                by="the gateway",
                note=f"nobody decided on reversi console within {self.timeout:g} s "
                f"(approval {record.id})",
            )
        if decided.args_hash != digest:  # pragma: no cover - the request is of this call
            return ApprovalDecision(False, by="the gateway", note="decided for other arguments")
        return ApprovalDecision(
            decided.state is ApprovalState.APPROVED,
            by=f"{decided.decided_by} via reversi console (approval {decided.id})",
            note=decided.note,
        )


class Approvals:
    """The gateway's approver (see the module docstring).

    ``pre_approved`` are the tools of ``--approve``. :meth:`approver` gives the approver
    of one call served by the SDK (``ctx``), :meth:`in_advance` the one of a call that
    nobody can be asked about. ``console``, when given, is where a call waits for a
    person when its client cannot be asked.
    """

    def __init__(
        self,
        registry: Registry,
        pre_approved: frozenset[str],
        console: ConsoleQueue | None = None,
    ) -> None:
        self._registry = registry
        self._pre_approved = pre_approved
        self._console = console
        self._key = secrets.token_bytes(32)

    def _pre(self, tool: str) -> ApprovalDecision | None:
        if tool in self._pre_approved:
            return ApprovalDecision(
                True,
                by=f"{PROG} --approve {tool}",
                note="approved in advance on the gateway's command line",
            )
        return None

    async def in_advance(self, request: ApprovalRequest) -> ApprovalDecision:
        """The approver of a call served without a client to ask: ``--approve``, the
        console's decision (with ``--approval-timeout``), or no."""
        pre = self._pre(request.tool)
        if pre is not None:
            return pre
        if self._console is not None:
            return await self._console.wait(request, "a client that cannot be asked")
        return ApprovalDecision(False, by="the gateway", note="no client to ask")

    def approver(
        self, ctx: ServerRequestContext[Any], answer: types.ElicitResult | None
    ) -> Approver:
        """The approver of one call the SDK serves; ``answer`` is the client's answer to
        this call's ``input_required`` question, when it sent one."""

        async def ask(request: ApprovalRequest) -> ApprovalDecision:
            pre = self._pre(request.tool)
            if pre is not None:
                return pre
            client = client_name(ctx)
            if answer is not None:
                return _decision(answer, client)
            if not (declares_elicitation(ctx) and ctx.session.can_send_request):
                if self._console is not None:
                    return await self._console.wait(request, client)
                return ApprovalDecision(
                    False,
                    by="the gateway",
                    note=(
                        f"{client} cannot be asked, as it did not declare the MCP elicitation "
                        f"capability; use a client that supports elicitation, or restart "
                        f"reversi-gateway with --approve {request.tool} to approve every call "
                        f"of it in advance, or with --approval-timeout SECONDS to wait for a "
                        f"decision on reversi console"
                    ),
                )
            try:
                elicited = await ctx.session.elicit_form(
                    _approval_message(request.manifest, request.args, request.reason),
                    ELICIT_SCHEMA,
                    related_request_id=ctx.request_id,
                )
            except Exception as exc:
                return ApprovalDecision(
                    False, by="the gateway", note=f"asking {client} failed: {describe(exc)}"
                )
            return _decision(elicited, client)

        return ask

    # -- 2026-07-28 connections: the multi-round-trip question -----------------------

    def state_for(self, run_id: str, name: str, args: dict[str, Any]) -> str:
        """The ``requestState`` that binds an answer to this exact call."""
        body = canonical_json([run_id, name, args]).encode("utf-8")
        return hmac.new(self._key, body, hashlib.sha256).hexdigest()

    def answer_in(
        self, params: types.CallToolRequestParams, run_id: str, name: str, args: dict[str, Any]
    ) -> types.ElicitResult | None:
        """The client's answer to this very call's approval question, if it sent one."""
        answer = (params.input_responses or {}).get(APPROVAL_INPUT)
        if not isinstance(answer, types.ElicitResult):
            return None
        state = params.request_state
        if state is None or not hmac.compare_digest(state, self.state_for(run_id, name, args)):
            return None  # an answer for another call (or arguments changed): ask again
        return answer

    def would_ask(self, scope: frozenset[str], name: str, args: dict[str, Any]) -> bool:
        """False when the engine would refuse the call before asking (scope, arguments)."""
        if self._registry.get(name).permission not in scope:
            return False
        try:
            self._registry.validate_arguments(name, args)
        except InvalidArgumentsError:
            return False
        return True

    def input_required(
        self, run_id: str, name: str, args: dict[str, Any], reason: str | None
    ) -> types.InputRequiredResult:
        """The ``input_required`` result that asks the client about this call."""
        question = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=_approval_message(self._registry.get(name), args, reason),
                requested_schema=ELICIT_SCHEMA,
            )
        )
        return types.InputRequiredResult(
            input_requests={APPROVAL_INPUT: question},
            request_state=self.state_for(run_id, name, args),
        )


def client_name(ctx: ServerRequestContext[Any]) -> str:
    params = ctx.session.client_params
    if params is not None and params.client_info.name:
        return params.client_info.name
    return "the MCP client"


def declares_elicitation(ctx: ServerRequestContext[Any]) -> bool:
    caps = ctx.session.client_capabilities
    if caps is None or caps.elicitation is None:
        return False
    return caps.elicitation.form is not None or caps.elicitation.url is None  # {} means form


def modern(ctx: ServerRequestContext[Any]) -> bool:
    """True on a 2026-07-28 connection: the server asks by ``input_required`` results."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


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
