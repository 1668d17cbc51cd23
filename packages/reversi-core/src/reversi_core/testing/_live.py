"""Live scenarios: a connector's forward calls and their rollback against the real vendor, recorded.

A connector declares one :class:`LiveScenario` in its certification fixture
(``CertificationFixture(live=...)``): an async function that, given a :class:`LiveContext`
(the connector built from the environment, a factory of runs over a real
:class:`~reversi_core.journal.SQLiteJournal`, a unique suffix for the names of the
throwaway objects it creates), makes a few forward calls through
:class:`reversi_core.Run`, rolls the run back and checks what the vendor then holds.
``nox -s live -- NAME`` (``scripts/live.py``) runs it against the real vendor when the
connector's variables are set, and records every HTTP exchange with vcrpy
(https://vcrpy.readthedocs.io/) into ``tests/cassettes/<scenario>.yaml`` of the package,
every credential scrubbed. The package's tests then replay that cassette
(:func:`replay_cassette`): the same scenario, against the recorded answers, with no
network, where a request the cassette does not hold, or a recorded one not sent, fails.

Recording and replaying (the cassettes and their matching) are in
:mod:`reversi_core.testing._cassettes`, the cassettes' credentials in
:mod:`reversi_core.testing._scrubbing`.
"""

from __future__ import annotations

import re
import secrets as _random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..connector import (
    CallContext,
    Connector,
    compensator_for,
    executor_for,
    registry_for,
)
from ..engine import RollbackReport, Run
from ..journal import RunStatus, SQLiteJournal

if TYPE_CHECKING:
    pass

__all__ = [
    "REPLAY_CREDENTIAL",
    "SUFFIX_PLACEHOLDER",
    "VOLATILE_PLACEHOLDER",
    "CassetteMismatch",
    "CassetteRejected",
    "LiveCheckFailed",
    "LiveContext",
    "LiveOutcome",
    "LiveScenario",
    "LiveVariable",
    "MissingLiveVariables",
    "ReplayReport",
    "live_variables",
    "resolve_variables",
    "run_live",
]


SUFFIX_PLACEHOLDER = "cassette00"
"""What a recording's random suffix becomes in the cassette, and the suffix of a replay."""

REPLAY_CREDENTIAL = "reversi-replay-credential"
"""The value a replay gives each secret setting, unless the scenario's ``replay_env`` says."""

VOLATILE_PLACEHOLDER = "<volatile>"
"""What a match of a scenario's ``volatile`` pattern stands as when a replay compares requests."""


_SCENARIO_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SUFFIX_BYTES = 5  # ten hex digits, like SUFFIX_PLACEHOLDER's ten characters


# -- the declaration -------------------------------------------------------------------


@dataclass(frozen=True)
class LiveVariable:
    """An environment variable a live scenario reads (besides the connector's own settings).

    ``env`` is its name (``REVERSI_LIVE_GITHUB_REPO``), ``help`` a phrase saying what to
    put there (``owner/repo of a throwaway repository the token may write to``).
    ``default`` is used when it is unset; ``optional`` ones may stay unset. The others
    are required: without them the session names them and exits non-zero.
    """

    env: str
    help: str
    default: str | None = None
    optional: bool = False

    def __post_init__(self) -> None:
        if not _VARIABLE.match(self.env):
            raise ValueError(f"a live variable is an upper-case name, not {self.env!r}")
        if not self.help.strip():
            raise ValueError(f"live variable {self.env} needs a help text")

    @property
    def required(self) -> bool:
        """True when the scenario cannot run without it."""
        return self.default is None and not self.optional


