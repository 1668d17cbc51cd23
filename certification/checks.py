"""The thirteen certification checks, written once for every connector.

Each ``check_<id>`` takes a :class:`~certification.runner.Subject` (a connector class,
its fixture from the connector's ``testing`` module, a scratch directory) and either
returns a short account of what it exercised (pass), returns
:class:`~certification.runner.NotApplicableHere` when the connector's own manifests show
there is nothing to check, or raises :class:`~certification.runner.CheckFailed` saying
what went wrong. A check the fixture declares not applicable is not called, but
:func:`must_apply` refuses such a declaration where the manifests prove the check
applies. What each check verifies, in one sentence, is
``reversi_core.testing.CHECK_INFO``.

Rollback checks use the real engine (:class:`reversi_core.Run`) over a real
:class:`reversi_core.SQLiteJournal` in the scenario's directory.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import anyio
from jsonschema import Draft202012Validator

from reversi_core import (
    CallContext,
    EffectUncertainError,
    ReversiError,
    RollbackState,
    StepState,
    ToolError,
    connector_schema_hashes,
    detect_manifest_drift,
    schema_hash,
)
from reversi_core.connector import CompensationCall, Compensator
from reversi_core.engine import Executor, RollbackReport, Verifier
from reversi_core.errors import ManifestError
from reversi_core.journal import StepRecord
from reversi_core.manifest import Effect, Manifest
from reversi_core.testing import WRITE_METHODS, ConcurrentChange, Failure, Fault

from .runner import (
    CheckFailed,
    NotApplicableHere,
    Scene,
    Subject,
    difference,
    scenario,
    shorten,
)

__all__ = [
    "check_compensation_failure",
    "check_compensation_success",
    "check_concurrent_change",
    "check_dependency_block",
    "check_duplicate_call",
    "check_forward_failure",
    "check_forward_success",
    "check_manifest_drift",
    "check_permission_denial",
    "check_redaction",
    "check_retry",
    "check_timeout",
    "check_verification_failure",
    "must_apply",
]

UNDOABLE = (Effect.REVERSIBLE, Effect.COMPENSABLE)
INJECTED_REFUSAL = 422
"""The status the forward-failure check injects into every call of a backend with faults."""


# -- small helpers ---------------------------------------------------------------------


def fail(message: str) -> CheckFailed:
    """A :class:`CheckFailed` to raise."""
    return CheckFailed(message)


def leaks(text: str, credential: str | None) -> bool:
    """True when ``text`` holds the credential, raw or URL-quoted."""
    if not credential or not text:
        return False
    forms = {
        credential,
        urllib.parse.quote(credential, safe=""),
        urllib.parse.quote_plus(credential),
    }
    return any(form in text for form in forms)


def label(tool: str, index: int) -> str:
    return f"{tool} example {index + 1}"


def first_examples(subject: Subject, tools: list[str]) -> None:
    """Fail unless every tool in ``tools`` has at least one example."""
    missing = [t for t in tools if not subject.examples(t)]
    if missing:
        raise fail(f"no example arguments for {', '.join(missing)} (add them to the fixture)")


def needs_faults(scene: Scene, purpose: str) -> Any:
    """The backend's fault controls; fails saying what they were needed for when it has none."""
    faults = scene.faults
    if faults is None:
        raise fail(
            f"the backend offers no fault injection (its handle has no 'faults') to inject "
            f"{purpose}; serve the fake with reversi_core.testing.FakeServer (or give a non-HTTP "
            "handle a 'faults' of its own: reversi_core.testing.FaultControls), give the "
            "fixture an undo_fault (for a failing undo), or declare the check not applicable "
            "with the reason"
        )
    return faults


def stayed_inside(scene: Scene, what: str) -> None:
    """Fail when ``what`` changed anything outside the backend (the fixture's ``outside``)."""
    changed = scene.left_outside()
    if changed is not None:
        raise fail(f"{what} changed what lies outside the backend: {difference(*changed)}")


def realised(scene: Scene, fault: Fault) -> str:
    """What the backend does for ``fault``, in words.

    The words of its faults' optional ``describe(fault)`` (a backend that does not speak
    HTTP says how it realises a status: ``a changed password``), else ``HTTP N`` (or the
    fault's kind).
    """
    describe = getattr(scene.faults, "describe", None)
    words = describe(fault) if callable(describe) else None
    if words:
        return str(words)
    return f"HTTP {fault.http_status}" if fault.http_status else fault.kind.replace("_", " ")


class Injection:
    """One status a check injects into each tool: what the backend did, what the connector said.

    For the check's report: ``str(injection)`` is the backend's words for the fault
    (:func:`realised`: ``HTTP 403``, or ``revoked privileges``) followed, in brackets, by
    the vendor codes the connector really answered with instead of the status (those of
    the fixture's ``error_codes[N]`` it used; none when it answered with
    ``ToolError.status == N``).
    """

    def __init__(self, status: int) -> None:
        self.status = status
        self.done: set[str] = set()
        self.answers: set[str] = set()

    def fault(self, message: str) -> Fault:
        """The fault to arm: the status, with a JSON body carrying ``message``."""
        return Fault.status(self.status, json={"message": message})

    def under(self, scene: Scene, fault: Fault) -> str:
        """How the check's messages name ``fault`` in ``scene`` (and note the backend's words)."""
        words = realised(scene, fault)
        self.done.add(words)
        plain = f"HTTP {self.status}"
        return words if words == plain else f"{words} (for {plain})"

    def answered(self, code: str | None) -> None:
        """Note the vendor code the connector answered with (``None``: the status itself)."""
        if code is not None:
            self.answers.add(code)

    def __str__(self) -> str:
        words = " / ".join(sorted(self.done)) or f"HTTP {self.status}"
        return words + (f" ({'/'.join(sorted(self.answers))})" if self.answers else "")


@contextmanager
def armed(scene: Scene, fault: Fault) -> Iterator[None]:
    """``fault`` on every request to the backend until the block ends."""
    faults = needs_faults(scene, realised(scene, fault))
    faults.add(fault, times=None)
    try:
        yield
    finally:
        faults.clear()


