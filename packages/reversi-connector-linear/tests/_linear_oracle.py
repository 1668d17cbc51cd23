"""The second oracle: Linear's published GraphQL schema, read with graphql-core.

:func:`document_problems` validates a document the connector sent against the schema
(unknown fields, arguments, variable types); :func:`answer_problems` checks an answer the
fake gave against the types of the selection it answers, by executing the same document
over the fake's own ``data`` (graphql-core's default resolver reads dict keys) and
comparing: a non-null field that is null, a value of the wrong type, a field that was not
selected, a ``DateTime`` that is not ISO 8601 each come back as a problem. GraphQL error
answers are checked against the response format of the GraphQL specification
(https://spec.graphql.org/October2021/#sec-Response-Format).
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from typing import Any

import graphql

SCHEMA_FILE = Path(__file__).resolve().parent / "vendor" / "linear" / "schema.graphql"


def _date_time(value: Any) -> str:
    """Linear's ``DateTime``: an ISO 8601 timestamp string (the SDL leaves the scalar open)."""
    if not isinstance(value, str):
        raise graphql.GraphQLError(f"DateTime cannot represent {value!r}")
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise graphql.GraphQLError(f"DateTime cannot represent {value!r}") from None
    return value


@functools.cache
def schema() -> graphql.GraphQLSchema:
    """Linear's schema, built once, with ``DateTime`` checked on output."""
    built = graphql.build_schema(SCHEMA_FILE.read_text(encoding="utf-8"))
    scalar = built.type_map["DateTime"]
    assert isinstance(scalar, graphql.GraphQLScalarType)
    # graphql-core 3.3 coerces output through coerce_output_value (serialize before it)
    for attribute in ("coerce_output_value", "serialize"):
        if hasattr(scalar, attribute):
            setattr(scalar, attribute, _date_time)
    return built


def document_problems(document: str) -> list[str]:
    """Where ``document`` departs from Linear's schema (empty: it is valid)."""
    try:
        parsed = graphql.parse(document)
    except graphql.GraphQLError as exc:
        return [f"does not parse: {exc.message}"]
    return [error.message for error in graphql.validate(schema(), parsed)]


def _error_items(errors: Any) -> list[str]:
    if not isinstance(errors, list) or not errors:
        return ["errors is not a non-empty list"]
    problems = []
    for index, item in enumerate(errors):
        if not isinstance(item, dict) or not isinstance(item.get("message"), str):
            problems.append(f"errors[{index}] has no message string")
            continue
        extra = set(item) - {"message", "locations", "path", "extensions"}
        if extra:
            problems.append(f"errors[{index}] has keys the format does not allow: {sorted(extra)}")
        if "extensions" in item and not isinstance(item["extensions"], dict):
            problems.append(f"errors[{index}].extensions is not a map")
        if "path" in item and not isinstance(item["path"], list):
            problems.append(f"errors[{index}].path is not a list")
    return problems


def answer_problems(document: str, variables: dict[str, Any] | None, answer: Any) -> list[str]:
    """Where ``answer`` departs from what ``document`` can get from Linear's schema."""
    if not isinstance(answer, dict):
        return [f"the answer is not a JSON object: {answer!r}"]
    problems = []
    extra = set(answer) - {"data", "errors", "extensions"}
    if extra:
        problems.append(f"the answer has keys the format does not allow: {sorted(extra)}")
    if "errors" in answer:
        problems += _error_items(answer["errors"])
        if answer.get("data") is not None:
            problems.append("an error answer to the connector's one-field documents carries data")
        return problems
    data = answer.get("data")
    if not isinstance(data, dict):
        return [*problems, "a successful answer has no data object"]
    result = graphql.graphql_sync(schema(), document, root_value=data, variable_values=variables)
    problems += [f"{'.'.join(map(str, e.path or []))}: {e.message}" for e in result.errors or []]
    if result.data != data:
        problems.append(f"the data is not what the selection gives: {data!r} != {result.data!r}")
    return problems
