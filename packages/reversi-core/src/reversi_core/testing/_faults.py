"""Faults a fake server injects into chosen requests, and the set of armed faults."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._app import compile_template

__all__ = ["WRITE_METHODS", "ArmedFault", "Fault", "FaultKind", "Faults"]

FaultKind = Literal["drop_after_read", "status", "hang"]

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""The HTTP methods through which a request can change something (``writes=True`` faults)."""


@dataclass(frozen=True)
class Fault:
    """A fault to inject; build one with :meth:`drop_after_read`, :meth:`status` or :meth:`hang`.

    ``apply`` says whether the route's handler still runs (its answer is thrown away):
    ``True`` models "the backend applied the write but the reply was lost", ``False``
    "the request never reached the backend's logic".
    """

    kind: FaultKind
    apply: bool = False
    http_status: int | None = None
    json: Any = None
    headers: Mapping[str, str] | None = None
    seconds: float = 0.0

    @classmethod
    def drop_after_read(cls, *, apply: bool = False) -> Fault:
        """Read the whole request, then close the connection without sending any reply.

        The client sees the connection end with no response (httpx:
        ``RemoteProtocolError``): a write's outcome is unknown to it.
        """
        return cls("drop_after_read", apply=apply)

    @classmethod
    def status(
        cls,
        status: int,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        apply: bool = False,
    ) -> Fault:
        """Answer ``status`` (500, 502, 503, 401, 403, 429...) with ``json`` instead of the route.

        ``json`` defaults to ``{"message": "injected fault: HTTP <status>"}``; give the
        vendor's error body to make the fault look real. ``apply=True`` models a gateway
        error (502, 504) in front of a backend that did apply the write.
        """
        if not 100 <= status <= 599:
            raise ValueError(f"not an HTTP status: {status}")
        body = json if json is not None else {"message": f"injected fault: HTTP {status}"}
        return cls("status", apply=apply, http_status=status, json=body, headers=headers)

    @classmethod
    def hang(cls, seconds: float = 10.0, *, apply: bool = False) -> Fault:
        """Read the request, then send nothing for ``seconds`` and close the connection.

        Make ``seconds`` longer than the client's timeout so the client gives up first;
        the wait ends early when the server shuts down, so a test never waits it out.
        """
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        return cls("hang", apply=apply, seconds=seconds)


class ArmedFault:
    """A fault armed on a server for matching requests, with its use counted.

    ``hits`` is how many requests it has been injected into; ``remaining`` how many more
    it will take (``None``: unlimited).
    """

    def __init__(
        self,
        fault: Fault,
        *,
        method: str | None,
        path: str | None,
        path_prefix: str | None,
        times: int | None,
        writes: bool = False,
    ) -> None:
        if times is not None and times < 1:
            raise ValueError("times must be >= 1 or None (unlimited)")
        self.fault = fault
        self.writes = writes
        self.method = method.upper() if method else None
        self.path = path
        self.path_prefix = path_prefix
        self.times = times
        self.hits = 0
        self._pattern = compile_template(path) if path is not None else None

    @property
    def remaining(self) -> int | None:
        """How many more requests this fault will take; ``None`` when unlimited."""
        return None if self.times is None else self.times - self.hits

    def matches(self, method: str, path: str, *, writes: bool | None = None) -> bool:
        """Whether a request (decoded path) is one this fault is armed for.

        ``writes`` is whether the request may change the backend, as its app judged it
        (:meth:`reversi_core.testing.FakeApp.writes`); ``None`` falls back to its method
        (:data:`WRITE_METHODS`).
        """
        if self.method is not None and method.upper() != self.method:
            return False
        request_writes = writes if writes is not None else method.upper() in WRITE_METHODS
        if self.writes and not request_writes:
            return False
        if self._pattern is not None and not self._pattern.fullmatch(path):
            return False
        return self.path_prefix is None or path.startswith(self.path_prefix)

    def __repr__(self) -> str:
        return (
            f"ArmedFault({self.fault.kind}, method={self.method}, path={self.path}, "
            f"path_prefix={self.path_prefix}, writes={self.writes}, hits={self.hits}, "
            f"remaining={self.remaining})"
        )


class Faults:
    """The faults armed on one server; thread-safe.

    ``server.faults.add(Fault.status(503), method="POST", path_prefix="/repos", times=2)``
    makes the next two matching requests answer 503. Faults are tried in the order they
    were added; the first armed one that matches and has uses left is injected.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[ArmedFault] = []

    def add(
        self,
        fault: Fault,
        *,
        method: str | None = None,
        path: str | None = None,
        path_prefix: str | None = None,
        times: int | None = 1,
        writes: bool = False,
    ) -> ArmedFault:
        """Arm ``fault`` for requests matching every filter given; return its counter.

        ``method`` (any when ``None``); ``path`` an exact path or a route template such
        as ``/repos/{owner}/{repo}/issues``; ``path_prefix`` a prefix of the decoded
        path; ``writes`` only requests that can change something, as the app's route
        declares it (:meth:`reversi_core.testing.FakeApp.writes`: a GraphQL mutation, not
        a query), by default every :data:`WRITE_METHODS` request;
        ``times`` how many requests it takes (``None``: every one until cleared).

        ``times`` and ``writes`` are the part of this signature that the certification
        suite uses, and that any backend handle's ``faults`` must accept
        (:class:`reversi_core.testing.FaultControls`).
        """
        armed = ArmedFault(
            fault, method=method, path=path, path_prefix=path_prefix, times=times, writes=writes
        )
        with self._lock:
            self._armed.append(armed)
        return armed

    def clear(self) -> None:
        """Disarm every fault."""
        with self._lock:
            self._armed.clear()

    @property
    def armed(self) -> list[ArmedFault]:
        """The faults that still have uses left, in order."""
        with self._lock:
            return [a for a in self._armed if a.remaining is None or a.remaining > 0]

    def take(self, method: str, path: str, *, writes: bool | None = None) -> Fault | None:
        """Consume one use of the first armed fault matching the request, if any.

        ``writes`` is whether the request may change the backend (``None``: judged by
        its method); see :meth:`ArmedFault.matches`.
        """
        with self._lock:
            for armed in self._armed:
                live = armed.remaining is None or armed.remaining > 0
                if live and armed.matches(method, path, writes=writes):
                    armed.hits += 1
                    return armed.fault
        return None
