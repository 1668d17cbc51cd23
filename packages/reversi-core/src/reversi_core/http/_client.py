"""The HTTP client: timeouts, the meaning of a lost answer, redaction, idempotency headers."""

from __future__ import annotations

import contextlib
import functools
import http.cookiejar
import math
import os
import re
import ssl
import urllib.parse
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import anyio
import httpx

from ..__about__ import __version__
from ..errors import ConfigurationError, EffectUncertainError, InvalidArgumentsError, ToolError
from ..redact import Redactor, register_secret, scrub, scrub_json
from ._errors import ErrorCodeHook, default_error_code

__all__ = ["READ_METHODS", "HttpClient", "HttpResponse", "Timeouts", "check_base_url", "url_path"]

READ_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that do not write unless the caller says ``write=True``."""

_MAX_VENDOR_MESSAGE = 300
"""Characters of a vendor's error message kept in a ToolError (the rest is cut)."""


@dataclass(frozen=True)
class Timeouts:
    """Time limits of one request, in seconds.

    ``connect`` bounds establishing the connection (TCP and TLS) and waiting for a free
    pooled connection; ``read`` bounds each wait for data from the server (and each
    write of request data); ``total`` bounds the whole request, from connecting to
    reading the last byte of the body, enforced with :func:`anyio.fail_after`.
    Every value must be a positive finite number; a wrong one raises
    :class:`~reversi_core.errors.ConfigurationError`.
    See https://www.python-httpx.org/advanced/timeouts/.
    """

    connect: float = 5.0
    read: float = 30.0
    total: float = 60.0

    def __post_init__(self) -> None:
        for name in ("connect", "read", "total"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigurationError(f"Timeouts.{name} must be a number of seconds")
            if not (math.isfinite(value) and value > 0):
                raise ConfigurationError(
                    f"Timeouts.{name} must be positive and finite, got {value}"
                )

    def capped_at(self, seconds: float | None) -> Timeouts:
        """Return these timeouts with each one lowered to at most ``seconds`` (``None``: unchanged).

        Pass ``ctx.timeout`` (the caller's limit from :class:`~reversi_core.connector.CallContext`)
        so that the HTTP layer, which knows whether the request was sent, classifies the
        timeout rather than the engine.
        """
        if seconds is None:
            return self
        return replace(
            self,
            connect=min(self.connect, seconds),
            read=min(self.read, seconds),
            total=min(self.total, seconds),
        )

    def _httpx(self) -> httpx.Timeout:
        return httpx.Timeout(
            connect=self.connect, read=self.read, write=self.read, pool=self.connect
        )


@dataclass(frozen=True)
class HttpResponse:
    """A successful answer: status, headers, parsed JSON and text, all scrubbed of credentials.

    ``headers`` is case-insensitive (``resp.headers["etag"]``). ``json`` is the parsed
    body, or ``None`` when the body is empty or not JSON; ``text`` is the body decoded
    (charset from ``Content-Type``, else UTF-8); ``content`` the body's bytes, for a
    vendor that serves binary data (an object store), with every registered credential's
    UTF-8 bytes replaced as in ``text``.
    """

    status: int
    headers: Mapping[str, str]
    json: Any
    text: str
    content: bytes = b""

    @property
    def ok(self) -> bool:
        """True for a 2xx status (false for a status accepted through ``ok_statuses``)."""
        return 200 <= self.status < 300


def url_path(template: str, /, **segments: str | int) -> str:
    """Fill ``{name}`` placeholders of a path template, percent-encoding each value.

    ``url_path("/repos/{owner}/{repo}", owner="o", repo="a b")`` is ``"/repos/o/a%20b"``.
    A ``{name}`` value is encoded with no safe characters, so ``/``, ``?`` and ``#`` in
    it cannot change the path or add a query. ``{name:path}``
    keeps ``/`` (for values such as a git ref ``heads/feature/x``). A value that is
    empty, or has a ``.`` or ``..`` segment (which would move up the path), raises
    :class:`~reversi_core.errors.InvalidArgumentsError`; so does a missing value
    (``KeyError`` never escapes).
    """

    def fill(match: re.Match[str]) -> str:
        name, kind = match.group(1), match.group(2)
        if name not in segments:
            raise InvalidArgumentsError(f"path {template}: no value for {{{name}}}")
        value = str(segments[name])
        parts = value.split("/") if kind == "path" else [value]
        if not value or any(part in ("", ".", "..") for part in parts):
            problem = f"{name}: {value!r} is not a valid path segment"
            raise InvalidArgumentsError(f"path {template}: {problem}", problems=[problem])
        return "/".join(urllib.parse.quote(part, safe="") for part in parts)

    return re.sub(r"\{(\w+)(?::(path))?\}", fill, template)


def check_base_url(
    base_url: str,
    *,
    vendor: str,
    scrub: Callable[[str], str] = scrub,
    name: str = "base_url",
) -> str:
    """``base_url`` as httpx spells it, if it is ``http(s)://host[:port][/path]``.

    Raises :class:`~reversi_core.errors.ConfigurationError` (starting with ``vendor:``)
    for a value that is not a URL, that embeds credentials (``user:password@``), that has
    another scheme, no host, a query string or a fragment, or a port outside 1-65535.
    ``name`` is what the message calls the value: where it came from, such as
    ``AWS_ENDPOINT_URL_S3 (endpoint_url)``, so that a person knows what to fix. The
    message never shows the credentials part of the URL; ``scrub`` removes registered
    secrets from it.
    """
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError):
        # the URL itself is not shown: it may hold a credential we cannot parse out
        raise ConfigurationError(f"{vendor}: {name} is not a valid URL") from None
    if url.userinfo:
        shown = url.copy_with(username=None, password=None)
        raise ConfigurationError(
            scrub(
                f"{vendor}: {name} {shown} must not carry credentials (user:password@); "
                "pass them as headers and secrets"
            )
        )
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(f"{vendor}: {name} must be http(s)://host[:port][/path]")
    if url.query or url.fragment:
        raise ConfigurationError(f"{vendor}: {name} must not have a query string or fragment")
    try:
        port = url.port
    except (httpx.InvalidURL, ValueError):
        raise ConfigurationError(f"{vendor}: {name} has a port that is not a number") from None
    if port is not None and not 0 < port < 65536:
        raise ConfigurationError(f"{vendor}: {name} port {port} is not 1-65535")
    return str(url)


