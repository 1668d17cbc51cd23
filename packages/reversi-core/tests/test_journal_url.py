"""A PostgreSQL journal URL is read by its text before libpq sees it (journal/_pg_url.py):
a password holding an unencoded ``/`` or ``@`` is never printed, by any command, whether
the URL comes from ``$REVERSI_JOURNAL`` or ``--journal`` (docs/cli.md, docs/engine.md).

libpq reads ``postgresql://reversi:Rev/SECRETPART@127.0.0.1:5432/reversi`` as the host
``reversi``, the port ``Rev`` and the database ``SECRETPART@127.0.0.1:5432/reversi``;
a message naming the journal by those parts printed the password."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from test_gateway import GATEWAY, Box

from reversi_core.cli.gateway import main as gateway_main
from reversi_core.cli.reversi import main
from reversi_core.errors import ConfigurationError, JournalError
from reversi_core.journal import JOURNAL_ENV, describe_location, open_journal, resolve_location
from reversi_core.journal._open import holds_password
from reversi_core.journal._pg_conn import parse_url, reason
from reversi_core.journal._pg_url import UrlError, mask, split_url
from reversi_core.redact import scrub

SECRET = "SECRETPART"

MALFORMED = {
    "slash": f"postgresql://reversi:Rev/{SECRET}@127.0.0.1:5432/reversi",
    "two-ats": f"postgresql://reversi:Rev@{SECRET}@127.0.0.1:5432/reversi",
    "plus-slash-equals": f"postgresql://reversi:ab+c/d={SECRET}@127.0.0.1:5432/reversi",
    "query-char": f"postgresql://reversi:ab?c/{SECRET}@127.0.0.1:5432/reversi",
    "hash-char": f"postgresql://reversi:ab#c/{SECRET}@127.0.0.1:5432/reversi",
}
"""URLs whose password holds an unencoded '/' or '@': libpq would not read it as one."""

# what no output may hold: the password's pieces, and any other part of a refused URL
PIECES = (SECRET, "Rev/", "Rev@", "ab+c", "ab?c", "ab#c", "d=", "127.0.0.1", "5432/reversi")


def _clean(text: str) -> None:
    for piece in PIECES:
        assert piece not in text, (piece, text)


@pytest.mark.parametrize("url", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_password_holding_a_slash_or_an_at_is_a_password_and_is_refused(url: str) -> None:
    assert holds_password(url)
    with pytest.raises(UrlError) as info:
        split_url(url)
    _clean(str(info.value))
    assert "percent-encode" in str(info.value) or "not repeated" in str(info.value)
    # registered with the redactor although libpq would not call it a password
    assert SECRET not in scrub(f"text quoting {url}")
    with pytest.raises(ConfigurationError) as refused:
        resolve_location(url)
    _clean(str(refused.value))
    with pytest.raises(JournalError) as failed:
        open_journal(url)
    _clean(str(failed.value))
    shown = describe_location(url)
    _clean(shown)
    assert shown == "a PostgreSQL journal (its URL is refused: it is not shown)"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("postgresql://u@db:abc/reversi", "port that is not a number"),
        ("postgresql://u@db:70000/reversi", "port that is not a number"),
        ("postgresql://u@[::1/reversi", "'[' is not closed"),
        ("postgresql://u@[::1]x/reversi", "after an IPv6 host"),
        ("postgresql://a@b@db/reversi", "unencoded '/' or '@'"),
        ("postgresql://u:s3cr%zz@db/reversi", "malformed %-escape"),
        ("postgresql://db/reversi?sslmode", "without '='"),
        ("POSTGRESQL://db/reversi", "in lower case"),
    ],
)
def test_a_malformed_url_is_refused_without_repeating_it(url: str, why: str) -> None:
    with pytest.raises(UrlError, match=re.escape(why)) as info:
        split_url(url)
    for piece in ("db", "reversi", "s3cr", "abc", "70000", "::1", "sslmode"):
        assert piece not in str(info.value).replace("libpq-connect", ""), piece


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("postgresql://u:p%2Fw%40x@db:5432/reversi", "p/w@x"),
        ("postgresql://u:p?w#x@db:5432/reversi", "p?w#x"),  # libpq reads these as written
        ("postgresql://u:p:w@[::1]:5432/reversi", "p:w"),
        ("postgresql://u:pw@h1:1,h2:2/reversi?host=other", "pw"),
    ],
)
def test_a_well_formed_url_is_read_as_libpq_reads_it(url: str, password: str) -> None:
    assert holds_password(url)
    params = parse_url(url)  # libpq's reading, checked against the text's
    assert params["password"] == password
    assert split_url(url).params()["password"] == password
    assert password not in describe_location(url)


def test_an_at_after_a_colon_later_in_the_url_counts_as_a_password() -> None:
    # ambiguous: user "db", password "5432/reversi?user=a"? libpq says host "db": refused
    url = "postgresql://db:5432/reversi?user=a@b"
    assert holds_password(url)
    with pytest.raises(UrlError, match="percent-encode"):
        split_url(url)
    # without a ':' before it, an '@' after the path is the query's
    assert split_url("postgresql://db/reversi?user=a@b").params() == {
        "host": "db",
        "dbname": "reversi",
        "user": "a@b",
    }


def test_a_drivers_reason_is_cleared_of_every_piece_of_the_password() -> None:
    split_url("postgresql://reversi:Rev%2FSECRETPART2@127.0.0.1:5432/reversi")
    said = reason(Exception('failed to resolve host "SECRETPART2@127.0.0.1": Rev/SECRETP'))
    assert "SECRETP" not in said
    assert "ECRETPART2" not in said
    assert said.startswith("failed to resolve host")
    assert mask("nothing secret here") == "nothing secret here"


# -- every command, on $REVERSI_JOURNAL and on --journal -----------------------------------

COMMANDS = {
    "runs": ["runs", "--json"],
    "show": ["show", "run_x", "--json"],
    "dry-run": ["rollback", "run_x", "--dry-run", "--json"],
}


@pytest.mark.parametrize("how", ["env", "option"])
@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
@pytest.mark.parametrize("url", MALFORMED.values(), ids=MALFORMED.keys())
def test_no_command_prints_a_password_holding_a_slash_or_an_at(
    url: str,
    command: list[str],
    how: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    if how == "env":
        monkeypatch.setenv(JOURNAL_ENV, url)
        argv = command
    else:
        monkeypatch.delenv(JOURNAL_ENV, raising=False)
        argv = [*command, "--journal", url]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    _clean(err)
    if how == "option":
        assert "--journal: the URL holds a password" in err
    else:
        assert "percent-encode" in err or "not repeated" in err


@pytest.mark.parametrize("how", ["env", "option"])
@pytest.mark.parametrize("url", MALFORMED.values(), ids=MALFORMED.keys())
def test_the_gateway_never_prints_a_password_holding_a_slash_or_an_at(
    url: str,
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = Box(tmp_path).argv()
    at = argv.index("--data")
    if how == "env":
        del argv[at : at + 2]
        monkeypatch.setenv(JOURNAL_ENV, url)
    else:
        argv[at : at + 2] = ["--journal", url]
        monkeypatch.delenv(JOURNAL_ENV, raising=False)
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    assert gateway_main(argv) == 2
    out, err = capsys.readouterr()
    _clean(out + err)
    assert err.startswith("reversi-gateway: error: ")
    assert err.count("\n") == 1


# -- a journal location that is not taken is bad input (status 2), not a journal error -----

NOT_TAKEN = {
    "mysql": ("mysql://u@db/reversi", "scheme 'mysql' is not known"),
    "sqlalchemy": ("postgresql+psycopg://u@db/reversi", "SQLAlchemy's: write postgresql://"),
    "libpq-refuses": ("postgresql://db/reversi?no_such_parameter=1", "cannot be parsed"),
    "upper-case": ("POSTGRESQL://db/reversi", "in lower case"),
}


@pytest.mark.parametrize("how", ["env", "option"])
@pytest.mark.parametrize(("url", "said"), NOT_TAKEN.values(), ids=NOT_TAKEN.keys())
def test_a_journal_url_that_is_not_taken_is_status_2(
    url: str,
    said: str,
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("REVERSI_DATA", raising=False)
    if how == "env":
        monkeypatch.setenv(JOURNAL_ENV, url)
        argv = ["runs"]
    else:
        monkeypatch.delenv(JOURNAL_ENV, raising=False)
        argv = ["runs", "--journal", url]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err
    assert "db/reversi" not in err
    gateway = Box(tmp_path).argv()
    at = gateway.index("--data")
    gateway[at : at + 2] = [] if how == "env" else ["--journal", url]
    # a process of its own: one that libpq alone refuses is refused when the journal
    # opens, after the upstream started (psycopg is not imported before it starts)
    env = {k: v for k, v in os.environ.items() if k not in ("REVERSI_DATA", JOURNAL_ENV)}
    if how == "env":
        env[JOURNAL_ENV] = url
    done = subprocess.run(
        [GATEWAY, *gateway],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert "db/reversi" not in done.stderr
