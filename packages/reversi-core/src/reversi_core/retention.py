"""Retention: which runs a journal may let go of, and which backups its kept steps need.

:func:`plan_prune` decides, by a policy (an age and the run states that may go), which
runs of a journal are removed; :func:`prune` removes them (each in one transaction, only
if its status is still the one judged). A run goes only when nothing in it can still be
needed: it is never ``open`` or ``rolling_back``, and no step of it is outstanding
(:func:`outstanding`). The states that may go:

- ``rolled_back``: rolled back completely;
- ``closed``: its rollback ended incomplete, but nothing is outstanding any more (the
  steps left were resolved since, or can be undone by nothing).

:func:`needed_names` is what the connectors' retention hook
(:meth:`~reversi_core.connector.Connector.prune_backups`) is given: every string held by
the results and compensations of the steps that stay, and the time before which a backup
no step names may go: the start of the oldest step of any kept run that still has
outstanding work (open, rolling back, or a step outstanding), and of any step still
``pending`` or unresolved ``uncertain``. A step that was pending when its process died
made a backup that no record names (it has no result), and resolving it does not name
it either, so the whole run holds the cut-off back until nothing in it is outstanding.
See docs/operate.md.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import JournalCorruptError
from .journal import Journal, RollbackState, RunRecord, RunStatus, StepRecord, StepState

__all__ = [
    "CLOCK_MARGIN",
    "PRUNE_STATES",
    "PrunePlan",
    "needed_names",
    "outstanding",
    "parse_duration",
    "plan_prune",
    "prune",
]

PRUNE_STATES = ("rolled_back", "closed")
"""The run states ``reversi prune --state`` takes."""

CLOCK_MARGIN = 1.0
"""Seconds taken off the backup cut-off time: a file's ``st_ctime`` comes from the
kernel's coarse clock, and the journal's times from the writing host's."""

_SETTLED = (RollbackState.COMPENSATED, RollbackState.NOT_APPLICABLE, RollbackState.UNRECOVERABLE)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smhdw])", re.ASCII)


