"""Cassettes of live scenarios: recording with vcrpy, scrubbing credentials, strict replay.

The cassette is vcrpy's YAML format (``interactions`` of ``request``/``response``,
``version: 1``) with a ``metadata.reversi`` block (:data:`METADATA_KEY`): the connector,
the scenario, what it was recorded against, the values of the scenario's variables a
replay needs, the variables that were scrubbed, and the matching rules.

How a replay matches a request (:data:`MATCH_ON`): the method, the path (exactly, as
percent-encoded on the wire), the query (as a sorted list of decoded pairs: order does
not matter) and the body (parsed when its ``Content-Type`` says JSON or form data, so
key order does not matter; compared as bytes otherwise). Scheme, host and port are not
compared (a cassette recorded against the vendor replays against any base URL), nor are
headers (the credential in them is scrubbed; ``User-Agent`` carries a version). Each
recorded exchange answers once; identical requests are answered in the order they were
recorded. What differs between two runs is made equal before it reaches the wire: the
scenario's names carry :attr:`LiveContext.suffix`, which is random when recording and
replaced by :data:`SUFFIX_PLACEHOLDER` in the saved cassette, and a replay runs with that
placeholder as its suffix; the runs' ids (``run_live_<suffix>_<n>``), and therefore every
idempotency key the engine derives from them (``reversi-<run id>-<step>``, ``...-undo``),
and the keys of the scenario's direct calls (``reversi-live-<suffix>-direct-<n>``) follow
the suffix. What the connector itself makes up at random on each run (a backup's
``uuid4``) cannot follow it: the scenario declares it (``LiveScenario.volatile``, regular
expressions), and each match is made equal on both sides before the path, query and
body are compared.

Credentials are scrubbed as :mod:`reversi_core.testing._scrubbing` says.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from ..__about__ import __version__
from ..connector import Connector
from ._live import (
    REPLAY_CREDENTIAL,
    SUFFIX_PLACEHOLDER,
    VOLATILE_PLACEHOLDER,
    CassetteMismatch,
    CassetteRejected,
    LiveContext,
    LiveOutcome,
    LiveScenario,
    ReplayReport,
    _new_suffix,
    _perform,
    _steps,
    resolve_variables,
    run_live,
)
from ._scrubbing import (
    cassette_problems,
    credential_headers,
    mask_headers,
    scrub_pairs,
    secrets_in,
    seen_in_requests,
)

if TYPE_CHECKING:
    from ._certification import CertificationFixture

__all__ = [
    "CASSETTE_DIR",
    "MATCH_ON",
    "METADATA_KEY",
    "live_on_test_backend",
    "record_live",
    "replay_cassette",
]

MATCH_ON: tuple[str, ...] = ("method", "path", "query", "body")
"""vcrpy matchers a replay compares each request with (see the module docstring)."""

METADATA_KEY = "reversi"
"""The key of the cassette's ``metadata`` block that Reversi writes."""


CASSETTE_DIR = "cassettes"
"""The folder, beside the package's tests, that holds its cassettes."""

_MAX_CONSEQUENCE = 300  # characters of a scenario's error shown after a request that did not match


# -- recording and replaying ------------------------------------------------------


def _recorded_settings(cls: type[Connector], environ: Mapping[str, str]) -> dict[str, str]:
    """The required, non-secret settings a replay must be given (a Jira site, an email)."""
    from ..http import HttpConnector

    if not issubclass(cls, HttpConnector):
        return {}
    return {
        s.env: environ[s.env]
        for s in cls.settings
        if s.required and not s.secret and s.default is None and environ.get(s.env)
    }


def _steady(patterns: Sequence[str]) -> Callable[[Any], Any]:
    """A copy of a vcrpy request with every match of ``patterns`` in its URI and body
    replaced by :data:`VOLATILE_PLACEHOLDER` (bytes kept as bytes)."""
    from vcr.request import Request

    compiled = [re.compile(p) for p in patterns]

    def text(value: str) -> str:
        for pattern in compiled:
            value = pattern.sub(VOLATILE_PLACEHOLDER, value)
        return value

    def steady(request: Any) -> Any:
        body = request.body
        if isinstance(body, bytes | bytearray):
            body = text(bytes(body).decode("latin-1")).encode("latin-1")
        elif isinstance(body, str):
            body = text(body)
        return Request(request.method, text(request.uri), body, request.headers)

    return steady


