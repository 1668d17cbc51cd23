"""The HTTP connector kit: settings, auth schemes, the request method, one-request tools, error tables.

A small "widget" vendor is declared the way a real connector would be, served by a
:class:`VendorFake` on a real port, and driven through the connector and the engine.
"""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field

from reversi_core import Run, SQLiteJournal, compensation_key, compensator_for, registry_for
from reversi_core.connector import CallContext, executor_for, tool
from reversi_core.errors import (
    ConfigurationError,
    EffectUncertainError,
    InvalidArgumentsError,
    ToolError,
)
from reversi_core.http import (
    BaseUrl,
    Basic,
    Bearer,
    ErrorTable,
    HeaderToken,
    HttpConnector,
    RateLimit,
    RawAuthorization,
    RequestTool,
    Setting,
    Timeouts,
)
from reversi_core.manifest import Compensation, Effect
from reversi_core.redact import scrub
from reversi_core.testing import (
    FakeRequest,
    FakeResponse,
    FakeServer,
    Fault,
    VendorFake,
    vendor_route,
)

pytestmark = pytest.mark.anyio

TOKEN = "wdg_kit-test-token-0123456789abcdef"
DOCS = "https://widget.example/docs"


# -- a vendor, declared on the kit ------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MakeArgs(_Args):
    shelf: str = Field(description="the shelf, a path segment")
    name: str
    colour: str | None = None


class MakeResult(_Args):
    shelf: str
    id: int
    colour: str | None


class DropArgs(_Args):
    shelf: str
    id: int


class DropResult(_Args):
    shelf: str
    id: int
    dropped: bool


class FindArgs(_Args):
    shelf: str
    q: str | None = None


class FindResult(_Args):
    shelf: str
    count: int


WIDGET_ERRORS = ErrorTable(
    code_fields=("error.code",),
    message_fields=("error.message",),
    statuses={404: "not_found", 409: "conflict"},
    rate_limit=RateLimit(codes=frozenset({"slow_down"}), reset_header="x-reset"),
)


class WidgetConnector(HttpConnector):
    name = "widget"
    settings = (
        Setting("WIDGET_TOKEN", "token", "a Widget API token", secret=True),
        Setting("WIDGET_BASE_URL", "base_url", "the Widget API root", required=False),
    )
    base = BaseUrl("https://api.widget.example", suffix="/v2")
    auth = Bearer("token")
    headers: ClassVar[dict[str, str]] = {"Accept": "application/json"}
    errors = WIDGET_ERRORS
    idempotency_header = "Idempotency-Key"

    make = RequestTool(
        "POST",
        "/shelves/{shelf}/widgets",
        effect=Effect.REVERSIBLE,
        permission="widget:write",
        input=MakeArgs,
        output=MakeResult,
        compensation=Compensation(
            tool="widget.drop", argument_map={"shelf": "args.shelf", "id": "result.id"}
        ),
        summary="Make a widget on a shelf.",
        docs=f"{DOCS}/make",
        body=("name", "colour"),
        echo=("shelf",),
        keep={"id": "widget.id", "colour": "widget.colour"},
        required=("id",),
    )
    drop = RequestTool(
        "DELETE",
        "/shelves/{shelf}/widgets/{id}",
        effect=Effect.IDEMPOTENT,
        permission="widget:write",
        input=DropArgs,
        output=DropResult,
        summary="Drop a widget; one already gone counts as dropped.",
        docs=f"{DOCS}/drop",
        already_done=(404, (409, "already_dropped")),
        echo=("shelf", "id"),
        done_field="dropped",
    )
    find = RequestTool(
        "GET",
        "/shelves/{shelf}/widgets",
        effect=Effect.READ_ONLY,
        permission="widget:read",
        input=FindArgs,
        output=FindResult,
        summary="Count the widgets on a shelf.",
        docs=f"{DOCS}/find",
        query=("q",),
        echo=("shelf",),
        keep={"count": "total"},
    )

    @tool(effect=Effect.READ_ONLY, permission="widget:read", input=FindArgs, output=FindResult)
    async def slow_count(self, args: FindArgs, ctx: CallContext) -> dict[str, Any]:
        """Count by hand, through the request method (https://widget.example/docs/find)."""
        resp = await self.request(ctx, "GET", f"/shelves/{args.shelf}/widgets")
        return {
            "shelf": args.shelf,
            "count": self.expect_object(resp, "count", wrote=False)["total"],
        }


