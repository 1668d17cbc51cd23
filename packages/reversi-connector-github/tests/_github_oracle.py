"""The github connector's second oracle: githubkit's models of GitHub's REST API.

githubkit's models are generated from GitHub's own OpenAPI description
(https://github.com/github/rest-api-description); ``githubkit-schemas-2022-11-28`` holds
those of the API version the connector sends (``X-GitHub-Api-Version: 2022-11-28``). This
module records, at the HTTP level, every exchange the connector has with a
:class:`~reversi_connector_github.testing.FakeGitHub`, and checks each answer against the
model githubkit gives its route and status, three ways:

1. **strictly** (``TypeAdapter(model).validate_json(body, strict=True)``): the JSON types
   the description states, with no coercion (a ``number`` sent as ``"1"`` fails);
2. **as githubkit itself parses it**: the exchange is replayed through githubkit's own
   client (the operation named in :data:`ROUTES`, over an ``httpx.MockTransport`` that
   answers with the recorded bytes), and ``Response.parsed_data`` must succeed and be the
   model :data:`ROUTES` names. This also proves that :data:`ROUTES` names the model githubkit
   uses, and githubkit validates the connector's request body against the description's
   request model before it "sends" it;
3. a 204 must have no body, and a success status must be the one the route documents.

An error status that githubkit declares for a route is checked against the model it
declares (``BasicError``, ``ValidationError``); one it does not declare (a 401 on any
route, a 403 on a read) against ``BasicError``, the body GitHub's description gives every
error (its ``requires_authentication`` and ``forbidden`` responses are ``basic-error``).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import pydantic
from githubkit import GitHub
from githubkit.exception import RequestFailed
from githubkit_schemas.v2022_11_28.models import (
    BasicError,
    GitRef,
    Issue,
    IssueComment,
    Label,
    ReposOwnerRepoIssuesIssueNumberPatchResponse200,
    ValidationError,
)

from reversi_connector_github.connector import API_VERSION

__all__ = [
    "ROUTES",
    "Exchange",
    "RecordingTransport",
    "Route",
    "problems",
    "route_of",
]


@dataclass(frozen=True, eq=False)  # each route is one object: compared and hashed by identity
class Route:
    """One REST route the connector (or the fake) uses, and githubkit's models for it.

    ``template`` is GitHub's path template with githubkit's parameter names;
    ``operation`` githubkit's method for it (``"issues.get"`` is
    ``GitHub.rest("2022-11-28").issues.get``); ``ok`` the success status the route's
    documentation page gives, ``model`` its body (``None``: 204, no body); ``errors`` the
    error models githubkit declares by status.
    """

    method: str
    template: str
    operation: str
    docs: str
    ok: int
    model: Any
    errors: Mapping[int, Any]
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = re.escape(self.template)
        for name in re.findall(r"\{(\w+)\}", self.template):
            # a git reference spans segments (heads/agent/fix); every other value is one
            body = ".+" if name == "ref" else "[^/]+"
            regex = regex.replace(re.escape(f"{{{name}}}"), f"(?P<{name}>{body})")
        object.__setattr__(self, "pattern", re.compile(regex))

    def __str__(self) -> str:
        return f"{self.method} {self.template}"

    def model_for(self, status: int) -> tuple[Any, bool]:
        """``(model, declared)`` for an answer with ``status``; ``declared``: githubkit's own."""
        if status == self.ok:
            return self.model, True
        if status in self.errors:
            return self.errors[status], True
        return BasicError, False


