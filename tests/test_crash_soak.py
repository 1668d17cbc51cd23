"""Crash soak: reversi-gateway killed with SIGKILL at random moments over 1,000 fs writes.

On both journal stores: a SQLite data directory (``--data``), and a PostgreSQL journal
in a fresh schema of a throwaway server on 127.0.0.1 (``reversi_core.testing.postgres``),
named by ``$REVERSI_JOURNAL`` so that its URL, password and all, is on no command line.

An MCP client (raw JSON-RPC lines on the gateway's stdin and stdout, as in
tests/test_framing.py, so that it knows the gateway's pid and can kill it at any point of a
call) drives ``reversi-gateway`` in front of ``reversi-connectors serve fs`` over a small
tree with unusual permission bits. Every call is a write (``fs.write_file``,
``fs.delete_file``, ``fs.make_dir``, ``fs.move_file``; a few deletes of missing files
fail) whose effect on disk identifies it: each write's bytes name the call. The plan and
the kill schedule come from one seed (``REVERSI_SOAK_SEED``, printed at the start and in
every failure); ``REVERSI_SOAK_KILLS`` sets how many kills (default 12).

A kill is either *in flight* (the call is sent, and the gateway's process group is
killed after a random delay within about one call's latency, so that it lands before the
step is journaled, between journal and upstream, while the upstream writes, or after the
outcome was journaled) or *between calls* (right after an answer). The upstream, in a
session of its own, is not killed: it loses its client and must exit by itself, and only
then is the disk examined, as the person who finds the crash would: did the in-flight
call take effect, and which backup did it make? A new gateway then continues the soak in
a new run (a gateway has no way to continue an earlier run). The disk must match the
model of every call made so far after every crash.

Then the journal is checked against what was sent and what the disk shows: every run is
one gateway's, its steps are exactly its calls in order with their arguments, every
answered call is journaled with the outcome the client was told, no call that took
effect is missing (CALL-3, JNL-2) and every call in flight at a kill is ``uncertain``
(JNL-1, GW-4), unless its outcome was journaled before the kill, in which case the disk
agrees with it. Each uncertain step is resolved with ``reversi resolve`` from what the
disk showed (``--applied --result-json`` with the result rebuilt from the disk, or
``--not-applied``), and the runs are rolled back newest first (RB-3): the tree must then
equal the starting snapshot byte for byte and mode for mode.

The rollback runs in this process, through the engine's ``Run.rollback`` (what
``reversi rollback`` runs) with the fs connector's compensations in process
(``compensator_for``): ``reversi rollback --compensator-cmd`` starts one process per
compensation, about a second each on a loaded machine, far too slow for 1,000 steps.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import selectors
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from reversi_connector_fs import FsConnector
from reversi_core import Registry, Run
from reversi_core.connector import compensator_for
from reversi_core.journal import StepRecord, StepState, open_journal

if TYPE_CHECKING:  # needs psycopg, imported by the PostgreSQL half only
    from reversi_core.testing.postgres import PostgresServer

BIN = Path(sys.executable).parent
BACKUPS = ".reversi-backups"
CALLS = 1000
KILLS = int(os.environ.get("REVERSI_SOAK_KILLS", "12"))
MIN_GAP = 4  # calls between two kills, so that every gateway answers some calls
LIMIT_SECONDS = 300.0  # a hang guard, far above what the soak takes (no speed goal)
MESSAGE_TIMEOUT = 60.0


def script(name: str) -> str:
    """The console script installed next to this interpreter, else PATH's."""
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    assert found, f"{name} is not installed: pip install -e packages/reversi-core"
    return found


# -- the tree and its model --------------------------------------------------------------

Fingerprint = dict[str, tuple[Any, ...]]


def fingerprint(root: Path, *, modes_of_dirs: bool = True) -> Fingerprint:
    """Every entry under ``root`` but the backups: kind, permission bits, sha256 of files."""
    out: Fingerprint = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == root and BACKUPS in dirnames:
            dirnames.remove(BACKUPS)
        for name in [*dirnames, *filenames]:
            path = here / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", oct(mode)) if modes_of_dirs else ("dir",)
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", oct(mode), hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                out[rel] = ("other", stat.S_IFMT(st.st_mode))
    return out


