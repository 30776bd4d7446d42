"""The extension points a gateway plugs into the proxy: a request policy and an end hook.

`RequestPolicy.decide(head)` runs once per request, after the whole body arrived and before
anything is recorded or forwarded. It sees the request exactly as received (authentication
and `x-roller-*` headers included: it may authenticate the caller; the body, so it may read
body-level identity) and returns a `PolicyDecision` that can
- reject the request with a status and a JSON body (recorded, outcome `rejected`);
- set or remove outgoing upstream headers (e.g. swap a gateway token for the real API
  key): these changes are never recorded;
- remove query parameters from the forwarded URL (a gateway token sent as `?key=`);
- choose the upstream base URL for this request;
- attach `annotations`, a small JSON object recorded in the `req` frame's meta;
- ask for the response body in the end hook (`keep_response`): the proxy then holds the
  chunks it relays (references, no copy) until the exchange ends, so a gateway can judge
  the response without reading the tape back and without decoding on the request path.

`ExchangeEndHook` is awaited once per exchange after its `end` frame is written and the
client's response is finished; a gateway writes its rows from it. An exception it raises
is logged and counted, never shown to the client (the response is already complete).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from multidict import CIMultiDictProxy

from roller.capture.tape import ExchangeError, Outcome

JSONObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RequestHead:
    """A request as received, before redaction. Never persisted as is."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    headers: CIMultiDictProxy[str]
    client: str | None
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class Rejection:
    status: int
    body: JSONObject


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    reject: Rejection | None = None
    set_headers: Mapping[str, str] = field(default_factory=dict)
    remove_headers: tuple[str, ...] = ()
    remove_query: tuple[str, ...] = ()  # parameter names, matched case-insensitively
    upstream: str | None = None
    annotations: JSONObject = field(default_factory=dict)
    keep_response: bool = False  # hand the response body to the end hook


class RequestPolicy(Protocol):
    async def decide(self, head: RequestHead) -> PolicyDecision: ...


@dataclass(frozen=True, slots=True)
class ExchangeEnd:
    """What the end hook receives: the exchange id on the tape and how it ended — the
    facts of its `end` frame, the response headers as recorded (redacted; empty without
    a response head) and, when the decision asked for it, the response body."""

    exchange_id: str
    outcome: Outcome
    client_status: int | None
    upstream_status: int | None
    error: ExchangeError | None
    roller: Mapping[str, str]
    annotations: JSONObject
    response_headers: tuple[tuple[str, str], ...] = ()
    response_bytes: int = 0
    client_bytes: int = 0
    response_body: bytes | None = None  # only with `PolicyDecision.keep_response`


ExchangeEndHook = Callable[[ExchangeEnd], Awaitable[None]]

__all__ = [
    "ExchangeEnd",
    "ExchangeEndHook",
    "ExchangeError",  # the tape's record of an error (`end.meta.error`), shared by the hook
    "PolicyDecision",
    "Rejection",
    "RequestHead",
    "RequestPolicy",
]
