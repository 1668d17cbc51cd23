"""A URL whose user name or password libpq would split is refused, quoting none of it.

libpq ends a URI's user name and password at the first ``@``; an unencoded ``@`` or
``/`` in the password makes it read the rest as the host, port or database name, which
its errors quote (``failed to resolve host 'secretpart@127.0.0.1'``) and which is not
registered as a secret.
"""

from __future__ import annotations

import pytest
from psycopg import conninfo

from reversi_connector_postgres import PostgresConnector
from reversi_connector_postgres._session import Session, url_problem
from reversi_core.errors import ConfigurationError, ToolError
from reversi_core.redact import REDACTED, scrub

pytestmark = pytest.mark.anyio

USER = "qzUsrKv"
PASSWORD_HEAD = "Hx7kWq2"
PASSWORD_TAIL = "Zp9vLm4"

SPLIT = [
    # an '@' in the password: the tail becomes the host
    pytest.param(
        f"postgresql://{USER}:{PASSWORD_HEAD}@{PASSWORD_TAIL}@127.0.0.1:5432/db",
        PASSWORD_HEAD + "@" + PASSWORD_TAIL,
        id="at-in-password",
    ),
    pytest.param(
        f"postgres://{USER}:{PASSWORD_HEAD}@{PASSWORD_TAIL}@db.internal/app",
        PASSWORD_HEAD + "@" + PASSWORD_TAIL,
        id="at-in-password-short-scheme",
    ),
    # an '@' in the user name: the password becomes the port
    pytest.param(
        f"postgresql://{USER}@corp:{PASSWORD_HEAD}{PASSWORD_TAIL}@db.internal/app",
        PASSWORD_HEAD + PASSWORD_TAIL,
        id="at-in-user",
    ),
    # a '/' in the password: user:pass becomes host:port, the rest the database name
    pytest.param(
        f"postgresql://{USER}:{PASSWORD_HEAD}/{PASSWORD_TAIL}@db.internal/app",
        PASSWORD_HEAD + "/" + PASSWORD_TAIL,
        id="slash-in-password",
    ),
    # a '/' in the password and no '@' left after it: the port is the password's head
    pytest.param(
        f"postgresql://{USER}:{PASSWORD_HEAD}/{PASSWORD_TAIL}",
        PASSWORD_HEAD + "/" + PASSWORD_TAIL,
        id="slash-no-at",
    ),
]


def fragments(secret: str, size: int = 3) -> set[str]:
    """Every piece of ``secret`` ``size`` characters long."""
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def quoted_fragments(text: str, *secrets: str) -> list[str]:
    return sorted(f for s in secrets for f in fragments(s) if f in text)


@pytest.mark.parametrize(("url", "password"), SPLIT)
def test_libpq_really_reads_part_of_these_passwords_as_something_else(
    url: str, password: str
) -> None:
    """Each refused case is a real hazard: libpq puts password text outside 'password'."""
    parsed = conninfo.conninfo_to_dict(url)
    elsewhere = " ".join(str(v) for k, v in parsed.items() if k != "password")
    assert parsed.get("password") != password
    assert quoted_fragments(elsewhere, PASSWORD_HEAD, PASSWORD_TAIL)


@pytest.mark.parametrize(("url", "password"), SPLIT)
def test_a_split_password_is_refused_without_quoting_any_of_it(url: str, password: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        PostgresConnector(url)
    message = str(caught.value)
    assert message.startswith("POSTGRES_URL ")
    assert "'@' as %40" in message
    assert "'/' as %2F" in message
    assert quoted_fragments(message, password, USER, "127.0.0.1", "db.internal") == []
    with pytest.raises(ConfigurationError) as from_env:
        PostgresConnector.from_env({"POSTGRES_URL": url})
    assert str(from_env.value) == message


@pytest.mark.parametrize(("url", "password"), SPLIT)
async def test_a_session_refuses_it_too_before_connecting(url: str, password: str) -> None:
    with pytest.raises(ToolError) as caught:
        async with Session(url, tool="postgres.query", timeout=1.0, writes=False):
            pytest.fail("the session opened")
    assert caught.value.code == "connect"
    message = str(caught.value)
    assert message.startswith("postgres.query: POSTGRES_URL ")
    assert message.endswith("nothing was sent")
    assert quoted_fragments(message, password, USER) == []


def test_a_bad_percent_escape_is_refused_with_the_fix_and_without_quoting() -> None:
    # libpq's own message would quote the whole password: 'invalid percent-encoded token'
    url = f"postgresql://{USER}:{PASSWORD_HEAD}%zz{PASSWORD_TAIL}@db.internal/app"
    with pytest.raises(ConfigurationError) as caught:
        PostgresConnector(url)
    message = str(caught.value)
    assert "POSTGRES_URL is not a valid" in message
    assert "'%' as %25" in message
    assert quoted_fragments(message, PASSWORD_HEAD, PASSWORD_TAIL, USER) == []


def test_the_encoded_password_is_accepted_and_redacted_in_both_forms() -> None:
    password = PASSWORD_HEAD + "@/" + PASSWORD_TAIL
    url = f"postgresql://{USER}:{PASSWORD_HEAD}%40%2F{PASSWORD_TAIL}@127.0.0.1:5432/db"
    assert url_problem(url) is None
    PostgresConnector(url)
    assert conninfo.conninfo_to_dict(url)["password"] == password
    assert scrub(f"error: {password}") == f"error: {REDACTED}"
    assert scrub(f"dsn {url}") == f"dsn {REDACTED}"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://agent:pa?ss:w#rd@db.internal:5432/app",  # libpq keeps these in the password
        "postgresql://agent:pa%40ss@db.internal/app?application_name=a%40b",
        "postgresql://db.internal/app",
        "postgresql://[::1]:5432,[::1]:5433/app",
        "postgresql://h1:5432,h2/app",
        "postgresql:///app?host=/var/run/postgresql",
        "host=db.internal port=5432 user=agent password='pa@ss/word' dbname=app",
    ],
)
def test_well_formed_urls_are_accepted(url: str) -> None:
    assert url_problem(url) is None
    PostgresConnector(url)


def test_a_port_that_is_not_a_number_is_refused_in_the_key_value_form_too() -> None:
    with pytest.raises(ConfigurationError, match="port that is not a number") as caught:
        PostgresConnector(f"host=db.internal port={PASSWORD_TAIL} dbname=app")
    assert quoted_fragments(str(caught.value), PASSWORD_TAIL) == []
