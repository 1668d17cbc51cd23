"""The machinery under the checks: subjects, scenarios, outcomes, discovery, results files.

A :class:`Subject` is one connector class with its fixture and a scratch directory. A
check opens :func:`scenario` for each case it tries: a fresh backend (seeded), the
connector built against it, and, on demand, a real engine over a real SQLite journal in
the scenario's directory. :func:`run_check` turns what a check does into an
:class:`Outcome` (``pass``, ``fail`` or ``not_applicable`` with its reason).
"""

from __future__ import annotations

import itertools
import json
import traceback
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reversi_core import Registry, Run, SQLiteJournal
from reversi_core.connector import (
    CallContext,
    Connector,
    available_connectors,
    compensator_for,
    executor_for,
    load_connector_class,
)
from reversi_core.engine import ApprovalRequest
from reversi_core.manifest import Effect, Manifest
from reversi_core.testing import (
    CHECKS,
    CertificationFixture,
    Example,
    ExampleCalls,
    load_fixture,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "certification" / ".results"
DOC = ROOT / "docs" / "certification.md"

Status = Literal["pass", "fail", "not_applicable"]


class CheckFailed(AssertionError):
    """A check found the connector wanting; the message says what and where."""


@dataclass(frozen=True)
class NotApplicableHere:
    """Returned by a check whose subject lacks what it checks, as a fact of its manifests."""

    reason: str


@dataclass(frozen=True)
class Outcome:
    """The result of one check on one connector."""

    connector: str
    check: str
    status: Status
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "detail": self.detail}


@dataclass
class Subject:
    """What a check is run on: a connector class, its fixture, and a scratch directory."""

    name: str
    cls: type[Connector]
    fixture: CertificationFixture[Any]
    workdir: Path
    _counter: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def manifests(self) -> dict[str, Manifest]:
        return {m.name: m for m in self.cls.manifests()}

    def tools(self, *effects: Effect) -> list[str]:
        """Tool names with one of ``effects`` (all tools when none given), sorted."""
        return sorted(n for n, m in self.manifests.items() if not effects or m.effect in effects)

    def examples(self, tool: str) -> list[Example]:
        return list(self.fixture.examples.get(tool, ()))

    def new_dir(self, label: str) -> Path:
        safe = "".join(c if c.isalnum() else "_" for c in label)[:40]
        path = self.workdir / f"{next(self._counter):03d}-{safe}"
        path.mkdir(parents=True)
        return path


