#!/usr/bin/env python3
"""Prove that one connector works when it is the only one installed.

    python scripts/clean_install_check.py NAME --others A,B,... [--wheels DIST]

Run by ``nox -s install_only`` with the python of a fresh virtual environment into which
only ``reversi-connector-NAME`` (and, through its requirement, ``reversi-core``) was
installed from the built wheels in dist/. Needs nothing from the source tree: it uses
the installed ``reversi-connectors`` console script and the ``mcp`` client that
reversi-core brings. It checks the following, and exits 1 naming every check that failed
(a failed isolation or manifests check stops the rest):

1. isolation: the only ``reversi-*`` distributions are reversi-core and this connector,
   imported from this environment's site-packages and, with ``--wheels DIR``, byte for
   byte the wheels in DIR (every file's hash matches the wheel's RECORD); the
   ``reversi.connectors`` entry-point group holds NAME alone; ``import
   reversi_connector_<other>`` fails for every other connector (``--others``);
2. ``reversi-connectors manifests NAME`` (and ``manifests all``) prints this connector's
   manifests, every tool named ``NAME.*``, with no credential set;
3. without credentials (a connector that has a credential variable): ``serve`` exits 2
   and ``compensate`` exits 1, each with one line naming the variable, no traceback; with
   the variables pointing at a closed port on 127.0.0.1, ``compensate`` exits 1 without
   printing the credential;
4. ``reversi-connectors serve NAME``: a real MCP stdio handshake (initialize, then
   tools/list) whose tools are exactly the manifests';
5. ``reversi-connectors compensate`` undoing a real forward call made through ``serve``,
   with the compensation and argument map the manifest declares, run twice (it must be
   idempotent), the backend fingerprinted before and after. The backend, how to reach it
   and the call come from the connector's own certification fixture, which ships in its
   wheel (its ``testing`` module): its backend (a fake served on 127.0.0.1, a scratch
   directory, a throwaway PostgreSQL cluster or ``REVERSI_TEST_POSTGRES_URL``), its
   ``command_line`` (the variables and options a process needs), and its first example
   of the first undoable tool. Nothing here names a connector.

The connector's own variables (``POSTGRES_URL``...) are never taken from the caller's
environment, so a developer's real credentials cannot be used by accident: only what
the fixture's ``command_line`` gives is set.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import importlib
import importlib.metadata
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from reversi_core.connector import available_connectors, load_connector_class
from reversi_core.manifest import Compensation, MappingFailed, evaluate_argument_map
from reversi_core.testing import ExampleCalls, load_fixture

BIN = Path(sys.executable).parent
CLI = str(BIN / "reversi-connectors")
PROBE_SECRET = "probe-secret-7f3a9c"  # planted in dummy credentials; must never be printed
TIMEOUT = 60


class ProbeFailure(Exception):
    """One failed check; the message says what was expected and what happened."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise ProbeFailure(message)


def step(text: str) -> None:
    print(f"  ok  {text}", flush=True)


