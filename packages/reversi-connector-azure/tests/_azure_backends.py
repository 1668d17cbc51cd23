"""Backends for the azure tests: the package's fake, and Azurite (helpers; conftest.py makes the fixtures).

Azurite comes from npm (``azurite@3.35``, the newest that runs on Node 20), installed by
noxfile.py's tests and package sessions from this package's ``[tool.reversi]
npm-test-tools`` into ``.ci/node``; ``REVERSI_NODE_BIN`` names its ``bin`` folder. It is
started once per test session on 127.0.0.1 over HTTPS with a ``trustme`` certificate and
``--oauth basic``, which accepts an unsigned JWT whose issuer is under
``https://sts.windows.net/`` and whose audience is ``https://storage.azure.com``.
"""

from __future__ import annotations

import base64
import email.utils
import itertools
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import trustme

from reversi_connector_azure import API_VERSION, AzureConnector
from reversi_connector_azure.testing import ACCOUNT, FakeBlobStorage
from reversi_core.http import Timeouts

CONTAINERS = (f"reversi-test-{n}" for n in itertools.count(1))
AZURITE_ACCOUNT = "devstoreaccount1"
"""Azurite's built-in account."""


def azurite_binary() -> str:
    """``azurite-blob`` from ``REVERSI_NODE_BIN``, the workspace's .ci/node, or the PATH."""
    candidates = []
    if os.environ.get("REVERSI_NODE_BIN"):
        candidates.append(Path(os.environ["REVERSI_NODE_BIN"]) / "azurite-blob")
    for parent in Path(__file__).resolve().parents:
        candidates.append(parent / ".ci" / "node" / "node_modules" / ".bin" / "azurite-blob")
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("azurite-blob")
    if found is None:
        raise RuntimeError(
            "azurite-blob is not installed: run the tests through nox (it installs the npm-test-tools "
            "of packages/reversi-connector-azure/pyproject.toml), or npm install --prefix .ci/node azurite@3.35"
        )
    return found


def entra_token() -> str:
    """An unsigned JWT that Azurite's ``--oauth basic`` accepts (a real Entra token is signed)."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    tenant = "ab1f708d-50f6-404c-a006-d71b2ac7a606"
    claims = {
        "iss": f"https://sts.windows.net/{tenant}/",
        "aud": "https://storage.azure.com",
        "iat": now - 60,
        "nbf": now - 60,
        "exp": now + 6 * 3600,
        "oid": "reversi-tests",
        "tid": tenant,
    }
    return part({"alg": "none", "typ": "JWT"}) + "." + part(claims) + "."


@dataclass
class Azurite:
    """A running Azurite Blob service over HTTPS."""

    url: str
    ca_path: Path
    token: str
    process: subprocess.Popen[bytes]
    workdir: tempfile.TemporaryDirectory[str]
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(
            base_url=self.url,
            verify=ssl.create_default_context(cafile=str(self.ca_path)),
            timeout=10,
            headers={"Authorization": f"Bearer {self.token}", "x-ms-version": API_VERSION},
        )

    @classmethod
    def start(cls) -> Azurite:
        workdir = tempfile.TemporaryDirectory(prefix="azurite-")
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        key_path, cert_path, ca_path = (
            Path(workdir.name) / n for n in ("key.pem", "cert.pem", "ca.pem")
        )
        cert.private_key_pem.write_to_path(str(key_path))
        cert.cert_chain_pems[0].write_to_path(str(cert_path))
        ca.cert_pem.write_to_path(str(ca_path))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        process = subprocess.Popen(
            [
                azurite_binary(),
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(port),
                "--oauth",
                "basic",
                "--cert",
                str(cert_path),
                "--key",
                str(key_path),
                "--inMemoryPersistence",
                "--disableTelemetry",
                "--silent",
                "--skipApiVersionCheck",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=workdir.name,
        )
        running = cls(
            f"https://127.0.0.1:{port}/{AZURITE_ACCOUNT}", ca_path, entra_token(), process, workdir
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                running.http.get("", params={"comp": "list"}, headers=running.dated())
                return running
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    running.stop()
                    raise RuntimeError("Azurite did not start") from None
                time.sleep(0.1)

    def dated(self, **headers: str) -> dict[str, str]:
        return {"x-ms-date": email.utils.formatdate(usegmt=True), **headers}

    def stop(self) -> None:
        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.workdir.cleanup()


def _path(container: str, name: str) -> str:
    quoted = urllib.parse.quote(name, safe="/~")
    return f"/{container}/" + ("%2F" + quoted[1:] if quoted.startswith("/") else quoted)


@dataclass
class Backend:
    """One Blob Storage for a test: the connector's view and another writer's."""

    name: str
    container: str
    endpoint: str
    token: str
    verify: Any
    fake: FakeBlobStorage | None = None
    azurite: Azurite | None = None
    made: list[AzureConnector] = field(default_factory=list)

    def connector(self, **options: Any) -> AzureConnector:
        options.setdefault("endpoint", self.endpoint)
        options.setdefault("timeouts", Timeouts(connect=2, read=5, total=10))
        options.setdefault("verify", self.verify)
        account = ACCOUNT if self.fake is not None else AZURITE_ACCOUNT
        made = AzureConnector(token=options.pop("token", self.token), account=account, **options)
        self.made.append(made)
        return made

    async def aclose(self) -> None:
        for made in self.made:
            await made.aclose()

    def write(self, name: str, data: bytes) -> None:
        """Another writer puts ``data`` at ``name`` (a new ETag)."""
        if self.fake is not None:
            self.fake.put(self.container, name, data)
            return
        assert self.azurite is not None
        az = self.azurite
        az.http.put(
            _path(self.container, name),
            content=data,
            headers=az.dated(**{"x-ms-blob-type": "BlockBlob"}),
        ).raise_for_status()

    def remove(self, name: str) -> None:
        if self.fake is not None:
            self.fake.remove(self.container, name)
            return
        assert self.azurite is not None
        self.azurite.http.delete(_path(self.container, name), headers=self.azurite.dated())

    def read(self, name: str) -> bytes | None:
        if self.fake is not None:
            with self.fake.lock:
                blob = self.fake.containers[self.container].get(name)
                return blob.data if blob is not None else None
        assert self.azurite is not None
        resp = self.azurite.http.get(_path(self.container, name), headers=self.azurite.dated())
        return None if resp.status_code == 404 else resp.raise_for_status().content

    def keys_now(self) -> list[str]:
        if self.fake is not None:
            with self.fake.lock:
                return sorted(self.fake.containers[self.container])
        assert self.azurite is not None
        import re
        from xml.sax.saxutils import unescape

        resp = self.azurite.http.get(
            f"/{self.container}",
            params={"restype": "container", "comp": "list"},
            headers=self.azurite.dated(),
        ).raise_for_status()
        return sorted(unescape(n) for n in re.findall(r"<Name>(.*?)</Name>", resp.text))
