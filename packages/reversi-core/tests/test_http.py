"""The shared HTTP layer (reversi_core.http) driven against a real fake server."""

from __future__ import annotations

import gc
import json
import socket
import ssl
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from reversi_core.errors import (
    ConfigurationError,
    EffectUncertainError,
    InvalidArgumentsError,
    ReversiError,
    ToolError,
)
from reversi_core.http import (
    HttpClient,
    HttpResponse,
    Timeouts,
    default_error_code,
    url_path,
)
from reversi_core.redact import REDACTED, scrub
from reversi_core.testing import FakeApp, FakeRequest, FakeResponse, FakeServer, Fault

pytestmark = pytest.mark.anyio

TOKEN = "ghp_http-layer-test-token-0123456789"
FAST = Timeouts(connect=1.0, read=0.2, total=5.0)


class Issues:
    """A tiny GitHub-like fake: issues per repository, an echo route and a few odd routes."""

    def __init__(self) -> None:
        self.app = FakeApp()
        self.issues: dict[int, dict[str, Any]] = {}
        self.app.add_route("POST", "/repos/{owner}/{repo}/issues", self.create)
        self.app.add_route("GET", "/repos/{owner}/{repo}/issues/{number}", self.get)
        self.app.add_route("GET", "/echo", self.echo)
        self.app.add_route("POST", "/echo", self.echo)
        self.app.add_route("GET", "/leaky", self.leaky)
        self.app.add_route("GET", "/cookie", self.cookie)
        self.app.add_route("GET", "/moved", self.moved)

    def create(self, request: FakeRequest) -> FakeResponse:
        body = request.json or {}
        if not body.get("title"):
            return FakeResponse(
                422,
                json={
                    "message": "Validation Failed",
                    "errors": [{"resource": "Issue", "field": "title", "code": "missing_field"}],
                },
            )
        number = len(self.issues) + 1
        self.issues[number] = {"number": number, "title": body["title"], "state": "open"}
        return FakeResponse(201, json=self.issues[number], headers={"ETag": '"v1"'})

    def get(self, request: FakeRequest) -> FakeResponse:
        issue = self.issues.get(int(request.path_params["number"]))
        if issue is None:
            return FakeResponse(404, json={"message": "Not Found"})
        return FakeResponse(200, json=issue)

    def echo(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(200, json={"query": dict(request.query), "body": request.text})

    def leaky(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(
            200, json={"token": TOKEN, TOKEN: [f"Bearer {TOKEN}"]}, headers={"X-Echo": TOKEN}
        )

    def cookie(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(200, json={}, headers={"Set-Cookie": "session=abc123; Path=/"})

    def moved(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(302, headers={"Location": "/echo"}, body="")


@pytest.fixture
def fake() -> Issues:
    return Issues()


@pytest.fixture
def server(fake: Issues) -> Iterator[FakeServer]:
    with FakeServer(fake.app) as running:
        yield running


def github_code(response: httpx.Response) -> tuple[str | None, str | None]:
    """The GitHub hook of the tests: the message names the problem, e.g. validation_failed."""
    body = response.json()
    message = body.get("message")
    return (message.lower().replace(" ", "_") if message else None), message


@pytest.fixture
async def client(server: FakeServer) -> AsyncIterator[HttpClient]:
    async with HttpClient(
        server.url,
        vendor="github",
        headers={"Authorization": f"Bearer {TOKEN}", "X-GitHub-Api-Version": "2022-11-28"},
        secrets=[TOKEN],
        timeouts=FAST,
        error_code=github_code,
    ) as http:
        yield http


# --- success ---------------------------------------------------------------------------


async def test_2xx_returns_status_headers_json_and_text(
    client: HttpClient, server: FakeServer, fake: Issues
) -> None:
    resp = await client.request("POST", "/repos/o/r/issues", json={"title": "Bug"})
    assert isinstance(resp, HttpResponse)
    assert resp.status == 201
    assert resp.ok
    assert resp.json == {"number": 1, "title": "Bug", "state": "open"}
    assert json.loads(resp.text) == resp.json
    assert resp.headers["etag"] == '"v1"'  # case-insensitive
    assert fake.issues[1]["title"] == "Bug"
    sent = server.requests[-1]
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    assert sent.headers["x-github-api-version"] == "2022-11-28"
    assert sent.headers["user-agent"].startswith("reversi/")


async def test_params_form_and_content_bodies_are_sent(client: HttpClient) -> None:
    resp = await client.request("GET", "/echo", params={"state": "open", "per_page": 5})
    assert resp.json == {"query": {"state": "open", "per_page": "5"}, "body": ""}
    resp = await client.request("POST", "/echo", data={"amount": "100", "currency": "eur"})
    assert resp.json["body"] == "amount=100&currency=eur"
    resp = await client.request("POST", "/echo", content="plain text")
    assert resp.json["body"] == "plain text"


async def test_a_non_json_or_empty_body_gives_json_none(server: FakeServer) -> None:
    app = server.app
    app.add_route("GET", "/text", lambda r: FakeResponse(200, body="hello"))
    app.add_route("DELETE", "/thing", lambda r: FakeResponse(204))
    async with HttpClient(server.url, vendor="acme") as http:
        text = await http.request("GET", "/text")
        assert (text.json, text.text) == (None, "hello")
        gone = await http.request("DELETE", "/thing")
        assert (gone.status, gone.json, gone.text) == (204, None, "")


# --- HTTP errors -------------------------------------------------------------------------


async def test_binary_bodies_come_back_as_bytes_with_credentials_scrubbed(
    server: FakeServer,
) -> None:
    payload = b"\x00\xff\xfe" + TOKEN.encode() + b"\x89PNG"
    server.app.add_route("GET", "/blob", lambda r: FakeResponse(200, body=payload))
    async with HttpClient(server.url, vendor="acme", secrets=[TOKEN]) as http:
        resp = await http.request("GET", "/blob")
    assert resp.content == b"\x00\xff\xfe" + REDACTED.encode() + b"\x89PNG"
    assert TOKEN not in resp.text


async def test_a_request_can_go_to_another_api_root(server: FakeServer) -> None:
    """S3's virtual-hosted buckets: one request sent to another root, checked like base_url."""
    async with HttpClient("https://api.invalid", vendor="acme", timeouts=FAST) as http:
        resp = await http.request("GET", "/echo", params={"a": "b"}, base_url=server.url + "/")
        assert resp.json == {"query": {"a": "b"}, "body": ""}
        assert server.requests[-1].target == "/echo?a=b"
        with pytest.raises(ConfigurationError, match="credentials"):
            await http.request("GET", "/echo", base_url="http://user:pw@127.0.0.1:1")
        with pytest.raises(ConfigurationError, match="query"):
            await http.request("GET", "/echo", base_url=server.url + "/?x=1")


async def test_error_status_names_vendor_method_path_status_and_vendor_code(
    client: HttpClient, fake: Issues
) -> None:
    with pytest.raises(ToolError) as caught:
        await client.request(
            "POST", "/repos/o/r/issues", params={"q": "private-value"}, json={"title": ""}
        )
    err = caught.value
    assert str(err) == (
        "github: POST /repos/o/r/issues failed: HTTP 422 (validation_failed): Validation Failed"
    )
    assert (err.status, err.code) == (422, "validation_failed")
    assert "private-value" not in str(err)
    assert fake.issues == {}


async def test_without_a_hook_the_common_error_shapes_are_read(server: FakeServer) -> None:
    server.faults.add(
        Fault.status(400, json={"errors": [{"code": "bad_thing", "message": "Thing is bad"}]})
    )
    async with HttpClient(server.url, vendor="acme") as http:
        with pytest.raises(ToolError) as caught:
            await http.request("GET", "/echo")
    assert str(caught.value) == "acme: GET /echo failed: HTTP 400 (bad_thing): Thing is bad"
    assert caught.value.code == "bad_thing"


async def test_a_broken_hook_falls_back_to_the_default_reading(server: FakeServer) -> None:
    def broken(response: httpx.Response) -> tuple[str | None, str | None]:
        raise KeyError("oops")

    server.faults.add(Fault.status(409, json={"code": "conflict", "message": "Busy"}))
    async with HttpClient(server.url, vendor="acme", error_code=broken) as http:
        with pytest.raises(ToolError) as caught:
            await http.request("PUT", "/echo")
    assert (caught.value.status, caught.value.code) == (409, "conflict")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"code": "x", "message": "m"}, ("x", "m")),
        ({"error": "invalid_grant", "error_description": "expired"}, ("invalid_grant", "expired")),
        ({"error": {"code": "c", "message": "nested"}}, ("c", "nested")),
        ({"ok": False, "error": "channel_not_found"}, ("channel_not_found", None)),
        ({"errors": [{"code": "first"}], "message": "top"}, ("first", "top")),
        ({"status": 404, "code": 404, "title": "Missing"}, ("404", "Missing")),
        (["not", "an", "object"], (None, None)),
    ],
)
def test_default_error_code_reads_common_shapes(
    body: Any, expected: tuple[str | None, str | None]
) -> None:
    response = httpx.Response(400, json=body)
    assert default_error_code(response) == expected


