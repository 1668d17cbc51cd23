"""The vendor fake base and the connector contract class, each shown to catch what it must."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any, ClassVar

import httpx
import pytest
from pydantic import BaseModel, ConfigDict

from reversi_core.connector import CallContext, Connector, tool
from reversi_core.errors import ManifestError
from reversi_core.manifest import Compensation, Effect
from reversi_core.testing import (
    BasicAuth,
    ConnectorContract,
    FakeRequest,
    FakeResponse,
    FakeServer,
    HeaderAuth,
    RawAuth,
    VendorFake,
    vendor_route,
)

TOKEN = "vnd_fake-base-token-0123456789"
READ_ONLY = "vnd_read-only-token-0123456789"
DOCS = "https://vendor.example/docs"


class FakeVendor(VendorFake):
    """Notes by id; errors as ``{"err": code, "msg": message}``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(token=TOKEN, read_only_tokens=[READ_ONLY], **kwargs)
        self.notes: dict[str, str] = {}

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        return FakeResponse(status, json={"err": code or "error", "msg": message})

    @vendor_route("GET", "/notes/{key}", docs=f"{DOCS}/get")
    def get_note(self, request: FakeRequest) -> FakeResponse:
        key = request.path_params["key"]
        if key not in self.notes:
            return self.not_found(request)
        return FakeResponse(200, json={"key": key, "text": self.notes[key]})

    @vendor_route("PUT", "/notes/{key}", docs=f"{DOCS}/put", body="json")
    def put_note(self, request: FakeRequest) -> FakeResponse:
        self.notes[request.path_params["key"]] = request.json["text"]
        return FakeResponse(200, json={"ok": True})

    @vendor_route("POST", "/search", docs=f"{DOCS}/search", writes=False, body="form")
    def search(self, request: FakeRequest) -> FakeResponse:
        wanted = request.form.get("q", "")
        return FakeResponse(200, json=sorted(k for k, v in self.notes.items() if wanted in v))


@pytest.fixture
def vendor() -> FakeVendor:
    return FakeVendor(rate_limit=5)


@pytest.fixture
def client(vendor: FakeVendor) -> Iterator[httpx.Client]:
    with FakeServer(vendor) as server, httpx.Client(base_url=server.url) as http:
        yield http


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_routes_are_registered_in_order_and_cite_their_page(vendor: FakeVendor) -> None:
    assert [(r.method, r.template, r.docs) for r in vendor.routes] == [
        ("GET", "/notes/{key}", f"{DOCS}/get"),
        ("PUT", "/notes/{key}", f"{DOCS}/put"),
        ("POST", "/search", f"{DOCS}/search"),
    ]
    assert [r.writes for r in vendor.routes] == [False, True, False]


def test_a_route_that_cites_no_page_is_refused() -> None:
    class Careless(VendorFake):
        @vendor_route("GET", "/x", docs="see the wiki")
        def x(self, request: FakeRequest) -> FakeResponse:
            return FakeResponse(200)

    with pytest.raises(ValueError, match="cite the vendor documentation page"):
        Careless(token=TOKEN)


def test_credentials_are_checked_before_any_route(client: httpx.Client, vendor: FakeVendor) -> None:
    missing = client.get("/notes/a")
    assert (missing.status_code, missing.json()) == (
        401,
        {"err": "error", "msg": "Requires authentication"},
    )
    wrong = client.get("/notes/a", headers=bearer("vnd_wrong-token-000000"))
    assert (wrong.status_code, wrong.json()["msg"]) == (401, "Bad credentials")
    scheme = client.get("/notes/a", headers={"Authorization": f"Basic {TOKEN}"})
    assert scheme.status_code == 401
    assert vendor.rate_remaining == 5  # refusals before the budget are not counted


def test_a_read_only_token_reads_and_cannot_write(client: httpx.Client, vendor: FakeVendor) -> None:
    assert client.get("/notes/a", headers=bearer(READ_ONLY)).status_code == 404
    refused = client.put("/notes/a", json={"text": "x"}, headers=bearer(READ_ONLY))
    assert refused.status_code == 403
    assert vendor.notes == {}
    # a route declared as not writing (a search by POST) is open to it
    assert client.post("/search", data={"q": "x"}, headers=bearer(READ_ONLY)).status_code == 200


def test_the_rate_limit_answers_429_with_retry_after_once_used_up(
    client: httpx.Client, vendor: FakeVendor
) -> None:
    statuses = [client.get("/notes/a", headers=bearer()).status_code for _ in range(6)]
    assert statuses == [404] * 5 + [429]
    limited = client.get("/notes/a", headers=bearer())
    assert limited.headers["retry-after"] == "60"
    vendor.reset_rate_limit()
    assert client.get("/notes/a", headers=bearer()).status_code == 404


