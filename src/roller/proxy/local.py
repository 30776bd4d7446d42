"""Paths a server built on the proxy answers itself: never forwarded, never taped.

`LocalRoutes` is the third extension point, beside the request policy and the end hook
(`roller.proxy.policy`): `serves(raw_path)` says whether a request target is one of the
embedder's own routes, `serve(request)` answers it. The proxy's handler asks first, in
place (no middleware: a middleware is one more coroutine level that every resumption of
every exchange passes through, ~21k instructions a request under callgrind), and hands
anything it serves to it before an exchange exists, so such a request is neither counted
in flight nor recorded (it carries no model traffic). `serves` runs on every request: it
must be cheap and must not raise.
"""

from __future__ import annotations

from typing import Protocol

from aiohttp import web


class LocalRoutes(Protocol):
    def serves(self, raw_path: str) -> bool: ...

    async def serve(self, request: web.Request) -> web.StreamResponse: ...
