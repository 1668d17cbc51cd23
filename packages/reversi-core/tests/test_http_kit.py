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
        return {"shelf": args.shelf, "count": self.expect_object(resp, "count", wrote=False)["total"]}


class FakeWidget(VendorFake):
    """The fake Widget API: shelves of widgets, errors as ``{"error": {"code", "message"}}``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(token=TOKEN, prefix="/v2", **kwargs)
        self.widgets: dict[int, dict[str, Any]] = {}
        self.keys: list[str | None] = []

    def error(self, status: int, message: str, *, code: str | None = None, **extra: Any) -> FakeResponse:
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

    @vendor_route("GET", "/shelves/{shelf}/widgets", docs=f"{DOCS}/find")
    def list_widgets(self, request: FakeRequest) -> FakeResponse:
        shelf = request.path_params["shelf"]
        return FakeResponse(200, json={"total": sum(w["shelf"] == shelf for w in self.widgets.values())})


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
        with pytest.raises(ConfigurationError, match="WIDGET_TOKEN is not set; export a Widget API token"):
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
                assert await trusting.call("widget.find", {"shelf": "s"}) == {"shelf": "s", "count": 0}
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
    missing = WidgetConnector.from_env({"WIDGET_TOKEN": TOKEN, "SSL_CERT_FILE": "/nonexistent/ca.pem"})
    with pytest.raises(ConfigurationError, match="no CA certificate file"):
        await missing.call("widget.find", {"shelf": "s"})


@pytest.mark.parametrize(
    "url", ["", "ftp://w.corp", "https://user:pw-secret-1234@w.corp", "https://w.corp?x=1", "https://w.corp:99999"]
)
def test_a_malformed_base_url_is_refused_without_showing_credentials(url: str) -> None:
    with pytest.raises(ConfigurationError, match="base_url") as caught:
        WidgetConnector(token=TOKEN, base_url=url)
    assert "pw-secret-1234" not in str(caught.value)


def test_an_unknown_option_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown option.*colour"):
        WidgetConnector(token=TOKEN, colour="red")


def test_settings_may_not_take_reserved_or_duplicate_names() -> None:
    with pytest.raises(TypeError, match="share an option"):
        type("Twice", (HttpConnector,), {"name": "twice", "settings": (Setting("A", "a", "x"), Setting("B", "a", "y"))})
    with pytest.raises(TypeError, match="may not be called"):
        type("Reserved", (HttpConnector,), {"name": "reserved", "settings": (Setting("T", "timeouts", "x"),)})


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
    made = await widget.call("widget.make", {"shelf": "a b", "name": "w"}, CallContext(idempotency_key="step-key-1"))
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
        deletes = [r.headers.get("idempotency-key") for r in server.requests if r.method == "DELETE"]
        assert deletes == [expected, expected]  # the failed attempt and the retry: one key
        assert forward_key != expected
    finally:
        journal.close()


async def test_every_timeout_is_capped_at_the_calls_own_limit(server: FakeServer) -> None:
    slow = WidgetConnector(token=TOKEN, base_url=server.url, timeouts=Timeouts(connect=30, read=30, total=60))
    server.faults.add(Fault.hang(seconds=20), times=None)
    try:
        for name, args in (("widget.find", {"shelf": "s"}), ("widget.make", {"shelf": "s", "name": "w"})):
            started = time.monotonic()
            with pytest.raises((ToolError, EffectUncertainError)) as caught:
                await slow.call(name, args, CallContext(timeout=0.3, idempotency_key="k"))
            assert time.monotonic() - started < 2.0, name
            expected = EffectUncertainError if name == "widget.make" else ToolError
            assert isinstance(caught.value, expected), caught.value
    finally:
        server.faults.clear()
        await slow.aclose()


async def test_errors_come_from_the_vendors_table(widget: WidgetConnector, server: FakeServer) -> None:
    server.faults.add(
        Fault.status(409, json={"error": {"code": "shelf_full", "message": "The shelf is full"}}), times=1
    )
    with pytest.raises(ToolError) as caught:
        await widget.call("widget.make", {"shelf": "s", "name": "w"})
    assert (caught.value.status, caught.value.code) == (409, "shelf_full")
    assert "The shelf is full" in str(caught.value)
    server.faults.add(
        Fault.status(400, json={"error": {"code": "slow_down", "message": "easy"}}, headers={"x-reset": "0"}),
        times=1,
    )
    with pytest.raises(ToolError, match=r"the limit resets at 1970-01-01T00:00:00Z") as limited:
        await widget.call("widget.find", {"shelf": "s"})
    assert limited.value.code == "rate_limited"


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
    server.faults.add(Fault.status(409, json={"error": {"code": "already_dropped", "message": "x"}}), times=1)
    assert (await widget.call("widget.drop", {"shelf": "s", "id": 7}, ctx))["dropped"] is False
    server.faults.add(Fault.status(409, json={"error": {"code": "locked", "message": "x"}}), times=1)
    with pytest.raises(ToolError, match="locked"):
        await widget.call("widget.drop", {"shelf": "s", "id": 7}, ctx)
    made = await widget.call("widget.make", {"shelf": "s", "name": "w"})
    assert (await widget.call("widget.drop", {"shelf": "s", "id": made["id"]}, ctx))["dropped"] is True


async def test_query_fields_and_kept_answer_fields(widget: WidgetConnector, server: FakeServer) -> None:
    await widget.call("widget.make", {"shelf": "s", "name": "w", "colour": "red"})
    assert await widget.call("widget.find", {"shelf": "s", "q": "x y"}) == {"shelf": "s", "count": 1}
    assert server.requests[-1].query == {"q": "x y"}
    await widget.call("widget.find", {"shelf": "s"})
    assert server.requests[-1].query == {}


async def test_a_write_whose_answer_lacks_a_required_field_is_uncertain() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(201, json={"widget": {"colour": "red"}})

    connector = WidgetConnector(token=TOKEN, transport=httpx.MockTransport(answer))
    with pytest.raises(EffectUncertainError, match=r"has no 'widget.id'.*cannot be undone automatically"):
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
        (ErrorTable(), 429, {"retry-after": "7"}, {}, "rate_limited", "rate limit exceeded (retry after 7 s)"),
        (
            ErrorTable(messages=(("label does not exist", "label_not_found"),), code_fields=()),
            404,
            {},
            {"message": "Label does not exist", "code": "ignored"},
            "label_not_found",
            "Label does not exist",
        ),
        (
            ErrorTable(rate_limit=RateLimit(maybe_statuses=frozenset({403}), exhausted_header="x-left")),
            403,
            {"x-left": "0"},
            {"message": "Forbidden"},
            "rate_limited",
            "Forbidden (wait at least a minute before retrying)",
        ),
        (
            ErrorTable(rate_limit=RateLimit(maybe_statuses=frozenset({403}), exhausted_header="x-left")),
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
    table: ErrorTable, status: int, headers: dict[str, str], body: Any, code: str, message: str | None
) -> None:
    got = table.classify(status, httpx.Headers(headers), body)
    assert got == (code, message)
