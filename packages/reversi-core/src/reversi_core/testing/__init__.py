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

from ._app import FakeApp, FakeRequest, FakeResponse, Handler
from ._certification import (
    CHECK_INFO,
    CHECKS,
    FIXTURE_FUNCTION,
    MIN_REASON_WORDS,
    SUITE_CHECKS_FILE,
    SUITE_TEST,
    ArgsBuilder,
    CertificationFixture,
    CheckInfo,
    Dependency,
    Example,
    ExampleContext,
    FaultControls,
    NotApplicable,
    Residue,
    fixture_module_name,
    load_fixture,
)
from ._faults import WRITE_METHODS, ArmedFault, Fault, FaultKind, Faults
from ._server import FakeServer, FakeServerError

__all__ = [
    "CHECKS",
    "CHECK_INFO",
    "FIXTURE_FUNCTION",
    "MIN_REASON_WORDS",
    "SUITE_CHECKS_FILE",
    "SUITE_TEST",
    "WRITE_METHODS",
    "ArgsBuilder",
    "ArmedFault",
    "CertificationFixture",
    "CheckInfo",
    "Dependency",
    "Example",
    "ExampleContext",
    "FakeApp",
    "FakeRequest",
    "FakeResponse",
    "FakeServer",
    "FakeServerError",
    "Fault",
    "FaultControls",
    "FaultKind",
    "Faults",
    "Handler",
    "NotApplicable",
    "Residue",
    "fixture_module_name",
    "load_fixture",
]
