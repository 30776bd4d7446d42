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
from dataclasses import dataclass
from typing import Any, Protocol

from multidict import CIMultiDictProxy

from roller.capture.tape import ExchangeError, Outcome

JSONObject = dict[str, Any]


class _Record:
    """A plain slotted record: built once per request on the proxy's hot path and never
    changed after (by convention: a frozen dataclass costs an `object.__setattr__` call
    per field, ~0.6k instructions each, and these are built for every request a policy
    sees). Equality and repr by field, as a dataclass's."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # mutable in principle: not hashable

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names: tuple[str, ...] = self.__slots__
        return all(getattr(self, name) == getattr(other, name) for name in names)

    def __repr__(self) -> str:
        names: tuple[str, ...] = self.__slots__
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({fields})"


class RequestHead(_Record):
    """A request as received, before redaction. Never persisted as is.

    `body` is empty in `admit` (the body is read after it); `exchange_id` is the
    exchange's id on the tape; `pairs` and `names` are `headers` as the proxy read them
    once: their (name, value) pairs in arrival order and the name sequence its header
    plan is keyed on (empty when not given: a policy then reads `headers`)."""

    __slots__ = (
        "body",
        "client",
        "exchange_id",
        "headers",
        "method",
        "names",
        "pairs",
        "path",
        "query",
    )

    def __init__(
        self,
        method: str,
        path: str,
        query: tuple[tuple[str, str], ...],
        headers: CIMultiDictProxy[str],
        client: str | None,
        body: bytes = b"",
        exchange_id: str = "",
        pairs: Sequence[tuple[str, str]] = (),
        names: tuple[str, ...] = (),
    ) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.client = client
        self.body = body
        self.exchange_id = exchange_id
        self.pairs = pairs
        self.names = names

    def with_body(self, body: bytes) -> RequestHead:
        """This head with its body (a new record; this one is unchanged)."""
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


class Admission(_Record):
    """The head-only step's answer: refuse now, or let the body be read.

    `upstream` is where it will go, as far as the head says (recorded); `context` is the
    policy's own (a gateway's authenticated client), handed back to `decide`; the proxy
    never looks at it."""

    __slots__ = ("annotations", "context", "reject", "upstream")

    def __init__(
        self,
        reject: Rejection | None = None,
        annotations: JSONObject | None = None,
        upstream: str | None = None,
        context: object = None,
    ) -> None:
        self.reject = reject
        self.annotations: JSONObject = {} if annotations is None else annotations
        self.upstream = upstream
        self.context = context


_NO_HEADERS: Mapping[str, str] = {}


class PolicyDecision(_Record):
    """The decision on a whole request (the module docstring's list). `remove_query`
    holds parameter names, matched case-insensitively; `keep_response` hands the
    response body to the end hook."""

    __slots__ = (
        "annotations",
        "keep_response",
        "reject",
        "remove_headers",
        "remove_query",
        "set_headers",
        "upstream",
    )

    def __init__(
        self,
        reject: Rejection | None = None,
        set_headers: Mapping[str, str] = _NO_HEADERS,
        remove_headers: tuple[str, ...] = (),
        remove_query: tuple[str, ...] = (),
        upstream: str | None = None,
        annotations: JSONObject | None = None,
        keep_response: bool = False,
    ) -> None:
        self.reject = reject
        self.set_headers = set_headers
        self.remove_headers = remove_headers
        self.remove_query = remove_query
        self.upstream = upstream
        self.annotations: JSONObject = {} if annotations is None else annotations
        self.keep_response = keep_response


class RequestPolicy(Protocol):
    async def admit(self, head: RequestHead) -> Admission: ...

    async def decide(self, head: RequestHead, admission: Admission) -> PolicyDecision: ...


class ExchangeEnd(_Record):
    """What the end hook receives: the exchange id on the tape and how it ended — the
    facts of its `end` frame (`path` raw, no query), the response headers as recorded
    (redacted; empty without a response head) and, when the decision asked for it
    (`PolicyDecision.keep_response`), the response body (None, and
    `response_over_limit`, when it was longer than the proxy keeps)."""

    __slots__ = (
        "annotations",
        "client_bytes",
        "client_status",
        "error",
        "exchange_id",
        "method",
        "outcome",
        "path",
        "response_body",
        "response_bytes",
        "response_headers",
        "response_over_limit",
        "roller",
        "upstream_status",
    )

    def __init__(
        self,
        exchange_id: str,
        method: str,
        path: str,
        outcome: Outcome,
        client_status: int | None,
        upstream_status: int | None,
        error: ExchangeError | None,
        roller: Mapping[str, str],
        annotations: JSONObject,
        response_headers: tuple[tuple[str, str], ...] = (),
        response_bytes: int = 0,
        client_bytes: int = 0,
        response_body: bytes | None = None,
        response_over_limit: bool = False,
    ) -> None:
        self.exchange_id = exchange_id
        self.method = method
        self.path = path
        self.outcome = outcome
        self.client_status = client_status
        self.upstream_status = upstream_status
        self.error = error
        self.roller = roller
        self.annotations = annotations
        self.response_headers = response_headers
        self.response_bytes = response_bytes
        self.client_bytes = client_bytes
        self.response_body = response_body
        self.response_over_limit = response_over_limit


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
