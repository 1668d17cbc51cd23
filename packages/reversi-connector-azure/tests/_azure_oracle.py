"""Microsoft's Blob Storage REST description (tests/vendor/azure) as an oracle of requests and answers.

:func:`request_problems` finds the operation a request is (among the six the file keeps:
List Blobs flat or hierarchy, Get Blob, Get Blob Properties, Delete Blob, Put Blob,
Copy Blob From URL, told apart as AutoRest tells them, by the query and the
``x-ms-blob-type`` and ``x-ms-copy-source`` headers), then checks every query parameter
and every ``x-ms-*`` and conditional header against the operation's parameters
(declared, ``enum`` values, integers), and that every required one is there.
:func:`response_problems` checks the status against the operation's responses, every
header the answer carries against the headers declared for that status, and a List
Blobs body against its definition with the ``xml`` hints (element and attribute names,
repeated items, integers and booleans). Not applied: the ``Blob`` path pattern (far
stricter than the service, see vendor/azure/README.md) and the ``required`` members of
XML definitions (the service leaves out ``Deleted`` and ``Snapshot`` that the
description marks required).
"""

from __future__ import annotations

import functools
import json
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SPEC = Path(__file__).parent / "vendor" / "azure" / "blob-trimmed.json"
TRANSPORT_HEADERS = frozenset(
    {
        "host",
        "user-agent",
        "accept",
        "accept-encoding",
        "connection",
        "content-length",
        "authorization",
        "x-ms-date",
        "date",
        "server",
        "keep-alive",
        "transfer-encoding",
        "x-ms-return-client-request-id",
    }
)
"""Headers of HTTP and of authorization, which no operation lists."""


@functools.cache
def spec() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(SPEC.read_text())
    return found


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    kind, name = ref.split("/")[-2:]
    return dict(spec()[kind][name])


def operation_of(
    method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str]
) -> tuple[str, str] | None:
    """``(x-ms-paths key, method)`` of a request whose ``path`` starts after the account."""
    parts = path.lstrip("/").split("/", 1)
    method = method.lower()
    if len(parts) == 1:
        if method == "get" and query.get("restype") == "container" and query.get("comp") == "list":
            kind = "hierarchy" if "delimiter" in query else "flat"
            return f"/{{containerName}}?restype=container&comp=list&{kind}", method
        return None
    if method == "put":
        return (
            "/{containerName}/{blob}?comp=copy&sync"
            if "x-ms-copy-source" in headers
            else "/{containerName}/{blob}?BlockBlob"
        ), method
    if method in ("get", "head", "delete"):
        return "/{containerName}/{blob}", method
    return None


def _parameters(key: str, method: str) -> list[dict[str, Any]]:
    item = spec()["x-ms-paths"][key]
    return [_resolve(p) for p in [*item.get("parameters", []), *item[method].get("parameters", [])]]