def test_default_error_code_of_a_non_json_body_is_empty() -> None:
    assert default_error_code(httpx.Response(500, text="<html>oops</html>")) == (None, None)


async def test_ok_statuses_turn_a_status_into_a_result(client: HttpClient) -> None:
    resp = await client.request("GET", "/repos/o/r/issues/7", ok_statuses={404})
    assert (resp.status, resp.ok, resp.json) == (404, False, {"message": "Not Found"})
    with pytest.raises(ToolError) as caught:
        await client.request("GET", "/repos/o/r/issues/7")
    assert caught.value.status == 404


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_5xx_on_a_write_is_a_tool_error_naming_the_status(
    client: HttpClient, server: FakeServer, status: int
) -> None:
    server.faults.add(Fault.status(status, apply=True), method="POST")
    with pytest.raises(ToolError) as caught:
        await client.request("POST", "/repos/o/r/issues", json={"title": "x"})
    assert caught.value.status == status
    assert f"HTTP {status}" in str(caught.value)
    assert ("may have applied" in str(caught.value)) is (status in (502, 504))


@pytest.mark.parametrize("status", [401, 403])
async def test_401_and_403_name_the_status_without_the_credential(
    client: HttpClient, server: FakeServer, status: int
) -> None:
    server.faults.add(
        Fault.status(status, json={"message": f"Bad credentials: Bearer {TOKEN}"}), times=None
    )
    for method in ("GET", "POST"):
        with pytest.raises(ToolError) as caught:
            await client.request(method, "/echo")
        assert caught.value.status == status
        assert TOKEN not in str(caught.value)
        assert REDACTED in str(caught.value)


