"""What the proxy's and aiohttp's loggers may print: never a header value.

aiohttp's HTTP parser refuses a request it cannot parse (a control character in a header,
a header line too long) and logs the exception, whose message quotes the offending line
— a token included. An exception raised while handling a request can quote a value the
same way. Rules this module keeps:
- A record carrying an exception keeps its own message (fixed text and ids), the
  exception's type and its traceback's frames; the exception's message is withheld.
- A request the parser refused is logged as such, with its status, not as a crash.
- `install()` puts the filter on every logger that logs while serving requests (aiohttp's
  server-side ones and roller's own `roller.proxy` / `roller.gateway`); idempotent.
"""

from __future__ import annotations

import logging
import traceback
from typing import Final

from aiohttp.http_exceptions import HttpProcessingError

LOGGERS: Final = (
    "aiohttp.access",
    "aiohttp.internal",
    "aiohttp.server",
    "aiohttp.web",
    "roller.proxy",
    "roller.gateway",
)


class WithheldValues(logging.Filter):
    """Rewrites records with an exception so that no part of its message is printed."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return True
        text = record.getMessage()
        if isinstance(exc, HttpProcessingError):
            detail = f"refused a malformed request ({type(exc).__name__}, status {exc.code})"
        else:
            frames = "".join(traceback.format_tb(exc.__traceback__)).rstrip()
            detail = f"{type(exc).__name__} (message withheld)\n{frames}"
        record.msg = f"{text}: {detail}; details that may quote a header value are withheld"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        return True


_FILTER: Final = WithheldValues()


def install() -> None:
    """Put the filter on every logger in `LOGGERS` (once)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