def request_problems(
    method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str]
) -> list[str]:
    """What the description refuses in one request (``path`` after the account, decoded query)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    found = operation_of(method, path, query, lowered)
    if found is None:
        return [f"{method} {path}: no Blob operation the connector should use"]
    key, verb = found
    name = spec()["x-ms-paths"][key][verb]["operationId"]
    params = _parameters(key, verb)
    by_header = {p["name"].lower(): p for p in params if p["in"] == "header"}
    by_query = {p["name"]: p for p in params if p["in"] == "query"}
    fixed = dict(urllib.parse.parse_qsl(key.partition("?")[2]))
    problems = []
    for header, value in lowered.items():
        if header in TRANSPORT_HEADERS:
            continue
        spec_of = by_header.get(header)
        if spec_of is None:
            if (
                header.startswith("x-ms-")
                or header.startswith("if-")
                or header in ("content-type", "content-md5", "range")
            ):
                problems.append(f"{name}: header {header} is not a parameter")
            continue
        if "enum" in spec_of and value not in spec_of["enum"]:
            problems.append(f"{name}: {header}={value!r} is not one of {spec_of['enum']}")
    for param, value in query.items():
        if param in fixed:
            if fixed[param] and fixed[param] != value:
                problems.append(f"{name}: {param}={value}, the operation fixes {fixed[param]}")
            continue
        spec_of = by_query.get(param)
        if spec_of is None:
            problems.append(f"{name}: query parameter {param} is not declared")
        elif spec_of.get("type") == "integer" and not value.isdigit():
            problems.append(f"{name}: {param}={value!r} is not an integer")
        elif spec_of.get("type") == "integer" and int(value) < spec_of.get("minimum", 0):
            problems.append(f"{name}: {param}={value} is below {spec_of['minimum']}")
    for param in params:
        if (
            param.get("required")
            and param["in"] == "header"
            and param["name"].lower() not in lowered
        ):
            problems.append(f"{name}: the required header {param['name']} is missing")
    return problems


def _element_name(key: str, node: dict[str, Any]) -> str:
    hint = node.get("xml", {}).get("name")
    if hint:
        return str(hint)
    target = _resolve(node)
    return str(target.get("xml", {}).get("name") or key)


def _xml_problems(element: ET.Element, node: dict[str, Any], where: str) -> list[str]:
    schema = _resolve(node)
    problems: list[str] = []
    props = schema.get("properties", {})
    if not props:
        kind = schema.get("type")
        text = (element.text or "").strip()
        if kind == "integer" and not text.lstrip("-").isdigit():
            problems.append(f"{where}: {text!r} is not an integer")
        if kind == "boolean" and text not in ("true", "false"):
            problems.append(f"{where}: {text!r} is not a boolean")
        return problems
    attributes = {
        (p.get("xml", {}).get("name") or k): p
        for k, p in props.items()
        if p.get("xml", {}).get("attribute")
    }
    for attribute in element.attrib:
        if attribute not in attributes:
            problems.append(f"{where}: attribute {attribute} is not in the description")
    children: dict[str, dict[str, Any]] = {}
    for key, prop in props.items():
        if prop.get("xml", {}).get("attribute") or prop.get("xml", {}).get("x-ms-text"):
            continue
        if prop.get("type") == "array" and not prop.get("xml", {}).get("wrapped"):
            children[_element_name(key, prop["items"])] = prop["items"]
        else:
            children[_element_name(key, prop)] = prop
    for child in element:
        if child.tag not in children:
            problems.append(f"{where}: element {child.tag} is not in the description")
            continue
        problems += _xml_problems(child, children[child.tag], f"{where}/{child.tag}")
    return problems


def response_problems(
    method: str,
    path: str,
    query: Mapping[str, str],
    request_headers: Mapping[str, str],
    status: int,
    headers: Mapping[str, str],
    body: bytes,
) -> list[str]:
    """What the description refuses in an answer to the request described."""
    found = operation_of(method, path, query, {k.lower(): v for k, v in request_headers.items()})
    if found is None:
        return ["no operation"]
    key, verb = found
    operation = spec()["x-ms-paths"][key][verb]
    responses = operation["responses"]
    declared = responses.get(str(status)) or (responses.get("default") if status >= 400 else None)
    if declared is None:
        return [f"{operation['operationId']}: status {status} is not a declared response"]
    problems = []
    known = {h.lower() for h in declared.get("headers", {})}
    for header in headers:
        lowered = header.lower()
        if (
            lowered in TRANSPORT_HEADERS
            or lowered in known
            or (lowered.startswith("x-ms-meta-") and "x-ms-meta" in known)
        ):
            continue
        if status < 400 or lowered.startswith("x-ms-"):
            problems.append(f"{operation['operationId']} {status}: header {header} is not declared")
    schema = declared.get("schema")
    if status < 300 and schema is not None and "$ref" in schema and body:
        root = ET.fromstring(body.lstrip(b"\xef\xbb\xbf"))
        expected = _element_name("", schema)
        if root.tag != expected:
            problems.append(
                f"{operation['operationId']}: root element {root.tag}, the description says {expected}"
            )
        else:
            problems += _xml_problems(root, schema, root.tag)
    return problems