class FakeWidget(VendorFake):
    """The fake Widget API: shelves of widgets, errors as ``{"error": {"code", "message"}}``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(token=TOKEN, prefix="/v2", **kwargs)
        self.widgets: dict[int, dict[str, Any]] = {}
        self.keys: list[str | None] = []

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        return FakeResponse(status, json={"error": {"code": code, "message": message}})

    @vendor_route("POST", "/shelves/{shelf}/widgets", docs=f"{DOCS}/make", body="json")
    def make_widget(self, request: FakeRequest) -> FakeResponse:
        self.keys.append(request.headers.get("idempotency-key"))
        ident = len(self.widgets) + 1
        self.widgets[ident] = {"id": ident, "shelf": request.path_params["shelf"], **request.json}
        return FakeResponse(201, json={"widget": self.widgets[ident]})

    @vendor_route("DELETE", "/shelves/{shelf}/widgets/{id}", docs=f"{DOCS}/drop")
    def drop_widget(self, request: FakeRequest) -> FakeResponse:
        self.keys.append(request.headers.get("idempotency-key"))
        ident = int(request.path_params["id"])
        if self.widgets.pop(ident, None) is None:
            return self.error(404, "no such widget", code="missing")
        return FakeResponse(204)

    @vendor_route("POST", "/graphql", docs=f"{DOCS}/graphql", writes=False, body="json")
    def graphql(self, request: FakeRequest) -> FakeResponse:
        """Answers the refusal the test put in :attr:`graphql_answer` (HTTP 200, errors inside)."""
        return FakeResponse(200, json=self.graphql_answer)

    graphql_answer: ClassVar[dict[str, Any]] = {"data": {"count": 3}}

    @vendor_route("GET", "/shelves/{shelf}/widgets", docs=f"{DOCS}/find")
    def list_widgets(self, request: FakeRequest) -> FakeResponse:
        shelf = request.path_params["shelf"]
        return FakeResponse(
            200, json={"total": sum(w["shelf"] == shelf for w in self.widgets.values())}
        )


@pytest.fixture
def fake() -> FakeWidget:
    return FakeWidget(read_only_tokens=["wdg_read-only-token-0123456789"])


@pytest.fixture
def server(fake: FakeWidget) -> Iterator[FakeServer]:
    with FakeServer(fake) as running:
        yield running


@pytest.fixture
async def widget(server: FakeServer) -> AsyncIterator[WidgetConnector]:
    connector = WidgetConnector(token=TOKEN, base_url=server.url)
    yield connector
    await connector.aclose()


# -- settings ---------------------------------------------------------------------------


def test_settings_give_the_credential_variable_and_every_variable() -> None:
    assert WidgetConnector.credential_env == "WIDGET_TOKEN"
    assert WidgetConnector.env_vars == ("WIDGET_TOKEN", "WIDGET_BASE_URL")


def test_from_env_names_a_missing_variable_and_never_shows_a_secret() -> None:
    for environ in ({}, {"WIDGET_TOKEN": ""}, {"WIDGET_TOKEN": "  "}):
        with pytest.raises(
            ConfigurationError, match="WIDGET_TOKEN is not set; export a Widget API token"
        ):
            WidgetConnector.from_env(environ)
    secret = "wdg_has a space-0123456789"
    with pytest.raises(ConfigurationError, match="empty or contains whitespace") as caught:
        WidgetConnector.from_env({"WIDGET_TOKEN": secret})
    assert secret not in str(caught.value)


def test_a_given_token_is_registered_for_scrubbing() -> None:
    secret = "wdg_registered-token-9876543210"
    WidgetConnector(token=secret)
    assert secret not in scrub(f"oops {secret} leaked")


def test_the_base_url_comes_from_the_variable_or_the_option_with_its_suffix() -> None:
    plain = WidgetConnector.from_env({"WIDGET_TOKEN": TOKEN})
    assert plain.base_url == "https://api.widget.example/v2"
    env = WidgetConnector.from_env({"WIDGET_TOKEN": TOKEN, "WIDGET_BASE_URL": "https://w.corp/"})
    assert env.base_url == "https://w.corp/v2"
    option = WidgetConnector.from_env(
        {"WIDGET_TOKEN": TOKEN, "WIDGET_BASE_URL": "https://ignored.corp"},
        base_url="https://w.other/v2",
        root="/meant/for/fs",
    )
    assert option.base_url == "https://w.other/v2"
    assert option.setting("base_url") == "https://w.other/v2"
    with pytest.raises(KeyError, match="secret"):
        option.setting("token")


class NarrowWidget(WidgetConnector):
    """A connector whose own constructor takes no ``verify`` (as github's takes only its settings)."""

    def __init__(self, token: str, base_url: str | None = None) -> None:
        super().__init__(token=token, base_url=base_url)


async def test_from_env_trusts_the_ca_certificates_its_environment_names(fake: FakeWidget) -> None:
    """SSL_CERT_FILE in the environment given, as httpx would read it from the process's."""
    with FakeServer(fake, tls=True) as server:
        environ = {"WIDGET_TOKEN": TOKEN, "WIDGET_BASE_URL": server.url}
        for cls in (WidgetConnector, NarrowWidget):
            trusting = cls.from_env({**environ, "SSL_CERT_FILE": str(server.ca_path)})
            try:
                assert await trusting.call("widget.find", {"shelf": "s"}) == {
                    "shelf": "s",
                    "count": 0,
                }
            finally:
                await trusting.aclose()
        strict = WidgetConnector.from_env(environ)
        try:
            with pytest.raises(ToolError, match="certificate"):
                await strict.call("widget.find", {"shelf": "s"})
        finally:
            await strict.aclose()
        given = WidgetConnector.from_env(
            {**environ, "SSL_CERT_FILE": "/nonexistent/ca.pem"}, verify=server.client_ssl_context()
        )
        try:  # a verify option wins over the variable
            assert await given.call("widget.find", {"shelf": "s"}) == {"shelf": "s", "count": 0}
        finally:
            await given.aclose()
    missing = WidgetConnector.from_env(
        {"WIDGET_TOKEN": TOKEN, "SSL_CERT_FILE": "/nonexistent/ca.pem"}
    )
    with pytest.raises(ConfigurationError, match="no CA certificate file"):
        await missing.call("widget.find", {"shelf": "s"})


@pytest.mark.parametrize(
    "url",
    [
        "",
        "ftp://w.corp",
        "https://user:pw-secret-1234@w.corp",
        "https://w.corp?x=1",
        "https://w.corp:99999",
    ],
)
def test_a_malformed_base_url_is_refused_without_showing_credentials(url: str) -> None:
    with pytest.raises(ConfigurationError, match="base_url") as caught:
        WidgetConnector(token=TOKEN, base_url=url)
    assert "pw-secret-1234" not in str(caught.value)


class EndpointWidget(WidgetConnector):
    """A connector whose base URL comes from a setting not called base_url (as aws's endpoint_url)."""

    settings = (
        Setting("WIDGET_TOKEN", "token", "a Widget API token", secret=True),
        Setting("WIDGET_ENDPOINT_URL", "endpoint_url", "another Widget endpoint", required=False),
    )
    base = BaseUrl("https://api.widget.example", option="endpoint_url")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://w.corp", "must be http(s)://host"),
        ("https://user:pw-secret-1234@w.corp", "must not carry credentials"),
        ("https://w.corp?x=1", "must not have a query string"),
        ("https://w.corp:99999", "port 99999 is not 1-65535"),
    ],
)
def test_a_malformed_base_url_is_refused_naming_the_variable_it_came_from(
    url: str, why: str
) -> None:
    for built in (
        lambda: EndpointWidget(token=TOKEN, endpoint_url=url),
        lambda: EndpointWidget.from_env({"WIDGET_TOKEN": TOKEN, "WIDGET_ENDPOINT_URL": url}),
    ):
        with pytest.raises(ConfigurationError) as caught:
            built()
        said = str(caught.value)
        assert said.startswith("widget: WIDGET_ENDPOINT_URL (endpoint_url) "), said
        assert why in said
        assert "base_url" not in said
        assert "pw-secret-1234" not in said


