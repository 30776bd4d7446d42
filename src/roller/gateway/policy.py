"""The gateway's request policy and end hook, plugged into the proxy core.

`GatewayPolicy.admit(head)` runs on the request head, before a byte of the body is read:
1. a path in the gateway's own namespace (`roller.gateway.paths`) is never forwarded (404);
2. authenticate the roller token (`roller.gateway.tokens`); an unknown, missing,
   ambiguous or non-UTF-8 token gets a 401 at once, recorded on the tape by its head and
   outcome only (the body is never read: an unauthenticated request costs no body) and
   as a `call` row that belongs to no one; credential headers that authenticated once
   (no query) are known by their values after (`MAX_PRESENTED`, refusals never kept);
3. name the upstream for the request's protocol family.
`GatewayPolicy.decide(head, admission)` runs once the body arrived, before forwarding:
4. read the body as far as its readers go (`roller.gateway.request_body`: the members
   the identity rules and the model start at), and derive the session:
   `roller.harnesses.identify` under the credential's declared harness
   (roller's own headers only when the credential is configured to send them, gated
   native headers, body conversation id), over the headers an identity rule can read
   (`roller.gateway.headers`, decided once per name sequence), mapped onto rows by
   `roller.gateway.derivation`, else source keying on the principal; kept per evidence
   (credential, those headers, the body values the rules read) by
   `roller.gateway.identities`;
5. find or create the rows and link the parent (`roller.gateway.store`, with the tape
   exchange for the lineage audit), in a worker thread so the event loop never waits on
   the database; a store failure fails the request (500, recorded by the proxy as
   `policy_error`): a call the gateway cannot account for is not forwarded. A plan the
   store already answered is answered from `roller.gateway.resolutions` instead (no store
   trip; `last_seen_at` touched through the writer at most once a second, its batch
   reading the row's parent back for the cache);
6. swap the roller token for the real upstream key, and strip every other credential the
   gateway does not own (every header the redaction rules or the configured names call
   secret, named once per name sequence by `roller.gateway.headers`; every secret query
   parameter): outgoing changes are never recorded;
7. annotate the tape's request with who and which session (`annotations["gateway"]`:
   the request's `method`, `path` and `received_ns`, then the tail its session, model
   and endpoint share, kept by `roller.gateway.session_parts`);
8. hand the call row's session part (kept with that tail, bound for the store once) and
   the request's `received_ns` to `roller.gateway.rows`, keyed by the tape exchange.
The records handed to and from the proxy are plain slotted classes built positionally
(`roller.proxy.policy`): a frozen dataclass pays an `object.__setattr__` per field.
`on_exchange_end` (the proxy's end hook) is `roller.gateway.rows.CallRows`': the
exchange's one `call` row, for every exchange the proxy recorded, refused ones included,
with the status rulebook's statuses over the response body the decision kept
(`keep_response`, for a model call), submitted to the background writer
(`roller.gateway.writer`: batched, one transaction per batch). `drain()` waits for every
row handed on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from roller.gateway.config import Client, GatewayConfig
from roller.gateway.derivation import SessionPlan
from roller.gateway.headers import HeaderReading, Pair, Reading
from roller.gateway.identities import Identities
from roller.gateway.paths import own_route
from roller.gateway.request_body import RequestBody
from roller.gateway.resolutions import ResolutionCache
from roller.gateway.rows import CallRows
from roller.gateway.session_parts import SessionParts
from roller.gateway.store import RequestRef, Resolution, SessionStore
from roller.gateway.tokens import CREDENTIAL_QUERY, presented_in, presented_token, token_sha256
from roller.gateway.writer import StoreWriter
from roller.proxy import (
    Admission,
    ExchangeEnd,
    PolicyDecision,
    Redactor,
    Rejection,
    RequestHead,
)
from roller.wire.endpoints import Endpoint, Family, endpoint_for

MAX_MODEL_ANNOTATION: Final = 1000  # characters of a requested model kept on the tape
MAX_PRESENTED: Final = 4096  # credential headers of admitted requests kept
_FAMILY_BY_SOURCE: Final[Mapping[str, Family]] = {
    "x-api-key": "anthropic",
    "authorization": "openai",
    "x-goog-api-key": "gemini",
    "?key": "gemini",
}
# Where each family's upstream takes its key (header, value prefix).
_KEY_HEADER: Final[Mapping[Family, tuple[str, str]]] = {
    "anthropic": ("x-api-key", ""),
    "openai": ("authorization", "Bearer "),
    "gemini": ("x-goog-api-key", ""),
}


_NO_HEADERS: Final[Mapping[str, str]] = {}


def unauthorized(message: str) -> dict[str, Any]:
    return {"error": {"type": "roller_unauthorized", "message": message}}


def requested_model(body: object, endpoint: Endpoint) -> str | None:
    """The model the request names: the body's `model`, else the one its path names
    (Gemini's `models/<m>:method`, a model-info request). Cut for the tape's annotation;
    the call row's column cuts and flags it further (`roller.gateway.store.values`)."""
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        return str(body["model"])[:MAX_MODEL_ANNOTATION]
    return None if endpoint.model is None else endpoint.model[:MAX_MODEL_ANNOTATION] or None


class Admitted:
    """What `admit` hands `decide` (the proxy's `Admission.context`): a plain slotted
    record, built once per request and never changed (a frozen dataclass costs a
    `object.__setattr__` call per field)."""

    __slots__ = ("client", "endpoint", "family", "pairs", "reading", "received_ns")

    def __init__(
        self,
        client: Client,
        family: Family | None,
        endpoint: Endpoint,
        received_ns: int,
        reading: Reading,  # the request's header reading (`roller.gateway.headers`)
        pairs: Sequence[Pair],
    ) -> None:
        self.client = client
        self.family = family
        self.endpoint = endpoint
        self.received_ns = received_ns
        self.reading = reading
        self.pairs = pairs


class GatewayPolicy:
    def __init__(
        self,
        config: GatewayConfig,
        store: SessionStore,
        *,
        upstreams: Mapping[Family, str],
        keys: Mapping[Family, str],
        tape_dir: Path,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.config = config
        self.store = store
        self.upstreams = dict(upstreams)
        self.keys = dict(keys)
        # What each family's decision sets: its upstream key where it takes it (built once;
        # the proxy only reads a decision's headers).
        self._set_headers = {f: _key_headers(f, k) for f, k in self.keys.items()}
        self.tape_dir = tape_dir.resolve()
        self.clock = clock
        self.clients = {client.token_sha256: client for client in config.clients}
        self._known: dict[str, Client] = {}  # tokens already matched: no hash per request
        # The credential headers of requests already admitted (no query): the client
        # and the family their header names, without reading the token again.
        self._presented: dict[tuple[Pair, ...], tuple[Client, Family | None]] = {}
        self.redactor = Redactor(config.redact_headers, config.redact_query)
        self.header_reading = HeaderReading(self.redactor)
        self.identities = Identities()
        self.bodies = RequestBody()
        self.resolutions = ResolutionCache(inactivity_seconds=config.inactivity_seconds)
        self.writer = StoreWriter(store)
        self.writer.on_parents = self._learn_parents
        self.rows = CallRows(self.writer, tape_dir=str(self.tape_dir))
        self.parts = SessionParts(store.row_maker, str(self.tape_dir))

    async def close(self) -> None:
        """Write every queued call row and touch (after the proxy drained its hooks)."""
        await self.drain()
        await self.writer.close()

    def authenticate(
        self, head: RequestHead, reading: Reading | None = None, pairs: Sequence[Pair] = ()
    ) -> tuple[Client | None, str, tuple[str, ...]]:
        """The configured client whose token the request presents (`reading`: its header
        reading, so the token's headers are picked without a lookup per name)."""
        if reading is None:
            presented = presented_token(head.headers, head.query)
        else:
            presented = presented_in(reading.token_headers(pairs), head.query)
        if presented.token is None:
            return None, presented.problem or "no token", presented.sources
        client = self._known.get(presented.token)
        if client is None:
            client = self.clients.get(token_sha256(presented.token))
            if client is None:
                return None, "unknown roller token", presented.sources
            self._known[presented.token] = client  # at most one entry per client
        return client, "ok", presented.sources

    async def admit(self, head: RequestHead) -> Admission:
        received_ns = time.time_ns()
        if own_route(head.path) is not None:
            # Gateway routes are served by the gateway itself, never forwarded.
            missing = {"error": {"type": "roller_not_found", "message": "no such gateway route"}}
            base = {"method": head.method, "path": head.path, "received_ns": received_ns}
            return Admission(Rejection(404, missing), {"gateway": base})
        reading, pairs = self.header_reading.of_head(head)
        sent = () if head.query else tuple(reading.token_headers(pairs))
        known = self._presented.get(sent) if sent else None
        if known is None:
            client, problem, sources = self.authenticate(head, reading, pairs)
            if client is None:
                return _refused(head, received_ns, problem, sources)
            known = (
                client,
                next((_FAMILY_BY_SOURCE[s] for s in sources if s in _FAMILY_BY_SOURCE), None),
            )
            if sent:
                if len(self._presented) >= MAX_PRESENTED:
                    self._presented.clear()
                self._presented[sent] = known
        client, source_family = known
        endpoint = endpoint_for(head.method, head.path, head.query)
        family = endpoint.family or source_family
        annotation = {
            "method": head.method,
            "path": head.path,
            "received_ns": received_ns,
            "auth": "ok",
            "principal": client.principal,
            "account": client.account,
            "harness": client.harness,
            "family": family,
        }
        return Admission(
            None,
            {"gateway": annotation},
            None if family is None else self.upstreams.get(family),
            Admitted(client, family, endpoint, received_ns, reading, pairs),
        )

    async def decide(self, head: RequestHead, admission: Admission) -> PolicyDecision:
        admitted = admission.context
        assert isinstance(admitted, Admitted)  # admit let the request through
        client, family, endpoint = admitted.client, admitted.family, admitted.endpoint
        body = self.bodies.read(head.body, client.harness)  # what the rules and the model read
        # The same identity as over every header, kept per evidence.
        identified = self.identities.of(
            client, admitted.reading.identity_headers(admitted.pairs), body
        )
        resolution = await self._resolve(identified.plan, head.exchange_id)
        protocol = endpoint.output_protocol
        shared = self.parts.of(
            client, family, protocol, identified, resolution, requested_model(body, endpoint)
        )
        received_ns = admitted.received_ns
        # The row's request side, from the same values as the annotation (not re-read).
        self.rows.expect(head.exchange_id, shared.row, protocol, received_ns)
        annotation = {
            "method": head.method,
            "path": head.path,
            "received_ns": received_ns,
            **shared.annotation,
        }
        return PolicyDecision(  # positional: no keyword dict per request
            None,
            _NO_HEADERS if family is None else self._set_headers.get(family, _NO_HEADERS),
            admitted.reading.credentials,
            (
                (*CREDENTIAL_QUERY, *(n for n, _ in head.query if self.redactor.secret_query(n)))
                if head.query
                else CREDENTIAL_QUERY
            ),
            None if family is None else self.upstreams.get(family),
            {"gateway": annotation},
            # A model call's row needs to know whether its response ended normally.
            protocol is not None,
        )

    async def _resolve(self, plan: SessionPlan, exchange_id: str) -> Resolution:
        """The plan's rows: from the cache when the store already answered it (touching
        `last_seen_at` through the writer when due), else from the store (naming the
        tape exchange in the lineage audit)."""
        hit = self.resolutions.get(plan)
        if hit is not None:
            if hit.touch_due:
                self.writer.touch(hit.resolution.session_id, self.clock())
            return hit.resolution
        request = RequestRef(str(self.tape_dir), exchange_id)
        resolution = await self.store.run(self.store.resolve, plan, self.clock(), request)
        self.resolutions.put(plan, resolution)
        return resolution

    def _learn_parents(self, parents: Mapping[str, str | None]) -> None:
        for session_id, parent in parents.items():
            self.resolutions.refreshed(session_id, parent)

    def on_exchange_end(self, end: ExchangeEnd) -> None:
        self.rows.on_exchange_end(end)

    async def drain(self) -> None:
        """Wait until every ended exchange's row is committed (or its failure noted)."""
        await self.rows.drain()


def _refused(
    head: RequestHead, received_ns: int, problem: str, sources: tuple[str, ...]
) -> Admission:
    """A request whose token did not authenticate: a 401, recorded by its head."""
    annotation = {
        "method": head.method,
        "path": head.path,
        "received_ns": received_ns,
        "auth": "rejected",
        "reason": problem,
        "sources": list(sources),
    }
    message = f"{problem}: use a token from roller gateway token add"
    return Admission(Rejection(401, unauthorized(message)), {"gateway": annotation})


def _key_headers(family: Family, key: str) -> dict[str, str]:
    name, prefix = _KEY_HEADER[family]
    return {name: f"{prefix}{key}"}
