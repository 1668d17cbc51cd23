"""A real HTTP/1.1 server on 127.0.0.1 that serves a :class:`FakeApp` and injects faults."""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import socket
import socketserver
import ssl
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx

from ._app import FakeApp, FakeRequest, FakeResponse, parse_request
from ._faults import Faults

if TYPE_CHECKING:
    import trustme

__all__ = ["Exchange", "FakeServer", "FakeServerError"]

_HANDLER_SOCKET_TIMEOUT = 30.0
"""Seconds an idle keep-alive connection is kept by the server (closing the server ends it)."""

_JOIN_TIMEOUT = 5.0


@dataclasses.dataclass(frozen=True)
class Exchange:
    """One request the server read and what it answered (``None``: no answer was sent)."""

    request: FakeRequest
    response: FakeResponse | None


class FakeServerError(AssertionError):
    """A route handler of the fake raised; the fake, not the code under test, is broken."""


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: an answer written in two pieces (headers, body) is not held back by
    # Nagle's algorithm waiting for the client's delayed ACK (about 40 ms a request)
    disable_nagle_algorithm = True
    server_version = "reversi-fake"
    sys_version = ""
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: requests are recorded in ``FakeServer.requests`` instead."""

    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size_line = self.rfile.readline(65537)
                try:
                    size = int(size_line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    return None
                if size == 0:
                    while self.rfile.readline(65537).strip():  # trailers
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            return None
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        owner = self.server.owner
        body = self._read_body()
        if body is None:
            self._send(FakeResponse(400, json={"message": "malformed request body"}))
            self.close_connection = True
            return
        headers = httpx.Headers(list(self.headers.items()))
        request = parse_request(owner.app, self.command, self.path, headers, body)
        writes = owner.app.writes(request)
        request = dataclasses.replace(request, writes=writes)
        fault = owner.faults.take(request.method, request.path, writes=writes)
        if fault is not None:
            request = dataclasses.replace(request, fault=fault.kind)
        owner._record(request)
        if fault is None:
            answer = owner.app.dispatch(request)
            owner._answered(request, answer)
            self._send(answer)
            return
        if fault.apply:
            owner.app.dispatch(request)
        if fault.kind == "status":
            assert fault.http_status is not None
            answer = FakeResponse(fault.http_status, json=fault.json, headers=fault.headers)
            owner._answered(request, answer)
            self._send(answer)
            return
        owner._answered(request, None)
        if fault.kind == "hang":
            owner._stopping.wait(fault.seconds)
        # drop_after_read, or the end of a hang: close without a byte of reply
        self.close_connection = True

    def _send(self, response: FakeResponse) -> None:
        headers, payload = response.encode()
        self.send_response(response.status)
        for key, value in headers:
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD" and response.status not in (204, 304):
            self.wfile.write(payload)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _dispatch


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # we join our own threads, with a bound

    def __init__(self, owner: FakeServer, ssl_context: ssl.SSLContext | None) -> None:
        self.owner = owner
        self.ssl_context = ssl_context
        self._conn_lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._workers: set[threading.Thread] = set()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn, a reverse DNS lookup that can be slow
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        worker = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name=f"FakeServer-conn-{client_address[1]}",
            daemon=True,
        )
        with self._conn_lock:
            self._workers = {w for w in self._workers if w.is_alive()}
            self._workers.add(worker)
        worker.start()

    def _serve_connection(self, sock: socket.socket, client_address: Any) -> None:
        conn = sock
        try:
            with self._conn_lock:
                self._connections.add(sock)
            if self.owner._stopping.is_set():
                return
            conn.settimeout(_HANDLER_SOCKET_TIMEOUT)
            if self.ssl_context is not None:
                with self._conn_lock:
                    self._connections.discard(sock)
                    conn = self.ssl_context.wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False
                    )
                    self._connections.add(conn)
                conn.do_handshake()
            self.finish_request(conn, client_address)
        except (OSError, ValueError, AttributeError):
            # the client went away, a TLS handshake failed, or close() cut the connection
            pass
        finally:
            with self._conn_lock:
                self._connections.discard(conn)
            self.shutdown_request(conn)

    def cut_connections(self) -> None:
        """Shut every open connection down so the threads blocked on them return."""
        with self._conn_lock:
            for conn in self._connections:
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(conn, socket.SHUT_RDWR)

    def join_workers(self) -> None:
        with self._conn_lock:
            workers = list(self._workers)
        for worker in workers:
            worker.join(_JOIN_TIMEOUT)


class FakeServer:
    """A fake backend served over real HTTP/1.1 on ``127.0.0.1`` at a random port.

    ::

        with FakeServer(app) as server:
            server.faults.add(Fault.drop_after_read(apply=True), method="POST", times=1)
            ... HttpClient(server.url, ...) ...
            assert server.requests[-1].fault == "drop_after_read"

    The server runs in a background thread (one more thread per connection), so the
    code under test uses the real ``httpx`` transport: real sockets, timeouts, dropped
    connections and, with ``tls``, a real TLS handshake. ``tls=True`` makes a throwaway
    certificate authority with ``trustme`` (``pip install trustme``; imported only
    then); ``tls=<trustme.CA>`` uses that one. The server certificate is for
    ``127.0.0.1`` and ``localhost``, issued by that CA, unless ``certificate`` gives
    the ``trustme.LeafCert`` to serve instead: one for another name
    (``ca.issue_cert("kubernetes.default.svc")``), one that has expired
    (``not_after=`` in the past), or one issued by another CA, to test that a client
    refuses it. ``certificate`` needs ``tls``.

    ``close()`` (or leaving the ``with`` block) stops the server, cuts open
    connections, ends hangs early and joins every thread, so nothing leaks between
    tests. On leaving the block it raises :class:`FakeServerError` when a route handler
    raised (``strict=False`` turns that off; the exceptions stay in ``app.errors``).
    """

    def __init__(
        self,
        app: FakeApp,
        *,
        tls: bool | trustme.CA = False,
        certificate: trustme.LeafCert | None = None,
        strict: bool = True,
    ) -> None:
        self.app = app
        self.faults = Faults()
        """The faults armed on this server (see :class:`Faults`)."""
        self.strict = strict
        self._lock = threading.Lock()
        self._requests: list[FakeRequest] = []
        self._exchanges: list[Exchange] = []
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self.ca: trustme.CA | None = None
        """The certificate authority that signed the server's certificate (with ``tls``)."""
        server_context = None
        if certificate is not None and tls is False:
            raise ValueError("a FakeServer given a certificate needs tls (True or a trustme.CA)")
        if tls is not False:
            import trustme  # an optional test dependency, imported only when TLS is asked for

            self.ca = trustme.CA() if tls is True else tls
            server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            served = certificate or self.ca.issue_cert("127.0.0.1", "localhost")
            served.configure_cert(server_context)
        self._server = _HTTPServer(self, server_context)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (``https://`` with ``tls``), without a trailing slash."""
        scheme = "https" if self.ca is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        return int(self._server.server_address[1])

    @property
    def requests(self) -> list[FakeRequest]:
        """Every request received so far, in arrival order (a copy), faulted ones included."""
        with self._lock:
            return list(self._requests)

    @property
    def exchanges(self) -> list[Exchange]:
        """Every request with the answer it got, in arrival order (a copy).

        An injected status fault's answer is the fault's; a dropped connection or a hang
        has ``response`` ``None``. A request still being handled is not listed yet.
        """
        with self._lock:
            return list(self._exchanges)

    def clear_requests(self) -> None:
        """Forget the recorded requests and exchanges."""
        with self._lock:
            self._requests.clear()
            self._exchanges.clear()

    def _record(self, request: FakeRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _answered(self, request: FakeRequest, response: FakeResponse | None) -> None:
        with self._lock:
            self._exchanges.append(Exchange(request, response))

    def client_ssl_context(self) -> ssl.SSLContext:
        """A client :class:`ssl.SSLContext` that trusts this server's CA (requires ``tls``)."""
        if self.ca is None:
            raise RuntimeError("this FakeServer was started without tls")
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context

    @property
    def ca_path(self) -> Path:
        """The CA certificate as a PEM file (requires ``tls``; deleted by :meth:`close`)."""
        if self.ca is None:
            raise RuntimeError("this FakeServer was started without tls")
        if self._tmpdir is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="reversi-fake-ca-")
        path = Path(self._tmpdir.name) / "ca.pem"
        if not path.exists():
            self.ca.cert_pem.write_to_path(str(path))
        return path

    def start(self) -> FakeServer:
        """Start serving in a background thread; returns ``self``. Idempotent."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.02},
                name=f"FakeServer-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop the server, cut open connections, end hangs and join every thread. Idempotent."""
        self._stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(_JOIN_TIMEOUT)
            self._thread = None
        self._server.cut_connections()
        self._server.join_workers()
        self._server.server_close()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        if self.strict and exc is None and self.app.errors:
            raise FakeServerError(
                f"{len(self.app.errors)} fake route handler(s) raised; "
                f"first: {self.app.errors[0]!r}"
            ) from self.app.errors[0]