def differences(expected: Fingerprint, actual: Fingerprint) -> list[str]:
    lines = [f"missing: {k} {expected[k]}" for k in sorted(expected.keys() - actual.keys())]
    lines += [f"extra: {k} {actual[k]}" for k in sorted(actual.keys() - expected.keys())]
    lines += [
        f"changed: {k} {expected[k]} -> {actual[k]}"
        for k in sorted(expected.keys() & actual.keys())
        if expected[k] != actual[k]
    ]
    return lines


def make_tree(root: Path, rng: random.Random) -> None:
    """Nested directories (one 0o750, one empty 0o700) and 40 files, text and binary."""
    dirs = ["a", "a/b", "a/b/c", "d", "e", "empty"]
    for d in dirs:
        (root / d).mkdir(parents=True)
    (root / "e").chmod(0o750)
    (root / "empty").chmod(0o700)
    modes = [0o644, 0o644, 0o600, 0o640, 0o755, 0o751, 0o444]
    for n in range(40):
        where = rng.choice(["", "a", "a/b", "a/b/c", "d", "e"])
        path = root / where / f"orig{n}.{'bin' if n % 5 == 0 else 'txt'}"
        if n % 5 == 0:
            path.write_bytes(b"\0\xff" + rng.randbytes(rng.randrange(1, 3000)))
        else:
            path.write_text(f"original {n}\n" + "x" * rng.randrange(0, 2000))
        path.chmod(rng.choice(modes))


@dataclass
class Model:
    """What the tree must hold: files (bytes, mode) and directories, by relative path."""

    files: dict[str, tuple[bytes, int]]
    dirs: set[str]
    new_mode: int

    @classmethod
    def of(cls, root: Path) -> Model:
        umask = os.umask(0)
        os.umask(umask)
        files: dict[str, tuple[bytes, int]] = {}
        dirs: set[str] = set()
        for rel, entry in fingerprint(root).items():
            if entry[0] == "dir":
                dirs.add(rel)
            else:
                files[rel] = ((root / rel).read_bytes(), int(entry[1], 8))
        return cls(files, dirs, 0o666 & ~umask)

    def fingerprint(self) -> Fingerprint:
        out: Fingerprint = {d: ("dir",) for d in self.dirs}
        for rel, (data, mode) in self.files.items():
            out[rel] = ("file", oct(mode), hashlib.sha256(data).hexdigest())
        return out

    def apply(self, call: Call) -> None:
        a = call.args
        if call.fails:
            return
        if call.tool == "fs.write_file":
            old = self.files.get(a["path"])
            self.files[a["path"]] = (call.data, old[1] if old else self.new_mode)
        elif call.tool == "fs.delete_file":
            del self.files[a["path"]]
        elif call.tool == "fs.make_dir":
            self.dirs.add(a["path"])
        else:
            self.files[a["destination"]] = self.files.pop(a["source"])


@dataclass
class Call:
    """One planned call; ``data`` is what a write stores, ``fails`` an expected failure."""

    index: int
    tool: str
    args: dict[str, Any]
    data: bytes = b""
    fails: bool = False
    existed: bool = False  # write: the file was there; move: the destination was

    def took_effect(self, root: Path) -> bool:
        """What the disk shows, right after a crash, about this call (it is unique)."""
        if self.fails:
            return False
        a = self.args
        if self.tool == "fs.write_file":
            path = root / a["path"]
            return path.is_file() and path.read_bytes() == self.data
        if self.tool == "fs.delete_file":
            return not os.path.lexists(root / a["path"])
        if self.tool == "fs.make_dir":
            return (root / a["path"]).is_dir()
        return not os.path.lexists(root / a["source"])


