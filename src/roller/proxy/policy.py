"""The extension points a gateway plugs into the proxy: a request policy and an end hook.

A `RequestPolicy` decides twice per request, both times before anything is forwarded:
1. `admit(head)`, on the head alone, before a byte of the body is read: it may refuse the
   request (`Admission.reject`: recorded by its head and outcome only, the body never
   read, taped or held), attach `annotations`, name the `upstream` as far as the head
   says, and hand itself a `context` for step 2 (a gateway authenticates here, so an
   unauthenticated request costs no body);
2. `decide(head, admission)`, once the whole body arrived (`head.body`), returning a
   `PolicyDecision` that can
   - reject the request with a status and a JSON body (recorded, outcome `rejected`);
   - set or remove outgoing upstream headers (e.g. swap a gateway token for the real API
     key): these changes are never recorded;
   - remove query parameters from the forwarded URL (a gateway token sent as `?key=`);
   - choose the upstream base URL for this request;
   - attach `annotations`, a small JSON object recorded with the request (its keys
     replace the admission's of the same name);
   - ask for the response body in the end hook (`keep_response`): the proxy then holds the
     chunks it relays (references, no copy) until the exchange ends, up to the proxy's
     `max_kept_response` bytes, so a gateway can judge the response without reading the
     tape back and without decoding on the request path.
Both see the request exactly as received (authentication and `x-roller-*` headers
included: it may authenticate the caller; the body, so it may read body-level identity).

`ExchangeEndHook` is called once per exchange, a plain synchronous call, right after its
`end` frame is written (and the client's response finished, unless the client went away
or the proxy is stopping): no task, no future per exchange. It must not block; work that
has to wait (a gateway's row write) is handed on to a writer of the hook's own, whose
failures it reports through `ProxyServer.note_hook_error`. An exception the hook raises
is logged without its details' header values, counted, and written on the exchange's
tape record as the annotation `end_hook_error`; never shown to the client (the response
is already complete).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    body: bytes = b""  # empty in `admit`: the body is read after it
    exchange_id: str = ""  # the exchange's id on the tape
    # `headers` as the proxy read them once: their (name, value) pairs in arrival order
    # and the name sequence its header plan is keyed on (empty when not given: a policy
    # then reads `headers`).
    pairs: Sequence[tuple[str, str]] = ()
    names: tuple[str, ...] = ()

    def with_body(self, body: bytes) -> RequestHead:
        """This head with its body (`dataclasses.replace`'s answer, without its field
        introspection per request)."""
        return RequestHead(
            self.method,
            self.path,
            self.query,
            self.headers,
            self.client,
            body,
            self.exchange_id,
            self.pairs,
            self.names,
        )


@dataclass(frozen=True, slots=True)
class Rejection:
    status: int
    body: JSONObject


@dataclass(frozen=True, slots=True)
class Admission:
    """The head-only step's answer: refuse now, or let the body be read.

    `context` is the policy's own (a gateway's authenticated client), handed back to
    `decide`; the proxy never looks at it."""

    reject: Rejection | None = None
    annotations: JSONObject = field(default_factory=dict)
    upstream: str | None = None  # where it will go, as far as the head says (recorded)
    context: object = None


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
    async def admit(self, head: RequestHead) -> Admission: ...

    async def decide(self, head: RequestHead, admission: Admission) -> PolicyDecision: ...


@dataclass(frozen=True, slots=True)
class ExchangeEnd:
    """What the end hook receives: the exchange id on the tape and how it ended — the
    facts of its `end` frame, the response headers as recorded (redacted; empty without
    a response head) and, when the decision asked for it, the response body (None, and
    `response_over_limit`, when it was longer than the proxy keeps)."""

    exchange_id: str
    method: str
    path: str  # raw, no query
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
    response_over_limit: bool = False  # kept, until it passed `max_kept_response`


ExchangeEndHook = Callable[[ExchangeEnd], None]

__all__ = [
    "Admission",
    "ExchangeEnd",
    "ExchangeEndHook",
    "ExchangeError",  # the tape's record of an error (`end.meta.error`), shared by the hook
    "PolicyDecision",
    "Rejection",
    "RequestHead",
    "RequestPolicy",
]