def test_a_body_the_route_cannot_parse_gets_the_vendors_error(
    client: httpx.Client, vendor: FakeVendor
) -> None:
    bad = client.put("/notes/a", content=b"{not json", headers=bearer())
    assert bad.status_code == 400
    assert bad.json()["msg"].startswith("Problems parsing the request body: not JSON")
    assert vendor.notes == {}
    assert client.put("/notes/a", json={"text": "hi"}, headers=bearer()).status_code == 200
    assert client.get("/notes/a", headers=bearer()).json() == {"key": "a", "text": "hi"}


def test_the_server_keeps_each_request_with_its_answer(vendor: FakeVendor) -> None:
    with FakeServer(vendor) as server, httpx.Client(base_url=server.url) as http:
        http.put("/notes/a", json={"text": "hi"}, headers=bearer())
        http.get("/notes/zzz", headers=bearer())
        pairs = [
            (e.request.method, e.response.status if e.response else None) for e in server.exchanges
        ]
    assert pairs == [("PUT", 200), ("GET", 404)]


@pytest.mark.parametrize(
    ("scheme", "headers", "expected"),
    [
        (HeaderAuth("PRIVATE-TOKEN"), {"PRIVATE-TOKEN": "glpat-1"}, "glpat-1"),
        (HeaderAuth("PRIVATE-TOKEN"), {}, None),
        (
            BasicAuth(),
            {"Authorization": "Basic " + base64.b64encode(b"me@x:tok").decode()},
            "me@x:tok",
        ),
        (BasicAuth(), {"Authorization": "Basic !!!"}, ""),
        (RawAuth(), {"Authorization": "lin_api_key"}, "lin_api_key"),
    ],
)
def test_auth_schemes_read_the_credential(
    scheme: Any, headers: dict[str, str], expected: str | None
) -> None:
    request = FakeRequest("GET", "/", "/", httpx.Headers(headers))
    assert scheme.credential(request) == expected


# -- the contract --------------------------------------------------------------------


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str


class _Open(BaseModel):
    key: str


class _Out(BaseModel):
    key: str


class Sloppy(Connector):
    """A connector that breaks contract rules: an open input schema, and an undo mapped wrongly."""

    name = "sloppy"

    @tool(
        effect=Effect.REVERSIBLE,
        permission="p",
        input=_Open,
        output=_Out,
        compensation=Compensation(
            tool="sloppy.undo", argument_map={"key": "args.key", "x": "args.key"}
        ),
    )
    async def do(self, args: _Open, ctx: CallContext) -> dict[str, Any]:
        """Do it."""
        return {"key": args.key}

    @tool(effect=Effect.IDEMPOTENT, permission="p", input=_Closed, output=_Out)
    async def undo(self, args: _Closed, ctx: CallContext) -> dict[str, Any]:
        """Undo it."""
        return {}


class SloppyContract(ConnectorContract):
    connector: ClassVar[type[Connector]] = Sloppy


def test_the_contract_catches_an_open_schema_and_a_map_the_undo_does_not_take() -> None:
    contract = SloppyContract()
    with pytest.raises(AssertionError, match=r"sloppy\.do is open"):
        contract.test_input_schemas_are_closed()
    with pytest.raises(AssertionError, match=r"sloppy\.do"):
        contract.test_argument_maps_are_exact()
    with pytest.raises(ManifestError, match=r"sloppy\.do"):
        contract.test_manifests_form_a_registry()
    with pytest.raises(AssertionError, match=r"no reversi\.certification entry point named sloppy"):
        contract.test_certification_fixture_found_by_its_entry_point()
    contract.test_every_tool_declares_its_result()  # this one it keeps


def test_overriding_a_contract_test_needs_a_reason() -> None:
    with pytest.raises(TypeError, match="without saying why"):

        class Quiet(ConnectorContract):
            connector = Sloppy

            def test_input_schemas_are_closed(self) -> None:
                return None

    with pytest.raises(TypeError, match="without saying why"):

        class Removed(ConnectorContract):
            connector = Sloppy
            test_every_tool_declares_its_result = None  # type: ignore[assignment]

    class Explained(ConnectorContract):
        connector = Sloppy
        waived: ClassVar[dict[str, str]] = {
            "test_input_schemas_are_closed": "this connector's schemas are generated by the vendor and open"
        }

        def test_input_schemas_are_closed(self) -> None:
            return None

    assert Explained.waived

    with pytest.raises(TypeError, match="does not have"):

        class Typo(ConnectorContract):
            connector = Sloppy
            waived: ClassVar[dict[str, str]] = {
                "test_no_such_test": "a reason that has six words in it"
            }