@dataclass
class Scene:
    """One scenario: a fresh backend, the connector on it, and (on demand) an engine."""

    subject: Subject
    handle: Any
    connector: Connector
    directory: Path
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    journal: SQLiteJournal | None = None
    surroundings: Any = None
    """What surrounded the backend when the scenario began (the fixture's ``outside``)."""

    # -- the backend ----------------------------------------------------------------

    def fingerprint(self) -> Any:
        return self.subject.fixture.fingerprint(self.handle)

    def outside(self) -> Any:
        """What surrounds the backend now (``None`` when the fixture has no ``outside``)."""
        hook = self.subject.fixture.outside
        return hook(self.handle) if hook is not None else None

    def left_outside(self) -> tuple[Any, Any] | None:
        """``(before, now)`` when what surrounds the backend changed in this scenario, else ``None``."""
        now = self.outside()
        return None if now == self.surroundings else (self.surroundings, now)

    @property
    def faults(self) -> Any:
        """The backend's fault controls, or ``None`` when it offers none."""
        return getattr(self.handle, "faults", None)

    @property
    def requests(self) -> list[Any]:
        """Requests the backend received so far (empty when it records none)."""
        return list(getattr(self.handle, "requests", None) or [])

    async def prepare(self, example: Example) -> dict[str, Any]:
        """The arguments of ``example``; an args builder may make setup calls first."""
        return await ExampleCalls(self.handle, self.connector, self.results).prepare(example)

    async def call(
        self, tool: str, args: Mapping[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """Call the tool on the connector directly (no journal)."""
        return await self.connector.call(tool, dict(args), CallContext(idempotency_key=key))

    # -- the engine -----------------------------------------------------------------

    def registry(self) -> Registry:
        return Registry.from_manifests(self.subject.cls.manifests())

    def run(self) -> Run:
        """A new run over a real SQLite journal, every permission granted, approvals given."""
        if self.journal is None:
            self.journal = SQLiteJournal.open(self.directory / "journal")
        registry = self.registry()

        async def approve(request: ApprovalRequest) -> bool:
            return True

        return Run.start(
            self.journal,
            registry,
            scope={m.permission for m in registry},
            executor=executor_for([self.connector]),
            approver=approve,
            label="certification",
        )

    def compensator(self) -> Any:
        return compensator_for([self.connector])

    def journal_text(self) -> str:
        """Every byte of the journal's files, decoded loosely (for the redaction check)."""
        base = self.directory / "journal"
        if not base.is_dir():
            return ""
        return "".join(
            p.read_bytes().decode("utf-8", "replace") for p in sorted(base.iterdir()) if p.is_file()
        )


@asynccontextmanager
async def scenario(
    subject: Subject, label: str, *, seed: bool = True, default_timeout: float | None = None
) -> AsyncIterator[Scene]:
    """A fresh backend (seeded unless ``seed`` is false) and the connector built on it.

    With ``default_timeout`` (seconds), the connector is built by the fixture's
    ``build_with_timeout`` with those default limits, else by its ``build``. A scenario
    whose body ends normally raises :class:`CheckFailed` when what surrounds the backend
    (the fixture's ``outside``) changed during it.
    """
    directory = subject.new_dir(label)
    fixture = subject.fixture
    with fixture.backend(directory / "backend") as handle:
        if seed and fixture.seed is not None:
            fixture.seed(handle)
        if default_timeout is None:
            connector = fixture.build(handle)
        elif fixture.build_with_timeout is None:
            raise CheckFailed(
                "the fixture has no build_with_timeout(handle, seconds), so the connector cannot "
                "be built with given default limits (add it: docs/certification-guide.md)"
            )
        else:
            connector = fixture.build_with_timeout(handle, default_timeout)
        scene = Scene(subject, handle, connector, directory)
        scene.surroundings = scene.outside()
        try:
            yield scene
            changed = scene.left_outside()
            if changed is not None:
                raise CheckFailed(
                    f"something outside the backend changed during the scenario {label!r} "
                    f"(the fixture's outside()): {difference(*changed)}"
                )
        finally:
            try:
                await connector.aclose()
            finally:
                if scene.journal is not None:
                    scene.journal.close()


# -- comparing fingerprints ----------------------------------------------------------


def difference(before: Any, after: Any, limit: int = 6) -> str:
    """A short account of where two fingerprints differ."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(set(before) | set(after), key=str)
        changed = [str(k) for k in keys if before.get(k) != after.get(k)]
        more = f" and {len(changed) - limit} more" if len(changed) > limit else ""
        inner = []
        for key in changed[:limit]:
            b, a = before.get(key), after.get(key)
            if isinstance(b, dict) and isinstance(a, dict):
                inner.append(f"{key}: {difference(b, a, 3)}")
            else:
                inner.append(f"{key}: {shorten(b)} -> {shorten(a)}")
        return "; ".join(inner) + more
    return f"{shorten(before)} -> {shorten(after)}"


def shorten(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


# -- running one check ---------------------------------------------------------------


CheckFunction = Callable[[Subject], Any]


FAULT_CHECKS = ("retry", "permission_denial", "timeout")
"""Checks that need fault injection: they apply whenever the fixture's backend offers it."""


def _faults_on_offer(check: str, subject: Subject) -> str | None:
    """Why a fault check applies: the fixture's backend injects faults (``handle.faults``)."""
    if check not in FAULT_CHECKS:
        return None
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="reversi-cert-probe-") as directory,
        subject.fixture.backend(Path(directory)) as handle,
    ):
        if getattr(handle, "faults", None) is not None:
            return f"its backend ({type(handle).__name__}) injects faults through .faults"
    return None


