"""Building blocks for fake vendor backends: a real HTTP server with fault injection.

A connector's public ``testing`` module writes its vendor fake as routes of a
:class:`FakeApp` and serves it with :class:`FakeServer`; tests arm :class:`Fault`\\ s on
``server.faults`` and inspect ``server.requests``. See ``docs/fakes.md``. The same
module opts the connector into the certification suite with a
:class:`CertificationFixture` (the data model of the suite, in
:mod:`reversi_core.testing._certification`; see ``docs/certification-guide.md``), and
declares there its :class:`LiveScenario`, which ``nox -s live -- NAME`` runs against
the real vendor and records with vcrpy, and its tests replay
(:mod:`reversi_core.testing._live`; see ``docs/development.md``).

This subpackage ships in the ``reversi-core`` wheel (connectors' own ``testing``
modules import it) and needs nothing beyond core's dependencies, except ``trustme``
for ``FakeServer(app, tls=True)`` and ``vcrpy`` to record or replay a live scenario.
:mod:`reversi_core.testing.postgres` (a throwaway PostgreSQL server on 127.0.0.1, for
core's PostgreSQL journal tests and the postgres connector's) needs psycopg, the
``postgresql`` extra, and is not imported from here.
"""

from ._app import FakeApp, FakeRequest, FakeResponse, Handler, Route, WritesPredicate
from ._cassettes import (
    CASSETTE_DIR,
    MATCH_ON,
    METADATA_KEY,
    live_on_test_backend,
    record_live,
    replay_cassette,
)
from ._certification import (
    CHECK_INFO,
    CHECKS,
    FIXTURE_FUNCTION,
    FIXTURE_GROUP,
    MIN_REASON_WORDS,
    SUITE_CHECKS_FILE,
    SUITE_TEST,
    ArgsBuilder,
    CertificationFixture,
    CheckInfo,
    ConcurrentChange,
    Dependency,
    Example,
    ExampleCalls,
    ExampleContext,
    Failure,
    FaultControls,
    IdempotencyKeyIn,
    NotApplicable,
    Residue,
    fixture_entry_point,
    load_fixture,
)
from ._contract import ConnectorContract
from ._faults import WRITE_METHODS, ArmedFault, Fault, FaultKind, Faults
from ._live import (
    REPLAY_CREDENTIAL,
    SUFFIX_PLACEHOLDER,
    VOLATILE_PLACEHOLDER,
    CassetteMismatch,
    CassetteRejected,
    LiveCheckFailed,
    LiveContext,
    LiveOutcome,
    LiveScenario,
    LiveVariable,
    MissingLiveVariables,
    ReplayReport,
    live_variables,
    resolve_variables,
    run_live,
)
from ._scrubbing import Secret, cassette_problems, credential_headers, secret_forms, secrets_in
from ._server import Exchange, FakeServer, FakeServerError
from ._vendor import (
    BasicAuth,
    BearerAuth,
    FakeAuth,
    HeaderAuth,
    RawAuth,
    VendorFake,
    vendor_route,
)

__all__ = [
    "CASSETTE_DIR",
    "CHECKS",
    "CHECK_INFO",
    "FIXTURE_FUNCTION",
    "FIXTURE_GROUP",
    "MATCH_ON",
    "METADATA_KEY",
    "MIN_REASON_WORDS",
    "REPLAY_CREDENTIAL",
    "SUFFIX_PLACEHOLDER",
    "SUITE_CHECKS_FILE",
    "SUITE_TEST",
    "VOLATILE_PLACEHOLDER",
    "WRITE_METHODS",
    "ArgsBuilder",
    "ArmedFault",
    "BasicAuth",
    "BearerAuth",
    "CassetteMismatch",
    "CassetteRejected",
    "CertificationFixture",
    "CheckInfo",
    "ConcurrentChange",
    "ConnectorContract",
    "Dependency",
    "Example",
    "ExampleCalls",
    "ExampleContext",
    "Exchange",
    "Failure",
    "FakeApp",
    "FakeAuth",
    "FakeRequest",
    "FakeResponse",
    "FakeServer",
    "FakeServerError",
    "Fault",
    "FaultControls",
    "FaultKind",
    "Faults",
    "Handler",
    "HeaderAuth",
    "IdempotencyKeyIn",
    "LiveCheckFailed",
    "LiveContext",
    "LiveOutcome",
    "LiveScenario",
    "LiveVariable",
    "MissingLiveVariables",
    "NotApplicable",
    "RawAuth",
    "ReplayReport",
    "Residue",
    "Route",
    "Secret",
    "VendorFake",
    "WritesPredicate",
    "cassette_problems",
    "credential_headers",
    "fixture_entry_point",
    "live_on_test_backend",
    "live_variables",
    "load_fixture",
    "record_live",
    "replay_cassette",
    "resolve_variables",
    "run_live",
    "secret_forms",
    "secrets_in",
    "vendor_route",
]