def test_an_unknown_option_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown option.*colour"):
        WidgetConnector(token=TOKEN, colour="red")


def test_settings_may_not_take_reserved_or_duplicate_names() -> None:
    with pytest.raises(TypeError, match="share an option"):
        type(
            "Twice",
            (HttpConnector,),
            {"name": "twice", "settings": (Setting("A", "a", "x"), Setting("B", "a", "y"))},
        )
    with pytest.raises(TypeError, match="may not be called"):
        type(
            "Reserved",
            (HttpConnector,),
            {"name": "reserved", "settings": (Setting("T", "timeouts", "x"),)},
        )


@pytest.mark.parametrize(
    ("scheme", "values", "expected"),
    [
        (Bearer("token"), {"token": "abc"}, {"Authorization": "Bearer abc"}),
        (HeaderToken("PRIVATE-TOKEN"), {"token": "abc"}, {"PRIVATE-TOKEN": "abc"}),
        (
            Basic("email", "api_token"),
            {"email": "me@x.example", "api_token": "t0k"},
            {"Authorization": "Basic " + base64.b64encode(b"me@x.example:t0k").decode()},
        ),
        (RawAuthorization("api_key"), {"api_key": "lin_api_1"}, {"Authorization": "lin_api_1"}),
    ],
)
def test_auth_schemes_make_the_vendors_headers(
    scheme: Any, values: dict[str, str], expected: dict[str, str]
) -> None:
    assert scheme.headers(values) == expected


