"""The `Expect: 100-continue` handshake of the proxy's route: answered once admitted.

aiohttp answers `100 Continue` before the handler runs, unless the route has an expect
handler of its own; the proxy's (`defer_continue`) lets it through unanswered, so the
exchange sends `CONTINUE` itself only once the policy admitted the request's head: a
client that waits for it never sends the body of a refused request. Any other
expectation gets aiohttp's 417, as without the handler.
"""

from __future__ import annotations

from typing import Final

from aiohttp import hdrs, web
from aiohttp.http import HttpVersion11

CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"


async def defer_continue(request: web.Request) -> None:
    """The route's expect handler: `100-continue` waits for the head's admission (the
    exchange answers it); any other expectation gets aiohttp's 417, as before."""
    expect = request.headers.get(hdrs.EXPECT, "")
    if request.version == HttpVersion11 and expect.lower() != "100-continue":
        raise web.HTTPExpectationFailed(text=f"Unknown Expect: {expect}")
