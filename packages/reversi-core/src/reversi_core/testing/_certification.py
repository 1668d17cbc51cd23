"""What a connector declares to be certified: the data model of the certification suite.

The suite itself (the thirteen checks, written once) lives in the repository's
``certification/`` folder and is never shipped; a connector's wheel may not import it.
A connector opts in from its own public ``testing`` module, which defines::

    def certification_fixture() -> CertificationFixture[Handle]: ...

The suite finds that function for every connector of the ``reversi.connectors``
entry-point group through the connector class's top-level package
(``reversi_connector_fs.testing`` for ``reversi_connector_fs:FsConnector``), with
:func:`load_fixture`. The fixture says, as data and a few callables:

- how to start a backend (:attr:`CertificationFixture.backend`: a context manager given
  an empty directory, yielding a *handle*). A :class:`reversi_core.testing.FakeServer`
  is such a handle as it is: the suite arms faults through the handle's ``faults``
  attribute (a :class:`reversi_core.testing.Faults`) and reads what the backend received
  from its ``requests`` (:class:`reversi_core.testing.FakeRequest` objects). A handle
  without ``faults`` offers no fault injection; one without ``requests`` records nothing.
  A backend that does not speak HTTP offers fault injection with any ``faults`` object
  that realises the same :class:`reversi_core.testing.Fault` descriptions in its own
  protocol (:class:`FaultControls`), and says in :attr:`CertificationFixture.error_codes`
  which of its error codes stand for the HTTP statuses the checks inject;
- how to build the connector against that backend (with its usual time limits, and
  with given default limits), and which credential it was given;
- example arguments for every tool (a mapping, or an :data:`ArgsBuilder` that prepares
  the backend through an :class:`ExampleContext` and returns the arguments), and calls
  the backend turns down, each with the error code it must be turned down with
  (:class:`Failure`);
- how to seed and fingerprint the backend (and, optionally, what surrounds it, which
  no call may change), which residue a compensation leaves and why (:class:`Residue`);
- which tools pass the call's idempotency key to the vendor, and where in a request
  the vendor takes it (:class:`IdempotencyKeyIn`);
- how to change, through the backend, what a tool's call produced, the way a person
  would after the agent (:class:`ConcurrentChange`), and which tools' compensations
  restore no prior state that such a change could be lost from (``restores_nothing``);
- which checks do not apply, each with its reason (:class:`NotApplicable`).

The thirteen check ids are :data:`CHECKS`; :data:`CHECK_INFO` says what each verifies and
where the suite enforces it (``reversi-connectors certify NAME|all`` prints it).
docs/certification-guide.md walks through writing a fixture.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..connector import CallContext, Connector
from ..errors import ConfigurationError
from ._checks import CHECK_INFO, CHECKS, SUITE_CHECKS_FILE, SUITE_TEST, CheckInfo
from ._faults import Fault

if TYPE_CHECKING:
    from ._live import LiveScenario

__all__ = [
    "CHECKS",
    "CHECK_INFO",
    "FIXTURE_FUNCTION",
    "FIXTURE_GROUP",
    "MIN_REASON_WORDS",
    "SUITE_CHECKS_FILE",
    "SUITE_TEST",
    "ArgsBuilder",
    "CertificationFixture",
    "CheckInfo",
    "ConcurrentChange",
    "Dependency",
    "Example",
    "ExampleCalls",
    "ExampleContext",
    "Failure",
    "FaultControls",
    "IdempotencyKeyIn",
    "NotApplicable",
    "Residue",
    "fixture_entry_point",
    "load_fixture",
]

FIXTURE_GROUP = "reversi.certification"
"""The entry-point group through which the suite finds each connector's fixture."""

FIXTURE_FUNCTION = "certification_fixture"
"""The function a connector's ``testing`` module defines to opt in."""


MIN_REASON_WORDS = 6
"""A not-applicable reason shorter than this many words cannot say why."""