_ISSUES = "https://docs.github.com/en/rest/issues"
_REFS = "https://docs.github.com/en/rest/git/refs"
_ISSUE_ERRORS = {404: BasicError, 410: BasicError}

ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        "issues.get",
        f"{_ISSUES}/issues#get-an-issue",
        200,
        Issue,
        _ISSUE_ERRORS,
    ),
    Route(
        "POST",
        "/repos/{owner}/{repo}/issues",
        "issues.create",
        f"{_ISSUES}/issues#create-an-issue",
        201,
        Issue,
        {400: BasicError, 403: BasicError, 404: BasicError, 410: BasicError, 422: ValidationError},
    ),
    Route(
        "PATCH",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        "issues.update",
        f"{_ISSUES}/issues#update-an-issue",
        200,
        # the description's answer is an Issue (allOf) plus optional "suggestions"
        ReposOwnerRepoIssuesIssueNumberPatchResponse200,
        {403: BasicError, 404: BasicError, 410: BasicError, 422: ValidationError},
    ),
    Route(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "issues.create_comment",
        f"{_ISSUES}/comments#create-an-issue-comment",
        201,
        IssueComment,
        {403: BasicError, 404: BasicError, 410: BasicError, 422: ValidationError},
    ),
    Route(
        "GET",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        "issues.get_comment",
        f"{_ISSUES}/comments#get-an-issue-comment",
        200,
        IssueComment,
        {404: BasicError},
    ),
    Route(
        "DELETE",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        "issues.delete_comment",
        f"{_ISSUES}/comments#delete-an-issue-comment",
        204,
        None,
        {},
    ),
    Route(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        "issues.list_labels_on_issue",
        f"{_ISSUES}/labels#list-labels-for-an-issue",
        200,
        list[Label],
        _ISSUE_ERRORS,
    ),
    Route(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        "issues.add_labels",
        f"{_ISSUES}/labels#add-labels-to-an-issue",
        200,
        list[Label],
        {**_ISSUE_ERRORS, 422: ValidationError},
    ),
    Route(
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
        "issues.remove_label",
        f"{_ISSUES}/labels#remove-a-label-from-an-issue",
        200,
        list[Label],
        _ISSUE_ERRORS,
    ),
    Route(
        "GET",
        "/repos/{owner}/{repo}/git/ref/{ref}",
        "git.get_ref",
        f"{_REFS}#get-a-reference",
        200,
        GitRef,
        {404: BasicError, 409: BasicError},
    ),
    Route(
        "POST",
        "/repos/{owner}/{repo}/git/refs",
        "git.create_ref",
        f"{_REFS}#create-a-reference",
        201,
        GitRef,
        {409: BasicError, 422: ValidationError},
    ),
    Route(
        "DELETE",
        "/repos/{owner}/{repo}/git/refs/{ref}",
        "git.delete_ref",
        f"{_REFS}#delete-a-reference",
        204,
        None,
        {409: BasicError},
    ),
)
"""Every route of the fake, with githubkit's operation and models (githubkit-schemas 2022-11-28)."""


@dataclass(frozen=True)
class Exchange:
    """One request the connector sent and the answer it got, as bytes on the wire.

    ``path`` is the raw (percent-encoded) path below the API root, without the query.
    """

    method: str
    path: str
    request_body: bytes
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def __str__(self) -> str:
        return f"{self.method} {self.path} -> {self.status}"


class RecordingTransport(httpx.AsyncHTTPTransport):
    """The real network transport, keeping every exchange in :attr:`exchanges`.

    A subclass of ``httpx.AsyncHTTPTransport`` so that the connector's HTTP layer treats
    it as the real thing (it traces requests only on that transport). ``api_root`` is the
    connector's ``base_url``: recorded paths are relative to it.
    """

    def __init__(self, api_root: str, exchanges: list[Exchange] | None = None) -> None:
        super().__init__()
        self._root = httpx.URL(api_root).raw_path.decode().rstrip("/")
        self.exchanges: list[Exchange] = exchanges if exchanges is not None else []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        body = await response.aread()
        raw_path = request.url.raw_path.decode().partition("?")[0]
        self.exchanges.append(
            Exchange(
                method=request.method,
                path=raw_path.removeprefix(self._root),
                request_body=request.content,
                status=response.status_code,
                headers=tuple(response.headers.multi_items()),
                body=body,
            )
        )
        # the body was read (and decoded) here: hand the client a copy that holds it
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(
            response.status_code,
            headers=headers,
            content=body,
            request=request,
            extensions=response.extensions,
        )


def route_of(
    exchange: Exchange, routes: Iterable[Route] = ROUTES
) -> tuple[Route, dict[str, str]] | None:
    """The route of ``routes`` an exchange went to and its decoded path parameters, or ``None``."""
    for route in routes:
        if route.method != exchange.method:
            continue
        found = route.pattern.fullmatch(exchange.path)
        if found:
            params = {k: urllib.parse.unquote(v) for k, v in found.groupdict().items()}
            return route, params
    return None


def _name(model: Any) -> str:
    """``Issue``, ``list[Label]``: a model as the report names it."""
    if getattr(model, "__origin__", None) is list:
        return f"list[{_name(model.__args__[0])}]"
    return str(getattr(model, "__name__", model))


def _where(loc: Iterable[int | str]) -> str:
    """A pydantic error location as a field path: ``labels[0].color``, ``(body)`` for the root.

    The tags pydantic adds for the members of a union (``list[union[str,...]]``) are left out.
    """
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif "[" not in part:
            text += f".{part}" if text else part
    return text or "(body)"