def plan(model: Model, index: int, rng: random.Random, seed: int) -> Call:
    """A random call that the model says is valid (or, rarely, one that must fail)."""
    files = sorted(model.files)
    dirs = sorted(model.dirs | {""})
    roll = rng.random()
    tag = f"call {index:04d} of soak {seed}"
    if roll < 0.03:
        return Call(index, "fs.delete_file", {"path": f"missing/{index}.txt"}, fails=True)
    if roll < 0.13 and len(files) > 15:
        return Call(index, "fs.delete_file", {"path": rng.choice(files)})
    if roll < 0.20:
        parent = rng.choice(dirs)
        return Call(index, "fs.make_dir", {"path": f"{parent}/d{index}".lstrip("/")})
    if roll < 0.40:
        source = rng.choice(files)
        if rng.random() < 0.3:
            destination = rng.choice([f for f in files if f != source])
            args = {"source": source, "destination": destination, "overwrite": True}
            return Call(index, "fs.move_file", args, existed=True)
        destination = f"{rng.choice(dirs)}/m{index}.dat".lstrip("/")
        return Call(index, "fs.move_file", {"source": source, "destination": destination})
    new = f"{rng.choice(dirs)}/n{index}.txt".lstrip("/")
    path = rng.choice(files) if rng.random() < 0.6 else new
    existed = path in model.files
    if rng.random() < 0.2:
        data = b"\0" + tag.encode() + b"\0" + rng.randbytes(rng.randrange(0, 2000))
        args = {"path": path, "content": base64.b64encode(data).decode(), "encoding": "base64"}
        return Call(index, "fs.write_file", args, data=data, existed=existed)
    text = f"{tag}\n" + "y" * rng.randrange(0, 2000)
    return Call(
        index, "fs.write_file", {"path": path, "content": text}, text.encode(), False, existed
    )


# -- the gateway, spoken to in raw lines -------------------------------------------------


def _proc_start(pid: int) -> str | None:
    """The start time of ``pid`` (field 22 of /proc/PID/stat), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (from /proc/PID/task/PID/children, else a scan)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            return [int(c) for c in fh.read().split()]
    except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN
        pass
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with suppress(OSError), open(f"/proc/{entry}/stat", encoding="ascii") as fh:
                if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
    return found


class Gateway:
    """One reversi-gateway process in a process group of its own, and its upstream."""

    def __init__(self, argv: list[str], env: dict[str, str], errlog: Path) -> None:
        self.errlog = errlog
        self._err = errlog.open("ab")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=env,
            start_new_session=True,
        )
        self._buffer = b""
        self._ids = iter(range(1, 1 << 30))
        self.upstream: tuple[int, str] | None = None

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float = MESSAGE_TIMEOUT) -> dict[str, Any] | None:
        """The next message, or None at end of file or after ``timeout`` seconds."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def handshake(self) -> None:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "crash-soak", "version": "1"},
        }
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        answer = self.recv()
        assert answer is not None, self.stderr()
        assert "result" in answer, (answer, self.stderr())
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # the upstream was started before the gateway answered: its only child
        children = _children(self.proc.pid)
        assert len(children) == 1, (children, self.stderr())
        start = _proc_start(children[0])
        assert start is not None
        self.upstream = (children[0], start)

    def send_call(self, call: Call) -> int:
        rid = next(self._ids)
        params = {"name": call.tool, "arguments": call.args}
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
        return rid

    def answer(self, rid: int) -> dict[str, Any]:
        message = self.recv()
        assert message is not None, f"no answer to call {rid}: {self.stderr()}"
        assert message.get("id") == rid, message
        result: dict[str, Any] = message["result"]
        return result

    def kill(self) -> None:
        """SIGKILL the gateway's process group; the upstream is left to notice."""
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def drain(self) -> list[dict[str, Any]]:
        """What the dead gateway had written and not yet been read."""
        out = []
        while (message := self.recv(timeout=10.0)) is not None:
            out.append(message)
        return out

    def signal_upstream(self, signum: int) -> None:
        assert self.upstream is not None
        assert self.upstream_alive(), self.stderr()
        os.killpg(self.upstream[0], signum)

    def upstream_alive(self) -> bool:
        return self.upstream is not None and _proc_start(self.upstream[0]) == self.upstream[1]

    def wait_upstream_gone(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while self.upstream_alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)

    def cleanup(self) -> None:
        """Leave no process behind, whatever happened: both groups, then the pipes."""
        if self.proc.poll() is None:
            self.kill()
        if self.upstream_alive():
            assert self.upstream is not None
            with suppress(ProcessLookupError):
                os.killpg(self.upstream[0], signal.SIGKILL)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with suppress(OSError):
                    pipe.close()
        self._err.close()

    def stderr(self) -> str:
        return self.errlog.read_text(errors="replace")[-3000:]


