"""What every exchange of one proxy shares, handed to each exchange frozen.

The relay (`relay.Relay`) builds one `ExchangeServices` when the application starts (the
tape and the upstream client exist only then) and every exchange (`exchange.Exchange`)
reads it; only what an exchange needs crosses into it, so `exchange` does not know the
relay that counts exchanges (`ServicesHolder` is all it sees of it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from roller.capture.tape import TapeWriter
from roller.proxy.header_plan import HeaderPlans
from roller.proxy.idle_watch import IdleWatches
from roller.proxy.local import LocalRoutes
from roller.proxy.policy import ExchangeEnd, RequestPolicy
from roller.proxy.redaction import Redactor
from roller.proxy.routing import Upstreams
from roller.proxy.upstream import UpstreamClient


@dataclass(frozen=True, slots=True)
class ExchangeServices:
    """What every exchange shares: the tape, the upstream side, the policy, the limits,
    the end hook (`notify` calls it in place; None without a hook, so no `ExchangeEnd` is
    built for nobody), whether the proxy is stopping, the in-flight count's calls, and
    the embedder's own routes (`roller.proxy.local`)."""

    tape: TapeWriter
    client: UpstreamClient
    upstreams: Upstreams
    policy: RequestPolicy | None
    max_request_body: int
    max_kept_response: int
    redactor: Redactor
    plans: HeaderPlans  # the redactor's header plans, shared by every exchange
    watches: IdleWatches  # the upstream read timeouts of every exchange, on one timer
    notify: Callable[[ExchangeEnd], None] | None
    stopping: Callable[[], bool]
    started: Callable[[], None]  # an exchange is in flight (the relay counts them)
    finished: Callable[[], None]  # ... and no longer is, its end hook returned
    local: LocalRoutes | None = None  # the embedder's own routes, answered first


class ServicesHolder(Protocol):
    """Whoever hands exchanges their services (the relay), once its proxy started."""

    @property
    def services(self) -> ExchangeServices | None: ...