@dataclass(frozen=True)
class LiveScenario:
    """A connector's live scenario (see the module docstring).

    ``name`` names the cassette (``tests/cassettes/<name>.yaml``: lower-case letters,
    digits and ``-``); ``summary`` says in a sentence what it creates, what the rollback
    undoes and what it checks. ``run(live)`` is the scenario: forward calls through
    ``live.start_run()``, ``await live.rollback(run)``, checks with ``live.check``; every
    object it creates is named with ``live.suffix`` so that two runs never collide, and
    every run it starts must be rolled back by the end. ``variables`` are the extra
    variables it reads (``live.env``). ``record`` is false for a connector that does not
    speak HTTP (postgres): the scenario runs, nothing is recorded. ``test_env(handle)``
    gives the scenario's variables (and any setting to override) for a run against the
    certification fixture's backend, ``handle`` being what the fixture's ``backend``
    yielded; the fixture's ``command_line`` gives the rest. ``replay_env`` gives the
    values a replay builds the connector with for its secret settings, when
    :data:`REPLAY_CREDENTIAL` does not pass the connector's own checks. ``volatile`` are
    regular expressions of what the connector itself makes up anew on every run and
    sends (an object store's backup named ``.reversi-backups/<uuid4>``): a replay
    compares a request's path, query and body with each match replaced by
    :data:`VOLATILE_PLACEHOLDER` on both sides, so that a fresh value still matches the
    recorded one; everything else is compared as ever.

    Raises ``ValueError`` for a malformed name, an empty summary, a repeated variable,
    or a ``volatile`` pattern that does not compile or matches the empty string.
    """

    name: str
    summary: str
    run: Callable[[LiveContext], Awaitable[None]]
    variables: Sequence[LiveVariable] = ()
    record: bool = True
    test_env: Callable[[Any], Mapping[str, str]] | None = None
    replay_env: Mapping[str, str] = field(default_factory=dict)
    volatile: Sequence[str] = ()

    def __post_init__(self) -> None:
        if not _SCENARIO_NAME.match(self.name):
            raise ValueError(
                f"a live scenario's name is lower-case letters, digits and '-', not {self.name!r}"
            )
        if not self.summary.strip():
            raise ValueError(f"live scenario {self.name} needs a summary")
        names = [v.env for v in self.variables]
        if len(set(names)) != len(names):
            raise ValueError(f"live scenario {self.name} declares a variable twice: {names}")
        for pattern in self.volatile:
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"live scenario {self.name}: volatile pattern {pattern!r} does not compile: {exc}"
                ) from None
            if compiled.fullmatch(""):
                raise ValueError(
                    f"live scenario {self.name}: volatile pattern {pattern!r} matches the empty string"
                )


class LiveCheckFailed(AssertionError):
    """A live scenario's check failed: the vendor does not hold what the scenario expected."""


class MissingLiveVariables(Exception):
    """The variables a live scenario needs are not set; ``missing`` lists them."""

    def __init__(
        self, connector: str, missing: Sequence[LiveVariable], optional: Sequence[LiveVariable]
    ):
        self.missing = list(missing)
        self.optional = list(optional)
        lines = [
            f"{connector}: the live scenario needs these environment variables, which are not set:"
        ]
        lines += [f"  {v.env}: {v.help}" for v in self.missing]
        if self.optional:
            lines.append("optional:")
            lines += [
                f"  {v.env}: {v.help}" + (f" (default: {v.default})" if v.default else "")
                for v in self.optional
            ]
        super().__init__("\n".join(lines))