@dataclass(frozen=True)
class NotApplicable:
    """Why a check does not apply to a connector; the reason may not be empty."""

    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError("a not-applicable check needs a non-empty reason")
        if len(self.reason.split()) < MIN_REASON_WORDS:
            raise ValueError(
                f"a not-applicable reason must say why in a sentence ({MIN_REASON_WORDS} words "
                f"or more), not {self.reason!r}"
            )


@dataclass(frozen=True)
class Residue:
    """What a tool's compensation leaves behind, and why.

    ``normalise`` maps a backend fingerprint to the part a rollback must restore exactly
    (for example, by dropping the backup directory); the suite compares the normalised
    fingerprints from before the call and after the rollback. ``normalise`` must return
    a fingerprint of the same shape, since the suite applies the normalisers of two tools
    in turn when a rollback undoes both. ``reason`` is printed in docs/certification.md.
    """

    reason: str
    normalise: Callable[[Any], Any]

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError("a declared residue needs a non-empty reason")


H = TypeVar("H")
H_co = TypeVar("H_co", covariant=True)


@dataclass(frozen=True)
class ConcurrentChange:
    """A change a person made through the backend after the agent's call, and how to take it back.

    The fixture's ``concurrent_change(handle, tool, args, result)`` makes the change (on
    the fake's state or the emulator, never through the connector) and returns this.
    ``what`` is the words the compensation's failure reason must contain, naming what
    changed (``"the file's content"``, ``"the event's summary"``); they are looked for
    without regard to case. ``revert()`` puts back what the forward call produced (the
    person undoing their own edit), after which the compensation must succeed. Raises
    ``ValueError`` for empty ``what`` or a ``revert`` that is not callable.
    """

    what: str
    revert: Callable[[], None]

    def __post_init__(self) -> None:
        if not isinstance(self.what, str) or not self.what.strip():
            raise ValueError("a ConcurrentChange needs the words naming what changed (what=)")
        if not callable(self.revert):
            raise ValueError("a ConcurrentChange needs revert, a callable that takes it back")


