"""The vendor fake base: what every fake of a vendor API does before its routes run.

A connector's fake subclasses :class:`VendorFake`, says how its vendor reads the
credential (:attr:`VendorFake.auth`: :class:`BearerAuth`, :class:`HeaderAuth`,
:class:`BasicAuth`, :class:`RawAuth`) and what its error bodies look like
(:meth:`VendorFake.error`), and declares its routes as methods marked with
:func:`vendor_route`, each citing the vendor page it follows::

    class FakeWidget(VendorFake):
        auth = BearerAuth()

        def error(self, status: int, message: str, *, code: str | None = None,
                  **extra: Any) -> FakeResponse:
            return FakeResponse(status, json={"error": {"code": code, "message": message}})

        @vendor_route("POST", "/widgets", docs="https://widget.example/docs/create", body="json")
        def create_widget(self, request: FakeRequest) -> FakeResponse:
            ...

Every request then passes, in order: :meth:`VendorFake.precheck` (the vendor's own
header rules), the credential (401 when missing or unknown), the rate limit (with
``rate_limit`` set: a budget of requests, then :meth:`VendorFake.rate_limited`),
:meth:`VendorFake.gate` (further vendor rules, such as a secondary rate limit on
writes), the token's reach (a write with a read-only token gets
:meth:`VendorFake.read_only`), the body (a route declared ``body="json"`` or ``"form"``
answers :meth:`VendorFake.malformed_body` to one it cannot parse), and only then the
route. Every answer carries :meth:`VendorFake.rate_headers`.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import itertools
import json as jsonlib
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar

from ._app import FakeApp, FakeRequest, FakeResponse, Route, WritesPredicate

__all__ = [
    "BasicAuth",
    "BearerAuth",
    "FakeAuth",
    "HeaderAuth",
    "RawAuth",
    "VendorFake",
    "vendor_route",
]

M = TypeVar("M", bound=Callable[..., FakeResponse])

_ROUTE_ATTR = "__vendor_route__"
_order = itertools.count()


class FakeAuth:
    """How a vendor reads the credential off a request."""

    def credential(self, request: FakeRequest) -> str | None:
        """The credential the request presents, or ``None`` when it presents none."""
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class BearerAuth(FakeAuth):
    """``Authorization: <scheme> <token>``, with any of ``schemes`` (compared without case)."""

    schemes: tuple[str, ...] = ("bearer",)

    def credential(self, request: FakeRequest) -> str | None:
        scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
        if not value.strip():
            return None
        return value.strip() if scheme.lower() in self.schemes else ""


@dataclasses.dataclass(frozen=True)
class HeaderAuth(FakeAuth):
    """The token alone in a header of the vendor's (GitLab's ``PRIVATE-TOKEN``)."""

    header: str

    def credential(self, request: FakeRequest) -> str | None:
        value = request.headers.get(self.header)
        return value if value else None


@dataclasses.dataclass(frozen=True)
class BasicAuth(FakeAuth):
    """HTTP basic authentication; the credential is ``"user:password"``."""

    def credential(self, request: FakeRequest) -> str | None:
        scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
        if not value.strip():
            return None
        if scheme.lower() != "basic":
            return ""
        try:
            return base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return ""


@dataclasses.dataclass(frozen=True)
class RawAuth(FakeAuth):
    """The whole ``Authorization`` value is the credential (a Linear personal API key)."""

    def credential(self, request: FakeRequest) -> str | None:
        value = request.headers.get("authorization")
        return value if value else None


@dataclasses.dataclass(frozen=True)
class _RouteDecl:
    method: str
    template: str
    docs: str
    writes: bool | WritesPredicate | None
    body: str | None
    order: int


def vendor_route(
    method: str,
    template: str,
    *,
    docs: str,
    writes: bool | WritesPredicate | None = None,
    body: str | None = None,
) -> Callable[[M], M]:
    """Mark a :class:`VendorFake` method as the handler of ``method template``.

    ``docs`` is the vendor documentation page the route follows (an ``https://`` URL);
    ``writes`` (a bool, or a predicate over the request: a GraphQL endpoint writes for a
    mutation only) and ``body`` are described in :class:`reversi_core.testing.Route`.
    Routes are registered in the order they are defined.
    """

    def mark(handler: M) -> M:
        setattr(
            handler, _ROUTE_ATTR, _RouteDecl(method, template, docs, writes, body, next(_order))
        )
        return handler

    return mark


class VendorFake(FakeApp):
    """A fake vendor API (see the module docstring).

    ``token`` may read and write; ``read_only_tokens`` may only read. ``rate_limit`` is
    the number of requests the fake answers before it answers every further one with
    :meth:`rate_limited` (``None``: no limit); :meth:`exhaust_rate_limit` and
    :meth:`reset_rate_limit` change the budget. ``prefix`` is put in front of every
    route's template (a GitHub Enterprise Server's ``/api/v3``). Raises ``ValueError``
    when a route cites no ``https://`` documentation page.
    """

    auth: ClassVar[FakeAuth] = BearerAuth()

    def __init__(
        self,
        *,
        token: str,
        read_only_tokens: Iterable[str] = (),
        rate_limit: int | None = None,
        prefix: str = "",
    ) -> None:
        super().__init__(not_found=self.not_found)
        if prefix and (not prefix.startswith("/") or prefix.endswith("/")):
            raise ValueError("prefix must start with '/' and not end with one, such as '/api/v3'")
        self.token = token
        self.read_only_tokens = frozenset(read_only_tokens)
        self.prefix = prefix
        self.rate_limit = rate_limit
        self.rate_remaining = rate_limit if rate_limit is not None else 0
        declared = []
        for klass in type(self).__mro__:
            for value in vars(klass).values():
                decl = getattr(value, _ROUTE_ATTR, None)
                if isinstance(decl, _RouteDecl):
                    declared.append((decl, value.__name__))
        seen: set[str] = set()
        for decl, attr in sorted(declared, key=lambda pair: pair[0].order):
            if attr in seen:
                continue  # a subclass's override of the same handler is registered once
            seen.add(attr)
            self.add_route(
                decl.method,
                prefix + decl.template,
                getattr(self, attr),
                docs=decl.docs,
                writes=decl.writes,
                body=decl.body,
            )

    def add_route(
        self,
        method: str,
        template: str,
        handler: Callable[[FakeRequest], FakeResponse],
        *,
        docs: str | None = None,
        writes: bool | WritesPredicate | None = None,
        body: str | None = None,
    ) -> None:
        """As :meth:`FakeApp.add_route`, but ``docs`` (the vendor page) is required."""
        if not isinstance(docs, str) or not docs.startswith("https://"):
            raise ValueError(
                f"route {method} {template}: cite the vendor documentation page it follows "
                "(docs='https://...')"
            )
        super().add_route(method, template, handler, docs=docs, writes=writes, body=body)

    # -- what a vendor overrides -----------------------------------------------------

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        """The vendor's error answer (default: ``{"message", "code"?, **extra}``)."""
        body: dict[str, Any] = {"message": message, **extra}
        if code is not None:
            body["code"] = code
        return FakeResponse(status, json=body)

    def not_found(self, request: FakeRequest) -> FakeResponse:
        """The answer to a path no route serves (and a route's "no such object")."""
        return self.error(404, "Not Found")

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        """The answer to a request without a credential (``presented`` false) or a wrong one."""
        return self.error(401, "Bad credentials" if presented else "Requires authentication")

    def read_only(self, request: FakeRequest) -> FakeResponse:
        """The answer to a write made with a read-only token."""
        return self.error(403, "This token may only read")

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        """The answer once the rate limit is used up (default: 429 with ``Retry-After``)."""
        answer = self.error(429, "Too many requests")
        return dataclasses.replace(answer, headers={**(answer.headers or {}), "Retry-After": "60"})

    def rate_headers(self) -> dict[str, str]:
        """Headers every answer carries (default: none)."""
        return {}

    def malformed_body(self, request: FakeRequest, problem: str) -> FakeResponse:
        """The answer to a body the route cannot parse (``problem`` says why)."""
        return self.error(400, f"Problems parsing the request body: {problem}")

    def precheck(self, request: FakeRequest) -> FakeResponse | None:
        """The vendor's own rules before authentication (headers it insists on); ``None`` to go on."""
        return None

    def gate(self, request: FakeRequest, *, writes: bool, credential: str) -> FakeResponse | None:
        """Further rules after authentication and the rate limit; ``None`` to go on."""
        return None

    # -- the budget ----------------------------------------------------------------------

    def exhaust_rate_limit(self) -> None:
        """Use up the rate limit: every following request gets :meth:`rate_limited`."""
        with self.lock:
            if self.rate_limit is None:
                self.rate_limit = 0
            self.rate_remaining = 0

    def reset_rate_limit(self) -> None:
        """Give back the whole rate limit."""
        with self.lock:
            self.rate_remaining = self.rate_limit or 0

    # -- the gate every request passes ------------------------------------------------

    def dispatch(self, request: FakeRequest) -> FakeResponse:
        """Run the checks of the module docstring, then the route; add :meth:`rate_headers`."""
        with self.lock:
            answer = self._checked(request)
            return dataclasses.replace(
                answer, headers={**(answer.headers or {}), **self.rate_headers()}
            )

    def _checked(self, request: FakeRequest) -> FakeResponse:
        early = self.precheck(request)
        if early is not None:
            return early
        credential = self.auth.credential(request)
        if credential is None:
            return self.unauthorized(request, presented=False)
        if credential not in {self.token, *self.read_only_tokens}:
            return self.unauthorized(request, presented=True)
        if self.rate_limit is not None:
            if self.rate_remaining <= 0:
                return self.rate_limited(request)
            self.rate_remaining -= 1
        found = self.route_for(request.method, request.target.split("?", 1)[0])
        route: Route | None = found[0] if found else None
        writes = self.writes(request)
        gated = self.gate(request, writes=writes, credential=credential)
        if gated is not None:
            return gated
        if writes and credential != self.token:
            return self.read_only(request)
        if route is not None and route.body is not None and request.body:
            problem = _body_problem(request, route.body)
            if problem is not None:
                return self.malformed_body(request, problem)
        return super().dispatch(request)


def _body_problem(request: FakeRequest, kind: str) -> str | None:
    """Why the request's body is not ``kind`` (``"json"``/``"form"``), or ``None``."""
    if kind == "json":
        try:
            jsonlib.loads(request.body)
        except ValueError as exc:
            return f"not JSON ({exc})"
        return None
    try:
        urllib.parse.parse_qsl(request.body.decode("utf-8"), strict_parsing=True)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"not form-encoded ({exc})"
    return None