class CassetteRejected(Exception):
    """A recording was refused (and its file removed); ``problems`` says why, naming no secret."""

    def __init__(self, cassette: Path, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__(
            f"the recording {cassette} was refused and removed:\n"
            + "\n".join(f"- {p}" for p in problems)
        )


class CassetteMismatch(AssertionError):
    """A replay differed from its cassette; ``problems`` lists each difference."""

    def __init__(self, cassette: Path, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__(
            f"the replay of {cassette} failed:\n" + "\n".join(f"- {p}" for p in problems)
        )


# -- what the scenario is given ----------------------------------------------------------


class LiveContext:
    """What a live scenario works with: the connector, its runs, its names, its checks.

    ``connector`` is built from the environment (:meth:`Connector.from_env`); ``env``
    holds the scenario's own variables (defaults applied); ``environ`` everything the
    connector was built from (a scenario that must prepare the backend outside the
    connector, as postgres creates its table, reads its settings here). ``suffix`` is
    unique to this live run (:data:`SUFFIX_PLACEHOLDER` in a replay); ``replaying`` is
    true in a replay.
    """

    def __init__(
        self,
        connector: Connector,
        *,
        env: Mapping[str, str],
        environ: Mapping[str, str],
        suffix: str,
        data_dir: Path,
        replaying: bool = False,
        log: Callable[[str], None] = lambda _line: None,
    ) -> None:
        self.connector = connector
        self.env = dict(env)
        self.environ = dict(environ)
        self.suffix = suffix
        self.replaying = replaying
        self.journal = SQLiteJournal.open(data_dir)
        self.data_dir = data_dir
        self._log = log
        self._registry = registry_for([connector])
        self._execute = executor_for([connector])
        self._compensate = compensator_for([connector])
        self._runs: list[Run] = []
        self._direct = 0

    @property
    def runs(self) -> list[Run]:
        """The runs :meth:`start_run` started, oldest first."""
        return list(self._runs)

    def name(self, stem: str, sep: str = "-") -> str:
        """``stem`` followed by ``sep`` and the suffix: a name no other live run uses."""
        return f"{stem}{sep}{self.suffix}"

    def log(self, line: str) -> None:
        """Say what the scenario is doing (printed by ``nox -s live``)."""
        self._log(line)

    def start_run(self, label: str | None = None) -> Run:
        """A new run over the scenario's journal, every tool of the connector in scope.

        Its id is ``run_live_<suffix>_<n>``, so the idempotency keys derived from it are
        the same in a replay as in the recording.
        """
        run = Run.start(
            self.journal,
            self._registry,
            executor=self._execute,
            label=label or f"live scenario of {self.connector.name}",
            run_id=f"run_live_{self.suffix}_{len(self._runs) + 1}",
        )
        self._runs.append(run)
        return run

    async def rollback(self, run: Run) -> RollbackReport:
        """Roll ``run`` back through the connector's compensations; the report, if complete.

        The compensations run one at a time, newest first (``parallel=1``): a recording
        must replay in the order it was made, and two compensations at once send their
        requests in an order of the moment. Two of them whose requests look alike once
        the volatile parts are masked (two objects' backups) then get each other's
        recorded answers on replay. Rollback in parallel is tested on its own (RB-11 to
        RB-14).

        Raises :class:`LiveCheckFailed` listing the outstanding steps otherwise.
        """
        report = await run.rollback(compensate=self._compensate, parallel=1)
        if not report.complete:
            outstanding = "; ".join(
                f"step {o.step} {o.tool}: {o.state} ({o.reason})" for o in report.outstanding
            )
            raise LiveCheckFailed(f"the rollback of {run.id} is incomplete: {outstanding}")
        self.log(f"rolled back {run.id}: {len(report.compensated_now)} compensations")
        return report

    async def call(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Call ``tool`` directly (no journal), to check what the vendor holds."""
        self._direct += 1
        key = f"reversi-live-{self.suffix}-direct-{self._direct}"
        return await self.connector.call(tool, dict(args), CallContext(idempotency_key=key))

    def check(self, condition: object, what: str) -> None:
        """Raise :class:`LiveCheckFailed` saying ``what`` was expected unless ``condition`` holds."""
        if not condition:
            raise LiveCheckFailed(f"expected {what}")

    async def roll_back_leftovers(self) -> None:
        """After a failed scenario, roll back every run still open or incomplete (best effort).

        Nothing is raised: each outcome is logged, and so is where the journal is kept.
        """
        for run in self._runs:
            if run.record.status not in (RunStatus.OPEN, RunStatus.ROLLBACK_INCOMPLETE):
                continue
            try:
                report = await run.rollback(compensate=self._compensate, parallel=1)
            except Exception as exc:  # reported, never raised: the scenario's own error wins
                self.log(f"cleanup: the rollback of {run.id} failed: {type(exc).__name__}: {exc}")
                continue
            state = "complete" if report.complete else "INCOMPLETE"
            self.log(f"cleanup: rolled back {run.id} ({state})")
        self.log(
            f"the journal is kept in {self.data_dir}: `reversi show RUN_ID --data {self.data_dir}`"
        )

    def close(self) -> None:
        """Close the journal."""
        self.journal.close()


# -- variables and credentials -------------------------------------------------------------


def live_variables(cls: type[Connector], scenario: LiveScenario) -> list[LiveVariable]:
    """Every variable the scenario reads: the connector's settings, then the scenario's own.

    For an :class:`~reversi_core.http.HttpConnector`, one per
    :class:`~reversi_core.http.Setting` (optional when the setting is; the base URL's
    default shown as its default); for another connector, its ``credential_env``.
    """
    from ..http import HttpConnector

    found: list[LiveVariable] = []
    if issubclass(cls, HttpConnector):
        for setting in cls.settings:
            default = setting.default
            if default is None and setting.option == cls.base.option:
                default = cls.base.default
            found.append(
                LiveVariable(
                    setting.env, setting.help, default=default, optional=not setting.required
                )
            )
    elif cls.credential_env is not None:
        found.append(
            LiveVariable(
                cls.credential_env,
                f"the {cls.name} connector's credential (docs/connectors/{cls.name}.md)",
            )
        )
    known = {v.env for v in found}
    found += [v for v in scenario.variables if v.env not in known]
    return found


def resolve_variables(
    cls: type[Connector], scenario: LiveScenario, environ: Mapping[str, str]
) -> dict[str, str]:
    """The scenario's own variables from ``environ``, defaults applied.

    Raises :class:`MissingLiveVariables` naming every required variable (the connector's
    and the scenario's) that is unset or blank, and listing the optional ones.
    """
    wanted = live_variables(cls, scenario)
    missing = [v for v in wanted if v.required and not (environ.get(v.env) or "").strip()]
    if missing:
        raise MissingLiveVariables(cls.name, missing, [v for v in wanted if not v.required])
    values: dict[str, str] = {}
    for variable in scenario.variables:
        given = (environ.get(variable.env) or "").strip() or variable.default
        if given is not None:
            values[variable.env] = given
    return values


# -- running ---------------------------------------------------------------------------


@dataclass
class LiveOutcome:
    """What a live run did: its runs, the steps journaled and, when recorded, the cassette."""

    connector: str
    scenario: str
    runs: list[str]
    steps: int
    exchanges: int | None = None
    cassette: Path | None = None
    scrubbed: list[str] = field(default_factory=list)


@dataclass
class ReplayReport:
    """A replay that passed: how many exchanges the cassette holds (all played) and the requests sent."""

    cassette: Path
    exchanges: int
    sent: list[str]


def _new_suffix() -> str:
    while True:
        suffix = _random.token_hex(_SUFFIX_BYTES)
        if suffix != SUFFIX_PLACEHOLDER:
            return suffix


async def _perform(scenario: LiveScenario, context: LiveContext) -> None:
    """Run the scenario; when it fails (not in a replay), roll back what it left open."""
    try:
        await scenario.run(context)
    except BaseException:
        if not context.replaying:
            await context.roll_back_leftovers()
        raise
    if not context.runs:
        raise LiveCheckFailed(
            "the scenario started no run: a live scenario goes through the engine"
        )
    for run in context.runs:
        status = run.record.status
        if status is not RunStatus.ROLLED_BACK:
            raise LiveCheckFailed(
                f"the scenario left {run.id} {status.value}: a live scenario rolls back every run it starts"
            )


def _steps(context: LiveContext) -> int:
    return sum(len(run.steps()) for run in context.runs)


async def run_live(
    cls: type[Connector],
    scenario: LiveScenario,
    environ: Mapping[str, str],
    *,
    data_dir: Path,
    log: Callable[[str], None] = print,
) -> LiveOutcome:
    """Run ``scenario`` with the connector built from ``environ``; nothing is recorded.

    ``data_dir`` holds the scenario's journal. Raises :class:`MissingLiveVariables`, the
    connector's ``ConfigurationError``, :class:`LiveCheckFailed`, or what a call raised.
    """
    env = resolve_variables(cls, scenario, environ)
    connector = cls.from_env(environ)
    context = LiveContext(
        connector, env=env, environ=environ, suffix=_new_suffix(), data_dir=data_dir, log=log
    )
    try:
        await _perform(scenario, context)
        return LiveOutcome(cls.name, scenario.name, [r.id for r in context.runs], _steps(context))
    finally:
        await connector.aclose()
        context.close()
