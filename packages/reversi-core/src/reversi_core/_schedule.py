"""The order of a rollback in parallel: which later steps each step must wait for.

A rollback decides every step newest first (docs/engine.md, RB-1). Run in parallel,
it keeps the part of that order that matters (RB-12): a step is decided, and its
compensation run, only once every later step it must follow has settled, which is

- every later step that ``requires`` it (its deferral depends on whether they still
  stand), and
- every later step whose resources overlap its own (:mod:`reversi_core._resources`;
  a step whose resources are unknown overlaps every step).

Only *candidates* take part: steps whose compensation would run unless deferred. Every
other step (read-only, failed, rejected, uncertain, unrecoverable, done in an earlier
attempt) is decided at once, touches nothing and waits for nothing.

:func:`waits_for` gives each candidate the later candidates it waits for; waves number
the compensations by that order (:class:`Waves`): a compensation is in wave 1 when it
waits for none that runs one, else one after the highest wave it waits for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ._resources import ancestors, journaled_resources
from .journal import StepRecord

__all__ = ["Waves", "waits_for"]


def waits_for(
    candidates: Sequence[StepRecord], dependents: Mapping[int, Sequence[int]]
) -> dict[int, list[int]]:
    """``{seq: [later candidates it waits for, newest first]}`` for candidates given newest first.

    ``dependents`` maps a step to the later steps that require it. Edges are kept
    short: a step waits for the nearest later step on each name it overlaps (that one
    waits for the one before it), and a step with unknown resources waits for every
    candidate since the previous such step, which every candidate after it waits for.
    Linear in the number of steps for independent resources.
    """
    member = {s.seq for s in candidates}
    last: dict[str, int] = {}  # name -> the oldest step so far that touches it
    under: dict[str, set[str]] = {}  # name -> the names seen that lie under it
    barrier: int | None = None  # the oldest step so far whose resources are unknown
    since: list[int] = []  # the candidates after the barrier
    out: dict[int, list[int]] = {}
    for step in candidates:
        preds = {d for d in dependents.get(step.seq, ()) if d in member}
        if barrier is not None:
            preds.add(barrier)
        names = journaled_resources(step.compensation)
        if names is None:
            preds.update(since)
            barrier, since = step.seq, []
            last.clear()
            under.clear()
        else:
            for name in names:
                for other in (name, *ancestors(name), *under.get(name, ())):
                    if other in last:
                        preds.add(last[other])
            for name in names:
                last[name] = step.seq
                for above in ancestors(name):
                    under.setdefault(above, set()).add(name)
            since.append(step.seq)
        preds.discard(step.seq)
        out[step.seq] = sorted(preds, reverse=True)
    return out


@dataclass
class Waves:
    """Wave numbers of a rollback's compensations, given the order of :func:`waits_for`.

    :meth:`settle` is told each candidate once every step it waits for has been told:
    ``ran`` says whether its compensation runs (it was not deferred). A step that ran is
    in wave ``1 + the highest level it waits for``; the level of a deferred step is the
    highest level it waits for, so that it leaves no gap.
    """

    order: Mapping[int, Sequence[int]]
    level: dict[int, int] = field(default_factory=dict)
    waves: list[list[int]] = field(default_factory=list)

    def settle(self, seq: int, *, ran: bool) -> int | None:
        """Record a candidate's outcome; return its wave (from 1) when it ran, else ``None``."""
        base = max((self.level.get(p, 0) for p in self.order.get(seq, ())), default=0)
        if not ran:
            self.level[seq] = base
            return None
        wave = base + 1
        self.level[seq] = wave
        while len(self.waves) < wave:
            self.waves.append([])
        self.waves[wave - 1].append(seq)
        return wave
