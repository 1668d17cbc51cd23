"""Scrubbing of registered secrets."""

from __future__ import annotations

import urllib.parse
import uuid

import pytest

from reversi_core import register_secret, scrub
from reversi_core.redact import REDACTED, Redactor


def test_redactor_scrubs_the_secret_and_its_url_quoted_forms() -> None:
    secret = "p@ss/w0rd+x y"
    redactor = Redactor([secret])
    quoted = urllib.parse.quote(secret, safe="")
    plus = urllib.parse.quote_plus(secret)
    assert len({secret, quoted, plus}) == 3
    text = f"plain={secret} quoted={quoted} plus={plus}"
    assert redactor.scrub(text) == f"plain={REDACTED} quoted={REDACTED} plus={REDACTED}"
    assert text in redactor
    assert "nothing secret" not in redactor


def test_redactor_ignores_short_and_empty_secrets() -> None:
    redactor = Redactor(["abc", "", None])  # type: ignore[list-item]
    assert redactor.scrub("abc is fine") == "abc is fine"


def test_redactor_replaces_longer_secrets_first() -> None:
    redactor = Redactor(["abcd", "abcdefgh"])
    assert redactor.scrub("x abcdefgh y abcd z") == f"x {REDACTED} y {REDACTED} z"


@pytest.mark.req("CALL-8")
def test_scrub_json_recurses_into_dicts_lists_and_keys() -> None:
    redactor = Redactor(["tok-12345"])
    value = {
        "a": "Bearer tok-12345",
        "nested": {"list": ["x", "tok-12345", 3, None, True, {"deep": "tok-12345!"}]},
        "tok-12345": 1.5,
        "tuple": ("tok-12345",),
    }
    out = redactor.scrub_json(value)
    assert out == {
        "a": f"Bearer {REDACTED}",
        "nested": {"list": ["x", REDACTED, 3, None, True, {"deep": f"{REDACTED}!"}]},
        REDACTED: 1.5,
        "tuple": [REDACTED],
    }
    assert value["a"] == "Bearer tok-12345"  # the input is not modified


def test_register_secret_feeds_the_process_wide_scrub() -> None:
    secret = f"global-{uuid.uuid4().hex}"
    assert scrub(secret) == secret
    register_secret(secret)
    assert scrub(f"x {secret} y") == f"x {REDACTED} y"
