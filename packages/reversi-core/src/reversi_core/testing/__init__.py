"""Building blocks for fake vendor backends: a real HTTP server with fault injection.

A connector's public ``testing`` module writes its vendor fake as routes of a
:class:`FakeApp` and serves it with :class:`FakeServer`; tests arm :class:`Fault`\\ s on
``server.faults`` and inspect ``server.requests``. See ``docs/fakes.md``.

This subpackage ships in the ``reversi-core`` wheel (connectors' own ``testing``
modules import it) and needs nothing beyond core's dependencies, except ``trustme``
for ``FakeServer(app, tls=True)``.
"""

from ._app import FakeApp, FakeRequest, FakeResponse, Handler
from ._faults import WRITE_METHODS, ArmedFault, Fault, FaultKind, Faults
from ._server import FakeServer, FakeServerError

__all__ = [
    "WRITE_METHODS",
    "ArmedFault",
    "FakeApp",
    "FakeRequest",
    "FakeResponse",
    "FakeServer",
    "FakeServerError",
    "Fault",
    "FaultKind",
    "Faults",
    "Handler",
]
