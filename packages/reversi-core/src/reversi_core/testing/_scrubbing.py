"""The credentials of a cassette: what they are, their forms on the wire, and the check
that none is left in a recording.

Credentials (:func:`secrets_in`): the value of every secret setting of an
:class:`~reversi_core.http.HttpConnector` (and of ``credential_env`` for any other
connector), and the credential part of the authentication headers its scheme sends that
holds no such value whole (HTTP basic's base64 of ``user:password``). Each is replaced
by ``<VARIABLE>`` (or ``<Header-Name>``) wherever it appears in a request or an answer,
raw and in its common encodings (:func:`secret_forms`: URL-encoded, form-encoded,
base64, JSON-escaped), through vcrpy's ``filter_sensitive_data``; an authentication or
cookie header that still holds no placeholder is replaced whole. After recording,
:func:`cassette_problems` reads the file back and the recording is refused (the file is
removed) if any form of any credential is still in it, if a basic-auth value in it
decodes to one, if an answer is still compressed, or if no recorded request carried the
credential at all (then the scrubbing was aimed at the wrong value).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..connector import Connector
from ._live import SUFFIX_PLACEHOLDER

__all__ = [
    "Secret",
    "cassette_problems",
    "credential_headers",
    "mask_headers",
    "scrub_pairs",
    "secret_forms",
    "secrets_in",
    "seen_in_requests",
]

_MIN_SECRET = 4  # as reversi_core.redact: shorter values would match ordinary text
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_BASIC = re.compile(r"Basic\s+([A-Za-z0-9+/_-]+=*)")
_PLACEHOLDER = re.compile(r"<[^<>\s]+>")
_PERCENT = re.compile(r"%[0-9A-F]{2}")


@dataclass(frozen=True)
class Secret:
    """A credential to scrub: ``label`` names it (a variable, or a header), ``value`` is it."""

    label: str
    value: str

    @property
    def placeholder(self) -> str:
        """What replaces it in a cassette: ``<label>``."""
        return f"<{self.label}>"


def secrets_in(cls: type[Connector], environ: Mapping[str, str]) -> list[Secret]:
    """The credentials the connector built from ``environ`` sends (see the module docstring)."""
    from ..http import HttpConnector

    found: list[Secret] = []
    if issubclass(cls, HttpConnector):
        values: dict[str, str | None] = {s.option: environ.get(s.env) for s in cls.settings}
        for setting in cls.settings:
            value = values[setting.option]
            if setting.secret and value and len(value) >= _MIN_SECRET:
                found.append(Secret(setting.env, value))
        if cls.auth is not None and all(values.get(s.option) for s in cls.settings if s.secret):
            for header, value in cls.auth.headers(values).items():
                _scheme, _, credential = value.partition(" ")
                part = credential.strip() if credential.strip() else value
                if not any(s.value in part for s in found):
                    found.append(Secret(header, part))
    elif cls.credential_env is not None:
        value = environ.get(cls.credential_env)
        if value and len(value) >= _MIN_SECRET:
            found.append(Secret(cls.credential_env, value))
    return found


def secret_forms(value: str) -> dict[str, str]:
    """``{form name: text}``: ``value`` raw and as it may be encoded on the wire or in YAML."""
    raw = value.encode()
    forms = {
        "raw": value,
        "URL-encoded": urllib.parse.quote(value, safe=""),
        "URL-encoded, / kept": urllib.parse.quote(value),
        "form-encoded": urllib.parse.quote_plus(value),
        "base64": base64.b64encode(raw).decode(),
        "base64url": base64.urlsafe_b64encode(raw).decode(),
        "JSON-escaped": json.dumps(value)[1:-1],
    }
    for name in ("URL-encoded", "URL-encoded, / kept", "form-encoded"):
        forms[f"{name} (lower-case hex)"] = _PERCENT.sub(lambda m: m[0].lower(), forms[name])
    for name in ("base64", "base64url"):
        forms[f"{name} unpadded"] = forms[name].rstrip("=")
    unique: dict[str, str] = {}
    for name, text in forms.items():
        if len(text) >= _MIN_SECRET and text not in unique.values():
            unique[name] = text
    return unique


def scrub_pairs(secrets: Sequence[Secret], suffix: str | None) -> list[tuple[str, str]]:
    """vcrpy's ``filter_sensitive_data`` pairs ``(placeholder, text)``, longest text first."""
    pairs = [(s.placeholder, form) for s in secrets for form in secret_forms(s.value).values()]
    if suffix is not None:
        pairs.append((SUFFIX_PLACEHOLDER, suffix))
    return sorted(pairs, key=lambda pair: len(pair[1]), reverse=True)