# -- the request method ---------------------------------------------------------------


async def test_requests_carry_auth_default_headers_and_the_steps_idempotency_key(
    widget: WidgetConnector, server: FakeServer, fake: FakeWidget
) -> None:
    made = await widget.call(
        "widget.make", {"shelf": "a b", "name": "w"}, CallContext(idempotency_key="step-key-1")
    )
    assert made == {"shelf": "a b", "id": 1, "colour": None}
    (request,) = server.requests
    assert request.target == "/v2/shelves/a%20b/widgets"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["accept"] == "application/json"
    assert request.json == {"name": "w"}  # a None field is not sent
    assert fake.keys == ["step-key-1"]


async def test_a_direct_write_without_a_key_gets_a_fresh_one_each_time(
    widget: WidgetConnector, fake: FakeWidget
) -> None:
    await widget.call("widget.make", {"shelf": "s", "name": "one"})
    await widget.call("widget.make", {"shelf": "s", "name": "two"})
    first, second = fake.keys
    assert first is not None
    assert second is not None
    assert first != second


async def test_idempotency_methods_limit_the_key_to_those_methods(
    server: FakeServer, fake: FakeWidget
) -> None:
    class PostKeyed(WidgetConnector):
        idempotency_methods = frozenset({"POST"})

    keyed = PostKeyed(token=TOKEN, base_url=server.url)
    ctx = CallContext(idempotency_key="step-key-2")
    made = await keyed.call("widget.make", {"shelf": "s", "name": "w"}, ctx)
    await keyed.call("widget.drop", {"shelf": "s", "id": made["id"]}, ctx)
    await keyed.aclose()
    assert fake.keys == ["step-key-2", None]  # the DELETE carries none


@pytest.mark.req("RES-3")
async def test_in_a_replay_only_a_refusal_of_the_request_itself_is_a_tool_error(
    widget: WidgetConnector, server: FakeServer
) -> None:
    ctx = CallContext(idempotency_key="reversi-run_1-1", replay=True)
    args = {"shelf": "s", "name": "w"}
    settles = {
        400: True,
        404: True,
        422: True,
        401: False,
        403: False,
        409: False,
        429: False,
        500: False,
        503: False,
    }
    for status, settled in settles.items():
        server.faults.add(Fault.status(status, json={"error": {"code": "x", "message": "no"}}))
        expected = ToolError if settled else EffectUncertainError
        with pytest.raises(expected) as raised:
            await widget.call("widget.make", args, ctx)
        assert f"HTTP {status}" in str(raised.value), status
    server.faults.add(Fault.drop_after_read())
    with pytest.raises(EffectUncertainError):
        await widget.call("widget.make", args, ctx)
    server.faults.add(Fault.status(400, json={"error": {"code": "x", "message": "no"}}))
    with pytest.raises(ToolError):  # outside a replay, every refusal stays a ToolError
        await widget.call("widget.make", args, CallContext(idempotency_key="k"))


async def test_a_compensation_without_a_key_is_refused_before_anything_is_sent(
    widget: WidgetConnector, server: FakeServer
) -> None:
    with pytest.raises(InvalidArgumentsError, match="compensation must carry"):
        await widget.call("widget.drop", {"shelf": "s", "id": 1}, CallContext(compensation=True))
    assert server.requests == []


async def test_a_rollback_sends_the_compensation_key_on_every_attempt(
    widget: WidgetConnector, server: FakeServer, fake: FakeWidget, tmp_path: Any
) -> None:
    journal = SQLiteJournal.open(tmp_path / "journal")
    try:
        run = Run.start(
            journal,
            registry_for([widget]),
            scope={"widget:write", "widget:read"},
            executor=executor_for([widget]),
        )
        seq, _ = await run.call("widget.make", {"shelf": "s", "name": "w"})
        forward_key = fake.keys[-1]
        server.faults.add(Fault.status(500), method="DELETE", times=1)
        failed = await run.rollback(compensate=compensator_for([widget]))
        assert not failed.complete
        done = await run.rollback(compensate=compensator_for([widget]))
        assert done.complete
        expected = compensation_key(run.id, seq)
        deletes = [
            r.headers.get("idempotency-key") for r in server.requests if r.method == "DELETE"
        ]
        assert deletes == [expected, expected]  # the failed attempt and the retry: one key
        assert forward_key != expected
    finally:
        journal.close()


