"""Slack's error answers as an error table: codes inside HTTP 200 answers, and rate limits.

Slack's Web API answers almost every failure with HTTP 200 and ``{"ok": false, "error":
"<code>"}`` (https://docs.slack.dev/apis/web-api/), sometimes with ``needed`` and
``provided`` (the scope missing, the scopes the token has) or
``response_metadata.messages`` (what was wrong with the arguments). The table flags such
an answer (``refused_when``), so each becomes a ``ToolError`` with status 200 and Slack's
code. A rate limit is HTTP 429 with ``Retry-After`` (seconds) and the code
``ratelimited``; the older ``rate_limited`` still appears in Slack's description of
chat.postMessage. Both become ``rate_limited``, saying when to try again
(https://docs.slack.dev/apis/web-api/rate-limits).

Two codes mean Slack may have done part of a write before failing, in its own words "It's
possible some aspect of the operation succeeded before the error was raised"
(``fatal_error``, ``internal_error``): after a write they are uncertain, never a plain
failure (:data:`MAYBE_APPLIED`).
"""

from __future__ import annotations

from typing import Any

from reversi_core.http import ErrorTable, RateLimit, body_value

__all__ = ["ERRORS", "HINTS", "MAYBE_APPLIED", "refused"]

MAYBE_APPLIED = frozenset({"fatal_error", "internal_error"})
"""Codes after which a write may have been partly applied (Slack's own description of them)."""

HINTS = {
    "channel_not_found": "no conversation with that ID, or the bot cannot see it",
    "not_in_channel": "the bot is not a member of the channel: invite it first",
    "is_archived": "the channel is archived",
    "msg_too_long": "the text is too long",
    "cant_delete_message": "the bot may delete only its own messages",
    "compliance_exports_prevent_deletion": "the workspace's compliance exports forbid deleting",
    "message_not_found": "no message with that timestamp in the conversation",
    "already_reacted": "the bot has already reacted with that emoji",
    "no_reaction": "the bot has not reacted with that emoji",
    "invalid_name": "no emoji of that name in the workspace",
    "too_many_reactions": "the message carries as many reactions as Slack allows",
    "missing_scope": "the token lacks a scope",
    "invalid_auth": "the token is not valid",
    "not_authed": "no token was sent",
    "token_revoked": "the token was revoked",
    "account_inactive": "the token's user or workspace was deleted",
    "invalid_cursor": "the cursor is not one Slack gave",
}
"""What a code means, in a few words, for the codes the tools meet most."""


def refused(body: Any) -> bool:
    """Whether a 2xx answer's JSON body is Slack's refusal, ``{"ok": false, ...}``."""
    return isinstance(body, dict) and body.get("ok") is False


def _details(body: Any) -> str:
    """Slack's code explained, the scope needed, and the argument messages Slack gave."""
    code = body_value(body, "error")
    parts = [HINTS[code]] if isinstance(code, str) and code in HINTS else []
    needed, provided = body_value(body, "needed"), body_value(body, "provided")
    if isinstance(needed, str):
        parts.append(
            f"needs scope {needed}"
            + (f" (the token has: {provided})" if isinstance(provided, str) else "")
        )
    messages = body_value(body, "response_metadata.messages")
    if isinstance(messages, list):
        parts += [m for m in messages[:3] if isinstance(m, str)]
    return "; ".join(parts)


ERRORS = ErrorTable(
    code_fields=("error",),
    message_fields=("message",),  # Slack's own refusals carry none; a proxy's may
    details=_details,
    statuses={404: "unknown_method", 429: "rate_limited"},
    rate_limit=RateLimit(codes=frozenset({"ratelimited", "rate_limited"})),
    refused_when=refused,
    refused_code="not_ok",
)
"""Slack's error table: the body's ``error`` is the code, in an HTTP 200 answer or an error status."""