def credential_headers(cls: type[Connector]) -> frozenset[str]:
    """Lower-case names of the request headers that carry a credential.

    ``Authorization``, ``Proxy-Authorization``, ``Cookie``, and the headers the
    connector's auth scheme sends (GitLab's ``PRIVATE-TOKEN``).
    """
    from ..http import HttpConnector

    names = set(_AUTH_HEADERS)
    if issubclass(cls, HttpConnector) and cls.auth is not None:
        names |= {h.lower() for h in cls.auth.headers({s.option: "x" for s in cls.settings})}
    return frozenset(names)


def mask_headers(
    names: frozenset[str], secrets: Sequence[Secret]
) -> Callable[[Any, Any], tuple[Any, Any]]:
    """A vcrpy save hook: a credential header holding no declared credential is replaced
    whole (``<redacted>``: it is a credential nobody declared), and so is every cookie the
    vendor sets. Declared credentials are left to ``filter_sensitive_data``, which runs next.
    """
    forms = [f for s in secrets for f in secret_forms(s.value).values()]

    def hook(request: Any, response: Any) -> tuple[Any, Any]:
        headers = request.headers
        for name in list(headers.keys()):
            if name.lower() in names:
                value = str(headers[name])
                if not any(f in value for f in forms):
                    headers[name] = "<redacted>"
        answer = response.get("headers", {})
        for name in list(answer):
            if name.lower() == "set-cookie":
                answer[name] = ["<redacted>" for _ in answer[name]]
        return request, response

    return hook


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string in a loaded cassette (keys included; bytes decoded), with where it is."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, bytes | bytearray):
        yield where, bytes(value).decode("latin-1")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, f"{where} (a key)")
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}[{index}]")


def cassette_problems(
    path: Path, secrets: Sequence[Secret], *, headers: frozenset[str] = frozenset()
) -> list[str]:
    """What makes the cassette at ``path`` unfit to keep; empty when it is fit.

    A problem names the credential's label, the form it was found in and where, never
    the value: any :func:`secret_forms` form of any secret in the file or in a string
    of it; a ``Basic`` value in it that decodes to text holding a secret; a request
    header named in ``headers`` (lower case; :func:`credential_headers`) whose value
    holds no ``<placeholder>``; an answer still compressed (its body could hide a
    credential from this check); a file that is not plain YAML data.
    """
    import yaml

    text = path.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return [
            f"the cassette is not plain YAML data ({type(exc).__name__}), so it cannot be checked"
        ]
    found: list[str] = []
    strings = list(_strings(data, "cassette"))
    for secret in secrets:
        for form, shown in secret_forms(secret.value).items():
            places = [where for where, s in strings if shown in s]
            if places:
                found += [f"{secret.label} ({form}) in {where}" for where in places]
            elif shown in text:
                found.append(f"{secret.label} ({form}) in the file's text")
    for where, string in strings:
        for blob in _BASIC.findall(string):
            try:
                decoded = base64.b64decode(blob + "=" * (-len(blob) % 4), altchars=b"-_").decode(
                    "latin-1"
                )
            except ValueError:
                continue
            hits = [s.label for s in secrets if s.value in decoded]
            found += [f"{label} (inside a basic-auth value) in {where}" for label in hits]
    interactions = data.get("interactions", []) if isinstance(data, dict) else []
    for index, interaction in enumerate(interactions):
        sent = (interaction.get("request") or {}).get("headers") or {}
        for name, values in sent.items():
            if str(name).lower() in headers:
                for value in values if isinstance(values, list) else [values]:
                    if not _PLACEHOLDER.search(str(value)):
                        found.append(
                            f"interactions[{index}].request.headers.{name} holds a value that is "
                            "not a placeholder"
                        )
        answer = (interaction.get("response") or {}).get("headers") or {}
        for name, values in answer.items():
            if str(name).lower() == "content-encoding" and values:
                found.append(
                    f"interactions[{index}].response is still {values} encoded: its body cannot be "
                    "checked for credentials"
                )
    return found


def seen_in_requests(requests: Sequence[Any], secrets: Sequence[Secret]) -> set[str]:
    """Labels of the secrets that some recorded request (not yet scrubbed) carries, in any form."""
    seen: set[str] = set()
    for request in requests:
        texts = [request.uri, *(str(v) for v in request.headers.values())]
        body = request.body
        if isinstance(body, bytes | bytearray):
            texts.append(bytes(body).decode("latin-1"))
        elif isinstance(body, str):
            texts.append(body)
        for secret in secrets:
            forms = secret_forms(secret.value).values()
            if any(form in t for form in forms for t in texts):
                seen.add(secret.label)
    return seen
