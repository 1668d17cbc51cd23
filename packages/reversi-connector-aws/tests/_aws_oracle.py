"""botocore's S3 service model as an oracle of the requests the aws connector sends.

:func:`problems` takes one request as a server received it, finds the S3 operation it
is (by method, path and the headers that tell PutObject from CopyObject), rebuilds the
operation's parameters from the model's own serialisation rules (each member's
``location``: the URI, a header or the query string) and reports what the model does
not allow: a method or a query parameter the operation has not, an ``x-amz-`` or
conditional header that is no member of it, a value of the wrong type, a missing
required member (botocore's own ``validate_parameters``).
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

import botocore.session
from botocore.exceptions import ParamValidationError
from botocore.model import OperationModel, ServiceModel
from botocore.validate import validate_parameters

AUTH_HEADERS = frozenset(
    {"authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"}
)
"""Headers of Signature Version 4, which no operation lists as a member."""
MODELLED_HEADERS = frozenset({"if-match", "if-none-match", "content-type", "range", "content-md5"})
"""Ordinary HTTP headers S3 gives a meaning to: when sent, the operation must have them."""


@functools.cache
def s3_model() -> ServiceModel:
    """The S3 service model shipped in botocore."""
    return botocore.session.get_session().get_service_model("s3")


def operation_of(
    method: str, path: str, headers: Mapping[str, str], query: Mapping[str, str]
) -> str | None:
    """The S3 operation a request is, from its method and (path-style) path."""
    parts = path.lstrip("/").split("/", 1)
    on_key = len(parts) == 2
    if method == "HEAD":
        return "HeadObject" if on_key else "HeadBucket"
    if method == "GET":
        return (
            "GetObject" if on_key else ("ListObjectsV2" if "list-type" in query else "ListObjects")
        )
    if method == "PUT" and on_key:
        return "CopyObject" if "x-amz-copy-source" in headers else "PutObject"
    if method == "DELETE" and on_key:
        return "DeleteObject"
    return None


def problems(method: str, target: str, headers: Mapping[str, str], body: bytes) -> list[str]:
    """What the S3 model refuses in one request (``target``: raw path and query, path style)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_path, _, raw_query = target.partition("?")
    query = dict(urllib.parse.parse_qsl(raw_query, keep_blank_values=True))
    name = operation_of(method, urllib.parse.unquote(raw_path), lowered, query)
    if name is None:
        return [f"{method} {raw_path}: no S3 operation the connector should use"]
    op: OperationModel = s3_model().operation_model(name)
    found: list[str] = []
    if op.http["method"] != method:
        found.append(f"{name}: method {method}, the model says {op.http['method']}")
    fixed = dict(urllib.parse.parse_qsl(op.http["requestUri"].partition("?")[2]))
    members = op.input_shape.members
    by_header = {
        m.serialization.get("name", k).lower(): k
        for k, m in members.items()
        if m.serialization.get("location") == "header"
    }
    by_query = {
        m.serialization.get("name", k): k
        for k, m in members.items()
        if m.serialization.get("location") == "querystring"
    }
    bucket, _, key = urllib.parse.unquote(raw_path).lstrip("/").partition("/")
    params: dict[str, Any] = {"Bucket": bucket}
    if "Key" in members:
        params["Key"] = key
    for header, value in lowered.items():
        if header in AUTH_HEADERS:
            continue
        if header in by_header:
            params[by_header[header]] = value
        elif header.startswith("x-amz-") or header in MODELLED_HEADERS:
            found.append(f"{name}: header {header} is not in the model")
    for param, value in query.items():
        if param in fixed:
            if fixed[param] != value:
                found.append(f"{name}: {param}={value}, the model fixes {fixed[param]}")
        elif param in by_query:
            params[by_query[param]] = value
        else:
            found.append(f"{name}: query parameter {param} is not in the model")
    for member, value in list(params.items()):
        kind = members[member].type_name
        if kind in ("integer", "long"):
            try:
                params[member] = int(value)
            except ValueError:
                found.append(f"{name}: {member}={value!r} is not an integer")
        elif kind == "boolean":
            params[member] = value == "true"
        elif kind == "timestamp":
            del params[member]
    if "Body" in members and body:
        params["Body"] = body
    elif body:
        found.append(f"{name}: a body, which the operation does not take")
    for member, value in params.items():
        shape = members[member]
        allowed = getattr(shape, "enum", None)
        if allowed and value not in allowed:
            found.append(f"{name}: {member}={value!r} is not one of {allowed}")
        pattern = shape.metadata.get("pattern")
        if pattern and isinstance(value, str) and not re.fullmatch(pattern, value):
            found.append(f"{name}: {member}={value!r} does not match {pattern}")
    try:
        validate_parameters(params, op.input_shape)
    except ParamValidationError as exc:
        found.append(f"{name}: {exc}")
    return found
