"""The upstream MCP server over streamable HTTP (``--upstream-url``): a minimal client.

:class:`HttpUpstream` is the supervisor :class:`~._policy.UpstreamCall` talks to, as
:class:`~._upstream.Upstream` is for a process: :meth:`~HttpUpstream.connection` gives
the live :class:`HttpLink` (opening one when there is none), :meth:`~HttpUpstream.discard`
retires one after a failure. A link speaks the protocol the upstream offers, found when it
opens: ``server/discover`` first (2026-07-28: stateless, every request carries its
``_meta`` envelope and the ``MCP-Protocol-Version`` header), else the ``initialize``
handshake (the newest handshake version the SDK knows; a session id). Then every page of
``tools/list``, read into SDK models once, and one POST per request, whose answer is a
JSON body or an SSE stream (its ``ping`` requests answered, other requests refused, its
notifications ignored), on the keep-alive connections of a lean HTTP/1.1 client
(:class:`~._http11.Pool`, httptools), which verifies the server's certificate with httpx's
default CA bundle (certifi's) or ``REVERSI_UPSTREAM_CA_FILE``'s, and takes nothing from
the environment (no proxy, ``.netrc`` or CA bundle variable).

What a failure means for the step (docs/gateway.md, "Failures"): a request that never
left (no connection, TLS refused, the credentials refused with 401 or 403) is
:class:`UpstreamNotSent`, a definite failure; one whose answer was lost (the connection
dropped, an HTTP 5xx) is :class:`~._upstream.UpstreamClosed` or an ``INTERNAL_ERROR``
answer, uncertain for a writing tool; a session the server no longer knows (404) did not
run the call, so the link opens a new session and sends it once more.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, nullcontext, suppress
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx
import mcp_types as types
from mcp.shared.inbound import (
    NAME_BEARING_METHODS,
    encode_header_value,
    mcp_param_headers,
    x_mcp_header_map,
)
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, SERVER_INFO_META_KEY
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from ..__about__ import __version__
from .._json import dumps, loads
from ..redact import register_secret
from ._http11 import Broken, NotSent, Pool, Response
from ._link import UpstreamNotSent
from ._messages import PROG, describe, say
from ._upstream import DEFAULT_START_TIMEOUT, UpstreamClosed, UpstreamError, _result_of

__all__ = [
    "UPSTREAM_CA_ENV",
    "UPSTREAM_HEADERS_ENV",
    "UPSTREAM_TOKEN_ENV",
    "HttpLink",
    "HttpUpstream",
    "UpstreamNotSent",
    "describe_url",
    "upstream_credentials",
]

UPSTREAM_TOKEN_ENV = "REVERSI_UPSTREAM_TOKEN"  # noqa: S105 - a variable's name
"""Sent to the upstream as ``Authorization: Bearer <value>``."""

UPSTREAM_HEADERS_ENV = "REVERSI_UPSTREAM_HEADERS"
"""A JSON object of further headers for the upstream (``{"X-Api-Key": "..."}``)."""

UPSTREAM_CA_ENV = "REVERSI_UPSTREAM_CA_FILE"
"""A PEM file of the CA certificates that may sign the upstream's certificate."""

MODERN = max(MODERN_PROTOCOL_VERSIONS)
"""The stateless protocol version the gateway speaks to an upstream that offers it."""

_CONNECT_TIMEOUT = 10.0


class _SessionGone(Exception):
    """The upstream no longer knows the session (404): the request did not run."""


