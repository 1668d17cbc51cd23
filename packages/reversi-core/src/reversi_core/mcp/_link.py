"""What the gateway needs of its upstream, whatever it is spoken to over.

:class:`Supervisor` is what :class:`~._policy.UpstreamCall` and the
:class:`~.gateway.Gateway` use: :class:`~._upstream.Upstream` (a process, over stdio)
and :class:`~._upstream_http.HttpUpstream` (``--upstream-url``, streamable HTTP) both
are one. :func:`make_upstream` picks the one the configuration asks for (the HTTP one is
imported only then, so that a stdio gateway does not load httpx at start).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import anyio.abc
import mcp_types as types

if TYPE_CHECKING:
    import subprocess

    from .gateway import GatewayConfig

__all__ = ["Link", "Supervisor", "UpstreamNotSent", "make_upstream"]


class UpstreamNotSent(Exception):
    """The request never reached the upstream, so nothing can have happened: no
    connection, TLS refused, credentials refused (HTTP 401/403)."""


class Link(Protocol):
    """One live connection to the upstream."""

    generation: int
    tools: list[types.Tool]

    async def request(
        self, method: str, params: dict[str, Any] | None, timeout: float | None = None
    ) -> dict[str, Any]:
        """The upstream's answer (``result`` or ``error``); raises ``UpstreamClosed``,
        :class:`UpstreamNotSent` or :class:`TimeoutError`."""
        ...


class Supervisor(Protocol):
    """Keeps one link to the upstream live (see the module docstring)."""

    on_connect: list[Callable[[Any], None]]

    @property
    def description(self) -> str:
        """The upstream for messages and a run's label, credentials hidden."""
        ...

    @property
    def live(self) -> Link | None:
        """The current link when it is usable now."""
        ...

    async def connection(self) -> Link:
        """The live link, (re)opened now if needed; raises ``UpstreamError``."""
        ...

    def discard(self, conn: Any, why: str, *, restart: bool = True) -> None:
        """Retire ``conn`` after a failure."""
        ...

    async def aclose(self) -> None:
        """Stop the live link."""
        ...


def make_upstream(
    config: GatewayConfig,
    task_group: anyio.abc.TaskGroup,
    errlog: TextIO,
    first: subprocess.Popen[bytes] | None = None,
) -> Supervisor:
    """The upstream of ``config``: its URL over HTTP, else its command over stdio
    (adopting ``first``, the process already started)."""
    if config.upstream_url:
        from ._upstream_http import HttpUpstream

        return HttpUpstream(
            config.upstream_url,
            task_group,
            headers=config.upstream_headers,
            ca_file=config.upstream_ca_file,
            start_timeout=config.start_timeout,
            errlog=errlog,
        )
    from ._upstream import Upstream

    return Upstream(
        config.upstream_argv,
        task_group,
        env=config.upstream_env,
        start_timeout=config.start_timeout,
        errlog=errlog,
        first=first,
    )
