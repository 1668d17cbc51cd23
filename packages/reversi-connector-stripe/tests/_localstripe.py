"""localstripe (PyPI, GPL-3.0, test-only) served on 127.0.0.1, and a transport that records.

localstripe's own command binds every interface (``::``) and has no host option, so
its aiohttp application is started here instead, on 127.0.0.1 and a port the system
picks, in an event loop of its own thread (:class:`LocalStripe`). Its store would be
pickled to a fixed file in ``/tmp`` after every write; that is turned off while it runs,
and the store is emptied between tests (:meth:`LocalStripe.reset`). localstripe ignores
``Idempotency-Key`` and ``Stripe-Version``.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["Exchange", "LocalStripe", "RecordingTransport"]


class LocalStripe:
    """localstripe's app on ``127.0.0.1:<port>``; ``url`` once :meth:`start` returned."""

    def __init__(self) -> None:
        from localstripe import resources

        self._resources = resources
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="localstripe", daemon=True)
        self._runner: Any = None
        self._saved_dump: Any = None
        self.url = ""

    def start(self) -> LocalStripe:
        from aiohttp import web

        with warnings.catch_warnings():
            # localstripe registers plain functions as handlers, which aiohttp deprecates
            warnings.filterwarnings("ignore", "Bare functions are deprecated", DeprecationWarning)
            from localstripe.server import app

        store_class = type(self._resources.store)
        self._saved_dump = store_class.dump_to_disk
        store_class.dump_to_disk = lambda self: None  # no pickle in /tmp
        self._resources.store.clear()
        self._thread.start()

        async def serve() -> str:
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            host, port = self._runner.addresses[0][:2]
            return f"http://{host}:{port}"

        self.url = asyncio.run_coroutine_threadsafe(serve(), self._loop).result(timeout=30)
        return self

    def reset(self) -> None:
        """Empty localstripe's store (what ``DELETE /_config/data`` does)."""
        asyncio.run_coroutine_threadsafe(self._clear(), self._loop).result(timeout=30)

    async def _clear(self) -> None:
        self._resources.store.clear()

    def close(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        asyncio.run_coroutine_threadsafe(_cancel_the_rest(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
        if self._saved_dump is not None:
            type(self._resources.store).dump_to_disk = self._saved_dump


async def _cancel_the_rest() -> None:
    """Cancel what localstripe left running (its webhook tasks) before the loop closes."""
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


@dataclass(frozen=True)
class Exchange:
    """One request a connector sent and the answer it got, as seen on the client's side."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    status: int
    answer: bytes


class RecordingTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport, keeping every exchange in :attr:`exchanges`."""

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[Exchange] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        answer = await response.aread()
        self.exchanges.append(
            Exchange(
                request.method,
                request.url.path,
                dict(request.url.params),
                dict(request.headers),
                request.content,
                response.status_code,
                answer,
            )
        )
        return httpx.Response(
            response.status_code, headers=response.headers, content=answer, request=request
        )
