"""The gateway's request policy and end hook, plugged into the proxy core.

`GatewayPolicy.admit(head)` runs on the request head, before a byte of the body is read:
1. a path in the gateway's own namespace (`roller.gateway.paths`) is never forwarded (404);
2. authenticate the roller token (`roller.gateway.tokens`); an unknown, missing,
   ambiguous or non-UTF-8 token gets a 401 at once, recorded on the tape by its head and
   outcome only (the body is never read: an unauthenticated request costs no body) and
   as a `call` row that belongs to no one;
3. name the upstream for the request's protocol family.
`GatewayPolicy.decide(head, admission)` runs once the body arrived, before forwarding:
4. derive the session: `roller.harnesses.identify` under the credential's declared harness
   (roller's own headers only when the credential is configured to send them, gated
   native headers, body conversation id), mapped onto rows by `roller.gateway.derivation`,
   else source keying on the principal;
5. find or create the rows and link the parent (`roller.gateway.store`, with the tape
   exchange for the lineage audit), in a worker thread so the event loop never waits on
   the database; a store failure fails the request (500, recorded by the proxy as
   `policy_error`): a call the gateway cannot account for is not forwarded. A plan the
   store already answered is answered from `roller.gateway.resolutions` instead (no store
   trip; `last_seen_at` touched through the writer at most once a second);
6. swap the roller token for the real upstream key, and strip every other credential the
   gateway does not own (every header the redaction rules or the configured names call
   secret, every secret query parameter): outgoing changes are never recorded;
7. annotate the tape's request with who and which session (`annotations["gateway"]`).

`on_exchange_end` hands on (to a task of its own, returning at once) the exchange's one
`call` row pointing at the tape exchange —
for every exchange the proxy recorded, refused ones included — with the status rulebook's
execution and response-capture statuses (`roller.capture.statuses`, the same functions
finalize uses): for a model call the decision asks the proxy for the response body
(`keep_response`), and the hook reads it with `roller.wire.response.read_response` after
the client has its response, so no decoding happens on the request path (in a worker
thread, unless the body is at most `INLINE_DECODE_BYTES`). A response the proxy let go
(over its `max_kept_response`) is judged without its body and flagged. The row goes
through the background writer (`roller.gateway.writer`: batched, one transaction per
batch); a write that still fails after its retries is counted and written on the
exchange's tape record (`end_hook_error`, through `on_row_error`). `drain()` waits for
every row handed on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from roller.capture.models import ExecutionStatus, ResponseCaptureStatus
from roller.capture.statuses import ExchangeFacts, execution_status, response_capture_status
from roller.gateway.config import Client, GatewayConfig
from roller.gateway.derivation import SessionPlan, plan_session
from roller.gateway.paths import own_route
from roller.gateway.resolutions import ResolutionCache
from roller.gateway.store import CallFacts, RequestRef, Resolution, SessionStore
from roller.gateway.tokens import CREDENTIAL_QUERY, presented_token, token_sha256
from roller.gateway.writer import StoreWriter
from roller.harnesses import identify
from roller.identity import WireIdentity
from roller.proxy import (
    Admission,
    ExchangeEnd,
    PolicyDecision,
    Redactor,
    Rejection,
    RequestHead,
)
from roller.wire import codec_for
from roller.wire.endpoints import Endpoint, Family, endpoint_for
from roller.wire.response import read_response
from roller.wire.types import ProtocolName

log = logging.getLogger("roller.gateway")

# A response this small is read on the loop: ~0.2 ms, less than the hop to a thread costs.
INLINE_DECODE_BYTES: Final = 2048
MAX_MODEL_ANNOTATION: Final = 1000  # characters of a requested model kept on the tape
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


def unauthorized(message: str) -> dict[str, Any]:
    return {"error": {"type": "roller_unauthorized", "message": message}}


def parse_json_body(body: bytes) -> object:
    """The parsed request body, or None when it is empty or not JSON Python can read
    (nested too deeply, an integer past the digit limit): the identity rules then see no
    body; the bytes stay on the tape either way."""
    if not body or body[:1] not in (b"{", b"["):
        return None
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def requested_model(body: object, endpoint: Endpoint) -> str | None:
    """The model the request names: the body's `model`, else the one its path names
    (Gemini's `models/<m>:method`, a model-info request). Cut for the tape's annotation;
    the call row's column cuts and flags it further (`roller.gateway.store.values`)."""
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        return str(body["model"])[:MAX_MODEL_ANNOTATION]
    return None if endpoint.model is None else endpoint.model[:MAX_MODEL_ANNOTATION] or None


def call_statuses(
    end: ExchangeEnd, protocol: ProtocolName | None
) -> tuple[ExecutionStatus, ResponseCaptureStatus]:
    """A call row's execution and response-capture statuses: the rulebook's, over the same
    facts finalize reads off the tape (the response body is the one the decision kept)."""
    body = end.response_body
    codec = None if protocol is None or body is None else codec_for(protocol)
    reading = read_response(codec, end.upstream_status, end.response_headers, body or b"")
    facts = ExchangeFacts.of(
        outcome=end.outcome,
        status=end.upstream_status,
        streamed=reading.streamed,
        client_bytes=end.client_bytes,
        response_bytes=end.response_bytes,
        body_bytes=end.response_bytes if body is None else len(body),
        terminal=reading.terminal,
    )
    return execution_status(facts), response_capture_status(facts)


def identity_summary(identity: WireIdentity, plan: SessionPlan) -> dict[str, Any]:
    """What the call row keeps of the wire identity (the full evidence is on the tape and
    is derived again by export)."""
    return {
        "rule": identity.rule,
        "session_key": identity.session_key,
        "participant_key": identity.participant_key,
        "parent_key": identity.parent_key,
        "is_child": identity.is_child,
        "rejected": [[r.field, r.reason] for r in identity.rejected],
        "participant_unknown": plan.participant_unknown,
    }


@dataclass(frozen=True, slots=True)
class Admitted:
    """What `admit` hands `decide` (the proxy's `Admission.context`)."""

    client: Client
    family: Family | None
    endpoint: Endpoint
    annotation: dict[str, Any]
    received: datetime


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
        self.tape_dir = tape_dir.resolve()
        self.clock = clock
        self.clients = {client.token_sha256: client for client in config.clients}
        self.redactor = Redactor(config.redact_headers, config.redact_query)
        self.resolutions = ResolutionCache(inactivity_seconds=config.inactivity_seconds)
        self.writer = StoreWriter(store)
        self._rows: set[asyncio.Task[None]] = set()
        # Where a row that could not be written is noted (the server: on the tape).
        self.on_row_error: Callable[[str, BaseException], None] = lambda _id, _exc: None

    async def close(self) -> None:
        """Write every queued call row and touch (after the proxy drained its hooks)."""
        await self.drain()
        await self.writer.close()

    def authenticate(self, head: RequestHead) -> tuple[Client | None, str, tuple[str, ...]]:
        presented = presented_token(head.headers, head.query)
        if presented.token is None:
            return None, presented.problem or "no token", presented.sources
        client = self.clients.get(token_sha256(presented.token))
        if client is None:
            return None, "unknown roller token", presented.sources
        return client, "ok", presented.sources

    async def admit(self, head: RequestHead) -> Admission:
        received = self.clock()
        base: dict[str, Any] = {
            "method": head.method,
            "path": head.path,
            "received_ns": time.time_ns(),
        }
        if own_route(head.path) is not None:
            # Gateway routes are served by the gateway itself, never forwarded.
            missing = {"error": {"type": "roller_not_found", "message": "no such gateway route"}}
            return Admission(reject=Rejection(404, missing), annotations={"gateway": base})
        client, problem, sources = self.authenticate(head)
        if client is None:
            annotation = {**base, "auth": "rejected", "reason": problem, "sources": list(sources)}
            message = f"{problem}: use a token from roller gateway token add"
            return Admission(
                reject=Rejection(401, unauthorized(message)), annotations={"gateway": annotation}
            )
        endpoint = endpoint_for(head.method, head.path, head.query)
        family = endpoint.family or next(
            (_FAMILY_BY_SOURCE[s] for s in sources if s in _FAMILY_BY_SOURCE), None
        )
        annotation = {
            **base,
            "auth": "ok",
            "principal": client.principal,
            "account": client.account,
            "harness": client.harness,
            "family": family,
        }
        return Admission(
            annotations={"gateway": annotation},
            upstream=None if family is None else self.upstreams.get(family),
            context=Admitted(client, family, endpoint, annotation, received),
        )

    async def decide(self, head: RequestHead, admission: Admission) -> PolicyDecision:
        admitted = admission.context
        assert isinstance(admitted, Admitted)  # admit let the request through
        client, family, endpoint = admitted.client, admitted.family, admitted.endpoint
        body = parse_json_body(head.body)
        identity = identify(client.harness, head.headers, body, trust_roller=client.roller_headers)
        plan = plan_session(client, identity)
        request = RequestRef(str(self.tape_dir), head.exchange_id)
        resolution = await self._resolve(plan, admitted.received, request)
        annotation = {
            **admitted.annotation,
            "model": requested_model(body, endpoint),
            **_session_fields(resolution, plan),
            "identity": identity_summary(identity, plan),
        }
        set_headers: dict[str, str] = {}
        key = None if family is None else self.keys.get(family)
        if family is not None and key is not None:
            set_headers = _key_headers(family, key)
        return PolicyDecision(
            set_headers=set_headers,
            remove_headers=self._credentials(head),
            remove_query=(
                *CREDENTIAL_QUERY,
                *(n for n, _ in head.query if self.redactor.secret_query(n)),
            ),
            upstream=None if family is None else self.upstreams.get(family),
            annotations={"gateway": annotation},
            # A model call's row needs to know whether its response ended normally.
            keep_response=endpoint.output_protocol is not None,
        )

    async def _resolve(
        self, plan: SessionPlan, received: datetime, request: RequestRef
    ) -> Resolution:
        """The plan's rows: from the cache when the store already answered it (touching
        `last_seen_at` through the writer when due), else from the store."""
        hit = self.resolutions.get(plan)
        if hit is not None:
            if hit.touch_due:
                self.writer.touch(hit.resolution.session_id, received)
            return hit.resolution
        resolution = await self.store.run(self.store.resolve, plan, received, request)
        self.resolutions.put(plan, resolution)
        return resolution

    def _credentials(self, head: RequestHead) -> tuple[str, ...]:
        """Every credential-bearing header of the request: the gateway owns none of them
        (it sets the upstream's key itself), so none is forwarded."""
        secret = self.redactor.secret_header
        return tuple(dict.fromkeys(name.lower() for name in head.headers if secret(name)))

    async def on_exchange_end(self, end: ExchangeEnd) -> None:
        """Hand the row on and return: the proxy awaits this hook before its handler
        returns, so a keep-alive connection's next request would wait on the row."""
        task = asyncio.get_running_loop().create_task(self._record(end))
        self._rows.add(task)
        task.add_done_callback(self._rows.discard)

    async def _record(self, end: ExchangeEnd) -> None:
        try:
            await self.writer.record(await self._call_facts(end))
        except Exception as exc:  # noqa: BLE001 - any failure: counted, noted on the tape
            log.error("call row of exchange %s not written: %s", end.exchange_id, exc)
            self.on_row_error(end.exchange_id, exc)

    async def drain(self) -> None:
        """Wait until every ended exchange's row is committed (or its failure noted)."""
        while self._rows:
            await asyncio.wait(set(self._rows))

    async def _call_facts(self, end: ExchangeEnd) -> CallFacts:
        gateway = end.annotations.get("gateway")
        gateway = gateway if isinstance(gateway, dict) else {}  # the policy itself failed
        received_ns = gateway.get("received_ns")
        started = (
            datetime.fromtimestamp(received_ns / 1e9, UTC)
            if isinstance(received_ns, int)
            else self.clock()
        )
        protocol = endpoint_for(end.method, end.path).output_protocol
        try:
            if end.response_body is None or len(end.response_body) <= INLINE_DECODE_BYTES:
                execution, response_capture = call_statuses(end, protocol)
            else:
                # Reassembly costs ~0.1 ms per KiB: in a thread, so a long stream's decode
                # never holds up the streams the event loop is still relaying.
                execution, response_capture = await asyncio.to_thread(call_statuses, end, protocol)
        except Exception:  # a decoder bug must not cost the row: judge it without the body
            log.exception("reading the response of exchange %s failed", end.exchange_id)
            execution, response_capture = call_statuses(end, None)
        return CallFacts(
            tape_dir=str(self.tape_dir),
            exchange_id=end.exchange_id,
            method=end.method,
            path=end.path,
            protocol=protocol,
            **annotated_fields(gateway),
            outcome=end.outcome,
            client_status=end.client_status,
            upstream_status=end.upstream_status,
            execution_status=execution,
            response_capture_status=response_capture,
            error_code=None if end.error is None else end.error.code,
            started_at=started,
            ended_at=self.clock(),
            flags=("response_over_limit",) if end.response_over_limit else (),
        )


def annotated_fields(gateway: Mapping[str, Any]) -> dict[str, Any]:
    """The call row's fields the request's `gateway` annotation holds (the end hook's
    and crash recovery's one reading of it)."""
    return {
        "session_id": gateway.get("session_id"),
        "account": gateway.get("account"),
        "principal": gateway.get("principal"),
        "family": gateway.get("family"),
        "model": gateway.get("model"),
        "participant_unknown": bool(gateway.get("participant_unknown", False)),
        "identity": gateway.get("identity"),
    }


def _session_fields(resolution: Resolution, plan: SessionPlan) -> dict[str, Any]:
    return {
        "session_id": resolution.session_id,
        "parent_session_id": resolution.parent_session_id,
        "source_type": resolution.source.source_type,
        "source_id": resolution.source.source_id,
        "rule": plan.rule,
        "participant_unknown": plan.participant_unknown,
        "parent_refused": resolution.parent_refused,
    }


def _key_headers(family: Family, key: str) -> dict[str, str]:
    name, prefix = _KEY_HEADER[family]
    return {name: f"{prefix}{key}"}
