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


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["srv", "--token", "abc123456"], "srv --token '[REDACTED]'"),
        (
            ["srv", "--api-key=abc123456", "--port", "8080"],
            "srv '--api-key=[REDACTED]' --port 8080",
        ),
        (["srv", "--client-secret", "s3cr3tvalue", "x"], "srv --client-secret '[REDACTED]' x"),
        (["env", "GITHUB_TOKEN=abc123456", "srv"], "env 'GITHUB_TOKEN=[REDACTED]' srv"),
        (
            ["srv", "postgresql://app:pw123456@db:5432/x"],
            "srv 'postgresql://app:[REDACTED]@db:5432/x'",
        ),
        (
            ["srv", "https://ghp_abc123456@github.com/o/r"],
            "srv 'https://[REDACTED]@github.com/o/r'",
        ),
        (
            ["srv", "https://h/x?access_token=abc123456&page=2"],
            "srv 'https://h/x?access_token=[REDACTED]&page=2'",
        ),
        # a password holding a delimiter: all of it, up to the last "@"
        (
            ["srv", "postgresql://app:pw/12?3#4@56@db/x"],
            "srv 'postgresql://app:[REDACTED]@db/x'",
        ),
        # not credentials: left as written, so the command line still says what ran
        (["srv", "--author", "ann", "--root", "/tmp/a b"], "srv --author ann --root '/tmp/a b'"),
        (["srv", "https://h/x?page=2", "MODE=fast"], "srv 'https://h/x?page=2' MODE=fast"),
    ],
)
def test_scrub_command_hides_what_a_command_line_says_is_a_credential(
    argv: list[str], shown: str
) -> None:
    from reversi_core.redact import scrub_command

    assert scrub_command(argv) == shown


def test_scrub_command_hides_registered_secrets_anywhere_in_the_line() -> None:
    from reversi_core.redact import scrub_command

    secret = "reg-" + uuid.uuid4().hex
    register_secret(secret)
    assert secret not in scrub_command(["srv", f"--header=X-Thing: {secret}"])


def test_the_working_directory_is_no_credential() -> None:
    """PWD and OLDPWD match ``pwd`` but hold directories: registering them would hide the
    directory ``reversi`` runs in from every path it journals (a resolved step's
    compensation arguments) and prints."""
    from reversi_core.audit import register_environment_secrets

    here, before = f"/home/u/{uuid.uuid4().hex}", f"/srv/{uuid.uuid4().hex}"
    token = "tok-" + uuid.uuid4().hex
    env = {"PWD": here, "OLDPWD": before, "DEPLOY_TOKEN": token, "HOME": "/home/u"}
    assert register_environment_secrets(env) == 1
    assert scrub(f"{here}/a {before}/b {token}") == f"{here}/a {before}/b {REDACTED}"
