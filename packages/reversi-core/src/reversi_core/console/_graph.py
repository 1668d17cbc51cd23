"""The timeline's graph: one page of steps as an inline SVG, drawn on the server.

Each step is a circle numbered by its ``seq``, twenty to a row, oldest first; a solid
arrow runs from a step to each step it ``requires``, a dashed one to each later step
whose compensation a rollback would wait for because they touch the same resources (the
plan's ``after``, less the ``requires`` edges). Uncertain steps are yellow with a thick
ring, unrecoverable or failed compensations red, compensated steps green. Presentation
attributes only (no ``style``), as the console's Content-Security-Policy allows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from .._plan import PlannedStep
from ..journal import RollbackState, StepRecord, StepState

__all__ = ["graph_svg", "step_class"]

PER_ROW = 20
GAP = 56
RADIUS = 16

_FILL = {
    "uncertain": "#ffd54f",
    "unrecoverable": "#e57373",
    "failed": "#ef9a9a",
    "compensated": "#a5d6a7",
    "rejected": "#e0e0e0",
    "ok": "#bbdefb",
}


def step_class(step: StepRecord, planned: PlannedStep | None) -> str:
    """What the page makes stand out: ``uncertain``, ``unrecoverable``, ``failed``
    (a compensation that failed), ``compensated``, ``rejected`` or ``ok``."""
    if step.state is StepState.UNCERTAIN and step.resolution is None:
        return "uncertain"
    if step.rollback_state is RollbackState.UNRECOVERABLE or (
        planned is not None and planned.action == "unrecoverable"
    ):
        return "unrecoverable"
    if (
        step.rollback_state
        in (
            RollbackState.COMPENSATION_FAILED,
            RollbackState.VERIFICATION_FAILED,
        )
        or step.state is StepState.FAILED
    ):
        return "failed"
    if step.rollback_state is RollbackState.COMPENSATED:
        return "compensated"
    if step.state is StepState.REJECTED:
        return "rejected"
    return "ok"


def _centre(index: int) -> tuple[int, int]:
    return (RADIUS + 8 + (index % PER_ROW) * GAP, RADIUS + 8 + (index // PER_ROW) * GAP)


def graph_svg(steps: Sequence[StepRecord], plan: Mapping[int, PlannedStep]) -> str:
    """The SVG of ``steps`` (one page), with ``plan`` the planned step of each ``seq``."""
    if not steps:
        return ""
    where = {s.seq: _centre(i) for i, s in enumerate(steps)}
    rows = (len(steps) + PER_ROW - 1) // PER_ROW
    width = 2 * (RADIUS + 8) + (min(len(steps), PER_ROW) - 1) * GAP
    height = 2 * (RADIUS + 8) + (rows - 1) * GAP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="steps, their requires edges and resource order">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#555"/></marker></defs>',
    ]
    for s in steps:
        x1, y1 = where[s.seq]
        requires = set(s.requires)
        after = set(plan[s.seq].after) - requires if s.seq in plan else set()
        for target, dashed in [
            *((r, False) for r in sorted(requires)),
            *((a, True) for a in sorted(after)),
        ]:
            if target not in where:
                continue
            x2, y2 = where[target]
            dx, dy = x2 - x1, y2 - y1
            length = max((dx * dx + dy * dy) ** 0.5, 1.0)
            ex, ey = x2 - dx / length * RADIUS, y2 - dy / length * RADIUS
            sx, sy = x1 + dx / length * RADIUS, y1 + dy / length * RADIUS
            kind = "order" if dashed else "requires"
            dash = ' stroke-dasharray="4 3"' if dashed else ""
            parts.append(
                f'<line class="edge {kind}" x1="{sx:.0f}" y1="{sy:.0f}" x2="{ex:.0f}" '
                f'y2="{ey:.0f}" stroke="#555"{dash} marker-end="url(#arrow)"/>'
            )
    for s in steps:
        x, y = where[s.seq]
        cls = step_class(s, plan.get(s.seq))
        ring = ' stroke-width="4" stroke="#e65100"' if cls == "uncertain" else ' stroke="#333"'
        label = escape(f"step {s.seq} {s.tool}: {s.state.value}")
        if s.rollback_state:
            label += escape(f", {s.rollback_state.value}")
        parts.append(
            f'<a href="#step-{s.seq}"><g class="node {cls}" data-step="{s.seq}">'
            f"<title>{label}</title>"
            f'<circle cx="{x}" cy="{y}" r="{RADIUS}" fill="{_FILL[cls]}"{ring}/>'
            f'<text x="{x}" y="{y + 4}" text-anchor="middle" font-size="11">{s.seq}</text>'
            "</g></a>"
        )
    parts.append("</svg>")
    return "".join(parts)
