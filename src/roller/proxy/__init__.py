"""roller.proxy: the recording reverse proxy (the only long-running network code).

`ProxyServer(ProxyConfig(...))` forwards model traffic to an upstream unbuffered and
appends every exchange to a tape (`roller.capture.tape`). Modules: `server` (config and
lifecycle), `relay` (the handler and in-flight bookkeeping), `exchange` (one exchange on
aiohttp: the sockets), `recorder` (one exchange's frames and outcome: a pure state
machine), `upstream` (the HTTP client and its failure names), `routing` (which upstream,
which URL, which targets are refused), `headers` (what crosses), `redaction` (what never
reaches disk), `server_log` (what the server's loggers may print), `policy` (the
gateway's hooks), `local` (an embedder's own routes, answered first).
"""

from __future__ import annotations

from roller.proxy.local import LocalRoutes
from roller.proxy.policy import (
    Admission,
    ExchangeEnd,
    ExchangeEndHook,
    ExchangeError,
    PolicyDecision,
    Rejection,
    RequestHead,
    RequestPolicy,
)
from roller.proxy.redaction import Redactor
from roller.proxy.routing import Upstreams
from roller.proxy.server import ProxyConfig, ProxyServer

__all__ = [
    "Admission",
    "ExchangeEnd",
    "ExchangeEndHook",
    "ExchangeError",
    "LocalRoutes",
    "PolicyDecision",
    "ProxyConfig",
    "ProxyServer",
    "Redactor",
    "Rejection",
    "RequestHead",
    "RequestPolicy",
    "Upstreams",
]
