"""What ``reversi-gateway --listen`` needs before the MCP SDK is loaded: its settings.

The command line checks them (and the token) before it starts the upstream, so a
mistake is said at once; :mod:`.http_gateway` serves them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "ENDPOINT",
    "MIN_TOKEN_CHARS",
    "TOKEN_ENV",
    "Listen",
    "is_ip",
    "is_loopback",
    "parse_listen",
    "parse_origin",
    "token_from",
]

TOKEN_ENV = "REVERSI_GATEWAY_TOKEN"  # noqa: S105 - the variable's name, not a token
"""The environment variable holding the bearer token clients must present."""

MIN_TOKEN_CHARS = 16
"""The shortest token accepted (a guessable one would protect nothing)."""

ENDPOINT = "/mcp"
"""The path of the MCP endpoint."""

DEFAULT_IDLE_TIMEOUT = 1800.0
"""Seconds without a request after which a session, or the stateless run, ends (the SDK's
default for a session: 30 minutes)."""


@dataclass(frozen=True)
class Listen:
    """Where and how the gateway listens: ``--listen``, ``--allow-origin``, ``--idle-timeout``.

    ``port`` 0 lets the system choose a free port (said on stderr once bound).
    ``allow_origins`` are web origins (``scheme://host[:port]``) allowed besides the
    gateway's own loopback ones; ``idle_timeout`` is in seconds.
    """

    host: str = "127.0.0.1"
    port: int = 0
    allow_origins: tuple[str, ...] = ()
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT


def is_ip(host: str) -> bool:
    """Whether ``host`` is an IP address (not a name)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT``, ``:PORT`` or ``PORT`` as ``(host, port)``.

    The host defaults to ``127.0.0.1``. Raises :class:`ValueError` naming what is wrong.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        host = "127.0.0.1"
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"--listen {text}: the port must be a number from 0 to 65535")
    return host, int(port_text)


def parse_origin(text: str) -> str:
    """An ``--allow-origin`` value, ``scheme://host[:port]``, as given; raises ValueError."""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in ("http", "https") or not rest or "/" in rest.rstrip("/"):
        raise ValueError(
            f"--allow-origin {text}: an origin is http:// or https:// and a host with an "
            "optional port, nothing after it (https://app.example.com:8443)"
        )
    return f"{scheme}://{rest.rstrip('/')}"


def token_from(environ: Mapping[str, str]) -> str:
    """The bearer token in ``environ``; raises :class:`ValueError` saying what to do.

    The message never contains the token.
    """
    token = environ.get(TOKEN_ENV, "")
    if not token:
        raise ValueError(
            f"--listen needs a bearer token for the clients in ${TOKEN_ENV} (never on the "
            f"command line); make one with: export {TOKEN_ENV}=$(python3 -c "
            "'import secrets; print(secrets.token_urlsafe(32))')"
        )
    if len(token) < MIN_TOKEN_CHARS or token.strip() != token:
        raise ValueError(
            f"${TOKEN_ENV} must be at least {MIN_TOKEN_CHARS} characters, without "
            "surrounding spaces (a short token can be guessed)"
        )
    return token