@contextmanager
def armed_on_effect(scene: Scene, fault: Fault, manifest: Manifest) -> Iterator[None]:
    """``fault`` on every request through which the tool of ``manifest`` can lose its effect.

    For a writing tool that is every request through which a change takes effect
    (``writes=True``: a request its route declares writing, by default an HTTP POST, PUT,
    PATCH or DELETE, a GraphQL mutation but not a query; a database's ``COMMIT``): a read
    it makes first (add_labels reads the labels it must not add twice) goes through, so
    the fault lands on the write, whose lost answer must be uncertain. A failed read
    before any write is a plain ToolError, and arming the fault on it would demand a lie.
    For a read-only tool, every request.
    """
    faults = needs_faults(scene, realised(scene, fault))
    faults.add(fault, times=None, writes=writes(manifest))
    try:
        yield
    finally:
        faults.clear()


def undo_fault(scene: Scene, tool: str, args: dict[str, Any]) -> AbstractContextManager[None]:
    """A context in which the compensation ``tool(args)`` fails (the fixture's, or a 500)."""
    hook = scene.subject.fixture.undo_fault
    if hook is not None:
        return hook(scene.handle, tool, args)
    return armed(scene, Fault.status(500, json={"message": "certification: injected 500"}))


def normaliser(subject: Subject, *tools: str) -> Callable[[Any], Any]:
    """The declared residue normalisers of ``tools``, applied in turn (identity when none)."""
    chosen = [subject.fixture.residue[t].normalise for t in tools if t in subject.fixture.residue]

    def apply(fingerprint: Any) -> Any:
        value = copy.deepcopy(fingerprint)
        for fn in chosen:
            value = fn(value)
        return value

    return apply


async def refuse(step: StepRecord, result: dict[str, Any]) -> bool:
    """A verify callback that says no to every compensation."""
    return False


def restored_to(scene: Scene, norm: Callable[[Any], Any], before: Any) -> Verifier:
    """A verify callback that says yes only when the backend is back to ``before``."""

    async def verify(step: StepRecord, result: dict[str, Any]) -> bool:
        return bool(norm(scene.fingerprint()) == norm(before))

    return verify


def all_but(seq: int) -> Verifier:
    """A verify callback that says no for step ``seq`` only (so that step still stands)."""

    async def verify(step: StepRecord, result: dict[str, Any]) -> bool:
        return step.seq != seq

    return verify