def _vcr(record_mode: str, *, volatile: Sequence[str] = (), **options: Any) -> Any:
    """vcrpy configured as the module docstring says; ``volatile`` patterns (a scenario's)
    are made equal in the path, query and body before those are compared."""
    import vcr
    import vcr.matchers

    config = vcr.VCR(
        serializer="yaml",
        record_mode=record_mode,
        match_on=MATCH_ON,
        decode_compressed_response=True,
        **options,
    )
    if volatile:
        steady = _steady(volatile)
        for name in ("path", "query", "body"):
            compare = getattr(vcr.matchers, name)

            def matcher(r1: Any, r2: Any, compare: Callable[[Any, Any], None] = compare) -> None:
                compare(steady(r1), steady(r2))

            matcher.__name__ = name  # vcrpy names a mismatch by its matcher's name
            config.register_matcher(name, matcher)
    return config


async def record_live(
    cls: type[Connector],
    scenario: LiveScenario,
    environ: Mapping[str, str],
    cassette: Path,
    *,
    data_dir: Path,
    against: str,
    log: Callable[[str], None] = print,
) -> LiveOutcome:
    """Run ``scenario`` and record its HTTP exchanges into ``cassette``, credentials scrubbed.

    The recording goes to a hidden file beside ``cassette``; it replaces ``cassette``
    only once :func:`cassette_problems` finds nothing and :func:`replay_cassette` passes
    on it. ``against`` says what was recorded (``"the vendor"``). Raises
    :class:`MissingLiveVariables`, :class:`CassetteRejected` (the file is removed), or
    what the scenario raised (nothing is written).
    """
    import vcr

    from ..http import HttpConnector

    if not issubclass(cls, HttpConnector):
        raise TypeError(
            f"{cls.name} is not an HTTP connector: its live scenario cannot be recorded"
        )
    env = resolve_variables(cls, scenario, environ)
    secrets = secrets_in(cls, environ)
    suffix = _new_suffix()
    cassette.parent.mkdir(parents=True, exist_ok=True)
    partial = cassette.with_name(f".{cassette.stem}.recording.yaml")
    partial.unlink(missing_ok=True)
    metadata = {
        "connector": cls.name,
        "scenario": scenario.name,
        "summary": scenario.summary,
        "recorded_against": against,
        "recorded_on": datetime.date.today().isoformat(),
        "recorded_with": {"reversi-core": __version__, "vcrpy": vcr.__version__},
        "variables": {**_recorded_settings(cls, environ), **env},
        "scrubbed": [s.label for s in secrets],
        "suffix": SUFFIX_PLACEHOLDER,
        "match_on": list(MATCH_ON),
    }
    recorder = _vcr(
        "all",
        volatile=scenario.volatile,
        before_save_interaction=mask_headers(credential_headers(cls), secrets),
        filter_sensitive_data=scrub_pairs(secrets, suffix),
    )
    connector = cls.from_env(environ)
    context = LiveContext(
        connector, env=env, environ=environ, suffix=suffix, data_dir=data_dir, log=log
    )
    try:
        with recorder.use_cassette(str(partial)) as recording:
            recording.get_metadata(METADATA_KEY, metadata)
            await _perform(scenario, context)
            exchanges = len(recording)
            seen = seen_in_requests(recording.requests, secrets)
        outcome = LiveOutcome(
            cls.name,
            scenario.name,
            [r.id for r in context.runs],
            _steps(context),
            exchanges=exchanges,
            cassette=cassette,
            scrubbed=[s.label for s in secrets],
        )
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        await connector.aclose()
        context.close()
    problems: list[str] = []
    if exchanges == 0:
        problems.append("the scenario sent no HTTP request: there is nothing to record")
    unseen = [s.label for s in secrets if s.label not in seen]
    if secrets and len(unseen) == len(secrets):
        problems.append(
            f"no recorded request carried {', '.join(unseen)}: the credential in use is not the "
            "one the connector declares, so scrubbing cannot be trusted"
        )
    if partial.is_file():
        problems += cassette_problems(partial, secrets, headers=credential_headers(cls))
    else:
        problems.append("vcrpy wrote no file")
    if not problems:
        try:
            await replay_cassette(cls, scenario, partial)
        except CassetteMismatch as exc:
            problems += [f"the recording does not replay: {p}" for p in exc.problems]
    if problems:
        partial.unlink(missing_ok=True)
        raise CassetteRejected(cassette, problems)
    os.replace(partial, cassette)
    return outcome