async def test_every_timeout_is_capped_at_the_calls_own_limit(server: FakeServer) -> None:
    slow = WidgetConnector(
        token=TOKEN, base_url=server.url, timeouts=Timeouts(connect=30, read=30, total=60)
    )
    server.faults.add(Fault.hang(seconds=20), times=None)
    try:
        for name, args in (
            ("widget.find", {"shelf": "s"}),
            ("widget.make", {"shelf": "s", "name": "w"}),
        ):
            started = time.monotonic()
            with pytest.raises((ToolError, EffectUncertainError)) as caught:
                await slow.call(name, args, CallContext(timeout=0.3, idempotency_key="k"))
            assert time.monotonic() - started < 2.0, name
            expected = EffectUncertainError if name == "widget.make" else ToolError
            assert isinstance(caught.value, expected), caught.value
    finally:
        server.faults.clear()
        await slow.aclose()


async def test_errors_come_from_the_vendors_table(
    widget: WidgetConnector, server: FakeServer
) -> None:
    server.faults.add(
        Fault.status(409, json={"error": {"code": "shelf_full", "message": "The shelf is full"}}),
        times=1,
    )
    with pytest.raises(ToolError) as caught:
        await widget.call("widget.make", {"shelf": "s", "name": "w"})
    assert (caught.value.status, caught.value.code) == (409, "shelf_full")
    assert "The shelf is full" in str(caught.value)
    server.faults.add(
        Fault.status(
            400, json={"error": {"code": "slow_down", "message": "easy"}}, headers={"x-reset": "0"}
        ),
        times=1,
    )
    with pytest.raises(ToolError, match=r"the limit resets at 1970-01-01T00:00:00Z") as limited:
        await widget.call("widget.find", {"shelf": "s"})
    assert limited.value.code == "rate_limited"


GRAPHQL_ERRORS = ErrorTable(
    code_fields=("errors.0.extensions.code",),
    message_fields=("errors.0.message",),
    rate_limit=RateLimit(codes=frozenset({"RATELIMITED"})),
    refused_when=lambda body: isinstance(body, dict) and bool(body.get("errors")),
)


class GraphWidget(WidgetConnector):
    """The widget vendor reached through a GraphQL endpoint, whose refusals come with 200."""

    name = "gwidget"
    errors = GRAPHQL_ERRORS

    @tool(effect=Effect.READ_ONLY, permission="widget:read", input=FindArgs, output=FindResult)
    async def count(self, args: FindArgs, ctx: CallContext) -> dict[str, Any]:
        """Count through GraphQL (https://widget.example/docs/graphql)."""
        resp = await self.request(
            ctx, "POST", "/graphql?op=count", json={"query": "{ count }"}, write=False
        )
        return {
            "shelf": args.shelf,
            "count": self.expect_object(resp, "answer", wrote=False)["data"]["count"],
        }


@pytest.mark.parametrize(
    ("errors", "code", "words"),
    [
        (
            [{"message": "Entity not found", "extensions": {"code": "INVALID_INPUT"}}],
            "INVALID_INPUT",
            "Entity not found",
        ),
        (
            [{"message": "slow down", "extensions": {"code": "RATELIMITED"}}],
            "rate_limited",
            "slow down (wait",
        ),
        ([{"message": "no code at all"}], "refused", "no code at all"),
    ],
)
async def test_a_refusal_inside_a_2xx_answer_is_a_tool_error_with_the_tables_code(
    server: FakeServer,
    fake: FakeWidget,
    monkeypatch: pytest.MonkeyPatch,
    errors: list[dict[str, Any]],
    code: str | None,
    words: str,
) -> None:
    graph = GraphWidget(token=TOKEN, base_url=server.url)
    try:
        assert await graph.call("gwidget.count", {"shelf": "s"}) == {"shelf": "s", "count": 3}
        monkeypatch.setattr(FakeWidget, "graphql_answer", {"data": None, "errors": errors})
        with pytest.raises(ToolError) as caught:
            await graph.call("gwidget.count", {"shelf": "s"})
        assert (caught.value.status, caught.value.code) == (200, code)
        text = str(caught.value)
        assert text.startswith("gwidget: POST /graphql failed: HTTP 200"), text  # no query string
        assert words in text
        assert "op=count" not in text
        assert TOKEN not in text
    finally:
        await graph.aclose()


def test_a_secret_may_carry_a_declared_scheme_word() -> None:
    class Schemed(HttpConnector):
        name = "schemed"
        settings = (
            Setting(
                "S_KEY", "api_key", "a key, or Bearer and a token", secret=True, schemes=("Bearer",)
            ),
        )
        base = BaseUrl("https://s.example")
        auth = RawAuthorization("api_key")

    token = "oauth-token-0123456789abcdef"
    Schemed(api_key=f"Bearer {token}")
    assert token not in scrub(f"leaked {token}")  # the token alone is registered too
    assert token not in scrub(f"Authorization: Bearer {token}")
    Schemed(api_key="lin_api_bare-key-0123456789")
    for wrong in (
        "Bearer ",
        "Bearer  two-spaces-0123",
        "Bearer a-secret b",
        "Basic a-secret-0123",
        "Bearer\ta-secret",
    ):
        with pytest.raises(ConfigurationError, match="empty or contains whitespace") as caught:
            Schemed(api_key=wrong)
        assert "a-secret" not in str(caught.value)