async def test_redirects_are_not_followed(client: HttpClient) -> None:
    with pytest.raises(ToolError) as caught:
        await client.request("GET", "/moved")
    assert caught.value.status == 302


async def test_no_cookie_is_kept_between_calls(client: HttpClient, server: FakeServer) -> None:
    await client.request("GET", "/cookie")
    await client.request("GET", "/echo")
    assert "cookie" not in server.requests[-1].headers


# --- lost connections and timeouts -------------------------------------------------------


@pytest.mark.parametrize("apply", [False, True])
async def test_drop_after_read_on_a_write_is_uncertain(
    client: HttpClient, server: FakeServer, fake: Issues, apply: bool
) -> None:
    server.faults.add(Fault.drop_after_read(apply=apply), method="POST")
    with pytest.raises(EffectUncertainError) as caught:
        await client.request("POST", "/repos/o/r/issues", json={"title": "lost"})
    assert not isinstance(caught.value, ToolError)
    assert "may or may not have been applied" in str(caught.value)
    assert "POST /repos/o/r/issues" in str(caught.value)
    assert bool(fake.issues) is apply
    # the fault is spent: the same call now succeeds
    resp = await client.request("POST", "/repos/o/r/issues", json={"title": "again"})
    assert resp.status == 201


async def test_drop_after_read_on_a_read_is_a_tool_error(
    client: HttpClient, server: FakeServer
) -> None:
    server.faults.add(Fault.drop_after_read(), method="GET")
    with pytest.raises(ToolError) as caught:
        await client.request("GET", "/echo")
    assert caught.value.code == "connection_lost"


