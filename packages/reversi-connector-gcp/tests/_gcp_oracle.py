"""The storage v1 discovery document (shipped in google-api-python-client) as an oracle.

:func:`request_problems` maps one request to its JSON API method by the discovery
document's own paths (``b/{bucket}/o/{object}``, the media upload path of
``objects.insert``) and HTTP method, then checks every query parameter against the
method's and the API's parameters (declared, the right type, ``int64`` as digits, an
allowed ``enum`` value), and that every required one is there. :func:`resource_problems`
checks a JSON answer against the method's response schema, turned into a JSON Schema
that also refuses properties the document does not declare.
"""

from __future__ import annotations

import functools
import json
import re
import urllib.parse
from importlib.resources import files
from typing import Any

import jsonschema

ROOT = "/storage/v1/"


@functools.cache
def discovery() -> dict[str, Any]:
    """The storage v1 discovery document google-api-python-client ships."""
    text = (files("googleapiclient") / "discovery_cache/documents/storage.v1.json").read_text()
    found: dict[str, Any] = json.loads(text)
    return found


def _methods() -> list[tuple[str, str, re.Pattern[str], dict[str, Any]]]:
    """``(name, HTTP method, full-path pattern, method)`` of every objects method, upload paths included."""
    out = []
    for name, method in discovery()["resources"]["objects"]["methods"].items():
        paths = ["/storage/v1/" + method["path"]]
        upload = method.get("mediaUpload", {}).get("protocols", {}).get("simple", {}).get("path")
        if upload:
            paths.append(upload)
        for path in paths:
            pattern = re.escape(path)
            pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", pattern)
            out.append((f"objects.{name}", method["httpMethod"], re.compile(pattern), method))
    return out


def method_of(http_method: str, raw_path: str) -> tuple[str, dict[str, Any], dict[str, str]] | None:
    """The discovery method a request calls, with its path parameters (decoded)."""
    for name, verb, pattern, method in _methods():
        found = pattern.fullmatch(raw_path)
        if verb == http_method and found:
            return name, method, {k: urllib.parse.unquote(v) for k, v in found.groupdict().items()}
    return None


def _value_problem(where: str, spec: dict[str, Any], value: str) -> str | None:
    kind, form = spec.get("type"), spec.get("format")
    if form in ("int64", "uint64") and not re.fullmatch(r"-?\d+", value):
        return f"{where}={value!r} is not an {form}"
    if kind == "integer" and not re.fullmatch(r"-?\d+", value):
        return f"{where}={value!r} is not an integer"
    if kind == "boolean" and value not in ("true", "false"):
        return f"{where}={value!r} is not a boolean"
    if "enum" in spec and value not in spec["enum"]:
        return f"{where}={value!r} is not one of {spec['enum']}"
    return None


def request_problems(http_method: str, target: str) -> list[str]:
    """What the discovery document refuses in one request (``target``: raw path and query)."""
    raw_path, _, raw_query = target.partition("?")
    found = method_of(http_method, raw_path)
    if found is None:
        return [f"{http_method} {raw_path}: no storage v1 objects method"]
    name, method, path_params = found
    problems = []
    declared = {**discovery()["parameters"], **method["parameters"]}
    query = urllib.parse.parse_qsl(raw_query, keep_blank_values=True)
    seen = set()
    for key, value in query:
        seen.add(key)
        spec = declared.get(key)
        if spec is None or spec.get("location") != "query":
            problems.append(f"{name}: query parameter {key} is not declared")
            continue
        problem = _value_problem(f"{name}: {key}", spec, value)
        if problem:
            problems.append(problem)
    for key, spec in method["parameters"].items():
        if spec.get("required") and key not in seen and key not in path_params:
            problems.append(f"{name}: the required parameter {key} is missing")
        if spec.get("location") == "path" and key in path_params and not path_params[key]:
            problems.append(f"{name}: the path parameter {key} is empty")
    if raw_path.startswith("/upload/"):
        upload = dict(query).get("uploadType")
        if upload not in ("media", "multipart"):
            problems.append(
                f"{name}: an upload needs uploadType media or multipart, not {upload!r}"
            )
    return problems


def _json_schema(ref: str) -> dict[str, Any]:
    schemas = discovery()["schemas"]

    def convert(spec: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in spec:
            return {"$ref": f"#/definitions/{spec['$ref']}"}
        out: dict[str, Any] = {}
        kind = spec.get("type")
        if kind == "string" and spec.get("format") in ("int64", "uint64"):
            return {"type": "string", "pattern": r"^-?\d+$"}
        if kind == "string" and spec.get("format") == "date-time":
            return {
                "type": "string",
                "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$",
            }
        if kind == "any" or (kind is None and "properties" not in spec):
            return out
        if kind:
            out["type"] = kind
        if "properties" in spec:
            out["properties"] = {k: convert(v) for k, v in spec["properties"].items()}
            out["additionalProperties"] = False
        elif "additionalProperties" in spec:
            out["additionalProperties"] = convert(spec["additionalProperties"])
        if "items" in spec:
            out["items"] = convert(spec["items"])
        return out

    return {
        "$ref": f"#/definitions/{ref}",
        "definitions": {k: convert(v) for k, v in schemas.items()},
    }


def resource_problems(ref: str, body: Any) -> list[str]:
    """Where ``body`` differs from the schema ``ref`` (``Object``, ``Objects``, ``RewriteResponse``)."""
    validator = jsonschema.Draft7Validator(_json_schema(ref))
    return [f"{ref}{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(body)]