def _errors(error: pydantic.ValidationError) -> list[str]:
    """``field: message (got value)`` for each error, leaving out githubkit's "unset" branch.

    githubkit spells an optional field ``Missing[X]``, a union of ``X`` and its UNSET marker,
    so a wrong value there fails twice; the failure to be UNSET says nothing.
    """
    found = []
    for item in error.errors():
        if item.get("ctx", {}).get("expected") == "<UNSET>":
            continue
        text = f"{_where(item['loc'])}: {item['msg']}"
        if item["type"] != "missing":
            value = item["input"]
            got = type(value).__name__ if isinstance(value, dict | list) else repr(value)[:60]
            text += f" (got {got})"
        found.append(text)
    return found


def _validation_problems(
    route: Route, status: int, model: Any, how: str, error: pydantic.ValidationError
) -> list[str]:
    return [f"{route} -> {status}: {_name(model)} ({how}): {e}" for e in _errors(error)]


def _is_instance_of(parsed: Any, model: Any) -> bool:
    if getattr(model, "__origin__", None) is list:
        (item,) = model.__args__
        return isinstance(parsed, list) and all(isinstance(x, item) for x in parsed)
    return isinstance(parsed, model)


def _replay(route: Route, params: Mapping[str, str], exchange: Exchange) -> tuple[Any, str | None]:
    """Replay ``exchange`` through githubkit's own client; ``(parsed_data, problem)``.

    The operation is called with the recorded path parameters and request body (which
    githubkit validates against its request model); the mock transport checks that
    githubkit sends the recorded method and path, then answers with the recorded status,
    headers and body.
    """
    mismatch: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        path = urllib.parse.unquote(exchange.path)
        if (request.method, request.url.path) != (exchange.method, path):
            mismatch.append(
                f"githubkit's {route.operation} sent {request.method} {request.url.path}"
            )
        return httpx.Response(exchange.status, headers=exchange.headers, content=exchange.body)

    github = GitHub(
        "oracle-token",
        base_url="https://oracle.invalid/",
        transport=httpx.MockTransport(answer),
        http_cache=False,
        auto_retry=False,
    )
    group, _, name = route.operation.partition(".")
    operation: Callable[..., Any] = getattr(getattr(github.rest(API_VERSION), group), name)
    kwargs: dict[str, Any] = dict(params)
    if exchange.request_body:
        kwargs["data"] = pydantic.TypeAdapter(Any).validate_json(exchange.request_body)
    try:
        response = operation(**kwargs)
    except RequestFailed as failed:
        response = failed.response
    except pydantic.ValidationError as refused:
        details = "; ".join(_errors(refused))
        return None, f"{route}: githubkit refuses the connector's request body: {details}"
    if mismatch:
        return None, f"{route}: {mismatch[0]}, not {exchange.method} {exchange.path}"
    if not exchange.body:
        return None, None
    return response.parsed_data, None


def problems(exchange: Exchange, routes: Iterable[Route] = ROUTES) -> list[str]:
    """Everything in ``exchange`` that githubkit's models refuse (empty: it fits).

    Each problem names the route template, the status, the model and the field, such as
    ``POST /repos/{owner}/{repo}/issues/{issue_number}/comments -> 201: IssueComment
    (strict): id: Field required``.
    """
    found = route_of(exchange, routes)
    if found is None:
        return [f"{exchange}: no route of the oracle (add it to ROUTES with githubkit's models)"]
    route, params = found
    status = exchange.status
    if 200 <= status < 300 and status != route.ok:
        return [f"{route} -> {status}: the documented success status is {route.ok}"]
    if not 200 <= status < 300 and status < 400:
        return [f"{route} -> {status}: the fake answers with a status the oracle cannot check"]
    model, declared = route.model_for(status)
    found_problems: list[str] = []
    if model is None:
        if exchange.body:
            found_problems.append(f"{route} -> {status}: a 204 with a body")
    else:
        try:
            pydantic.TypeAdapter(model).validate_json(exchange.body, strict=True)
        except pydantic.ValidationError as error:
            found_problems += _validation_problems(route, status, model, "strict", error)
    try:
        parsed, problem = _replay(route, params, exchange)
    except pydantic.ValidationError as error:
        found_problems += _validation_problems(route, status, model, "githubkit", error)
    else:
        if problem is not None:
            found_problems.append(problem)
        elif model is not None and declared and not _is_instance_of(parsed, model):
            found_problems.append(
                f"{route} -> {status}: githubkit parses it as {type(parsed).__name__}, "
                f"not the {_name(model)} ROUTES names"
            )
        elif not declared and isinstance(parsed, pydantic.BaseModel):
            found_problems.append(
                f"{route} -> {status}: githubkit declares {type(parsed).__name__} for it; "
                "add it to the route's errors in ROUTES"
            )
    return found_problems
