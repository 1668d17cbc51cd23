"""The HTTP connector base: a vendor declared as data, the plumbing written once.

A connector for an HTTP API subclasses :class:`HttpConnector` and states what is
particular to its vendor as class attributes::

    class WidgetConnector(HttpConnector):
        name = "widget"
        settings = (
            Setting("WIDGET_TOKEN", "token", "a Widget API token", secret=True),
            Setting("WIDGET_BASE_URL", "base_url", "the API root", required=False),
        )
        base = BaseUrl("https://api.widget.example")
        auth = Bearer("token")
        headers = {"Accept": "application/json"}
        errors = ErrorTable(statuses={404: "not_found"})

The base then gives it :meth:`~HttpConnector.from_env` (each :class:`Setting` from its
environment variable, or from an option of the same name), credential checks and
secret registration, the base URL check (with its environment override), one HTTP
client per event loop, :meth:`~HttpConnector.aclose`, and
:meth:`~HttpConnector.request`, which caps every timeout at the call's own limit and
sends the step's idempotency key to a vendor that takes one. Tools that are one
request are declared with :class:`reversi_core.http.RequestTool`; the others are
ordinary ``@tool`` methods that call :meth:`~HttpConnector.request`.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..connector import CallContext, Connector
from ..errors import ConfigurationError, EffectUncertainError, InvalidArgumentsError, ToolError
from ..redact import register_secret
from ._client import READ_METHODS, HttpClient, HttpResponse, Timeouts, check_base_url
from ._errors import ErrorTable

if TYPE_CHECKING:
    import os
    import ssl

    import httpx

__all__ = [
    "AuthScheme",
    "BaseUrl",
    "Basic",
    "Bearer",
    "HeaderToken",
    "HttpConnector",
    "RawAuthorization",
    "Setting",
]

_WHITESPACE = re.compile(r"\s")
_CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")  # what httpx's default context reads


@dataclass(frozen=True)
class Setting:
    """One value a connector is configured with: an environment variable and an option.

    ``env`` is the variable (``GITHUB_TOKEN``), ``option`` the constructor keyword and
    ``from_env`` option (``token``), ``help`` a phrase saying what to put there (shown
    when it is missing and in the docs). A ``secret`` is registered for scrubbing and
    must be non-empty without whitespace; it is never shown. ``required`` settings
    without a ``default`` must be given. ``check`` normalises a given value or raises
    ``ValueError`` with a message saying what is wrong (never repeating a secret).
    ``schemes`` are words a secret may start with, followed by one space, kept as part of
    the value (a Linear OAuth token given as ``Bearer <token>`` beside a bare API key): the
    whitespace rule applies to what follows, and both the whole value and that part are
    registered for scrubbing.
    """

    env: str
    option: str
    help: str
    secret: bool = False
    required: bool = True
    default: str | None = None
    check: Callable[[str], str] | None = None
    schemes: tuple[str, ...] = ()


@dataclass(frozen=True)
class BaseUrl:
    """Where the API is: a default root, and the setting that overrides it.

    ``option`` names the :class:`Setting` (by option) that replaces ``default``; with no
    ``default`` that setting is required. ``suffix`` is appended unless the given URL
    already ends with it (GitLab's ``/api/v4``). A trailing ``/`` never matters.
    """

    default: str | None
    option: str = "base_url"
    suffix: str = ""

    def resolve(self, values: Mapping[str, str | None]) -> str | None:
        """The base URL from the resolved settings, or ``None`` when nothing gives one."""
        given = values.get(self.option)
        if given is None:
            given = self.default
        if given is None:
            return None
        url = given.strip().rstrip("/")
        if self.suffix and not url.endswith(self.suffix.rstrip("/")):
            url += self.suffix.rstrip("/")
        return url


class AuthScheme:
    """How the credential travels: the headers it adds to every request."""

    def headers(self, values: Mapping[str, str | None]) -> dict[str, str]:
        """The authentication headers, from the connector's resolved settings."""
        raise NotImplementedError


@dataclass(frozen=True)
class Bearer(AuthScheme):
    """``Authorization: Bearer <value of option>`` (RFC 6750)."""

    option: str = "token"
    scheme: str = "Bearer"

    def headers(self, values: Mapping[str, str | None]) -> dict[str, str]:
        return {"Authorization": f"{self.scheme} {values[self.option]}"}


@dataclass(frozen=True)
class HeaderToken(AuthScheme):
    """The credential alone in a header of the vendor's (GitLab's ``PRIVATE-TOKEN``)."""

    header: str
    option: str = "token"

    def headers(self, values: Mapping[str, str | None]) -> dict[str, str]:
        return {self.header: str(values[self.option])}


@dataclass(frozen=True)
class Basic(AuthScheme):
    """HTTP basic authentication (RFC 7617) from two settings (Jira's email and API token)."""

    username: str
    password: str

    def headers(self, values: Mapping[str, str | None]) -> dict[str, str]:
        import base64

        pair = f"{values[self.username]}:{values[self.password]}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}


@dataclass(frozen=True)
class RawAuthorization(AuthScheme):
    """The setting is the whole ``Authorization`` value (a Linear personal API key)."""

    option: str = "api_key"

    def headers(self, values: Mapping[str, str | None]) -> dict[str, str]:
        return {"Authorization": str(values[self.option])}


def _current_loop() -> object | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class HttpConnector(Connector):
    """Base class of connectors that speak to one HTTP API (see the module docstring).

    Class attributes a subclass sets: ``name``; ``settings`` (its :class:`Setting`\\ s;
    ``credential_env`` defaults to the first required secret's variable, ``env_vars`` to
    every setting's); ``base`` (:class:`BaseUrl`); ``auth`` (an :class:`AuthScheme`, or
    ``None`` when :meth:`signer` signs each request instead); ``headers`` sent with every
    request; ``errors`` (:class:`~reversi_core.http.ErrorTable`); ``idempotency_header``
    when the vendor takes an idempotency key on writes (Stripe's ``Idempotency-Key``),
    and ``idempotency_methods`` when it takes it only with some methods (Stripe: ``POST``;
    ``None``, the default, is every write); ``default_timeouts``.

    The constructor takes every setting by its option name, plus ``timeouts`` (default
    :attr:`default_timeouts`), ``transport`` (an ``httpx`` transport, for tests) and
    ``verify`` (TLS verification: ``True`` for the system's CAs, an
    :class:`ssl.SSLContext`, or a CA file or directory). Raises
    :class:`~reversi_core.errors.ConfigurationError` for a missing or malformed setting
    (naming its variable, never showing a secret) and for a malformed base URL (naming
    the variable and option it came from).
    """

    settings: ClassVar[tuple[Setting, ...]] = ()
    base: ClassVar[BaseUrl] = BaseUrl(None)
    auth: ClassVar[AuthScheme | None] = None
    headers: ClassVar[Mapping[str, str]] = {}
    errors: ClassVar[ErrorTable] = ErrorTable()
    idempotency_header: ClassVar[str | None] = None
    idempotency_methods: ClassVar[frozenset[str] | None] = None
    default_timeouts: ClassVar[Timeouts] = Timeouts()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "credential_env" not in vars(cls):
            secrets = [s.env for s in cls.settings if s.secret and s.required]
            cls.credential_env = secrets[0] if secrets else None
        if "env_vars" not in vars(cls):
            cls.env_vars = tuple(s.env for s in cls.settings)
        options = [s.option for s in cls.settings]
        if len(set(options)) != len(options):
            raise TypeError(f"{cls.__name__}: two settings share an option name")
        reserved = {"timeouts", "transport", "verify"} & set(options)
        if reserved:
            raise TypeError(f"{cls.__name__}: settings may not be called {sorted(reserved)}")

    def __init__(
        self,
        *,
        timeouts: Timeouts | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: ssl.SSLContext | bool | str | os.PathLike[str] = True,
        **values: str | None,
    ) -> None:
        known = {s.option for s in self.settings}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigurationError(
                f"{self.name}: unknown option(s) {', '.join(unknown)} (it takes: "
                + ", ".join(sorted(known | {"timeouts", "transport", "verify"}))
                + ")"
            )
        self._values: dict[str, str | None] = {}
        for setting in self.settings:
            self._values[setting.option] = self._resolve(setting, values.get(setting.option))
        base_url = self.base.resolve(self._values)
        if base_url is None:
            raise ConfigurationError(
                f"{self.name}: no base URL; set {self._env_of(self.base.option)}"
            )
        self.base_url = check_base_url(
            base_url, vendor=self.name, name=self._base_url_source()
        ).rstrip("/")
        self.timeouts = timeouts if timeouts is not None else self.default_timeouts
        self._transport = transport
        self._verify = verify
        self._http: HttpClient | None = None
        self._http_loop: object | None = None

    def _base_url_source(self) -> str:
        """What the base URL is called in an error: the variable and option it was set by,
        such as ``AWS_ENDPOINT_URL_S3 (endpoint_url)``, or the connector's own default."""
        option = self.base.option
        if self._values.get(option) is None:
            return "the default base URL"
        return f"{self._env_of(option)} ({option})"

    def _env_of(self, option: str) -> str:
        found = [s.env for s in self.settings if s.option == option]
        return found[0] if found else option

    def _resolve(self, setting: Setting, given: str | None) -> str | None:
        value = given if given is not None else setting.default
        if value is None:
            if setting.required:
                raise ConfigurationError(
                    f"{self.name}: {setting.option} is required; set {setting.env} to {setting.help}"
                )
            return None
        if not isinstance(value, str):
            raise ConfigurationError(f"{self.name}: {setting.option} must be a string")
        if setting.secret:
            bare = next(
                (value[len(s) + 1 :] for s in setting.schemes if value.startswith(f"{s} ")), value
            )
            if not bare.strip() or _WHITESPACE.search(bare):
                raise ConfigurationError(
                    f"{self.name}: the {setting.option} is empty or contains whitespace; set "
                    f"{setting.env} to {setting.help}"
                )
            for part in {value, bare}:
                register_secret(part)  # scrubbed from journal entries and CLI output from now on
        if setting.check is not None:
            try:
                value = setting.check(value)
            except ValueError as exc:
                raise ConfigurationError(f"{self.name}: {setting.env}: {exc}") from None
        return value

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> HttpConnector:
        """Build the connector from its settings' environment variables.

        An option named like a setting (``base_url``) wins over its variable; the options
        ``timeouts``, ``transport`` and ``verify`` are passed on; options meant for other
        connectors (``root``, ``backup_dir``) are ignored. Unless ``verify`` is given,
        ``SSL_CERT_FILE`` (else ``SSL_CERT_DIR``) in ``environ`` names the CA certificates
        to trust, as httpx reads them from the process's own environment: a connector
        built from a given environment trusts what one built in a process with that
        environment would (``reversi-connectors serve``; a test's TLS fake). Raises
        :class:`~reversi_core.errors.ConfigurationError` naming the variable of a
        required setting that is missing or blank.
        """
        values: dict[str, Any] = {}
        for setting in cls.settings:
            given = options.get(setting.option)
            if given is None:
                given = environ.get(setting.env)
                if given is not None and not given.strip():
                    given = None
            if given is None and setting.required and setting.default is None:
                raise ConfigurationError(
                    f"{cls.name}: {setting.env} is not set; export {setting.help} in {setting.env}"
                )
            if given is not None:
                values[setting.option] = given
        for option in ("timeouts", "transport", "verify"):
            if options.get(option) is not None:
                values[option] = options[option]
        made = cls(**values)
        if "verify" not in values:
            # set after construction: a connector's own __init__ may not take verify
            named = [v for v in ((environ.get(n) or "").strip() for n in _CA_VARIABLES) if v]
            if named:
                made._verify = named[0]
        return made

    def setting(self, option: str) -> str | None:
        """The resolved value of a non-secret setting (``None`` when unset)."""
        if any(s.option == option and s.secret for s in self.settings):
            raise KeyError(f"{option} is a secret; it is not handed out")
        return self._values[option]

    # -- the HTTP client --------------------------------------------------------------

    def signer(self) -> httpx.Auth | None:
        """An ``httpx.Auth`` that signs each request, for vendors without a header scheme.

        The default is ``None``: the :attr:`auth` scheme's headers suffice. AWS's
        connector returns botocore's Signature Version 4 here.
        """
        return None

    def _client(self) -> HttpClient:
        """The HTTP client of the running event loop, created on first use.

        A client left over from an event loop that has ended cannot be used (its pooled
        connections belong to that loop), so a new one is made.
        """
        loop = _current_loop()
        if self._http is None or self._http_loop is not loop:
            auth_headers = self.auth.headers(self._values) if self.auth is not None else {}
            self._http = HttpClient(
                self.base_url,
                vendor=self.name,
                headers={**self.headers, **auth_headers},
                secrets=[self._values[s.option] for s in self.settings if s.secret],
                timeouts=self.timeouts,
                error_code=self.errors.hook(),
                idempotency_header=self.idempotency_header,
                idempotency_methods=self.idempotency_methods,
                transport=self._transport,
                verify=self._verify,
                auth=self.signer(),
            )
            self._http_loop = loop
        return self._http

    async def aclose(self) -> None:
        """Close the HTTP client's connections; safe to call twice, and calls may follow."""
        client, self._http, self._http_loop = self._http, None, None
        if client is not None:
            await client.aclose()

    def idempotency_key(self, ctx: CallContext) -> str:
        """The key a write of this call sends: the step's (or the compensation's) own.

        A call made outside a run (no key in ``ctx``) gets a fresh random key, so two
        deliberate identical direct calls are not merged. A compensation without a key
        is refused: a rollback retried with a fresh key could act twice. Raises
        :class:`~reversi_core.errors.InvalidArgumentsError` in that case.
        """
        if ctx.idempotency_key:
            return ctx.idempotency_key
        if ctx.compensation:
            raise InvalidArgumentsError(
                f"{self.name}: a compensation must carry the rollback's idempotency key; "
                "refusing to send a fresh one"
            )
        return str(uuid.uuid4())

    async def request(
        self,
        ctx: CallContext,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        content: bytes | str | None = None,
        headers: Mapping[str, str] | None = None,
        write: bool | None = None,
        ok_statuses: Collection[int] = (),
        base_url: str | None = None,
    ) -> HttpResponse:
        """Send one request for the call ``ctx`` and return the answer, or raise.

        Every timeout is capped at the call's own limit (``ctx.timeout``, in seconds),
        reads and writes alike; a write to a vendor with an :attr:`idempotency_header`
        carries :meth:`idempotency_key` (only with :attr:`idempotency_methods`, when
        set). The arguments are those of :meth:`reversi_core.http.HttpClient.request`,
        which says what is raised: a ``ToolError`` naming the status and the vendor's
        code (from :attr:`errors`), or ``EffectUncertainError`` for a write whose answer
        was lost. A 2xx answer that :meth:`refusal_in` finds to be a refusal (Slack's
        HTTP 200 ``{"ok": false}``) is raised as a ``ToolError`` with that status and the
        vendor's code, never returned. In a replay (``ctx.replay``), a ``ToolError`` that
        does not show the call left the backend unchanged (:meth:`replay_settles`) is
        raised as ``EffectUncertainError`` instead.
        """
        client = self._client()
        writes = write if write is not None else method.upper() not in READ_METHODS
        keyed = self.idempotency_methods is None or method.upper() in self.idempotency_methods
        key = self.idempotency_key(ctx) if self.idempotency_header and writes and keyed else None
        try:
            resp = await client.request(
                method,
                path,
                params=params,
                json=json,
                data=data,
                content=content,
                headers=headers,
                write=writes,
                idempotency_key=key,
                ok_statuses=ok_statuses,
                timeouts=client.timeouts.capped_at(ctx.timeout),
                base_url=base_url,
            )
            refused = self.refusal_in(resp) if resp.ok else None
            if refused is not None:
                raise client.refused(method, path, resp.status, *refused)
        except ToolError as exc:
            if ctx.replay and not self.replay_settles(exc):
                raise EffectUncertainError(
                    f"{exc}; as the answer to a replay this does not tell whether the first "
                    "call took effect"
                ) from None
            raise
        return resp

    def refusal_in(self, resp: HttpResponse) -> tuple[str, str | None] | None:
        """``(code, message)`` when a 2xx answer says the vendor refused the call, else ``None``.

        The default asks :attr:`errors` (:meth:`~reversi_core.http.ErrorTable.refusal`:
        its ``refused_when`` test, then its fields and rate-limit rules, so Slack's
        ``ratelimited`` is ``rate_limited``). Override it for a vendor whose refusals the
        table cannot describe. :meth:`request` calls it on every 2xx answer (not on an
        ``ok_statuses`` answer outside 2xx); ``resp`` is already scrubbed of credentials.
        """
        return self.errors.refusal(resp.status, resp.headers, resp.json)

    def replay_settles(self, error: ToolError) -> bool:
        """Whether ``error``, answering a replay, shows that the call did not take effect.

        A replay re-sends an uncertain step's request with its original idempotency key
        (:meth:`reversi_core.engine.Run.replay`); a vendor that honours the key answers
        with the first request's outcome, or carries the request out now if the first
        never reached it. A refusal of the request itself (a 4xx naming what is wrong)
        settles it: the call did not take effect. What does not: no answer at all (status
        ``None``: nothing sent, or the connection lost), 401 and 403 (the credential may
        have changed since), 408, 409 (the first request may still be running), a rate
        limit, and every 5xx (the vendor may have stored a failure whose effect is
        unknown). A connector overrides this for the vendor's own codes (Stripe's
        ``idempotency_error``: the key was first used with other parameters).
        """
        status = error.status
        if status is None or not 400 <= status < 500:
            return False
        return status not in (401, 403, 408, 409, 429) and error.code != "rate_limited"

    # -- reading answers --------------------------------------------------------------

    def malformed(
        self, problem: str, resp: HttpResponse, *, wrote: bool
    ) -> ToolError | EffectUncertainError:
        """The error for a successful answer that lacks what the tool needs.

        After a write the vendor accepted, the change was made but cannot be described
        (so it cannot be undone automatically): that is uncertain, never a plain failure.
        """
        text = f"{self.name}: HTTP {resp.status} answer {problem}"
        if wrote:
            return EffectUncertainError(
                f"{text}; the write was accepted, but its result cannot be read, so it cannot "
                "be undone automatically: check the backend"
            )
        return ToolError(text, status=resp.status, code="invalid_response")

    def expect_object(self, resp: HttpResponse, what: str, *, wrote: bool) -> dict[str, Any]:
        """The answer's JSON object; :meth:`malformed` when it is something else."""
        if not isinstance(resp.json, dict):
            raise self.malformed(f"is not a JSON {what} object", resp, wrote=wrote)
        return resp.json

    def expect_list(self, resp: HttpResponse, what: str, *, wrote: bool) -> list[Any]:
        """The answer's JSON array; :meth:`malformed` when it is something else."""
        if not isinstance(resp.json, list):
            raise self.malformed(f"is not {what}", resp, wrote=wrote)
        return resp.json

    def expect_field(
        self, obj: Mapping[str, Any], key: str, resp: HttpResponse, *, wrote: bool
    ) -> Any:
        """``obj[key]``; :meth:`malformed` when it is missing or null."""
        value = obj.get(key)
        if value is None:
            raise self.malformed(f"has no {key!r}", resp, wrote=wrote)
        return value