def describe_url(url: str) -> str:
    """``scheme://host[:port]/path`` of ``url``: no user, password, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def check_url(url: str) -> str:
    """``url`` if it can be an upstream; raises :class:`ValueError` saying why not.

    It must be ``https://``, or ``http://`` to this machine's loopback, and carry no
    credentials (they go in the environment): no user or password, and no query string,
    where an API key would be (``?api_key=...``); a command line and the logs would
    show it. The message names the URL by :func:`describe_url` only.
    """
    from ._listen import is_loopback

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--upstream-url {describe_url(url)}: not an http:// or https:// URL")
    if parts.username or parts.password:
        raise ValueError(
            f"--upstream-url {describe_url(url)}: the URL holds credentials; put them in "
            f"${UPSTREAM_TOKEN_ENV} or ${UPSTREAM_HEADERS_ENV} instead"
        )
    if parts.query:
        raise ValueError(
            f"--upstream-url {describe_url(url)}: the URL holds a query string, where "
            "credentials such as an API key would be seen on the command line (ps) and in "
            f"logs; it is not taken, nor shown: put credentials in ${UPSTREAM_TOKEN_ENV} or "
            f"${UPSTREAM_HEADERS_ENV} and give the URL without a query"
        )
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ValueError(
            f"--upstream-url {describe_url(url)}: plain http:// is accepted only to this "
            "machine (127.0.0.1, localhost, [::1]); use https://"
        )
    return url


def upstream_credentials(environ: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """The headers and CA file for the upstream, from ``environ``.

    Every value is registered as a secret (:func:`reversi_core.redact.register_secret`), so
    no message can show it. Raises :class:`ValueError` naming the variable that is wrong
    (never its value).
    """
    headers: dict[str, str] = {}
    raw = environ.get(UPSTREAM_HEADERS_ENV)
    if raw:
        try:
            given = json.loads(raw)
        except ValueError:
            given = None
        if not isinstance(given, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in given.items()
        ):
            raise ValueError(
                f"${UPSTREAM_HEADERS_ENV} must be a JSON object of header names to string "
                'values ({"X-Api-Key": "..."})'
            )
        headers.update(given)
    token = environ.get(UPSTREAM_TOKEN_ENV)
    if token:
        headers["Authorization"] = f"Bearer {token}"
        register_secret(token)
    for value in headers.values():
        register_secret(value)
    ca_file = environ.get(UPSTREAM_CA_ENV) or None
    if ca_file is not None:
        try:
            ssl.create_default_context(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"${UPSTREAM_CA_ENV} {ca_file}: {describe(exc)}") from None
    return headers, ca_file


def _tls_context(ca_file: str | None) -> ssl.SSLContext:
    """The upstream's TLS context: httpx's default one (certifi's CA bundle, nothing
    from the environment) or one trusting ``ca_file``; the certificate and the host
    name are verified either way; ALPN offers HTTP/1.1 only."""
    if ca_file:
        context = ssl.create_default_context(cafile=ca_file)
    else:
        context = httpx.create_ssl_context(verify=True, trust_env=False)
    context.set_alpn_protocols(["http/1.1"])
    return context


class HttpLink:
    """One way of speaking to the upstream: a session (handshake versions) or the
    stateless protocol; see the module docstring. ``generation`` counts links."""

    def __init__(self, generation: int, upstream: HttpUpstream) -> None:
        self.generation = generation
        self.tools: list[types.Tool] = []
        self.discarded = False
        self.closed = False
        self.version = LATEST_HANDSHAKE_VERSION
        self.session: str | None = None
        self._up = upstream
        self._next_id = 0
        self._header_maps: dict[str, Any] = {}

    @property
    def stateless(self) -> bool:
        return self.version in MODERN_PROTOCOL_VERSIONS

    # -- opening -------------------------------------------------------------------

    async def open(self) -> None:
        """Find the protocol, open a session if it has them, read every tool."""
        if not await self._discover():
            await self._initialize()
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = {"cursor": cursor} if cursor else None
            answer = await self.request("tools/list", params)
            page = types.ListToolsResult.model_validate(_result_of(answer, "tools/list"))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                self.tools = tools
                return

    async def _discover(self) -> bool:
        """``server/discover`` at the stateless version: True when the upstream speaks it."""
        self.version = MODERN
        try:
            answer = await self._post("server/discover", None)
        except (UpstreamClosed, _SessionGone):
            answer = {}
        result = answer.get("result")
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        if isinstance(versions, list) and MODERN in versions:
            return True
        self.version = LATEST_HANDSHAKE_VERSION
        return False

    async def _initialize(self) -> None:
        self.session = None
        answer = await self._post(
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": PROG, "version": __version__},
            },
        )
        result = _result_of(answer, "initialize")
        version = result.get("protocolVersion")
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise UpstreamError(f"it answered initialize with protocol version {version!r}")
        self.version = version
        await self.notify("notifications/initialized", None)

    def _param_headers(self, tool: str, arguments: dict[str, Any]) -> dict[str, str]:
        """The ``Mcp-Param-*`` headers the tool's input schema declares (``x-mcp-header``)."""
        header_map = self._header_maps.get(tool)
        if header_map is None:
            schema = next((t.input_schema for t in self.tools if t.name == tool), {})
            header_map = self._header_maps[tool] = x_mcp_header_map(schema)
        return mcp_param_headers(header_map, arguments) if header_map else {}

    # -- requests ------------------------------------------------------------------

    async def request(
        self, method: str, params: dict[str, Any] | None, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a request and return the upstream's answer (``result`` or ``error``).

        Raises :class:`UpstreamNotSent` when it could not be sent,
        :class:`~._upstream.UpstreamClosed` when its answer was lost and
        :class:`TimeoutError` after ``timeout`` seconds.
        """
        if self.closed:
            raise UpstreamClosed
        with anyio.fail_after(timeout) if timeout else nullcontext():
            try:
                return await self._post(method, params)
            except _SessionGone:
                if self.stateless:
                    raise UpstreamNotSent("the upstream answered 404 Not Found") from None
            # the session expired: nothing ran; open a new one and send it once more
            await self._initialize()
            try:
                return await self._post(method, params)
            except _SessionGone:
                raise UpstreamNotSent("the upstream does not keep a session open") from None

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        """Send a notification; a failure is ignored (nothing waits for it)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            async with self._exchange(message) as response:
                await response.aread()
        except (UpstreamNotSent, UpstreamClosed, _SessionGone):
            pass

    async def _post(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        self._next_id += 1
        rid = self._next_id
        if self.stateless:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta.update(self._up.envelope)
            params["_meta"] = meta
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        try:
            async with self._exchange(message) as response:
                answer = await self._answer(rid, response)
        except anyio.get_cancelled_exc_class():
            if not self.stateless and method != "initialize":  # as an MCP client does
                self._up.spawn(
                    self.notify,
                    "notifications/cancelled",
                    {"requestId": rid, "reason": "cancelled"},
                )
            raise
        if self.stateless:
            return _unwrap(answer)
        return answer

    @asynccontextmanager
    async def _exchange(self, message: dict[str, Any]) -> AsyncIterator[Response]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": self.version,
        }
        if self.session is not None:
            headers["Mcp-Session-Id"] = self.session
        method = message.get("method")
        if self.stateless and isinstance(method, str):  # the 2026-07-28 routing headers
            headers["Mcp-Method"] = method
            params = message.get("params") or {}
            name = params.get(NAME_BEARING_METHODS.get(method, ""))
            if isinstance(name, str):
                headers["Mcp-Name"] = encode_header_value(name)
                if method == "tools/call" and isinstance(params.get("arguments"), dict):
                    headers.update(self._param_headers(name, params["arguments"]))
        try:
            response = await self._up.http.request("POST", self._up.target, headers, dumps(message))
        except NotSent as exc:
            raise UpstreamNotSent(str(exc)) from None
        except Broken as exc:
            raise UpstreamClosed(str(exc)) from None
        try:
            status = response.status_code
            if status in (401, 403):
                raise UpstreamNotSent(
                    f"the upstream refused the credentials (HTTP {status}); check "
                    f"${UPSTREAM_TOKEN_ENV} / ${UPSTREAM_HEADERS_ENV}"
                )
            if status == 404 and self.session is not None:
                raise _SessionGone
            session = response.headers.get("mcp-session-id")
            if session and message.get("method") == "initialize":
                self.session = session
            yield response
        except Broken as exc:
            raise UpstreamClosed(str(exc)) from None
        finally:
            await response.aclose()

    async def _answer(self, rid: int, response: Response) -> dict[str, Any]:
        status = response.status_code
        kind = response.headers.get("content-type", "").split(";")[0].strip()
        if kind == "text/event-stream" and status < 300:
            async for event in _events(response):
                answer = await self._on_message(event, rid)
                if answer is not None:
                    return answer
            raise UpstreamClosed("the upstream ended its event stream before answering")
        body = await response.aread()
        message: Any = None
        if kind == "application/json" and body:
            try:
                message = loads(body)
            except ValueError:
                message = None
        answered = isinstance(message, dict) and ("result" in message or "error" in message)
        if answered and (status < 500 or "error" in message):
            return dict(message)
        if status >= 500:  # it may have run: for a writing tool, uncertain
            return _error(INTERNAL_ERROR, f"the upstream answered HTTP {status}")
        if status >= 300:
            return _error(INVALID_REQUEST, f"the upstream refused the request (HTTP {status})")
        raise UpstreamClosed(
            f"the upstream's answer (HTTP {status}, {kind or 'no type'}) is not JSON-RPC"
        )

    async def _on_message(self, message: Any, rid: int) -> dict[str, Any] | None:
        """One message of an SSE stream: the answer to ``rid``, or ``None`` to read on."""
        if not isinstance(message, dict):
            return None
        if "method" not in message:
            return message if message.get("id") == rid else None
        if "id" not in message:
            return None  # a notification (progress, a log message): not needed
        if message["method"] == "ping":
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            error = {
                "code": METHOD_NOT_FOUND,
                "message": f"{PROG} does not serve {message['method']}",
            }
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
        self._up.spawn(self._reply, reply)
        return None

    async def _reply(self, message: dict[str, Any]) -> None:
        try:
            async with self._exchange(message) as response:
                await response.aread()
        except (UpstreamNotSent, UpstreamClosed, _SessionGone):
            pass

    async def close(self) -> None:
        """End the session (``DELETE``), if there is one."""
        self.closed = True
        if self.session is None:
            return
        headers = {"Mcp-Session-Id": self.session, "MCP-Protocol-Version": self.version}
        with anyio.move_on_after(2.0), suppress(NotSent, Broken):
            response = await self._up.http.request("DELETE", self._up.target, headers)
            await response.aclose()


async def _events(response: Response) -> AsyncIterator[Any]:
    """The JSON messages of an SSE stream (``data:`` lines joined, one per event)."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                with suppress(ValueError):
                    yield loads("\n".join(data))
                data = []
            continue
        if line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        with suppress(ValueError):
            yield loads("\n".join(data))


def _unwrap(answer: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 answer without what belongs to that protocol, not to the result: its
    ``resultType`` and the upstream's ``serverInfo`` stamp. A result that asks for input
    (``input_required``) is refused: the gateway does not relay the question."""
    result = answer.get("result")
    if not isinstance(result, dict):
        return answer
    kind = result.pop("resultType", "complete")
    if kind != "complete":
        return _error(
            INVALID_REQUEST,
            f"the upstream answered {kind!r} (it asks its client for input), which "
            f"{PROG} does not relay; nothing was done",
        )
    meta = result.get("_meta")
    if isinstance(meta, dict):
        meta.pop(SERVER_INFO_META_KEY, None)
        if not meta:
            del result["_meta"]
    return answer


def _error(code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


class HttpUpstream:
    """The upstream MCP server at ``url``, over streamable HTTP (see the module docstring).

    ``headers`` carry its credentials; ``ca_file`` names the CA bundle that may sign its
    certificate (default: httpx's bundle, certifi's). ``task_group`` runs the small
    background sends (a ``ping``'s answer, a cancellation). ``start_timeout`` bounds
    opening a link, in seconds.
    """

    def __init__(
        self,
        url: str,
        task_group: anyio.abc.TaskGroup,
        *,
        headers: Mapping[str, str] | None = None,
        ca_file: str | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        errlog: Any = None,
    ) -> None:
        self.url = url
        self._tg = task_group
        self._start_timeout = start_timeout
        self._errlog = errlog
        parts = urlsplit(url)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        https = parts.scheme == "https"
        self.http = Pool(
            parts.scheme,
            parts.hostname or "",
            parts.port or (443 if https else 80),
            # httpx's TLS context with trust_env=False: certifi's CA bundle (or the given
            # one), never SSL_CERT_FILE; and the pool reads no proxy or .netrc variable,
            # which would carry the upstream's token, in clear for an http:// loopback
            # upstream, to another machine (https://www.python-httpx.org/environment_variables/)
            ssl_context=_tls_context(ca_file) if https else None,
            headers={"User-Agent": f"{PROG}/{__version__}", **(headers or {})},
            connect_timeout=_CONNECT_TIMEOUT,
            keep=32,
            expiry=60.0,
        )
        self.envelope: dict[str, Any] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": PROG, "version": __version__},
        }
        self._lock = anyio.Lock()
        self._current: HttpLink | None = None
        self._generation = 0
        self.on_connect: list[Callable[[Any], None]] = []

    @property
    def description(self) -> str:
        """The URL for messages and the run's label, without credentials or a query."""
        return describe_url(self.url)

    @property
    def live(self) -> HttpLink | None:
        """The current link if it is usable now, else ``None`` (no waiting)."""
        current = self._current
        if current is not None and not current.discarded and not current.closed:
            return current
        return None

    async def connection(self) -> HttpLink:
        """The live link, opened now if needed; raises :class:`UpstreamError` when the
        upstream cannot be reached or does not speak MCP."""
        current = self.live
        if current is not None:
            return current
        async with self._lock:
            current = self.live
            if current is not None:
                return current
            self._generation += 1
            link = HttpLink(self._generation, self)
            try:
                with anyio.fail_after(self._start_timeout):
                    await link.open()
            except TimeoutError:
                raise UpstreamError(
                    f"the upstream server ({self.description}) did not answer "
                    f"server/discover, initialize and tools/list within {self._start_timeout:g} s"
                ) from None
            except Exception as exc:
                known = isinstance(exc, UpstreamNotSent | UpstreamClosed) and str(exc)
                raise UpstreamError(
                    f"the upstream server ({self.description}) could not be reached: "
                    f"{str(exc) if known else describe(exc)}"
                ) from None
            self._current = link
            for callback in self.on_connect:
                callback(link)
            return link

    def discard(self, conn: Any, why: str, *, restart: bool = True) -> None:
        """Retire ``conn`` after a failure; the next call opens a new link."""
        if conn.discarded:
            return
        conn.discarded = True
        if self._current is conn:
            self._current = None
        say(
            f"upstream link #{conn.generation} retired ({why}); a new one opens for the next call",
            self._errlog,
        )
        self.spawn(conn.close)

    def spawn(self, func: Callable[..., Any], *args: Any) -> None:
        """Run ``func(*args)`` in the background."""
        self._tg.start_soon(func, *args)

    async def aclose(self) -> None:
        """End the live link's session and close the HTTP client."""
        if self._current is not None:
            await self._current.close()
            self._current = None
        await self.http.aclose()