def parse_duration(text: str) -> float:
    """``45s``, ``90m``, ``12h``, ``30d``, ``2w`` as seconds: one ASCII number (digits,
    optionally a fraction) and one unit, nothing else (no ``nan``, ``inf``, sign, unit
    left out, two units, or non-ASCII digits).

    Raises :class:`ValueError` naming what is wrong.
    """
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise ValueError(
            f"{text!r} is not a duration: give one number and one unit s, m, h, d or w "
            "(such as 45s, 90m, 12h, 30d or 2w)"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def outstanding(step: StepRecord) -> str | None:
    """Why ``step`` may still need something (its record, its backup), or ``None``.

    Outstanding: a step ``pending``; ``uncertain`` and not resolved; a write that may have
    applied and whose compensation has not ended as compensated, not applicable or
    unrecoverable (not yet run, failed, deferred).
    """
    if step.state is StepState.PENDING:
        return "its call is pending"
    if step.state is StepState.UNCERTAIN and step.resolution is None:
        return "its outcome is uncertain and not resolved"
    if step.effect == "read_only" or not step.may_have_applied:
        return None
    if step.rollback_state in _SETTLED:
        return None
    if step.rollback_state is None:
        return "it is not compensated"
    return f"its rollback state is {step.rollback_state.value}"


def _state_of(run: RunRecord, steps: list[StepRecord]) -> tuple[str | None, str | None]:
    """The prune state of a run (``rolled_back``, ``closed`` or ``None``), and why not."""
    if run.status in (RunStatus.OPEN, RunStatus.ROLLING_BACK):
        return None, f"it is {run.status.value}"
    for step in steps:
        why = outstanding(step)
        if why is not None:
            return None, f"step {step.seq} is outstanding: {why}"
    return ("rolled_back" if run.status is RunStatus.ROLLED_BACK else "closed"), None


def _last_activity(run: RunRecord, steps: list[StepRecord]) -> float:
    times = [run.started_at, run.rollback_started_at or 0.0, run.rollback_finished_at or 0.0]
    times += [s.finished_at or s.started_at for s in steps]
    return max(times)


@dataclass
class PrunePlan:
    """What :func:`plan_prune` decided.

    ``remove``: the runs that go, each with its prune state; ``kept``: the runs that stay
    and why (``None`` when only too young); ``unverified``: the runs that would go but
    whose chain does not verify, with what ``verify`` said (kept, unless ``force``, when
    they are also in ``remove``); ``needed`` and ``before``: see :func:`needed_names` (for
    the steps that stay).
    """

    cutoff: float
    remove: list[tuple[RunRecord, str]] = field(default_factory=list)
    kept: list[tuple[RunRecord, str]] = field(default_factory=list)
    unverified: list[tuple[RunRecord, str]] = field(default_factory=list)
    needed: set[str] = field(default_factory=set)
    before: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """``{"cutoff", "remove": [{"run", "status", "state", "steps"}], "kept": [...], "before"}``."""
        return {
            "cutoff": self.cutoff,
            "remove": [
                {"run": r.id, "status": r.status.value, "state": state, "steps": r.step_count}
                for r, state in self.remove
            ],
            "kept": [{"run": r.id, "status": r.status.value, "why": why} for r, why in self.kept],
            "unverified": [{"run": r.id, "verify": what} for r, what in self.unverified],
            "backups_before": self.before,
        }


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def needed_names(
    steps: Collection[StepRecord], now: float, holding: Collection[StepRecord] = ()
) -> tuple[set[str], float]:
    """Every string of the steps' results and compensations, and the backup cut-off time:
    ``now``, or the start of the oldest step of ``holding`` (the steps of the kept runs
    with outstanding work) or of ``steps`` still ``pending`` or unresolved ``uncertain``.
    """
    names: set[str] = set()
    before = min([now, *(step.started_at for step in holding)])
    for step in steps:
        names.update(_strings(step.result))
        names.update(_strings(step.compensation))
        if step.state is StepState.PENDING or (
            step.state is StepState.UNCERTAIN and step.resolution is None
        ):
            before = min(before, step.started_at)
    return names, before


def plan_prune(
    journal: Journal,
    older_than: float,
    states: Collection[str] = PRUNE_STATES,
    now: float | None = None,
    *,
    force: bool = False,
) -> PrunePlan:
    """Which runs of ``journal`` go: those in one of ``states`` (:data:`PRUNE_STATES`)
    whose last activity (start, rollback, a step's end) is more than ``older_than``
    seconds before ``now``, and whose hash chain verifies (``verify_run``): a run that
    would go but is reported tampered stays, in ``kept`` and ``unverified``, unless
    ``force`` (then it goes, and is still listed in ``unverified``). A run one of whose
    rows cannot be read back (:class:`~reversi_core.errors.JournalCorruptError`) stays even
    with ``force``, listed in both, and holds back every backup made since it started.
    Reads the journal only. Raises :class:`ValueError` for an unknown state and
    :class:`~reversi_core.errors.JournalError` when the journal fails.
    """
    unknown = set(states) - set(PRUNE_STATES)
    if unknown:
        raise ValueError(
            f"unknown run state {sorted(unknown)[0]!r}; choose from {', '.join(PRUNE_STATES)}"
        )
    now = time.time() if now is None else now
    plan = PrunePlan(cutoff=now - older_than)
    kept_steps: list[StepRecord] = []
    holding: list[StepRecord] = []
    unreadable_since = now
    for run in journal.list_runs():
        try:
            steps = journal.list_steps(run.id)
        except JournalCorruptError as exc:
            # its steps cannot be judged, nor the backups they name: keep it (even with
            # force) and every backup made since it started
            plan.unverified.append((run, f"run {run.id}: TAMPERED: {exc}"))
            plan.kept.append(
                (run, "a row of it cannot be read back (reversi verify); it is kept even "
                 "with --force, with every backup made since it started")
            )  # fmt: skip
            unreadable_since = min(unreadable_since, run.started_at)
            continue
        state, why = _state_of(run, steps)
        if state is None:
            plan.kept.append((run, why or ""))
            holding += steps
        elif state not in states:
            plan.kept.append((run, f"it is {state}, not a state given"))
        elif _last_activity(run, steps) > plan.cutoff:
            plan.kept.append((run, "it is younger than the cut-off"))
        else:
            check = journal.verify_run(run.id)
            if not check.ok:
                plan.unverified.append((run, check.describe()))
            if check.ok or force:
                plan.remove.append((run, state))
                continue
            plan.kept.append(
                (run, "its chain does not verify (reversi verify); --force removes it")
            )
        kept_steps += steps
    plan.needed, plan.before = needed_names(kept_steps, now, holding)
    plan.before = min(plan.before, plan.cutoff, unreadable_since) - CLOCK_MARGIN
    return plan


def prune(journal: Journal, plan: PrunePlan) -> list[str]:
    """Remove the runs of ``plan`` (each only if its status is still the one judged);
    returns the ids removed. Raises :class:`~reversi_core.errors.JournalError`."""
    return [run.id for run, _ in plan.remove if journal.delete_run(run.id, {run.status.value})]