class ExampleContext(Protocol[H_co]):
    """What an :data:`ArgsBuilder` is given to prepare the backend before the call under test.

    ``results`` holds, by tool name, the result of the latest :meth:`call` made here (and,
    for the later step of a :class:`Dependency`, the earlier step's result).
    """

    @property
    def handle(self) -> H_co:
        """The backend handle the fixture's ``backend`` yielded."""
        ...

    @property
    def connector(self) -> Connector:
        """The connector under test, built against that backend."""
        ...

    @property
    def results(self) -> Mapping[str, dict[str, Any]]:
        """Results of earlier calls, by tool name (the latest call of each tool)."""
        ...

    async def call(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Run a tool directly on the connector (no journal) and return its result."""
        ...


class FaultControls(Protocol):
    """What the suite needs of a backend handle's ``faults`` attribute.

    :class:`reversi_core.testing.Faults` (``FakeServer.faults``) is one. A backend that
    does not speak HTTP implements the same two methods in its own protocol:

    - ``add(fault, times=..., writes=...)`` arms a :class:`reversi_core.testing.Fault`:
      ``drop_after_read`` closes the connection once a request was received (``apply``:
      the backend still carried it out), ``status(N)`` makes the backend answer with its
      own error for HTTP status ``N`` (the codes the fixture maps to ``N`` in
      :attr:`CertificationFixture.error_codes`), ``hang`` makes it read a request and say
      nothing for ``seconds``. ``times`` is how many requests it takes (``None``: every
      one until :meth:`clear`); ``writes=True`` limits it to the requests through which a
      change takes effect (an HTTP POST/PUT/PATCH/DELETE, a database's ``COMMIT``), so
      that a writing tool's lost answer lands where its outcome is really unknown;
    - ``clear()`` disarms everything and puts the backend back as it was.

    A ``status`` the handle has no counterpart for should raise ``ValueError`` saying so.

    Optionally (the suite looks it up with ``getattr``), ``describe(fault)`` returns a
    few words saying what arming ``fault`` does to the backend (``"a changed password"``
    for a database's ``status(401)``), or ``None``. The results page shows them where it
    would otherwise say ``HTTP 401``, followed by the codes the connector answered with.
    """

    def add(self, fault: Fault, *, times: int | None = ..., writes: bool = ...) -> object:
        """Arm ``fault``; return a handle on it (the suite does not use it)."""
        ...

    def clear(self) -> None:
        """Disarm every fault and undo whatever arming it changed in the backend."""
        ...


class ExampleCalls(Generic[H]):
    """The :class:`ExampleContext` an :data:`ArgsBuilder` is given, as the suite makes it.

    Public so that tools outside the suite (the clean-install check) prepare a fixture's
    examples the same way: :meth:`prepare` turns an :data:`Example` into arguments,
    running its builder against ``connector`` when it is one.
    """

    def __init__(
        self, handle: H, connector: Connector, results: dict[str, dict[str, Any]] | None = None
    ) -> None:
        self._handle = handle
        self._connector = connector
        self._results: dict[str, dict[str, Any]] = {} if results is None else results

    @property
    def handle(self) -> H:
        return self._handle

    @property
    def connector(self) -> Connector:
        return self._connector

    @property
    def results(self) -> Mapping[str, dict[str, Any]]:
        return self._results

    async def call(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``tool`` on the connector directly (no journal); its result is kept by name."""
        result = await self._connector.call(tool, dict(args), CallContext())
        self._results[tool] = result
        return result

    async def prepare(self, example: Example) -> dict[str, Any]:
        """The arguments of ``example``: the mapping itself, or what its builder returns."""
        if callable(example):
            return dict(await example(self))
        return dict(example)


ArgsBuilder = Callable[[ExampleContext[Any]], Awaitable[Mapping[str, Any]]]
"""Prepares the backend (through the context) and returns the arguments of the call under test."""

Example = Mapping[str, Any] | ArgsBuilder
"""A tool's example arguments: a mapping, or an :data:`ArgsBuilder`."""


@dataclass(frozen=True)
class Dependency:
    """Two calls in one run where the later one's ``requires`` must match the earlier step.

    ``later_args`` may be an :data:`ArgsBuilder`; its context's ``results`` then holds
    the earlier step's result under the ``earlier`` tool's name.
    """

    earlier: str
    earlier_args: Example
    later: str
    later_args: Example


@dataclass(frozen=True)
class Failure:
    """A call the backend turns down, and the error it must be turned down with.

    ``args`` is the call's :data:`Example` (a mapping or an :data:`ArgsBuilder`);
    ``code`` the ``ToolError.code`` the connector must answer with (``"not_found"``,
    GitHub's ``"reference_exists"``, a SQLSTATE such as ``"23505"``, fs's
    ``"path_refused"``); ``status``, when given, the ``ToolError.status`` as well (the
    HTTP status, for a vendor that answers in them). A refusal with another code (or
    status) fails the forward-failure check: the call was turned down, but not for the
    reason the example is about. Raises ``ValueError`` for an empty code or a status
    that is not an HTTP error status (400-599).
    """

    args: Example
    code: str
    status: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not self.code.strip():
            raise ValueError("a Failure needs the error code its refusal must carry")
        if self.status is not None and (
            isinstance(self.status, bool)
            or not isinstance(self.status, int)
            or not 400 <= self.status <= 599
        ):
            raise ValueError(f"Failure status {self.status!r} is not an HTTP error status")

    def expects(self) -> str:
        """The declared refusal in words: ``code 'not_found'`` or ``HTTP 404, code 'not_found'``."""
        return (f"HTTP {self.status}, " if self.status is not None else "") + f"code {self.code!r}"


@dataclass(frozen=True)
class IdempotencyKeyIn:
    """Where, in each write request, a vendor takes the call's idempotency key.

    Exactly one of ``header`` (a request header, matched without regard to case:
    ``IdempotencyKeyIn(header="Idempotency-Key")`` for Stripe,
    https://docs.stripe.com/api/idempotent_requests) or ``field`` (a top-level field of
    the JSON body, or of a form-encoded one: ``IdempotencyKeyIn(field="idempotency_key")``
    for Square, https://developer.squareup.com/docs/working-with-apis/idempotency).
    The suite reads it with :meth:`read` from the requests the backend recorded (its
    handle's ``requests``: :class:`reversi_core.testing.FakeRequest` objects). Raises
    ``ValueError`` unless exactly one is a non-empty string.
    """

    header: str | None = None
    field: str | None = None

    def __post_init__(self) -> None:
        given = [v for v in (self.header, self.field) if v is not None]
        if len(given) != 1 or not isinstance(given[0], str) or not given[0].strip():
            raise ValueError("IdempotencyKeyIn takes exactly one of header= or field=, non-empty")

    def __str__(self) -> str:
        return f"header {self.header}" if self.header is not None else f"body field {self.field}"

    def read(self, request: Any) -> str | None:
        """The key carried by ``request`` (``None`` when it carries none).

        ``request`` has ``headers`` (a mapping) and, for a field, ``json`` (the parsed
        body) and ``form`` (the form-encoded fields), as a ``FakeRequest`` does.
        """
        if self.header is not None:
            wanted = self.header.lower()
            headers = getattr(request, "headers", None) or {}
            for name, value in dict(headers).items():
                if str(name).lower() == wanted:
                    return str(value)
            return None
        body = getattr(request, "json", None)
        if not isinstance(body, dict):
            body = getattr(request, "form", None)
        value = body.get(self.field) if isinstance(body, dict) else None
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class CertificationFixture(Generic[H]):
    """How the certification suite drives one connector (see the module docstring).

    ``backend(directory)`` starts a fresh backend for one scenario and yields its handle;
    ``seed(handle)``, if given, puts the initial state in; ``build(handle)`` returns the
    connector configured against it with :attr:`credential` (``None`` when the
    connector holds none) and time limits roomy enough for a loaded CI machine (every
    check but the timeout check uses it; none of them silences the backend).
    ``build_with_timeout(handle, seconds)`` returns the same connector with every default
    time limit of its own set to ``seconds``: the timeout check builds it with
    :attr:`call_timeout` and sees a silent backend given up on within about that long,
    then with long defaults and a short limit of the call's own through
    ``CallContext.timeout`` (it requires this builder whenever it runs).
    ``fingerprint(handle)`` returns the backend state as JSON-able data; two equal
    fingerprints mean an equal state. ``outside(handle)``, if given,
    fingerprints what surrounds the backend and no call may change (for a connector
    confined to a directory, the tree beside it): every scenario of every check ends
    with it unchanged.

    ``examples`` gives, for every tool, calls that succeed on a seeded backend;
    ``failures`` calls that the backend turns down (a missing object, a conflict), each
    a :class:`Failure` declaring the error code it must be refused with.
    ``dependencies`` gives, for every tool declaring ``requires``, a pair of calls whose
    edge the engine must record. ``residue`` declares, per forward tool, what its
    compensation leaves. ``undo_fault(handle, tool, args)`` returns a context manager
    inside which the compensation ``tool`` with ``args`` fails; when absent, the suite
    arms ``Fault.status(500)`` on ``handle.faults`` for every request.
    ``sends_idempotency_key`` lists the tools that pass the call's idempotency key to
    the vendor (the duplicate-call check covers them as well as every idempotent tool)
    and ``idempotency_key_in`` says where a request carries it (required with them):
    the compensation-failure check reads the key the backend received there.

    ``error_codes`` is for backends that do not answer in HTTP statuses: for each status
    the checks inject (401, 403, 422, 500, 503), the vendor error codes
    (``ToolError.code``) that stand for it, e.g. ``{403: {"42501"}}`` for PostgreSQL's
    insufficient_privilege. Where the checks demand ``ToolError.status == N``, a code in
    ``error_codes[N]`` is accepted instead, and the error must then name that code.

    ``concurrent_change(handle, tool, args, result)`` changes, through the backend (the
    fake's state, the emulator; never through the connector), what the call of ``tool``
    with ``args`` produced, as a person would after the agent, and returns the
    :class:`ConcurrentChange` (``None``: no change for that tool, which fails the check
    unless ``restores_nothing`` lists it). ``restores_nothing`` maps a reversible or
    compensable tool to why its compensation restores no prior state that a later change
    could be lost from (``{"github.add_labels": "..."}``), in a sentence; the
    concurrent-change check is n/a for it with that reason.

    ``not_applicable`` maps a check id to its reason (a string or :class:`NotApplicable`).
    ``backend_summary`` says in a few words what the backend is (``"its fake of the GitHub
    REST API, faults included"``); the README's list of connectors shows it.
    ``command_line(handle)`` says how a connector process started by hand (``reversi-connectors
    serve NAME`` and ``compensate``) reaches the handle's backend: the environment variables
    to set (with the fixture's credential) and the command-line options to give
    (``["--root", DIR]``). The clean-install check (``nox -s install_only``) drives the
    installed wheel through it; without it that check can only shake hands.
    ``live`` is the connector's live scenario (:class:`reversi_core.testing.LiveScenario`:
    forward calls and a rollback against the real vendor, run and recorded by ``nox -s
    live -- NAME``), or a :class:`NotApplicable` saying why it has none (fs: no remote
    vendor); ``None`` means it was not declared, which its contract tests refuse.
    Raises ``ValueError`` for an unknown check id, an empty reason, an ``error_codes``
    entry that is not an HTTP status with at least one non-empty code, a failing
    example that is not a :class:`Failure`, ``sends_idempotency_key`` without
    ``idempotency_key_in`` (or the other way round), a ``restores_nothing`` key that is
    not a tool name or a reason shorter than a sentence, a ``concurrent_change`` that
    is not callable, or a ``live`` that is neither a scenario nor a reason.
    """

    backend: Callable[[Path], AbstractContextManager[H]]
    build: Callable[[H], Connector]
    fingerprint: Callable[[H], Any]
    examples: Mapping[str, Sequence[Example]]
    seed: Callable[[H], None] | None = None
    build_with_timeout: Callable[[H, float], Connector] | None = None
    outside: Callable[[H], Any] | None = None
    failures: Mapping[str, Sequence[Failure]] = field(default_factory=dict)
    dependencies: Sequence[Dependency] = ()
    residue: Mapping[str, Residue] = field(default_factory=dict)
    undo_fault: Callable[[H, str, Mapping[str, Any]], AbstractContextManager[None]] | None = None
    credential: str | None = None
    call_timeout: float = 1.0
    sends_idempotency_key: frozenset[str] = frozenset()
    idempotency_key_in: IdempotencyKeyIn | None = None
    error_codes: Mapping[int, Iterable[str]] = field(default_factory=dict)
    not_applicable: Mapping[str, NotApplicable | str] = field(default_factory=dict)
    backend_summary: str = ""
    command_line: Callable[[H], tuple[Mapping[str, str], Sequence[str]]] | None = None
    concurrent_change: (
        Callable[[H, str, Mapping[str, Any], Mapping[str, Any]], ConcurrentChange | None] | None
    ) = None
    restores_nothing: Mapping[str, str] = field(default_factory=dict)
    live: LiveScenario | NotApplicable | None = None

    def __post_init__(self) -> None:
        from ._live import LiveScenario

        if self.live is not None and not isinstance(self.live, LiveScenario | NotApplicable):
            raise ValueError(
                f"live must be a LiveScenario or a NotApplicable reason, not {type(self.live).__name__}"
            )
        codes: dict[int, frozenset[str]] = {}
        for status, given in self.error_codes.items():
            if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
                raise ValueError(f"error_codes: {status!r} is not an HTTP status")
            if isinstance(given, str):
                raise ValueError(
                    f"error_codes[{status}] must be a collection of codes, not the string {given!r}"
                )
            found = frozenset(given)
            if not found or not all(isinstance(c, str) and c.strip() for c in found):
                raise ValueError(f"error_codes[{status}] needs at least one non-empty code")
            codes[status] = found
        object.__setattr__(self, "error_codes", codes)
        normalised: dict[str, NotApplicable] = {}
        for check, why in self.not_applicable.items():
            if check not in CHECKS:
                raise ValueError(
                    f"not_applicable names {check!r}, which is not a check; the checks are: "
                    + ", ".join(CHECKS)
                )
            normalised[check] = why if isinstance(why, NotApplicable) else NotApplicable(why)
        object.__setattr__(self, "not_applicable", normalised)
        for tool, failing in self.failures.items():
            if isinstance(failing, Failure | Mapping) or callable(failing):
                raise ValueError(f"failures[{tool!r}] must be a list of Failure, not one example")
            for index, failure in enumerate(failing):
                if not isinstance(failure, Failure):
                    raise ValueError(
                        f"failures[{tool!r}][{index}] is a {type(failure).__name__}; wrap it in "
                        "Failure(args, code=...) naming the error code the backend refuses it with"
                    )
        if self.sends_idempotency_key and self.idempotency_key_in is None:
            raise ValueError(
                "sends_idempotency_key names tools, so idempotency_key_in must say where a "
                "request carries the key (IdempotencyKeyIn(header=...) or (field=...))"
            )
        if self.idempotency_key_in is not None and not self.sends_idempotency_key:
            raise ValueError("idempotency_key_in is given, but sends_idempotency_key names no tool")
        if self.credential is not None and len(self.credential) < 8:
            raise ValueError("the certification credential must be at least 8 characters long")
        if self.call_timeout <= 0:
            raise ValueError("call_timeout must be a positive number of seconds")
        for tool, why in self.restores_nothing.items():
            if not isinstance(tool, str) or "." not in tool:
                raise ValueError(f"restores_nothing: {tool!r} is not a tool name (NAME.tool)")
            if not isinstance(why, str) or len(why.split()) < MIN_REASON_WORDS:
                raise ValueError(
                    f"restores_nothing[{tool!r}] must say in a sentence ({MIN_REASON_WORDS} words "
                    f"or more) why its compensation restores no prior state, not {why!r}"
                )
        if self.concurrent_change is not None and not callable(self.concurrent_change):
            raise ValueError("concurrent_change must be a callable (handle, tool, args, result)")

    def codes_for(self, status: int) -> frozenset[str]:
        """The vendor error codes that stand for HTTP ``status`` (empty when none are declared)."""
        found = self.error_codes.get(status)
        return frozenset(found) if found is not None else frozenset()

    def reason(self, check: str) -> str | None:
        """The declared not-applicable reason of ``check``, or ``None`` when it applies."""
        why = self.not_applicable.get(check)
        if why is None:
            return None
        return why.reason if isinstance(why, NotApplicable) else why


def fixture_entry_point(cls: type[Connector]) -> str | None:
    """The ``module:function`` the connector's ``reversi.certification`` entry point names, if any."""
    for ep in entry_points(group=FIXTURE_GROUP):
        if ep.name == cls.name:
            return ep.value
    return None


def load_fixture(cls: type[Connector]) -> CertificationFixture[Any]:
    """Load the connector's certification fixture through its entry point and return it.

    The entry point of the :data:`FIXTURE_GROUP` group named after the connector
    (``github = "reversi_connector_github.testing:certification_fixture"``) names a
    function returning a :class:`CertificationFixture`. Raises
    :class:`ConfigurationError` when the connector declares no such entry point, when it
    cannot be loaded, or when the function returns something else.
    """
    found = [ep for ep in entry_points(group=FIXTURE_GROUP) if ep.name == cls.name]
    if not found:
        raise ConfigurationError(
            f"connector {cls.name!r} has no certification fixture: declare an entry point "
            f'{cls.name} = "<package>.testing:{FIXTURE_FUNCTION}" in the [project.entry-points.'
            f'"{FIXTURE_GROUP}"] table of its pyproject.toml (see docs/certification-guide.md)'
        )
    ep = found[0]
    try:
        factory = ep.load()
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"connector {cls.name!r}: its fixture entry point {ep.value} cannot be loaded: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    if not callable(factory):
        raise ConfigurationError(f"connector {cls.name!r}: {ep.value} is not a function")
    fixture = factory()
    if not isinstance(fixture, CertificationFixture):
        raise ConfigurationError(
            f"connector {cls.name!r}: {ep.value}() returned {type(fixture).__name__}, "
            "not a CertificationFixture"
        )
    return fixture