async def test_write_flag_overrides_the_method(client: HttpClient, server: FakeServer) -> None:
    server.faults.add(Fault.drop_after_read(), times=2)
    with pytest.raises(ToolError) as caught:  # a POST that only searches
        await client.request("POST", "/echo", json={"query": "x"}, write=False)
    assert caught.value.code == "connection_lost"
    with pytest.raises(EffectUncertainError):  # a GET that triggers something
        await client.request("GET", "/echo", write=True)


async def test_read_timeout_is_uncertain_for_a_write_and_a_tool_error_for_a_read(
    client: HttpClient, server: FakeServer
) -> None:
    server.faults.add(Fault.hang(10), times=2)
    with pytest.raises(EffectUncertainError) as uncertain:
        await client.request("POST", "/repos/o/r/issues", json={"title": "slow"})
    assert "ReadTimeout" in str(uncertain.value)
    with pytest.raises(ToolError) as failed:
        await client.request("GET", "/echo")
    assert failed.value.code == "timeout"


async def test_total_timeout_bounds_the_whole_request(server: FakeServer) -> None:
    server.faults.add(Fault.hang(10), times=2)
    limits = Timeouts(connect=1.0, read=10.0, total=0.2)
    async with HttpClient(server.url, vendor="acme", timeouts=limits) as http:
        with pytest.raises(EffectUncertainError) as uncertain:
            await http.request("PATCH", "/echo")
        assert "total limit of 0.2 s" in str(uncertain.value)
        with pytest.raises(ToolError) as failed:
            await http.request("GET", "/echo")
        assert failed.value.code == "timeout"


async def test_per_call_timeouts_replace_the_clients(server: FakeServer) -> None:
    server.faults.add(Fault.hang(10))
    slow = Timeouts(connect=1.0, read=30.0, total=30.0)
    async with HttpClient(server.url, vendor="acme", timeouts=slow) as http:
        with pytest.raises(ToolError) as failed:
            await http.request("GET", "/echo", timeouts=slow.capped_at(0.2))
    assert failed.value.code == "timeout"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
async def test_connection_refused_is_a_definite_connect_error(method: str) -> None:
    async with HttpClient(f"http://127.0.0.1:{closed_port()}", vendor="acme") as http:
        with pytest.raises(ToolError) as caught:
            await http.request(method, "/anything")
    assert caught.value.code == "connect"
    assert "nothing was sent" in str(caught.value)


