"""Replaying an uncertain step: the same call, with the step's own key, to learn its outcome.

A write whose answer was lost is journaled ``uncertain``. When the tool's vendor honours
idempotency keys (its manifest declares :class:`~reversi_core.manifest.Replay`), sending
the very same request again with the step's original key is safe: the vendor answers a
repeat with the outcome of the first request, or carries the request out now if the
first never reached it, and either way acts at most once. The answer then resolves the
step: applied, with the object the call made, or not applied. See
:meth:`reversi_core.engine.Run.replay` and docs/engine.md (RES-2, RES-3).

Because a replay may carry the call out for the first time, it is a new effect, and it is
refused, nothing sent, for a step that already has a resolution (a person's or an earlier
replay's: the backend's state was decided on, and the call must not now contradict it)
and in a run whose rollback has started (a run takes no new calls from then on).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._decisions import check_resolvable
from ._outcome import Executor, run_tool
from .connector import CallContext
from .errors import ReplayRefusedError, ToolError
from .journal import Journal, RunRecord, RunStatus, StepRecord, StepState
from .manifest import Manifest
from .redact import scrub
from .registry import Registry

__all__ = ["ReplayOutcome", "check_replayable", "replay_step"]


@dataclass(frozen=True)
class ReplayOutcome:
    """What a replay found: ``applied`` is ``True`` (the call took effect, ``step.result``
    holds what it returned), ``False`` (it did not) or ``None`` (the replay did not settle
    it: the step stays uncertain). ``reason`` says why for ``False`` and ``None``. ``step``
    is the step as journaled after the replay."""

    step: StepRecord
    applied: bool | None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"applied", "reason", "step"}``."""
        return {"applied": self.applied, "reason": self.reason, "step": self.step.to_json()}


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} hours"


def check_replayable(
    registry: Registry, record: StepRecord, run: RunRecord, now: float | None = None
) -> Manifest:
    """The manifest of ``record``'s tool, once the step may be replayed; else raise, sending nothing.

    ``run`` is the step's run as journaled now. Raises :class:`RunStateError` for a step
    that is not uncertain or was compensated, and :class:`ReplayRefusedError` for a step
    that was resolved already (by a person or by an earlier replay), in a run whose
    rollback has started, when ``registry`` has no manifest for the tool, when the manifest
    declares no :class:`~reversi_core.manifest.Replay`, or when the step started ``window``
    seconds or more before ``now`` (UNIX seconds; default the clock).
    """
    check_resolvable(record)
    if record.resolution is not None:
        decided = record.resolution.replace("_", " ")
        raise ReplayRefusedError(
            f"step {record.seq} of run {record.run_id} ({record.tool}) was already resolved as "
            f"{decided} ('reversi show {record.run_id}' shows it): a replay could carry the "
            "call out now, against that decision, and is refused. Nothing was sent; if the "
            "decision was wrong, resolve the step again with --applied or --not-applied"
        )
    if run.status is not RunStatus.OPEN:
        started = (
            time.strftime(" at %Y-%m-%d %H:%M:%S UTC", time.gmtime(run.rollback_started_at))
            if run.rollback_started_at
            else ""
        )
        raise ReplayRefusedError(
            f"the rollback of run {run.id} has started{started} (the run is "
            f"{run.status.value.replace('_', ' ')}), and a run takes no new calls from that "
            "moment: a replay may carry "
            f"step {record.seq}'s call out for the first time, a new effect. Nothing was sent; "
            "find out from the backend whether the call took effect and resolve the step with "
            "--applied or --not-applied (a rollback run again then treats it accordingly)"
        )
    tool = record.tool
    if tool not in registry:
        raise ReplayRefusedError(
            f"no manifest for {tool} is known here, so whether its vendor honours idempotency "
            "keys cannot be told; nothing was sent"
        )
    manifest = registry.get(tool)
    if manifest.replay is None:
        raise ReplayRefusedError(
            f"{tool} cannot be replayed: its manifest does not declare that the vendor honours "
            f"its idempotency key, so sending step {record.seq}'s call again could carry it out "
            "a second time. Nothing was sent; find out from the backend whether it took effect "
            "and resolve the step with --applied or --not-applied"
        )
    age = (time.time() if now is None else now) - record.started_at
    window = manifest.replay.window
    if age >= window:
        raise ReplayRefusedError(
            f"step {record.seq} ({tool}) was called {_hours(age)} ago, and a replay is safe only "
            f"within {_hours(window)} of the call: the vendor may no longer hold its key and "
            "would carry the call out as a new one. Nothing was sent; find out from the backend "
            "whether it took effect and resolve the step with --applied or --not-applied"
        )
    return manifest


async def replay_step(
    journal: Journal,
    registry: Registry,
    record: StepRecord,
    *,
    execute: Executor,
    resolve: Callable[..., StepRecord],
    timeout: float | None,
    now: float | None,
) -> ReplayOutcome:
    """Replay the uncertain step ``record`` (see :meth:`reversi_core.engine.Run.replay`)."""
    manifest = check_replayable(registry, record, journal.get_run(record.run_id), now)
    if not journal.begin_replay(record.run_id, record.seq):
        # resolved, or the rollback started, since the check: say which, as the check does
        run = journal.get_run(record.run_id)
        check_replayable(registry, journal.get_step(record.run_id, record.seq), run, now)
        raise ReplayRefusedError(
            f"step {record.seq} of run {record.run_id} can no longer be replayed; nothing was sent"
        )
    ctx = CallContext(
        run_id=record.run_id,
        step=record.seq,
        idempotency_key=record.idempotency_key,
        replay=True,
        timeout=timeout,
    )
    state, result, error = await run_tool(manifest, record.args, ctx, execute, timeout)
    if state is StepState.SUCCEEDED and result is not None:
        resolved = resolve(record.seq, applied=True, result=result)
        journal.add_event(record.run_id, record.seq, "replayed", {"outcome": "applied"})
        return ReplayOutcome(resolved, True)
    reason = scrub(str(error)) if error is not None else "the replay returned nothing"
    if isinstance(error, ToolError):
        resolved = resolve(record.seq, applied=False)
        journal.add_event(
            record.run_id, record.seq, "replayed", {"outcome": "not_applied", "reason": reason}
        )
        return ReplayOutcome(resolved, False, reason)
    journal.add_event(
        record.run_id, record.seq, "replayed", {"outcome": "uncertain", "reason": reason}
    )
    return ReplayOutcome(journal.get_step(record.run_id, record.seq), None, reason)
