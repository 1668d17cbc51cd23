"""FakeLinear: the part of Linear's GraphQL API the connector uses, on the kit's vendor fake."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reversi_core.testing import FakeRequest, FakeResponse, RawAuth, VendorFake, vendor_route

from ._operation import Field, Operation, Variable, parse_operation, select

__all__ = ["ERROR_TYPES", "FakeLinear", "GraphQLError", "is_mutation"]

_GRAPHQL_DOCS = "https://linear.app/developers/graphql"
_RATE_DOCS = "https://linear.app/developers/rate-limiting"

ERROR_TYPES: Mapping[str, str] = {
    "AUTHENTICATION_ERROR": "authentication error",
    "FORBIDDEN": "forbidden",
    "RATELIMITED": "ratelimited",
    "INVALID_INPUT": "invalid input",
    "GRAPHQL_PARSE_FAILED": "graphql error",
    "GRAPHQL_VALIDATION_FAILED": "graphql error",
    "INTERNAL_SERVER_ERROR": "internal error",
}
"""Linear's ``extensions.type`` for each ``extensions.code`` the fake answers (the words
the Linear SDK maps to its error classes)."""

ISSUE_INPUT_FIELDS = frozenset({"teamId", "title", "description", "priority"})
"""The ``IssueCreateInput`` fields the fake models (a subset of Linear's)."""

COMMENT_INPUT_FIELDS = frozenset({"issueId", "body"})
"""The ``CommentCreateInput`` fields the fake models (a subset of Linear's)."""


class GraphQLError(Exception):
    """An error a resolver of the fake raises: Linear's message, code and HTTP status."""

    def __init__(
        self, message: str, code: str, *, status: int = 200, presentable: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.presentable = presentable


def _not_found(kind: str) -> GraphQLError:
    return GraphQLError(
        f"Entity not found: {kind}",
        "INVALID_INPUT",
        presentable=f"Could not find referenced {kind}.",
    )


def is_mutation(request: FakeRequest) -> bool:
    """Whether a GraphQL request is a mutation (a document that cannot be read changes nothing)."""
    body = request.json if isinstance(request.json, dict) else {}
    try:
        return parse_operation(str(body.get("query", ""))).kind == "mutation"
    except ValueError:
        return False


def _now() -> str:
    """The time as Linear writes it (``2026-12-01T09:00:00.000Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


class FakeLinear(VendorFake):
    """A fake of Linear's GraphQL API (``POST /graphql``): teams, issues and comments.

    ``api_key`` is the ``Authorization`` value that may read and write: a personal API
    key as it is, or ``"Bearer <OAuth token>"``; ``read_only_keys`` may only run
    queries (a mutation gets 400 ``FORBIDDEN``, as an OAuth token without the ``write``
    scope does). A missing or unknown ``Authorization`` gets 400
    ``AUTHENTICATION_ERROR``; an API key sent as ``Bearer <key>`` gets Linear's hint to
    drop the prefix (https://linear.app/developers/graphql#authentication).

    Every answer carries ``X-RateLimit-Requests-Limit``, ``-Remaining`` and ``-Reset``
    (epoch milliseconds); once ``rate_limit`` requests are used, every request gets 400
    ``RATELIMITED`` (https://linear.app/developers/rate-limiting). Errors come as
    ``{"errors": [{"message", "path", "extensions": {"code", "type",
    "userPresentableMessage"}}], "data": null}``: with HTTP 400 for a request refused as
    a whole (authentication, scope, rate limit, a document that does not parse or
    asks for what the fake does not serve), with HTTP 200 for an error while running it
    ("Entity not found", invalid input).

    Operations served: ``issue(id:)``, ``issueCreate``, ``commentCreate``,
    ``issueArchive`` and ``commentDelete``; the answer holds exactly the selected fields
    (a selected field the fake does not model is a broken fake: the handler raises).
    State is in :attr:`teams`, :attr:`issues` and :attr:`comments`; take :attr:`lock`
    to read or change it while requests may be in flight. :meth:`snapshot` returns it as
    plain data.
    """

    auth = RawAuth()

    def __init__(
        self,
        *,
        api_key: str,
        read_only_keys: Iterable[str] = (),
        rate_limit: int = 1500,
        web_url: str = "https://linear.app/reversi",
    ) -> None:
        super().__init__(token=api_key, read_only_tokens=read_only_keys, rate_limit=rate_limit)
        self.web_url = web_url.rstrip("/")
        self.teams: dict[str, dict[str, Any]] = {}
        """Teams by id: ``{"id", "key", "name", "state": <its default workflow state>, "next_number"}``."""
        self.issues: dict[str, dict[str, Any]] = {}
        """Issues by id, with the fields the fake models (Linear's names) and ``origin``."""
        self.comments: dict[str, dict[str, Any]] = {}
        """Comments by id: ``{"id", "body", "url", "issueId", "createdAt", "updatedAt"}``."""
        self.rate_reset_ms = int(time.time() * 1000) + 3_600_000
        self._ids = itertools.count(1)
        self._sync = itertools.count(1000)
        self._resolvers: dict[tuple[str, str], Callable[[Mapping[str, Any]], Any]] = {
            ("query", "issue"): self._issue,
            ("mutation", "issueCreate"): self._issue_create,
            ("mutation", "commentCreate"): self._comment_create,
            ("mutation", "issueArchive"): self._issue_archive,
            ("mutation", "commentDelete"): self._comment_delete,
        }

    # -- Linear's answers to what the kit checks -----------------------------------------

    def error(
        self, status: int, message: str, *, code: str | None = None, **extra: Any
    ) -> FakeResponse:
        """A GraphQL error answer: ``{"errors": [{"message", "extensions"}], "data": null}``."""
        code = code or ("INTERNAL_SERVER_ERROR" if status >= 500 else "INVALID_INPUT")
        extensions: dict[str, Any] = {"code": code, "type": ERROR_TYPES.get(code, "unknown")}
        if extra.get("presentable"):
            extensions["userPresentableMessage"] = extra["presentable"]
        item: dict[str, Any] = {"message": message, "extensions": extensions}
        if extra.get("path"):
            item["path"] = extra["path"]
        return FakeResponse(status, json={"errors": [item], "data": None})

    def not_found(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(
            404, json={"errors": [{"message": f"Cannot {request.method} {request.path}"}]}
        )

    def unauthorized(self, request: FakeRequest, *, presented: bool) -> FakeResponse:
        given = request.headers.get("authorization") or ""
        if given == f"Bearer {self.token}":
            message = (
                "It looks like you're trying to use an API key as a Bearer token. Remove the "
                "Bearer prefix from the Authorization header."
            )
        else:
            message = "Authentication required, not authenticated"
        return self.error(
            400,
            message,
            code="AUTHENTICATION_ERROR",
            presentable="You need to authenticate to access this operation.",
        )

    def read_only(self, request: FakeRequest) -> FakeResponse:
        return self.error(400, "Invalid scope: `write` required", code="FORBIDDEN")

    def rate_limited(self, request: FakeRequest) -> FakeResponse:
        answer = self.error(400, "Rate limit exceeded", code="RATELIMITED")
        return dataclasses.replace(answer, headers={"Retry-After": "60"})

    def rate_headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Requests-Limit": str(self.rate_limit),
            "X-RateLimit-Requests-Remaining": str(self.rate_remaining),
            "X-RateLimit-Requests-Reset": str(self.rate_reset_ms),
        }

    def malformed_body(self, request: FakeRequest, problem: str) -> FakeResponse:
        return self.error(
            400, f"POST body sent invalid JSON: {problem}", code="GRAPHQL_PARSE_FAILED"
        )

    # -- set-up and inspection ---------------------------------------------------------

    def new_id(self) -> str:
        """A fresh id in Linear's format (a version 4 UUID), reproducible run to run."""
        return str(uuid.UUID(int=next(self._ids), version=4))

    def add_team(self, key: str, name: str, *, team_id: str | None = None) -> dict[str, Any]:
        """Create a team (with a default workflow state "Todo") and return it."""
        with self.lock:
            ident = team_id or self.new_id()
            state = {"id": self.new_id(), "name": "Todo", "type": "unstarted", "color": "#e2e2e2"}
            team = {"id": ident, "key": key, "name": name, "state": state, "next_number": 1}
            self.teams[ident] = team
            return team

    def add_issue(
        self, team_id: str, title: str, *, description: str | None = None
    ) -> dict[str, Any]:
        """Put an issue in a team (``origin="seed"``) and return it."""
        with self.lock:
            return self._new_issue(self.teams[team_id], title, description, 0, origin="seed")

    def add_comment(self, issue_id: str, body: str) -> dict[str, Any]:
        """Put a comment on an issue and return it."""
        with self.lock:
            return self._new_comment(self.issues[issue_id], body)

    def find_issue(self, ref: str) -> dict[str, Any] | None:
        """The issue with id (or identifier, without regard to case) ``ref``, if any."""
        with self.lock:
            if ref in self.issues:
                return self.issues[ref]
            wanted = ref.upper()
            return next(
                (i for i in self.issues.values() if i["identifier"].upper() == wanted), None
            )

    def snapshot(self) -> dict[str, Any]:
        """Teams, issues and comments as plain data (what certification fingerprints)."""
        with self.lock:
            return copy.deepcopy(
                {"teams": self.teams, "issues": self.issues, "comments": self.comments}
            )

    # -- the route --------------------------------------------------------------------

    @vendor_route("POST", "/graphql", docs=_GRAPHQL_DOCS, writes=is_mutation, body="json")
    def graphql(self, request: FakeRequest) -> FakeResponse:
        """One GraphQL operation (https://linear.app/developers/graphql).

        The request body is ``{"query", "variables"?, "operationName"?}``; the answer
        ``{"data": {<root field>: ...}}`` or an error answer (see the class docstring).
        """
        body = request.json if isinstance(request.json, dict) else {}
        document = body.get("query")
        if not isinstance(document, str):
            return self.error(400, "Must provide query string.", code="GRAPHQL_PARSE_FAILED")
        try:
            operation = parse_operation(document)
        except ValueError as exc:
            return self.error(400, str(exc), code="GRAPHQL_PARSE_FAILED")
        resolver = self._resolvers.get((operation.kind, operation.root.name))
        if resolver is None:
            on = "Mutation" if operation.kind == "mutation" else "Query"
            return self.error(
                400,
                f'Cannot query field "{operation.root.name}" on type "{on}".',
                code="GRAPHQL_VALIDATION_FAILED",
            )
        given = body.get("variables")
        variables: dict[str, Any] = given if isinstance(given, dict) else {}
        try:
            arguments = _arguments(operation, variables)
            value = resolver(arguments)
        except GraphQLError as exc:
            return self.error(
                exc.status,
                exc.message,
                code=exc.code,
                presentable=exc.presentable,
                path=[operation.root.name],
            )
        data = {operation.root.name: select(value, operation.root.selections, operation.root.name)}
        return FakeResponse(200, json={"data": data})

    # -- resolvers ----------------------------------------------------------------------

    def _issue_view(self, issue: dict[str, Any]) -> dict[str, Any]:
        """An issue as the GraphQL types read it (the fields the fake models)."""
        team = self.teams[issue["teamId"]]
        view = {k: v for k, v in issue.items() if k not in ("origin", "teamId", "stateId")}
        view["state"] = dict(team["state"])
        view["team"] = {"id": team["id"], "key": team["key"], "name": team["name"]}
        return view

    def _comment_view(self, comment: dict[str, Any]) -> dict[str, Any]:
        view = dict(comment)
        issue = self.issues.get(comment["issueId"])
        view["issue"] = self._issue_view(issue) if issue is not None else None
        return view

    def _payload(self, **fields: Any) -> dict[str, Any]:
        return {"success": True, "lastSyncId": float(next(self._sync)), **fields}

    def _issue(self, args: Mapping[str, Any]) -> Any:
        issue = self.find_issue(str(args.get("id")))
        if issue is None:
            raise _not_found("Issue")
        return self._issue_view(issue)

    def _issue_create(self, args: Mapping[str, Any]) -> Any:
        given = _input(args, "IssueCreateInput", ISSUE_INPUT_FIELDS)
        team = self.teams.get(str(given.get("teamId")))
        if team is None:
            raise _not_found("Team")
        title = given.get("title")
        if not isinstance(title, str) or not title.strip():
            raise GraphQLError(
                "Argument Validation Error",
                "INVALID_INPUT",
                presentable="title should not be empty",
            )
        priority = given.get("priority", 0)
        if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 4:
            raise GraphQLError(
                "Argument Validation Error",
                "INVALID_INPUT",
                presentable="priority must be between 0 and 4",
            )
        issue = self._new_issue(team, title, given.get("description"), priority, origin="api")
        return self._payload(issue=self._issue_view(issue))

    def _comment_create(self, args: Mapping[str, Any]) -> Any:
        given = _input(args, "CommentCreateInput", COMMENT_INPUT_FIELDS)
        issue = self.find_issue(str(given.get("issueId")))
        if issue is None:
            raise _not_found("Issue")
        body = given.get("body")
        if not isinstance(body, str) or not body.strip():
            raise GraphQLError(
                "Argument Validation Error", "INVALID_INPUT", presentable="body should not be empty"
            )
        return self._payload(comment=self._comment_view(self._new_comment(issue, body)))

    def _issue_archive(self, args: Mapping[str, Any]) -> Any:
        issue = self.find_issue(str(args.get("id")))
        if issue is None:
            raise _not_found("Issue")
        if issue["archivedAt"] is None:
            issue["archivedAt"] = issue["updatedAt"] = _now()
        return self._payload(entity=self._issue_view(issue))

    def _comment_delete(self, args: Mapping[str, Any]) -> Any:
        ident = str(args.get("id"))
        if self.comments.pop(ident, None) is None:
            raise _not_found("Comment")
        return self._payload(entityId=ident)

    # -- state changes ------------------------------------------------------------------

    def _new_issue(
        self, team: dict[str, Any], title: str, description: Any, priority: int, *, origin: str
    ) -> dict[str, Any]:
        number = team["next_number"]
        team["next_number"] += 1
        identifier = f"{team['key']}-{number}"
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "issue"
        stamp = _now()
        issue = {
            "id": self.new_id(),
            "identifier": identifier,
            "number": float(number),
            "title": title,
            "description": description if isinstance(description, str) and description else None,
            "priority": float(priority),
            "url": f"{self.web_url}/issue/{identifier}/{slug}",
            "archivedAt": None,
            "createdAt": stamp,
            "updatedAt": stamp,
            "teamId": team["id"],
            "origin": origin,
        }
        self.issues[issue["id"]] = issue
        return issue

    def _new_comment(self, issue: dict[str, Any], body: str) -> dict[str, Any]:
        ident = self.new_id()
        stamp = _now()
        comment = {
            "id": ident,
            "body": body,
            "url": f"{issue['url']}#comment-{ident[:8]}",
            "issueId": issue["id"],
            "createdAt": stamp,
            "updatedAt": stamp,
        }
        self.comments[ident] = comment
        return comment


def _arguments(operation: Operation, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The root field's arguments, variables resolved (a missing one is refused, as GraphQL does)."""
    resolved: dict[str, Any] = {}
    root: Field = operation.root
    for name, value in root.arguments.items():
        if isinstance(value, Variable):
            if value.name not in variables:
                raise GraphQLError(
                    f'Variable "${value.name}" of required type was not provided.',
                    "GRAPHQL_VALIDATION_FAILED",
                    status=400,
                )
            value = variables[value.name]
        resolved[name] = value
    return resolved


def _input(args: Mapping[str, Any], type_name: str, known: frozenset[str]) -> dict[str, Any]:
    """The ``input`` argument; refused as GraphQL would when it is not an object, or has
    fields the fake does not model."""
    given = args.get("input")
    if not isinstance(given, dict):
        raise GraphQLError(
            f'Variable "$input" of non-null type "{type_name}!" must not be null.',
            "GRAPHQL_VALIDATION_FAILED",
            status=400,
        )
    unknown = sorted(set(given) - known)
    if unknown:
        raise GraphQLError(
            f'Field "{unknown[0]}" is not defined by type "{type_name}" (in this fake).',
            "GRAPHQL_VALIDATION_FAILED",
            status=400,
        )
    return given
