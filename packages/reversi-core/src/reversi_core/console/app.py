"""The console's web application (Starlette): pages, actions and the JSON they poll.

Pages (GET): ``/?page=N`` the runs, :data:`RUNS_PAGE_SIZE` a page (one query of the
journal); ``/runs/RUN?page=N`` a run's timeline, :data:`PAGE_SIZE` steps a page, with its
graph, its uncertain steps and their evidence; ``/runs/RUN/plan`` the rollback plan (the
dry run's waves); ``/runs/RUN/rollback`` a rollback's progress;
``/approvals`` the approval queue. Actions (POST, CSRF-checked, answered by a redirect):
``/runs/RUN/rollback``, ``/runs/RUN/steps/SEQ/resolve``, ``/approvals/ID``. JSON:
``/api/runs/RUN/rollback`` and ``/api/approvals``. Every page goes through the
:class:`~._security.Guard`. Arguments and messages shown are scrubbed of registered
secrets (:mod:`reversi_core.redact`), the credentials of the environment and the values
of credential-named keys, as ``reversi export`` does (:mod:`reversi_core.audit`); the
journal is named without its password.
Starlette: https://www.starlette.io/
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..audit import register_environment_secrets, scrub_record
from ..cli._common import CliError
from ..cli._manifests import manifest_for
from ..connector import Compensator
from ..engine import DEFAULT_PARALLEL, Run
from ..errors import JournalError, RollbackInProgressError, RunStateError, UnknownRunError
from ..journal import Journal, StepState, describe_location
from ..journal._approvals import ApprovalDecisionError, ApprovalState, approvals_of
from ..journal._summaries import run_summaries_of
from ..manifest import Effect, Manifest
from ..redact import scrub
from ..registry import Registry
from ._graph import graph_svg, step_class
from ._rollbacks import ConsoleRollbacks
from ._security import Guard, check_csrf

__all__ = ["PAGE_SIZE", "RUNS_PAGE_SIZE", "ConsoleConfig", "create_app"]

PAGE_SIZE = 200
"""Steps on one page of a timeline."""
RUNS_PAGE_SIZE = 100
"""Runs on one page of the runs list."""

HERE = Path(__file__).parent
_ENV = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
)
_ENV.filters["when"] = lambda ts: "" if ts is None else _when(ts)
_ENV.filters["shown"] = lambda value: json.dumps(scrub_record(value), ensure_ascii=False)
_ENV.filters["scrub"] = lambda text: "" if text is None else scrub(str(text))


def _when(ts: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ts).astimezone().isoformat(sep=" ", timespec="seconds")


@dataclass
class ConsoleConfig:
    """What one console serves.

    ``journal`` is the open journal and ``location`` where it is (named on the page by
    :func:`describe_location`: never a password); ``token`` the console's token;
    ``cookie`` its cookie's name; ``hosts`` the ``Host`` names it answers to (``None``:
    any); ``compensator`` runs a compensation (``None``: no rollback from the page);
    ``timeout`` bounds one, in seconds; ``manifests`` a directory of manifest files for
    resolving a step as applied; ``user`` the name a decision is prefilled with.
    """

    journal: Journal
    location: str
    token: str
    cookie: str = "reversi_console"
    hosts: frozenset[str] | None = None
    compensator: Compensator | None = None
    timeout: float = 30.0
    parallel: int = DEFAULT_PARALLEL
    manifests: str | None = None
    user: str = "console user"


def _page(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
    console: ConsoleConfig = request.app.state.config
    body = _ENV.get_template(template).render(
        csrf=request.scope["state"]["csrf"],
        where=describe_location(console.location),
        user=console.user,
        waiting=len(approvals_of(console.journal).list_approvals(waiting=True)),
        **values,
    )
    return HTMLResponse(body, status)


def _problem(request: Request, message: str, status: int) -> HTMLResponse:
    return _page(request, "problem.html", status, message=scrub(message))


async def _form(request: Request) -> dict[str, str] | None:
    """The POST's form fields, or ``None`` when its CSRF token is missing or wrong."""
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    return fields if check_csrf(request, fields.get("csrf")) else None


async def _journal_unavailable(request: Request, exc: Exception) -> HTMLResponse:
    """A journal that cannot be read now (its database went away, its file is locked):
    503 with the journal's own message (scrubbed), not a bare 500; the console keeps
    serving and the next request tries again."""
    return _problem(
        request, f"the journal cannot be read now: {exc}; try again once it is back", 503
    )


def _journal(request: Request) -> Journal:
    config: ConsoleConfig = request.app.state.config
    return config.journal


# -- pages -----------------------------------------------------------------------


