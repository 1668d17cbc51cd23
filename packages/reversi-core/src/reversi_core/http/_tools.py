"""Tools that are one HTTP request, declared as data.

A tool that sends one request and keeps a few fields of the answer needs no code of
its own::

    class GithubConnector(HttpConnector):
        delete_comment = RequestTool(
            "DELETE",
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            effect=Effect.IDEMPOTENT,
            permission="github:issues:write",
            input=DeleteCommentArgs,
            output=DeleteCommentResult,
            summary="Delete an issue comment; one already gone (404) counts as success.",
            docs="https://docs.github.com/en/rest/issues/comments#delete-an-issue-comment",
            already_done=(404,),
            echo=("owner", "repo", "comment_id"),
            done_field="deleted",
        )

The path's ``{placeholders}`` are filled from the input fields of the same name,
percent-encoded (:func:`reversi_core.http.url_path`; ``{name:path}`` keeps ``/``).
``body`` names the input fields sent as the JSON (or, with ``form=True``, form) body,
or is a function of the validated arguments; ``query`` names the fields sent in the
query string. The result holds the ``echo`` fields of the arguments, the answer's
fields named by ``keep`` (``{result field: dotted path in the answer}``), and with
``done_field`` a flag that is false when the vendor answered one of the
``already_done`` statuses (an undo whose target is already gone). A ``keep`` that is a
function ``(connector, args, answer) -> dict`` builds the result itself. ``required`` fields of
``keep`` must be in the answer: after an accepted write their absence makes the call
uncertain (the change happened but cannot be described, so it cannot be undone).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..connector import CallContext, ToolSpec
from ..errors import ToolError
from ..manifest import Approval, Compensation, Effect, Replay, Requirement
from ._client import READ_METHODS, HttpResponse, url_path
from ._errors import body_value

if TYPE_CHECKING:
    from ._connector import HttpConnector

__all__ = ["AlreadyDone", "RequestTool"]

AlreadyDone = int | tuple[int, str]
"""A status, or a ``(status, vendor code)`` pair, that means the undo's goal is already met."""

_PLACEHOLDER = re.compile(r"\{(\w+)(?::path)?\}")

KeepFunction = Callable[[Any, Any, HttpResponse], dict[str, Any]]
"""``(connector, validated args, answer) -> result fields``, for results data cannot describe."""


