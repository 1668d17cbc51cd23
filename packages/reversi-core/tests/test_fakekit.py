"""The fake-backend kit (reversi_core.testing): routing, recording, faults, TLS, shutdown."""

from __future__ import annotations

import gc
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Iterator

import httpx
import pytest

from reversi_core.testing import (
    FakeApp,
    FakeRequest,
    FakeResponse,
    FakeServer,
    FakeServerError,
    Fault,
    Faults,
)
from reversi_core.testing._app import parse_request


class Counter:
    """A fake with one piece of state, so a test can see whether a handler ran."""

    def __init__(self) -> None:
        self.app = FakeApp()
        self.value = 0
        self.app.add_route("POST", "/counter/increment", self.increment)
        self.app.add_route("GET", "/counter", self.read)
        self.app.add_route("GET", "/repos/{owner}/{repo}/git/refs/{ref:path}", self.ref)
        self.app.add_route("GET", "/users/{name}", self.user)
        self.app.add_route("POST", "/echo", self.echo)
        self.app.add_route("HEAD", "/counter", self.read)
        self.app.add_route("DELETE", "/counter", lambda request: FakeResponse(204))

    def increment(self, request: FakeRequest) -> FakeResponse:
        self.value += 1
        return FakeResponse(200, json={"value": self.value})

    def read(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(200, json={"value": self.value})

    def ref(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(200, json=dict(request.path_params))

    def user(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(200, json={"name": request.path_params["name"]})

    def echo(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(
            201, json={"json": request.json, "form": request.form, "text": request.text}
        )


@pytest.fixture
def counter() -> Counter:
    return Counter()


@pytest.fixture
def server(counter: Counter) -> Iterator[FakeServer]:
    with FakeServer(counter.app) as running:
        yield running


@pytest.fixture
def http(server: FakeServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=2.0) as client:
        yield client


def fake_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("FakeServer")]


# --- routing and recording ---------------------------------------------------------------


def test_routes_answer_with_path_params_decoded(http: httpx.Client) -> None:
    assert http.post("/counter/increment").json() == {"value": 1}
    assert http.get("/repos/o/r/git/refs/heads/feature/x").json() == {
        "owner": "o",
        "repo": "r",
        "ref": "heads/feature/x",
    }
    assert http.get("/users/a%2Fb%20c").json() == {"name": "a/b c"}


def test_unmatched_requests_get_a_json_404(http: httpx.Client) -> None:
    for method, path in [("GET", "/nowhere"), ("PUT", "/counter"), ("GET", "/users/a/b")]:
        resp = http.request(method, path)
        assert (resp.status_code, resp.json()) == (404, {"message": "Not Found"})


def test_a_custom_not_found() -> None:
    app = FakeApp(not_found=lambda r: FakeResponse(404, json={"error": "no_route", "p": r.path}))
    with FakeServer(app) as server, httpx.Client(base_url=server.url) as http:
        assert http.get("/x").json() == {"error": "no_route", "p": "/x"}


def test_every_request_is_recorded_with_target_headers_and_body(
    http: httpx.Client, server: FakeServer
) -> None:
    http.post("/echo", params={"a": "1", "b": "x y"}, json={"k": "v"}, headers={"X-Key": "abc"})
    http.post("/echo", data={"amount": "5", "currency": "eur"})
    http.get("/nowhere")
    first, second, third = server.requests
    assert (first.method, first.path, first.target) == ("POST", "/echo", "/echo?a=1&b=x+y")
    assert first.query == {"a": "1", "b": "x y"}
    assert first.headers["x-key"] == "abc"  # case-insensitive
    assert first.json == {"k": "v"}
    assert first.body == b'{"k":"v"}'
    assert first.fault is None
    assert second.form == {"amount": "5", "currency": "eur"}
    assert second.json is None
    assert (third.method, third.path, third.path_params) == ("GET", "/nowhere", {})
    server.clear_requests()
    assert server.requests == []


def test_a_chunked_body_is_read_whole(http: httpx.Client, server: FakeServer) -> None:
    resp = http.post("/echo", content=iter([b'{"a":', b' "chunked"}']))
    assert resp.json()["json"] == {"a": "chunked"}
    assert server.requests[-1].headers["transfer-encoding"] == "chunked"


def test_head_and_204_have_no_body(http: httpx.Client) -> None:
    head = http.head("/counter")
    assert (head.status_code, head.content) == (200, b"")
    assert int(head.headers["content-length"]) > 0
    deleted = http.delete("/counter")
    assert (deleted.status_code, deleted.content) == (204, b"")


def test_text_and_raw_bodies() -> None:
    app = FakeApp()
    app.add_route("GET", "/text", lambda r: FakeResponse(200, body="héllo"))
    app.add_route(
        "GET", "/raw", lambda r: FakeResponse(200, body=b"\x00\x01", headers={"Content-Type": "x"})
    )
    with FakeServer(app) as server, httpx.Client(base_url=server.url) as http:
        text = http.get("/text")
        assert (text.text, text.headers["content-type"]) == ("héllo", "text/plain; charset=utf-8")
        raw = http.get("/raw")
        assert (raw.content, raw.headers["content-type"]) == (b"\x00\x01", "x")


def test_a_response_takes_json_or_body_not_both() -> None:
    with pytest.raises(ValueError, match="not both"):
        FakeResponse(200, json={}, body="x")


def test_a_raising_handler_answers_500_and_fails_the_block() -> None:
    app = FakeApp()

    @app.route("GET", "/boom")
    def boom(request: FakeRequest) -> FakeResponse:
        raise RuntimeError("bug in the fake")

    responses: list[httpx.Response] = []

    def serve() -> None:
        with FakeServer(app) as server, httpx.Client(base_url=server.url) as http:
            responses.append(http.get("/boom"))

    with pytest.raises(FakeServerError, match="bug in the fake"):
        serve()
    assert responses[0].status_code == 500
    assert "bug in the fake" in responses[0].json()["message"]
    assert len(app.errors) == 1


def test_strict_false_keeps_handler_errors_without_raising() -> None:
    app = FakeApp()
    app.add_route("GET", "/bad", lambda r: "not a response")  # type: ignore[arg-type,return-value]
    with FakeServer(app, strict=False) as server, httpx.Client(base_url=server.url) as http:
        assert http.get("/bad").status_code == 500
    assert isinstance(app.errors[0], TypeError)


# --- faults ------------------------------------------------------------------------------


def test_a_fault_is_counted_and_spent_after_times(
    http: httpx.Client, server: FakeServer, counter: Counter
) -> None:
    armed = server.faults.add(Fault.status(503), method="POST", times=2)
    assert (armed.hits, armed.remaining) == (0, 2)
    assert [http.post("/counter/increment").status_code for _ in range(3)] == [503, 503, 200]
    assert (armed.hits, armed.remaining) == (2, 0)
    assert server.faults.armed == []
    assert counter.value == 1  # the faulted calls never reached the handler
    assert [r.fault for r in server.requests] == ["status", "status", None]


def test_times_none_lasts_until_cleared(http: httpx.Client, server: FakeServer) -> None:
    armed = server.faults.add(Fault.status(500), times=None)
    assert [http.get("/counter").status_code for _ in range(4)] == [500] * 4
    assert (armed.hits, armed.remaining) == (4, None)
    server.faults.clear()
    assert http.get("/counter").status_code == 200


def test_faults_match_method_path_template_and_prefix(
    http: httpx.Client, server: FakeServer
) -> None:
    by_method = server.faults.add(Fault.status(500), method="get", times=None)
    assert http.post("/counter/increment").status_code == 200
    assert http.get("/counter").status_code == 500
    assert by_method.hits == 1
    server.faults.clear()

    server.faults.add(Fault.status(502), path="/users/{name}")
    assert http.get("/users/x/extra").status_code == 404  # {name} is one segment
    assert http.get("/users/someone").status_code == 502
    assert http.get("/users/someone").status_code == 200  # spent

    server.faults.add(Fault.status(503), method="GET", path_prefix="/repos/")
    assert http.post("/repos/o/r/git/refs/x").status_code == 404  # wrong method: no fault
    assert http.get("/counter").status_code == 200  # wrong prefix: no fault
    assert http.get("/repos/o/r/git/refs/x").status_code == 503


def test_a_writes_fault_takes_only_requests_that_can_change_something(
    http: httpx.Client, server: FakeServer
) -> None:
    armed = server.faults.add(Fault.status(503), writes=True, times=None)
    assert http.get("/counter").status_code == 200
    assert http.head("/counter").status_code == 200
    assert http.post("/counter/increment").status_code == 503
    assert http.delete("/counter").status_code == 503
    assert armed.hits == 2
    assert "writes=True" in repr(armed)
    server.faults.clear()
    only_posts = server.faults.add(Fault.status(500), writes=True, method="POST", times=None)
    assert http.delete("/counter").status_code == 204  # a write, but not the method asked for
    assert http.post("/counter/increment").status_code == 500
    assert only_posts.hits == 1


def _is_mutation(request: FakeRequest) -> bool:
    body = request.json if isinstance(request.json, dict) else {}
    return str(body.get("query", "")).lstrip().startswith("mutation")


def test_a_writes_fault_lands_on_what_the_route_says_writes_not_on_every_post() -> None:
    """One POST route serving reads and writes (GraphQL): the route's predicate decides."""
    app = FakeApp()
    seen: list[str] = []

    def graphql(request: FakeRequest) -> FakeResponse:
        seen.append(str((request.json or {}).get("query")))
        return FakeResponse(200, json={"data": {}})

    app.add_route("POST", "/graphql", graphql, writes=_is_mutation)
    app.add_route("POST", "/search", graphql, writes=False)
    query, mutation = {"query": "query { viewer { id } }"}, {"query": "mutation { x }"}
    with FakeServer(app) as server, httpx.Client(base_url=server.url, timeout=2.0) as http:
        armed = server.faults.add(Fault.status(503), writes=True, times=None)
        assert http.post("/graphql", json=query).status_code == 200
        assert http.post("/search", json=mutation).status_code == 200  # declared not writing
        assert http.post("/graphql", json=mutation).status_code == 503
        assert http.post("/nowhere", json=query).status_code == 503  # no route: by its method
        assert armed.hits == 2
        assert [r.writes for r in server.requests] == [False, False, True, True]
        assert [r.fault for r in server.requests] == [None, None, "status", "status"]
    assert seen == [query["query"], mutation["query"]]


def test_an_app_judges_writes_by_route_then_by_method() -> None:
    app = FakeApp()
    app.add_route("POST", "/graphql", lambda r: FakeResponse(200), writes=_is_mutation)
    app.add_route("GET", "/things", lambda r: FakeResponse(200))

    def request(method: str, target: str, body: bytes = b"") -> FakeRequest:
        return parse_request(app, method, target, httpx.Headers(), body)

    assert app.writes(request("POST", "/graphql", b'{"query": "mutation { a }"}')) is True
    assert app.writes(request("POST", "/graphql", b'{"query": "{ a }"}')) is False
    assert app.writes(request("GET", "/things?x=1")) is False
    assert app.writes(request("PUT", "/unknown")) is True
    assert app.writes(request("OPTIONS", "/unknown")) is False
    # a fault asked about a request nobody judged falls back to the method
    armed = Fault.status(500)
    faults = Faults()
    faults.add(armed, writes=True)
    assert faults.take("GET", "/x") is None
    assert faults.take("POST", "/x", writes=False) is None
    assert faults.take("POST", "/x") is armed


def test_the_first_armed_fault_that_matches_wins(http: httpx.Client, server: FakeServer) -> None:
    server.faults.add(Fault.status(429), path="/counter")
    server.faults.add(Fault.status(500))
    assert [http.get("/counter").status_code for _ in range(3)] == [429, 500, 200]


def test_status_fault_body_headers_and_apply(
    http: httpx.Client, server: FakeServer, counter: Counter
) -> None:
    server.faults.add(Fault.status(403))
    resp = http.get("/counter")
    assert (resp.status_code, resp.json()) == (403, {"message": "injected fault: HTTP 403"})
    server.faults.add(
        Fault.status(
            403,
            json={"message": "API rate limit exceeded"},
            headers={"x-ratelimit-remaining": "0"},
        )
    )
    resp = http.get("/counter")
    assert resp.json() == {"message": "API rate limit exceeded"}
    assert resp.headers["x-ratelimit-remaining"] == "0"
    server.faults.add(Fault.status(504, apply=True))
    assert http.post("/counter/increment").status_code == 504
    assert counter.value == 1  # a gateway error in front of a backend that did the write


@pytest.mark.parametrize("apply", [False, True])
def test_drop_after_read_closes_without_a_reply(
    http: httpx.Client, server: FakeServer, counter: Counter, apply: bool
) -> None:
    server.faults.add(Fault.drop_after_read(apply=apply), method="POST")
    with pytest.raises(httpx.RemoteProtocolError):
        http.post("/counter/increment", json={"big": "x" * 100_000})
    assert counter.value == (1 if apply else 0)
    recorded = server.requests[-1]
    assert recorded.fault == "drop_after_read"
    assert len(recorded.body) > 100_000  # the whole request was read first
    assert http.post("/counter/increment").status_code == 200  # next connection is fine


def test_hang_outlasts_the_client_timeout_and_ends_with_the_server(counter: Counter) -> None:
    with FakeServer(counter.app) as server:
        server.faults.add(Fault.hang(30, apply=True), method="POST")
        with httpx.Client(base_url=server.url, timeout=0.2) as http:
            started = time.monotonic()
            with pytest.raises(httpx.ReadTimeout):
                http.post("/counter/increment")
            assert time.monotonic() - started < 2
        assert counter.value == 1
        closing = time.monotonic()
    assert time.monotonic() - closing < 2  # the 30 s hang was cut short by close()
    assert fake_threads() == []


def test_a_short_hang_closes_the_connection_after_its_time(
    http: httpx.Client, server: FakeServer
) -> None:
    server.faults.add(Fault.hang(0.1))
    with pytest.raises(httpx.RemoteProtocolError):
        http.get("/counter")


def test_bad_faults_are_refused() -> None:
    with pytest.raises(ValueError, match="not an HTTP status"):
        Fault.status(99)
    with pytest.raises(ValueError, match="seconds"):
        Fault.hang(-1)


def test_times_must_be_positive(server: FakeServer) -> None:
    with pytest.raises(ValueError, match="times"):
        server.faults.add(Fault.drop_after_read(), times=0)


# --- life cycle --------------------------------------------------------------------------


def test_shutdown_is_clean_fast_and_idempotent(counter: Counter) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        server = FakeServer(counter.app).start()
        port = server.port
        # a keep-alive connection the client never closes, and a raw idle connection
        lingering = httpx.Client(base_url=server.url)
        assert lingering.get("/counter").status_code == 200
        idle = socket.create_connection(("127.0.0.1", port))
        server.close()
        server.close()
        lingering.close()
        idle.close()
        elapsed = time.monotonic() - started
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert elapsed < 1.5
    assert fake_threads() == []
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass


def test_each_server_gets_its_own_port(counter: Counter) -> None:
    with FakeServer(counter.app) as one, FakeServer(counter.app) as two:
        assert one.port != two.port
        assert one.url == f"http://127.0.0.1:{one.port}"


# --- TLS ---------------------------------------------------------------------------------


def test_tls_serves_https_with_a_throwaway_ca(counter: Counter) -> None:
    with FakeServer(counter.app, tls=True) as server:
        assert server.url.startswith("https://127.0.0.1:")
        with httpx.Client(base_url=server.url, verify=server.client_ssl_context()) as http:
            assert http.get("/counter").json() == {"value": 0}
        ca_file = server.ca_path
        assert ca_file.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
        with httpx.Client(
            base_url=server.url, verify=ssl.create_default_context(cafile=str(ca_file))
        ) as http:
            assert http.get("/counter").status_code == 200
        # a client that does not trust the CA fails the handshake; the server carries on
        with httpx.Client(base_url=server.url) as untrusting, pytest.raises(httpx.ConnectError):
            untrusting.get("/counter")
        with httpx.Client(base_url=server.url, verify=server.client_ssl_context()) as http:
            assert http.get("/counter").status_code == 200
    assert not ca_file.exists()


def test_tls_with_a_given_ca(counter: Counter) -> None:
    import trustme

    ca = trustme.CA()
    with FakeServer(counter.app, tls=ca) as server:
        assert server.ca is ca
        context = ssl.create_default_context()
        ca.configure_trust(context)
        with httpx.Client(base_url=server.url, verify=context) as http:
            assert http.get("/counter").status_code == 200


def test_tls_serves_a_given_certificate(counter: Counter) -> None:
    import datetime as dt

    import trustme

    ca = trustme.CA()
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    # a certificate for another name: the CA is trusted, the name is not the one dialled
    other_name = ca.issue_cert("kubernetes.default.svc")
    with FakeServer(counter.app, tls=ca, certificate=other_name) as server:
        with (
            httpx.Client(base_url=server.url, verify=trusting) as http,
            pytest.raises(httpx.ConnectError, match=r"not valid for '127\.0\.0\.1'"),
        ):
            http.get("/counter")
        assert server.requests == []
    # an expired certificate for the right name
    past = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
    expired = ca.issue_cert("127.0.0.1", not_before=past - dt.timedelta(days=30), not_after=past)
    with (
        FakeServer(counter.app, tls=ca, certificate=expired) as server,
        httpx.Client(base_url=server.url, verify=trusting) as http,
        pytest.raises(httpx.ConnectError, match="certificate has expired"),
    ):
        http.get("/counter")
    # a good certificate served on purpose is used as it is
    good = ca.issue_cert("127.0.0.1")
    with (
        FakeServer(counter.app, tls=ca, certificate=good) as server,
        httpx.Client(base_url=server.url, verify=trusting) as http,
    ):
        assert http.get("/counter").json() == {"value": 0}


def test_a_certificate_needs_tls(counter: Counter) -> None:
    import trustme

    with pytest.raises(ValueError, match="needs tls"):
        FakeServer(counter.app, certificate=trustme.CA().issue_cert("127.0.0.1"))


def test_tls_helpers_need_tls(server: FakeServer) -> None:
    with pytest.raises(RuntimeError):
        server.client_ssl_context()
    with pytest.raises(RuntimeError):
        _ = server.ca_path