@pytest.fixture
def silent_tls_port() -> Iterator[int]:
    """A port whose TCP handshake completes (kernel backlog) but no TLS answer ever comes."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


@pytest.mark.parametrize(
    "limits",
    [Timeouts(connect=0.2, read=5.0, total=5.0), Timeouts(connect=5.0, read=5.0, total=0.2)],
    ids=["connect-timeout", "total-timeout"],
)
async def test_a_timeout_before_sending_is_definite(silent_tls_port: int, limits: Timeouts) -> None:
    url = f"https://127.0.0.1:{silent_tls_port}"
    async with HttpClient(url, vendor="acme", timeouts=limits) as http:
        with pytest.raises(ToolError) as caught:
            await http.request("POST", "/x")
    assert caught.value.code == "connect"
    assert "nothing was sent" in str(caught.value)
    gc.collect()  # a socket left open by a cut-short TLS handshake would warn here


async def test_a_caller_cancelling_during_the_handshake_leaves_no_socket_open(
    silent_tls_port: int,
) -> None:
    url = f"https://127.0.0.1:{silent_tls_port}"
    async with HttpClient(url, vendor="acme") as http:
        with anyio.move_on_after(0.2) as scope:
            await http.request("GET", "/x")
    assert scope.cancelled_caught
    gc.collect()


# --- what a custom transport cannot tell us ----------------------------------------------


def stream_that_breaks(chunks: list[bytes], error: Exception) -> httpx.AsyncByteStream:
    class Broken(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield chunk
            raise error

    return Broken()


async def test_body_lost_after_a_2xx_is_uncertain_for_a_write() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(201, stream=stream_that_breaks([b'{"id"'], httpx.ReadError("reset")))

    transport = httpx.MockTransport(handler)
    async with HttpClient("https://api.example", vendor="acme", transport=transport) as http:
        with pytest.raises(EffectUncertainError) as caught:
            await http.request("POST", "/things")
        assert "answered HTTP 201 but its body was lost" in str(caught.value)
        with pytest.raises(ToolError) as failed:
            await http.request("GET", "/things")
        assert failed.value.code == "connection_lost"


async def test_body_lost_after_an_error_status_is_still_that_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, stream=stream_that_breaks([b"{"], httpx.ReadError("reset")))

    transport = httpx.MockTransport(handler)
    async with HttpClient("https://api.example", vendor="acme", transport=transport) as http:
        with pytest.raises(ToolError) as caught:
            await http.request("POST", "/things")
    assert caught.value.status == 403


async def test_an_undecodable_body_is_reported_not_raised_raw() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Encoding": "gzip"}, content=b"not gzip")

    transport = httpx.MockTransport(handler)
    async with HttpClient("https://api.example", vendor="acme", transport=transport) as http:
        with pytest.raises(ToolError) as caught:
            await http.request("GET", "/things")
        assert caught.value.code == "invalid_response"
        with pytest.raises(EffectUncertainError):
            await http.request("POST", "/things")


async def test_an_untraced_transport_failing_is_assumed_sent() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    transport = httpx.MockTransport(handler)
    async with HttpClient("https://api.example", vendor="acme", transport=transport) as http:
        with pytest.raises(EffectUncertainError):
            await http.request("POST", "/things")
        with pytest.raises(ToolError) as caught:
            await http.request("GET", "/things")
    assert caught.value.code == "timeout"


async def test_no_httpx_exception_escapes(server: FakeServer) -> None:
    faults = [Fault.drop_after_read(), Fault.hang(5), Fault.status(500), Fault.status(401)]
    async with HttpClient(server.url, vendor="acme", timeouts=FAST) as http:
        for fault in faults:
            for method in ("GET", "POST"):
                server.faults.add(fault)
                with pytest.raises(ReversiError) as caught:
                    await http.request(method, "/echo")
                assert not isinstance(caught.value, httpx.HTTPError)
                assert caught.value.__cause__ is None
                assert caught.value.__context__ is None


# --- credentials -------------------------------------------------------------------------


async def test_secrets_are_scrubbed_from_returned_json_text_and_headers(
    client: HttpClient,
) -> None:
    resp = await client.request("GET", "/leaky")
    assert resp.json == {
        "token": REDACTED,
        REDACTED: [REDACTED],
    }  # "Bearer <token>" is registered whole
    assert TOKEN not in resp.text
    assert resp.headers["x-echo"] == REDACTED


async def test_secrets_are_registered_with_the_process_redactor(server: FakeServer) -> None:
    other = "sk_live_registered-by-the-client-42"
    async with HttpClient(server.url, vendor="acme", secrets=[other]):
        pass
    assert scrub(f"key={other}") == f"key={REDACTED}"


async def test_the_authorization_credential_is_scrubbed_even_when_not_listed(
    server: FakeServer,
) -> None:
    basic = "dXNlcjpwYXNzd29yZC1ub3QtbGlzdGVk"
    server.faults.add(Fault.status(401, json={"message": f"rejected Basic {basic}"}))
    async with HttpClient(
        server.url, vendor="acme", headers={"Authorization": f"Basic {basic}"}
    ) as http:
        with pytest.raises(ToolError) as caught:
            await http.request("GET", "/echo")
    assert basic not in str(caught.value)


@pytest.mark.parametrize(
    "base_url",
    ["https://user:hunter2-secret@api.example", "https://hunter2-secret@api.example/v3"],
)
def test_a_base_url_with_credentials_is_refused(base_url: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        HttpClient(base_url, vendor="acme")
    assert "hunter2-secret" not in str(caught.value)


@pytest.mark.parametrize(
    "base_url",
    [
        "https://api.example/?key=abcd",
        "ftp://api.example",
        "not a url",
        "https://",
        "http://127.0.0.1:99999",
    ],
)
def test_other_bad_base_urls_are_refused(base_url: str) -> None:
    with pytest.raises(ConfigurationError):
        HttpClient(base_url, vendor="acme")


async def test_a_credential_is_never_sent_in_a_url_or_body(
    client: HttpClient, server: FakeServer
) -> None:
    attempts: list[dict[str, Any]] = [
        {"params": {"token": TOKEN}},
        {"json": {"note": f"the token is {TOKEN}"}},
        {"data": {"secret": TOKEN}},
    ]
    for kwargs in attempts:
        with pytest.raises(ToolError) as caught:
            await client.request("POST", "/echo", **kwargs)
        assert caught.value.code == "credential_in_request"
        assert TOKEN not in str(caught.value)
    with pytest.raises(ToolError) as in_path:
        await client.request("GET", f"/repos/{TOKEN}/x")
    assert str(in_path.value).startswith(f"github: GET /repos/{REDACTED}/x: refused")
    assert server.requests == []


async def test_the_query_string_is_never_shown() -> None:
    async with HttpClient(f"http://127.0.0.1:{closed_port()}", vendor="acme", secrets=[TOKEN]) as h:
        with pytest.raises(ToolError) as caught:
            await h.request("GET", "/echo?x=1")
    assert str(caught.value).startswith("acme: GET /echo: could not connect")


# --- idempotency -------------------------------------------------------------------------


@pytest.fixture
async def stripe(server: FakeServer) -> AsyncIterator[HttpClient]:
    async with HttpClient(
        server.url, vendor="stripe", idempotency_header="Idempotency-Key", timeouts=FAST
    ) as http:
        yield http


async def test_a_write_sends_the_given_idempotency_key(
    stripe: HttpClient, server: FakeServer
) -> None:
    for _ in range(2):
        await stripe.request("POST", "/echo", data={"a": "1"}, idempotency_key="reversi-r-1-undo")
    keys = [r.headers.get("idempotency-key") for r in server.requests]
    assert keys == ["reversi-r-1-undo", "reversi-r-1-undo"]


async def test_a_write_without_a_key_gets_a_fresh_uuid_each_time(
    stripe: HttpClient, server: FakeServer
) -> None:
    await stripe.request("POST", "/echo")
    await stripe.request("DELETE", "/echo", ok_statuses={404})
    keys = [r.headers["idempotency-key"] for r in server.requests]
    assert len(set(keys)) == 2
    assert all(uuid.UUID(key).version == 4 for key in keys)


async def test_reads_never_carry_an_idempotency_key(stripe: HttpClient, server: FakeServer) -> None:
    await stripe.request("GET", "/echo", idempotency_key="ignored-on-reads")
    await stripe.request("POST", "/echo", write=False)
    assert all("idempotency-key" not in r.headers for r in server.requests)


async def test_an_explicit_header_wins_and_a_client_without_the_hook_sends_none(
    stripe: HttpClient, client: HttpClient, server: FakeServer
) -> None:
    await stripe.request("POST", "/echo", headers={"idempotency-key": "mine"})
    await client.request("POST", "/echo", idempotency_key="unused")
    assert server.requests[0].headers["idempotency-key"] == "mine"  # and no second value
    assert "idempotency-key" not in server.requests[1].headers


# --- paths and timeouts ------------------------------------------------------------------


def test_url_path_encodes_each_segment() -> None:
    assert url_path("/repos/{owner}/{repo}/issues/{n}", owner="o", repo="a b?c", n=7) == (
        "/repos/o/a%20b%3Fc/issues/7"
    )
    assert url_path("/repos/{o}/{r}/git/refs/{ref:path}", o="o", r="r", ref="heads/f/x") == (
        "/repos/o/r/git/refs/heads/f/x"
    )
    assert url_path("/users/{name}", name="a/b") == "/users/a%2Fb"


@pytest.mark.parametrize(
    ("template", "values"),
    [
        ("/repos/{owner}", {"owner": ".."}),
        ("/repos/{owner}", {"owner": ""}),
        ("/refs/{ref:path}", {"ref": "heads/../../admin"}),
        ("/refs/{ref:path}", {"ref": "heads//x"}),
        ("/repos/{owner}", {}),
    ],
)
def test_url_path_refuses_segments_that_move_the_path(
    template: str, values: dict[str, str]
) -> None:
    with pytest.raises(InvalidArgumentsError):
        url_path(template, **values)


@pytest.mark.parametrize(
    "path", ["//evil.example/steal", "https://evil.example/", "repos", "/a\\b"]
)
async def test_a_path_that_could_leave_base_url_is_refused(
    client: HttpClient, server: FakeServer, path: str
) -> None:
    with pytest.raises(InvalidArgumentsError):
        await client.request("GET", path)
    assert server.requests == []


async def test_base_url_path_prefix_is_kept(server: FakeServer) -> None:
    server.app.add_route("GET", "/api/v3/meta", lambda r: FakeResponse(200, json={"ghes": True}))
    async with HttpClient(f"{server.url}/api/v3", vendor="github") as http:
        resp = await http.request("GET", "/meta")
    assert resp.json == {"ghes": True}


def test_timeouts_are_validated_and_capped() -> None:
    assert Timeouts() == Timeouts(connect=5.0, read=30.0, total=60.0)
    assert Timeouts().capped_at(10) == Timeouts(connect=5.0, read=10, total=10)
    assert Timeouts().capped_at(None) == Timeouts()
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ConfigurationError):
            Timeouts(read=bad)


# --- TLS ---------------------------------------------------------------------------------


@pytest.fixture
def tls_server(fake: Issues) -> Iterator[FakeServer]:
    with FakeServer(fake.app, tls=True) as running:
        yield running


async def test_tls_with_a_custom_ca_file_or_context(tls_server: FakeServer) -> None:
    verifiers: list[ssl.SSLContext | str] = [
        tls_server.client_ssl_context(),
        str(tls_server.ca_path),
    ]
    for verify in verifiers:
        async with HttpClient(tls_server.url, vendor="kubernetes", verify=verify) as http:
            resp = await http.request("GET", "/echo")
        assert resp.status == 200


async def test_an_untrusted_certificate_is_a_definite_connect_error(
    tls_server: FakeServer,
) -> None:
    async with HttpClient(tls_server.url, vendor="kubernetes") as http:
        with pytest.raises(ToolError) as caught:
            await http.request("POST", "/echo")
    assert caught.value.code == "connect"
    assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    assert tls_server.requests == []


def test_a_missing_ca_path_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        HttpClient("https://k8s.example", vendor="kubernetes", verify=tmp_path / "missing.pem")