async def run_check(
    check: str, subject: Subject | None, *, error: str | None = None, name: str = ""
) -> Outcome:
    """Run ``check`` on ``subject`` and return its outcome; never raises for a connector's fault.

    ``subject`` is ``None`` when the connector could not be loaded; ``error`` then says
    why, and the check fails with it.
    """
    from . import checks

    connector = subject.name if subject is not None else name
    if subject is None:
        return Outcome(connector, check, "fail", error or "the connector could not be loaded")
    declared = subject.fixture.reason(check)
    function = getattr(checks, f"check_{check}")
    if declared is not None:
        must = checks.must_apply(check, subject) or _faults_on_offer(check, subject)
        if must is not None:
            return Outcome(
                connector,
                check,
                "fail",
                f"declared not applicable ({declared!r}), but it applies: {must}",
            )
        return Outcome(connector, check, "not_applicable", declared)
    try:
        result = await function(subject)
    except CheckFailed as exc:
        return Outcome(connector, check, "fail", str(exc))
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome(
            connector,
            check,
            "fail",
            f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})",
        )
    if isinstance(result, NotApplicableHere):
        return Outcome(connector, check, "not_applicable", result.reason)
    return Outcome(connector, check, "pass", str(result or "passed"))


# -- discovery -------------------------------------------------------------------------


@dataclass(frozen=True)
class Loaded:
    """An installed connector with its fixture, or the error that kept either from loading."""

    name: str
    cls: type[Connector] | None
    fixture: CertificationFixture[Any] | None
    error: str | None

    def subject(self, workdir: Path) -> Subject | None:
        if self.cls is None or self.fixture is None:
            return None
        return Subject(self.name, self.cls, self.fixture, workdir)


def discover(only: list[str] | None = None) -> dict[str, Loaded]:
    """Every installed connector of the ``reversi.connectors`` entry points (or those in ``only``).

    A connector whose class or ``testing`` fixture cannot be loaded is still listed, with
    the error, so that every one of its checks fails saying why.
    """
    found: dict[str, Loaded] = {}
    for name in connector_names(only):
        try:
            cls = load_connector_class(name)
            fixture = load_fixture(cls)
        except Exception as exc:
            found[name] = Loaded(name, None, None, f"{type(exc).__name__}: {exc}")
            continue
        found[name] = Loaded(name, cls, fixture, None)
    return found


def connector_names(only: list[str] | None = None) -> list[str]:
    """Installed connector names, sorted; restricted to ``only`` when given."""
    names = sorted(available_connectors())
    return [n for n in names if not only or n in only]


async def certify(loaded: Loaded, workdir: Path) -> dict[str, Outcome]:
    """Run every check on one discovered connector; scratch space under ``workdir``."""
    out: dict[str, Outcome] = {}
    for check in CHECKS:
        subject = loaded.subject(workdir / check)
        out[check] = await run_check(check, subject, error=loaded.error, name=loaded.name)
    return out


# -- results files ---------------------------------------------------------------------


def residue_of(loaded: Loaded) -> dict[str, str]:
    """``{tool: reason}`` of the residue a connector declares."""
    if loaded.fixture is None:
        return {}
    return {tool: r.reason for tool, r in sorted(loaded.fixture.residue.items())}


def write_results(
    outcomes: Mapping[str, Mapping[str, Outcome]],
    residue: Mapping[str, Mapping[str, str]],
    directory: Path = RESULTS_DIR,
) -> list[Path]:
    """Write ``<directory>/<connector>.json`` for every connector in ``outcomes``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, checks in sorted(outcomes.items()):
        data = {
            "connector": name,
            "checks": {c: checks[c].to_json() for c in CHECKS if c in checks},
            "residue": dict(residue.get(name, {})),
        }
        path = directory / f"{name}.json"
        path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        written.append(path)
    return written


def read_results(directory: Path = RESULTS_DIR) -> dict[str, dict[str, Any]]:
    """``{connector: results file data}`` for every results file in ``directory``."""
    if not directory.is_dir():
        return {}
    return {
        p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))
    }
