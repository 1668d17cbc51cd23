"""The console's guard: a token for every request, a CSRF token for every POST.

Like Jupyter's: the console prints ``http://HOST:PORT/?token=T`` at start (``T`` from
``$REVERSI_CONSOLE_TOKEN`` or made up). The first request that carries ``?token=T`` gets
``T`` in an HttpOnly, SameSite=Strict cookie and a redirect to the same address without
the token, so that it stays out of the history, the screen and any ``Referer``. Every
other request needs the cookie (or ``Authorization: Bearer T``): without it, 401.

A POST also needs the form field ``csrf`` (or the header ``X-CSRF-Token``): an HMAC of
the session's token, which only a page the console served holds; and a browser's
``Origin`` must be the console's own and ``Sec-Fetch-Site`` ``same-origin`` (or
``none``). Tokens are compared with :func:`hmac.compare_digest`. The ``Host`` header
must name an address the console was told it is reached by (DNS rebinding). Every
answer says ``no-store`` and carries a Content-Security-Policy that lets the page run
only the console's own script.

OWASP's CSRF prevention cheat sheet:
https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html
"""

from __future__ import annotations

import hashlib
import hmac
import urllib.parse
from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CSP", "Guard", "csrf_token"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every answer: the console's own script and style only."""


def _same_site(path: str) -> str:
    """``path`` as a path of this site: never a scheme-relative address (``//host/x``,
    ``/\\host/x``, which a browser takes for another site), percent-encoded."""
    return "/" + urllib.parse.quote(path.lstrip("/\\"), safe="/:@!$&'()*+,;=~")


def csrf_token(token: str) -> str:
    """The CSRF token of a session holding ``token``: an HMAC-SHA256 of a constant."""
    return hmac.new(token.encode(), b"reversi-console csrf", hashlib.sha256).hexdigest()


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


class Guard:
    """ASGI middleware enforcing the module docstring's rules around ``app``.

    ``token`` is the console's token; ``cookie`` the cookie's name (one per port, as a
    browser keeps one cookie jar per host); ``hosts`` the ``Host`` names (without the
    port) the console answers to, or ``None`` for any (tests).
    """

    def __init__(
        self, app: ASGIApp, *, token: str, cookie: str, hosts: Iterable[str] | None
    ) -> None:
        self.app = app
        self.token = token
        self.cookie = cookie
        self.csrf = csrf_token(token)
        self.hosts = None if hosts is None else {h.lower() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        refusal = self._refusal(request)
        if refusal is not None:
            await _secured(refusal)(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend(_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        scope.setdefault("state", {})["csrf"] = self.csrf
        await self.app(scope, receive, send_secured)

    def _refusal(self, request: Request) -> Response | None:
        host = (request.headers.get("host") or "").rsplit(":", 1)[0].strip("[]").lower()
        if self.hosts is not None and host not in self.hosts:
            return PlainTextResponse("unknown Host: this console answers to its own address", 400)
        given = request.query_params.get("token")
        if given is not None:
            if not _same(given, self.token):
                return _unauthorized("the token in the address is not this console's")
            if request.method != "GET":
                return _unauthorized("a token in the address is for opening the console only")
            query = urllib.parse.urlencode(
                [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            )
            response = RedirectResponse(
                _same_site(request.scope["path"]) + (f"?{query}" if query else ""), 303
            )
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            return response
        auth = request.headers.get("authorization", "")
        bearer = auth[7:] if auth.lower().startswith("bearer ") else None
        if not (_same(request.cookies.get(self.cookie), self.token) or _same(bearer, self.token)):
            return _unauthorized(
                "no valid token: open the address the console printed when it started "
                "(it ends in ?token=...)"
            )
        if request.method not in ("GET", "HEAD"):
            return self._cross_site(request)
        return None

    def _cross_site(self, request: Request) -> Response | None:
        site = request.headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return _forbidden(f"a cross-site request (Sec-Fetch-Site: {site}) is refused")
        origin = request.headers.get("origin")
        if origin is not None:
            own = f"{request.url.scheme}://{request.headers.get('host', '')}"
            if origin.lower() != own.lower():
                return _forbidden("a request from another origin is refused")
        # the form's field is checked by the view (it reads the body); the header here
        header = request.headers.get("x-csrf-token")
        if header is not None and not _same(header, self.csrf):
            return _forbidden("the CSRF token is not this session's")
        return None


def check_csrf(request: Request, form_value: str | None) -> bool:
    """Whether a POST carries this session's CSRF token (form field or header)."""
    expected = request.scope.get("state", {}).get("csrf")
    if expected is None:
        return False
    return _same(form_value, expected) or _same(request.headers.get("x-csrf-token"), expected)


_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make a form send Origin: null
    (b"cache-control", b"no-store"),
]


def _secured(response: Response) -> Response:
    for name, value in _HEADERS:
        response.headers[name.decode()] = value.decode()
    return response


def _unauthorized(why: str) -> Response:
    return PlainTextResponse(f"401 unauthorized: {why}\n", 401)


def _forbidden(why: str) -> Response:
    return PlainTextResponse(f"403 forbidden: {why}\n", 403)