# -- one-request tools ----------------------------------------------------------------


async def test_an_already_gone_target_is_done_by_status_or_by_status_and_code(
    widget: WidgetConnector, server: FakeServer
) -> None:
    ctx = CallContext(idempotency_key="undo-1", compensation=True)
    assert await widget.call("widget.drop", {"shelf": "s", "id": 7}, ctx) == {
        "shelf": "s",
        "id": 7,
        "dropped": False,
    }
    server.faults.add(
        Fault.status(409, json={"error": {"code": "already_dropped", "message": "x"}}), times=1
    )
    assert (await widget.call("widget.drop", {"shelf": "s", "id": 7}, ctx))["dropped"] is False
    server.faults.add(
        Fault.status(409, json={"error": {"code": "locked", "message": "x"}}), times=1
    )
    with pytest.raises(ToolError, match="locked"):
        await widget.call("widget.drop", {"shelf": "s", "id": 7}, ctx)
    made = await widget.call("widget.make", {"shelf": "s", "name": "w"})
    assert (await widget.call("widget.drop", {"shelf": "s", "id": made["id"]}, ctx))[
        "dropped"
    ] is True


async def test_query_fields_and_kept_answer_fields(
    widget: WidgetConnector, server: FakeServer
) -> None:
    await widget.call("widget.make", {"shelf": "s", "name": "w", "colour": "red"})
    assert await widget.call("widget.find", {"shelf": "s", "q": "x y"}) == {
        "shelf": "s",
        "count": 1,
    }
    assert server.requests[-1].query == {"q": "x y"}
    await widget.call("widget.find", {"shelf": "s"})
    assert server.requests[-1].query == {}


async def test_a_write_whose_answer_lacks_a_required_field_is_uncertain() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(201, json={"widget": {"colour": "red"}})

    connector = WidgetConnector(token=TOKEN, transport=httpx.MockTransport(answer))
    with pytest.raises(
        EffectUncertainError, match=r"has no 'widget.id'.*cannot be undone automatically"
    ):
        await connector.call("widget.make", {"shelf": "s", "name": "w"})
    await connector.aclose()


def test_a_request_tool_checks_its_declaration_when_the_class_is_made() -> None:
    common: dict[str, Any] = {
        "effect": Effect.READ_ONLY,
        "permission": "p",
        "input": FindArgs,
        "output": FindResult,
        "summary": "s",
        "docs": f"{DOCS}/x",
    }
    with pytest.raises(TypeError, match=r"path names \['nope'\]"):
        RequestTool("GET", "/a/{nope}", **common)
    with pytest.raises(TypeError, match=r"body names \['name'\]"):
        RequestTool("POST", "/a/{shelf}", body=("name",), **common)
    with pytest.raises(TypeError, match="required names"):
        RequestTool("GET", "/a/{shelf}", keep={"count": "total"}, required=("id",), **common)
    with pytest.raises(TypeError, match="docs must be"):
        RequestTool("GET", "/a/{shelf}", **{**common, "docs": "widget.example"})


def test_a_request_tool_is_a_tool_with_its_page_in_the_docstring() -> None:
    specs = WidgetConnector.tool_specs()
    assert sorted(specs) == ["widget.drop", "widget.find", "widget.make", "widget.slow_count"]
    make = specs["widget.make"]
    assert make.description == "Make a widget on a shelf."
    assert f"``POST /shelves/{{shelf}}/widgets`` ({DOCS}/make)" in make.doc
    assert "EffectUncertainError" in make.doc
    assert "EffectUncertainError" not in specs["widget.find"].doc
    assert "404, 409 already_dropped" in specs["widget.drop"].doc
    manifest = {m.name: m for m in WidgetConnector.manifests()}["widget.make"]
    assert manifest.output_schema is not None
    assert manifest.compensation is not None


