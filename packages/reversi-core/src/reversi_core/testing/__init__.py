"""Building blocks for fake vendor backends: a real HTTP server with fault injection.

A connector's public ``testing`` module writes its vendor fake as routes of a
:class:`FakeApp` and serves it with :class:`FakeServer`; tests arm :class:`Fault`\\ s on
``server.faults`` and inspect ``server.requests``. See ``docs/fakes.md``. The same
module opts the connector into the certification suite with a
:class:`CertificationFixture` (the data model of the suite, in
:mod:`reversi_core.testing._certification`; see ``docs/certification-guide.md``).

This subpackage ships in the ``reversi-core`` wheel (connectors' own ``testing``
modules import it) and needs nothing beyond core's dependencies, except ``trustme``
for ``FakeServer(app, tls=True)``.
"""

from ._app import FakeApp, FakeRequest, FakeResponse, Handler, Route, WritesPredicate
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
    "CHECKS",
    "CHECK_INFO",
    "FIXTURE_FUNCTION",
    "FIXTURE_GROUP",
    "MIN_REASON_WORDS",
    "SUITE_CHECKS_FILE",
    "SUITE_TEST",
    "WRITE_METHODS",
    "ArgsBuilder",
    "ArmedFault",
    "BasicAuth",
    "BearerAuth",
    "CertificationFixture",
    "CheckInfo",
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
    "NotApplicable",
    "RawAuth",
    "Residue",
    "Route",
    "VendorFake",
    "WritesPredicate",
    "fixture_entry_point",
    "load_fixture",
    "vendor_route",
]