async def runs_page(request: Request) -> Response:
    try:
        page = max(1, int(request.query_params.get("page", "1")))
    except ValueError:
        return _problem(request, "page must be a whole number", 400)
    listed = run_summaries_of(_journal(request)).run_summaries(
        limit=RUNS_PAGE_SIZE, offset=(page - 1) * RUNS_PAGE_SIZE
    )
    pages = max(1, math.ceil(listed.total / RUNS_PAGE_SIZE))
    return _page(request, "runs.html", listed=listed, page=page, pages=pages)


def _run_or_404(request: Request) -> Any:
    try:
        return _journal(request).get_run(request.path_params["run"])
    except UnknownRunError:  # an outage is another JournalError: a 503 (_journal_unavailable)
        return None


def _recover_orphans(journal: Journal) -> None:
    """Mark the pending steps of gateways that died since the console opened the journal
    uncertain (and release their rollback locks), by the journal's own recovery."""
    recover = getattr(journal, "recover_orphans", None)
    if recover is not None:  # both stores have it; a journal double of a test may not
        recover()


async def run_page(request: Request) -> Response:
    _recover_orphans(_journal(request))
    run = _run_or_404(request)
    if run is None:
        return _problem(request, f"no run {request.path_params['run']!r} in the journal", 404)
    journal = _journal(request)
    steps = journal.list_steps(run.id)
    pages = max(1, math.ceil(len(steps) / PAGE_SIZE))
    try:
        page = min(max(1, int(request.query_params.get("page", "1"))), pages)
    except ValueError:
        return _problem(request, "page must be a whole number", 400)
    shown = steps[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    plan = Run.open(journal, Registry({}), run.id).plan_rollback()
    planned = {p.step: p for p in plan.steps}
    uncertain = [
        s
        for s in steps
        if s.state is StepState.UNCERTAIN
        and s.resolution is None
        and s.effect != Effect.READ_ONLY.value
    ]
    events: dict[int, list[dict[str, Any]]] = {}
    wanted = {s.seq for s in uncertain[:50]}
    for e in journal.list_events(run.id):
        if e["step"] in wanted:
            events.setdefault(e["step"], []).append(e)
    config: ConsoleConfig = request.app.state.config
    return _page(
        request,
        "run.html",
        run=run,
        steps=shown,
        total=len(steps),
        page=page,
        pages=pages,
        planned=planned,
        classes={s.seq: step_class(s, planned.get(s.seq)) for s in shown},
        graph=graph_svg(shown, planned),
        uncertain=uncertain[:50],
        events=events,
        progress=config_rollbacks(request).get(run.id),
        can_roll_back=config.compensator is not None,
    )


async def plan_page(request: Request) -> Response:
    _recover_orphans(_journal(request))
    run = _run_or_404(request)
    if run is None:
        return _problem(request, f"no run {request.path_params['run']!r} in the journal", 404)
    config: ConsoleConfig = request.app.state.config
    plan = Run.open(_journal(request), Registry({}), run.id).plan_rollback(parallel=config.parallel)
    counts: dict[str, int] = {}
    for s in plan.steps:
        counts[s.action] = counts.get(s.action, 0) + 1
    return _page(
        request,
        "plan.html",
        run=run,
        plan=plan,
        waves=[
            [p for p in plan.of("compensate") if p.wave == n + 1] for n in range(len(plan.waves))
        ],
        others=[p for p in plan.steps if p.action not in ("compensate", "not_applicable")],
        counts=counts,
        can_roll_back=config.compensator is not None,
    )


def config_rollbacks(request: Request) -> ConsoleRollbacks:
    rollbacks: ConsoleRollbacks = request.app.state.rollbacks
    return rollbacks


async def rollback_page(request: Request) -> Response:
    run = _run_or_404(request)
    if run is None:
        return _problem(request, f"no run {request.path_params['run']!r} in the journal", 404)
    return _page(request, "rollback.html", run=run, progress=config_rollbacks(request).get(run.id))


async def approvals_page(request: Request) -> Response:
    queue = approvals_of(_journal(request))
    records = queue.list_approvals(limit=200)
    waiting = [a for a in records if a.current_state() is ApprovalState.WAITING]
    decided = [a for a in records if a.current_state() is not ApprovalState.WAITING]
    return _page(request, "approvals.html", queue=waiting, decided=decided[:100])


# -- actions ---------------------------------------------------------------------


async def start_rollback(request: Request) -> Response:
    if await _form(request) is None:
        return _problem(request, "the form's CSRF token is missing or not this session's", 403)
    run = _run_or_404(request)
    if run is None:
        return _problem(request, f"no run {request.path_params['run']!r} in the journal", 404)
    _recover_orphans(_journal(request))
    try:
        config_rollbacks(request).start(run.id)
    except RollbackInProgressError as exc:
        return _problem(request, str(exc), 409)
    except RuntimeError as exc:
        return _problem(request, str(exc), 409)
    return RedirectResponse(f"/runs/{run.id}/rollback", 303)


async def resolve_step(request: Request) -> Response:
    form = await _form(request)
    if form is None:
        return _problem(request, "the form's CSRF token is missing or not this session's", 403)
    run = _run_or_404(request)
    if run is None:
        return _problem(request, f"no run {request.path_params['run']!r} in the journal", 404)
    outcome = form.get("outcome")
    who = (form.get("name") or "").strip()
    if outcome not in ("applied", "not_applied"):
        return _problem(request, "outcome must be applied or not_applied", 400)
    if not who:
        return _problem(request, "say who you are: the journal records who resolved the step", 400)
    config: ConsoleConfig = request.app.state.config
    journal = config.journal
    try:
        seq = int(request.path_params["seq"])
        step = journal.get_step(run.id, seq)
        applied = outcome == "applied"
        manifests: dict[str, Manifest] = {}
        needs_map = step.effect in (Effect.REVERSIBLE.value, Effect.COMPENSABLE.value)
        if applied and step.state is StepState.UNCERTAIN and needs_map:
            manifest = manifest_for(step.tool, config.manifests)
            if manifest is None:
                return _problem(
                    request,
                    f"no manifest for {step.tool} is known here, so its compensation cannot be "
                    "computed: install its connector or restart the console with --manifests DIR",
                    409,
                )
            manifests[step.tool] = manifest
        Run.open(journal, Registry(manifests), run.id).resolve(seq, applied=applied, decided_by=who)
    except (ValueError, JournalError, CliError) as exc:
        return _problem(request, str(exc), 404 if isinstance(exc, JournalError) else 400)
    except RunStateError as exc:
        return _problem(request, str(exc), 409)
    return RedirectResponse(f"/runs/{run.id}?page={1 + (seq - 1) // PAGE_SIZE}#step-{seq}", 303)


async def decide(request: Request) -> Response:
    form = await _form(request)
    if form is None:
        return _problem(request, "the form's CSRF token is missing or not this session's", 403)
    decision = form.get("decision")
    who = (form.get("name") or "").strip()
    if decision not in ("approve", "refuse"):
        return _problem(request, "decision must be approve or refuse", 400)
    if not who:
        return _problem(request, "say who you are: the journal records who decided", 400)
    try:
        approvals_of(_journal(request)).decide_approval(
            request.path_params["id"],
            approved=decision == "approve",
            by=who,
            args_hash=form.get("args_hash", ""),
            note=(form.get("note") or "").strip() or None,
        )
    except ApprovalDecisionError as exc:
        return _problem(request, str(exc), 409)
    return RedirectResponse("/approvals", 303)


# -- JSON ------------------------------------------------------------------------


async def rollback_json(request: Request) -> Response:
    progress = config_rollbacks(request).get(request.path_params["run"])
    if progress is None:
        return JSONResponse({"error": "this console started no rollback of that run"}, 404)
    body = progress.to_json()
    try:
        body["status"] = _journal(request).get_run(progress.run_id).status.value
    except UnknownRunError:
        body["status"] = None
    return JSONResponse(scrub_record(body))


async def approvals_json(request: Request) -> Response:
    waiting = approvals_of(_journal(request)).list_approvals(waiting=True)
    return JSONResponse({"waiting": [scrub_record(a.to_json()) for a in waiting]})


# -- the application -------------------------------------------------------------


def create_app(config: ConsoleConfig) -> Any:
    """The console's ASGI application for ``config``, behind its :class:`Guard`.

    Raises :class:`~reversi_core.errors.ConfigurationError` for a journal without an
    approval queue or :meth:`~reversi_core.journal._summaries.RunSummaryStore.run_summaries`.
    """
    approvals_of(config.journal)  # a store without the queue is refused now
    # what `reversi export` scrubs: credentials of the environment, credential-named keys
    register_environment_secrets()
    run_summaries_of(config.journal)  # ... or without the runs' summaries
    rollbacks = ConsoleRollbacks(
        config.journal, config.compensator, timeout=config.timeout, parallel=config.parallel
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await rollbacks.stop()  # no new compensation; the running ones finish

    app = Starlette(
        routes=[
            Route("/", runs_page),
            Route("/runs/{run}", run_page),
            Route("/runs/{run}/plan", plan_page),
            Route("/runs/{run}/rollback", rollback_page, methods=["GET"]),
            Route("/runs/{run}/rollback", start_rollback, methods=["POST"]),
            Route("/runs/{run}/steps/{seq:int}/resolve", resolve_step, methods=["POST"]),
            Route("/approvals", approvals_page),
            Route("/approvals/{id}", decide, methods=["POST"]),
            Route("/api/runs/{run}/rollback", rollback_json),
            Route("/api/approvals", approvals_json),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        lifespan=lifespan,
        exception_handlers={JournalError: _journal_unavailable},
    )
    app.state.config = config
    app.state.rollbacks = rollbacks
    return Guard(app, token=config.token, cookie=config.cookie, hosts=config.hosts)