# -- error tables -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "status", "headers", "body", "code", "message"),
    [
        (ErrorTable(), 400, {}, {"code": "bad", "message": "Bad input"}, "bad", "Bad input"),
        (ErrorTable(), 400, {}, {"error": {"code": "deep", "message": "Deep"}}, "deep", "Deep"),
        (ErrorTable(), 422, {}, {"errors": [{"code": "first", "message": "One"}]}, "first", "One"),
        (ErrorTable(statuses={404: "not_found"}), 404, {}, None, "not_found", None),
        (ErrorTable(), 503, {}, "<html>", "server_error", None),
        (
            ErrorTable(),
            429,
            {"retry-after": "7"},
            {},
            "rate_limited",
            "rate limit exceeded (retry after 7 s)",
        ),
        (
            ErrorTable(messages=(("label does not exist", "label_not_found"),), code_fields=()),
            404,
            {},
            {"message": "Label does not exist", "code": "ignored"},
            "label_not_found",
            "Label does not exist",
        ),
        (
            ErrorTable(
                rate_limit=RateLimit(maybe_statuses=frozenset({403}), exhausted_header="x-left")
            ),
            403,
            {"x-left": "0"},
            {"message": "Forbidden"},
            "rate_limited",
            "Forbidden (wait at least a minute before retrying)",
        ),
        (
            ErrorTable(
                rate_limit=RateLimit(maybe_statuses=frozenset({403}), exhausted_header="x-left")
            ),
            403,
            {"x-left": "12"},
            {"code": "forbidden", "message": "Forbidden"},
            "forbidden",
            "Forbidden",
        ),
        (ErrorTable(rate_limit=None), 429, {}, {"code": "busy"}, "busy", None),
    ],
)
def test_error_tables_classify_answers(
    table: ErrorTable,
    status: int,
    headers: dict[str, str],
    body: Any,
    code: str,
    message: str | None,
) -> None:
    got = table.classify(status, httpx.Headers(headers), body)
    assert got == (code, message)


# -- refusals inside a 2xx answer (Slack's {"ok": false}, a GraphQL "errors" list) ---------


def _not_ok(body: Any) -> bool:
    return isinstance(body, dict) and body.get("ok") is False


CHATTY_ERRORS = ErrorTable(
    code_fields=("error",),
    message_fields=("detail",),
    rate_limit=RateLimit(codes=frozenset({"ratelimited"})),
    refused_when=_not_ok,
)


class PostArgs(_Args):
    text: str


class PostResult(_Args):
    id: str


class UnpostArgs(_Args):
    id: str


class UnpostResult(_Args):
    id: str
    removed: bool


class ChattyConnector(HttpConnector):
    """A vendor that answers every call HTTP 200 and says in the body whether it worked."""

    name = "chatty"
    settings = (
        Setting("CHATTY_TOKEN", "token", "a Chatty token", secret=True),
        Setting("CHATTY_BASE_URL", "base_url", "the Chatty API root", required=False),
    )
    base = BaseUrl("https://chatty.example/api")
    auth = Bearer("token")
    errors = CHATTY_ERRORS

    post = RequestTool(
        "POST",
        "/post",
        effect=Effect.REVERSIBLE,
        permission="chatty:write",
        input=PostArgs,
        output=PostResult,
        compensation=Compensation(tool="chatty.unpost", argument_map={"id": "result.id"}),
        summary="Post a text.",
        docs=f"{DOCS}/post",
        body=("text",),
        keep={"id": "id"},
        required=("id",),
    )
    unpost = RequestTool(
        "POST",
        "/unpost",
        effect=Effect.IDEMPOTENT,
        permission="chatty:write",
        input=UnpostArgs,
        output=UnpostResult,
        summary="Take a post down; one already gone counts as done.",
        docs=f"{DOCS}/unpost",
        body=("id",),
        already_done=((200, "post_not_found"),),
        echo=("id",),
        done_field="removed",
    )


class FakeChatty(VendorFake):
    """Every answer is HTTP 200: ``{"ok": true, ...}`` or ``{"ok": false, "error", "detail"}``."""

    def __init__(self) -> None:
        super().__init__(token=TOKEN, prefix="/api")
        self.posts: dict[str, str] = {}
        self.busy = False

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        return FakeResponse(200, json={"ok": False, "error": code or "failed", "detail": message})

    @vendor_route("POST", "/post", docs=f"{DOCS}/post", body="json")
    def make_post(self, request: FakeRequest) -> FakeResponse:
        if self.busy:
            answer = self.error(200, "slow down", code="ratelimited")
            return FakeResponse(200, json=answer.json, headers={"Retry-After": "3"})
        text = request.json.get("text")
        if not text:
            return self.error(200, "say something", code="no_text")
        ident = f"p{len(self.posts) + 1}"
        self.posts[ident] = text
        return FakeResponse(200, json={"ok": True, "id": ident})

    @vendor_route("POST", "/unpost", docs=f"{DOCS}/unpost", body="json")
    def take_down(self, request: FakeRequest) -> FakeResponse:
        if self.posts.pop(request.json.get("id"), None) is None:
            return self.error(200, "no such post", code="post_not_found")
        return FakeResponse(200, json={"ok": True})


@pytest.fixture
def chatty_fake() -> FakeChatty:
    return FakeChatty()