def cli(
    *args: str, stdin: str = "", env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``reversi-connectors`` with ``args``."""
    return subprocess.run(
        [CLI, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=dict(os.environ if env is None else env),
        check=False,
    )


def shown(proc: subprocess.CompletedProcess[str]) -> str:
    return (
        f"exit {proc.returncode}; stdout: {proc.stdout[-800:]!r}; stderr: {proc.stderr[-1500:]!r}"
    )


def clean_failure(proc: subprocess.CompletedProcess[str], status: int, what: str) -> str:
    """Assert ``proc`` failed with ``status`` and one reason line, no traceback, no secret."""
    expect(proc.returncode == status, f"{what}: expected exit {status}; {shown(proc)}")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    expect(bool(lines), f"{what}: no reason on stderr; {shown(proc)}")
    expect("Traceback" not in proc.stderr, f"{what}: printed a traceback; {shown(proc)}")
    expect(
        PROBE_SECRET not in proc.stderr + proc.stdout,
        f"{what}: the credential appeared in the output; {shown(proc)}",
    )
    expect(
        "unexpected" not in lines[-1], f"{what}: failed as a bug, not a handled error: {lines[-1]}"
    )
    return lines[-1]


# -- 1. isolation ---------------------------------------------------------------------


def wheel_hashes(wheel: Path) -> dict[str, str]:
    """``{path: "sha256=..."}`` from a wheel's RECORD, for the files outside .dist-info."""
    with zipfile.ZipFile(wheel) as archive:
        record = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
        rows = csv.reader(io.StringIO(archive.read(record).decode()))
        return {row[0]: row[1] for row in rows if row and row[1] and ".dist-info/" not in row[0]}


def check_from_wheel(dist: str, wheels: Path) -> None:
    """The installed ``dist`` is byte for byte the wheel of the same version in ``wheels``."""
    version = importlib.metadata.version(dist)
    wheel = wheels / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
    expect(wheel.is_file(), f"{dist} {version} is installed but {wheel} does not exist")
    expected = wheel_hashes(wheel)
    files = importlib.metadata.files(dist) or []
    installed = {
        str(f): f"{f.hash.mode}={f.hash.value}"
        for f in files
        if f.hash is not None and str(f) in expected
    }
    expect(
        installed == expected,
        f"{dist} {version} differs from {wheel.name}: "
        f"{sorted(set(expected.items()) ^ set(installed.items()))[:5]}",
    )


def check_isolation(name: str, others: list[str], wheels: Path | None) -> None:
    dist = f"reversi-connector-{name}"
    installed = sorted(
        d.metadata["Name"]
        for d in importlib.metadata.distributions()
        if d.metadata["Name"] and d.metadata["Name"].startswith("reversi")
    )
    expect(installed == sorted(["reversi-core", dist]), f"reversi distributions: {installed}")
    step(f"only {dist} and reversi-core are installed ({', '.join(installed)})")

    if wheels is not None:
        for installed_name in installed:
            check_from_wheel(installed_name, wheels)
        step(f"both were installed from the wheels in {wheels}: every file's hash matches")

    prefix = Path(sys.prefix).resolve()
    for module in ("reversi_core", f"reversi_connector_{name}"):
        try:
            loaded = importlib.import_module(module)
        except ImportError as exc:
            raise ProbeFailure(
                f"import {module} failed: {exc} (a dependency missing from the wheel's metadata?)"
            ) from None
        where = Path(loaded.__file__ or "").resolve()
        expect(where.is_relative_to(prefix), f"{module} imported from {where}, not from {prefix}")
    step(f"reversi_core and reversi_connector_{name} are imported from {prefix}")

    group = available_connectors()
    expect(list(group) == [name], f"entry points reversi.connectors: {group}")
    step(f"entry-point group reversi.connectors holds {name} alone")

    for other in others:
        module = f"reversi_connector_{other}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            expect(exc.name == module, f"import {module} failed on another module: {exc}")
        else:
            raise ProbeFailure(f"import {module} succeeded: another connector is importable")
    if others:
        step(f"no other connector is importable ({', '.join(others)})")


# -- 2. manifests ---------------------------------------------------------------------


def check_manifests(name: str) -> list[dict[str, Any]]:
    bare = without(connector_variables(name))  # manifests need no credentials
    proc = cli("manifests", name, env=bare)
    expect(proc.returncode == 0, f"manifests {name}: {shown(proc)}")
    manifests = json.loads(proc.stdout)
    names = [m["name"] for m in manifests]
    expect(bool(names), f"manifests {name} printed no tool")
    expect(all(n.startswith(f"{name}.") for n in names), f"tools not named {name}.*: {names}")
    every = cli("manifests", "all", env=bare)
    expect(every.returncode == 0, f"manifests all: {shown(every)}")
    expect(json.loads(every.stdout) == manifests, "manifests all differs from manifests NAME")
    step(f"manifests {name}: {len(names)} tools; manifests all prints the same")
    return list(manifests)


# -- 3 and 4. serve and compensate ---------------------------------------------------------


@dataclass
class Probe:
    """A real backend from the connector's certification fixture, and how to reach it."""

    fixture: Any
    handle: Any
    env: dict[str, str]
    options: list[str]


@contextlib.contextmanager
def probe_backend(name: str, work: Path) -> Iterator[Probe | None]:
    """The fixture's backend (seeded) and the environment and options that reach it, or None.

    The connector's own ``testing`` module ships in its wheel, so the clean install has
    its fake (or, for postgres, its throwaway server). A fixture that says nothing about a
    process started by hand (no ``command_line``), or whose backend cannot start here,
    gives None: the probe then only shakes hands.
    """
    fixture = load_fixture(load_connector_class(name))
    if fixture.command_line is None:
        step(f"{name}: its fixture declares no command_line: no real forward call and undo")
        yield None
        return
    try:
        context = fixture.backend(work / "backend")
        handle = context.__enter__()
    except Exception as exc:  # a backend this machine cannot start: say so and shake hands
        step(f"{name}: its fixture's backend did not start here ({type(exc).__name__}: {exc})")
        yield None
        return
    try:
        if fixture.seed is not None:
            fixture.seed(handle)
        env, options = fixture.command_line(handle)
        step(f"{name}: its certification backend ({type(handle).__name__}), as the fixture seeds it")
        yield Probe(fixture, handle, dict(env), list(options))
    finally:
        context.__exit__(None, None, None)


_KIND_PREFIX = re.compile(r"^(?:[A-Za-z]{1,8}[_-]){1,3}")
"""The part of a credential that says what kind it is (``sk_test_``, ``ghp_``, ``xoxb-``),
which a connector may check before it sends anything."""


def secret_variables(name: str) -> set[str]:
    """The variables of connector ``name`` that hold a secret: its credential variable
    and, for an HTTP connector, every setting declared ``secret``."""
    from reversi_core.http import HttpConnector

    cls = load_connector_class(name)
    secret = {cls.credential_env} if cls.credential_env else set()
    if issubclass(cls, HttpConnector):
        secret |= {setting.env for setting in cls.settings if setting.secret}
    return secret


def closed_port(env: Mapping[str, str], secrets: set[str]) -> dict[str, str]:
    """``env`` pointing nowhere: URLs at a closed port on 127.0.0.1, and the values of
    the ``secrets`` variables replaced by :data:`PROBE_SECRET` (which must then never be
    printed), after the prefix that names the credential's kind, so that a connector
    checking it (stripe's ``sk_``) still builds and the probe reaches the closed port.
    Any other value (aws's ``AWS_REGION``) is kept: the connector must still build."""
    out = {}
    for var, value in env.items():
        parsed = urllib.parse.urlsplit(value)
        if parsed.scheme and parsed.netloc:
            user = f"{parsed.username}:{PROBE_SECRET}@" if parsed.username else ""
            out[var] = urllib.parse.urlunsplit(
                (parsed.scheme, f"{user}127.0.0.1:9", parsed.path, parsed.query, "")
            )
        elif var in secrets:
            kind = _KIND_PREFIX.match(value)
            out[var] = (kind.group(0) if kind else "") + PROBE_SECRET
        else:
            out[var] = value
    return out


def compensation_call(tool: str, args: dict[str, Any], step_number: int = 1) -> str:
    return json.dumps(
        {
            "tool": tool,
            "args": args,
            "idempotency_key": f"clean-install-probe-{step_number}",
            "run_id": "run_clean_install_probe",
            "step": step_number,
        }
    )


@dataclass
class Served:
    """What one MCP session with ``reversi-connectors serve`` showed."""

    server: str
    protocol: str
    tools: list[str]
    forward: Any = None  # the CallToolResult of the probe's forward call, if any


async def serve_session(
    name: str, options: list[str], env: dict[str, str], forward: tuple[str, dict[str, Any]] | None
) -> Served:
    """Handshake, list the tools, make the forward call. Checks nothing itself: an
    assertion inside the client's task group would come out wrapped in an exception group."""
    params = StdioServerParameters(command=CLI, args=["serve", name, *options], env=env)
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(TIMEOUT):
                    init = await session.initialize()
                    listing = await session.list_tools()
                    served = Served(
                        server=f"{init.server_info.name} {init.server_info.version}",
                        protocol=init.protocol_version,
                        tools=sorted(t.name for t in listing.tools),
                    )
                    if forward is not None:
                        served.forward = await session.call_tool(*forward)
                    return served
        except BaseException:
            errlog.seek(0)
            print(f"server stderr:\n{errlog.read()[-3000:]}", file=sys.stderr)
            raise


def connector_variables(name: str) -> list[str]:
    """Every environment variable the connector reads, its credential first."""
    cls = load_connector_class(name)
    return [v for v in dict.fromkeys([cls.credential_env, *cls.env_vars]) if v]


def stand_ins(name: str) -> dict[str, str]:
    """Values for the variables the connector needs to be built, reaching nothing: the
    credential and every required setting :data:`PROBE_SECRET`, except the base URL's
    setting of an HTTP connector, a closed port on 127.0.0.1 over https (kubernetes's
    ``KUBE_API_SERVER`` is both its credential variable and its base URL)."""
    from reversi_core.http import HttpConnector

    cls = load_connector_class(name)
    env = {cls.credential_env: PROBE_SECRET} if cls.credential_env else {}
    if issubclass(cls, HttpConnector):
        for setting in cls.settings:
            if setting.required and setting.default is None:
                base = setting.option == cls.base.option
                env[setting.env] = "https://127.0.0.1:9" if base else _stand_in(setting)
    return env


def _stand_in(setting: Any) -> str:
    """:data:`PROBE_SECRET` for a secret; for another setting, the first of a few stand-ins
    that its own check takes (azure's account name is 3-24 lower-case letters and
    digits), so that the connector builds and the probe goes on to reach nothing."""
    if setting.secret or setting.check is None:
        return PROBE_SECRET
    for candidate in (PROBE_SECRET, "probe7f3a9c", "us-east-1"):
        try:
            setting.check(candidate)
        except ValueError:
            continue
        return candidate
    return PROBE_SECRET


def without(variables: list[str]) -> dict[str, str]:
    """This process's environment minus ``variables``: a developer's own credentials
    never reach the probe."""
    return {k: v for k, v in os.environ.items() if k not in variables}


def first_mapping(fixture: Any, tool: str) -> dict[str, Any] | None:
    """The first example of ``tool`` that is plain arguments (not a builder), if any."""
    for example in fixture.examples.get(tool, ()):
        if isinstance(example, Mapping):
            return dict(example)
    return None


def check_without_credentials(name: str, manifests: list[dict[str, Any]], probe: Probe | None) -> None:
    """Without its credential, serve exits 2 and compensate exits 1, each naming the
    variable; with the variables pointing at a closed local port, compensate exits 1
    without showing the credential."""
    cls = load_connector_class(name)
    var = cls.credential_env
    assert var is not None
    bare = without(connector_variables(name))
    line = clean_failure(cli("serve", name, env=bare), 2, f"serve {name} without {var}")
    expect(var in line, f"serve {name} without {var}: the reason does not name {var}: {line!r}")
    step(f"serve {name} without {var}: exit 2: {line}")

    declared = [m["compensation"]["tool"] for m in manifests if m.get("compensation")]
    undo = declared[0] if declared else manifests[0]["name"]
    fixture = load_fixture(cls)
    payload = compensation_call(undo, first_mapping(fixture, undo) or {})
    if probe is not None:
        what = f"compensate {undo} with its variables at a closed port"
        closed = dict(bare, **closed_port(probe.env, secret_variables(name)))
        line = clean_failure(cli("compensate", stdin=payload, env=closed), 1, what)
        step(f"{what}: exit 1, no credential shown: {line}")

    what = f"compensate {undo} without {var}"
    line = clean_failure(cli("compensate", stdin=payload, env=bare), 1, what)
    expect(var in line, f"{what}: exit 1, but the reason does not name {var}: {line!r}")
    step(f"{what}: exit 1: {line}")


def choose_forward(manifests: list[dict[str, Any]], fixture: Any) -> str | None:
    """The first undoable tool (sorted) the fixture has an example for."""
    for manifest in sorted(manifests, key=lambda m: m["name"]):
        if manifest.get("compensation") and fixture.examples.get(manifest["name"]):
            return str(manifest["name"])
    return None


def check_serve_and_compensate(name: str, manifests: list[dict[str, Any]], probe: Probe | None) -> None:
    """Serve and list; with a backend, a forward call through MCP and its undo, twice."""
    variables = connector_variables(name)
    bare = without(variables)
    wanted = sorted(m["name"] for m in manifests)
    if probe is None:  # stand-ins: the handshake needs no backend
        env = dict(bare, **stand_ins(name))
        served = anyio.run(serve_session, name, [], env, None)
        step(f"serve {name}: MCP handshake with {served.server}, protocol {served.protocol}")
        expect(served.tools == wanted, f"tools/list gives {served.tools}, the manifests {wanted}")
        step(f"serve {name}: tools/list gives the {len(wanted)} manifest tools")
        return
    fixture, handle = probe.fixture, probe.handle
    env = dict(bare, **probe.env)
    tool = choose_forward(manifests, fixture)
    expect(tool is not None, f"{name}: no undoable tool with an example in the fixture")
    assert tool is not None
    connector = fixture.build(handle)
    try:
        args = anyio.run(ExampleCalls(handle, connector).prepare, fixture.examples[tool][0])
    finally:
        anyio.run(connector.aclose)
    before = fixture.fingerprint(handle)
    served = anyio.run(serve_session, name, probe.options, env, (tool, args))
    step(f"serve {name}: MCP handshake with {served.server}, protocol {served.protocol}")
    expect(served.tools == wanted, f"tools/list gives {served.tools}, the manifests {wanted}")
    step(f"serve {name}: tools/list gives the {len(wanted)} manifest tools")
    forward = served.forward
    expect(not forward.is_error, f"{tool} through MCP failed: {forward}")
    result = forward.structured_content
    expect(isinstance(result, dict), f"{tool} returned no structured content: {forward}")
    expect(fixture.fingerprint(handle) != before, f"{tool} through MCP changed nothing")
    step(f"serve {name}: {tool} through MCP succeeded and changed the backend")
    compensation = {m["name"]: m for m in manifests}[tool]["compensation"]
    undo = compensation["tool"]
    try:  # core's own mapping, as the engine computes it at rollback
        undo_args = evaluate_argument_map(Compensation.model_validate(compensation), args, result)
    except MappingFailed as exc:
        raise ProbeFailure(str(exc)) from exc
    residue = fixture.residue.get(tool)
    normalise = residue.normalise if residue is not None else (lambda value: value)
    for attempt in ("", " again (idempotent)"):
        proc = cli("compensate", *probe.options, stdin=compensation_call(undo, undo_args), env=env)
        expect(proc.returncode == 0, f"compensate {undo}{attempt}: {shown(proc)}")
        expect(isinstance(json.loads(proc.stdout), dict), f"compensate stdout: {proc.stdout}")
        now = fixture.fingerprint(handle)
        expect(
            normalise(copy.deepcopy(now)) == normalise(copy.deepcopy(before)),
            f"compensate {undo}{attempt}: the backend is not as before {tool}",
        )
        step(f"compensate {undo}{attempt}: exit 0, the {tool} is undone")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", help="the connector installed in this environment")
    parser.add_argument("--others", default="", help="comma-separated other connector tokens")
    parser.add_argument(
        "--wheels", type=Path, help="check that reversi-* were installed from the wheels in DIR"
    )
    args = parser.parse_args(argv)
    others = [o for o in args.others.split(",") if o]
    print(f"clean install of reversi-connector-{args.name} in {sys.prefix}")
    failures: list[str] = []

    def attempt(check: Callable[..., Any], *check_args: Any) -> Any:
        try:
            return check(*check_args)
        except ProbeFailure as exc:
            failures.append(str(exc))
            print(f"  FAILED  {exc}", flush=True)
            return None

    attempt(check_isolation, args.name, others, args.wheels)
    manifests = None if failures else attempt(check_manifests, args.name)
    if manifests:
        with (
            tempfile.TemporaryDirectory(prefix="reversi-clean-install-") as work,
            probe_backend(args.name, Path(work)) as probe,
        ):
            if load_connector_class(args.name).credential_env:
                attempt(check_without_credentials, args.name, manifests, probe)
            attempt(check_serve_and_compensate, args.name, manifests, probe)
    if failures:
        for failure in failures:
            print(f"clean_install_check: {args.name}: FAILED: {failure}", file=sys.stderr)
        return 1
    print(f"clean install of reversi-connector-{args.name}: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