def recording(scene: Scene, raw: list[dict[str, Any]]) -> Executor:
    """An executor that keeps each raw result, before the engine scrubs it."""

    async def execute(name: str, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        result = await scene.connector.call(name, args, ctx)
        raw.append(result)
        return result

    return execute


def step_of(report: RollbackReport, seq: int) -> StepRecord:
    for step in report.steps:
        if step.seq == seq:
            return step
    raise fail(f"the rollback report does not list step {seq}")


def header_values(request: Any) -> list[str]:
    """A recorded request's header values, with an HTTP basic ``Authorization`` decoded too.

    A basic credential travels base64-encoded beside the account name (``email:token``,
    RFC 7617), so the token is found in the decoded pair.
    """
    values = [str(v) for v in dict(getattr(request, "headers", None) or {}).values()]
    for value in list(values):
        scheme, _, blob = value.partition(" ")
        if scheme.lower() == "basic" and blob.strip():
            try:
                values.append(base64.b64decode(blob.strip(), validate=True).decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                continue
    return values


def writes(manifest: Manifest) -> bool:
    return manifest.effect is not Effect.READ_ONLY


def wrote(request: Any) -> bool:
    """Whether a request the backend recorded could change it.

    As the backend judged it when it read the request (``FakeRequest.writes``, from the
    route's declaration: a GraphQL query is a POST that writes nothing), else by its
    method (POST, PUT, PATCH, DELETE).
    """
    judged = getattr(request, "writes", None)
    if isinstance(judged, bool):
        return judged
    return str(request.method).upper() in WRITE_METHODS


def must_apply(check: str, subject: Subject) -> str | None:
    """Why ``check`` applies to ``subject`` whatever its fixture declares, or ``None``."""
    manifests = subject.manifests
    if check in ("forward_success", "manifest_drift"):
        return "every connector has tools and input schemas"
    if check == "forward_failure" and subject.fixture.failures:
        return "the fixture declares calls the backend turns down"
    if check == "duplicate_call":
        idem = sorted(n for n, m in manifests.items() if m.effect is Effect.IDEMPOTENT)
        keyed = sorted(subject.fixture.sends_idempotency_key)
        if idem or keyed:
            return f"{', '.join(idem + keyed)} must not act twice on a repeated call"
    if check in ("compensation_success", "compensation_failure", "verification_failure"):
        undoable = sorted(n for n, m in manifests.items() if m.effect in UNDOABLE)
        if undoable:
            return f"{', '.join(undoable)} have compensations"
    if check == "dependency_block":
        declaring = sorted(n for n, m in manifests.items() if m.requires)
        if declaring:
            return f"{', '.join(declaring)} declare requires"
    if check == "redaction" and subject.fixture.credential is not None:
        return "the fixture gives the connector a credential"
    if check == "concurrent_change":
        restoring = restoring_tools(subject)
        if restoring:
            return (
                f"the compensations of {', '.join(restoring)} restore a prior state (none is "
                "declared in restores_nothing)"
            )
    return None


def restoring_tools(subject: Subject) -> list[str]:
    """The undoable tools whose compensation restores a prior state (not in ``restores_nothing``)."""
    return [t for t in subject.tools(*UNDOABLE) if t not in subject.fixture.restores_nothing]


# -- 1. forward success ----------------------------------------------------------------


def described_by(manifest: Manifest) -> Callable[[Any], list[str]]:
    """``problems(result)``: where ``result`` departs from the tool's ``output_schema``.

    Checked with a JSON Schema validator, as an MCP client checks ``structuredContent``,
    not with the connector's pydantic model. Fails when the tool declares no output schema.
    """
    if manifest.output_schema is None:
        raise fail(f"{manifest.name} declares no output schema (every tool declares its result)")
    validator = Draft202012Validator(manifest.output_schema)

    def problems(result: Any) -> list[str]:
        return [
            f"{e.json_path}: {e.message}"
            for e in sorted(validator.iter_errors(result), key=lambda e: e.json_path)
        ]

    return problems


async def check_forward_success(subject: Subject) -> str:
    """Every tool succeeds on each example with a result its output schema describes.

    Read-only tools also change nothing and send no write.
    """
    manifests = subject.manifests
    unknown = sorted(set(subject.fixture.examples) - set(manifests))
    if unknown:
        raise fail(f"examples name tools the connector does not have: {', '.join(unknown)}")
    first_examples(subject, sorted(manifests))
    described = {tool: described_by(manifest) for tool, manifest in manifests.items()}
    count = 0
    for tool, manifest in sorted(manifests.items()):
        for index, example in enumerate(subject.examples(tool)):
            async with scenario(subject, f"fwd-{tool}-{index}") as scene:
                args = await scene.prepare(example)
                before = scene.fingerprint()
                sent = len(scene.requests)
                try:
                    result = await scene.call(tool, args, key=f"cert-fwd-{tool}-{index}")
                except ReversiError as exc:
                    raise fail(
                        f"{label(tool, index)} failed: {type(exc).__name__}: {exc}"
                    ) from None
                try:
                    json.dumps(result)
                except (TypeError, ValueError) as exc:
                    raise fail(
                        f"{label(tool, index)} returned a result that is not JSON: {exc}"
                    ) from None
                departures = described[tool](result)
                if departures:
                    raise fail(
                        f"{label(tool, index)} returned a result its output schema does not "
                        "describe: " + "; ".join(departures[:3])
                    )
                after = scene.fingerprint()
                stayed_inside(scene, label(tool, index))
                if manifest.effect is Effect.READ_ONLY:
                    if after != before:
                        raise fail(
                            f"{label(tool, index)} is read_only but changed the backend: "
                            + difference(before, after)
                        )
                    written = [
                        f"{r.method} {r.target}" for r in scene.requests[sent:] if wrote(r)
                    ]
                    if written:
                        raise fail(f"{label(tool, index)} is read_only but sent {written}")
                elif manifest.effect is not Effect.IDEMPOTENT and after == before:
                    raise fail(
                        f"{label(tool, index)} ({manifest.effect.value}) succeeded but the "
                        "backend fingerprint did not change: the example does nothing, or the "
                        "fingerprint misses what it does"
                    )
                count += 1
    return f"{count} calls over {len(manifests)} tools"


# -- 2. forward failure ----------------------------------------------------------------


def _refusal(
    subject: Subject, what: str, exc: BaseException, status: int | None = None
) -> str | None:
    """Check one refusal: a ToolError naming its status (or the vendor's code for it), clean.

    With ``status``, the error must have ``ToolError.status == status`` or a ``code`` the
    fixture's ``error_codes`` maps to ``status``; either way its message must name it.
    Returns the vendor code accepted instead of ``status`` (``None`` when the error has
    the status itself, or no status was asked for).
    """
    if isinstance(exc, EffectUncertainError):
        raise fail(f"{what} was reported uncertain, but the backend refused it: {exc}")
    if not isinstance(exc, ToolError):
        raise fail(f"{what} raised {type(exc).__name__}, not ToolError: {exc}")
    text = str(exc)
    if leaks(text, subject.fixture.credential) or leaks(str(exc.code), subject.fixture.credential):
        raise fail(f"{what}: the error carries the credential")
    codes = subject.fixture.codes_for(status) if status is not None else frozenset()
    by_code = exc.code in codes
    if status is not None and exc.status != status and not by_code:
        if not codes:
            raise fail(f"{what}: ToolError.status is {exc.status}, expected {status}: {text}")
        raise fail(
            f"{what}: ToolError.status is {exc.status} and its code {exc.code!r} is not one of "
            f"{', '.join(sorted(codes))} (the codes the fixture says stand for {status}): {text}"
        )
    if exc.status is not None and str(exc.status) not in text:
        raise fail(f"{what}: the error does not name HTTP {exc.status}: {text}")
    if by_code and exc.status != status:
        if str(exc.code) not in text:
            raise fail(f"{what}: the error does not name its code {exc.code}: {text}")
        return str(exc.code)
    return None


def _for_the_declared_reason(what: str, failure: Failure, exc: BaseException) -> None:
    """Fail unless the refusal carries the code (and status) the :class:`Failure` declares."""
    code = getattr(exc, "code", None)
    status = getattr(exc, "status", None)
    if code != failure.code or (failure.status is not None and status != failure.status):
        got = (f"HTTP {status}, " if failure.status is not None else "") + f"code {code!r}"
        raise fail(
            f"{what} was refused for another reason than the fixture declares: {got}, "
            f"expected {failure.expects()}: {exc}"
        )


async def check_forward_failure(subject: Subject) -> str:
    """Declared failing calls, and (with faults) an injected 422 on every tool, are clean refusals."""
    failures = subject.fixture.failures
    if not failures:
        raise fail("the fixture declares no failing calls (failures): give at least one")
    unknown = sorted(set(failures) - set(subject.manifests))
    if unknown:
        raise fail(f"failures name tools the connector does not have: {', '.join(unknown)}")
    count = 0
    for tool, examples in sorted(failures.items()):
        for index, failure in enumerate(examples):
            async with scenario(subject, f"ff-{tool}-{index}") as scene:
                args = await scene.prepare(failure.args)
                before = scene.fingerprint()
                what = f"failing {label(tool, index)}"
                try:
                    result = await scene.call(tool, args)
                except Exception as exc:
                    _refusal(subject, what, exc)
                    _for_the_declared_reason(what, failure, exc)
                else:
                    raise fail(f"{what} succeeded: {shorten(result)}")
                after = scene.fingerprint()
                if after != before:
                    raise fail(
                        f"{what} was refused but changed the backend: {difference(before, after)}"
                    )
                stayed_inside(scene, f"{what}, although refused,")
                count += 1
    count_injected = 0
    refusal = Injection(INJECTED_REFUSAL)
    async with scenario(subject, "ff-probe") as probe:
        has_faults = probe.faults is not None
    if has_faults:
        first_examples(subject, sorted(subject.manifests))
        for tool in sorted(subject.manifests):
            async with scenario(subject, f"ff-inj-{tool}") as scene:
                args = await scene.prepare(subject.examples(tool)[0])
                before = scene.fingerprint()
                fault = refusal.fault("certification: injected refusal")
                under = refusal.under(scene, fault)
                with armed(scene, fault):
                    try:
                        await scene.call(tool, args)
                    except Exception as exc:
                        refusal.answered(
                            _refusal(subject, f"{tool} under {under}", exc, INJECTED_REFUSAL)
                        )
                    else:
                        raise fail(f"{tool} succeeded despite {under}")
                if scene.fingerprint() != before:
                    raise fail(f"{tool} under {under} changed the backend")
                count_injected += 1
    return f"{count} declared refusals, each with its declared code" + (
        f", {count_injected} injected {refusal}" if count_injected else ""
    )


# -- 3. duplicate call -----------------------------------------------------------------


async def check_duplicate_call(subject: Subject) -> str | NotApplicableHere:
    """The same call twice with the same key: both succeed, the second changes nothing."""
    manifests = subject.manifests
    targets = sorted(
        {n for n, m in manifests.items() if m.effect is Effect.IDEMPOTENT}
        | set(subject.fixture.sends_idempotency_key)
    )
    if not targets:
        return NotApplicableHere("no tool is idempotent and none sends an idempotency key")
    first_examples(subject, targets)
    count = 0
    for tool in targets:
        for index, example in enumerate(subject.examples(tool)):
            async with scenario(subject, f"dup-{tool}-{index}") as scene:
                args = await scene.prepare(example)
                key = f"certification-duplicate-{tool}-{index}"
                try:
                    await scene.call(tool, args, key=key)
                    once = scene.fingerprint()
                    await scene.call(tool, args, key=key)
                except ReversiError as exc:
                    raise fail(f"{label(tool, index)} failed when called twice: {exc}") from None
                twice = scene.fingerprint()
                if twice != once:
                    raise fail(
                        f"{label(tool, index)} called a second time with the same key changed the "
                        "backend again: " + difference(once, twice)
                    )
                count += 1
    return f"{count} repeated calls over {len(targets)} tools"


# -- 4. retry --------------------------------------------------------------------------


async def check_retry(subject: Subject) -> str:
    """Dropped connection: uncertain for a write, ToolError for a read; 5xx names the status; then a retry succeeds."""
    manifests = subject.manifests
    first_examples(subject, sorted(manifests))
    unavailable = Injection(503)
    for tool, manifest in sorted(manifests.items()):
        example = subject.examples(tool)[0]
        async with scenario(subject, f"retry-drop-{tool}") as scene:
            args = await scene.prepare(example)
            with armed_on_effect(scene, Fault.drop_after_read(), manifest):
                try:
                    await scene.call(tool, args)
                except EffectUncertainError as exc:
                    if not writes(manifest):
                        raise fail(
                            f"{tool} is read_only but a dropped connection made it uncertain: {exc}"
                        ) from None
                except ToolError as exc:
                    if writes(manifest):
                        raise fail(
                            f"{tool} writes, and a connection dropped after the request was read "
                            f"was reported as a plain failure (uncertainty lost): {exc}"
                        ) from None
                except Exception as exc:
                    raise fail(
                        f"{tool}: a dropped connection raised {type(exc).__name__}: {exc}"
                    ) from None
                else:
                    raise fail(f"{tool} succeeded although the connection was dropped unanswered")
        async with scenario(subject, f"retry-5xx-{tool}") as scene:
            args = await scene.prepare(example)
            before = scene.fingerprint()
            fault = unavailable.fault("certification: unavailable")
            under = unavailable.under(scene, fault)
            with armed(scene, fault):
                try:
                    await scene.call(tool, args)
                except Exception as exc:
                    unavailable.answered(_refusal(subject, f"{tool} under {under}", exc, 503))
                else:
                    raise fail(f"{tool} succeeded despite {under}")
            if scene.fingerprint() != before:
                raise fail(f"{tool} under {under} changed the backend")
            try:
                await scene.call(tool, args)
            except ReversiError as exc:
                raise fail(f"{tool} failed when retried after {under} cleared: {exc}") from None
    return f"{len(manifests)} tools: dropped connection, {unavailable}, retry"


# -- 5. compensation success -----------------------------------------------------------


def _registry_or_fail(scene: Scene) -> Any:
    try:
        return scene.registry()
    except ManifestError as exc:
        raise fail(f"the manifests do not form a registry: {exc}") from None


async def check_compensation_success(subject: Subject) -> str | NotApplicableHere:
    """A real engine rolls each example back to the prior state (or the declared residue)."""
    targets = subject.tools(*UNDOABLE)
    if not targets:
        return NotApplicableHere("no tool has a compensation")
    first_examples(subject, targets)
    count = 0
    for tool in targets:
        for index, example in enumerate(subject.examples(tool)):
            async with scenario(subject, f"comp-{tool}-{index}") as scene:
                _registry_or_fail(scene)
                args = await scene.prepare(example)
                before = scene.fingerprint()
                run = scene.run()
                seq, _ = await run.call(tool, args)
                during = scene.fingerprint()
                if during == before:
                    raise fail(
                        f"{label(tool, index)} changed nothing the fingerprint shows, so its undo "
                        "cannot be checked"
                    )
                report = await run.rollback(compensate=scene.compensator())
                step = step_of(report, seq)
                if not report.complete or step.rollback_state is not RollbackState.COMPENSATED:
                    state = step.rollback_state.value if step.rollback_state else step.state.value
                    raise fail(
                        f"rolling back {label(tool, index)} did not complete: step {state}: "
                        f"{step.rollback_reason}"
                    )
                after = scene.fingerprint()
                norm = normaliser(subject, tool)
                if norm(after) != norm(before):
                    undone_nothing = norm(after) == norm(during)
                    raise fail(
                        f"after rolling back {label(tool, index)} the backend is not as before"
                        + (" (the undo changed nothing)" if undone_nothing else "")
                        + ": "
                        + difference(norm(before), norm(after))
                    )
                count += 1
    return f"{count} calls rolled back over {len(targets)} tools"


# -- 6. compensation failure -----------------------------------------------------------


def recorded(scene: Scene, calls: list[CompensationCall]) -> Compensator:
    """The scene's compensator, keeping every :class:`CompensationCall` it is given."""
    compensate: Compensator = scene.compensator()

    async def keep(call: CompensationCall) -> dict[str, Any]:
        calls.append(call)
        return await compensate(call)

    return keep


def _undo_keys(
    scene: Scene,
    tool: str,
    undo: str,
    attempts: list[tuple[str, list[CompensationCall], list[Any]]],
) -> bool:
    """Every attempt of ``tool``'s undo carried one key; for a keyed vendor, the backend got it.

    ``attempts`` is ``(name, compensation calls, requests the backend recorded)`` for the
    failed attempt and the retried one. Returns whether the backend's copy was checked.
    """
    keys = [(name, call.idempotency_key) for name, calls, _ in attempts for call in calls]
    for name, calls, _ in attempts:
        if not calls:
            raise fail(f"the {name} rollback of {tool} never called the compensation {undo}")
    key = keys[0][1]
    if not key:
        raise fail(f"the compensation {undo} undoing {tool} was given no idempotency key")
    for name, other in keys:
        if other != key:
            raise fail(
                f"the {name} attempt of {undo} undoing {tool} was given idempotency key "
                f"{other!r}, the failed one {key!r}: every attempt of a step's compensation "
                "must carry the same key, derived only from the run and the step"
            )
    fixture = scene.subject.fixture
    where = fixture.idempotency_key_in
    if undo not in fixture.sends_idempotency_key or where is None:
        return False
    for name, _, requests in attempts:
        sent = [r for r in requests if wrote(r)]
        if not sent and name == "retried":
            raise fail(
                f"{undo} sends the idempotency key, but the backend recorded no write request "
                f"of its retried attempt undoing {tool}"
            )
        for request in sent:
            got = where.read(request)
            if got != key:
                raise fail(
                    f"the backend received {where} {got!r} in {request.method} {request.path} "
                    f"of the {name} attempt of {undo} undoing {tool}, not the compensation's "
                    f"idempotency key {key!r}: a compensation must send ctx.idempotency_key, "
                    "never a fresh key"
                )
    return True


async def check_compensation_failure(subject: Subject) -> str | NotApplicableHere:
    """A failing undo: compensation_failed, incomplete; then a retry under the same key completes."""
    targets = subject.tools(*UNDOABLE)
    if not targets:
        return NotApplicableHere("no tool has a compensation")
    first_examples(subject, targets)
    received = 0
    for tool in targets:
        async with scenario(subject, f"compfail-{tool}") as scene:
            _registry_or_fail(scene)
            args = await scene.prepare(subject.examples(tool)[0])
            before = scene.fingerprint()
            run = scene.run()
            seq, _ = await run.call(tool, args)
            planned = run.journal.get_step(run.id, seq).compensation
            if planned is None:
                raise fail(f"{tool} succeeded but no compensation was computed for it")
            failed: list[CompensationCall] = []
            sent = len(scene.requests)
            with undo_fault(scene, planned["tool"], planned["args"]):
                first = await run.rollback(compensate=recorded(scene, failed))
            failed_requests = scene.requests[sent:]
            step = step_of(first, seq)
            if first.complete or step.rollback_state is not RollbackState.COMPENSATION_FAILED:
                state = step.rollback_state.value if step.rollback_state else None
                raise fail(
                    f"{planned['tool']} was made to fail while undoing {tool}, yet the step is "
                    f"{state} and the rollback {'complete' if first.complete else 'incomplete'}"
                )
            if leaks(step.rollback_reason or "", subject.fixture.credential):
                raise fail(f"the failure reason of {planned['tool']} carries the credential")
            retried: list[CompensationCall] = []
            sent = len(scene.requests)
            second = await run.rollback(compensate=recorded(scene, retried))
            retried_requests = scene.requests[sent:]
            step = step_of(second, seq)
            if not second.complete or step.rollback_state is not RollbackState.COMPENSATED:
                raise fail(
                    f"after the fault cleared, rolling back {tool} again did not complete: "
                    f"{step.rollback_reason}"
                )
            attempts = [("failed", failed, failed_requests), ("retried", retried, retried_requests)]
            received += _undo_keys(scene, tool, planned["tool"], attempts)
            norm = normaliser(subject, tool)
            if norm(scene.fingerprint()) != norm(before):
                raise fail(f"after the retried rollback of {tool} the backend is not as before")
    where = subject.fixture.idempotency_key_in
    return (
        f"{len(targets)} tools: failed undo, then a completed retry with the same idempotency key"
        + (f", received by the backend in {where}" if received else "")
    )


# -- 7. verification failure -----------------------------------------------------------


async def check_verification_failure(subject: Subject) -> str | NotApplicableHere:
    """verify=False: verification_failed, not compensated; a truthful verify then completes."""
    targets = subject.tools(*UNDOABLE)
    if not targets:
        return NotApplicableHere("no tool has a compensation")
    first_examples(subject, targets)
    for tool in targets:
        async with scenario(subject, f"verify-{tool}") as scene:
            _registry_or_fail(scene)
            args = await scene.prepare(subject.examples(tool)[0])
            before = scene.fingerprint()
            norm = normaliser(subject, tool)
            run = scene.run()
            seq, _ = await run.call(tool, args)

            first = await run.rollback(compensate=scene.compensator(), verify=refuse)
            step = step_of(first, seq)
            if step.rollback_state is not RollbackState.VERIFICATION_FAILED:
                state = step.rollback_state.value if step.rollback_state else None
                raise fail(
                    f"verify said no for {tool}, yet the step is {state}: {step.rollback_reason}"
                )
            if first.complete or seq in first.compensated_now:
                raise fail(f"verify said no for {tool}, yet the step counts as compensated")

            truthful = restored_to(scene, norm, before)
            second = await run.rollback(compensate=scene.compensator(), verify=truthful)
            step = step_of(second, seq)
            if not second.complete or step.rollback_state is not RollbackState.COMPENSATED:
                raise fail(
                    f"with a truthful verify, rolling back {tool} again did not complete: step "
                    f"{step.rollback_state.value if step.rollback_state else None}: "
                    f"{step.rollback_reason} (the undo does not restore the prior state)"
                )
    return f"{len(targets)} tools: refused, then truthfully verified"


# -- 8. permission denial --------------------------------------------------------------


async def check_permission_denial(subject: Subject) -> str:
    """401 and 403 on every tool: ToolError naming the status (or code), no credential, nothing changed."""
    manifests = subject.manifests
    first_examples(subject, sorted(manifests))
    denials = [Injection(401), Injection(403)]
    for tool in sorted(manifests):
        for denial in denials:
            status = denial.status
            async with scenario(subject, f"perm-{tool}-{status}") as scene:
                args = await scene.prepare(subject.examples(tool)[0])
                before = scene.fingerprint()
                fault = denial.fault("certification: denied")
                under = denial.under(scene, fault)
                with armed(scene, fault):
                    try:
                        await scene.call(tool, args)
                    except Exception as exc:
                        denial.answered(_refusal(subject, f"{tool} under {under}", exc, status))
                    else:
                        raise fail(f"{tool} succeeded despite {under}")
                if scene.fingerprint() != before:
                    raise fail(f"{tool} under {under} changed the backend")
    return f"{len(manifests)} tools × " + ", ".join(map(str, denials))


# -- 9. timeout ------------------------------------------------------------------------


LONG_DEFAULTS = 300.0
"""Seconds of the default limits the timeout check builds a connector with (``build_with_timeout``)."""


def short_limit(subject: Subject) -> float:
    """The call's own limit the timeout check gives: half the fixture's ``call_timeout``."""
    return subject.fixture.call_timeout / 2


def patience(limit: float) -> float:
    """How long the timeout check waits for a connector whose limit is ``limit`` seconds."""
    return limit * 2 + 1.0


def within(scene: Scene, seconds: float) -> Executor:
    """An executor that gives each call a limit of its own: ``CallContext.timeout = seconds``.

    The engine itself is given no limit (its own would make every write uncertain
    whatever the connector does): only the connector can honour this one.
    """

    async def execute(name: str, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        return await scene.connector.call(name, args, dataclasses.replace(ctx, timeout=seconds))

    return execute


async def _gives_up(
    subject: Subject,
    scene: Scene,
    tool: str,
    manifest: Manifest,
    wait: float,
    how: str,
    call_limit: float | None = None,
) -> None:
    """Through the engine, ``tool`` against a silent backend must give up within ``wait`` seconds.

    ``how`` says, for the messages, which limit the connector had to honour; with
    ``call_limit``, the call is given that limit of its own (:func:`within`).
    """
    args = await scene.prepare(subject.examples(tool)[0])
    run = scene.run()
    execute = within(scene, call_limit) if call_limit is not None else None
    raised: BaseException | None = None
    with armed_on_effect(scene, Fault.hang(seconds=wait + 5.0), manifest):
        with anyio.move_on_after(wait) as scope:
            try:
                await run.call(tool, args, execute=execute)
            except Exception as exc:
                raised = exc
    if scope.cancelled_caught:
        lacks = (
            "has no timeout of its own"
            if call_limit is None
            else "does not honour the call's own limit (CallContext.timeout)"
        )
        raise fail(
            f"{tool} was still waiting for a silent backend after {wait:.1f} s ({how}): the "
            f"connector {lacks}"
        )
    if raised is None:
        raise fail(f"{tool} succeeded although the backend never answered ({how})")
    step = run.steps()[-1]
    if writes(manifest):
        if not isinstance(raised, EffectUncertainError) or step.state is not StepState.UNCERTAIN:
            raise fail(
                f"{tool} writes, and a silent backend must leave it uncertain ({how}); got "
                f"{type(raised).__name__} (step {step.state.value}): {raised}"
            )
    elif not isinstance(raised, ToolError) or step.state is not StepState.FAILED:
        raise fail(
            f"{tool} only reads, and a silent backend must give a plain ToolError ({how}); got "
            f"{type(raised).__name__} (step {step.state.value}): {raised}"
        )
    if leaks(str(raised), subject.fixture.credential):
        raise fail(f"the timeout error of {tool} carries the credential ({how})")


async def _builds_with_the_defaults_asked_for(subject: Subject, short: float) -> None:
    """The fixture's ``build_with_timeout`` really sets the connector's defaults.

    Built with defaults a little longer than the check waits for a call's own limit,
    and given no limit of the call's, the first tool must outlast that wait against a
    silent backend, then give up by itself. Otherwise a builder that ignores its
    ``seconds`` (keeping the fixture's short limits) would let a connector deaf to
    ``CallContext.timeout`` pass.
    """
    tool, manifest = sorted(subject.manifests.items())[0]
    defaults = patience(short) + 0.5
    asked = f"built by build_with_timeout(handle, {defaults:g}) and called with no limit"
    async with scenario(subject, f"timeout-defaults-{tool}", default_timeout=defaults) as scene:
        args = await scene.prepare(subject.examples(tool)[0])
        started = time.monotonic()
        gave_up: Exception | None = None
        with armed_on_effect(scene, Fault.hang(seconds=patience(defaults) + 5.0), manifest):
            with anyio.move_on_after(patience(defaults)) as scope:
                try:
                    await scene.call(tool, args)
                except Exception as exc:
                    gave_up = exc
        took = time.monotonic() - started
    if gave_up is None and not scope.cancelled_caught:
        raise fail(f"{tool} succeeded although the backend never answered ({asked})")
    if scope.cancelled_caught:
        raise fail(
            f"{asked}, {tool} was still waiting for a silent backend after {took:.1f} s: the "
            "connector has no timeout of its own, or the fixture does not give it the "
            "default limits it is asked for"
        )
    if took < patience(short):
        raise fail(
            f"{asked}, {tool} gave up on a silent backend after {took:.1f} s, before those "
            "defaults ran out: the fixture does not give the connector the default limits "
            "it is asked for"
        )


async def check_timeout(subject: Subject) -> str:
    """A silent backend: every tool gives up by itself, within its defaults and within the call's own limit."""
    manifests = subject.manifests
    first_examples(subject, sorted(manifests))
    limit = subject.fixture.call_timeout
    short = short_limit(subject)
    if subject.fixture.build_with_timeout is None:
        raise fail(
            "the fixture has no build_with_timeout(handle, seconds), so the check cannot build "
            "the connector with long defaults and see it honour a call's shorter limit"
        )
    for tool, manifest in sorted(manifests.items()):
        async with scenario(subject, f"timeout-{tool}", default_timeout=limit) as scene:
            await _gives_up(
                subject, scene, tool, manifest, patience(limit), f"its declared limit is {limit} s"
            )
    await _builds_with_the_defaults_asked_for(subject, short)
    for tool, manifest in sorted(manifests.items()):
        async with scenario(
            subject, f"timeout-call-{tool}", default_timeout=LONG_DEFAULTS
        ) as scene:
            await _gives_up(
                subject,
                scene,
                tool,
                manifest,
                patience(short),
                f"the call's own limit was {short:g} s, its defaults {LONG_DEFAULTS:g} s",
                call_limit=short,
            )
    return (
        f"{len(manifests)} tools gave up on a silent backend (limit {limit} s), and within "
        f"a call's own {short:g} s limit when built with {LONG_DEFAULTS:g} s defaults"
    )


# -- 10. redaction ---------------------------------------------------------------------


async def check_redaction(subject: Subject) -> str:
    """No credential in errors, results, the journal, or request URLs and bodies."""
    credential = subject.fixture.credential
    if credential is None:
        raise fail(
            "the fixture names no credential, so leaks cannot be looked for; give the one "
            "build() configures, or declare the check not applicable with the reason"
        )
    manifests = subject.manifests
    first_examples(subject, sorted(manifests))
    seen_in_headers = False
    requests = 0

    def inspect(scene: Scene) -> None:
        nonlocal seen_in_headers, requests
        for r in scene.requests:
            requests += 1
            if leaks(r.target, credential):
                raise fail(
                    f"the credential was sent in a URL: {r.method} {r.target.split('?')[0]}..."
                )
            if leaks(r.text, credential):
                raise fail(f"the credential was sent in the body of {r.method} {r.path}")
            if any(credential in v for v in header_values(r)):
                seen_in_headers = True
        if leaks(scene.journal_text(), credential):
            raise fail("the credential was written into the journal")

    for tool in sorted(manifests):
        for index, example in enumerate(subject.examples(tool)):
            async with scenario(subject, f"redact-{tool}-{index}") as scene:
                args = await scene.prepare(example)
                raw: list[dict[str, Any]] = []
                await scene.run().call(tool, args, execute=recording(scene, raw))
                if leaks(json.dumps(raw, default=str), credential):
                    raise fail(f"the result of {label(tool, index)} carries the credential")
                inspect(scene)
        faults = [
            Fault.status(500, json={"message": "certification: boom"}),
            Fault.status(401, json={"message": "Bad credentials"}),
            Fault.drop_after_read(),
        ]
        for fault in faults:
            async with scenario(subject, f"redact-err-{tool}-{fault.kind}") as scene:
                args = await scene.prepare(subject.examples(tool)[0])
                if scene.faults is None:
                    break
                run = scene.run()
                with armed(scene, fault):
                    for attempt in ("connector", "engine"):
                        try:
                            if attempt == "connector":
                                await scene.call(tool, args)
                            else:
                                await run.call(tool, args)
                        except ReversiError as exc:
                            text = str(exc) + " " + str(getattr(exc, "code", ""))
                            if leaks(text, credential):
                                raise fail(
                                    f"the error of {tool} under {fault.kind}"
                                    f"{' ' + str(fault.http_status) if fault.http_status else ''} "
                                    "carries the credential"
                                ) from None
                inspect(scene)
    for tool, examples in sorted(subject.fixture.failures.items()):
        for index, failure in enumerate(examples):
            async with scenario(subject, f"redact-ff-{tool}-{index}") as scene:
                args = await scene.prepare(failure.args)
                try:
                    await scene.call(tool, args)
                except ReversiError as exc:
                    if leaks(str(exc), credential):
                        raise fail(
                            f"the error of failing {label(tool, index)} carries the credential"
                        ) from None
                inspect(scene)
    if requests and not seen_in_headers:
        raise fail(
            "the fixture's credential was never sent in a request header, so it is not the one "
            "the connector uses: the check would prove nothing"
        )
    return f"{len(manifests)} tools; {requests} requests inspected"


# -- 11. dependency block --------------------------------------------------------------


async def check_dependency_block(subject: Subject) -> str | NotApplicableHere:
    """Each declared requires: the engine records the edge and defers the earlier step."""
    manifests = subject.manifests
    declaring = sorted(n for n, m in manifests.items() if m.requires)
    if not declaring:
        return NotApplicableHere("no tool declares requires")
    pairs = subject.fixture.dependencies
    uncovered = sorted(set(declaring) - {d.later for d in pairs})
    if uncovered:
        raise fail(
            f"{', '.join(uncovered)} declare requires but the fixture gives no dependency "
            "example for them"
        )
    for index, dep in enumerate(pairs):
        what = f"dependency example {index + 1} ({dep.earlier} then {dep.later})"
        if dep.later not in manifests or dep.earlier not in manifests:
            raise fail(f"{what} names a tool the connector does not have")
        async with scenario(subject, f"dep-{index}") as scene:
            _registry_or_fail(scene)
            before = scene.fingerprint()
            run = scene.run()
            earlier_args = await scene.prepare(dep.earlier_args)
            first, first_result = await run.call(dep.earlier, earlier_args)
            scene.results[dep.earlier] = first_result
            later_args = await scene.prepare(dep.later_args)
            second, _ = await run.call(dep.later, later_args)
            recorded = run.journal.get_step(run.id, second).requires
            if first not in recorded:
                raise fail(
                    f"{what}: the engine recorded no edge from step {second} to step {first} "
                    f"(edges: {recorded}); the requires of {dep.later} does not match this pair"
                )

            if manifests[dep.later].effect is Effect.IRREVERSIBLE:
                _stands_for_good(what, await run.rollback(compensate=scene.compensator()), first, second)
                continue
            blocked = await run.rollback(compensate=scene.compensator(), verify=all_but(second))
            later = step_of(blocked, second)
            earlier = step_of(blocked, first)
            if later.rollback_state is not RollbackState.VERIFICATION_FAILED:
                raise fail(f"{what}: the later step should stand, but it is {later.rollback_state}")
            if earlier.rollback_state is not RollbackState.DEFERRED:
                state = earlier.rollback_state.value if earlier.rollback_state else None
                raise fail(
                    f"{what}: the later step still stands, yet the earlier one is {state} "
                    "instead of deferred"
                )
            if blocked.complete:
                raise fail(f"{what}: a rollback with a deferred step reported complete")
            done = await run.rollback(compensate=scene.compensator())
            if not done.complete:
                raise fail(
                    f"{what}: once the later step was undone, the rollback still did not complete: "
                    + "; ".join(f"{o.tool}: {o.reason}" for o in done.outstanding)
                )
            norm = normaliser(subject, dep.earlier, dep.later)
            if norm(scene.fingerprint()) != norm(before):
                raise fail(f"{what}: after the full rollback the backend is not as before")
    return f"{len(pairs)} dependency pairs over {len(declaring)} tools"


def _stands_for_good(what: str, report: RollbackReport, first: int, second: int) -> None:
    """An irreversible later step is never undone: the earlier one stays deferred behind it.

    Nothing can take the later step back (a refund of a payment intent the run created),
    so its step is ``unrecoverable``, the earlier one ``deferred`` and the rollback
    incomplete, however often it runs: the part of the check that undoes the later step
    and expects a complete rollback does not apply.
    """
    later = step_of(report, second)
    earlier = step_of(report, first)
    if later.rollback_state is not RollbackState.UNRECOVERABLE:
        state = later.rollback_state.value if later.rollback_state else None
        raise fail(f"{what}: the later step is irreversible, yet the rollback made it {state}")
    if earlier.rollback_state is not RollbackState.DEFERRED:
        state = earlier.rollback_state.value if earlier.rollback_state else None
        raise fail(
            f"{what}: the irreversible later step stands for good, yet the earlier one is "
            f"{state} instead of deferred"
        )
    if report.complete:
        raise fail(f"{what}: a rollback with a deferred step reported complete")


# -- 12. manifest drift ----------------------------------------------------------------


def _reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


async def check_manifest_drift(subject: Subject) -> str:
    """Stored hashes match; a changed, added or removed input schema is reported, key order is not."""
    cls = subject.cls
    manifests = cls.manifests()
    schemas = cls.input_schemas()
    baseline = connector_schema_hashes(cls)
    if baseline != connector_schema_hashes(cls):
        raise fail("connector_schema_hashes gives different hashes on two calls")
    from_manifests = {m.name: schema_hash(m.input_schema) for m in manifests}
    if from_manifests != baseline:
        differ = sorted(
            n
            for n in set(from_manifests) | set(baseline)
            if from_manifests.get(n) != baseline.get(n)
        )
        raise fail(
            f"the manifests' input schemas and input_schemas() disagree for {', '.join(differ)}"
        )
    drift = detect_manifest_drift(manifests, schemas, baseline)
    if drift:
        raise fail(f"drift reported against the connector's own hashes: {drift}")
    if not manifests:
        raise fail("the connector has no tools")
    target = manifests[0].name
    shuffled = {name: _reordered(schema) for name, schema in schemas.items()}
    if detect_manifest_drift(manifests, shuffled, baseline):
        raise fail("reordering the keys of the input schemas was reported as drift")
    changed_schema = copy.deepcopy(schemas[target])
    changed_schema.setdefault("properties", {})["certification_extra"] = {"type": "string"}
    drift = detect_manifest_drift(manifests, {**schemas, target: changed_schema}, baseline)
    if drift.changed != [target] or drift.added or drift.removed:
        raise fail(f"a changed input schema of {target} was reported as {drift}")
    drift = detect_manifest_drift(manifests[1:], schemas, baseline)
    if drift.removed != [target] or drift.added or drift.changed:
        raise fail(f"removing {target} was reported as {drift}")
    added_name = f"{subject.name}.certification_added"
    extra = manifests[0].model_copy(update={"name": added_name})
    drift = detect_manifest_drift([*manifests, extra], schemas, baseline)
    if drift.added != [added_name] or drift.removed or drift.changed:
        raise fail(f"adding {added_name} was reported as {drift}")
    return f"{len(manifests)} schemas hashed; change, addition, removal and reordering told apart"


# -- 13. concurrent change -------------------------------------------------------------


def _made_change(
    scene: Scene, tool: str, args: dict[str, Any], result: dict[str, Any]
) -> ConcurrentChange:
    """The fixture's change of what ``tool`` produced, made through the backend."""
    make = scene.subject.fixture.concurrent_change
    if make is None:
        raise fail(
            f"the compensation of {tool} restores a prior state, but the fixture has no "
            "concurrent_change(handle, tool, args, result) to change the same thing through the "
            "backend after the call; give one, or declare the tool in restores_nothing with the "
            "reason its compensation restores nothing"
        )
    change = make(scene.handle, tool, copy.deepcopy(args), copy.deepcopy(result))
    if change is None:
        raise fail(
            f"the fixture's concurrent_change makes no change for {tool}, whose compensation "
            "restores a prior state; change what its call produced, or declare it in "
            "restores_nothing with the reason"
        )
    if not isinstance(change, ConcurrentChange):
        raise fail(
            f"concurrent_change returned a {type(change).__name__} for {tool}, not a "
            "reversi_core.testing.ConcurrentChange"
        )
    return change


async def check_concurrent_change(subject: Subject) -> str | NotApplicableHere:
    """A change made after the call survives the rollback, which names it; once undone, the rollback completes."""
    undoable = subject.tools(*UNDOABLE)
    if not undoable:
        return NotApplicableHere("no tool has a compensation")
    declared = subject.fixture.restores_nothing
    wrong = sorted(set(declared) - set(undoable))
    if wrong:
        raise fail(
            f"restores_nothing names {', '.join(wrong)}, which the connector has no reversible "
            "or compensable tool called"
        )
    targets = restoring_tools(subject)
    skipped = "; ".join(f"{t}: {declared[t]}" for t in undoable if t in declared)
    if not targets:
        return NotApplicableHere(f"no compensation restores a prior state ({skipped})")
    first_examples(subject, targets)
    for tool in targets:
        async with scenario(subject, f"concurrent-{tool}") as scene:
            _registry_or_fail(scene)
            args = await scene.prepare(subject.examples(tool)[0])
            before = scene.fingerprint()
            run = scene.run()
            seq, result = await run.call(tool, args)
            produced = scene.fingerprint()
            change = _made_change(scene, tool, args, result)
            changed = scene.fingerprint()
            if changed == produced:
                raise fail(
                    f"the fixture's concurrent_change for {tool} changed nothing the fingerprint "
                    "shows, so whether the rollback keeps it cannot be seen"
                )
            undo = run.journal.get_step(run.id, seq).compensation
            undo_tool = undo["tool"] if undo else "its compensation"
            first = await run.rollback(compensate=scene.compensator())
            step = step_of(first, seq)
            now = scene.fingerprint()
            if now != changed:
                raise fail(
                    f"rolling back {tool} after {change.what} changed overwrote that change "
                    f"({undo_tool} must refuse instead): " + difference(changed, now)
                )
            if first.complete or step.rollback_state is not RollbackState.COMPENSATION_FAILED:
                state = step.rollback_state.value if step.rollback_state else None
                raise fail(
                    f"{change.what} changed after {tool}, and {undo_tool} left the change in "
                    f"place, yet the step is {state} (it must be compensation_failed, the "
                    "rollback incomplete)"
                )
            reason = step.rollback_reason or ""
            if change.what.casefold() not in reason.casefold():
                raise fail(
                    f"{undo_tool} refused to undo {tool} after a later change, but its reason "
                    f"does not name what changed ({change.what!r}): {reason}"
                )
            if leaks(reason, subject.fixture.credential):
                raise fail(f"the refusal of {undo_tool} carries the credential")
            change.revert()
            second = await run.rollback(compensate=scene.compensator())
            step = step_of(second, seq)
            if not second.complete or step.rollback_state is not RollbackState.COMPENSATED:
                raise fail(
                    f"once {change.what} was put back as {tool} left it, rolling back again did "
                    f"not complete: {step.rollback_reason}"
                )
            norm = normaliser(subject, tool)
            if norm(scene.fingerprint()) != norm(before):
                raise fail(
                    f"after the change was undone and {tool} rolled back, the backend is not as "
                    "before: " + difference(norm(before), norm(scene.fingerprint()))
                )
    kept = f"{', '.join(targets)}: each rollback kept a later change and named it, then completed once it was undone"
    return kept + (f"; n/a for {skipped}" if skipped else "")