@pytest.fixture
async def chatty(chatty_fake: FakeChatty) -> AsyncIterator[tuple[ChattyConnector, FakeServer]]:
    with FakeServer(chatty_fake) as running:
        connector = ChattyConnector(token=TOKEN, base_url=running.url + "/api")
        yield connector, running
        await connector.aclose()


async def test_a_refusal_in_a_2xx_answer_is_a_tool_error_with_the_vendors_code(
    chatty: tuple[ChattyConnector, FakeServer], chatty_fake: FakeChatty
) -> None:
    connector, _ = chatty
    with pytest.raises(ToolError) as caught:
        await connector.call("chatty.post", {"text": ""})
    assert not isinstance(caught.value, EffectUncertainError)  # the vendor answered: definite
    assert (caught.value.status, caught.value.code) == (200, "no_text")
    assert str(caught.value) == (
        "chatty: POST /post failed: HTTP 200, refused in the answer's body (no_text): say something"
    )
    assert chatty_fake.posts == {}
    assert await connector.call("chatty.post", {"text": "hi"}) == {"id": "p1"}


async def test_a_2xx_refusal_with_a_rate_limit_code_is_rate_limited(
    chatty: tuple[ChattyConnector, FakeServer], chatty_fake: FakeChatty
) -> None:
    connector, _ = chatty
    chatty_fake.busy = True
    with pytest.raises(ToolError, match=r"slow down \(retry after 3 s\)") as caught:
        await connector.call("chatty.post", {"text": "hi"})
    assert (caught.value.status, caught.value.code) == (200, "rate_limited")


async def test_a_2xx_refusal_can_mean_the_undo_is_already_done(
    chatty: tuple[ChattyConnector, FakeServer], chatty_fake: FakeChatty
) -> None:
    connector, _ = chatty
    ctx = CallContext(idempotency_key="undo-1", compensation=True)
    made = await connector.call("chatty.post", {"text": "hi"})
    assert await connector.call("chatty.unpost", made, ctx) == {"id": "p1", "removed": True}
    assert await connector.call("chatty.unpost", made, ctx) == {"id": "p1", "removed": False}
    assert chatty_fake.posts == {}


async def test_a_2xx_refusal_never_shows_the_credential(chatty_fake: FakeChatty) -> None:
    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"ok": False, "error": "bad", "detail": f"you sent {TOKEN}"}
        )

    connector = ChattyConnector(token=TOKEN, transport=httpx.MockTransport(echo))
    with pytest.raises(ToolError) as caught:
        await connector.call("chatty.post", {"text": "hi"})
    assert TOKEN not in str(caught.value)
    assert caught.value.code == "bad"
    await connector.aclose()


async def test_a_connector_may_override_how_a_2xx_refusal_is_found() -> None:
    class Strict(ChattyConnector):
        def refusal_in(self, resp: Any) -> tuple[str, str | None] | None:
            if isinstance(resp.json, dict) and "ok" not in resp.json:
                return "no_ok_field", "the answer does not say whether it worked"
            return super().refusal_in(resp)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": "p9"})

    plain = ChattyConnector(token=TOKEN, transport=httpx.MockTransport(answer))
    assert await plain.call("chatty.post", {"text": "hi"}) == {"id": "p9"}
    strict = Strict(token=TOKEN, transport=httpx.MockTransport(answer))
    with pytest.raises(ToolError) as caught:
        await strict.call("chatty.post", {"text": "hi"})
    assert caught.value.code == "no_ok_field"
    await plain.aclose()
    await strict.aclose()


@pytest.mark.parametrize(
    ("table", "status", "body", "expected"),
    [
        (CHATTY_ERRORS, 200, {"ok": True, "error": "ignored"}, None),
        (CHATTY_ERRORS, 200, {"ok": False, "error": "no_text", "detail": "d"}, ("no_text", "d")),
        (CHATTY_ERRORS, 201, {"ok": False}, ("refused", None)),
        (CHATTY_ERRORS, 200, None, None),
        (CHATTY_ERRORS, 400, {"ok": False, "error": "bad"}, None),  # an error status: classify's
        (ErrorTable(), 200, {"ok": False, "error": "bad"}, None),  # no refused_when: never
        (
            ErrorTable(refused_when=lambda body: bool(body.get("errors")), refused_code="graphql"),
            200,
            {"data": None, "errors": [{"message": "Entity not found"}]},
            ("graphql", "Entity not found"),
        ),
    ],
)
def test_error_tables_find_refusals_in_2xx_answers(
    table: ErrorTable, status: int, body: Any, expected: tuple[str, str | None] | None
) -> None:
    assert table.refusal(status, httpx.Headers({}), body) == expected