class _ReplayTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (which vcrpy answers from the cassette), noting what is sent.

    A request the cassette does not hold raises vcrpy's
    ``CannotOverwriteExistingCassetteException`` here, before the connector can turn it
    into a tool error; it is kept in :attr:`unmatched` so the replay can report it.
    """

    def __init__(self, unmatched_error: type[BaseException]) -> None:
        super().__init__()
        self.sent: list[str] = []
        self.unmatched: list[Any] = []
        self._unmatched_error = unmatched_error

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.raw_path.decode('ascii', 'replace')}")
        try:
            return await super().handle_async_request(request)
        except self._unmatched_error as exc:
            self.unmatched.append(exc)
            raise


def _shown(request: Any) -> str:
    query = request.parsed_uri.query
    return f"{request.method} {request.path}" + (f"?{query}" if query else "")


def _unmatched_problem(exc: Any) -> str:
    """One line for a request the cassette does not hold, with the closest recorded one."""
    request = exc.failed_request
    text = f"the connector sent {_shown(request)}, which the cassette does not hold"
    similar = getattr(exc, "similar_requests", None) or []
    if similar:
        recorded, _matched, failed = similar[0]
        why = "; ".join(f"{name}: {message}" for name, message in failed)
        text += f" (closest recorded: {_shown(recorded)}, differing in {why})"
    return text.replace("\n", "\n    ")


def _cassette_metadata(cassette: Path, scenario: LiveScenario) -> dict[str, Any]:
    """The ``metadata.reversi`` block of a cassette of ``scenario``; :class:`CassetteMismatch` else."""
    import yaml

    if not cassette.is_file():
        raise CassetteMismatch(cassette, [f"there is no cassette at {cassette}"])
    try:
        loaded = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CassetteMismatch(
            cassette, [f"it is not plain YAML data ({type(exc).__name__})"]
        ) from None
    block = loaded.get("metadata") if isinstance(loaded, dict) else None
    meta = block.get(METADATA_KEY) if isinstance(block, dict) else None
    if not isinstance(meta, dict) or meta.get("scenario") != scenario.name:
        raise CassetteMismatch(
            cassette,
            [
                f"it is not a cassette of the live scenario {scenario.name!r} (metadata.{METADATA_KEY})"
            ],
        )
    return meta


async def replay_cassette(
    cls: type[Connector],
    scenario: LiveScenario,
    cassette: Path,
    *,
    connector_class: type[Connector] | None = None,
    data_dir: Path | None = None,
) -> ReplayReport:
    """Run ``scenario`` against the answers recorded in ``cassette``, offline (record mode ``none``).

    The connector (``connector_class``, default ``cls``: a test passes a deliberately
    changed subclass) is built with the values of the cassette's metadata and
    :attr:`LiveScenario.replay_env` (or :data:`REPLAY_CREDENTIAL`) for its secrets;
    requests are matched by :data:`MATCH_ON`. Raises :class:`CassetteMismatch` listing
    every request the cassette does not hold, every recorded exchange that was not
    requested, and the scenario's own failure; returns a :class:`ReplayReport` otherwise.
    """
    import tempfile

    from vcr.errors import CannotOverwriteExistingCassetteException

    from ..http import HttpConnector

    builder = connector_class or cls
    if not issubclass(builder, HttpConnector):
        raise TypeError(f"{builder.name} is not an HTTP connector: there is no cassette to replay")
    meta = _cassette_metadata(cassette, scenario)
    environ = {str(k): str(v) for k, v in (meta.get("variables") or {}).items()}
    for setting in builder.settings:
        if setting.secret:
            environ[setting.env] = scenario.replay_env.get(setting.env, REPLAY_CREDENTIAL)
    env = {v.env: environ[v.env] for v in scenario.variables if v.env in environ}
    # the placeholders of the recording become the replay's own credentials as the cassette
    # is loaded (vcrpy's filter_sensitive_data, restoring): a credential a signer puts in
    # the query then matches
    restore = [(s.placeholder, s.value) for s in secrets_in(builder, environ)]
    transport = _ReplayTransport(CannotOverwriteExistingCassetteException)
    problems: list[str] = []
    replayer = _vcr("none", volatile=scenario.volatile, filter_sensitive_data=restore)
    with (
        tempfile.TemporaryDirectory(prefix="reversi-replay-") as scratch,
        replayer.use_cassette(str(cassette), allow_playback_repeats=False) as recorded,
    ):
        connector = builder.from_env(environ, transport=transport)
        context = LiveContext(
            connector,
            env=env,
            environ=environ,
            suffix=SUFFIX_PLACEHOLDER,
            data_dir=data_dir or Path(scratch),
            replaying=True,
        )
        failure: BaseException | None = None
        try:
            await _perform(scenario, context)
        except Exception as exc:  # reported below, after what the cassette says
            failure = exc
        finally:
            await connector.aclose()
            context.close()
        problems += [_unmatched_problem(exc) for exc in transport.unmatched]
        for index, (request, _response) in enumerate(recorded.data):
            if recorded.play_counts[index] == 0:
                problems.append(
                    f"the connector never sent {_shown(request)} (recorded exchange {index + 1})"
                )
        exchanges = len(recorded)
    if failure is not None:
        said = f"{type(failure).__name__}: {failure}"
        if transport.unmatched:  # a consequence of the requests above: its first line will do
            said = said.split("\n", 1)[0][:_MAX_CONSEQUENCE] + " ..."
        problems.append(f"the scenario failed: {said}")
    if problems:
        raise CassetteMismatch(cassette, problems)
    return ReplayReport(cassette, exchanges, transport.sent)


# -- against the certification fixture's backend ----------------------------------------------


async def live_on_test_backend(
    cls: type[Connector],
    fixture: CertificationFixture[Any],
    directory: Path,
    *,
    cassette: Path | None = None,
    log: Callable[[str], None] = print,
) -> LiveOutcome:
    """Run the fixture's live scenario against its certification backend (the vendor's fake).

    The environment is the fixture's ``command_line(handle)`` variables plus the
    scenario's ``test_env(handle)``, nothing of the process's. A recording scenario is
    recorded into ``cassette`` (default ``directory / <name>.yaml``), checked and
    replayed (:func:`record_live`); another one just runs (:func:`run_live`).
    ``directory`` holds the backend's scratch files and the journal. Raises
    ``ValueError`` when the fixture declares no scenario, or no ``command_line``.
    """
    scenario = fixture.live
    if not isinstance(scenario, LiveScenario):
        raise ValueError(f"{cls.name} declares no live scenario")
    if fixture.command_line is None:
        raise ValueError(
            f"{cls.name}'s fixture has no command_line: its backend cannot be reached from the environment"
        )
    backend_dir, data_dir = directory / "backend", directory / "journal"
    backend_dir.mkdir(parents=True, exist_ok=True)
    with fixture.backend(backend_dir) as handle:
        if fixture.seed is not None:
            fixture.seed(handle)
        environ = dict(fixture.command_line(handle)[0])
        if scenario.test_env is not None:
            environ.update(scenario.test_env(handle))
        against = "the test backend: " + (fixture.backend_summary or "the certification fixture's")
        if scenario.record:
            target = cassette or directory / f"{scenario.name}.yaml"
            return await record_live(
                cls, scenario, environ, target, data_dir=data_dir, against=against, log=log
            )
        return await run_live(cls, scenario, environ, data_dir=data_dir, log=log)