class RequestTool:
    """A tool that is one request (see the module docstring); a class attribute of a connector.

    Raises ``TypeError`` when the class is created if a path placeholder, ``body``,
    ``query``, ``echo`` or ``required`` name a field the input model does not have, or
    ``required`` names a field ``keep`` does not produce.
    """

    def __init__(
        self,
        method: str,
        path: str,
        *,
        effect: Effect,
        permission: str,
        input: type[BaseModel],
        output: type[BaseModel],
        summary: str,
        docs: str,
        compensation: Compensation | None = None,
        approval: Approval | None = None,
        requires: Iterable[Requirement] = (),
        replay: Replay | None = None,
        body: Sequence[str] | Callable[[Any], Any] | None = None,
        form: bool = False,
        query: Sequence[str] = (),
        echo: Sequence[str] = (),
        keep: Mapping[str, str] | KeepFunction | None = None,
        required: Sequence[str] = (),
        already_done: Collection[AlreadyDone] = (),
        done_field: str | None = None,
        details: str = "",
    ) -> None:
        if not docs.startswith("https://"):
            raise TypeError(
                f"RequestTool {method} {path}: docs must be the vendor page's https URL"
            )
        self.method = method.upper()
        self.path = path
        self.input = input
        self.body = body
        self.form = form
        self.query = tuple(query)
        self.echo = tuple(echo)
        self.keep = keep
        self.required = tuple(required)
        self.already_done = frozenset(already_done)
        self.done_field = done_field
        self.docs = docs
        self._check_fields()
        self._spec_args: dict[str, Any] = {
            "effect": effect,
            "permission": permission,
            "input": input,
            "output": output,
            "description": " ".join(summary.split()),
            "compensation": compensation,
            "approval": approval
            if approval is not None
            else (Approval.ALWAYS if effect is Effect.IRREVERSIBLE else Approval.NEVER),
            "requires": tuple(requires),
            "replay": replay,
        }
        self.__doc__ = self._docstring(summary, details)
        self._spec: ToolSpec | None = None

    def _check_fields(self) -> None:
        fields = set(self.input.model_fields)
        named = {
            "path": _PLACEHOLDER.findall(self.path),
            "body": list(self.body) if isinstance(self.body, list | tuple) else [],
            "query": list(self.query),
            "echo": list(self.echo),
        }
        for where, names in named.items():
            missing = sorted(set(names) - fields)
            if missing:
                raise TypeError(
                    f"RequestTool {self.method} {self.path}: {where} names {missing}, which "
                    f"{self.input.__name__} does not have"
                )
        if self.required and not isinstance(self.keep, Mapping):
            raise TypeError(f"RequestTool {self.method} {self.path}: required needs a keep mapping")
        if isinstance(self.keep, Mapping):
            missing = sorted(set(self.required) - set(self.keep))
            if missing:
                raise TypeError(
                    f"RequestTool {self.method} {self.path}: required names {missing}, which keep "
                    "does not produce"
                )

    def _docstring(self, summary: str, details: str) -> str:
        text = f"{summary}\n\n``{self.method} {self.path}`` ({self.docs})."
        if details:
            text += f" {details}"
        if self.already_done:
            shown = ", ".join(
                f"{d[0]} {d[1]}" if isinstance(d, tuple) else str(d)
                for d in sorted(
                    self.already_done, key=lambda d: d if isinstance(d, tuple) else (d, "")
                )
            )
            text += f" An answer of {shown} means the goal is already met."
        writes = self._spec_args["effect"] is not Effect.READ_ONLY
        text += " Raises ``ToolError`` naming the HTTP status and the vendor's code"
        text += (
            "; ``EffectUncertainError`` when the answer was lost or did not come in time."
            if writes
            else "."
        )
        return text

    # -- the connector's view -------------------------------------------------------

    def __set_name__(self, owner: type, name: str) -> None:
        self._spec = ToolSpec(method=name, doc=self.__doc__ or "", **self._spec_args)

    @property
    def __reversi_tool__(self) -> ToolSpec:  # the attribute Connector collects tools by
        if self._spec is None:
            raise TypeError("a RequestTool must be assigned to a connector class attribute")
        return self._spec

    def __get__(self, connector: HttpConnector | None, owner: type | None = None) -> Any:
        if connector is None:
            return self

        async def call(args: BaseModel, ctx: CallContext) -> dict[str, Any]:
            return await self.run(connector, args, ctx)

        return call

    # -- running --------------------------------------------------------------------

    async def run(
        self, connector: HttpConnector, args: BaseModel, ctx: CallContext
    ) -> dict[str, Any]:
        """Send the request for ``args`` and shape the tool's result from the answer."""
        values = args.model_dump()
        segments = {name: values[name] for name in _PLACEHOLDER.findall(self.path)}
        path = url_path(self.path, **segments)
        payload = self._payload(args, values)
        params = {k: values[k] for k in self.query if values[k] is not None} or None
        done_statuses = {d for d in self.already_done if isinstance(d, int)}
        done_codes = {d for d in self.already_done if isinstance(d, tuple)}
        try:
            resp = await connector.request(
                ctx,
                self.method,
                path,
                params=params,
                json=None if self.form else payload,
                data=payload if self.form else None,
                ok_statuses=done_statuses,
            )
        except ToolError as exc:
            if (exc.status, exc.code) not in done_codes:
                raise
            return self._echoed(values, done=True)
        if resp.status in done_statuses:
            return self._echoed(values, done=True)
        return self._result(connector, args, values, resp)

    def _payload(self, args: BaseModel, values: Mapping[str, Any]) -> Any:
        if self.body is None:
            return None
        if callable(self.body):
            return self.body(args)
        return {name: values[name] for name in self.body if values[name] is not None}

    def _echoed(self, values: Mapping[str, Any], *, done: bool) -> dict[str, Any]:
        """The echoed arguments, and the ``done_field`` flag (false when already done)."""
        result = {name: values[name] for name in self.echo}
        if self.done_field is not None:
            result[self.done_field] = not done
        return result

    def _result(
        self,
        connector: HttpConnector,
        args: BaseModel,
        values: Mapping[str, Any],
        resp: HttpResponse,
    ) -> dict[str, Any]:
        wrote = (
            self._spec_args["effect"] is not Effect.READ_ONLY and self.method not in READ_METHODS
        )
        result = self._echoed(values, done=False)
        if callable(self.keep):
            result.update(self.keep(connector, args, resp))
            return result
        if self.keep:
            answer = connector.expect_object(resp, "answer", wrote=wrote)
            for field_name, where in self.keep.items():
                value = body_value(answer, where)
                if value is None and field_name in self.required:
                    raise connector.malformed(f"has no {where!r}", resp, wrote=wrote)
                result[field_name] = value
        return result
