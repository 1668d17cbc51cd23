"""Routes of a fake vendor backend: requests, responses and path templates."""

from __future__ import annotations

import json as jsonlib
import re
import threading
import traceback
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

__all__ = ["FakeApp", "FakeRequest", "FakeResponse", "Handler", "Route", "WritesPredicate"]

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class FakeRequest:
    """One request as the fake server read it off the socket.

    ``path`` is the percent-decoded path without the query; ``target`` the raw
    request target exactly as sent (path and query: what a redaction check inspects
    for credentials); ``path_params`` the values of the matched route's ``{name}``
    placeholders (decoded); ``query`` the query parameters (the last value wins when
    a name repeats); ``headers`` case-insensitive; ``body`` the raw bytes (chunked
    bodies already joined); ``json`` the parsed body or ``None`` when it is not JSON.
    ``fault`` names the fault injected into this request (``"drop_after_read"``,
    ``"status"``, ``"hang"``) or is ``None``. ``writes`` says whether the request could
    change the backend, as the app judged it (:meth:`FakeApp.writes`: the route's
    declaration, which for a GraphQL endpoint looks at the operation); ``None`` when no
    app judged it (a request built by hand).
    """

    method: str
    path: str
    target: str
    headers: Mapping[str, str]
    body: bytes = b""
    query: Mapping[str, str] = field(default_factory=dict)
    path_params: Mapping[str, str] = field(default_factory=dict)
    json: Any = None
    fault: str | None = None
    writes: bool | None = None

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (undecodable bytes replaced)."""
        return self.body.decode("utf-8", "replace")

    @property
    def form(self) -> dict[str, str]:
        """The body parsed as ``application/x-www-form-urlencoded`` (last value wins)."""
        return dict(urllib.parse.parse_qsl(self.text, keep_blank_values=True))


@dataclass(frozen=True)
class FakeResponse:
    """What a route answers: a status and a JSON value, raw bytes or text, or nothing.

    ``json`` is serialized with ``Content-Type: application/json``; ``body`` (bytes or
    text) is sent as is (``text/plain`` unless ``headers`` say otherwise). Giving both
    raises :class:`ValueError`.
    """

    status: int = 200
    json: Any = None
    headers: Mapping[str, str] | None = None
    body: bytes | str | None = None

    def __post_init__(self) -> None:
        if self.json is not None and self.body is not None:
            raise ValueError("FakeResponse takes json or body, not both")

    def encode(self) -> tuple[list[tuple[str, str]], bytes]:
        """Return the headers to send (with ``Content-Type`` filled in) and the body bytes."""
        headers = list((self.headers or {}).items())
        has_type = any(k.lower() == "content-type" for k, _ in headers)
        if self.json is not None:
            payload = jsonlib.dumps(self.json).encode()
            if not has_type:
                headers.append(("Content-Type", "application/json; charset=utf-8"))
        elif self.body is not None:
            payload = self.body.encode() if isinstance(self.body, str) else self.body
            if not has_type:
                headers.append(("Content-Type", "text/plain; charset=utf-8"))
        else:
            payload = b""
        return headers, payload


Handler = Callable[[FakeRequest], FakeResponse]
"""A route handler: takes the request, returns the response (runs in a server thread)."""

WritesPredicate = Callable[[FakeRequest], bool]
"""Whether one request to a route may change the backend (a GraphQL mutation, not a query)."""

H = TypeVar("H", bound=Handler)

_PLACEHOLDER = re.compile(r"\{(\w+)(?::(path))?\}")


def compile_template(template: str) -> re.Pattern[str]:
    """Compile ``/repos/{owner}/{repo}/git/refs/{ref:path}`` to a full-match regex.

    ``{name}`` matches one segment (no ``/``); ``{name:path}`` matches one or more
    segments. Everything else matches literally.
    """
    if not template.startswith("/"):
        raise ValueError(f"route template must start with /: {template!r}")
    pattern, pos = "", 0
    for match in _PLACEHOLDER.finditer(template):
        pattern += re.escape(template[pos : match.start()])
        body = ".+" if match.group(2) == "path" else "[^/]+"
        pattern += f"(?P<{match.group(1)}>{body})"
        pos = match.end()
    pattern += re.escape(template[pos:])
    return re.compile(pattern)


@dataclass(frozen=True)
class Route:
    """A registered route: method, path template, handler, and the vendor page it follows.

    ``writes`` says whether a request to it may change the backend (default: every
    method but GET, HEAD and OPTIONS): a bool, or a predicate over the request for a
    route where it depends on the request (a GraphQL endpoint, where one POST route
    serves read queries and mutations alike). ``body`` is how the handler expects the request body (``"json"``,
    ``"form"`` or ``None`` for none or raw bytes).
    """

    method: str
    template: str
    pattern: re.Pattern[str]
    handler: Handler
    docs: str | None = None
    writes: bool | WritesPredicate = False
    body: str | None = None

    def request_writes(self, request: FakeRequest) -> bool:
        """Whether ``request``, which this route answers, may change the backend."""
        return self.writes(request) if callable(self.writes) else self.writes


def _not_found(request: FakeRequest) -> FakeResponse:
    return FakeResponse(404, json={"message": "Not Found"})


class FakeApp:
    """The routes of a fake backend, each a function from :class:`FakeRequest` to :class:`FakeResponse`.

    ::

        app = FakeApp()

        @app.route("POST", "/repos/{owner}/{repo}/issues")
        def create_issue(request: FakeRequest) -> FakeResponse:
            return FakeResponse(201, json={"number": 1, "title": request.json["title"]})

    Routes are tried in the order they were added; the first whose method and template
    match answers. An unmatched request gets ``not_found(request)`` (default: 404 with
    ``{"message": "Not Found"}``). Handlers run one at a time under :attr:`lock`, so a
    fake's state needs no locking of its own. A handler that raises answers 500 and the
    exception is kept in :attr:`errors` (and re-raised by :class:`FakeServer` on exit).
    """

    def __init__(self, *, not_found: Handler | None = None) -> None:
        self._routes: list[Route] = []
        self._not_found = not_found or _not_found
        self.lock = threading.RLock()
        """Held while a handler runs; take it to read or change the fake's state from a test."""
        self.errors: list[BaseException] = []
        """Exceptions raised by handlers, in order."""

    def route(self, method: str, template: str, *, docs: str | None = None) -> Callable[[H], H]:
        """Decorator: register the function as the handler of ``method template``."""

        def register(handler: H) -> H:
            self.add_route(method, template, handler, docs=docs)
            return handler

        return register

    def add_route(
        self,
        method: str,
        template: str,
        handler: Handler,
        *,
        docs: str | None = None,
        writes: bool | WritesPredicate | None = None,
        body: str | None = None,
    ) -> None:
        """Register ``handler`` for ``method`` (``"GET"``, ``"POST"``...) and a path template.

        ``docs`` is the vendor documentation page the route follows; ``writes`` and
        ``body`` are described in :class:`Route`.
        """
        method = method.upper()
        if body not in (None, "json", "form"):
            raise ValueError(f"route {method} {template}: body must be 'json', 'form' or None")
        self._routes.append(
            Route(
                method,
                template,
                compile_template(template),
                handler,
                docs=docs,
                writes=writes if writes is not None else method not in _READ_METHODS,
                body=body,
            )
        )

    @property
    def routes(self) -> list[Route]:
        """Every registered route, in the order they are tried."""
        return list(self._routes)

    def route_for(self, method: str, raw_path: str) -> tuple[Route, dict[str, str]] | None:
        """The route answering ``method raw_path`` (an encoded path) and its decoded parameters."""
        for route in self._routes:
            if route.method != method.upper():
                continue
            found = route.pattern.fullmatch(raw_path)
            if found:
                params = {k: urllib.parse.unquote(v) for k, v in found.groupdict().items()}
                return route, params
        return None

    def match(self, method: str, raw_path: str) -> tuple[Handler, dict[str, str]] | None:
        """Return the handler and decoded path parameters for a raw (encoded) path, if any."""
        found = self.route_for(method, raw_path)
        return (found[0].handler, found[1]) if found else None

    def writes(self, request: FakeRequest) -> bool:
        """Whether ``request`` may change the backend: its route's ``writes`` declaration.

        A request no route answers writes unless its method is GET, HEAD or OPTIONS. The
        server asks this of every request it reads (``FakeRequest.writes``), and faults
        armed with ``writes=True`` land only where it is true.
        """
        found = self.route_for(request.method, _raw_path(request.target))
        if found is None:
            return request.method.upper() not in _READ_METHODS
        return found[0].request_writes(request)

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        """Run the matching handler (or ``not_found``) under the lock; a raise becomes a 500."""
        found = self.match(request.method, _raw_path(request.target))
        handler = found[0] if found else self._not_found
        with self.lock:
            try:
                response = handler(request)
                if not isinstance(response, FakeResponse):
                    raise TypeError(
                        f"route handler returned {type(response).__name__}, not FakeResponse"
                    )
                return response
            except Exception as exc:
                self.errors.append(exc)
                detail = "".join(traceback.format_exception_only(exc)).strip()
                return FakeResponse(500, json={"message": f"fake handler raised {detail}"})


def _raw_path(target: str) -> str:
    return target.split("?", 1)[0]


def parse_request(
    app: FakeApp, method: str, target: str, headers: httpx.Headers, body: bytes
) -> FakeRequest:
    """Build the :class:`FakeRequest` of a raw request (path params from the first matching route)."""
    raw_path, _, raw_query = target.partition("?")
    found = app.match(method, raw_path)
    parsed: Any = None
    if body:
        try:
            parsed = jsonlib.loads(body)
        except ValueError:
            parsed = None
    return FakeRequest(
        method=method,
        path=urllib.parse.unquote(raw_path),
        target=target,
        headers=headers,
        body=body,
        query=dict(urllib.parse.parse_qsl(raw_query, keep_blank_values=True)),
        path_params=found[1] if found else {},
        json=parsed,
    )
