"""Run aiohttp applications on real loopback sockets from synchronous tests.

`BackgroundLoop` owns one event loop in a daemon thread; `serve(app)` binds the app to
127.0.0.1 on a free port and returns its base URL. Tests then talk to it with real
clients (the official SDKs, aiohttp, raw sockets) exactly as a harness would.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from aiohttp import web

T = TypeVar("T")


class BackgroundLoop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._runners: list[web.AppRunner] = []

    def run(self, coro: Coroutine[Any, Any, T] | Awaitable[T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)  # type: ignore[arg-type]

    def serve(self, app: web.Application, *, ssl_context: Any = None, port: int = 0) -> str:
        async def start() -> int:
            runner = web.AppRunner(app, handle_signals=False)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=ssl_context)
            await site.start()
            self._runners.append(runner)
            server = site._server
            assert server is not None
            return int(server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]

        bound = self.run(start())
        scheme = "https" if ssl_context is not None else "http"
        return f"{scheme}://127.0.0.1:{bound}"

    def close(self) -> None:
        for runner in reversed(self._runners):
            self.run(runner.cleanup())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