class _Progress:
    """Follows httpcore's trace events of one request (the ``trace`` request extension).

    ``sent`` becomes true when the request headers start to be written: before that,
    nothing reached the server. It also holds the TCP stream between the end of the TCP
    connect and the end of the TLS handshake: httpcore does not close it when the
    handshake is cancelled (our ``total`` deadline, or a caller's cancel scope), so
    :meth:`release` does, instead of leaving an unclosed socket behind.
    """

    def __init__(self) -> None:
        self.sent = False
        self._unowned: Any = None

    async def __call__(self, event: str, info: Mapping[str, Any]) -> None:
        if event in ("connection.connect_tcp.complete", "connection.connect_unix_socket.complete"):
            self._unowned = info.get("return_value")
        elif event == "connection.start_tls.complete" or event.startswith(("http11.", "http2.")):
            self._unowned = None  # the connection owns (and closes) the stream now
        if event.endswith("send_request_headers.started"):
            self.sent = True

    async def release(self) -> None:
        """Close a stream left behind by a connect that was cut short; no-op otherwise."""
        stream, self._unowned = self._unowned, None
        if stream is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await stream.aclose()


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    """A cookie policy that accepts no cookie: every call stands on its own."""

    def set_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        return False


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    """httpx's default context (certifi, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), built once.

    Loading the CA bundle takes tens of milliseconds; every client shares the result.
    """
    return httpx.create_ssl_context()


def _ssl_verify(verify: ssl.SSLContext | bool | str | os.PathLike[str]) -> ssl.SSLContext | bool:
    if verify is True:
        return _default_ssl_context()
    if isinstance(verify, ssl.SSLContext | bool):
        return verify
    path = Path(verify)
    if path.is_file():
        return ssl.create_default_context(cafile=str(path))
    if path.is_dir():
        return ssl.create_default_context(capath=str(path))
    raise ConfigurationError(f"verify: no CA certificate file or directory at {path}")