# -- stores ------------------------------------------------------------------------------


JOURNAL_VARIABLES = ("REVERSI_JOURNAL", "REVERSI_DATA")


@dataclass
class Store:
    """Where the journal lives, and how the gateway and ``reversi`` are told.

    SQLite: ``--data DIR``. PostgreSQL: ``$REVERSI_JOURNAL``, so that the URL, which
    carries a password, is on no command line (and never in a failure's message).
    """

    name: str
    location: str

    def flags(self) -> list[str]:
        return ["--data", self.location] if self.name == "sqlite" else []

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in JOURNAL_VARIABLES}
        if self.name == "postgresql":
            env["REVERSI_JOURNAL"] = self.location
        return env


@pytest.fixture(scope="module")
def pg_server() -> PostgresServer:
    """A throwaway PostgreSQL server on 127.0.0.1; fails (never skips) without one."""
    try:
        from reversi_core.testing.postgres import (
            PostgresUnavailable,
            shared_server,
        )
    except ImportError as exc:
        pytest.fail(f"the PostgreSQL soak needs psycopg: {exc}", pytrace=False)
    try:
        server = shared_server()
    except PostgresUnavailable as exc:
        pytest.fail(f"no PostgreSQL server for the soak: {exc}", pytrace=False)
    # not stopped here: other fixtures of this process (the journal's, the connector's,
    # the soak's) share it; shared_server stops it when the process exits
    return server


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        yield Store("sqlite", str(tmp_path / "data"))
        return
    from reversi_core.testing.postgres import fresh_schema

    with fresh_schema(request.getfixturevalue("pg_server"), prefix="soak") as url:
        yield Store("postgresql", url)


# -- the soak ------------------------------------------------------------------------------


@dataclass
class Sent:
    """A call as one gateway saw it: its answer, or what the disk showed after the crash."""

    call: Call
    result: dict[str, Any] | None = None
    in_flight: bool = False
    took_effect: bool = False
    new_backups: list[str] = field(default_factory=list)
    rebuilt: dict[str, Any] | None = None  # the result, rebuilt from the disk after the crash
    fate: str = ""  # for a call in flight: what the journal and the disk say became of it


@dataclass
class Instance:
    """One gateway's life: its run and the calls sent to it."""

    run_id: str | None = None
    sent: list[Sent] = field(default_factory=list)
    killed: str | None = None  # one of KINDS, or None (closed normally)


KINDS = ("in_flight", "between", "upstream_frozen")


def kill_schedule(rng: random.Random) -> dict[int, str]:
    """Call index -> kind of kill (as many of each), MIN_GAP calls apart, none at the start."""
    picks: list[int] = []
    while len(picks) < KILLS:
        i = rng.randrange(MIN_GAP, CALLS - 1)
        if all(abs(i - p) >= MIN_GAP for p in picks):
            picks.append(i)
    kinds = [KINDS[n % len(KINDS)] for n in range(KILLS)]
    rng.shuffle(kinds)
    return dict(zip(sorted(picks), kinds, strict=True))


def backups(root: Path) -> set[str]:
    folder = root / BACKUPS
    return set(os.listdir(folder)) if folder.is_dir() else set()