class HttpClient:
    """An ``httpx.AsyncClient`` that maps every outcome into Reversi's exception tree.

    ``base_url`` is the API root (``https://api.github.com``, or a GitHub Enterprise
    ``https://ghe.example/api/v3``); paths given to :meth:`request` are appended to it.
    ``vendor`` names the backend in error messages. ``headers`` are sent with every
    request (authentication, API version). ``secrets`` are the credentials to scrub
    (values shorter than four characters are ignored by the redactor). ``timeouts`` are
    the defaults of every request. ``error_code`` extracts ``(code, message)`` from an
    error response (default: :func:`default_error_code`). ``idempotency_header``, when
    set (``"Idempotency-Key"`` for Stripe), is sent on every write, or only on the writes
    whose method is in ``idempotency_methods`` when that is given (Stripe: ``POST``, since
    a key on a ``DELETE`` has no effect there). ``transport``
    replaces the network transport (tests); ``verify`` is ``True`` (system CAs via
    certifi), ``False``, an :class:`ssl.SSLContext`, or the path of a PEM CA file or
    directory (a custom cluster CA). ``user_agent`` defaults to ``reversi/<version>``.
    ``auth`` is an ``httpx.Auth`` that signs each request (AWS Signature Version 4); the
    credentials it uses must be in ``secrets`` too.

    Raises :class:`~reversi_core.errors.ConfigurationError` for a ``base_url`` that is
    not ``http(s)://host...``, that embeds credentials (``user:pass@``), or that has a
    query string or fragment, and for a ``verify`` path that does not exist.

    Use it as ``async with HttpClient(...) as client:`` or call :meth:`aclose`.
    """

    def __init__(
        self,
        base_url: str,
        *,
        vendor: str,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str | None] = (),
        timeouts: Timeouts | None = None,
        error_code: ErrorCodeHook | None = None,
        idempotency_header: str | None = None,
        idempotency_methods: Collection[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: ssl.SSLContext | bool | str | os.PathLike[str] = True,
        user_agent: str | None = None,
        auth: httpx.Auth | None = None,
    ) -> None:
        self.vendor = vendor
        self.timeouts = timeouts if timeouts is not None else Timeouts()
        self._redactor = Redactor()
        for secret in [*secrets, *_header_credentials(headers or {})]:
            self._redactor.register(secret)
            register_secret(secret)
        self.base_url = check_base_url(base_url, vendor=vendor, scrub=self._scrub)
        self._error_code = error_code
        self._idempotency_header = idempotency_header
        self._idempotency_methods = (
            None
            if idempotency_methods is None
            else frozenset(m.upper() for m in idempotency_methods)
        )
        # httpcore honours the trace extension; an arbitrary transport may not, and then
        # we cannot tell "not sent yet" from "sent" and assume the worse.
        self._traced = transport is None or isinstance(transport, httpx.AsyncHTTPTransport)
        default_headers = {"User-Agent": user_agent or f"reversi/{__version__}"}
        default_headers.update(headers or {})
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=default_headers,
            timeout=self.timeouts._httpx(),
            transport=transport,
            verify=_ssl_verify(verify),
            follow_redirects=False,
            cookies=http.cookiejar.CookieJar(policy=_NoCookies()),
            auth=auth,
        )

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the pooled connections. The client cannot be used afterwards."""
        await self._client.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        content: bytes | str | None = None,
        headers: Mapping[str, str] | None = None,
        write: bool | None = None,
        idempotency_key: str | None = None,
        ok_statuses: Collection[int] = (),
        timeouts: Timeouts | None = None,
        base_url: str | None = None,
    ) -> HttpResponse:
        """Send one request and return its answer, or raise a core exception.

        ``path`` starts with ``/`` and is appended to ``base_url`` (build it with
        :func:`url_path`); ``params`` is the query string (values are sent, never shown in
        messages); ``json``, ``data`` (form fields) or ``content`` (bytes or text) is the
        body. ``headers`` add to or override the client's. ``write`` says whether the call
        may change the backend (default: every method but GET, HEAD, OPTIONS); it decides
        between :class:`~reversi_core.errors.EffectUncertainError` and
        :class:`~reversi_core.errors.ToolError` when the outcome is lost.
        ``idempotency_key`` is sent in the client's ``idempotency_header`` on a write (a
        fresh ``uuid4`` when ``None``; never on a read, nor on a write whose method is not
        in the client's ``idempotency_methods``; ignored when the client has no
        idempotency header). ``ok_statuses`` are non-2xx statuses to return instead of
        raising (``{404}`` for an undo whose target is already gone). ``timeouts``
        replaces the client's for this call. ``base_url`` sends this one request to
        another API root than the client's (a vendor that names a resource in the host,
        such as an S3 bucket in ``https://BUCKET.s3.REGION.amazonaws.com``); it is checked
        as the client's is, and ``path`` is appended to it the same way.

        Raises :class:`~reversi_core.errors.ToolError` (``status`` and the vendor's
        ``code`` for an HTTP error; ``code`` ``"connect"``, ``"timeout"``,
        ``"connection_lost"``, ``"invalid_response"`` (a body that cannot be decoded),
        ``"invalid_request"`` or ``"credential_in_request"`` otherwise),
        :class:`~reversi_core.errors.EffectUncertainError` for a write whose outcome was
        lost, and :class:`~reversi_core.errors.InvalidArgumentsError` for a path that is
        not a relative ``/path``. See the module docstring for the rules and
        https://www.python-httpx.org/exceptions/ for the transport errors behind them.
        """
        method = method.upper()
        writes = write if write is not None else method not in READ_METHODS
        shown = f"{method} {self._scrub(path.split('?', 1)[0])}"
        if not path.startswith("/") or path.startswith("//") or "\\" in path:
            raise InvalidArgumentsError(
                f"{self.vendor}: {shown}: the path must be relative to base_url and start with one /"
            )
        limits = timeouts if timeouts is not None else self.timeouts
        target = path
        if base_url is not None:
            root = check_base_url(base_url, vendor=self.vendor, scrub=self._scrub).rstrip("/")
            target = root + path
        send_headers = dict(headers or {})
        header = self._idempotency_header
        if (
            header
            and writes
            and (self._idempotency_methods is None or method in self._idempotency_methods)
            and not any(k.lower() == header.lower() for k in send_headers)
        ):
            send_headers[header] = idempotency_key or str(uuid.uuid4())
        progress = _Progress()
        try:
            req = self._client.build_request(
                method,
                target,
                params=params,
                json=json,
                data=data,
                content=content,
                headers=send_headers,
                timeout=limits._httpx(),
                extensions={"trace": progress},
            )
        except (httpx.HTTPError, httpx.InvalidURL, TypeError, ValueError) as exc:
            raise ToolError(
                self._scrub(f"{self.vendor}: {shown}: cannot build the request: {exc}"),
                code="invalid_request",
            ) from None
        if (
            str(req.url) in self._redactor
            or req.content.decode("utf-8", "replace") in self._redactor
        ):
            raise ToolError(
                f"{self.vendor}: {shown}: refused to send a credential in the URL or body",
                code="credential_in_request",
            )

        response: httpx.Response | None = None
        failure: BaseException
        try:
            with anyio.fail_after(limits.total):
                response = await self._client.send(req, stream=True)
                try:
                    await response.aread()
                finally:
                    await response.aclose()
        except TimeoutError as exc:
            failure = exc
        except (httpx.TransportError, httpx.DecodingError, httpx.StreamError) as exc:
            failure = exc
        else:
            return self._answer(response, shown, ok_statuses)
        finally:
            await progress.release()
        raise self._lost(failure, shown, writes, progress, response, limits, ok_statuses)

    def _answer(
        self, response: httpx.Response, shown: str, ok_statuses: Collection[int]
    ) -> HttpResponse:
        status = response.status_code
        if not (200 <= status < 300 or status in ok_statuses):
            raise self._http_error(response, shown)
        text = response.text
        body: Any = None
        if text.strip():
            try:
                body = response.json()
            except ValueError:
                body = None
        return HttpResponse(
            status=status,
            headers=httpx.Headers([(k, self._scrub(v)) for k, v in response.headers.multi_items()]),
            json=self._scrub_json(body),
            text=self._scrub(text),
            content=self._redactor.scrub_bytes(response.content),
        )

    def _http_error(self, response: httpx.Response, shown: str) -> ToolError:
        status = response.status_code
        code, message = None, None
        hook = self._error_code
        if hook is not None:
            try:
                code, message = hook(response)
            except Exception:  # a broken vendor hook must not hide the HTTP error
                code, message = None, None
        if code is None and message is None:
            code, message = default_error_code(response)
        if message is None:
            message = response.reason_phrase or None
        return self._refusal(shown, status, code, message)

    def refused(
        self, method: str, path: str, status: int, code: str | None, message: str | None
    ) -> ToolError:
        """The :class:`~reversi_core.errors.ToolError` for a vendor's refusal inside an answer.

        For an answer whose status says success but whose body says the vendor refused
        (Slack's HTTP 200 ``{"ok": false, "error": ...}``): the same message an error
        status gets (the vendor, the method, the path without its query, the status, the
        vendor's ``code`` and ``message``), scrubbed, with ``status`` and ``code`` set.
        """
        shown = f"{method.upper()} {self._scrub(path.split('?', 1)[0])}"
        return self._refusal(shown, status, code, message, in_body=True)

    def _refusal(
        self,
        shown: str,
        status: int,
        code: str | None,
        message: str | None,
        *,
        in_body: bool = False,
    ) -> ToolError:
        if message is not None and len(message) > _MAX_VENDOR_MESSAGE:
            message = message[:_MAX_VENDOR_MESSAGE] + "…"
        text = f"{self.vendor}: {shown} failed: HTTP {status}"
        if in_body:
            text += ", refused in the answer's body"
        if code:
            text += f" ({code})"
        if message:
            text += f": {message}"
        if status in (502, 504):
            text += (
                " (a gateway answered: the backend may have applied a write; check before retrying)"
            )
        return ToolError(self._scrub(text), status=status, code=self._scrub(code) if code else None)

    def _lost(
        self,
        failure: BaseException,
        shown: str,
        writes: bool,
        progress: _Progress,
        response: httpx.Response | None,
        limits: Timeouts,
        ok_statuses: Collection[int],
    ) -> ToolError | EffectUncertainError:
        """Map a transport failure or timeout to ToolError or EffectUncertainError."""
        name = type(failure).__name__
        detail = f"{name}: {failure}" if str(failure) else name
        is_timeout = isinstance(failure, TimeoutError | httpx.TimeoutException)
        if isinstance(failure, TimeoutError):
            detail = f"no complete answer within the total limit of {limits.total} s"
        # Nothing was sent: definite, whatever the method.
        never_sent = isinstance(
            failure,
            httpx.ConnectError
            | httpx.ConnectTimeout
            | httpx.PoolTimeout
            | httpx.ProxyError
            | httpx.UnsupportedProtocol
            | httpx.LocalProtocolError,
        ) or (self._traced and response is None and not progress.sent)
        if never_sent:
            if isinstance(failure, httpx.LocalProtocolError | httpx.UnsupportedProtocol):
                return ToolError(
                    self._scrub(f"{self.vendor}: {shown}: invalid request ({detail})"),
                    code="invalid_request",
                )
            return ToolError(
                self._scrub(
                    f"{self.vendor}: {shown}: could not connect, nothing was sent ({detail})"
                ),
                code="connect",
            )
        # The server answered with a refusal, then the body was lost: still a refusal.
        if response is not None and not (
            200 <= response.status_code < 300 or response.status_code in ok_statuses
        ):
            status = response.status_code
            return ToolError(
                self._scrub(
                    f"{self.vendor}: {shown} failed: HTTP {status}; the error body was lost ({detail})"
                ),
                status=status,
            )
        garbled = isinstance(failure, httpx.DecodingError)
        if response is not None:
            lost = "could not be decoded" if garbled else "was lost"
            what = f"the server answered HTTP {response.status_code} but its body {lost}"
        elif is_timeout:
            what = "no answer in time after the request was sent"
        else:
            what = "the connection was lost after the request was sent"
        if writes:
            return EffectUncertainError(
                self._scrub(
                    f"{self.vendor}: {shown}: {what} ({detail}); "
                    "the write may or may not have been applied"
                )
            )
        return ToolError(
            self._scrub(f"{self.vendor}: {shown}: {what} ({detail})"),
            code="timeout" if is_timeout else "invalid_response" if garbled else "connection_lost",
        )

    def _scrub(self, text: str) -> str:
        return scrub(self._redactor.scrub(text))

    def _scrub_json(self, value: Any) -> Any:
        return scrub_json(self._redactor.scrub_json(value))


def _header_credentials(headers: Mapping[str, str]) -> list[str]:
    """The credential part of ``Authorization``-style headers (``Bearer X`` → ``X``)."""
    found = []
    for key, value in headers.items():
        if key.lower() in ("authorization", "proxy-authorization"):
            found.append(value)
            _scheme, _, credential = value.partition(" ")
            if credential.strip():
                found.append(credential.strip())
    return found