class Soak:
    def __init__(self, tmp_path: Path, store: Store, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.store = store
        self.root = tmp_path / "tree"
        self.root.mkdir()
        make_tree(self.root, self.rng)
        self.before = fingerprint(self.root)
        self.model = Model.of(self.root)
        self.manifests = tmp_path / "manifests"
        self.manifests.mkdir()
        out = subprocess.run(
            [script("reversi-connectors"), "manifests", "fs", "--format", "json"],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        (self.manifests / "fs.json").write_text(out.stdout)
        self.tmp = tmp_path
        self.instances: list[Instance] = []
        self.latencies: list[float] = []
        self.started = time.monotonic()

    def why(self) -> str:
        return f"seed {self.seed} (rerun with REVERSI_SOAK_SEED={self.seed})"

    def argv(self) -> list[str]:
        argv = [script("reversi-gateway"), "--manifests", str(self.manifests), *self.store.flags()]
        argv += ["--upstream-cmd", script("reversi-connectors")]
        for arg in ("serve", "fs", "--root", str(self.root)):
            argv += ["--upstream-arg", arg]
        return argv

    def check_disk(self, when: str) -> None:
        diff = differences(self.model.fingerprint(), fingerprint(self.root, modes_of_dirs=False))
        assert not diff, f"{self.why()}: {when}, the tree is not what the calls made: {diff[:10]}"

    def run_gateways(self) -> None:
        schedule = kill_schedule(self.rng)
        index = 0
        while index < CALLS:
            inst = Instance()
            self.instances.append(inst)
            gw = Gateway(
                self.argv(), self.store.env(), self.tmp / f"gateway{len(self.instances)}.err"
            )
            try:
                gw.handshake()
                index = self.drive(gw, inst, index, schedule)
                if inst.killed is None:
                    assert gw.close() == 0, gw.stderr()
                else:
                    assert gw.wait_upstream_gone(), (
                        f"{self.why()}: the upstream outlived its killed gateway by 30 s"
                    )
            finally:
                gw.cleanup()
            self.check_disk(f"after gateway {len(self.instances)} ({inst.killed or 'closed'})")
            assert time.monotonic() - self.started < LIMIT_SECONDS, f"{self.why()}: too slow"

    def drive(self, gw: Gateway, inst: Instance, index: int, schedule: dict[int, str]) -> int:
        """Make calls from ``index`` until a kill or the end; the next index."""
        while index < CALLS:
            call = plan(self.model, index, self.rng, self.seed)
            kind = schedule.get(index)
            index += 1
            if kind in ("in_flight", "upstream_frozen"):
                self.in_flight(gw, inst, call, frozen=kind == "upstream_frozen")
                return index
            began = time.monotonic()
            result = gw.answer(gw.send_call(call))
            self.latencies.append(time.monotonic() - began)
            self.record(inst, Sent(call, result, took_effect=not call.fails))
            if kind == "between":
                gw.kill()
                inst.killed = kind
                return index
        return index

    def record(self, inst: Instance, sent: Sent) -> None:
        result = sent.result
        if result is not None:
            meta = result["_meta"]
            expected = "failed" if sent.call.fails else "succeeded"
            assert meta["reversi/outcome"] == expected, (self.why(), sent.call, result)
            assert inst.run_id in (None, meta["reversi/run"]), (self.why(), inst.run_id, meta)
            inst.run_id = meta["reversi/run"]
            assert meta["reversi/step"] == len(inst.sent) + 1, (self.why(), meta, len(inst.sent))
        if sent.took_effect:
            self.model.apply(sent.call)
        inst.sent.append(sent)

    def in_flight(self, gw: Gateway, inst: Instance, call: Call, *, frozen: bool) -> None:
        """Send ``call``, kill the gateway within about one call's time, look at the disk.

        ``frozen``: the upstream is stopped (SIGSTOP) before the call is sent and killed
        after the gateway, so that it never reads the call the gateway may have journaled
        and passed on: the step is then uncertain and did not take effect.
        """
        known = backups(self.root)
        typical = statistics.median(self.latencies[-50:])
        if frozen:
            gw.signal_upstream(signal.SIGSTOP)
        rid = gw.send_call(call)
        time.sleep(self.rng.uniform(0.0, 1.25 * typical))
        gw.kill()
        if frozen:
            gw.signal_upstream(signal.SIGKILL)
        inst.killed = "upstream_frozen" if frozen else "in_flight"
        late = [m for m in gw.drain() if m.get("id") == rid]
        assert gw.wait_upstream_gone(), f"{self.why()}: the upstream outlived its gateway by 30 s"
        # the upstream is gone: the disk says what happened, as it would to a person
        sent = Sent(call, late[0]["result"] if late else None, in_flight=True)
        sent.took_effect = call.took_effect(self.root)
        sent.new_backups = sorted(backups(self.root) - known)
        if sent.took_effect:
            sent.rebuilt = rebuilt_result(self.root, sent)
        if sent.result is not None:
            assert sent.took_effect is not call.fails, (self.why(), call, sent.result)
        self.record(inst, sent)


def rebuilt_result(root: Path, sent: Sent) -> dict[str, Any]:
    """The result an uncertain call that took effect would have returned, from the disk."""
    call, a = sent.call, sent.call.args
    made = sent.new_backups
    if call.tool == "fs.write_file":
        assert len(made) == (1 if call.existed else 0), (call, made)
        st = (root / a["path"]).stat()
        return {
            "path": a["path"],
            "existed": call.existed,
            "backup": made[0] if made else None,
            "size": len(call.data),
            "mode": stat.S_IMODE(st.st_mode),
            "sha256": hashlib.sha256(call.data).hexdigest(),
        }
    if call.tool == "fs.delete_file":
        assert len(made) == 1, (call, made)
        st = (root / BACKUPS / made[0]).stat()
        return {
            "path": a["path"],
            "existed": True,
            "backup": made[0],
            "mode": stat.S_IMODE(st.st_mode),
            "size": st.st_size,
        }
    if call.tool == "fs.make_dir":
        return {"path": a["path"], "created": [a["path"]]}
    assert len(made) == (1 if call.existed else 0), (call, made)
    moved = root / a["destination"]
    return {
        "source": a["source"],
        "destination": a["destination"],
        "replaced_backup": made[0] if made else None,
        "sha256": hashlib.sha256(moved.read_bytes()).hexdigest(),
        "mode": stat.S_IMODE(moved.stat().st_mode),
    }


# -- after the soak: the journal, the person, the rollback -------------------------------


def reversi(store: Store, *args: str) -> subprocess.CompletedProcess[str]:
    """``reversi ARGS`` on the store's journal."""
    return subprocess.run(
        [script("reversi"), *args, *store.flags()],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=store.env(),
    )


def check_journal(soak: Soak, steps_of: dict[str, list[StepRecord]]) -> list[tuple[str, Sent]]:
    """Every run is one gateway's and holds its calls; the uncertain steps, to resolve."""
    why = soak.why()
    runs = [inst.run_id or "" for inst in soak.instances]
    assert sorted(steps_of) == sorted(runs), (why, sorted(steps_of), runs)
    uncertain: list[tuple[str, Sent]] = []
    for inst, run_id in zip(soak.instances, runs, strict=True):
        steps, sent = steps_of[run_id], inst.sent
        assert [s.seq for s in steps] == list(range(1, len(steps) + 1)), (why, run_id)
        lost = len(sent) - len(steps)  # only a call in flight may be missing
        in_flight = inst.killed in ("in_flight", "upstream_frozen")
        assert lost in ((0, 1) if in_flight else (0,)), (why, run_id, lost)
        for step, s in zip(steps, sent, strict=False):
            assert (step.tool, step.args) == (s.call.tool, s.call.args), (why, step, s.call)
            if s.result is not None:
                assert step.state.value == s.result["_meta"]["reversi/outcome"], (why, step)
        if not in_flight:
            continue
        s = sent[-1]
        how = "frozen upstream" if inst.killed == "upstream_frozen" else "in flight"
        if lost:
            # CALL-3, JNL-2: a write is journaled pending before it runs, so one that is
            # not journaled must not have taken effect
            assert not s.took_effect, f"{why}: a write that took effect is not journaled: {s.call}"
            s.fate = f"{how}, not journaled"
            continue
        last = steps[-1]
        if s.result is not None:
            s.fate = f"{how}, answered before the kill"
            continue
        # JNL-1, GW-4: the call in flight at the kill is uncertain (the next gateway's
        # open of the journal turned its dead owner's pending step so), unless its outcome
        # was journaled before the kill, and then the disk agrees with that outcome
        if last.state is StepState.UNCERTAIN:
            assert last.error, (why, last)
            uncertain.append((run_id, s))
            s.fate = f"{how}, uncertain, {'applied' if s.took_effect else 'not applied'}"
            continue
        assert last.state in (StepState.SUCCEEDED, StepState.FAILED), (why, last)
        assert s.took_effect is (last.state is StepState.SUCCEEDED), (why, last, s)
        s.fate = f"{how}, {last.state.value} but not answered"
    return uncertain


def resolve(soak: Soak, run_id: str, s: Sent, seq: int) -> None:
    """``reversi resolve`` as the person would, from what the disk showed after the crash."""
    flags = ["--manifests", str(soak.manifests), "--json"]
    if s.took_effect:
        assert s.rebuilt is not None
        done = reversi(
            soak.store,
            "resolve",
            run_id,
            str(seq),
            "--applied",
            "--result-json",
            json.dumps(s.rebuilt),
            *flags,
        )
    else:
        done = reversi(soak.store, "resolve", run_id, str(seq), "--not-applied", *flags)
    assert done.returncode == 0, (soak.why(), done.stdout, done.stderr)
    step = json.loads(done.stdout)
    assert step["resolution"] == ("applied" if s.took_effect else "not_applied"), step
    if s.took_effect:
        assert step["compensation"] is not None, (soak.why(), step)


async def roll_back(soak: Soak) -> list[str]:
    """Every run newest first, in this process: each completes at once, undoing exactly the
    calls that took effect (RB-3: a step resolved not applied is left alone)."""
    compensate = compensator_for([FsConnector(soak.root)])
    problems: list[str] = []
    with open_journal(soak.store.location, create=False) as journal:
        for inst in reversed(soak.instances):
            assert inst.run_id is not None
            run = Run.open(journal, Registry({}), inst.run_id)
            report = await run.rollback(compensate=compensate)
            took_effect = [n for n, s in enumerate(inst.sent, 1) if s.took_effect]
            if not report.complete or sorted(report.compensated_now) != took_effect:
                problems.append(json.dumps(report.to_json())[:3000])
                continue
            again = await run.rollback(compensate=compensate)  # RB-7: nothing twice
            if not again.complete or again.compensated_now:
                problems.append(f"{inst.run_id}: a second rollback did {again.to_json()}")
    return problems


@pytest.mark.slow
@pytest.mark.req("GW-4", "JNL-1", "JNL-2", "CALL-3", "RB-3")
def test_gateway_killed_at_random_over_1000_writes_loses_nothing_and_rolls_back(
    tmp_path: Path, store: Store
) -> None:
    seed = int(os.environ.get("REVERSI_SOAK_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"crash soak: {store.name} journal, {CALLS} calls, {KILLS} kills, seed {seed}")
    began = time.monotonic()
    soak = Soak(tmp_path, store, seed)
    soak.run_gateways()
    driven = time.monotonic()
    assert sum(len(i.sent) for i in soak.instances) == CALLS, soak.why()

    with open_journal(store.location, create=False) as journal:
        steps_of = {r.id: journal.list_steps(r.id) for r in journal.list_runs()}
    uncertain = check_journal(soak, steps_of)
    for run_id, s in uncertain:
        resolve(soak, run_id, s, len(steps_of[run_id]))
    resolved = time.monotonic()

    problems = anyio.run(roll_back, soak)
    assert not problems, (soak.why(), problems)
    diff = differences(soak.before, fingerprint(soak.root))
    assert not diff, f"{soak.why()}: the rollback left the tree changed: {diff[:20]}"
    listed = reversi(store, "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    statuses = {r["id"]: r["status"] for r in json.loads(listed.stdout)}
    assert statuses == {i.run_id: "rolled_back" for i in soak.instances}, (soak.why(), statuses)
    done = time.monotonic()

    tally = Counter(s.fate for i in soak.instances for s in i.sent if s.fate)
    tally["between calls"] = sum(1 for i in soak.instances if i.killed == "between")
    print(
        f"crash soak seed {seed}: {len(soak.instances)} gateways; {dict(tally)}; calls and "
        f"kills {driven - began:.1f} s, checks and resolutions {resolved - driven:.1f} s, "
        f"rollback {done - resolved:.1f} s, total {done - began:.1f} s"
    )
